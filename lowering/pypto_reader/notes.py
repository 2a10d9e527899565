"""Diagnostics of the PyPTO reader: what it could not model, and why a file was not read.

The reader never raises: every problem becomes a :class:`~lowering.source.Diagnostic` at the
``.py`` line and column of the construct. ``P001`` notes say what was not modelled and what
that means for the verdict; ``--strict`` turns them into errors (:func:`strict`).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from lowering.codes import Code
from lowering.source import Diagnostic, Severity, Span

FAMILY = "pypto reader"

READER_CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            "P001",
            "a PyPTO construct the reader does not model",
            "The reader of PyPTO files (`dslc check model.py`) met a construct whose effect on the task "
            "graph it cannot recover from the source alone: a task count that depends on runtime data, a "
            "call to a helper it cannot resolve, an opaque (extern) kernel, a host-side read that blocks the "
            "orchestrator, a collective. The note says what was assumed instead (one representative task, "
            "whole-tensor accesses, no edge) and what that means for the verdict: findings near it may be "
            "missing or spurious. `dslc check --strict` turns these notes into errors, so that a clean "
            "verdict is a full one. See docs/pypto.md.",
            severity=Severity.NOTE,
            family=FAMILY,
            name="construct_not_modelled",
        ),
        Code(
            "P002",
            "the file is not a PyPTO program (nothing to check)",
            "A `.py` file named on the command line does not import `pypto.language`, or defines no "
            "`@pl.jit` / `@pl.jit.inline` / `@pl.program` entry, so it holds no task graph. Directories "
            "are searched for PyPTO files only, so this note appears for files named explicitly.",
            severity=Severity.NOTE,
            family=FAMILY,
            name="not_a_pypto_file",
        ),
        Code(
            "P003",
            "the PyPTO file cannot be read (I/O, encoding or Python syntax error)",
            "The reader parses the file with Python's `ast` module (it never imports or runs it). A "
            "syntax error, a file that is not UTF-8 text, or an I/O error stops it; the diagnostic points "
            "at the offending position.",
            severity=Severity.ERROR,
            family=FAMILY,
            name="unreadable_python",
        ),
        Code(
            "P004",
            "the PyPTO reader failed on a construct (a dslc bug)",
            "The reader (or a lint rule on the graph it read) raised an unexpected error at this "
            "construct. The rest of the file was still read where possible. Please report it with the "
            "file; `dslc check --debug` prints the traceback.",
            severity=Severity.ERROR,
            family=FAMILY,
            name="reader_internal_error",
        ),
        Code(
            "P005",
            "a module constant of the PyPTO file is inconsistent (assert fails, or --set names none)",
            "Module-level constants (from the file, its `config` module, argv defaults) are the "
            "parameters of a PyPTO program. A module-level `assert` that fails at the chosen values, a "
            "`--set NAME=VALUE` that names no integer constant, or a value outside the admissible set "
            "(`assert NAME in (...)`, argparse `choices=`) is reported here.",
            severity=Severity.ERROR,
            family=FAMILY,
            name="bad_module_constant",
        ),
    )
}

#: Reader codes that mean "the input could not be read", like a front-end error (exit 2).
INPUT_ERRORS = frozenset({"P003", "P004", "P005"})


def span_of(file: str, node: ast.AST | None) -> Span:
    """The 1-based span of an ast node (the whole file when the node has no position)."""
    if node is None or not hasattr(node, "lineno"):
        return Span.whole_file(file)
    line = node.lineno
    col = node.col_offset + 1
    end_line = getattr(node, "end_lineno", None) or line
    end_col = (getattr(node, "end_col_offset", None) or node.col_offset) + 1
    return Span(file, line, col, end_line, end_col)


def line_span(file: str, node: ast.AST, width: int = 0) -> Span:
    """A span on the first line of ``node`` (``width`` columns, or up to its end on that line)."""
    base = span_of(file, node)
    if width:
        return Span(file, base.line, base.col, base.line, base.col + width)
    end = base.end_col if base.end_line == base.line else base.col + 1
    return Span(file, base.line, base.col, base.line, end)


class Notes:
    """Collects the reader's diagnostics for one file (deduplicated, in order)."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self._seen: set[tuple] = set()

    def add(
        self, code: str, span: Span, message: str, hint: str | None = None, trace: str | None = None
    ) -> None:
        """Add a diagnostic once; ``trace`` (a reader bug's traceback) is shown by ``--debug``."""
        key = (code, span, message)
        if key in self._seen:
            return
        self._seen.add(key)
        data = (("traceback", trace),) if trace else ()
        self.items.append(Diagnostic(code, message, span, READER_CODES[code].severity, hint, data=data))

    def not_modelled(self, span: Span, what: str, consequence: str, hint: str | None = None) -> None:
        """A P001 note: ``what`` was not modelled; ``consequence`` says what it means for the verdict."""
        self.add("P001", span, f"not modelled: {what}; {consequence}", hint)


def strict(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``--strict``: "not modelled" notes become errors."""
    return [replace(d, severity=Severity.ERROR) if d.code == "P001" else d for d in diagnostics]
