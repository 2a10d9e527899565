"""Dispatch: where ready blocks go (docs/runtime-semantics.md §5, §6).

One pass per rank whose state changed, in the runtime's priority order:

1. normal ``sync_start`` cohorts (MIX, AIC, AIV): all blocks onto idle cores at once, or none.
   A cohort that does not fit *drains* the shapes it needs (no other dispatch to them on that
   rank) so that cores free up for it - which is also how a cohort stuck behind gated or
   spinning cores livelocks (D4);
2. normal ready queues MIX, then AIC, then AIV.  Each block goes to an idle core (IDLE stage)
   or, when the shape has none, to the free pending slot of a busy core (PENDING stage).  A MIX
   block takes a fully idle cluster, or a cluster whose busy cores all have a free pending slot;
3. early-dispatch queues, per shape only when that shape's normal lanes (ready + sync) are
   empty: early sync cohorts, then MIX, AIC, AIV candidates, placed *gated* with the same
   IDLE-then-PENDING rule.

The policy picks among legal slots.  ``fifo`` takes the lowest index; ``random`` a uniform
choice; ``adversarial`` may also use the racy placements of the multi-threaded scheduler (a
thread with no idle core of its own runs its PENDING stage while another thread has idle
cores) and prefers the worst slot by :meth:`Dispatcher.badness`.

The dispatcher only places: it reads the queues :class:`runtime.lifecycle.TaskLifecycle` fills,
asks the lifecycle to evaluate predicates and to resolve a fully published ``early_resolve``
producer, and hands a block that holds all its cores (and is not gated) to the engine's
``start`` callback (:class:`runtime.scheduler.Engine` owns time and block execution).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.lifecycle import TaskLifecycle
from runtime.machine import BARRIER, SPIN, Block, Core, RankState, TaskInst
from runtime.policies import NOTIFIER, WAITER

SHAPE_ORDER = ("mix", "aic", "aiv")
#: Shapes a waiting sync cohort stops dispatch to while it drains cores.
DRAIN = {"aic": ("aic", "mix"), "aiv": ("aiv", "mix"), "mix": ("mix", "aic", "aiv")}


class Dispatcher:
    """Places the blocks of queued task instances on the cores and slots of their rank.

    ``policy`` answers the choice points (a :class:`runtime.policies.Policy`, or the decider of
    an untimed engine); ``fifo`` takes the lowest legal index without asking it; ``racy``
    allows the racy placements of the multi-threaded scheduler.  ``roles`` is the engine's list
    of static and observed roles per task (updated in place as kernels run).  ``new_block``
    makes the record of a placed block (the explorer substitutes one that reuses records).
    """

    def __init__(
        self,
        tasks: TaskLifecycle,
        *,
        policy: Any,
        fifo: bool,
        roles: list[int],
        start: Callable[[Block], None],
    ) -> None:
        self.tasks = tasks
        self.policy = policy
        self.fifo = fifo
        self.racy: bool = policy.racy_advisory
        self.roles = roles
        self.start = start
        self.new_block: Callable[..., Block] = Block

    def dispatch(self, rs: RankState, now: int) -> None:
        """One dispatch pass over rank ``rs`` at time ``now`` (see the module docstring)."""
        rs.dirty = False
        predicate_ok = self.tasks.predicate_ok
        blocked: tuple[str, ...] = ()
        for shape in SHAPE_ORDER:
            q = rs.sync[shape]
            while q:
                inst = q[0]
                if inst.spec.predicate is not None and not inst.pred_done and not predicate_ok(inst):
                    q.popleft()
                    continue
                if not self._place_cohort(rs, inst, False, now):
                    blocked += DRAIN[shape]
                    break
                q.popleft()
                inst.queued = False
        for shape in SHAPE_ORDER:
            q = rs.normal[shape]
            if not q or shape in blocked:
                continue
            while q:
                inst = q[0]
                if inst.spec.predicate is not None and not inst.pred_done and not predicate_ok(inst):
                    q.popleft()
                    continue
                if not self._place_blocks(rs, inst, False, now):
                    break
                q.popleft()
                inst.queued = False
        if not (rs.early_sync or rs.early["mix"] or rs.early["aic"] or rs.early["aiv"]):
            return
        q = rs.early_sync
        while q:
            inst = q[0]
            if not inst.early:
                q.popleft()
                continue
            s = inst.shape
            if s in blocked or rs.normal[s] or rs.sync[s] or not self._place_cohort(rs, inst, True, now):
                break
            q.popleft()
            inst.early = False
        for shape in SHAPE_ORDER:
            q = rs.early[shape]
            if not q or shape in blocked or rs.normal[shape] or rs.sync[shape]:
                continue
            while q:
                inst = q[0]
                if not inst.early:
                    q.popleft()
                    continue
                if not self._place_blocks(rs, inst, True, now):
                    break
                q.popleft()
                inst.early = False

    def _place_blocks(self, rs: RankState, inst: TaskInst, gated: bool, now: int) -> bool:
        """Place blocks of ``inst`` one by one while a legal slot exists; True if all are placed."""
        n = inst.nblocks
        mix = inst.shape == "mix"
        while inst.next_block < n:
            target = self._pick_cluster(rs, inst) if mix else self._pick_core(rs, inst)
            if target is None:
                return False
            self._place(rs, inst, target, gated, now)
        return True

    def _pick_core(self, rs: RankState, inst: TaskInst) -> Core | None:
        kind = inst.shape
        idle = rs.idle[kind]
        pf = rs.pfree[kind]
        cores = rs.by_kind[kind]
        if self.fifo:
            if idle:
                return cores[min(idle)]
            return cores[min(pf)] if pf else None
        if self.racy and rs.n_threads > 1:
            # Racy advisory: a thread with no idle core of its own runs its PENDING stage.
            idle_threads = {cores[i].thread for i in idle}
            opts = [cores[i] for i in sorted(idle | {i for i in pf if cores[i].thread not in idle_threads})]
        else:
            opts = [cores[i] for i in sorted(idle or pf)]
        if not opts:
            return None
        return self.policy.choose(opts, self.roles[inst.si], self.badness)

    def _pick_cluster(self, rs: RankState, inst: TaskInst) -> tuple[Core, ...] | None:
        full = []
        part = []
        for cl in rs.clusters:
            if cl[0].running is None and cl[1].running is None and cl[2].running is None:
                full.append(cl)
            elif all(c.running is None or c.pending is None for c in cl):
                part.append(cl)
        if self.racy and rs.n_threads > 1:
            idle_threads = {cl[0].thread for cl in full}
            opts = full + [cl for cl in part if cl[0].thread not in idle_threads]
            opts.sort(key=lambda cl: cl[0].index)
        else:
            opts = full or part
        if not opts:
            return None
        if self.fifo:
            return opts[0]
        return self.policy.choose(opts, self.roles[inst.si], self.badness)

    def badness(self, option: Core | tuple[Core, ...], role: int) -> int:
        """How bad a placement is for liveness (adversarial policy); higher is worse."""
        cores = option if isinstance(option, tuple) else (option,)
        score = 0
        for c in cores:
            r = c.running
            if r is None:
                s = 2 if role == WAITER else 0
            else:
                bad = r.state in (SPIN, BARRIER) or r.gated or bool(self.roles[r.inst.si] & WAITER)
                s = (3 if role & NOTIFIER else 2) if bad else 1
            score = max(score, s)
        return score

    def _place_cohort(self, rs: RankState, inst: TaskInst, gated: bool, now: int) -> bool:
        """All-or-nothing placement of a sync_start grid onto idle cores (clusters for MIX)."""
        n = inst.nblocks - inst.next_block
        if inst.shape == "mix":
            opts: list[Any] = [cl for cl in rs.clusters if all(c.running is None for c in cl)]
        else:
            cores = rs.by_kind[inst.shape]
            opts = [cores[i] for i in sorted(rs.idle[inst.shape])]
        if len(opts) < n:
            return False
        for target in self.policy.choose_cohort(opts, n):
            self._place(rs, inst, target, gated, now)
        return True

    def _place(
        self, rs: RankState, inst: TaskInst, target: Core | tuple[Core, ...], gated: bool, now: int
    ) -> None:
        cores = target if target.__class__ is tuple else (target,)
        b = self.new_block(inst, inst.next_block, cores, now, gated)
        inst.next_block += 1
        inst.blocks.append(b)
        for c in cores:
            if c.running is None:
                c.running = b
                b.nrun += 1
                b.slot0.append("running")
            else:
                c.pending = b
                b.slot0.append("pending")
            b.promoted.append(None)
            rs.refresh(c)
        if gated:
            rs.early_occ[inst.shape] -= 1
        elif b.nrun == len(cores):
            self.start(b)
        if inst.next_block == inst.nblocks and inst.spec.early_resolve and not inst.resolved:
            self.tasks.resolve(inst)
