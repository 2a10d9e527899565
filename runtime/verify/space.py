"""One engine, driven transition by transition: snapshots, restores, fingerprints and effects.

The explorer searches the schedules of the *same* engine ``dslc run`` uses
(:class:`runtime.scheduler.Engine` in its untimed mode), with the same kernels on the same
memory.  This module gives it four operations on that engine:

* :meth:`Space.execute` - one transition: step a runnable block and settle (completions,
  releases, dispatch), answering the dispatch choice points from a script;
* :meth:`Space.capture` / :meth:`Space.restore` - a snapshot of the scheduler records and of
  memory, and going back to it;
* :meth:`Space.fingerprint` - a hash of a snapshot up to core symmetry;
* :class:`Effect` - what a transition touched, for partial-order reduction.

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

**Symmetry.** Cores are anonymous to kernels (``ctx`` has no core id); what matters is which
blocks sit in which slots of which cluster, and which scheduler thread owns the cluster (the
racy idle check, reference §1.6).  Fingerprints therefore sort the two AIV cores of a cluster,
the clusters of a thread, and the threads that own equally many clusters.  Dispatch choices
among options that such a permutation maps onto each other are explored once
(:meth:`Space.representatives`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from runtime.decisions import Decider, block_label
from runtime.machine import BARRIER, DONE, RUN, SPIN, WAKE, Block, Core, TaskInst
from runtime.memory import build_memory
from runtime.program import OUTPUT_KINDS, Program, numpy_dtype
from runtime.scheduler import Engine
from runtime.simulator import check_cohorts, check_scalars
from runtime.verify.effects import Effect, ExploreContext, Observer, Rebuilding
from runtime.verify.footprint import kernel_footprint, predicate_reads

_INST_FIELDS = (
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
_inst_get = attrgetter(*_INST_FIELDS)
_COMPLETE = _INST_FIELDS.index("complete")


def _set_inst(inst: TaskInst, f: tuple) -> None:
    """Write the fields ``_inst_get`` read (one unpacking assignment, no loop)."""
    (
        inst.n_incomplete,
        inst.n_unresolved,
        inst.resolved,
        inst.complete,
        inst.ready,
        inst.early,
        inst.queued,
        inst.pred_done,
        inst.retired,
        inst.next_block,
        inst.finished,
        inst.barrier_gen,
    ) = f


_core_get = attrgetter("running", "pending")
_BLOCK_FIELDS = ("cores", "nrun", "gated", "state", "gen", "ctx", "wait", "steps")
_block_get = attrgetter(*_BLOCK_FIELDS)
_SHAPES = ("mix", "aic", "aiv")


class RankSnap:
    """The scheduler records of one rank; shared by every snapshot in which they are unchanged."""

    __slots__ = ("insts", "blocks", "cores", "queues", "runnable", "spinners", "trails", "hash")


class Snapshot:
    """Everything needed to put the engine and memory back, and its fingerprint."""

    __slots__ = ("ranks", "mem", "counters", "fp")


@dataclass(frozen=True)
class Config:
    """The configuration schedules are explored for: ranks, clusters per rank, scheduler
    threads, rounds, runtime scalars, early-queue capacity and the per-block step limit."""

    ranks: int
    n_aic: int
    n_threads: int = 3
    rounds: int = 1
    scalars: tuple[tuple[str, Any], ...] = ()
    early_capacity: int = 64
    max_block_steps: int = 10_000
    round_scalars: tuple[str, ...] = ("epoch",)  # scalars that are round + 1 in each round


class Space:
    """An untimed engine over fresh memory, with the operations the explorer needs."""

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
        eng.new_block = self._new_block
        eng.observer = None
        eng.space = self
        self._rebuilding = Rebuilding(self)
        self.ranks = ranks
        self.insts = eng.insts
        self.rank_insts = [[i for i in self.insts if i.rank == r] for r in range(ranks)]
        self.touched: set[int] = set(range(ranks))  # ranks the last transition changed
        self.last_observer = Observer()  # what ctx saw the last transition do
        self.live_ranks: list[RankSnap | None] = [None] * ranks
        self._core_forms: dict[tuple, tuple] = {}
        self._inst_blocks: dict[int, list[Block]] = {id(i): [] for i in self.insts}
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
        pool = self._inst_blocks[id(inst)]
        if index < len(pool):
            b = pool[index]
            b.__init__(inst, index, cores, now, gated)
        else:
            b = Block(inst, index, cores, now, gated)
            pool.append(b)
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
            self.invalidate()
            eng.begin()
            self._after_settle()
            self.touched = set(range(self.ranks))
            return None
        inst = block.inst
        si, rank = inst.si, inst.rank
        live = self.live
        entry = tuple(live[i] for i in self.read_slots[si][rank])
        steps0 = block.steps
        gen0 = inst.barrier_gen
        waiting = block.wait
        obs = eng.observer = self.last_observer = Observer()
        self.invalidate()
        try:
            eng.advance(block)
        finally:
            eng.observer = None
        touched = {rank}
        for _sig, r, _key, _op, _v in obs.notifies:
            touched.add(r)
        if self._after_settle():
            touched = set(range(self.ranks))
        self.touched = touched
        effect = self._effect(block, rank, si, obs, waiting, steps0, gen0)
        # memory: re-serialise what the step may have written
        dirty = effect.writes | effect.adds
        arrays = self.arrays
        i = 0
        while dirty:
            if dirty & 1:
                nb = arrays[i].tobytes()
                if nb != live[i]:
                    live[i] = nb
            dirty >>= 1
            i += 1
        # the block's trail and live generator
        if block.state == DONE:
            self.trails.pop(block, None)
            self.live_gens.pop(block, None)
        elif block.steps != steps0:
            trail = self.trails.get(block, ()) + ((entry, block.steps - steps0),)
            self.trails[block] = trail
            self.live_gens[block] = (trail, block.gen, block.ctx)
        return effect

    def _after_settle(self) -> bool:
        """Nothing runnable but work left: re-check spinners (True if that was needed)."""
        eng = self.eng
        if not eng.runnable and eng.n_complete < len(self.insts):
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
        if obs.read_keys:
            e.add_keys("reads", obs.read_keys, self.shapes)
        if obs.write_keys:
            e.add_keys("writes", obs.write_keys, self.shapes)
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

    # ------------------------------------------------------------------ snapshots

    def capture(self, parent: Snapshot | None = None, touched: set[int] | None = None) -> Snapshot:
        """Snapshot the live state.  With the ``parent`` it was reached from and the ranks the
        transition ``touched``, the other ranks' records are shared with the parent."""
        snap = Snapshot()
        ranks = []
        for r in range(self.ranks):
            prev = parent.ranks[r] if parent is not None else None
            if prev is not None and touched is not None and r not in touched:
                ranks.append(prev)
            else:
                ranks.append(self._capture_rank(r, prev))
        snap.ranks = ranks
        eng = self.eng
        snap.counters = (eng.n_complete, tuple(eng.round_left))
        snap.mem = tuple(self.live)
        snap.fp = hash((snap.mem, tuple(rs.hash for rs in ranks)))
        self.live_ranks = list(ranks)
        return snap

    def _capture_rank(self, r: int, prev: RankSnap | None) -> RankSnap:
        """Records of rank ``r``; entries equal to ``prev``'s are ``prev``'s objects, so a
        restore between the two touches only what differs.

        A task's placed blocks are its pooled blocks ``0..next_block-1`` and its barrier list
        the ones in the BARRIER state, so neither is stored."""
        rs = self.eng.ranks[r]
        snap = RankSnap()
        insts = []
        blocks: dict[Block, tuple] = {}
        keys = []
        trails = self.trails
        kept: dict[Block, tuple] = {}
        runnable = []
        spinners = []
        old_insts = prev.insts if prev is not None else None
        old_blocks = prev.blocks if prev is not None else {}
        for k, inst in enumerate(self.rank_insts[r]):
            if old_insts is not None:
                o = old_insts[k]
                if o[_COMPLETE]:  # completion is final along a path: nothing of it changes
                    insts.append(o)
                    keys.append(o)
                    continue
                f = _inst_get(inst)
                if o == f:
                    f = o
            else:
                f = _inst_get(inst)
            insts.append(f)
            keys.append(f)
            if inst.complete:
                continue
            for b in inst.blocks:
                state = b.state
                if state == DONE:
                    continue
                info = _block_get(b)
                o = old_blocks.get(b)
                if o is not None and o == info:
                    info = o
                blocks[b] = info
                trail = trails.get(b)
                if trail is not None:
                    kept[b] = trail
                keys.append((b, info[1], info[2], state, trail))
                if state == RUN or state == WAKE:
                    runnable.append(b)
                elif state == SPIN:
                    spinners.append(b)
        snap.insts = insts
        snap.blocks = blocks
        snap.cores = tuple(map(_core_get, rs.cores))
        normal, sync, early = rs.normal, rs.sync, rs.early
        snap.queues = (
            (tuple(normal["mix"]), tuple(normal["aic"]), tuple(normal["aiv"])),
            (tuple(sync["mix"]), tuple(sync["aic"]), tuple(sync["aiv"])),
            (tuple(early["mix"]), tuple(early["aic"]), tuple(early["aiv"])),
            tuple(rs.early_sync),
            tuple(rs.early_occ.values()),
        )
        snap.runnable = runnable
        snap.spinners = spinners
        snap.trails = kept
        snap.hash = hash((tuple(keys), self._canonical_cores(rs, snap.cores), snap.queues))
        return snap

    def _canonical_cores(self, rs: Any, key: tuple) -> tuple:
        """The core occupancy of a rank up to the permutations that keep its structure."""
        got = self._core_forms.get(key)
        if got is not None:
            return got
        by_thread: dict[int, list] = {}
        for aic, v0, v1 in rs.clusters:
            a, b = _slot_sig(v0), _slot_sig(v1)
            sig = (_slot_sig(aic), a, b) if a <= b else (_slot_sig(aic), b, a)
            by_thread.setdefault(aic.thread, []).append(sig)
        groups: dict[int, list] = {}
        for sigs in by_thread.values():
            sigs.sort()
            groups.setdefault(len(sigs), []).append(tuple(sigs))
        form = tuple((n, tuple(sorted(g))) for n, g in sorted(groups.items()))
        if len(self._core_forms) < 1 << 16:
            self._core_forms[key] = form
        return form

    def invalidate(self, ranks: set[int] | None = None) -> None:
        """The live records of ``ranks`` (all when None) no longer match any snapshot."""
        for r in range(self.ranks) if ranks is None else ranks:
            self.live_ranks[r] = None

    def restore(self, snap: Snapshot) -> None:
        eng = self.eng
        trails: dict[Block, tuple] = {}
        runnable: dict[Block, None] = {}
        spinners: dict[tuple, list[Block]] = {}
        for r, rsnap in enumerate(snap.ranks):
            trails.update(rsnap.trails)
            for b in rsnap.runnable:
                runnable[b] = None
            if self.live_ranks[r] is not rsnap:
                self._restore_rank(r, rsnap)
            for b in rsnap.spinners:
                w = b.wait
                spinners.setdefault((r, w.signal, w.key), []).append(b)
        self.trails = trails
        eng.runnable = runnable
        eng.spinners = spinners
        eng.n_complete, round_left = snap.counters
        eng.round_left = list(round_left)
        eng.completions.clear()
        self._restore_memory(snap.mem)

    def _restore_rank(self, r: int, rsnap: RankSnap) -> None:
        """Put rank ``r``'s records back to ``rsnap``; where the live records are known (a
        snapshot of them), only the entries that differ are written."""
        eng = self.eng
        live = self.live_ranks[r]
        live_gens = self.live_gens
        pool = self._inst_blocks
        changed: dict[TaskInst, None] = {}
        for k, (inst, f) in enumerate(zip(self.rank_insts[r], rsnap.insts, strict=True)):
            if live is not None and live.insts[k] is f:
                continue
            _set_inst(inst, f)
            inst.blocks = pool[id(inst)][: inst.next_block]
            changed[inst] = None
        live_blocks = live.blocks if live is not None else {}
        for b, info in rsnap.blocks.items():
            if live_blocks.get(b) is info:
                continue
            cores, b.nrun, b.gated, state, gen, ctx, wait, steps = info
            b.cores, b.state, b.wait, b.steps = cores, state, wait, steps
            changed[b.inst] = None
            if len(b.promoted) != len(cores):  # trace-only lists; the engine indexes them by core
                b.slot0, b.promoted = ["running"] * len(cores), [None] * len(cores)
            if gen is not None:
                trail = rsnap.trails[b]
                have = live_gens.get(b)
                if have is not None and have[0] == trail:
                    gen, ctx = have[1], have[2]
                else:
                    gen, ctx = self._rebuild(b, trail)
                    live_gens[b] = (trail, gen, ctx)
            b.gen, b.ctx = gen, ctx
        if self.barriers:
            for inst in changed:
                inst.barrier_wait = [b for b in inst.blocks if b.state == BARRIER]
        rs = eng.ranks[r]
        if live is None or live.cores != rsnap.cores:
            for c, (running, pending) in zip(rs.cores, rsnap.cores, strict=True):
                if c.running is not running or c.pending is not pending:
                    c.running, c.pending = running, pending
                    rs.refresh(c)
        if live is None or live.queues != rsnap.queues:
            normal, sync, early, early_sync, occ = rsnap.queues
            for s, q, y, e, o in zip(_SHAPES, normal, sync, early, occ, strict=True):
                rs.normal[s] = deque(q)
                rs.sync[s] = deque(y)
                rs.early[s] = deque(e)
                rs.early_occ[s] = o
            rs.early_sync = deque(early_sync)
        rs.dirty = False
        self.live_ranks[r] = rsnap

    def _restore_memory(self, mem: tuple[bytes, ...]) -> None:
        live, views = self.live, self.views
        for i, want in enumerate(mem):
            if live[i] is not want:
                if live[i] != want:
                    views[i][:] = want
                live[i] = want

    def _rebuild(self, b: Block, trail: tuple) -> tuple[Any, Any]:
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
        return self.eng.runnable_blocks()

    def complete(self) -> bool:
        return self.eng.n_complete == len(self.insts)

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

    def representatives(self, options: list[Any], picked: dict[Core, int] | None) -> list[int]:
        """Indices of the placement options no core permutation maps onto an earlier one."""
        seen: set[Any] = set()
        reps = []
        for i, o in enumerate(options):
            sig = self._option_sig(o, picked)
            if sig not in seen:
                seen.add(sig)
                reps.append(i)
        return reps

    def _option_sig(self, option: Core | tuple[Core, ...], picked: dict[Core, int] | None) -> tuple:
        if isinstance(option, tuple):
            aic, v0, v1 = option
            a, b = _slot_sig(v0, picked), _slot_sig(v1, picked)
            return (aic.thread, _slot_sig(aic, picked), min(a, b), max(a, b))
        c = option
        aic, v0, v1 = self.eng.ranks[c.rank].clusters[c.cluster]
        if c.kind == "aic":
            a, b = _slot_sig(v0, picked), _slot_sig(v1, picked)
            rest = (min(a, b), max(a, b))
        else:
            rest = (_slot_sig(aic, picked), _slot_sig(v1 if c is v0 else v0, picked))
        return (c.kind, c.thread, _slot_sig(c, picked), rest)


def _slot_sig(c: Core, picked: dict[Core, int] | None = None) -> tuple[int, int]:
    if picked and c in picked:
        return (-1 - picked[c], 0)
    r, p = c.running, c.pending
    return (id(r) if r is not None else 0, id(p) if p is not None else 0)
