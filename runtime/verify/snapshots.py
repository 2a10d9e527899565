"""Snapshots of the explored engine, their fingerprints, and going back to them.

A snapshot is memory (one ``bytes`` object per (rank, tensor) array, shared with the parent
where unchanged) plus one :class:`RankSnap` per rank: its task instances' counters, its live
blocks' records, its cores' slots and its queues.  A transition changes the records of the rank
it stepped (and of ranks it notified), so the other ranks' :class:`RankSnap` objects are shared
with the parent, and a restore from a known live snapshot writes only the entries that differ.

The fingerprint hashes memory, every rank's records with each suspended generator's *trail*
(what it read at each step) instead of the generator, and the core occupancy up to the
permutations that keep the device's structure (:meth:`Snapshots._canonical_cores`): the two AIV
cores of a cluster, the clusters of a scheduler thread, the threads owning equally many
clusters.  Dispatch options that such a permutation maps onto each other are tried once
(:meth:`Snapshots.representatives`).

:class:`Snapshots` is a piece of :class:`runtime.verify.space.Space` (``space.snapshots``): it
owns which snapshot each rank's live records equal and the canonical core forms seen so far,
and reads and writes the space's live state - the engine's records, memory, trails and live
generators (a generator a restore cannot reuse is rebuilt by ``space.rebuild``).
"""

from __future__ import annotations

from collections import deque
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from runtime.machine import BARRIER, DONE, INST_STATE, RUN, SPIN, WAKE, Block, Core, TaskInst

if TYPE_CHECKING:  # pragma: no cover
    from runtime.verify.space import Space

_inst_get = attrgetter(*INST_STATE)
_COMPLETE = INST_STATE.index("complete")


def _set_inst(inst: TaskInst, f: tuple) -> None:
    """Write the fields ``_inst_get`` read, in the order of ``INST_STATE`` (one unpacking
    assignment, no loop: restores are the explorer's hot path)."""
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


class Snapshots:
    """Capture, fingerprint and restore of the live state of ``space`` (see the module docstring)."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.eng = space.eng
        self.ranks = space.ranks
        self.live_ranks: list[RankSnap | None] = [None] * space.ranks  # snapshot each rank's records equal
        self._core_forms: dict[tuple, tuple] = {}

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
        snap.counters = (eng.tasks.n_complete, tuple(eng.tasks.round_left))
        snap.mem = tuple(self.space.live)
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
        trails = self.space.trails
        kept: dict[Block, tuple] = {}
        runnable = []
        spinners = []
        old_insts = prev.insts if prev is not None else None
        old_blocks = prev.blocks if prev is not None else {}
        for k, inst in enumerate(self.space.rank_insts[r]):
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
        self.space.trails = trails
        eng.runnable = runnable
        eng.spinners = spinners
        tasks = eng.tasks
        tasks.n_complete, round_left = snap.counters
        tasks.round_left = list(round_left)
        tasks.completions.clear()
        self._restore_memory(snap.mem)

    def _restore_rank(self, r: int, rsnap: RankSnap) -> None:
        """Put rank ``r``'s records back to ``rsnap``; where the live records are known (a
        snapshot of them), only the entries that differ are written."""
        eng = self.eng
        space = self.space
        live = self.live_ranks[r]
        live_gens = space.live_gens
        pool = space.inst_blocks
        changed: dict[TaskInst, None] = {}
        for k, (inst, f) in enumerate(zip(space.rank_insts[r], rsnap.insts, strict=True)):
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
                    gen, ctx = space.rebuild(b, trail)
                    live_gens[b] = (trail, gen, ctx)
            b.gen, b.ctx = gen, ctx
        if space.barriers:
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
        live, views = self.space.live, self.space.views
        for i, want in enumerate(mem):
            if live[i] is not want:
                if live[i] != want:
                    views[i][:] = want
                live[i] = want

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
