"""``rounds.ordered_before`` keeps its sets as packed bits over the reachability numbering (a
50,000-task layer asks for a thousand of them); every answer must equal the plain definition:
sets of names, walked one round back at a time along the cross-round edges."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lintutil import FIXTURES

from dsl.frontend import compile_file, compile_text
from lowering.checks import rounds
from lowering.checks.rule import CheckContext

ROOT = Path(__file__).resolve().parents[2]
LAYERS = sorted(
    p for p in FIXTURES.rglob("*.dsl") if re.search(r"\bprev\(|\bepoch\b", p.read_text(encoding="utf-8"))
)


def _reference(graph, ctx, task: str) -> tuple[list[frozenset[str]], bool]:
    into: dict[str, list[str]] = {}
    for e in graph.cross_round_edges:
        into.setdefault(e.dst, []).append(e.src)
    anc = ctx.ancestors
    apart = rounds.rounds_in_flight(graph) - 1
    current = frozenset([*anc[task], task])
    seen: list[frozenset[str]] = []
    while True:
        earlier: set[str] = set()
        for b in current:
            for a in into.get(b, ()):
                earlier.add(a)
                earlier.update(anc[a])
        current = frozenset(earlier)
        if current in seen:
            return seen, False
        seen.append(current)
        if len(seen) >= min(apart, rounds.MAX_ROUNDS_APART):
            return seen, len(seen) < apart


def _first_gap(sets: list[frozenset[str]], task: str) -> int | None:
    return next((k for k, done in enumerate(sets, start=1) if task not in done), None)


def _compare(graph) -> int:
    ctx = CheckContext(graph)
    names = [t.name for t in graph.tasks]
    for y in names:
        sets, bounded = _reference(graph, ctx, y)
        got = rounds.ordered_before(graph, ctx, y)
        assert got.bounded == bounded, y
        assert [got.first_gap(x) for x in names] == [_first_gap(sets, x) for x in names], y
        assert got.first_gap("no such task") == 1
    return len(graph.cross_round_edges)


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_packed_sets_answer_as_sets_of_names(path):
    for graph in compile_file(path):
        _compare(graph)


def test_a_chain_of_chunks_with_cross_round_edges():
    # the lint benchmark's chunk layer, 3 chunks: hundreds of cross-round edges
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_lint", ROOT / "bench" / "bench_lint.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    (graph,) = compile_text(bench.layer_source(301), "lint.dsl")
    assert _compare(graph) > 300


def test_closures_are_the_ancestor_sets():
    # the seed MoE layer's reachability numbering needs mask bits beside the intervals
    (graph,) = compile_file(FIXTURES / "seed" / "moe_pre.dsl")
    ctx = CheckContext(graph)
    closures = rounds._Closures(graph, ctx.reach)
    assert closures.masked
    by_number = {k: name for name, k in closures.number.items()}
    for task in graph.tasks:
        got = {by_number[int(k)] for k in closures.of(task.name).nonzero()[0]}
        assert got == {*ctx.ancestors[task.name], task.name}, task.name
