"""The lint covers every admissible parameter point (docs/lint.md, "Coverage"): layer `if`s and
loop bounds elaborated at every structure class, point rules re-run at probe points."""

from __future__ import annotations

from pathlib import Path

import pytest
from lintutil import FIXTURES, lint, lint_at_point, triples

from dsl.driver.coverage import MAX_VARIANTS, lint_source
from dsl.frontend import compile_file, compile_text
from lowering.checks.points import probe_points
from lowering.graph_at import graph_at

RULES = FIXTURES / "rules"


def test_a_handshake_missing_only_in_the_branch_of_another_value_is_reported_there():
    bad = RULES / "D101" / "bad_branch.dsl"
    assert lint_at_point(bad) == []  # the default OVERLAP = 0 is fine
    found = lint(bad)
    # D117 too: in that branch nothing orders a round's wait after the previous round's push
    assert triples(found) == [("D101", 21, 5), ("D105", 18, 45), ("D117", 21, 5)]
    assert all(d.message.endswith("(at OVERLAP=1)") for d in found)
    assert lint(RULES / "D101" / "good_branch.dsl") == []


def test_set_picks_the_point_whose_findings_are_unlabelled():
    bad = RULES / "D101" / "bad_branch.dsl"
    found = lint(bad, overrides={"OVERLAP": 1})
    assert triples(found) == [("D101", 21, 5), ("D105", 18, 45), ("D117", 21, 5)]
    assert not any("(at " in d.message for d in found)


LOOP = """
layer tiles(N = 2 in 1..3, D = 16) {
  input  x: f32[4, D]
  output y: f32[4, D]
  output z: f32[1, D]
  if N == 3 {
    task peek on aiv { z[0, :] = y[2, :] }
  }
  for i in range(N) {
    task copy[i] on aiv { y[i, :] = x[i, :] }
  }
}
"""


def test_layer_loop_bounds_and_ifs_are_the_structure(tmp_path: Path):
    (graph,) = compile_text(LOOP, "loop.dsl")
    assert [v for _e, v in graph.structure] == [0, 2]  # the if is false, the loop runs to 2
    everywhere = list(graph.admissible_points(any_structure=True))
    assert [p["N"] for p in everywhere] == [1, 2, 3]
    assert [p["N"] for p in graph.admissible_points()] == [2]
    src = tmp_path / "loop.dsl"
    src.write_text(LOOP)
    findings, graphs = lint_source(LOOP, str(src), None, None, {"R501"}, "a2a3")
    assert sorted(len(g.tasks) for g in graphs) == [1, 2, 4]  # N = 1, 2 and 3 (+ peek)
    # peek reads y[2, :] before copy[2] writes it, and the runtime adds no WAR edge: only at N = 3
    assert [(d.code, d.message.endswith("(at N=3)")) for d in findings] == [("R501", True)]


HUGE = """
layer huge(N = 2 in 1..100000000000000000000000, D = 16) {
  input  x: f32[4, D]
  output y: f32[4, D]
  output z: f32[1, D]
  if N > 10 {
    task peek on aiv { z[0, :] = y[2, :] }
  }
  task copy on aiv { y[2, :] = x[2, :] }
}
"""


def test_a_domain_past_sys_maxsize_orders_its_structure_classes_without_len(tmp_path: Path):
    src = tmp_path / "huge.dsl"
    src.write_text(HUGE)
    # the classes are sorted by closeness to the compiled point, whose domain ``len()`` cannot size
    findings, graphs = lint_source(HUGE, str(src), None, None, {"R501"}, "a2a3")
    assert sorted(len(g.tasks) for g in graphs) == [1, 2]
    assert [d.code for d in findings] == ["R501"] and "(at N=" in findings[0].message


def test_a_scalar_range_whose_step_is_zero_at_another_point_is_no_internal_error():
    good = (RULES / "C402" / "good_scalar_index.dsl").read_text(encoding="utf-8")
    assert "in 1..T\n" in good
    # T in {32, 64}: the step is 32 at the compiled point and 0 at the probe T = 32
    text = good.replace("in 1..T\n", "in 1..T step (T - 32)\n")
    findings, graphs = lint_source(text, "zero_step.dsl", None, None, None, "a2a3")
    assert findings == [] and len(graphs) == 1


def _many(n: int, peeked_row: int) -> str:
    return (
        f"layer many(K = 0 in 0..{n - 1}, D = 16) {{\n"
        f"  input  x: f32[{n}, D]\n  output y: f32[{n}, D]\n  output z: f32[1, D]\n"
        f"  task peek on aiv {{ z[0, :] = y[{peeked_row}, :] }}\n"
        f"  for i in range(K + 1) {{\n    task copy[i] on aiv {{ y[i, :] = x[i, :] }}\n  }}\n}}\n"
    )


def test_the_number_of_structure_classes_is_capped_and_findings_say_so(tmp_path: Path):
    n = MAX_VARIANTS + 4
    src = tmp_path / "many.dsl"
    # peek reads the last row, which only K = n - 1 writes: a class beyond the cap
    findings, graphs = lint_source(_many(n, n - 1), str(src), None, None, {"R501"}, "a2a3")
    assert len(graphs) == MAX_VARIANTS
    assert findings == []
    findings, _ = lint_source(_many(n, 1), str(src), None, None, {"R501"}, "a2a3")
    assert [d.code for d in findings] == ["R501"]
    assert findings[0].message.endswith(
        f"(at K=1; {MAX_VARIANTS} of {n} admissible parameter points checked)"
    )


FIXTURES_WITH_RANGES = sorted(
    p for p in RULES.glob("*/*.dsl") if " in " in p.read_text(encoding="utf-8").split("{")[0]
)


@pytest.mark.parametrize("path", FIXTURES_WITH_RANGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_moving_a_graph_to_a_probe_point_equals_elaborating_it_there(path: Path):
    for i, graph in enumerate(compile_file(path)):
        for env in probe_points(graph).points[:3]:
            moved = graph_at(graph, env)
            ranged = {n: env[n] for n, p in graph.params.items() if p.domain is not None}
            fresh = compile_file(path, ranged)[i]
            assert [(t.name, t.blocks) for t in moved.tasks] == [(t.name, t.blocks) for t in fresh.tasks]
            assert {n: t.dims for n, t in moved.tensors.items()} == {
                n: t.dims for n, t in fresh.tensors.items()
            }
            assert moved.env() == fresh.env() and moved.nranks == fresh.nranks
            assert moved.edges == fresh.edges and moved.cross_round_edges == fresh.cross_round_edges


def test_edges_are_inferred_again_at_the_new_point():
    text = """
layer edge_moves(T = 64 in {64, 128}, D = 16) {
  input   x: f32[128, D]
  scratch s: f32[128, D]
  output  y: f32[1, D]
  task head on aiv { s[0 : 64, :] = x[0 : 64, :] }
  task tail on aiv { y[0, :] = s[T - 1, :] }
}
"""
    (graph,) = compile_text(text, "edge.dsl")
    assert [(e.src, e.dst, e.kind) for e in graph.edges] == [("head", "tail", "raw")]
    (env,) = probe_points(graph).points
    assert env["T"] == 128
    moved = graph_at(graph, env)
    assert moved.edges == [] and moved.tasks[1].blocks == 1
    assert moved.edges == compile_text(text, "edge.dsl", {"T": 128})[0].edges


@pytest.mark.parametrize(
    "fixture, expected, label",
    [
        ("N201/bad_split.dsl", [("N201", 12, 5)], "(at SPLITS=4)"),
        ("R505/bad_stride.dsl", [("R505", 9, 5)], "(at STRIDE=8)"),
    ],
)
def test_races_and_numerics_are_judged_at_the_other_admissible_values(fixture, expected, label):
    bad = RULES / fixture
    assert lint_at_point(bad) == []  # clean at the default
    found = lint(bad)
    assert triples(found) == expected
    assert all(d.message.endswith(label) and d.severity.value == "error" for d in found)
    assert lint(bad.with_name(bad.name.replace("bad", "good"))) == []
