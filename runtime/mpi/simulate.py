"""``simulate_mpi``: :func:`runtime.simulator.simulate` with the ranks spread over MPI processes.

Called on every process of an MPI job (``mpiexec -n P ...``) with the same arguments; process
0 alone passes the inputs of every rank, which it sends to the processes hosting them.  Each
process then simulates its block of ranks (``runtime.mpi.layout``) with its own engine and
seeded policy, and the run ends on every process with the same outcome: the result, or the
same :class:`DeadlockError` (one report merged on process 0, naming the cycle across ranks),
or the same error raised on the process where it happened.  Process 0 merges the schedule,
the counters, the trace (one process track per rank) and, with ``outputs="gather"``, every
rank's outputs.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runtime import sim_errors
from runtime.deadlock import build_report
from runtime.device import EARLY_QUEUE_CAPACITY
from runtime.memory import RankMemory, build_memory
from runtime.mpi import load_mpi
from runtime.mpi.collective import everywhere, on_root, patient_barrier, receive_patiently
from runtime.mpi.context import RemoteRank
from runtime.mpi.control import DEADLOCK, DONE, STOPPED, Control, Stopped
from runtime.mpi.engine import MpiEngine
from runtime.mpi.layout import RankLayout
from runtime.mpi.snapshot import MergedRun, capture
from runtime.mpi.windows import Windows
from runtime.program import OUTPUT_KINDS, Program
from runtime.sim_errors import DeadlockError, SimulatorError
from runtime.simulator import RunResult, block_records, check_run_arguments
from runtime.trace import build_trace, write_trace

OUTPUT_MODES = ("gather", "local", "none")

#: Policy seed of a process: the run's seed moved by the first rank it hosts, so one process
#: hosting every rank draws exactly the in-process sequence.
_SEED_STRIDE = 1_000_003


@dataclass
class MpiRunResult(RunResult):
    """:class:`RunResult` of an MPI run, on one process.

    ``blocks_run``, ``makespan``, ``waits``, ``steps`` and ``deadlock`` are global (the same on
    every process).  On process 0 ``schedule`` covers every rank and, with
    ``outputs="gather"``, so does ``outputs``; elsewhere both cover the hosted ranks (the
    entries of other ranks are empty).  ``memory`` holds the hosted ranks' tensors but their
    windows and signals (MPI memory, freed with the run; windows are in ``outputs``).
    ``digests`` maps, per rank, every output/inout tensor that is not a window to the SHA-256
    of its bytes (every rank on process 0).  ``comm`` has, per process, what it issued
    (``put``, ``get``, ``atomic``, ``notify``, ``read``: [operations, bytes, seconds]),
    ``passive_seconds``, its wall time with nothing runnable, and [wall, CPU] seconds of its
    ``setup`` (inputs received, memory and windows allocated) and of its ``run`` (the
    simulation, to the end of the termination protocol), and the ``time.monotonic()`` of its
    ``last_work`` and of its ``verdict_at`` (on one host, the clock is the same in every
    process: the latest verdict minus the latest work is the protocol's latency).
    """

    procs: int = 1
    process: int = 0
    hosted: tuple[int, ...] = ()
    digests: list[dict[str, str]] = field(default_factory=list)
    comm: list[dict[str, Any]] = field(default_factory=list)


def simulate_mpi(
    program: Program,
    inputs: dict[str, np.ndarray] | list[dict[str, np.ndarray]] | None = None,
    *,
    ranks: int = 1,
    comm: Any = None,
    cores: tuple[int, int] | str = "sim",
    policy: str = "fifo",
    seed: int = 0,
    rounds: int = 1,
    scalars: dict[str, Any] | None = None,
    timeout: float = 60.0,
    trace: str | Path | None = None,
    raise_on_deadlock: bool = True,
    early_capacity: int = EARLY_QUEUE_CAPACITY,
    sched_threads: int | None = None,
    max_block_steps: int = 1_000_000,
    outputs: str = "gather",
    schedule: bool = True,
    stop_grace: float | None = None,
    round_scalars: tuple[str, ...] = ("epoch",),
) -> MpiRunResult:
    """Run ``program`` on ``ranks`` ranks spread over the processes of ``comm`` (default: world).

    Arguments are those of :func:`runtime.simulator.simulate` (but ``record`` and ``replay``:
    a schedule is one interleaving of every rank's steps, and across processes that
    interleaving is real time), the same on every process; ``inputs`` (one dict for every
    rank, or one per rank, or a function returning them) is read on process 0 only.
    ``outputs``: ``"gather"`` every rank's outputs to process 0,
    ``"local"`` keep each process's own, ``"none"`` keep none (windows are never read, so
    their untouched pages stay unallocated).  ``schedule=False`` skips merging the schedule
    (every block's record, shipped to process 0) when neither a trace nor a deadlock report
    needs it.  ``stop_grace``: seconds after a stop before process 0 aborts the job because
    a process does not respond (default ``min(30, max(5, timeout / 4))``).

    Raises what :func:`simulate` raises, on every process: :class:`DeadlockError` (the report
    merged on process 0 and sent to all), :class:`KernelError`, :class:`SimulationTimeout`...
    with the diagnostic of the process where it happened.
    """
    MPI = load_mpi()
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
    if outputs not in OUTPUT_MODES:
        raise ValueError(f"outputs must be one of {OUTPUT_MODES}, got {outputs!r}")
    comm = (comm if comm is not None else MPI.COMM_WORLD).Dup()
    layout = RankLayout(ranks, comm.Get_size())
    me = comm.Get_rank()
    hosted = layout.ranks_of(me)
    started = time.perf_counter(), time.process_time()
    mems, windows = _memory(MPI, comm, program, layout, inputs)
    grace = stop_grace if stop_grace is not None else min(30.0, max(5.0, timeout / 4))
    control = Control(MPI, comm, grace)
    kinds = {t.name: t.kind for t in program.tensors}
    all_mems: list[Any] = [
        mems[r - hosted.start] if r in hosted else RemoteRank(r, ranks, windows, kinds) for r in range(ranks)
    ]
    eng = MpiEngine(
        program,
        all_mems,
        windows=windows,
        control=control,
        n_aic=n_aic,
        n_threads=threads,
        policy=policy,
        seed=seed + _SEED_STRIDE * hosted.start,
        rounds=rounds,
        scalars=scalars,
        timeout=timeout,
        early_capacity=early_capacity,
        max_block_steps=max_block_steps,
        hosted=hosted,
        round_scalars=tuple(round_scalars),
    )
    ran = time.perf_counter(), time.process_time()
    try:
        verdict = eng.run()
    except Stopped:
        verdict = control.finish()
    except SimulatorError as err:
        control.stop(type(err).__name__, str(err))
        verdict = control.finish()
    except Exception as err:  # a bug of ours, reported like a simulator error on every process
        control.stop(
            "SimulatorError",
            f"internal error on MPI process {me} ({layout.describe(me)}): {type(err).__name__}: {err}",
        )
        verdict = control.finish()
    phases = {"setup": _since(started, ran), "run": _since(ran, (time.perf_counter(), time.process_time()))}
    run = _Run(program, layout, n_aic, threads, policy, seed, outputs, trace, schedule)
    ending = _conclude(comm, eng, control, verdict, mems, run, phases)
    windows.free()
    control.free()
    comm.Free()
    return _deliver(ending, eng, mems, run, raise_on_deadlock)


def _memory(
    MPI: Any, comm: Any, program: Program, layout: RankLayout, inputs: Any
) -> tuple[list[RankMemory], Windows]:
    """The hosted ranks' memory, their windows and signals in MPI windows (collective)."""
    hosted = layout.ranks_of(comm.Get_rank())
    local = _scatter_inputs(comm, layout, inputs)
    mems = everywhere(comm, lambda: build_memory(program, local, len(hosted)))
    windows = Windows(MPI, comm, program, layout)
    for mem, given, r in zip(mems, local, hosted, strict=True):
        mem.rank, mem.nranks = r, layout.nranks
        for name, per_rank in windows.arrays.items():
            if name in given:  # windows start zeroed: never touch the pages of the others
                per_rank[r][...] = mem.arrays[name]
            mem.arrays[name] = per_rank[r]
    windows.publish_initial()
    return mems, windows


def _scatter_inputs(comm: Any, layout: RankLayout, inputs: Any) -> list[dict[str, np.ndarray]]:
    """Process 0 sends every process the inputs of the ranks it hosts, one process at a time.

    Inputs given as a callable are the caller's to drop: process 0 then keeps private copies
    of the views among its own ranks' inputs, so that the arrays they view (every rank's
    weights, when a fixture stacks them) are freed once sent.
    """

    def split() -> list[dict[str, np.ndarray]]:
        given = inputs() if callable(inputs) else inputs
        given = given if given is not None else {}
        per_rank = [given] * layout.nranks if isinstance(given, dict) else list(given)
        if len(per_rank) != layout.nranks:
            raise ValueError(f"got inputs for {len(per_rank)} ranks, expected {layout.nranks}")
        return per_rank

    per_rank = on_root(comm, split)
    if comm.Get_rank() != 0:
        return receive_patiently(comm, source=0, tag=1)
    for proc in range(1, layout.nprocs):
        comm.send([per_rank[r] for r in layout.ranks_of(proc)], dest=proc, tag=1)
    own = [per_rank[r] for r in layout.ranks_of(0)]
    if callable(inputs) and layout.nprocs > 1:
        own = [{k: _unshared(v) for k, v in d.items()} for d in own]
    return own


def _unshared(value: Any) -> Any:
    """``value``, copied if it is a view of a larger array (which the copy lets go)."""
    if (
        isinstance(value, np.ndarray)
        and isinstance(value.base, np.ndarray)
        and value.base.nbytes > value.nbytes
    ):
        return np.array(value)
    return value


def _local_outputs(
    program: Program, mems: list[RankMemory], mode: str
) -> tuple[dict[int, dict[str, np.ndarray]], dict[int, dict[str, str]]]:
    """The hosted ranks' outputs (windows copied out of the MPI memory freed with the run)
    and the digests of their output and inout tensors."""
    kinds = {t.name: t.kind for t in program.tensors}
    outs, digests = {}, {}
    for m in mems:
        digests[m.rank] = {
            k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
            for k, v in m.arrays.items()
            if kinds[k] in ("output", "inout")
        }
        if mode != "none":
            outs[m.rank] = {
                k: np.array(v) if kinds[k] == "window" else v
                for k, v in m.arrays.items()
                if kinds[k] in OUTPUT_KINDS
            }
    return outs, digests


@dataclass(frozen=True)
class _Run:
    """What the end of a run needs to know about it (the same on every process)."""

    program: Program
    layout: RankLayout
    n_aic: int
    threads: int
    policy: str
    seed: int
    outputs: str
    trace: str | Path | None
    schedule: bool


def _since(start: tuple[float, float], end: tuple[float, float]) -> list[float]:
    """[wall, CPU] seconds between two (perf_counter, process_time) readings."""
    return [end[0] - start[0], end[1] - start[1]]


def _conclude(
    comm: Any, eng: MpiEngine, control: Control, verdict: int, mems: list[RankMemory], run: _Run, phases: dict
) -> dict:
    """Gather on process 0, merge, and tell every process how the run ended (collective)."""
    root = comm.Get_rank() == 0
    keep = verdict in (DONE, DEADLOCK)
    outs, digests = _local_outputs(run.program, mems, run.outputs) if keep else ({}, {})
    full = verdict == DEADLOCK or run.trace is not None or (keep and run.schedule)
    snaps = comm.gather(capture(eng) if full else None, root=0)
    gathered = comm.gather((outs if run.outputs == "gather" else {}, digests), root=0)
    stats = {k: list(v) for k, v in eng.windows.stats.items()}
    stats["passive_seconds"] = eng.passive_seconds
    stats.update(phases, last_work=control.last_work, verdict_at=control.verdict_at)
    counts = comm.gather((eng.blocks_run, eng.makespan, eng.waits, eng.steps), root=0)
    ending: dict[str, Any] = {"verdict": verdict, "comm": comm.gather(stats, root=0)}
    merged = None
    if root:
        ending.update(
            blocks_run=sum(c[0] for c in counts),
            makespan=max(c[1] for c in counts),
            waits=sum(c[2] for c in counts),
            steps=sum(c[3] for c in counts),
        )
        if full:
            merged = MergedRun(
                run.program,
                snaps,
                n_aic=run.n_aic,
                n_threads=run.threads,
                nranks=run.layout.nranks,
                rounds=eng.rounds,
                policy=run.policy,
                seed=run.seed,
            )
        if verdict == DEADLOCK:
            ending["report"] = build_report(merged)
        if verdict == STOPPED:
            ending["error"] = _stop_diagnostic(control)
        if run.trace is not None:
            doc = build_trace(merged)
            doc["otherData"].update(launcher="mpi", procs=run.layout.nprocs)
            ending["trace_path"] = write_trace(run.trace, doc)
    patient_barrier(comm)  # process 0 may take a while to merge
    ending = comm.bcast(ending, root=0)
    ending["outputs"], ending["digests"], ending["schedule"] = outs, digests, []
    if root:
        if merged is not None and run.schedule:
            ending["schedule"] = block_records(merged)
        if run.outputs == "gather":
            ending["outputs"] = {r: o for part, _ in gathered for r, o in part.items()}
        ending["digests"] = {r: d for _, part in gathered for r, d in part.items()}
    return ending


def _stop_diagnostic(control: Control) -> tuple[str, str]:
    first = control.first_stopper()
    diag = control.diagnostic(first) if first is not None else None
    if diag is None:
        return "SimulatorError", "the MPI run was stopped without a diagnostic"
    return diag


def _deliver(
    ending: dict[str, Any], eng: MpiEngine, mems: list[RankMemory], run: _Run, raise_on_deadlock: bool
) -> MpiRunResult:
    """Raise the run's error, or build this process's result."""
    verdict = ending["verdict"]
    if verdict == STOPPED:
        kind, message = ending["error"]
        cls = getattr(sim_errors, kind, SimulatorError)
        if not (isinstance(cls, type) and issubclass(cls, SimulatorError)):
            cls = SimulatorError
        raise cls(message)
    deadlock = DeadlockError(ending["report"]) if verdict == DEADLOCK else None
    if deadlock is not None and raise_on_deadlock:
        raise deadlock
    nranks = run.layout.nranks
    kinds = {t.name: t.kind for t in run.program.tensors}
    own = {m.rank: m for m in mems}
    outs, digests = ending["outputs"], ending["digests"]
    memory = [
        {k: v for k, v in own[r].arrays.items() if kinds[k] not in ("window", "signal")} if r in own else {}
        for r in range(nranks)
    ]
    schedule = ending["schedule"] if eng.process == 0 else block_records(eng) if run.schedule else []
    return MpiRunResult(
        outputs=[outs.get(r, {}) for r in range(nranks)],
        memory=memory,
        blocks_run=ending["blocks_run"],
        makespan=ending["makespan"],
        waits=ending["waits"],
        deadlock=deadlock,
        rounds=eng.rounds,
        schedule=schedule,
        trace_path=ending.get("trace_path"),
        steps=ending["steps"],
        procs=run.layout.nprocs,
        process=eng.process,
        hosted=eng.hosted,
        digests=[digests.get(r, {}) for r in range(nranks)],
        comm=ending["comm"],
    )
