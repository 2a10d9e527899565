"""One engine, driven transition by transition: snapshots, restores, fingerprints and effects.

The explorer searches the schedules of the *same* engine ``dslc run`` uses
(:class:`runtime.scheduler.Engine` in its untimed mode), with the same kernels on the same
memory.  This module gives it four operations on that engine:

* :meth:`Space.execute` - one transition: step a runnable block and settle (completions,
  releases, dispatch), answering the dispatch choice points from a script;
* ``space.snapshots.capture`` / ``.restore`` - a snapshot of the scheduler records and of
  memory (with its fingerprint up to core symmetry), and going back to it (the
  :class:`runtime.verify.snapshots.Snapshots` piece);
* :class:`Effect` - what a transition touched, for partial-order reduction
  (:mod:`runtime.verify.effects`).

**Memory** is kept as one ``bytes`` object per (rank, tensor) array.  After a step only the
arrays it may have written are serialised again (its kernel's static write set on this rank,
plus the peers, atomics and notifies ``ctx`` saw it make); an unchanged array keeps its
``bytes`` object, so snapshots share them and ``hash`` of a snapshot reuses their cached hashes.

**Kernel generators** cannot be copied.  A block suspended at a ``wait`` or a barrier is a
generator whose locals were computed from memory it read in earlier steps.  So every block
carries a *trail*: per step, the bytes of the arrays its kernel reads (static read set) before
that step, and how often the generator was resumed.  Restoring a state whose blocks have a
different live generator rebuilds it: a fresh generator, resumed step by step on exactly the
memory it saw (side effects of the rebuild land in memory that is restored right after).  The
trail is also the block's part of the fingerprint, so two states are merged only when every
suspended generator saw the same data - sound for any kernel, not only generated ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.decisions import Decider, block_label, block_order
from runtime.device import DEFAULT_SCHED_THREADS, EARLY_QUEUE_CAPACITY
from runtime.machine import BARRIER, DONE, Block, Core, TaskInst
from runtime.memory import build_memory
from runtime.program import OUTPUT_KINDS, Program, numpy_dtype
from runtime.scheduler import Engine
from runtime.simulator import check_cohorts, check_scalars
from runtime.verify.effects import Effect, ExploreContext, Observer, Rebuilding, Subscripts
from runtime.verify.footprint import kernel_footprint, predicate_reads
from runtime.verify.memo import MEMO_LIMIT, StepMemo
from runtime.verify.snapshots import Snapshots


@dataclass(frozen=True)
class Config:
    """The configuration schedules are explored for: ranks, clusters per rank, scheduler
    threads, rounds, runtime scalars, early-queue capacity and the per-block step limit."""

    ranks: int
    n_aic: int
    n_threads: int = DEFAULT_SCHED_THREADS
    rounds: int = 1
    scalars: tuple[tuple[str, Any], ...] = ()
    early_capacity: int = EARLY_QUEUE_CAPACITY
    max_block_steps: int = 10_000
    round_scalars: tuple[str, ...] = ("epoch",)  # scalars that are round + 1 in each round


class Space:
    """An untimed engine over fresh memory, with the operations the explorer needs; its
    snapshots are ``self.snapshots`` (:class:`runtime.verify.snapshots.Snapshots`)."""

    def __init__(self, program: Program, inputs: dict | list[dict], config: Config, decider: Decider) -> None:
        ranks = config.ranks
        program.validate()
        check_cohorts(program, config.n_aic)
        check_scalars(program, dict(config.scalars), config.round_scalars)
        self.program = program
        self.mems = build_memory(program, inputs, ranks)
        self.eng = eng = Engine(
            program,
            self.mems,
            n_aic=config.n_aic,
            n_threads=config.n_threads,
            policy="random",
            seed=0,
            rounds=config.rounds,
            scalars=dict(config.scalars),
            timeout=math.inf,
            early_capacity=config.early_capacity,
            max_block_steps=config.max_block_steps,
            decider=decider,
            round_scalars=config.round_scalars,
        )
        eng.context_class = ExploreContext
        eng.dispatcher.new_block = self._new_block
        eng.observer = None
        eng.space = self
        self._rebuilding = Rebuilding(self)
        self.ranks = ranks
        self.insts = eng.tasks.insts
        self.rank_insts = [[i for i in self.insts if i.rank == r] for r in range(ranks)]
        self.touched: set[int] = set(range(ranks))  # ranks the last transition changed
        self.last_observer = Observer()  # what ctx saw the last transition do
        self.subscripts = Subscripts()  # what its tracked arrays saw
        self.inst_blocks: dict[int, list[Block]] = {id(i): [] for i in self.insts}
        self._order: dict[Block, tuple[int, int, int, int]] = {}  # block -> its block_order key
        names = [t.name for t in program.tensors]
        self.nt = len(names)
        self.tensor_index = {n: i for i, n in enumerate(names)}
        self.arrays = [self.mems[r].arrays[n] for r in range(ranks) for n in names]
        self.live: list[bytes] = [a.tobytes() for a in self.arrays]
        self.shapes = [a.shape for a in self.arrays]
        # byte views of the (C-contiguous) arrays: restoring one is a memcpy from its bytes
        self.views = [memoryview(a).cast("B") if a.flags.writeable else None for a in self.arrays]
        self.all_mask = (1 << len(self.arrays)) - 1
        self.output_slots = [
            r * self.nt + i
            for r in range(ranks)
            for i, t in enumerate(program.tensors)
            if t.kind in ("output", "inout")
        ]
        self.float_tensors = {
            t.name for t in program.tensors if np.issubdtype(numpy_dtype(t.dtype), np.floating)
        }
        self.footprints = [kernel_footprint(t.kernel) for t in program.tasks]
        self.barriers = any(fp.unknown or fp.barriers for fp in self.footprints)
        self.exact_tasks = {t.name for t, fp in zip(program.tasks, self.footprints, strict=True) if fp.exact}
        self._static_masks()
        self.trails: dict[Block, tuple] = {}
        self.live_gens: dict[Block, tuple] = {}  # block -> (trail, generator, ctx) it embodies
        self.rebuilds = 0
        self.memo = StepMemo(self, MEMO_LIMIT)
        self.snapshots = Snapshots(self)

    # ------------------------------------------------------------------ static footprints

    def slot(self, rank: int, tensor: str) -> int:
        return rank * self.nt + self.tensor_index[tensor]

    def _bits(self, rank: int | None, names: frozenset[str] | set[str]) -> int:
        """Mask of ``names`` on ``rank`` (on every rank when ``rank`` is None)."""
        m = 0
        ranks = range(self.ranks) if rank is None else (rank,)
        for n in names:
            if n in self.tensor_index:
                for r in ranks:
                    m |= 1 << self.slot(r, n)
        return m

    def _static_masks(self) -> None:
        """Per (task, rank): what any step of the task may read, write and add, and the arrays
        a rebuild of its generator must restore (its reads) and dirties (its writes)."""
        allm = self.all_mask
        self.read_mask: list[list[int]] = []
        self.write_mask: list[list[int]] = []
        self.add_mask: list[list[int]] = []
        self.local_writes: list[list[int]] = []
        self.local_reads: list[list[int]] = []
        self.read_slots: list[list[tuple[int, ...]]] = []
        for fp in self.footprints:
            rm, wm, am, lw, lr, rs = [], [], [], [], [], []
            for r in range(self.ranks):
                if fp.unknown:
                    rm.append(allm)
                    wm.append(allm)
                    am.append(0)
                    lw.append(allm)
                    lr.append(allm)
                    rs.append(tuple(range(len(self.arrays))))
                    continue
                floats = self.float_tensors
                reads = self._bits(r, fp.reads | fp.waits) | self._bits(None, fp.peer_reads)
                local_w = self._bits(r, fp.writes)
                writes = (
                    local_w
                    | self._bits(None, fp.peer_writes | fp.notify_set | (fp.peer_atomics & floats))
                    | self._bits(r, fp.atomics & floats)
                )
                adds = self._bits(None, fp.notify_add | (fp.peer_atomics - floats)) | self._bits(
                    r, fp.atomics - floats
                )
                rm.append(reads)
                wm.append(writes)
                am.append(adds)
                lw.append(local_w)
                lr.append(self._bits(r, fp.reads))
                gen_reads = self._bits(r, fp.reads) | self._bits(None, fp.peer_reads)
                rs.append(tuple(i for i in range(len(self.arrays)) if gen_reads >> i & 1))
            self.read_mask.append(rm)
            self.write_mask.append(wm)
            self.add_mask.append(am)
            self.local_writes.append(lw)
            self.local_reads.append(lr)
            self.read_slots.append(rs)
        tensors = set(self.tensor_index)
        self.predicate_mask = [0] * self.ranks
        for t in self.program.tasks:
            if t.predicate is None:
                continue
            names = predicate_reads(t.predicate, tensors)
            for r in range(self.ranks):
                self.predicate_mask[r] |= (
                    self._bits(r, names) if names is not None else self._bits(r, tensors)
                )

    # ------------------------------------------------------------------ blocks

    def _new_block(self, inst: TaskInst, index: int, cores: tuple[Core, ...], now: int, gated: bool) -> Block:
        """One record per (task instance, block) for the whole search, so snapshots and
        fingerprints can name blocks by identity."""
        pool = self.inst_blocks[id(inst)]
        if index < len(pool):
            b = pool[index]
            b.__init__(inst, index, cores, now, gated)
        else:
            b = Block(inst, index, cores, now, gated)
            pool.append(b)
            self._order[b] = block_order(b)
        self.trails.pop(b, None)
        return b

    # ------------------------------------------------------------------ transitions

    def execute(self, block: Block | None) -> Effect | None:
        """Step ``block`` (None: submit the rounds) and settle, from the current state.

        Dispatch choices are answered by the engine's decider; errors of the simulator
        (a kernel raising, the per-block step limit) propagate.  Returns the effect of the step.
        """
        eng = self.eng
        if block is None:
            self.snapshots.invalidate()
            eng.begin()
            self._after_settle()
            self.touched = set(range(self.ranks))
            return None
        inst = block.inst
        si, rank = inst.si, inst.rank
        memo = self.memo
        key = memo.key(block)
        if key is not None:
            step = memo.steps.get(key)
            if step is not None:
                return self._replay(block, step)
        live = self.live
        entry = tuple(live[i] for i in self.read_slots[si][rank])
        steps0 = block.steps
        gen0 = inst.barrier_gen
        waiting = block.wait
        obs = eng.observer = self.last_observer = Observer()
        self.subscripts.start()
        self.snapshots.invalidate()
        try:
            eng.advance(block)
        finally:
            eng.observer = None
        notified = {rank}
        for _sig, r, _key, _op, _v in obs.notifies:
            notified.add(r)
        self.touched = set(range(self.ranks)) if self._after_settle() else notified
        effect = self._effect(block, rank, si, obs, waiting, steps0, gen0)
        # memory: re-serialise what the step may have written
        dirty = effect.writes | effect.adds
        arrays = self.arrays
        i = 0
        d = dirty
        while d:
            if d & 1:
                nb = arrays[i].tobytes()
                if nb != live[i]:
                    live[i] = nb
            d >>= 1
            i += 1
        if key is not None:
            memo.record(key, block, steps0, effect, obs, dirty, notified)
        # the block's trail and live generator
        if block.state == DONE:
            self.trails.pop(block, None)
            self.live_gens.pop(block, None)
        elif block.steps != steps0:
            trail = self.trails.get(block, ()) + ((entry, block.steps - steps0),)
            self.trails[block] = trail
            self.live_gens[block] = (trail, block.gen, block.ctx)
        return effect

    def _replay(self, block: Block, step: Any) -> Effect:
        """:meth:`execute` of a step recorded before (:mod:`runtime.verify.memo`): the engine
        steps the block as usual, its generator being the step's replayer."""
        memo = self.memo
        memo.hits += 1
        self.last_observer = step.observer
        self.snapshots.invalidate()
        block.gen = memo.replayer(block, step)
        self.eng.advance(block)
        self.touched = set(range(self.ranks)) if self._after_settle() else set(step.ranks)
        self.trails.pop(block, None)
        self.live_gens.pop(block, None)
        return step.effect

    def _after_settle(self) -> bool:
        """Nothing runnable but work left: re-check spinners (True if that was needed)."""
        eng = self.eng
        if not eng.runnable and not eng.tasks.all_complete():
            eng.rewake()
            return True
        return False

    def _effect(
        self, b: Block, rank: int, si: int, obs: Observer, waiting: Any, steps0: int, gen0: int
    ) -> Effect:
        sched = b.state in (DONE, BARRIER) or b.inst.barrier_gen != gen0
        e = Effect(rank, sched)
        fp = self.footprints[si]
        ran = b.steps != steps0 or b.state == DONE
        if ran and fp.unknown:
            e.whole("reads", self.all_mask)
            e.whole("writes", self.all_mask)
        elif ran and not fp.exact:
            e.whole("reads", self.local_reads[si][rank])
            e.whole("writes", self.local_writes[si][rank])
            slot = self.slot
            for name, r in obs.peers:
                s = slot(r, name)
                if name in fp.peer_writes:
                    e.add("writes", s, None)
                if name in fp.peer_reads or name not in fp.peer_writes:
                    e.add("reads", s, None)
        for slot, (reads, writes) in self.subscripts.lists.items():
            if reads:
                e.add_subscripts("reads", slot, reads, self.shapes[slot])
            if writes:
                e.add_subscripts("writes", slot, writes, self.shapes[slot])
        for s, bx in obs.reads:
            e.add("reads", s, bx)
        for s, bx in obs.writes:
            e.add("writes", s, bx)
        for s, bx in obs.adds:
            e.add("adds", s, bx)
        if waiting is not None:  # a woken spinner re-read its cell
            e.add("reads", self.slot(rank, waiting.signal), tuple((k, k + 1) for k in waiting.key))
        if sched and self.predicate_mask[rank]:
            e.whole("reads", self.predicate_mask[rank])
        return e

    def rebuild(self, b: Block, trail: tuple) -> tuple[Any, Any]:
        """A fresh generator of ``b`` resumed through its trail on the memory it saw."""
        self.rebuilds += 1
        eng = self.eng
        inst = b.inst
        spec = inst.spec
        ctx = ExploreContext(
            b.index, inst.nblocks, inst.rank, eng.nranks, inst.round, spec.name, inst.mem, eng.mems, eng, b
        )
        ctx._engine = self._rebuilding
        slots = self.read_slots[inst.si][inst.rank]
        arrays, live, views = self.arrays, self.live, self.views
        gen = spec.kernel(ctx)
        for entry, resumes in trail:
            for i, want in zip(slots, entry, strict=True):
                if live[i] is not want:
                    views[i][:] = want
                    live[i] = want
            for _ in range(resumes):
                next(gen)
        # what the replayed steps wrote is stale: the restore that follows copies it back
        dirty = self.write_mask[inst.si][inst.rank] | self.add_mask[inst.si][inst.rank]
        for i in range(len(arrays)):
            if dirty >> i & 1:
                live[i] = None  # type: ignore[call-overload]
        ctx._engine = eng
        return gen, ctx

    # ------------------------------------------------------------------ queries

    def runnable_blocks(self) -> list[Block]:
        """The engine's ``runnable_blocks`` (canonical order), sorting by keys made once per block."""
        return sorted(self.eng.runnable, key=self._order.__getitem__)

    def complete(self) -> bool:
        return self.eng.tasks.all_complete()

    def outputs(self) -> tuple[bytes, ...]:
        """The bits of every output and inout tensor on every rank (what determinism compares)."""
        return tuple(self.live[i] for i in self.output_slots)

    def stuck_signature(self) -> tuple:
        """A deadlocked state, described without core names (so equal up to core symmetry):
        every unfinished placed block with its state and slot, its core-mate in the other
        slot, and the memory."""
        rows = []
        for inst in self.insts:
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
        return (tuple(sorted(rows)), tuple(self.live))

    def result_arrays(self) -> list[dict[str, np.ndarray]]:
        """Per rank, copies of the output, inout and window arrays (what a golden checks)."""
        return [
            {t.name: m.arrays[t.name].copy() for t in self.program.tensors if t.kind in OUTPUT_KINDS}
            for m in self.mems
        ]
