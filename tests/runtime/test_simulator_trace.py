"""Chrome-trace output of the simulator and run-to-run determinism."""

from __future__ import annotations

import json

import pytest

from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import DeadlockError, simulate


def noop(ctx):
    return None


def _load(path) -> list[dict]:
    doc = json.loads(path.read_text())
    assert set(doc) >= {"traceEvents", "otherData"}
    return doc["traceEvents"]


def _threads(events) -> dict[tuple[int, int], str]:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _handshake() -> Program:
    def push(ctx):
        ctx.notify("arrived", ctx.rank, 1 - ctx.rank, 1)

    def wait(ctx):
        yield ctx.wait("arrived", 1 - ctx.rank, "ge", 2 * ctx.epoch)

    return Program(
        "hs",
        (TensorSpec("arrived", (2,), "int32", "signal"),),
        ("epoch",),
        (
            TaskSpec("gate", "aiv", 1, noop, early_resolve=True, prev_round_deps=(3,)),
            TaskSpec("push", "aiv", 2, push, deps=(0,), early_resolve=True, cost=3),
            TaskSpec("wait", "aiv", 1, wait, deps=(0, 1), early_resolve=True),
            TaskSpec("gather", "aiv", 2, noop, deps=(2,)),
        ),
    )


def test_trace_structure(tmp_path):
    path = tmp_path / "sub" / "run.json"
    res = simulate(_handshake(), ranks=2, cores=(2, 4), policy="adversarial", seed=2, rounds=3, trace=path)
    assert res.trace_path == path
    events = _load(path)
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e)
        if e["ph"] == "X":
            assert {"ts", "dur", "cat", "args"} <= set(e) and e["dur"] >= 0
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {0: "rank 0", 1: "rank 1"}
    threads = _threads(events)
    assert len(threads) == 2 * (2 + 4) * 2  # ranks x cores x {running, pending}
    assert [threads[(1, t)] for t in range(6)] == [
        "AIC0 running",
        "AIC0 pending",
        "AIC1 running",
        "AIC1 pending",
        "AIV0 running",
        "AIV0 pending",
    ]
    blocks = [e for e in events if e["ph"] == "X" and e["cat"] == "block"]
    assert len(blocks) == res.blocks_run == 2 * 3 * 6
    assert all(threads[(e["pid"], e["tid"])].endswith("running") for e in blocks)
    assert max(e["ts"] + e["dur"] for e in blocks) == res.makespan
    # every block slice matches the recorded schedule
    sched = {(r.task, r.block, r.rank, r.round + 1): (r.start, r.end) for r in res.schedule}
    for e in blocks:
        a = e["args"]
        assert sched[(a["task"], a["block"], a["rank"], a["round"])] == (e["ts"], e["ts"] + e["dur"])
    # one flow pair per dependency edge: per rank, 4 edges per round plus 1 cross-round edge per later round
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(finishes) == 2 * (4 * 3 + 2)
    assert sorted(e["id"] for e in starts) == sorted(e["id"] for e in finishes)
    assert all(e["bp"] == "e" for e in finishes)
    spins = [e for e in events if e["ph"] == "X" and e["cat"] == "spin"]
    assert spins and {e["name"] for e in spins} <= {"spin arrived[0]", "spin arrived[1]"}
    assert res.waits == len(spins) == 3
    assert not list(path.parent.glob(".*tmp"))  # atomic write left no temp file


def test_gated_slice_ends_at_producer_completion(tmp_path):
    tasks = (
        TaskSpec("p", "aiv", 1, noop, cost=10, early_resolve=True),
        TaskSpec("c", "aiv", 1, noop, deps=(0,), cost=2),
    )
    path = tmp_path / "g.json"
    simulate(Program("g", (), (), tasks), cores=(1, 2), trace=path)
    events = _load(path)
    threads = _threads(events)
    (p,) = [e for e in events if e["ph"] == "X" and e["cat"] == "block" and e["name"] == "p[0]"]
    (gated,) = [e for e in events if e["ph"] == "X" and e["cat"] == "gated"]
    (c,) = [e for e in events if e["ph"] == "X" and e["cat"] == "block" and e["name"] == "c[0]"]
    assert threads[(0, gated["tid"])] == "AIV1 running"
    assert (gated["ts"], gated["ts"] + gated["dur"]) == (0, 10) == (p["ts"], p["ts"] + p["dur"])
    assert gated["args"]["producers"] == ["p"]
    assert (c["tid"], c["ts"], c["dur"]) == (gated["tid"], 10, 2)


def test_pending_slot_shows_as_parked_slice(tmp_path):
    tasks = (TaskSpec("long", "aiv", 1, noop, cost=10), TaskSpec("b", "aiv", 3, noop, cost=1))
    path = tmp_path / "p.json"
    simulate(Program("p", (), (), tasks), cores=(1, 2), trace=path)
    events = _load(path)
    threads = _threads(events)
    parked = {e["name"]: e for e in events if e["ph"] == "X" and e["cat"] == "pending"}
    assert set(parked) == {"parked b[1]", "parked b[2]"}
    b1 = parked["parked b[1]"]
    assert threads[(0, b1["tid"])] == "AIV0 pending" and (b1["ts"], b1["dur"]) == (0, 10)
    (run_b1,) = [e for e in events if e["ph"] == "X" and e["cat"] == "block" and e["name"] == "b[1]"]
    (long_,) = [e for e in events if e["ph"] == "X" and e["cat"] == "block" and e["name"] == "long[0]"]
    assert run_b1["tid"] == long_["tid"] and run_b1["ts"] == long_["ts"] + long_["dur"] == 10


def test_trace_is_written_for_a_deadlocked_run(tmp_path):
    def k(ctx):
        yield ctx.barrier()

    path = tmp_path / "dl.json"
    with pytest.raises(DeadlockError):
        simulate(Program("bar", (), (), (TaskSpec("grid", "aiv", 20, k),)), trace=path)
    events = _load(path)
    stuck = [e for e in events if e["ph"] == "X" and e["cat"] == "stuck"]
    parked = [e for e in events if e["ph"] == "X" and e["cat"] == "pending"]
    assert len(stuck) == 16 and len(parked) == 4
    assert all(e["ts"] + e["dur"] == 1 for e in stuck + parked)


def _mixed_program() -> Program:
    def k(ctx):
        ctx.atomic_add("acc", 0, ctx.block * 0.1 + ctx.rank)

    return Program(
        "det",
        (TensorSpec("acc", (1,), "float32", "output"),),
        (),
        (
            TaskSpec("a", "aiv", 24, k, early_resolve=True),
            TaskSpec("b", "aic", 9, k, deps=(0,)),
            TaskSpec("m", "mix", 5, k, deps=(0,)),
            TaskSpec("c", "aiv", 7, k, deps=(1, 2), cost=2),
        ),
    )


@pytest.mark.parametrize("policy", ["fifo", "random", "adversarial"])
def test_same_seed_gives_identical_trace_and_outputs(tmp_path, policy):
    runs = []
    for i in range(2):
        path = tmp_path / f"t{i}.json"
        res = simulate(_mixed_program(), ranks=2, policy=policy, seed=11, rounds=2, trace=path)
        runs.append((path.read_bytes(), [o["acc"].tobytes() for o in res.outputs], res.schedule))
    assert runs[0] == runs[1]


def test_different_seeds_explore_different_schedules():
    scheds = {
        tuple(
            (r.task, r.block, r.cores, r.start)
            for r in simulate(_mixed_program(), policy="random", seed=s).schedule
        )
        for s in range(5)
    }
    assert len(scheds) > 1
