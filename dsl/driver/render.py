"""Human-readable diagnostics: ``path:line:col: CODE message``, the source line, a caret
under the span and a hint. Colour only when writing to a terminal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lowering.source import Diagnostic, Severity

_COLOURS = {Severity.ERROR: "\x1b[31;1m", Severity.WARNING: "\x1b[33;1m", Severity.NOTE: "\x1b[36;1m"}
_RESET, _BOLD, _DIM = "\x1b[0m", "\x1b[1m", "\x1b[2m"


class SourceCache:
    """Lines of files already read, so snippets do not re-read (or fail on) a file."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str] | None] = {}

    def add(self, file: str, text: str) -> None:
        self._lines[file] = text.splitlines()

    def lines(self, file: str) -> list[str] | None:
        if file not in self._lines:
            try:
                self._lines[file] = Path(file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError, ValueError):
                self._lines[file] = None
        return self._lines[file]

    def line(self, file: str, line: int) -> str | None:
        if file not in self._lines:
            try:
                self._lines[file] = Path(file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError, ValueError):
                self._lines[file] = None
        lines = self._lines[file]
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


def render(d: Diagnostic, sources: SourceCache, colour: bool = False) -> str:
    paint: Callable[[str, str], str] = (lambda s, c: f"{c}{s}{_RESET}") if colour else (lambda s, c: s)
    head = f"{d.span}: {paint(d.code, _COLOURS[d.severity])} {d.message}"
    if d.severity is not Severity.ERROR:
        head = f"{d.span}: {paint(d.code, _COLOURS[d.severity])} {d.severity.value}: {d.message}"
    out = [paint(head, _BOLD) if not colour else head]
    text = sources.line(d.span.file, d.span.line)
    if text is not None:
        gutter = f"{d.span.line:>5} | "
        start = max(d.span.col - 1, 0)
        width = 1
        if d.span.end_line == d.span.line and d.span.end_col > d.span.col:
            width = d.span.end_col - d.span.col
        width = max(1, min(width, max(len(text) - start, 1)))
        shown, caret = _snippet(text, start)
        width = max(1, min(width, len(shown) - caret))
        out.append(gutter + shown)
        out.append(" " * (len(gutter) - 2) + "| " + " " * caret + paint("^" * width, _COLOURS[d.severity]))
    if d.hint:
        out.append(paint(f"      = hint: {d.hint}", _DIM))
    for span, note in d.related:
        out.append(f"      = note: {span}: {note}")
    return "\n".join(out)


_SNIPPET_WIDTH = 160
_CONTROL = {c: "?" for c in [*range(32), 127] if c != 9}  # never echo escapes to a terminal


def _snippet(text: str, start: int) -> tuple[str, int]:
    """The source line as shown (tabs expanded, control characters masked, a window of a
    very long line around the error) and the column of the caret in it."""
    shown = text.expandtabs(4).translate(_CONTROL)
    caret = len(text[:start].expandtabs(4))
    if len(shown) <= _SNIPPET_WIDTH:
        return shown, caret
    lo = max(0, min(caret - _SNIPPET_WIDTH // 4, len(shown) - _SNIPPET_WIDTH))
    window = shown[lo : lo + _SNIPPET_WIDTH]
    head = "..." if lo else ""
    tail = "..." if lo + _SNIPPET_WIDTH < len(shown) else ""
    return head + window + tail, caret - lo + len(head)
