"""The discrete-event engine: dispatch rules (docs/runtime-semantics.md §5, §6), block execution.

Time.  Time is an integer count of abstract units.  Nothing happens between events; the only
event is "step block B at time t".  A block that gets all its cores (and is not gated) *starts*
at t0 and is first stepped at ``t0 + cost``: its compute takes ``cost`` units and its effects
(stores, atomics, notifies) land when its code runs, so atomics apply in completion order.  A
step resumes the kernel generator until it finishes, spins on a cell that does not hold, parks
at a barrier, or yields ``None``; a plain yield reschedules the block at the same time, behind
events already queued for that instant.  A spinning block makes no progress and holds its core;
the notify that satisfies it schedules its resumption at the notify's time.  So a block ends at
``start + cost + time spent spinning or at barriers``.  Same-time events are ordered by the
policy (arrival order for fifo, random for the others), which is what makes FP atomics order
vary across seeds.

Pieces.  The engine owns time (the event heap or, untimed, the runnable set) and block
execution (stepping kernels, spinning, barriers, freeing cores).  The task instances and their
life cycle - dependency counting, early candidates, ready queues, completion - are a
:class:`runtime.lifecycle.TaskLifecycle` (``self.tasks``); placing queued blocks on cores and
slots is a :class:`runtime.dispatch.Dispatcher` (``self.dispatcher``).  Both call back into
the engine only to start a block that holds its cores (:meth:`Engine._start`).

Dispatch.  After every step the engine settles: pending completions release consumers, then
each rank whose state changed runs one dispatch pass (``runtime.dispatch``: sync cohorts, then
MIX/AIC/AIV ready queues with an IDLE stage before a PENDING stage, then early-dispatch queues).
A block in a pending slot never migrates; it moves to the running slot when the running block
of its core finishes.  A MIX block takes one whole cluster and starts once it holds all three
running slots.  A gated block holds its slot until the doorbell (its task's last producer
completes).  A consumer becomes ready at the time its last producer completes.

Early candidates (docs/runtime-semantics.md §6): every direct producer complete or (flagged
``early_resolve`` and fully published, i.e. all its blocks placed); no predicate; at most
``early_capacity`` unstaged candidate blocks per shape queue - a candidate that does not fit
waits for normal readiness.

Choice points (``runtime.decisions``).  Which core a block takes, which cores a cohort takes and
in which order released consumers enter their queues are asked of ``self.policy``; which block
steps next comes from the event heap.  An engine built with a *decider* runs untimed instead:
every block whose next step may run is in ``self.runnable`` and the decider picks one
(``advance``), one unit of logical time per step - how ``dslc run --replay`` and ``dslc
verify`` drive the same rules.  ``record=True`` wraps the policy so its answers are kept.
"""

from __future__ import annotations

import heapq
import itertools
import time
import types
from collections.abc import Callable, Sequence
from typing import Any

from runtime import watchdog
from runtime.decisions import Decider, RecordingPolicy, block_order
from runtime.dispatch import Dispatcher
from runtime.lifecycle import TaskLifecycle
from runtime.machine import BARRIER, DONE, PLACED, RUN, SPIN, WAKE, Block, RankState, TaskInst
from runtime.memory import BARRIER_MARK, BlockContext, RankMemory, Wait, format_cell
from runtime.policies import NOTIFIER, WAITER, make_policy, static_role
from runtime.program import Program
from runtime.sim_errors import KernelError, SimulationTimeout, StepLimitExceeded

_GeneratorType = types.GeneratorType


class Engine:
    """One simulation run: the device state of every rank, the event heap and the counters.

    ``hosted`` names the ranks whose tasks this engine runs (default: all of them); the MPI
    backend (``runtime.mpi``) runs one engine per process over its own ranks, with a
    ``context_class`` whose peer operations go through MPI.
    """

    #: Whether a signal cell can be changed by another process, whose notify carries its own
    #: simulated time (:meth:`_wake_time`); in-process every notify happened at or before now.
    remote_clocks = False

    def __init__(
        self,
        program: Program,
        mems: list[RankMemory],
        *,
        n_aic: int,
        n_threads: int,
        policy: str,
        seed: int,
        rounds: int,
        scalars: dict[str, Any],
        timeout: float,
        early_capacity: int,
        max_block_steps: int,
        on_round_done: Callable[[int], None] | None = None,
        decider: Decider | None = None,
        record: bool = False,
        round_scalars: tuple[str, ...] = ("epoch",),
        hosted: Sequence[int] | None = None,
    ) -> None:
        self.program = program
        specs = program.tasks
        self.roles = [static_role(s.kernel, s.notifier, s.waiter) for s in specs]
        self.seed = seed
        #: Untimed engines (driven by a decider: replay, the explorer) pick the next block to
        #: step at a choice point; timed ones take it from the event heap.
        self.timed = decider is None
        self.recorder: RecordingPolicy | None = None
        if decider is not None:
            self.policy: Any = decider
        else:
            self.policy = make_policy(policy, seed, self.roles)
            if record:
                self.policy = self.recorder = RecordingPolicy(self.policy)
        self.fifo = policy == "fifo" and decider is None and not record
        self.runnable: dict[Block, None] = {}  # untimed: blocks whose next step may run now
        self.context_class = BlockContext  # the explorer substitutes one that observes accesses
        self.nranks = len(mems)
        self.hosted = tuple(range(self.nranks) if hosted is None else hosted)
        self.ranks = [RankState(r, n_aic, n_threads) for r in range(self.nranks)]
        self.mems = mems
        self.rounds = rounds
        self.max_block_steps = max_block_steps
        self.timeout = timeout
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.last_finish = self.started  # wall clock of the last block that finished
        self.current: Block | None = None  # the block being stepped, and since when
        self.last_stepped: Block | None = None
        self.current_since = self.started
        self.now = 0
        self.heap: list[tuple[int, float, int, Block]] = []
        self.seq = itertools.count()
        self.spinners: dict[tuple[int, str, tuple[int, ...]], list[Block]] = {}
        self.notify_log: dict[tuple[int, str, tuple[int, ...]], set[tuple[int, int]]] = {}
        self.sig_notifiers: dict[str, set[int]] = {}
        self.blocks_run = 0
        self.waits = 0
        self.steps = 0
        self.makespan = 0
        self.tasks = TaskLifecycle(
            program,
            mems,
            self.ranks,
            self.hosted,
            rounds=rounds,
            scalars=scalars,
            round_scalars=round_scalars,
            early_capacity=early_capacity,
            order_release=None if self.fifo else self.policy.order_release,
            start=self._start,
            on_round_done=on_round_done,
        )
        self.dispatcher = Dispatcher(
            self.tasks, policy=self.policy, fifo=self.fifo, roles=self.roles, start=self._start
        )

    @property
    def insts(self) -> list[TaskInst]:
        """Every task instance of the run (owned by ``self.tasks``), as the deadlock report, the
        trace and the schedule read a run (``runtime.mpi.snapshot.MergedRun`` is the other kind)."""
        return self.tasks.insts

    # ------------------------------------------------------------------ main loop

    def run(self) -> bool:
        """Run to completion; return False if no block can make progress (a deadlock).

        Raises :class:`SimulationTimeout` (with the run's :class:`Progress`) at the deadline,
        also from inside a kernel body that never yields (``runtime.watchdog``)."""
        try:
            with watchdog.alarm(self.deadline - time.monotonic(), self.interruptible):
                return self._run()
        except watchdog.Expired:
            raise self._timeout() from None

    def interruptible(self) -> bool:
        """Whether the watchdog's alarm may interrupt the run now: anywhere, in one process."""
        return True

    def progress(self) -> watchdog.Progress:
        at = time.monotonic()
        current = self.current
        return watchdog.Progress(
            elapsed=at - self.started,
            blocks_done=self.blocks_run,
            blocks_total=sum(i.nblocks for i in self.tasks.insts),
            tasks_done=self.tasks.n_complete,
            tasks_total=len(self.tasks.insts),
            rounds_done=sum(1 for left in self.tasks.round_left if not left),
            rounds=self.rounds,
            sim_time=self.now,
            steps=self.steps,
            idle_for=at - self.last_finish,
            current=None if current is None else _label(current),
            current_for=at - self.current_since if current is not None else 0.0,
            last=None if self.last_stepped is None else _label(self.last_stepped),
        )

    def _timeout(self) -> SimulationTimeout:
        p = self.progress()
        return SimulationTimeout(
            f"simulation of {self.program.name!r} stopped at its {self.timeout:g} s wall-clock timeout: "
            f"{p.summary()}; {p.verdict(self.timeout)}",
            p,
        )

    def _run(self) -> bool:
        self.begin()
        if not self.timed:
            return self._run_untimed()
        heap = self.heap
        pop = heapq.heappop
        recorder = self.recorder
        while True:
            while heap:
                t, _, _, b = pop(heap)
                if recorder is not None:
                    recorder.record_step([e[3] for e in heap] + [b], b)
                self.now = t
                self._step(b)
                self._settle()
            if self.tasks.all_complete():
                return True
            if not self._rewake():
                return False
            self._settle()

    def begin(self) -> None:
        """Submit every round: release the tasks without producers and dispatch them."""
        self.tasks.release_roots(self.now)
        self._settle()

    def _run_untimed(self) -> bool:
        while True:
            while self.runnable:
                self.advance(self.policy.pick_step(self.runnable_blocks()))
            if self.tasks.all_complete():
                return True
            if not self.rewake():
                return False

    def runnable_blocks(self) -> list[Block]:
        """Untimed: the blocks that may step now, in canonical order (the ``step`` options)."""
        return sorted(self.runnable, key=block_order)

    def advance(self, b: Block) -> None:
        """Untimed: step ``b`` (one unit of logical time) and settle the consequences."""
        del self.runnable[b]
        self.now += 1
        self._step(b)
        self._settle()

    def rewake(self) -> bool:
        """Nothing is runnable: wake spinners whose cell holds after all, and settle."""
        if not self._rewake():
            return False
        self._settle()
        return True

    def _settle(self) -> None:
        """Process pending completions and run a dispatch pass on every changed rank, until
        neither is left."""
        ranks = self.ranks
        comp = self.tasks.completions
        complete = self.tasks.complete
        dispatch = self.dispatcher.dispatch
        while True:
            while comp:
                complete(comp.popleft(), self.now)
            moved = False
            for rs in ranks:
                if rs.dirty:
                    dispatch(rs, self.now)
                    moved = True
            if not moved and not comp:
                return

    def _rewake(self) -> bool:
        """Wake the spinners whose cell holds after all (changed behind notify's back, or by
        another MPI process); whether any woke."""
        woke = False
        for cell in list(self.spinners):
            held = self._take_held(cell)
            if held:
                at = self._wake_time(cell)
                for b in held:
                    b.state = WAKE
                    self._push(at, b)
                woke = True
        return woke

    def _wake_time(self, cell: tuple[int, str, tuple[int, ...]]) -> int:
        """When a spinner on ``cell`` found holding by :meth:`_rewake` resumes: now."""
        return self.now

    def _take_held(self, cell: tuple[int, str, tuple[int, ...]]) -> list[Block]:
        """Remove from ``cell``'s spinners those whose wait holds (each checked once) and return them."""
        held, keep = [], []
        for b in self.spinners[cell]:
            (held if b.wait.satisfied() else keep).append(b)
        if keep:
            self.spinners[cell] = keep
        else:
            del self.spinners[cell]
        return held

    def _check_clock(self) -> None:
        """The polled deadline, where the alarm cannot be armed (see ``runtime.watchdog``)."""
        if time.monotonic() > self.deadline:
            raise self._timeout()

    # ------------------------------------------------------------------ block execution

    def _push(self, t: int, b: Block) -> None:
        if not self.timed:
            self.runnable[b] = None
            return
        key = 0.0 if self.fifo else self.policy.event_key(b.inst.si)
        heapq.heappush(self.heap, (t, key, next(self.seq), b))

    def _start(self, b: Block) -> None:
        b.start = self.now
        b.state = RUN
        cost = b.inst.spec.cost
        if not self.fifo and self.timed:
            cost += self.policy.extra_delay(b.inst.si, cost)
        self._push(self.now + cost, b)

    def _wake(self, b: Block) -> None:
        b.state = WAKE
        self._push(self.now, b)

    def _step(self, b: Block) -> None:
        inst = b.inst
        w = b.wait
        if w is not None:  # a woken spinner re-checks: an Eq wait can be overshot meanwhile
            if not w.satisfied():
                b.state = SPIN
                self.spinners.setdefault((inst.rank, w.signal, w.key), []).append(b)
                return
            b.spins.append((b.spin_start, self.now, format_cell(w.signal, w.key)))
            b.wait = None
        b.state = RUN
        gen = b.gen
        if gen is None:
            spec = inst.spec
            b.ctx = ctx = self.context_class(
                b.index,
                inst.nblocks,
                inst.rank,
                self.nranks,
                inst.round,
                spec.name,
                inst.mem,
                self.mems,
                self,
                b,
            )
            self.current = self.last_stepped = b  # a plain function runs its whole body here
            self.current_since = time.monotonic()
            try:
                res = spec.kernel(ctx)
            except Exception as e:
                raise self._kernel_error(b, e) from e
            self.current = None
            if res.__class__ is not _GeneratorType:
                self._finish(b)
                return
            b.gen = gen = res
        while True:
            self.steps += 1
            b.steps += 1
            if not self.steps & 1023:
                self._check_clock()
            if b.steps > self.max_block_steps:
                raise StepLimitExceeded(
                    f"{b.name} rank {inst.rank} round {inst.round + 1} resumed more than "
                    f"{self.max_block_steps:,} times at t={self.now}: a kernel that never returns, or "
                    f"one that yields more often than max_block_steps allows; {self.progress().summary()}",
                    self.progress(),
                )
            self.current = self.last_stepped = b
            self.current_since = time.monotonic()
            try:
                y = next(gen)
            except StopIteration:
                self._finish(b)
                return
            except Exception as e:
                raise self._kernel_error(b, e) from e
            self.current = None
            if y is None:
                self._wake(b)
                return
            if y.__class__ is Wait:
                self.roles[inst.si] |= WAITER
                if y.satisfied():
                    if not self.remote_clocks:
                        continue
                    at = self._wake_time((inst.rank, y.signal, y.key))
                    if at <= self.now:
                        continue
                    # Held already, by a notify another process made later in simulated time:
                    # the block resumes when that notify happened, as if it had spun until then.
                    b.wait = y
                    b.state = WAKE
                    b.spin_start = self.now
                    self.waits += 1
                    self._push(at, b)
                    return
                b.wait = y
                b.state = SPIN
                b.spin_start = self.now
                self.waits += 1
                self.spinners.setdefault((inst.rank, y.signal, y.key), []).append(b)
                return
            if y is BARRIER_MARK:
                inst.barrier_wait.append(b)
                if len(inst.barrier_wait) < inst.nblocks:
                    b.state = BARRIER
                    b.barrier_start = self.now
                    return
                inst.barrier_gen += 1
                for o in inst.barrier_wait:
                    if o is not b:
                        o.barriers.append((o.barrier_start, self.now, inst.barrier_gen))
                        self._wake(o)
                inst.barrier_wait = []
                continue
            raise KernelError(
                f"{b.name} rank {inst.rank} round {inst.round + 1} yielded {y!r}; kernels may only yield "
                "None, ctx.wait(...) or ctx.barrier()"
            )

    def _kernel_error(self, b: Block, e: Exception) -> KernelError:
        i = b.inst
        return KernelError(
            f"kernel of {b.name} (rank {i.rank}, round {i.round + 1}) raised {type(e).__name__}: {e}"
        )

    def notified(self, src: Block, dst: int, signal: str, key: tuple[int, ...]) -> None:
        """Called by ``ctx.notify`` after the cell changed: record who notifies, wake spinners."""
        si = src.inst.si
        self.roles[si] |= NOTIFIER
        cell = (dst, signal, key)
        log = self.notify_log.get(cell)
        if log is None:
            self.notify_log[cell] = log = set()
        log.add((si, src.inst.rank))
        self.sig_notifiers.setdefault(signal, set()).add(si)
        if cell in self.spinners:
            for b in self._take_held(cell):
                self._wake(b)

    def _finish(self, b: Block) -> None:
        self.last_finish = time.monotonic()
        self.current = None
        now = self.now
        b.state = DONE
        b.end = now
        b.gen = None
        b.ctx = None
        inst = b.inst
        rs = self.ranks[inst.rank]
        for c in b.cores:
            c.running = None
            p = c.pending
            if p is not None:
                c.pending = None
                c.running = p
                p.nrun += 1
                p.promoted[p.cores.index(c)] = now
                if p.nrun == len(p.cores) and not p.gated and p.state == PLACED:
                    self._start(p)
            rs.refresh(c)
        rs.dirty = True
        self.blocks_run += 1
        if now > self.makespan:
            self.makespan = now
        inst.finished += 1
        if inst.finished == inst.nblocks:
            self.tasks.complete(inst, now)


def _label(b: Block) -> str:
    steps = f"{b.steps:,} step" + ("" if b.steps == 1 else "s")
    return f"block {b.name} rank {b.inst.rank} round {b.inst.round + 1} ({steps})"
