"""Explaining a deadlock: who holds which slot, what each stuck block waits for, and the cycle.

When the event heap is empty and tasks remain, the engine hands its state to
:func:`build_report`.  The report lists every block that holds a core slot (spinning on a cell,
gated awaiting producers, waiting at a barrier, parked in a pending slot), every task with
blocks that never got a slot, and - for each spinning wait - where the blocks that would notify
that cell are.  Notifier candidates are, in order of preference: tasks that already notified
that exact cell (the engine logs every notify), tasks that notified that signal at all, tasks
whose code calls ``notify``, and finally any unfinished task of the same round.

It then builds a wait-for graph over blocks and unplaced tasks - spinner -> notifiers, parked
block -> the running block of its core, gated block -> its unfinished producers, barrier block ->
blocks that have not arrived, unplaced task -> the blocks holding the cores of its shape - and
reports the first cycle it finds (e.g. ``wait[0]@rank0 -> push[0]@rank1 -> wait[0]@rank1 ->
push[0]@rank0``), which is the cross-rank handshake deadlock of docs/runtime-semantics.md §15.4.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.machine import BARRIER, DONE, SHAPE_LABEL, SPIN, Block, TaskInst
from runtime.memory import format_cell
from runtime.policies import NOTIFIER

if TYPE_CHECKING:  # pragma: no cover
    from runtime.scheduler import Engine

MAX_NOTIFIERS = 8
MAX_LINES = 40


@dataclass
class StuckBlock:
    """One block holding a slot when the run stopped."""

    task: str
    block: int
    rank: int
    round: int
    core: str
    slot: str
    state: str
    detail: str
    notifiers: list[str] = field(default_factory=list)

    def render(self) -> str:
        head = f"  rank {self.rank} {self.core} {self.slot:<7} {self.task}[{self.block}] round {self.round + 1}: "
        lines = [head + self.detail]
        lines += [f"      would be notified by: {n}" for n in self.notifiers]
        return "\n".join(lines)


@dataclass
class DeadlockReport:
    """Structured deadlock explanation; ``render()`` is the DeadlockError message."""

    program: str
    time: int
    policy: str
    seed: int
    stuck: list[StuckBlock]
    unplaced: list[str]
    not_ready: list[str]
    cycle: list[str]

    def render(self) -> str:
        out = [
            f"deadlock in program {self.program!r} at t={self.time} (policy {self.policy}, seed {self.seed}): "
            "no block can make progress and nothing is scheduled"
        ]
        if self.cycle:
            out.append("cycle: " + " -> ".join(self.cycle))
        out.append("blocks holding core slots:")
        in_cycle = set(self.cycle)
        single = [
            s for s in self.stuck if s.state != "gated" or f"{s.task}[{s.block}]@rank{s.rank}" in in_cycle
        ]
        gated: dict[tuple[int, str, int], list[StuckBlock]] = {}
        for s in self.stuck:
            if s not in single:
                gated.setdefault((s.rank, s.task, s.round), []).append(s)
        out += [s.render() for s in single[:MAX_LINES]] or ["  (none)"]
        if len(single) > MAX_LINES:
            out.append(f"  ... and {len(single) - MAX_LINES} more")
        for (rank, task, rnd), group in gated.items():
            slots = ", ".join(f"{g.core} {g.slot}" for g in group[:6]) + (", ..." if len(group) > 6 else "")
            out.append(
                f"  rank {rank}: {len(group)} gated block(s) of {task} round {rnd + 1} hold {slots}; "
                f"{group[0].detail.split('; ')[-1]}"
            )
        if self.unplaced:
            out.append("blocks without a slot:")
            out += [f"  {u}" for u in self.unplaced[:MAX_LINES]]
        if self.not_ready:
            out.append(f"tasks not ready ({len(self.not_ready)}):")
            out += [f"  {u}" for u in self.not_ready[:10]]
            if len(self.not_ready) > 10:
                out.append(f"  ... and {len(self.not_ready) - 10} more")
        return "\n".join(out)


def _core_key(name: str) -> tuple[str, int]:
    head = name.split("+")[0]
    return head[:3], int(head[3:])


def _tag(x: Block | TaskInst) -> str:
    if isinstance(x, Block):
        return f"{x.name}@rank{x.inst.rank}"
    return f"{_block_range(x)}@rank{x.rank}"


def _block_range(inst: TaskInst) -> str:
    """``n[0]`` or ``push[3..15]``: the blocks of ``inst`` that have no slot yet."""
    lo, hi = inst.next_block, inst.nblocks - 1
    return f"{inst.spec.name}[{lo}]" if lo == hi else f"{inst.spec.name}[{lo}..{hi}]"


def _rnd(inst: TaskInst) -> str:
    return f"round {inst.round + 1}"


def _producers_left(inst: TaskInst) -> str:
    left = [p for p in inst.producers if not p.complete]
    return ", ".join(f"{p.spec.name} ({_rnd(p)})" for p in left) or "none"


def _slot_of(b: Block) -> tuple[str, str]:
    """Core name(s) and slot kind a placed block currently occupies."""
    names = "+".join(c.name for c in b.cores)
    pending = [c for c in b.cores if c.pending is b]
    return names, ("pending" if pending else "running")


def _detail(b: Block) -> str:
    inst = b.inst
    if b.state == SPIN:
        return f"spinning on cell {b.wait.describe()}"
    if b.state == BARRIER:
        return (
            f"waiting at barrier {inst.barrier_gen + 1} with {len(inst.barrier_wait)} of {inst.nblocks} "
            "blocks arrived"
        )
    pend = [c for c in b.cores if c.pending is b]
    parts = []
    if pend:
        behind = ", ".join(f"{c.running.name} on {c.name}" for c in pend if c.running is not None)
        parts.append(f"parked in pending slot behind {behind}")
    elif len(b.cores) > 1 and b.nrun < len(b.cores):
        parts.append("holding part of its cluster")
    if b.gated:
        parts.append(f"gated awaiting producers {_producers_left(inst)}")
    return "; ".join(parts) or "placed, not started"


def _where(b: Block) -> str:
    """Short location of a placed, unfinished block: 'rank 1 parked in pending slot of AIV1 behind wait[0]'."""
    r = b.inst.rank
    pend = [c for c in b.cores if c.pending is b]
    if pend:
        c = pend[0]
        return (
            f"{b.name} rank {r} ({_rnd(b.inst)}) parked in pending slot of {c.name} behind {c.running.name}"
        )
    cores = "+".join(c.name for c in b.cores)
    return f"{b.name} rank {r} ({_rnd(b.inst)}) on {cores}: {_detail(b)}"


def _unplaced(inst: TaskInst) -> str | None:
    """Where the blocks of ``inst`` that have no slot are, or None if all are placed."""
    n = inst.nblocks - inst.next_block
    if n <= 0 or inst.complete:
        return None
    who = f"{_block_range(inst)} rank {inst.rank} ({_rnd(inst)})"
    lab = SHAPE_LABEL[inst.shape]
    if inst.queued:
        kind = (
            "sync_start queue (needs all blocks on idle cores at once)"
            if inst.spec.sync_start
            else "ready queue"
        )
        return f"{who} in {lab} {kind}"
    if inst.early:
        return f"{who} in {lab} early-dispatch queue, awaiting producers {_producers_left(inst)}"
    return f"{who} not ready: awaiting producers {_producers_left(inst)}"


def _notifier_insts(eng: Engine, b: Block) -> list[TaskInst]:
    w = b.wait
    cell = (b.inst.rank, w.signal, w.key)
    live = [i for i in eng.insts if not i.complete and i is not b.inst]
    srcs = eng.notify_log.get(cell) or set()
    cands = [i for i in live if (i.si, i.rank) in srcs]
    if not cands:
        sis = eng.sig_notifiers.get(w.signal, set())
        cands = [i for i in live if i.si in sis]
    if not cands:
        cands = [i for i in live if eng.roles[i.si] & NOTIFIER]
    if not cands:
        cands = [i for i in live if i.round == b.inst.round]
    earlier = [i for i in cands if i.round <= b.inst.round]
    cands = earlier or cands
    cands.sort(key=lambda i: (abs(i.round - b.inst.round), i.rank == b.inst.rank, i.rank, i.si))
    return cands


def _open_nodes(inst: TaskInst) -> list[Any]:
    """Unfinished blocks of ``inst``, plus the task itself if some blocks have no slot."""
    nodes: list[Any] = [x for x in inst.blocks if x.state != DONE]
    if inst.next_block < inst.nblocks:
        nodes.append(inst)
    return nodes


def build_report(eng: Engine) -> DeadlockReport:
    """Describe the stuck state of ``eng`` (called when no event is left and tasks remain)."""
    placed: list[Block] = []
    seen: set[int] = set()
    for rs in eng.ranks:
        for c in rs.cores:
            for b in (c.running, c.pending):
                if b is not None and id(b) not in seen:
                    seen.add(id(b))
                    placed.append(b)
    edges: dict[int, list[Any]] = {}
    stuck = []
    for b in placed:
        core, slot = _slot_of(b)
        sb = StuckBlock(b.inst.spec.name, b.index, b.inst.rank, b.inst.round, core, slot, "", _detail(b))
        out: list[Any] = []
        if b.state == SPIN:
            sb.state = "spinning"
            for ni in _notifier_insts(eng, b):
                out += _open_nodes(ni)
                for x in ni.blocks:
                    if x.state != DONE and len(sb.notifiers) < MAX_NOTIFIERS:
                        sb.notifiers.append(_where(x))
                u = _unplaced(ni)
                if u and len(sb.notifiers) < MAX_NOTIFIERS:
                    sb.notifiers.append(u)
            if not sb.notifiers:
                sb.notifiers.append(f"no unfinished task can notify {format_cell(b.wait.signal, b.wait.key)}")
        elif b.state == BARRIER:
            sb.state = "barrier"
            out += [x for x in b.inst.blocks if x.state != DONE and x not in b.inst.barrier_wait]
            if b.inst.next_block < b.inst.nblocks:
                out.append(b.inst)
        else:
            sb.state = "gated" if b.gated else "parked"
            out += [c.running for c in b.cores if c.pending is b and c.running is not None]
            if b.gated:
                for p in b.inst.producers:
                    if not p.complete:
                        out += _open_nodes(p)
        edges[id(b)] = out
        stuck.append(sb)
    order = {"spinning": 0, "barrier": 1, "parked": 2, "gated": 3}
    stuck.sort(key=lambda s: (order[s.state], s.rank, _core_key(s.core), s.slot != "running"))
    unplaced, not_ready = [], []
    for inst in eng.insts:
        if inst.complete or inst.next_block >= inst.nblocks:
            continue
        line = _unplaced(inst)
        if inst.queued or inst.early:
            unplaced.append(line)
            rs = eng.ranks[inst.rank]
            kinds = ("aic", "aiv") if inst.shape == "mix" else (inst.shape,)
            holders = [c.running for k in kinds for c in rs.by_kind[k] if c.running is not None]
            edges[id(inst)] = holders + (
                [p for q in inst.producers if not q.complete for p in _open_nodes(q)]
            )
        else:
            not_ready.append(line)
            edges[id(inst)] = [n for p in inst.producers if not p.complete for n in _open_nodes(p)]
    cycle = _find_cycle([b for b in placed if b.state in (SPIN, BARRIER)] + placed, edges)
    return DeadlockReport(
        eng.program.name, eng.now, eng.policy.name, eng.seed, stuck, unplaced, not_ready, cycle
    )


def _find_cycle(starts: list[Any], edges: dict[int, list[Any]]) -> list[str]:
    """First cycle reachable from ``starts`` in the wait-for graph, as node tags (closed)."""
    color: dict[int, int] = {}
    for s in starts:
        if color.get(id(s)):
            continue
        path: list[Any] = [s]
        iters = [iter(edges.get(id(s), ()))]
        color[id(s)] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                color[id(path[-1])] = 2
                path.pop()
                iters.pop()
                continue
            c = color.get(id(nxt), 0)
            if c == 1:
                i = next(k for k, p in enumerate(path) if p is nxt)
                cyc = path[i:]
                j = next((k for k, x in enumerate(cyc) if isinstance(x, Block) and x.state == SPIN), 0)
                cyc = cyc[j:] + cyc[:j]
                return [_tag(x) for x in cyc + cyc[:1]]
            if c == 0:
                color[id(nxt)] = 1
                path.append(nxt)
                iters.append(iter(edges.get(id(nxt), ())))
    return []
