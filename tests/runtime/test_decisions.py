"""Choice points as decisions: a seeded run, recorded, replays exactly in the untimed engine.

That is the contract that makes ``dslc verify`` and ``dslc run`` agree: every simulator run is
a path of the space the explorer searches, and a counterexample is a list of decisions.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import verify_programs as vp

from runtime.decisions import Decision, Schedule, ScheduleMismatch
from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import simulate


def _placements(res):
    return sorted(
        (r.task, r.block, r.rank, r.round, r.cores, r.slot, r.gated, r.end is None) for r in res.schedule
    )


def _same_run(a, b) -> None:
    for ma, mb in zip(a.memory, b.memory, strict=True):
        assert ma.keys() == mb.keys()
        for k in ma:
            assert ma[k].tobytes() == mb[k].tobytes(), k
    assert _placements(a) == _placements(b)
    assert (a.deadlock is None) == (b.deadlock is None)
    if a.deadlock is not None:
        assert a.deadlock.report.stuck == b.deadlock.report.stuck


def _wide_mix() -> Program:
    """Two clusters: a MIX block, AIC and AIV grids and an FP32 atomic, to exercise every kind."""
    return Program(
        "wide",
        (TensorSpec("parts", (3, 1), "float32", "input"), TensorSpec("out", (1,), "float32", "output")),
        (),
        (
            TaskSpec("m", "mix", 1, vp.noop, early_resolve=True),
            TaskSpec("c", "aic", 2, vp.noop, deps=(0,)),
            TaskSpec("v", "aiv", 3, vp.add_part, deps=(0,)),
            TaskSpec("z", "aiv", 0, vp.noop, deps=(1, 2)),
        ),
    )


PROGRAMS = {
    "handshake without edge, 3 rounds": (vp.handshake(False), {}, 2, (1, 2), 3),
    "handshake with edge, 3 rounds": (vp.handshake(True), {}, 2, (1, 2), 3),
    "cohort, barrier and MIX": (vp.cohort_and_mix(), {}, 1, (2, 4), 2),
    "wide mix, 2 clusters": (_wide_mix(), vp.split_k_inputs(), 1, (2, 4), 2),
    "finish order": (vp.finish_order(), {}, 1, (1, 2), 1),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("policy", ["fifo", "random", "adversarial"])
def test_a_recorded_run_replays_to_the_same_bits_placements_and_deadlock(name, policy):
    program, inputs, ranks, cores, rounds = PROGRAMS[name]
    kw = dict(ranks=ranks, cores=cores, rounds=rounds, raise_on_deadlock=False)
    for seed in range(12):
        plain = simulate(program, inputs, policy=policy, seed=seed, **kw)
        recorded = simulate(program, inputs, policy=policy, seed=seed, record=True, **kw)
        _same_run(plain, recorded)  # recording does not change the run
        assert plain.makespan == recorded.makespan
        replayed = simulate(program, inputs, replay=recorded.decisions, **kw)
        _same_run(recorded, replayed)
        assert replayed.decisions == recorded.decisions


def test_the_adversary_records_its_racy_pending_placements():
    program = Program("racy", (), (), tuple(TaskSpec(f"t{i}", "aiv", 2, vp.noop) for i in range(4)))
    kinds = set()
    for seed in range(10):
        res = simulate(program, {}, cores=(2, 4), policy="adversarial", seed=seed, record=True)
        kinds |= {d.kind for d in res.decisions}
        assert _placements(simulate(program, {}, cores=(2, 4), replay=res.decisions)) == _placements(res)
    assert {"step", "core"} <= kinds


def test_fp32_atomic_order_is_a_recorded_decision():
    program, inputs = vp.split_k_atomic(), vp.split_k_inputs()
    bits = {}
    for seed in range(30):
        res = simulate(program, inputs, policy="random", seed=seed, record=True)
        bits[res.outputs[0]["out"].tobytes()] = res.decisions
    assert len(bits) == 2
    for want, decisions in bits.items():
        assert simulate(program, inputs, replay=decisions).outputs[0]["out"].tobytes() == want


def test_a_schedule_that_does_not_fit_is_refused_with_the_decision_that_does_not():
    program = vp.handshake(False)
    kw = dict(ranks=2, cores=(1, 2), raise_on_deadlock=False)
    decisions = simulate(program, policy="random", seed=1, record=True, **kw).decisions
    bad = list(decisions)
    bad[0] = Decision(bad[0].kind, bad[0].choice, bad[0].count + 1)
    with pytest.raises(ScheduleMismatch, match=r"decision 1: the schedule chose a \w+ among \d+ options"):
        simulate(program, replay=bad, **kw)
    relabelled = [Decision(d.kind, d.choice, d.count, "nonsense") for d in decisions]
    with pytest.raises(ScheduleMismatch, match="the schedule took 'nonsense'"):
        simulate(program, replay=relabelled, **kw)
    with pytest.raises(ScheduleMismatch, match="the schedule ends but the run still has"):
        simulate(program, replay=decisions[:-1], **kw)
    with pytest.raises(ScheduleMismatch, match="decision\\(s\\) of the schedule left over"):
        simulate(program, replay=[*decisions, Decision("step", 0, 2)], **kw)


def test_schedules_round_trip_through_json_and_bad_documents_are_named():
    s = Schedule("handshake", {"EP": 2}, 2, (1, 2), 3, 7, [Decision("step", 1, 2, "push[0]@rank0 round 1")])
    back = Schedule.from_json(json.loads(s.dumps()))
    assert back == s
    doc = s.to_json()
    for key, value, message in (
        ("format", "other", "not a dslc-schedule document"),
        ("version", 9, "schedule version 9"),
        ("cores", [1, 3], "must be \\[AIC, 2 x AIC\\]"),
        ("ranks", 0, "'ranks' and 'rounds' must be >= 1"),
        ("decisions", [{"kind": "step", "choice": 2, "of": 2}], "0 <= choice < of"),
        ("decisions", [{"kind": "jump", "choice": 0, "of": 2}], "kind 'jump'"),
        ("params", {"EP": "two"}, "'params' must map names to integers"),
        ("seed", None, "field 'seed' is missing"),
    ):
        with pytest.raises(ScheduleMismatch, match=message):
            Schedule.from_json({**doc, key: value})


def test_replay_is_untimed_one_unit_per_step():
    program = vp.handshake(True)
    rec = simulate(program, ranks=2, cores=(1, 2), policy="random", seed=3, record=True)
    rep = simulate(program, ranks=2, cores=(1, 2), replay=rec.decisions)
    assert rep.makespan == rep.blocks_run == rec.blocks_run
    assert np.array_equal(rep.memory[0]["arrived"], rec.memory[0]["arrived"])
