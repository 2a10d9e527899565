"""Task instances and their life cycle (docs/runtime-semantics.md §5, §6).

:class:`TaskLifecycle` owns the task instances of every round and hosted rank, wired to their
producers, and moves each through its states: waiting on producers, early candidate (every
direct producer complete or flagged ``early_resolve`` and fully published; no predicate; room
in the shape's early queue), ready (in its rank's normal or sync ready queue), complete.  It
fills the ready and early queues of :class:`runtime.machine.RankState`; the
:class:`runtime.dispatch.Dispatcher` empties them.  Time and block execution are the engine's
(:class:`runtime.scheduler.Engine`): the clock comes in as ``now``, and a staged block whose
doorbell rings is started through the ``start`` callback.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from runtime.machine import PLACED, Block, RankState, TaskInst
from runtime.memory import RankMemory
from runtime.program import Program
from runtime.sim_errors import KernelError

#: ``policy.order_release``: the order in which released consumers enter their queues.
OrderRelease = Callable[[list[TaskInst], Callable[[TaskInst], int]], list[TaskInst]]


class TaskLifecycle:
    """The task instances of one run and their dependency counting, readiness and completion."""

    def __init__(
        self,
        program: Program,
        mems: list[RankMemory],
        ranks: list[RankState],
        hosted: Sequence[int],
        *,
        rounds: int,
        scalars: dict[str, Any],
        round_scalars: tuple[str, ...],
        early_capacity: int,
        order_release: OrderRelease | None,
        start: Callable[[Block], None],
        on_round_done: Callable[[int], None] | None = None,
    ) -> None:
        self.ranks = ranks
        self.early_capacity = early_capacity
        #: None under fifo: consumers are released in their declaration order.
        self.order_release = order_release
        self.start = start
        self.on_round_done = on_round_done
        self.completions: deque[TaskInst] = deque()  # complete, not yet processed by settle
        self.insts: list[TaskInst] = []
        self.n_complete = 0
        self.round_left = [len(hosted) * len(program.tasks)] * rounds
        self._build(program, mems, hosted, rounds, scalars, round_scalars)

    def _build(
        self,
        program: Program,
        mems: list[RankMemory],
        hosted: Sequence[int],
        rounds: int,
        scalars: dict[str, Any],
        round_scalars: tuple[str, ...],
    ) -> None:
        specs = program.tasks
        prev: dict[int, list[TaskInst]] = {}
        for rnd in range(rounds):
            sc = dict(scalars)
            for name in round_scalars:  # epoch-like scalars count the rounds from 1
                if name in program.scalars:
                    sc[name] = rnd + 1
            cur = {}
            for r in hosted:
                mem = mems[r].for_round(sc)
                row: list[TaskInst] = []
                for si, spec in enumerate(specs):
                    inst = TaskInst(spec, si, r, rnd, mem)
                    prods = [row[d] for d in spec.deps]
                    if rnd > 0:
                        prods += [prev[r][d] for d in spec.prev_round_deps]
                    inst.producers = prods
                    for p in prods:
                        p.consumers.append(inst)
                    inst.n_incomplete = inst.n_unresolved = len(prods)
                    row.append(inst)
                    self.insts.append(inst)
                cur[r] = row
            prev = cur

    def all_complete(self) -> bool:
        return self.n_complete == len(self.insts)

    def release_roots(self, now: int) -> None:
        """Make every task without producers ready (the submission of every round)."""
        for inst in self.insts:
            if inst.n_incomplete == 0:
                self.make_ready(inst, now)

    def complete(self, inst: TaskInst, now: int) -> None:
        """``inst`` finished (its last block, or retired): release its consumers."""
        inst.complete = True
        inst.complete_at = now
        self.n_complete += 1
        was_resolved = inst.resolved
        inst.resolved = True
        cons = inst.consumers
        if len(cons) > 1 and self.order_release is not None:
            cons = self.order_release(cons, _si)
        for c in cons:
            c.n_incomplete -= 1
            if not was_resolved:
                c.n_unresolved -= 1
            if c.n_incomplete == 0:
                self.make_ready(c, now)
            elif not was_resolved and c.n_unresolved == 0:
                self.check_early(c)
        left = self.round_left
        left[inst.round] -= 1
        if not left[inst.round] and self.on_round_done is not None:
            self.on_round_done(inst.round)

    def resolve(self, inst: TaskInst) -> None:
        """A flagged producer is fully published: its consumers may become early candidates."""
        inst.resolved = True
        cons = inst.consumers
        if len(cons) > 1 and self.order_release is not None:
            cons = self.order_release(cons, _si)
        for c in cons:
            c.n_unresolved -= 1
            if c.n_unresolved == 0 and c.n_incomplete > 0:
                self.check_early(c)

    def check_early(self, c: TaskInst) -> None:
        """Enter ``c`` in its early queue if it is a candidate and the queue has room."""
        if c.ready or c.early or c.complete or c.spec.predicate is not None or c.next_block >= c.nblocks:
            return
        rs = self.ranks[c.rank]
        need = c.nblocks - c.next_block
        if rs.early_occ[c.shape] + need > self.early_capacity:
            return  # the early queue is full: this candidate waits for normal readiness
        c.early = True
        rs.early_occ[c.shape] += need
        (rs.early_sync if c.spec.sync_start else rs.early[c.shape]).append(c)
        rs.dirty = True

    def make_ready(self, c: TaskInst, now: int) -> None:
        """Every producer of ``c`` is complete: ring the doorbell of its staged blocks and queue
        the blocks not yet placed."""
        c.ready = True
        rs = self.ranks[c.rank]
        rs.dirty = True
        if c.early:
            c.early = False
            rs.early_occ[c.shape] -= c.nblocks - c.next_block
        for b in c.blocks:  # the doorbell: every staged block may run now
            if b.gated:
                b.gated = False
                b.doorbell = now
                if b.nrun == len(b.cores) and b.state == PLACED:
                    self.start(b)
        if c.nblocks == 0:
            self.completions.append(c)
        elif c.next_block < c.nblocks:
            (rs.sync if c.spec.sync_start else rs.normal)[c.shape].append(c)
            c.queued = True

    def predicate_ok(self, inst: TaskInst) -> bool:
        """Evaluate the predicate at the dispatch point; a false one retires the task inline."""
        inst.pred_done = True
        try:
            ok = bool(inst.spec.predicate(inst.mem))
        except Exception as e:
            raise KernelError(f"predicate of {inst.label} raised {type(e).__name__}: {e}") from e
        if not ok:
            inst.retired = True
            inst.queued = False
            inst.next_block = inst.nblocks
            self.completions.append(inst)
        return ok


def _si(inst: TaskInst) -> int:
    return inst.si
