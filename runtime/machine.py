"""Mutable state of the simulated device: cores with two slots, task instances, blocks.

These are plain ``__slots__`` records manipulated by ``runtime.scheduler.Engine``; they hold
no logic beyond naming themselves, so the dispatch rules live in one place.

Core numbering follows docs/runtime-semantics.md §1: cluster ``ci`` is
``{AIC ci, AIV 2ci, AIV 2ci+1}``, and clusters are owned round-robin by scheduler threads
(``ci % n_threads``).  Names are per kind (``AIC3``, ``AIV7``) because that is how a swimlane
shows them.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from runtime.memory import BlockContext, RankMemory, Wait
    from runtime.program import TaskSpec

# Block states.
PLACED = 0  # holds one or more slots, not started (parked in pending, gated, or MIX gathering its cores)
RUN = 1  # computing: a step event is scheduled at start + cost
SPIN = 2  # spinning on a signal cell, holding its core
BARRIER = 3  # arrived at a hard barrier, holding its core
WAKE = 4  # a step event is scheduled at the current time (plain yield or woken spinner)
DONE = 5

STATE_NAMES = {
    PLACED: "placed",
    RUN: "running",
    SPIN: "spinning",
    BARRIER: "barrier",
    WAKE: "runnable",
    DONE: "done",
}

SHAPE_LABEL = {"aic": "AIC", "aiv": "AIV", "mix": "MIX"}


class Core:
    """One AIC or AIV core of one rank: a running slot and a pending slot."""

    __slots__ = ("rank", "kind", "index", "cluster", "thread", "name", "running", "pending", "tid")

    def __init__(self, rank: int, kind: str, index: int, cluster: int, thread: int, tid: int) -> None:
        self.rank = rank
        self.kind = kind
        self.index = index
        self.cluster = cluster
        self.thread = thread
        self.name = f"{SHAPE_LABEL[kind]}{index}"
        self.running: Block | None = None
        self.pending: Block | None = None
        self.tid = tid  # trace thread id of the running slot; tid + 1 is the pending slot

    def __repr__(self) -> str:
        return f"<Core r{self.rank} {self.name}>"


#: The fields of a :class:`TaskInst` the engine changes as a run goes (its scheduling state),
#: but ``complete_at``, which only reports and traces read: what a snapshot of an instance holds
#: (``runtime.verify.snapshots`` for the explorer, ``runtime.mpi.snapshot`` with ``complete_at``).
INST_STATE = (
    "n_incomplete",
    "n_unresolved",
    "resolved",
    "complete",
    "ready",
    "early",
    "queued",
    "pred_done",
    "retired",
    "next_block",
    "finished",
    "barrier_gen",
)


class TaskInst:
    """One task of one round on one rank: its fan-in counters, queue membership and blocks."""

    __slots__ = (
        "spec",
        "si",
        "rank",
        "round",
        "nblocks",
        "shape",
        "producers",
        "consumers",
        *INST_STATE,
        "blocks",
        "mem",
        "complete_at",
        "barrier_wait",
    )

    def __init__(self, spec: TaskSpec, si: int, rank: int, round_: int, mem: RankMemory) -> None:
        self.spec = spec
        self.si = si
        self.rank = rank
        self.round = round_
        self.nblocks = int(spec.blocks)
        self.shape = spec.shape
        self.producers: list[TaskInst] = []
        self.consumers: list[TaskInst] = []
        self.n_incomplete = 0  # producers not complete
        self.n_unresolved = 0  # producers neither complete nor (flagged and fully published)
        self.resolved = False  # counted as resolved by our consumers
        self.complete = False
        self.ready = False  # all producers complete
        self.early = False  # sits in an early-dispatch queue
        self.queued = False  # sits in a normal or sync ready queue
        self.pred_done = False
        self.retired = False  # predicate was false: retired without a core
        self.next_block = 0  # next block index to place (== published block count)
        self.finished = 0
        self.blocks: list[Block] = []
        self.mem = mem
        self.complete_at: float | None = None
        self.barrier_wait: list[Block] = []
        self.barrier_gen = 0

    @property
    def label(self) -> str:
        return f"{self.spec.name} (rank {self.rank}, round {self.round + 1})"

    def __repr__(self) -> str:
        return f"<TaskInst {self.spec.name} r{self.rank} round{self.round}>"


class Block:
    """One block of an SPMD grid once it has been placed in a slot."""

    __slots__ = (
        "inst",
        "index",
        "cores",
        "slot0",
        "promoted",
        "nrun",
        "gated",
        "staged_gated",
        "state",
        "gen",
        "ctx",
        "placed_at",
        "doorbell",
        "start",
        "end",
        "wait",
        "spin_start",
        "spins",
        "barriers",
        "barrier_start",
        "steps",
    )

    def __init__(self, inst: TaskInst, index: int, cores: tuple[Core, ...], now: float, gated: bool) -> None:
        self.inst = inst
        self.index = index
        self.cores = cores
        self.slot0: list[str] = []  # per core: slot taken at placement ("running" | "pending")
        self.promoted: list[float | None] = []  # per core: when it moved from pending to running
        self.nrun = 0  # number of cores on which it holds the running slot
        self.gated = gated  # still awaiting the doorbell
        self.staged_gated = gated
        self.state = PLACED
        self.gen: Any = None
        self.ctx: BlockContext | None = None
        self.placed_at = now
        self.doorbell: float | None = None
        self.start: float | None = None
        self.end: float | None = None
        self.wait: Wait | None = None
        self.spin_start = 0.0
        self.spins: list[tuple[float, float, str]] = []
        self.barriers: list[tuple[float, float, int]] = []
        self.barrier_start = 0.0
        self.steps = 0

    @property
    def name(self) -> str:
        return f"{self.inst.spec.name}[{self.index}]"

    def __repr__(self) -> str:
        return f"<Block {self.name} r{self.inst.rank} round{self.inst.round} {STATE_NAMES[self.state]}>"


class RankState:
    """Cores, ready queues and early-dispatch queues of one rank."""

    __slots__ = (
        "rank",
        "cores",
        "by_kind",
        "clusters",
        "idle",
        "pfree",
        "normal",
        "sync",
        "early",
        "early_sync",
        "early_occ",
        "dirty",
        "n_threads",
    )

    def __init__(self, rank: int, n_aic: int, n_threads: int) -> None:
        self.rank = rank
        self.n_threads = n_threads
        aic = [Core(rank, "aic", i, i, i % n_threads, 2 * i) for i in range(n_aic)]
        aiv = [Core(rank, "aiv", j, j // 2, (j // 2) % n_threads, 2 * (n_aic + j)) for j in range(2 * n_aic)]
        self.cores = aic + aiv
        self.by_kind = {"aic": aic, "aiv": aiv}
        self.clusters = [(aic[i], aiv[2 * i], aiv[2 * i + 1]) for i in range(n_aic)]
        # Indices (within their kind) of idle cores, and of busy cores whose pending slot is free.
        self.idle: dict[str, set[int]] = {"aic": set(range(n_aic)), "aiv": set(range(2 * n_aic))}
        self.pfree: dict[str, set[int]] = {"aic": set(), "aiv": set()}
        self.normal: dict[str, deque[TaskInst]] = {s: deque() for s in ("mix", "aic", "aiv")}
        self.sync: dict[str, deque[TaskInst]] = {s: deque() for s in ("mix", "aic", "aiv")}
        self.early: dict[str, deque[TaskInst]] = {s: deque() for s in ("mix", "aic", "aiv")}
        self.early_sync: deque[TaskInst] = deque()
        self.early_occ = {"mix": 0, "aic": 0, "aiv": 0}  # unstaged candidate blocks per early queue
        self.dirty = True

    def refresh(self, core: Core) -> None:
        """Re-file ``core`` in the idle / pending-free sets after one of its slots changed."""
        i = core.index
        if core.running is None:
            self.idle[core.kind].add(i)
            self.pfree[core.kind].discard(i)
        else:
            self.idle[core.kind].discard(i)
            if core.pending is None:
                self.pfree[core.kind].add(i)
            else:
                self.pfree[core.kind].discard(i)
