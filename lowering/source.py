"""Source locations and diagnostics shared by every stage.

Everything that reports a problem to the user -- the front end, the checks, the PyPTO
reader, the simulator driver -- produces :class:`Diagnostic` records. They live here, at
the bottom of the pipeline, so that no stage has to import a later one to report an error.
Rendering them (snippets, carets, SARIF) is the CLI's job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True, order=True)
class Span:
    """A half-open region of a source file; lines and columns are 1-based.

    Line 0 means the file as a whole (it is missing, unreadable, has no layer): such a span
    prints as ``path`` alone, never as a made-up ``path:1:1``; ``<command line>`` spans (a
    bad option) are whole-file spans too."""

    file: str
    line: int
    col: int
    end_line: int = 0
    end_col: int = 0

    def __str__(self) -> str:
        return self.file if self.line == 0 else f"{self.file}:{self.line}:{self.col}"

    @staticmethod
    def whole_file(file: str) -> Span:
        return Span(file, 0, 0, 0, 0)

    @staticmethod
    def command_line() -> Span:
        return Span.whole_file(COMMAND_LINE)


COMMAND_LINE = "<command line>"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"note": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    severity: Severity = Severity.ERROR
    hint: str | None = None
    related: tuple[tuple[Span, str], ...] = field(default=())
    # Machine-readable facts for `dslc fix`, e.g. (("task", "wait"), ("add_after", "push")).
    data: tuple[tuple[str, str], ...] = field(default=())

    def sort_key(self) -> tuple:
        return (self.span.file, self.span.line, self.span.col, self.code, self.message)


class CompileError(Exception):
    """Raised when a stage cannot continue; carries every diagnostic found so far."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        super().__init__("\n".join(f"{d.span}: {d.code} {d.message}" for d in self.diagnostics))
