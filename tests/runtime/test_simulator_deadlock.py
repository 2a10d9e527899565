"""Deadlocks the simulator must reproduce and explain (docs/runtime-semantics.md §9, §15).

Also the watchdogs: a kernel that never returns is stopped with SimulationTimeout.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import DeadlockError, SimulationTimeout, StepLimitExceeded, simulate


def noop(ctx):
    return None


# --------------------------------------------------------------------------- the seed handshake


def gate(ctx):
    return None


def push(ctx):
    ctx.notify("arrived", ctx.rank, 1 - ctx.rank, 1)


def wait(ctx):
    yield ctx.wait("arrived", 1 - ctx.rank, "ge", 2 * ctx.epoch)


def handshake(edge: bool) -> Program:
    """docs/runtime-semantics.md §15.6: gate -> push (spmd 2), gate -> wait; the fix adds push -> wait."""
    return Program(
        "handshake",
        (TensorSpec("arrived", (2,), "int32", "signal"),),
        ("epoch",),
        (
            TaskSpec("gate", "aiv", 1, gate, early_resolve=True, prev_round_deps=(2,)),
            TaskSpec("push", "aiv", 2, push, deps=(0,)),
            TaskSpec("wait", "aiv", 1, wait, deps=(0, 1) if edge else (0,)),
        ),
    )


def _deadlocks(prog: Program, seeds, **kw) -> list[DeadlockError]:
    found = []
    for seed in seeds:
        try:
            simulate(prog, ranks=2, cores=(1, 2), policy="adversarial", seed=seed, **kw)
        except DeadlockError as e:
            found.append(e)
    return found


def test_missing_push_to_wait_edge_deadlocks_under_adversarial_policy():
    found = _deadlocks(handshake(edge=False), range(20))
    assert found, "the adversarial policy must find the handshake deadlock within seeds 0..19"
    e = found[0]
    msg = str(e)
    # the parked notifier and its pending slot are named, and so is the spinning waiter
    assert "pending slot" in msg
    parked = [s for s in e.report.stuck if s.task == "push" and s.slot == "pending"]
    assert parked and parked[0].state == "parked"
    assert f"push[{parked[0].block}]" in msg
    assert f"rank {parked[0].rank} {parked[0].core} pending push[{parked[0].block}]" in msg
    spinners = [s for s in e.report.stuck if s.state == "spinning"]
    assert {s.task for s in spinners} == {"wait"} and len(spinners) == 2
    assert "spinning on cell arrived[1] current=1 expected>=2" in msg
    assert "parked in pending slot of AIV" in msg and "behind wait[0]" in msg
    # the cross-rank cycle wait@r -> push@p -> wait@p -> push@r -> wait@r
    cyc = e.report.cycle
    assert cyc[0] == cyc[-1] and len(cyc) == 5
    assert [c.split("[")[0] for c in cyc] == ["wait", "push", "wait", "push", "wait"]
    assert {c.split("@")[1] for c in cyc} == {"rank0", "rank1"}
    assert "cycle: " + " -> ".join(cyc) in msg


def test_handshake_with_edge_never_deadlocks():
    assert _deadlocks(handshake(edge=True), range(200)) == []
    for seed in range(40):
        res = simulate(handshake(edge=True), ranks=2, cores=(1, 2), policy="adversarial", seed=seed, rounds=5)
        assert [m["arrived"].tolist() for m in res.memory] == [[0, 10], [10, 0]]
        assert res.blocks_run == 2 * 5 * 4


def test_deadlock_can_be_returned_instead_of_raised():
    for seed in range(20):
        res = simulate(
            handshake(edge=False),
            ranks=2,
            cores=(1, 2),
            policy="adversarial",
            seed=seed,
            raise_on_deadlock=False,
        )
        if res.deadlock is not None:
            break
    assert isinstance(res.deadlock, DeadlockError)
    assert res.blocks_run == 2 * 2  # gate and one push block per rank ran
    assert [m["arrived"].tolist() for m in res.memory] == [[0, 1], [1, 0]]


# --------------------------------------------------------------------------- EP4 dispatch, sim device

N_LOCAL = 16


def moe_dispatch(edge: bool) -> Program:
    """The dspark dispatch of docs/runtime-semantics.md §15.2 at EP=nranks on the 8-cluster sim device."""

    def push_rows(ctx):
        for dst in range(ctx.nranks):
            if dst != ctx.rank:
                ctx.notify("data_arrived", ctx.rank, dst, 1)

    def wait_all(ctx):
        for src in range(ctx.nranks):
            if src != ctx.rank:
                yield ctx.wait("data_arrived", src, "ge", ctx.epoch * N_LOCAL)

    return Program(
        "moe_dispatch",
        (TensorSpec("data_arrived", (8,), "int32", "signal"),),
        ("epoch",),
        (
            TaskSpec("gate", "aiv", 1, noop, early_resolve=True, prev_round_deps=(4,)),
            TaskSpec("dispatch_push", "aiv", N_LOCAL, push_rows, deps=(0,), early_resolve=True),
            TaskSpec("dispatch_wait", "aiv", 1, wait_all, deps=(0, 1) if edge else (0,), early_resolve=True),
            TaskSpec("dispatch_gather", "aiv", N_LOCAL, noop, deps=(2,), early_resolve=True),
            TaskSpec("expert", "aic", 32, noop, deps=(3,)),
        ),
    )


def test_ep4_dispatch_deadlocks_on_the_sim_device_only_without_the_edge():
    bad = 0
    for seed in range(30):
        try:
            simulate(moe_dispatch(False), ranks=4, policy="adversarial", seed=seed, rounds=2)
        except DeadlockError as e:
            bad += 1
            assert "dispatch_push[" in str(e) and "parked in pending slot" in str(e)
            assert e.report.cycle[0].startswith("dispatch_wait[0]@rank")
    assert bad >= 3
    for seed in range(60):
        res = simulate(moe_dispatch(True), ranks=4, policy="adversarial", seed=seed, rounds=2)
        assert all(m["data_arrived"].tolist()[:4].count(2 * N_LOCAL) == 3 for m in res.memory)


# --------------------------------------------------------------------------- D2: gated blocks hold cores


def test_gated_consumers_of_a_spinning_waiter_starve_the_notifier():
    """docs/runtime-semantics.md §9 D2: W is flagged, so C is staged gated on every free AIV slot while W
    spins; the notifier N becomes ready later and finds no slot on either rank."""

    def w(ctx):
        yield ctx.wait("sig", 1 - ctx.rank, "ge", 1)

    def n(ctx):
        ctx.notify("sig", ctx.rank, 1 - ctx.rank, 1)

    prog = Program(
        "d2",
        (TensorSpec("sig", (2,), "int32", "signal"),),
        (),
        (
            TaskSpec("t", "aic", 1, noop),
            TaskSpec("w", "aiv", 1, w, early_resolve=True),
            TaskSpec("c", "aiv", 3, noop, deps=(1,)),
            TaskSpec("n", "aiv", 1, n, deps=(0,)),
        ),
    )
    with pytest.raises(DeadlockError) as ei:
        simulate(prog, ranks=2, cores=(1, 2), policy="fifo")
    msg = str(ei.value)
    assert "rank 0 AIV0 running w[0] round 1: spinning on cell sig[1] current=0 expected>=1" in msg
    assert "n[0] rank 1 (round 1) in AIV ready queue" in msg
    assert "gated block(s) of c round 1 hold AIV0 pending, AIV1 running, AIV1 pending" in msg
    assert "gated awaiting producers w (round 1)" in msg
    assert ei.value.report.cycle == ["w[0]@rank0", "n[0]@rank1", "w[0]@rank1", "n[0]@rank0", "w[0]@rank0"]
    # without the flag nothing is staged behind the waiter and the handshake completes
    fixed = Program(prog.name, prog.tensors, (), (prog.tasks[0], TaskSpec("w", "aiv", 1, w), *prog.tasks[2:]))
    simulate(fixed, ranks=2, cores=(1, 2), policy="fifo")


# --------------------------------------------------------------------------- barriers


def _barrier_grid(blocks: int, sync_start: bool) -> Program:
    def k(ctx):
        yield ctx.barrier()

    return Program("bar", (), (), (TaskSpec("grid", "aiv", blocks, k, sync_start=sync_start),))


def test_barrier_without_full_occupancy_deadlocks_and_says_so():
    with pytest.raises(DeadlockError) as ei:
        simulate(_barrier_grid(20, sync_start=False))
    msg = str(ei.value)
    assert "waiting at barrier 1 with 16 of 20 blocks arrived" in msg
    parked = [s for s in ei.value.report.stuck if s.state == "parked"]
    assert sorted(s.block for s in parked) == [16, 17, 18, 19]
    assert all(s.slot == "pending" for s in parked)
    assert "grid[0]@rank0" in " ".join(ei.value.report.cycle)


def test_barrier_grid_that_fits_completes_with_and_without_sync_start():
    for sync in (False, True):
        res = simulate(_barrier_grid(16, sync_start=sync), policy="random", seed=1)
        assert res.blocks_run == 16 and res.makespan == 1


def test_eq_wait_overshot_by_two_notifies_hangs():
    """docs/runtime-semantics.md §7.2: with Eq a fast peer can overshoot the value the waiter polls for."""

    def notify_twice(ctx):
        ctx.notify("sig", 0, 0, 1)
        ctx.notify("sig", 0, 0, 1)

    def wait_eq(ctx):
        yield ctx.wait("sig", 0, "eq", 1)

    prog = Program(
        "eq",
        (TensorSpec("sig", (1,), "int32", "signal"),),
        (),
        (TaskSpec("w", "aiv", 1, wait_eq), TaskSpec("n", "aiv", 1, notify_twice, cost=2)),
    )
    with pytest.raises(DeadlockError, match=r"spinning on cell sig\[0\] current=2 expected==1"):
        simulate(prog)


# --------------------------------------------------------------------------- watchdogs


def test_kernel_yielding_forever_hits_the_wall_clock_timeout():
    def forever(ctx):
        while True:
            yield

    prog = Program(
        "spin", (TensorSpec("x", (1,), "float32", "output"),), (), (TaskSpec("loop", "aiv", 1, forever),)
    )
    t0 = time.monotonic()
    with pytest.raises(SimulationTimeout) as err:
        simulate(prog, timeout=0.3, max_block_steps=10**12)
    assert time.monotonic() - t0 < 5
    message = str(err.value)
    assert "stopped at its 0.3 s wall-clock timeout: 0 of 1 blocks finished (0.0%)" in message
    assert "no block finished in the last" in message and "a kernel that yields forever" in message
    assert "the last block resumed: block loop[0] rank 0 round 1" in message
    assert err.value.progress.blocks_done == 0 and err.value.progress.blocks_total == 1


def test_satisfied_wait_in_a_loop_is_also_caught():
    def busy(ctx):
        while True:
            yield ctx.wait("s", 0, "ge", 0)

    prog = Program("busy", (TensorSpec("s", (1,), "int32", "signal"),), (), (TaskSpec("b", "aiv", 1, busy),))
    with pytest.raises(StepLimitExceeded, match=r"b\[0\] rank 0 round 1 resumed more than 5,000 times"):
        simulate(prog, max_block_steps=5000)


def test_unsupported_yield_is_a_kernel_error():
    def bad(ctx):
        yield 42

    from runtime.simulator import KernelError

    with pytest.raises(KernelError, match="yielded 42"):
        simulate(Program("y", (), (), (TaskSpec("bad", "aiv", 1, bad),)))


def test_direct_write_to_signal_cell_is_noticed_before_declaring_deadlock():
    def w(ctx):
        yield ctx.wait("s", 0, "ge", 1)

    def poke(ctx):
        ctx.t("s")[0] = 1  # not a notify: the engine rechecks spinners before giving up

    prog = Program(
        "poke",
        (TensorSpec("s", (1,), "int32", "signal"),),
        (),
        (TaskSpec("w", "aiv", 1, w), TaskSpec("p", "aiv", 1, poke)),
    )
    res = simulate(prog, {"s": np.zeros(1, np.int32)})
    assert res.blocks_run == 2 and res.waits == 1
