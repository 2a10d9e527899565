"""The step memo (``runtime.verify.memo``): a replayed first step leaves exactly the state a
real run of the kernel leaves, and a search with the memo finds what a search without it finds,
transition for transition."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_verify_explorer import programs

import runtime.verify.memo as memo_module
import runtime.verify.space as space_module
from dsl.driver.api import compile_layer
from runtime.decisions import Decider
from runtime.machine import SPIN, WAKE
from runtime.program import Program, TaskSpec, TensorSpec
from runtime.verify import Config, explore
from runtime.verify.space import Space

HANDSHAKE = Path(__file__).resolve().parents[1] / "fixtures" / "run" / "handshake_post.dsl"


class First(Decider):
    def decide(self, kind, options):
        return 0


def _state(space: Space) -> tuple:
    """Everything a step can change, comparable across restores of one space."""
    snap = space.snapshots.capture()
    eng = space.eng
    blocks = {b: (b.state, b.steps, b.gen is None, b.wait) for inst in space.insts for b in inst.blocks}
    return (
        snap.fp,
        snap.mem,
        tuple(a.tobytes() for a in space.arrays),
        frozenset(eng.runnable),
        {k: list(v) for k, v in eng.spinners.items()},
        blocks,
        frozenset(space.touched),
        tuple(space.last_observer.notifies),
        {c: set(v) for c, v in eng.notify_log.items()},
    )


def _push_waking_a_waiter(space: Space):
    """Walk first-choice schedules to a state where a push block that has not started is
    runnable and its notify wakes a spinning waiter (found by trying, with the memo off)."""
    limit, space.memo.limit = space.memo.limit, 0
    space.execute(None)
    for _ in range(40):
        here = space.snapshots.capture()
        runnable = space.runnable_blocks()
        for b in runnable:
            if b.gen is None and b.inst.spec.name == "push" and space.eng.spinners:
                spinners = [s for lst in space.eng.spinners.values() for s in lst]
                space.execute(b)
                woken = [s for s in spinners if s.state == WAKE]
                space.snapshots.restore(here)
                if woken:
                    space.memo.limit = limit
                    return b, woken[0]
        space.execute(runnable[0])
    raise AssertionError("no push wakes a waiter along the first-choice schedule")


def test_a_replayed_first_step_leaves_the_state_a_real_step_leaves():
    layer = compile_layer(HANDSHAKE, None)
    inputs = layer.make_inputs(0, layer.ranks)
    space = Space(layer.program, inputs, Config(ranks=2, n_aic=1, rounds=2), First())
    push, spinner = _push_waking_a_waiter(space)
    start = space.snapshots.capture()
    assert not space.memo.steps and space.memo.hits == 0

    real_effect = space.execute(push)  # run for real, and recorded
    real = _state(space)
    assert space.memo.hits == 0 and len(space.memo.steps) == 1
    assert spinner.state == WAKE

    space.snapshots.restore(start)
    assert spinner.state == SPIN
    replayed_effect = space.execute(push)
    assert space.memo.hits == 1
    assert replayed_effect is real_effect
    assert _state(space) == real

    space.snapshots.restore(start)  # and the kernel run for real once more, memo off, agrees
    space.memo.limit = 0
    space.execute(push)
    assert space.memo.hits == 1
    assert _state(space) == real


# Two notifies of one cell in one step, a waiter that wants exactly 1 in between: the first
# notify wakes it, the second overshoots.  A replay that set the final value before repeating
# the notifies would leave it spinning, a state the real run never reaches.


def notify_twice(ctx):
    ctx.notify("sig", (0,), 0, 1)
    ctx.notify("sig", (0,), 0, 1)
    return
    yield


def wait_for_one(ctx):
    yield ctx.wait("sig", (0,), "eq", 1)


def touch_scratch(ctx):
    ctx.t("scratch")[0] = ctx.block + 1
    return
    yield


def overshoot() -> Program:
    return Program(
        "overshoot",
        (TensorSpec("sig", (1,), "int32", "signal"), TensorSpec("scratch", (2,), "int32", "output")),
        (),
        (
            TaskSpec("w", "aiv", 1, wait_for_one),
            TaskSpec("noise", "aiv", 2, touch_scratch),
            TaskSpec("n", "aiv", 1, notify_twice),
        ),
    )


def _same_search(program: Program, config: Config, monkeypatch, inputs=None, **kw) -> tuple:
    inputs = {} if inputs is None else inputs
    on = explore(program, inputs, config, determinism=False, exhaustive=True, **kw)
    with monkeypatch.context() as m:
        m.setattr(space_module, "MEMO_LIMIT", 0)
        off = explore(program, inputs, config, determinism=False, exhaustive=True, **kw)
    assert off.stats.replayed == 0
    for field in (
        "transitions",
        "distinct",
        "revisits",
        "terminals",
        "outputs",
        "max_depth",
        "sleep_pruned",
        "persistent_pruned",
        "symmetry_pruned",
    ):
        assert getattr(on.stats, field) == getattr(off.stats, field), field
    assert on.complete == off.complete
    assert on.outputs == off.outputs
    assert on.deadlocks == off.deadlocks
    assert (on.violation is None) == (off.violation is None)
    if on.violation is not None:
        assert on.violation.kind == off.violation.kind
        assert on.violation.decisions == off.violation.decisions
    return on, off


@pytest.mark.parametrize("reduce", [True, False])
def test_replaying_notifies_wakes_exactly_the_spinners_the_real_notifies_woke(monkeypatch, reduce):
    on, _off = _same_search(overshoot(), Config(ranks=1, n_aic=2), monkeypatch, reduce=reduce)
    assert on.stats.replayed > 0
    assert on.violation is not None and on.violation.kind == "deadlock"  # the overshoot is reachable


def test_the_memo_changes_nothing_on_the_bench_handshake(monkeypatch):
    layer = compile_layer(HANDSHAKE, None)
    inputs = layer.make_inputs(0, layer.ranks)
    on, _off = _same_search(layer.program, Config(ranks=2, n_aic=1, rounds=1), monkeypatch, inputs)
    assert on.complete and on.violation is None
    assert on.stats.replayed > on.stats.transitions // 3


def _as_generator(kernel):
    """The random programs' kernels, as generated kernels are: generators (only those are memoised)."""

    def gen(ctx):
        res = kernel(ctx)
        if res is not None:
            yield from res

    gen.__name__ = kernel.__name__
    return gen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_the_memo_changes_nothing_on_random_programs(case):
    program, ranks = case
    tasks = tuple(
        TaskSpec(
            t.name, t.shape, t.blocks, _as_generator(t.kernel), deps=t.deps, early_resolve=t.early_resolve
        )
        for t in program.tasks
    )
    program = Program(program.name, program.tensors, program.scalars, tasks)
    with pytest.MonkeyPatch.context() as mp:
        _same_search(program, Config(ranks=ranks, n_aic=1), mp, max_states=20_000)


def test_the_memo_stops_remembering_at_its_byte_budget(monkeypatch):
    layer = compile_layer(HANDSHAKE, None)
    inputs = layer.make_inputs(0, layer.ranks)
    config = Config(ranks=2, n_aic=1, rounds=1)
    full = explore(layer.program, inputs, config)
    monkeypatch.setattr(memo_module, "MEMO_BYTES", 3_000)  # a few steps' worth of arrays
    tight = explore(layer.program, inputs, config)
    monkeypatch.setattr(memo_module, "MEMO_BYTES", 0)
    none = explore(layer.program, inputs, config)
    assert none.stats.replayed == 0 < tight.stats.replayed < full.stats.replayed
    for res in (tight, none):
        assert (res.stats.transitions, res.stats.distinct) == (full.stats.transitions, full.stats.distinct)
        assert res.complete and res.violation is None
