"""Stable codes of the driver's diagnostics: what the command line, the configuration, the
files dslc writes and the golden modules it runs can get wrong (the front end's codes, of the
source text, are in ``dsl.codes``). `dslc explain CODE` prints these entries."""

from __future__ import annotations

from lowering.codes import Code
from lowering.source import Diagnostic, Severity, Span

DRIVER_CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code("E104", "bad command-line option", "An option such as `--set NAME=VALUE` is malformed."),
        Code(
            "E106",
            "bad configuration",
            "`[tool.dslc]` in pyproject.toml (or the file given with `--config`) cannot be read, is not "
            "valid TOML, or has an unknown key or a bad value; see docs/lint.md.",
        ),
        Code(
            "E107",
            "cannot write a file",
            "An output file or directory (`-o`, `--trace`, `dslc fix --write`, the kernel cache) "
            "cannot be written: it is read-only, a directory, below a file, changed since dslc read "
            "it, or the disk is full. Nothing that was there is lost; fix the path or the "
            "permissions and run the command again.",
        ),
        Code(
            "E109",
            "golden does not fit the layer",
            'The golden module (`golden "x.py"`, docs/golden.md) does not import, raises, or returns '
            "names, shapes or ranks that do not match the layer. The diagnostic points at the golden "
            "file (at the line that raised, when there is one) and names the function and the tensor.",
        ),
    )
}


def diag(code: str, span: Span, message: str, *, hint: str | None = None) -> Diagnostic:
    """An error with one of :data:`DRIVER_CODES`."""
    assert code in DRIVER_CODES, code
    return Diagnostic(code, message, span, Severity.ERROR, hint)
