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
