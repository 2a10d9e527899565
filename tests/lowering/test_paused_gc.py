"""The cyclic garbage collector is kept out of the passes that build large structures
(lowering/perf.py): the PyPTO reader and the rules run with it paused, and it comes back as
it was, also when the pass raises."""

from __future__ import annotations

import gc
import textwrap

import pytest

from dsl.driver import cli_pypto
from lowering.checks.rule import CheckContext
from lowering.perf import paused_gc
from lowering.pypto_reader import read as pypto_reader

MODEL = """
import pypto.language as pl


@pl.jit
def entry(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
        y = pl.assemble(y, pl.load(x, [0, 0], [16, 64]), [0, 0])
    return y
"""


class _WatchingRule:
    """A rule that records whether the collector was on when it ran."""

    def __init__(self, seen: list[bool]) -> None:
        self.seen = seen

    def applies_to(self, graph) -> bool:
        return True

    def check(self, graph, ctx):
        self.seen.append(gc.isenabled())
        return []


def test_reading_and_the_rules_run_with_the_collector_paused(tmp_path, monkeypatch):
    seen: list[bool] = []
    real_build = pypto_reader.build_graphs

    def watched_build(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_build(*args, **kwargs)

    monkeypatch.setattr(pypto_reader, "build_graphs", watched_build)
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MODEL), encoding="utf-8")
    assert gc.isenabled()
    (graph,) = pypto_reader.read_pypto(path).graphs
    assert [t.name for t in graph.tasks] == ["copy"]
    monkeypatch.setattr(cli_pypto, "all_rules", lambda: {"X999": _WatchingRule(seen)})
    assert cli_pypto.run_rules_safely(graph, CheckContext(graph), {"X999"}) == []
    assert seen == [False, False] and gc.isenabled()


def test_the_collector_comes_back_when_the_pass_raises():
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("a reader bug")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off_and_pauses_nest():
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost pause turns it back on
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
