"""Entry point of the NPU task-runtime simulator: ``simulate(program, inputs, ...)``.

The simulator reproduces the scheduler of the Ascend task runtime
(docs/runtime-semantics.md §2-§9), not an idealised one: per core a running and a pending slot,
MIX/AIC/AIV ready queues, early dispatch of consumers of ``early_resolve`` producers holding
their slots until the doorbell, SPMD waves, all-or-nothing ``sync_start`` cohorts, hard
barriers, several ranks with symmetric windows and int32 signal cells, atomics applied in
completion order, and a seeded scheduling policy.  A run that cannot make progress raises a
:class:`DeadlockError` naming the cycle.

Module map: ``program`` (the format), ``memory`` (arrays and the kernel ``ctx``), ``machine``
(cores/blocks/task records), ``scheduler`` (the event loop and block execution), ``lifecycle``
(task readiness and completion), ``dispatch`` (placement on cores and slots), ``policies``,
``deadlock`` (reports), ``trace`` (Chrome trace).  See ``docs/simulator.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runtime.blas import single_threaded_blas
from runtime.deadlock import build_report
from runtime.decisions import Decision, ScheduleMismatch, ScriptedDecider
from runtime.device import DEFAULT_SCHED_THREADS, EARLY_QUEUE_CAPACITY
from runtime.device import PRESETS as DEVICES
from runtime.memory import build_memory
from runtime.policies import POLICIES
from runtime.program import OUTPUT_KINDS, Program
from runtime.scheduler import Engine
from runtime.sim_errors import (
    CohortTooLargeError,
    DeadlockError,
    KernelError,
    SimulationTimeout,
    SimulatorError,
    StepLimitExceeded,
)
from runtime.trace import build_trace, write_trace

__all__ = [
    "PRESETS",
    "BlockRecord",
    "CohortTooLargeError",
    "DeadlockError",
    "KernelError",
    "RunResult",
    "SimulationTimeout",
    "SimulatorError",
    "StepLimitExceeded",
    "simulate",
]

#: name -> (AIC cores, AIV cores, scheduler threads) per rank, from ``runtime.device``.
PRESETS: dict[str, tuple[int, int, int]] = {n: (d.aic, d.aiv, d.sched_threads) for n, d in DEVICES.items()}


@dataclass(frozen=True)
class BlockRecord:
    """When and where one block ran (``RunResult.schedule``); times in abstract units."""

    task: str
    block: int
    rank: int
    round: int
    cores: tuple[str, ...]
    slot: str  # slot taken when placed on its first core: "running" | "pending"
    placed_at: int
    promoted_at: int | None  # when it moved from the pending to the running slot
    start: int | None  # when its compute began (None if it never started)
    end: int | None  # when it finished (None if it never finished)
    gated: bool  # staged early, before its producers completed
    doorbell: int | None  # when its last producer completed, for gated blocks


@dataclass
class RunResult:
    """Outcome of :func:`simulate`."""

    outputs: list[dict[str, np.ndarray]]  # per rank: output, inout and window tensors
    memory: list[dict[str, np.ndarray]]  # per rank: every tensor, signals and scratch included
    blocks_run: int
    makespan: int
    waits: int  # waits that had to spin (not satisfied when first reached)
    deadlock: DeadlockError | None
    rounds: int
    schedule: list[BlockRecord] = field(default_factory=list)
    trace_path: Path | None = None
    steps: int = 0  # kernel resumptions
    decisions: list[Decision] | None = None  # the choices made, when recorded or replayed


def _resolve_cores(cores: tuple[int, int] | str, sched_threads: int | None) -> tuple[int, int]:
    if isinstance(cores, str):
        if cores not in PRESETS:
            raise ValueError(
                f"unknown core preset {cores!r}; expected one of {sorted(PRESETS)} or (n_aic, n_aiv)"
            )
        n_aic, n_aiv, threads = PRESETS[cores]
    else:
        n_aic, n_aiv = (int(x) for x in cores)
        threads = DEFAULT_SCHED_THREADS
    if n_aic < 1 or n_aiv != 2 * n_aic:
        raise ValueError(
            f"cores=({n_aic}, {n_aiv}): clusters are 1 AIC + 2 AIV, so n_aiv must be 2 * n_aic >= 2"
        )
    if sched_threads is not None:
        if sched_threads < 1:
            raise ValueError("sched_threads must be >= 1")
        threads = sched_threads
    return n_aic, threads


def check_cohorts(program: Program, n_aic: int) -> None:
    """Refuse a ``sync_start`` grid larger than the cores of its shape (before anything runs)."""
    caps = {"aic": (n_aic, "AIC cores"), "aiv": (2 * n_aic, "AIV cores"), "mix": (n_aic, "clusters")}
    for t in program.tasks:
        cap, unit = caps[t.shape]
        if t.sync_start and t.blocks > cap:
            raise CohortTooLargeError(t.name, int(t.blocks), cap, unit)


def check_scalars(
    program: Program, scalars: dict[str, Any], round_scalars: tuple[str, ...] = ("epoch",)
) -> None:
    """Every runtime scalar given, none unknown, and none of the ones the rounds set."""
    unknown = set(scalars) - set(program.scalars)
    if unknown:
        raise ValueError(f"scalars {sorted(unknown)} are not declared by program {program.name!r}")
    for name in round_scalars:
        if name in scalars:
            raise ValueError(f"{name!r} is set by the simulator to round + 1; do not pass it")
    missing = [s for s in program.scalars if s not in round_scalars and s not in scalars]
    if missing:
        raise ValueError(f"program {program.name!r} needs runtime scalars {missing}")


def block_records(eng: Engine) -> list[BlockRecord]:
    """One record per placed block of ``eng`` (``RunResult.schedule``)."""
    out = []
    for inst in eng.insts:
        for b in inst.blocks:
            out.append(
                BlockRecord(
                    inst.spec.name,
                    b.index,
                    inst.rank,
                    inst.round,
                    tuple(c.name for c in b.cores),
                    b.slot0[0],
                    b.placed_at,
                    b.promoted[0],
                    b.start,
                    b.end,
                    b.staged_gated,
                    b.doorbell,
                )
            )
    return out


def check_run_arguments(
    program: Program,
    *,
    ranks: int,
    rounds: int,
    cores: tuple[int, int] | str,
    sched_threads: int | None,
    policy: str,
    scalars: dict[str, Any] | None,
    round_scalars: tuple[str, ...],
) -> tuple[int, int, dict[str, Any]]:
    """The checks of :func:`simulate`'s (and ``simulate_mpi``'s) arguments, before anything is
    allocated: ``(AIC cores per rank, scheduler threads, a copy of scalars)``."""
    program.validate()
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    if ranks < 1 or rounds < 1:
        raise ValueError("ranks and rounds must be >= 1")
    n_aic, threads = _resolve_cores(cores, sched_threads)
    check_cohorts(program, n_aic)
    scalars = dict(scalars or {})
    check_scalars(program, scalars, round_scalars)
    return n_aic, threads, scalars


def _progress(rounds: int, enabled: bool) -> tuple[Any, Callable[[int], None] | None]:
    if not enabled or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(file=sys.stderr), transient=True)
    task = bar.add_task("simulating rounds", total=rounds)
    bar.start()
    return bar, lambda _r: bar.advance(task)


def simulate(
    program: Program,
    inputs: dict[str, np.ndarray] | list[dict[str, np.ndarray]] | None = None,
    *,
    ranks: int = 1,
    cores: tuple[int, int] | str = "sim",
    policy: str = "fifo",
    seed: int = 0,
    rounds: int = 1,
    scalars: dict[str, Any] | None = None,
    timeout: float = 60.0,
    trace: str | Path | None = None,
    progress: bool = False,
    raise_on_deadlock: bool = True,
    early_capacity: int = EARLY_QUEUE_CAPACITY,
    sched_threads: int | None = None,
    max_block_steps: int = 1_000_000,
    record: bool = False,
    replay: list[Decision] | None = None,
    round_scalars: tuple[str, ...] = ("epoch",),
) -> RunResult:
    """Run ``program`` on ``ranks`` simulated devices for ``rounds`` back-to-back rounds.

    ``inputs`` is one dict of arrays for every rank or a list with one dict per rank; tensors of
    kind output/scratch/window/signal default to zeros.  ``cores`` is ``(n_aic, n_aiv)`` or a
    preset ("sim" 8/16, "a2a3" 24/48, "a5" 36/72).  ``policy`` is "fifo", "random" or
    "adversarial", seeded by ``seed``.  Memory persists across rounds; ``epoch`` (and every other
    scalar named in ``round_scalars``) is round + 1.

    Raises :class:`DeadlockError` when no block can progress (or returns it in
    ``RunResult.deadlock`` with ``raise_on_deadlock=False``), :class:`CohortTooLargeError` for a
    sync_start grid larger than the device, :class:`SimulationTimeout` after ``timeout`` seconds
    of wall clock or ``max_block_steps`` resumptions of one block, and :class:`KernelError` when
    a kernel raises.  ``trace`` writes a Chrome-trace JSON (also for a deadlocked run).

    ``record=True`` returns the run's choices in ``RunResult.decisions``; ``replay=decisions``
    runs untimed, answering every choice point from that list (``policy`` is then unused and
    time is logical: one unit per block step).  A recorded run replays to the same memory, the
    same placements and the same deadlock; a list that does not fit the run raises
    :class:`runtime.decisions.ScheduleMismatch` (a ValueError).
    """
    n_aic, threads, scalars = check_run_arguments(
        program,
        ranks=ranks,
        rounds=rounds,
        cores=cores,
        sched_threads=sched_threads,
        policy=policy,
        scalars=scalars,
        round_scalars=round_scalars,
    )
    mems = build_memory(program, inputs if inputs is not None else {}, ranks)
    bar, on_round = _progress(rounds, progress)
    eng = Engine(
        program,
        mems,
        n_aic=n_aic,
        n_threads=threads,
        policy=policy,
        seed=seed,
        rounds=rounds,
        scalars=scalars,
        timeout=timeout,
        early_capacity=early_capacity,
        max_block_steps=max_block_steps,
        on_round_done=on_round,
        decider=ScriptedDecider(replay) if replay is not None else None,
        record=record,
        round_scalars=tuple(round_scalars),
    )
    trace_path = None
    try:
        with single_threaded_blas():
            finished = eng.run()
    except SimulatorError:
        if trace is not None:
            write_trace(trace, build_trace(eng))
        raise
    finally:
        if bar is not None:
            bar.stop()
    if replay is not None and not eng.policy.exhausted:
        left = len(replay) - eng.policy.pos
        raise ScheduleMismatch(f"the run ended with {left} decision(s) of the schedule left over")
    deadlock = None if finished else DeadlockError(build_report(eng))
    decisions = eng.recorder.decisions if eng.recorder is not None else replay
    if deadlock is not None:
        deadlock.decisions = decisions
    if trace is not None:
        trace_path = write_trace(trace, build_trace(eng))
    if deadlock is not None and raise_on_deadlock:
        raise deadlock
    kinds = {t.name: t.kind for t in program.tensors}
    return RunResult(
        outputs=[{k: v for k, v in m.arrays.items() if kinds[k] in OUTPUT_KINDS} for m in mems],
        memory=[dict(m.arrays) for m in mems],
        blocks_run=eng.blocks_run,
        makespan=eng.makespan,
        waits=eng.waits,
        deadlock=deadlock,
        rounds=rounds,
        schedule=block_records(eng),
        trace_path=trace_path,
        steps=eng.steps,
        decisions=decisions,
    )
