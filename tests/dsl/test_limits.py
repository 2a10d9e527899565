"""Bounded work (issue 14): every front-end and lint path is bounded by the source and the
documented limits (docs/language.md "Limits"), reasons about large ranges without listing them,
and refuses what exceeds a limit with a located diagnostic naming it."""

from __future__ import annotations

import pytest

import dsl.elaborate_tasks
from dsl.driver.cli import main
from dsl.frontend import compile_text
from lowering.checks import run_rules
from lowering.checks.access_instances import MAX_HITS, hits
from lowering.checks.rule import CheckContext
from lowering.parameters import Domain
from lowering.source import CompileError


def errors(source: str) -> list[tuple[str, int, int, str]]:
    with pytest.raises(CompileError) as err:
        compile_text(source, "l.dsl")
    return [(d.code, d.span.line, d.span.col, d.message) for d in err.value.diagnostics]


def layer(let: str) -> str:
    return (
        "layer deep(T = 16, D = 16) {\n"
        "  input  x: f32[T, D]\n"
        "  output y: f32[T, D]\n"
        "  task t on aiv {\n"
        f"    let a = {let}\n"
        "    y[:, :] = x[:, :] * 2.0\n"
        "  }\n"
        "}\n"
    )


DEEP = "expression nests deeper than 100 levels (each operator, call or subscript is one)"


@pytest.mark.parametrize(
    "let",
    [" + ".join(["1"] * 500), "-" * 500 + "1", "-" * 5000 + "1", "exp(" * 120 + "x[:, :]" + ")" * 120],
    ids=["sum_chain_500", "unary_minus_500", "unary_minus_5000", "calls_120"],
)
def test_a_too_deep_expression_is_e105_at_the_expression(let):
    """sum_chain_500.dsl and unary_minus_500.dsl were a RecursionError (an internal error)."""
    assert errors(layer(let)) == [("E105", 5, 13, DEEP)]


@pytest.mark.parametrize(
    "let",
    [" + ".join(["1"] * 100), "-" * 99 + "1", "exp(" * 98 + "x[:, :]" + ")" * 98],
    ids=["sum", "neg", "calls"],
)
def test_an_expression_at_the_limit_goes_through_every_stage(let, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "deep.dsl"
    path.write_text(layer(let))
    assert main(["check", str(path)]) == 0
    assert main(["run", str(path)]) == 0
    for target in ("numpy", "pypto"):
        assert main(["compile", str(path), "--target", target, "-o", str(tmp_path / target)]) == 0
    assert "internal error" not in capsys.readouterr().err


def test_a_runtime_scalar_range_must_fit_its_dtype():
    source = (
        "layer s(T = 64) {\n  scalar n: i32 in 1..4294967296\n  input x: f32[T, 4]\n  output y: f32[T, 4]\n"
        "  task t on aiv { y[:, :] = x[:, :] }\n}\n"
    )
    assert errors(source) == [
        (
            "E311",
            2,
            17,
            "scalar 'n': i32 holds -2147483648..2147483647, but the range 1..4294967296 goes beyond it",
        )
    ]
    compile_text(source.replace("i32 in", "i64 in"), "l.dsl")  # i64 holds it


def test_a_huge_scalar_range_is_never_listed(monkeypatch):
    """scalar_range_1e8.dsl listed every value (4.1 GB); 1..1e9 reached 20 GB."""
    real_iter = Domain.__iter__

    def listing(self):
        assert len(self) <= 1 << 21, f"a domain of {len(self):,} values was listed"
        return real_iter(self)

    monkeypatch.setattr(Domain, "__iter__", listing)
    source = (
        "layer s(T = 64, D = 64) {\n  scalar n: i64 in 1..1000000000000\n  input x: f32[T, D]\n"
        "  output y: f32[T, D]\n  task t on aiv { y[:, :] = x[:, :] }\n}\n"
    )
    (graph,) = compile_text(source, "s.dsl")
    assert run_rules(graph, CheckContext(graph)) == []


def test_a_huge_grid_is_analysed_by_intervals():
    """spmd_1e7.dsl: dslc check ran for 300 s and grew to 6.3 GB enumerating ten million blocks."""
    source = (
        "layer g(N = 10000000) {\n  input x: f32[N, 1]\n  output y: f32[N, 1]\n  output t: f32[1, 1]\n"
        "  task a spmd(N) on aiv {\n    y[block, :] = x[block, :] * 2.0\n    t[0, :] = x[block, :]\n  }\n}\n"
    )
    (graph,) = compile_text(source, "g.dsl")
    (task,) = graph.tasks
    for access in task.accesses:
        assert len(hits(graph, task, access)) <= MAX_HITS
    found = [(d.code, d.span.line, d.message) for d in run_rules(graph, CheckContext(graph))]
    assert found == [
        (
            "R505",
            7,
            "a (spmd 10000000, AIV): blocks 0 and 1 both write t[0:1, 0:1]; the blocks of one grid are never "
            "ordered, so the value left is the last block's to finish",
        )
    ]


def test_too_many_task_instances_stop_at_one_e108(monkeypatch):
    """layer_loop_1e6.dsl: a task array at the loop cap ran for 300 s and grew to 3.4 GB."""
    monkeypatch.setattr(dsl.elaborate_tasks, "MAX_TASKS", 50)
    source = (
        "layer l(E = 1000000) {\n  input x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  for e in parallel(E) {\n    task t[e] on aiv { y[e % 16, :] = x[e % 16, :] }\n  }\n}\n"
    )
    assert errors(source) == [
        ("E108", 5, 5, "the graph has more than 50 task instances (dslc's limit; this one is t[50])")
    ]


def test_the_race_analysis_stops_at_its_budget_and_says_so(monkeypatch):
    from lowering.checks.races import conflicts

    monkeypatch.setattr(conflicts, "MAX_PAIRS", 100)
    source = (
        "layer l(E = 200) {\n  input x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  for e in parallel(E) {\n    task t[e] on aiv { y[e % 16, :] = x[e % 16, :] }\n  }\n}\n"
    )
    (graph,) = compile_text(source, "l.dsl")
    notes = [d for d in run_rules(graph, CheckContext(graph), {"R501"}) if d.severity.value == "note"]
    assert [(d.code, d.span.line, d.message) for d in notes] == [
        (
            "R501",
            3,
            "the race analysis stopped at `y`: the graph has more than 100 pairs of tasks whose regions meet "
            "(dslc's analysis budget); the pairs past it were not checked",
        )
    ]
