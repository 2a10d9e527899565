"""Round trip: every layer in tests/fixtures and models/, emitted as PyPTO and
read back, gives a graph isomorphic to the source's (tasks, grids, flags, edges with their
reasons, signal ops, barriers, atomics), and the reader needs no "not modelled" note on it.

Layers are discovered when the test runs, so layers added later are covered too."""

from __future__ import annotations

import pytest
from pyptoutil import ROOT, canonical, discover_layers

from dsl.frontend import compile_file
from lowering.codegen.pypto.emit import render_pypto
from lowering.pypto_reader import read_pypto

CASES = [pytest.param(p, id=str(p.relative_to(ROOT))) for p in discover_layers()]


@pytest.mark.parametrize("path", CASES)
def test_emit_then_read_gives_an_isomorphic_graph(path, tmp_path):
    graphs = compile_file(path)  # every discovered layer compiles: a front-end error fails here
    assert graphs
    for graph in graphs:
        text = render_pypto(graph, "h", "v")
        out = tmp_path / f"{graph.name}.py"
        out.write_text(text, encoding="utf-8")
        result = read_pypto(out)
        assert result.diagnostics == [], [f"{d.span}: {d.code} {d.message}" for d in result.diagnostics]
        (back,) = [g for g in result.graphs if g.name == graph.name]
        a, b = canonical(graph), canonical(back, emitted=True)
        for key in a:
            assert a[key] == b[key], key


def test_the_round_trip_covers_the_models_and_the_fixtures():
    paths = [p.relative_to(ROOT).parts[0] for p in discover_layers()]
    assert "tests" in paths
    if (ROOT / "models").is_dir() and any((ROOT / "models").rglob("*.dsl")):
        assert "models" in paths
