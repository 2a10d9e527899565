"""Shared helpers of the AscendC target tests (unique basename: pytest prepend mode)."""

from __future__ import annotations

from pathlib import Path

from dsl.frontend import compile_file, compile_text
from lowering.codegen.ascendc.emit import render_project
from lowering.source import CompileError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
#: Every model layer and every fixture the NumPy simulator runs: the target's test corpus.
SOURCES = (
    sorted((ROOT / "models").rglob("*.dsl"))
    + sorted((FIXTURES / "layers").glob("*.dsl"))
    + sorted((FIXTURES / "run").glob("*.dsl"))
    + sorted((FIXTURES / "seed").glob("*.dsl"))
)


def key(path: Path, layer: str) -> str:
    return f"{path.relative_to(ROOT).as_posix()}:{layer}"


def render_all() -> dict[str, dict[str, str] | CompileError]:
    """``file:layer`` -> the project's files, or the CompileError (A7xx) that refused it."""
    out: dict[str, dict[str, str] | CompileError] = {}
    for path in SOURCES:
        for graph in compile_file(path):
            try:
                out[key(path, graph.name)] = render_project(graph, "h", "v")
            except CompileError as err:
                out[key(path, graph.name)] = err
    return out


def emit(text: str, **params: int) -> dict[str, str]:
    """The project of the one layer in ``text`` (a test's inline source)."""
    (graph,) = compile_text(text, "case.dsl", params or None)
    return render_project(graph, "h", "v")


def refusal(text: str, **params: int) -> CompileError:
    (graph,) = compile_text(text, "case.dsl", params or None)
    try:
        render_project(graph, "h", "v")
    except CompileError as err:
        return err
    raise AssertionError("the AscendC target accepted the layer")


def kernels(files: dict[str, str]) -> str:
    return next(text for name, text in files.items() if name.endswith("_kernels.h"))


def host(files: dict[str, str]) -> str:
    return next(text for name, text in files.items() if name.endswith(".asc"))


def filecheck(text: str, checks: str) -> None:
    """A small FileCheck: ``CHECK:`` finds the pattern on a line at or after the last match,
    ``CHECK-NEXT:`` on the very next line, ``CHECK-SAME:`` on the line of the last match,
    ``CHECK-NOT:`` on no line between the last match and the next match (or the end).
    Patterns are literal text except ``{{regex}}`` parts. Raises AssertionError with the
    first check that fails and the text around it."""
    import re

    lines = text.splitlines()

    def compile_pattern(p: str) -> re.Pattern:
        parts = re.split(r"\{\{(.*?)\}\}", p.strip())
        return re.compile("".join(re.escape(s) if i % 2 == 0 else f"(?:{s})" for i, s in enumerate(parts)))

    pos = 0  # first line a CHECK may match
    last = -1  # line of the last match
    pending_not: list[tuple[str, re.Pattern]] = []
    for raw in checks.strip().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        kind, _, pattern = raw.partition(":")
        rx = compile_pattern(pattern)
        if kind == "CHECK-NOT":
            pending_not.append((pattern, rx))
            continue
        if kind == "CHECK":
            hit = next((i for i in range(pos, len(lines)) if rx.search(lines[i])), None)
        elif kind == "CHECK-NEXT":
            hit = last + 1 if last + 1 < len(lines) and rx.search(lines[last + 1]) else None
        elif kind == "CHECK-SAME":
            hit = last if last >= 0 and rx.search(lines[last]) else None
        else:
            raise ValueError(f"unknown check {kind!r}")
        window = "\n".join(lines[max(pos - 2, 0) : pos + 8])
        assert hit is not None, f"{raw!r} not found after line {pos + 1}:\n{window}"
        for text_not, rx_not in pending_not:
            bad = next((i for i in range(max(last, 0), hit) if rx_not.search(lines[i])), None)
            assert bad is None, f"CHECK-NOT {text_not!r} matched line {bad + 1}: {lines[bad]}"
        pending_not = []
        last, pos = hit, hit + (0 if kind == "CHECK-SAME" else 1)
    for text_not, rx_not in pending_not:
        bad = next((i for i in range(max(last, 0), len(lines)) if rx_not.search(lines[i])), None)
        assert bad is None, f"CHECK-NOT {text_not!r} matched line {bad + 1}: {lines[bad]}"
