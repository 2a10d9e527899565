"""Small hand-written programs for the decision, replay and model-checking tests, and a
brute-force enumerator of every schedule (no snapshots, no hashing, no reduction: one fresh
engine per schedule) that the explorer is checked against."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.decisions import Decider, Decision, block_label
from runtime.machine import DONE
from runtime.memory import build_memory
from runtime.program import Program, TaskSpec, TensorSpec
from runtime.scheduler import Engine
from runtime.sim_errors import SimulatorError

# --------------------------------------------------------------------------- kernels


def noop(ctx):
    return None


def gate(ctx):
    ctx.t("flag")[0] = 1


def push(ctx):
    ctx.notify("arrived", (ctx.rank,), 1 - ctx.rank, 1)


def wait_peer(ctx):
    yield ctx.wait("arrived", (1 - ctx.rank,), "ge", ctx.epoch)


def add_part(ctx):
    ctx.atomic_add("out", (slice(None),), ctx.t("parts")[ctx.block])


def rmw_inc(ctx):
    x = ctx.t("x")
    v = x[0] + 1
    yield
    x[0] = v


def notify_one(ctx):
    ctx.notify("sig", (0,), ctx.rank, 1)


def wait_exactly_one(ctx):
    yield ctx.wait("sig", (0,), "eq", 1)


def cohort_barrier(ctx):
    ctx.t("seen")[ctx.block] = 1
    yield ctx.barrier()
    ctx.t("after")[ctx.block] = ctx.t("seen").sum()


def mix_store(ctx):
    ctx.t("after")[0] += 10


def copy_flag(ctx):
    ctx.t("out")[0] = ctx.t("flag")[0]


def set_flag_two(ctx):
    ctx.t("flag")[0] = 2


# --------------------------------------------------------------------------- programs


def handshake(edge: bool) -> Program:
    """docs/runtime-semantics.md §15.6 at one push block: gate -> push, gate -> wait (the fix adds
    push -> wait)."""
    return Program(
        "handshake1",
        (TensorSpec("arrived", (2,), "int32", "signal"), TensorSpec("flag", (1,), "int32", "scratch")),
        ("epoch",),
        (
            TaskSpec("gate", "aiv", 1, gate, early_resolve=True, prev_round_deps=(2,)),
            TaskSpec("push", "aiv", 1, push, deps=(0,)),
            TaskSpec("wait", "aiv", 1, wait_peer, deps=(0, 1) if edge else (0,)),
        ),
    )


PARTS = np.array([1e8, 1.0, -1e8], dtype=np.float32)


def split_k_atomic() -> Program:
    """Three FP32 atomic adds of very different magnitudes into one element."""
    return Program(
        "split_k3",
        (TensorSpec("parts", (3, 1), "float32", "input"), TensorSpec("out", (1,), "float32", "output")),
        (),
        (TaskSpec("linear", "aiv", 3, add_part),),
    )


def split_k_inputs() -> dict[str, np.ndarray]:
    return {"parts": PARTS.reshape(3, 1)}


def rmw_race() -> Program:
    """Two unordered read-modify-write increments with a preemption point between read and write."""
    return Program(
        "rmw",
        (TensorSpec("x", (1,), "int32", "output"),),
        (),
        (TaskSpec("a", "aiv", 1, rmw_inc), TaskSpec("b", "aiv", 1, rmw_inc)),
    )


def eq_overshoot() -> Program:
    """`wait == 1` on a counter two tasks add to: overshot when both notify before it checks."""
    return Program(
        "eq_overshoot",
        (TensorSpec("sig", (1,), "int32", "signal"),),
        (),
        (
            TaskSpec("w", "aiv", 1, wait_exactly_one),
            TaskSpec("n1", "aiv", 1, notify_one),
            TaskSpec("n2", "aiv", 1, notify_one),
        ),
    )


def cohort_and_mix() -> Program:
    """A sync_start cohort with a hard barrier, a MIX task and a zero-block join."""
    return Program(
        "cohort_mix",
        (TensorSpec("seen", (2,), "int32", "scratch"), TensorSpec("after", (2,), "int32", "output")),
        (),
        (
            TaskSpec("pre", "aiv", 1, noop, early_resolve=True),
            TaskSpec("cohort", "aiv", 2, cohort_barrier, deps=(0,), sync_start=True),
            TaskSpec("join", "aiv", 0, noop, deps=(1,)),
            TaskSpec("mix", "mix", 1, mix_store, deps=(2,)),
        ),
    )


def wait_sig(ctx):
    yield ctx.wait("sig", (0,), "ge", 1)


def finish_order() -> Program:
    """Which of two unrelated blocks finishes first decides whether the notifier is parked
    behind the spinner (D1a): A, B run; P1 (a waiter) and P2 sit in their pending slots; Q and
    N wait in the queue and take the pending slot each finish frees, in queue order."""
    return Program(
        "finish_order",
        (TensorSpec("sig", (1,), "int32", "signal"),),
        (),
        (
            TaskSpec("A", "aiv", 1, noop),
            TaskSpec("B", "aiv", 1, noop),
            TaskSpec("P1", "aiv", 1, wait_sig),
            TaskSpec("P2", "aiv", 1, noop),
            TaskSpec("Q", "aiv", 1, noop),
            TaskSpec("N", "aiv", 1, notify_one),
        ),
    )


def predicated() -> Program:
    """A predicate read at dispatch races with an unordered writer of its cell."""
    return Program(
        "predicated",
        (TensorSpec("flag", (1,), "int32", "scratch"), TensorSpec("out", (1,), "int32", "output")),
        (),
        (
            TaskSpec("setter", "aiv", 1, set_flag_two),
            TaskSpec("reader", "aiv", 1, copy_flag, predicate=lambda mem: bool(mem.t("flag")[0] == 0)),
        ),
    )


# --------------------------------------------------------------------------- brute force


def _stuck(eng: Engine, mems, program: Program) -> tuple:
    """The deadlock described as ``runtime.verify.space.Space.stuck_signature`` does."""
    rows = []
    for inst in eng.insts:
        for b in inst.blocks:
            if b.state == DONE:
                continue
            slot = "pending" if any(c.pending is b for c in b.cores) else "running"
            mates = sorted(
                block_label(o)
                for c in b.cores
                for o in (c.running, c.pending)
                if o is not None and o is not b
            )
            rows.append((block_label(b), b.state, b.gated, slot, tuple(mates)))
    memory = tuple(m.arrays[t.name].tobytes() for m in mems for t in program.tensors)
    return (tuple(sorted(rows)), memory)


class _Odometer(Decider):
    """Follows a prefix of choices, then takes option 0, logging every choice point."""

    name = "brute"

    def __init__(self, prefix: Sequence[int]) -> None:
        self.prefix = prefix
        self.taken: list[int] = []
        self.counts: list[int] = []
        self.kinds: list[str] = []

    def decide(self, kind: str, options: Sequence[Any]) -> int:
        pos = len(self.taken)
        i = self.prefix[pos] if pos < len(self.prefix) else 0
        self.taken.append(i)
        self.counts.append(len(options))
        self.kinds.append(kind)
        return i


class TooManySchedules(Exception):
    """The program has more decision sequences than the enumeration's ``limit``."""


@dataclass
class Enumeration:
    """Every schedule of a program: the distinct outputs of complete ones, how many deadlock."""

    schedules: int = 0
    outputs: set[tuple[bytes, ...]] = field(default_factory=set)
    deadlocks: int = 0
    errors: int = 0
    deadlock_example: list[Decision] | None = None
    stuck: set[tuple] = field(default_factory=set)  # Space.stuck_signature of every deadlock


def enumerate_schedules(
    program: Program,
    inputs: dict | list[dict],
    *,
    ranks: int,
    n_aic: int,
    rounds: int = 1,
    limit: int = 20_000,
) -> Enumeration:
    """Run every decision sequence of the untimed engine (:class:`TooManySchedules` if more
    than ``limit``)."""
    out = Enumeration()
    kinds = [t.kind for t in program.tensors]
    prefix: list[int] = []
    while True:
        d = _Odometer(prefix)
        mems = build_memory(program, inputs, ranks)
        eng = Engine(
            program,
            mems,
            n_aic=n_aic,
            n_threads=3,
            policy="random",
            seed=0,
            rounds=rounds,
            scalars={},
            timeout=math.inf,
            early_capacity=64,
            max_block_steps=10_000,
            decider=d,
        )
        out.schedules += 1
        if out.schedules > limit:
            raise TooManySchedules(f"more than {limit} schedules")
        try:
            if eng.run():
                key = tuple(
                    m.arrays[t.name].tobytes()
                    for m in mems
                    for t, k in zip(program.tensors, kinds, strict=True)
                    if k in ("output", "inout")
                )
                out.outputs.add(key)
            else:
                out.deadlocks += 1
                out.stuck.add(_stuck(eng, mems, program))
                if out.deadlock_example is None:
                    out.deadlock_example = [
                        Decision(k, i, n) for k, i, n in zip(d.kinds, d.taken, d.counts, strict=True)
                    ]
        except SimulatorError:
            out.errors += 1
        j = len(d.taken) - 1
        while j >= 0 and d.taken[j] + 1 >= d.counts[j]:
            j -= 1
        if j < 0:
            return out
        prefix = d.taken[:j] + [d.taken[j] + 1]
