"""Scheduling semantics of the runtime simulator (docs/runtime-semantics.md §2-§6).

Programs are built by hand with tiny kernels; assertions are on exact times, slots and bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from runtime.program import Program, TaskSpec, TensorSpec
from runtime.simulator import BlockRecord, CohortTooLargeError, KernelError, simulate


def noop(ctx):
    return None


def rec(res, task: str, block: int = 0, rank: int = 0, round_: int = 0) -> BlockRecord:
    (r,) = [r for r in res.schedule if (r.task, r.block, r.rank, r.round) == (task, block, rank, round_)]
    return r


# --------------------------------------------------------------------------- split-K numerics

SPLITS = 8
TILE = (4, 8)


def _split_k_tiles() -> np.ndarray:
    """Float32 partial tiles of wildly different magnitudes: FP32 addition order matters."""
    rng = np.random.default_rng(7)
    scales = np.array([1e8, 1.0, -1e8, 3.0e3, 1e-3, 7.0e7, -5.0e2, 1e4], dtype=np.float64)
    tiles = rng.standard_normal((SPLITS, *TILE)) * scales[:, None, None]
    return tiles.astype(np.float32)


def _atomic_program() -> Program:
    def linear(ctx):
        ctx.atomic_add("out", (slice(None), slice(None)), ctx.t("parts")[ctx.block])

    return Program(
        "split_k_atomic",
        (
            TensorSpec("parts", (SPLITS, *TILE), "float32", "input"),
            TensorSpec("out", TILE, "float32", "output"),
        ),
        (),
        (TaskSpec("linear", "aiv", SPLITS, linear),),
    )


def _ordered_program() -> Program:
    def linear(ctx):
        ctx.t("partials")[ctx.block] = ctx.t("parts")[ctx.block]

    def reduce(ctx):
        p = ctx.t("partials")
        total = p[0].copy()
        for s in range(1, SPLITS):
            total = total + p[s]
        ctx.t("out")[...] = total

    return Program(
        "split_k_ordered",
        (
            TensorSpec("parts", (SPLITS, *TILE), "float32", "input"),
            TensorSpec("partials", (SPLITS, *TILE), "float32", "scratch"),
            TensorSpec("out", TILE, "float32", "output"),
        ),
        (),
        (
            TaskSpec("linear", "aiv", SPLITS, linear, early_resolve=True),
            TaskSpec("reduce", "aiv", 1, reduce, deps=(0,)),
        ),
    )


def _patterns(program: Program, policy: str = "random") -> set[bytes]:
    parts = _split_k_tiles()
    return {
        simulate(program, {"parts": parts}, policy=policy, seed=s).outputs[0]["out"].tobytes()
        for s in range(20)
    }


def test_fp32_atomic_split_k_is_order_dependent_across_seeds():
    assert len(_patterns(_atomic_program())) >= 2


def test_ordered_reduce_is_bitwise_identical_across_seeds():
    pats = _patterns(_ordered_program()) | _patterns(_ordered_program(), "adversarial")
    assert len(pats) == 1
    parts = _split_k_tiles()
    expected = parts[0].copy()
    for s in range(1, SPLITS):
        expected = expected + parts[s]
    assert pats == {expected.tobytes()}


def test_atomic_add_rounds_in_destination_dtype():
    def k(ctx):
        ctx.atomic_add("out", 0, np.float64(1e-9))

    p = Program("a", (TensorSpec("out", (1,), "float32", "output"),), (), (TaskSpec("k", "aiv", 1, k),))
    out = simulate(p, {"out": np.ones(1, np.float32)}).outputs[0]["out"]
    assert out.dtype == np.float32 and out[0] == np.float32(1.0)


# --------------------------------------------------------------------------- time and waves


def test_fifo_chain_makespan_is_sum_of_costs():
    costs = [3, 5, 2, 7]
    tasks = tuple(
        TaskSpec(f"t{i}", "aiv", 1, noop, deps=(i - 1,) if i else (), cost=c) for i, c in enumerate(costs)
    )
    res = simulate(Program("chain", (), (), tasks))
    assert res.makespan == sum(costs)
    assert [(rec(res, f"t{i}").start, rec(res, f"t{i}").end) for i in range(4)] == [
        (0, 3),
        (3, 8),
        (8, 10),
        (10, 17),
    ]


def test_spmd_grid_dispatches_in_waves_idle_then_pending():
    res = simulate(Program("w", (), (), (TaskSpec("g", "aiv", 40, noop),)))  # 16 AIV per rank
    slots = [
        (r.slot, r.placed_at, r.start, r.end, r.cores[0]) for r in sorted(res.schedule, key=lambda r: r.block)
    ]
    assert slots[:16] == [("running", 0, 0, 1, f"AIV{i}") for i in range(16)]
    assert slots[16:32] == [("pending", 0, 1, 2, f"AIV{i}") for i in range(16)]
    # the third wave is placed when slots free up at t=1: every core is busy again, so pending
    assert slots[32:] == [("pending", 1, 2, 3, f"AIV{i}") for i in range(8)]
    assert res.makespan == 3 and res.blocks_run == 40


def test_pending_slot_task_starts_only_when_running_task_ends():
    tasks = (TaskSpec("long", "aiv", 1, noop, cost=10), TaskSpec("b", "aiv", 3, noop, cost=1))
    res = simulate(Program("p", (), (), tasks), cores=(1, 2))
    long_, b0, b1, b2 = rec(res, "long"), rec(res, "b", 0), rec(res, "b", 1), rec(res, "b", 2)
    assert (long_.cores, long_.slot, long_.start, long_.end) == (("AIV0",), "running", 0, 10)
    assert (b0.cores, b0.slot, b0.start) == (("AIV1",), "running", 0)
    # b[1] is parked behind `long` even though AIV1 frees up at t=1: pending work never migrates
    assert (b1.cores, b1.slot, b1.placed_at, b1.promoted_at, b1.start) == (("AIV0",), "pending", 0, 10, 10)
    assert (b2.cores, b2.slot, b2.promoted_at, b2.start) == (("AIV1",), "pending", 1, 1)


def _running_intervals(res) -> dict[tuple[int, str], list[tuple[int, int]]]:
    out: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for r in res.schedule:
        held_from = r.placed_at if r.slot == "running" else r.promoted_at
        assert r.start is not None and held_from is not None and r.start >= held_from
        out.setdefault((r.rank, r.cores[0]), []).append((held_from, r.end))
    return out


@pytest.mark.parametrize("policy", ["fifo", "random", "adversarial"])
def test_a_core_runs_one_block_at_a_time_under_every_policy(policy):
    tasks = (
        TaskSpec("a", "aiv", 20, noop, cost=3, early_resolve=True),
        TaskSpec("b", "aiv", 12, noop, cost=2, deps=(0,)),
        TaskSpec("c", "aic", 5, noop, cost=4),
        TaskSpec("m", "mix", 3, noop, cost=2, deps=(2,)),
        TaskSpec("d", "aiv", 7, noop, cost=1, deps=(1, 3)),
    )
    for seed in range(10):
        res = simulate(Program("mixed", (), (), tasks), cores=(4, 8), policy=policy, seed=seed)
        for ivs in _running_intervals(res).values():
            ivs.sort()
            for (_s0, e0), (s1, _e1) in zip(ivs, ivs[1:], strict=False):
                assert s1 >= e0
        # consumers start only after all producers completed
        ends = {}
        for r in res.schedule:
            ends[r.task] = max(ends.get(r.task, 0), r.end)
        for r in res.schedule:
            for dep in {"b": ["a"], "m": ["c"], "d": ["b", "m"]}.get(r.task, []):
                assert r.start >= ends[dep]


def test_mix_block_takes_a_whole_cluster():
    tasks = (
        TaskSpec("v", "aiv", 1, noop, cost=4),
        TaskSpec("t", "aic", 1, noop, cost=1),
        TaskSpec("m", "mix", 2, noop, cost=1, deps=(1,)),
    )
    res = simulate(Program("m", (), (), tasks), cores=(2, 4))
    assert rec(res, "v").cores == ("AIV0",)
    m0, m1 = rec(res, "m", 0), rec(res, "m", 1)
    # at t=1 the only fully idle cluster is 1; block 1 takes cluster 0, parking on busy AIV0
    assert (m0.cores, m0.placed_at, m0.start) == (("AIC1", "AIV2", "AIV3"), 1, 1)
    assert (m1.cores, m1.placed_at, m1.start) == (("AIC0", "AIV0", "AIV1"), 1, 4)
    assert res.makespan == 5


# --------------------------------------------------------------------------- early dispatch


def test_gated_consumer_holds_its_core_until_producers_complete():
    tasks = (
        TaskSpec("p", "aiv", 1, noop, cost=10, early_resolve=True),
        TaskSpec("c", "aiv", 1, noop, deps=(0,)),
        TaskSpec("t", "aic", 1, noop, cost=1),
        TaskSpec("x", "aiv", 2, noop, deps=(2,)),
    )
    res = simulate(Program("g", (), (), tasks), cores=(1, 2))
    c, x0, x1 = rec(res, "c"), rec(res, "x", 0), rec(res, "x", 1)
    assert (c.cores, c.slot, c.gated, c.placed_at, c.doorbell, c.start) == (
        ("AIV1",),
        "running",
        True,
        0,
        10,
        10,
    )
    # x became ready at t=1 but both AIV cores were held (p running, c gated): pending slots
    assert (x0.cores, x0.slot, x0.start) == (("AIV0",), "pending", 10)
    assert (x1.cores, x1.slot, x1.start) == (("AIV1",), "pending", 11)


def test_unflagged_producer_keeps_consumer_off_cores():
    tasks = (TaskSpec("p", "aiv", 1, noop, cost=10), TaskSpec("c", "aiv", 1, noop, deps=(0,)))
    res = simulate(Program("g", (), (), tasks), cores=(1, 2))
    c = rec(res, "c")
    assert (c.gated, c.placed_at, c.start) == (False, 10, 10)


def test_early_candidate_needs_fully_published_producer():
    tasks = (TaskSpec("p", "aiv", 40, noop, early_resolve=True), TaskSpec("c", "aiv", 1, noop, deps=(0,)))
    res = simulate(Program("g", (), (), tasks))
    c = rec(res, "c")
    # p's third wave is placed only at t=1; before that c is not a candidate
    assert (c.gated, c.placed_at, c.slot, c.cores, c.start) == (True, 1, "pending", ("AIV8",), 3)


def test_early_queue_capacity_bounds_candidates():
    def run(blocks: int, cap: int):
        tasks = (
            TaskSpec("p", "aiv", 1, noop, cost=5, early_resolve=True),
            TaskSpec("c", "aiv", blocks, noop, deps=(0,)),
        )
        return [
            r for r in simulate(Program("e", (), (), tasks), early_capacity=cap).schedule if r.task == "c"
        ]

    assert [(r.gated, r.placed_at) for r in run(4, 4)] == [(True, 0)] * 4
    assert [(r.gated, r.placed_at) for r in run(5, 4)] == [(False, 5)] * 5


def test_predicated_consumer_is_never_early_and_false_predicate_retires_inline():
    ran = []

    def k(ctx):
        ran.append(ctx.task)

    tasks = (
        TaskSpec("p", "aiv", 1, noop, cost=3, early_resolve=True),
        TaskSpec("skip", "aiv", 4, k, deps=(0,), predicate=lambda m: m.t("flag")[0] > 0),
        TaskSpec("run", "aiv", 1, k, deps=(0,), predicate=lambda m: m.t("flag")[0] == 0),
        TaskSpec("after", "aiv", 1, k, deps=(1,)),
    )
    prog = Program("pred", (TensorSpec("flag", (1,), "int32", "input"),), (), tasks)
    res = simulate(prog, {"flag": np.zeros(1, np.int32)})
    assert ran == ["run", "after"]
    assert res.blocks_run == 3
    assert (rec(res, "run").gated, rec(res, "run").start) == (False, 3)
    assert rec(res, "after").start == 3  # released by the retired task at its dispatch point


def test_zero_block_task_completes_immediately_and_releases():
    tasks = (
        TaskSpec("a", "aiv", 1, noop, cost=2),
        TaskSpec("dummy", "aiv", 0, noop, deps=(0,)),
        TaskSpec("b", "aiv", 1, noop, deps=(1,)),
    )
    res = simulate(Program("z", (), (), tasks))
    assert rec(res, "b").start == 2 and res.blocks_run == 2


# --------------------------------------------------------------------------- sync_start


def test_sync_start_cohort_larger_than_device_is_refused_before_running():
    ran = []
    tasks = (
        TaskSpec("first", "aiv", 1, lambda ctx: ran.append(1)),
        TaskSpec("all", "aiv", 17, noop, sync_start=True),
    )
    with pytest.raises(CohortTooLargeError) as ei:
        simulate(Program("c", (), (), tasks))
    assert (ei.value.task, ei.value.blocks, ei.value.capacity) == ("all", 17, 16)
    assert "all" in str(ei.value) and "17" in str(ei.value) and "16" in str(ei.value)
    assert ran == []
    with pytest.raises(CohortTooLargeError, match="9 blocks.*8 clusters"):
        simulate(Program("c", (), (), (TaskSpec("m", "mix", 9, noop, sync_start=True),)))
    simulate(Program("c", (), (), (TaskSpec("m", "mix", 8, noop, sync_start=True),)))


def test_sync_start_is_all_or_nothing_on_idle_cores():
    tasks = (
        TaskSpec("hog", "aiv", 1, noop, cost=5),
        TaskSpec("t", "aic", 1, noop, cost=1),
        TaskSpec("cohort", "aiv", 16, noop, sync_start=True, deps=(1,)),
        TaskSpec("late", "aiv", 1, noop, deps=(1,)),
    )
    res = simulate(Program("s", (), (), tasks))
    cohort = [r for r in res.schedule if r.task == "cohort"]
    assert {(r.placed_at, r.slot, r.start) for r in cohort} == {(5, "running", 5)}
    # the waiting cohort drains AIV: `late` is not dispatched ahead of it
    assert rec(res, "late").placed_at == 5 and rec(res, "late").slot == "pending"


def test_barrier_with_sync_start_and_full_occupancy_completes():
    n = 16

    def k(ctx):
        ctx.t("pre")[ctx.block] = ctx.block + 1
        yield ctx.barrier()
        ctx.t("seen")[ctx.block] = ctx.t("pre").sum()

    prog = Program(
        "bar",
        (TensorSpec("pre", (n,), "int64", "output"), TensorSpec("seen", (n,), "int64", "output")),
        (),
        (
            TaskSpec("hog", "aiv", 1, noop, cost=3),
            TaskSpec("t", "aic", 1, noop, cost=1),
            TaskSpec("grid", "aiv", n, k, sync_start=True, cost=2, deps=(1,)),
        ),
    )
    for policy in ("fifo", "random", "adversarial"):
        res = simulate(prog, policy=policy, seed=3)
        assert (res.outputs[0]["seen"] == n * (n + 1) // 2).all()
        assert {r.start for r in res.schedule if r.task == "grid"} == {3}


# --------------------------------------------------------------------------- ranks, rounds, memory


def test_rounds_persist_memory_and_advance_epoch():
    def k(ctx):
        ctx.t("log")[ctx.round] = ctx.scalar("epoch") * 10 + ctx.scalar("scale")
        ctx.atomic_add("count", 0, 1)

    prog = Program(
        "r",
        (TensorSpec("log", (3,), "int32", "output"), TensorSpec("count", (1,), "int32", "output")),
        ("epoch", "scale"),
        (TaskSpec("k", "aiv", 1, k, prev_round_deps=(0,)),),
    )
    res = simulate(prog, ranks=2, rounds=3, scalars={"scale": 2})
    for r in range(2):
        assert res.outputs[r]["log"].tolist() == [12, 22, 32]
        assert res.outputs[r]["count"].tolist() == [3]
    assert res.rounds == 3 and res.blocks_run == 6 and res.makespan == 3


def test_remote_store_into_peer_window_and_inputs_per_rank():
    def put(ctx):
        ctx.peer("win", (ctx.rank + 1) % ctx.nranks)[ctx.rank] = ctx.t("x")[0]

    prog = Program(
        "w",
        (TensorSpec("x", (1,), "float32", "input"), TensorSpec("win", (3,), "float32", "window")),
        (),
        (TaskSpec("put", "aiv", 1, put),),
    )
    res = simulate(prog, [{"x": np.array([10.0 * r])} for r in range(3)], ranks=3)
    assert [o["win"].tolist() for o in res.outputs] == [[0, 0, 20], [0, 0, 0], [0, 10, 0]]


def test_input_validation_messages():
    prog = Program(
        "v", (TensorSpec("x", (2,), "float32", "input"),), ("n",), (TaskSpec("k", "aiv", 1, noop),)
    )
    with pytest.raises(ValueError, match="missing input tensor 'x'"):
        simulate(prog, {}, scalars={"n": 1})
    with pytest.raises(ValueError, match="needs runtime scalars"):
        simulate(prog, {"x": np.zeros(2)})
    with pytest.raises(ValueError, match="shape"):
        simulate(prog, {"x": np.zeros(3)}, scalars={"n": 1})
    with pytest.raises(ValueError, match="earlier task"):
        Program("d", (), (), (TaskSpec("a", "aiv", 1, noop, deps=(0,)),)).validate()


def test_kernel_exception_names_the_block():
    def bad(ctx):
        if ctx.block == 1:
            raise ZeroDivisionError("boom")

    with pytest.raises(KernelError, match=r"bad\[1\] \(rank 0, round 1\) raised ZeroDivisionError: boom"):
        simulate(Program("k", (), (), (TaskSpec("bad", "aiv", 2, bad),)))


@pytest.mark.parametrize("index", [2147483648, -1, (0, 0)])
def test_a_wait_on_a_cell_outside_its_signal_is_a_kernel_error(index):
    """A fuzz case: `wait released[2147483648]` on a one-cell signal was an IndexError of the
    engine (an internal error of `dslc run --no-lint`), not an error of the kernel."""

    def waits(ctx):
        yield ctx.wait("ready", index, "ge", 1)

    program = Program(
        "w", (TensorSpec("ready", (1,), "int32", "signal"),), (), (TaskSpec("w", "aiv", 1, waits),)
    )
    with pytest.raises(KernelError, match=r"w\[0\] \(rank 0, round 1\) raised IndexError: wait on ready\["):
        simulate(program)


def test_presets_and_progress_flag_without_tty():
    for preset, n_aiv in (("sim", 16), ("a2a3", 48), ("a5", 72)):
        res = simulate(
            Program("p", (), (), (TaskSpec("g", "aiv", n_aiv + 1, noop),)), cores=preset, progress=True
        )
        assert res.makespan == 2 and sum(r.slot == "pending" for r in res.schedule) == 1
    with pytest.raises(ValueError, match="n_aiv must be 2 \\* n_aic"):
        simulate(Program("p", (), (), ()), cores=(2, 3))
    with pytest.raises(ValueError, match="unknown core preset"):
        simulate(Program("p", (), (), ()), cores="a9")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"policy": "lifo"}, "unknown policy 'lifo'; expected one of"),
        ({"ranks": 0}, "ranks and rounds must be >= 1"),
        ({"rounds": 0}, "ranks and rounds must be >= 1"),
        ({"sched_threads": 0}, "sched_threads must be >= 1"),
        ({"scalars": {"nope": 1}}, r"scalars \['nope'\] are not declared by program 'p'"),
    ],
)
def test_bad_run_arguments_are_refused_before_anything_runs(kwargs, message):
    ran = []
    prog = Program("p", (), (), (TaskSpec("t", "aiv", 1, lambda ctx: ran.append(1)),))
    with pytest.raises(ValueError, match=message):
        simulate(prog, **kwargs)
    assert not ran


def test_importing_dslc_leaves_the_environment_alone():
    """A library import must not change the caller's process (it once set OPENBLAS_NUM_THREADS)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    code = (
        "import os; before = dict(os.environ); import dsl, dsl.driver.api; print(dict(os.environ) == before)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "True", out.stderr


def test_kernels_run_with_one_blas_thread_and_the_count_is_restored():
    from runtime import blas

    before = blas.blas_threads()
    if before is None:
        pytest.skip("NumPy's BLAS is not the OpenBLAS of its wheel: nothing to set")
    seen = []
    tasks = (TaskSpec("t", "aiv", 2, lambda ctx: seen.append(blas.blas_threads())),)
    with_two = blas._openblas()[1]
    with_two(2)
    try:
        simulate(Program("b", (), (), tasks))
        assert seen == [1, 1] and blas.blas_threads() == 2
    finally:
        with_two(before)
