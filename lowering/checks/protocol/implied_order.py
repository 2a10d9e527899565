"""The order a wait's count implies: a credit the wait cannot pass without comes first.

The runtime orders tasks by their edges only, but a blocking wait orders more: when a wait
cannot pass before notifier N's credit lands, N has executed that notify before the waiting
task completes, so before any of its direct successors starts. No edge says so, yet every
schedule the runtime admits respects it -- *signal-implied order*. A reuse wait that needs
every earlier call's consumption credit orders each earlier call's consumer before the next
call's writers this way (``dispatch`` after ``moe_consumed`` of the call before it).

A credit is *needed* when the threshold is exact -- the sum of every credit that can land
before the wait, as D103 judges it -- and every credit is positive: then the wait passes only
once all of them have landed. The implied edge N -> S (S a direct successor of the waiting
task) is drawn only where that is certain:

- the graph's rounds do not overlap (``rounds.rounds_overlap``: a PyPTO program runs one
  dispatch at a time per chip); in a DSL layer a later round's credit can land early;
- only the waiting rank credits the cell, and no Set, clear or retire that can land before the
  wait touches it (a peer may start its next dispatch, and send its next credits, early);
- every block of N sends the needed credit, and that notify is N's last signal op (no wait or
  barrier after it): once S starts, N blocks nothing any more;
- N is submitted before S (the order the reachability sets are built in), and it holds at every
  admissible parameter point.

A threshold computed from data is taken as exact: that is the gap-free call ordinal D103's note
names as what the program assumes.

Used where a rule asks whether two tasks can be in flight (or spin) together -- D101, D109,
D116 through :func:`progress` -- and whether a notify can land before a wait
(:func:`relation`, the counting model). Not by the race rules: what N does after its notify,
and stores not fenced before it, are not ordered by the wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from lowering.checks.order import DescendantSet, successors, unordered
from lowering.checks.points import admissible_envs
from lowering.checks.protocol.instances import (
    DataThreshold,
    Deposit,
    Unchecked,
    Uncountable,
    adds_around,
    epoch_name,
    set_writes,
    threshold,
    wait_cells,
)
from lowering.checks.reach import Ancestors, Reach, ReachMap
from lowering.checks.rounds import rounds_overlap
from lowering.checks.rule import CheckContext
from lowering.ir import Graph, SignalOp, Task


def progress(graph: Graph, ctx: CheckContext) -> Reach:
    """The order of the graph's edges plus the signal-implied edges (cached)."""
    r = ctx.cache.get("progress")
    if r is None:
        extra = implied_edges(graph, ctx)
        r = ctx.cache["progress"] = Reach(graph, extra) if extra else ctx.reach
    return r


def progress_ancestors(graph: Graph, ctx: CheckContext) -> Mapping[str, Set[str]]:
    """The tasks each task starts after, in :func:`progress` order."""
    hit = ctx.cache.get("progress.ancestors")
    if hit is None:
        hit = ctx.cache["progress.ancestors"] = Ancestors(progress(graph, ctx))
    return hit


def progress_descendants(graph: Graph, ctx: CheckContext) -> Mapping[str, Set[str]]:
    """The tasks that start after each task, in :func:`progress` order."""
    hit = ctx.cache.get("progress.descendants")
    if hit is None:
        hit = ctx.cache["progress.descendants"] = ReachMap(progress(graph, ctx), DescendantSet)
    return hit


def can_overlap(graph: Graph, ctx: CheckContext, a: str, b: str) -> bool:
    """Both can be in flight in one dispatch (``order.unordered``, in :func:`progress` order)."""
    return unordered(ctx, a, b, progress(graph, ctx))


def relation(ctx: CheckContext, a_task: str, a_order: int, b_task: str, b_order: int) -> str:
    """``before`` / ``after`` / ``unordered``: where op ``a`` runs relative to op ``b``, in
    :func:`progress` order."""
    return _relation(progress_ancestors(ctx.graph, ctx), a_task, a_order, b_task, b_order)


def _relation(anc: Mapping[str, Set[str]], a_task: str, a_order: int, b_task: str, b_order: int) -> str:
    if a_task == b_task:
        return "before" if a_order < b_order else "after"
    if a_task in anc[b_task]:
        return "before"
    if b_task in anc[a_task]:
        return "after"
    return "unordered"


def implied_edges(graph: Graph, ctx: CheckContext) -> list[tuple[str, str]]:
    """(N, S): N's needed credit lands before S, a direct successor of a task waiting for it."""
    if rounds_overlap(graph):
        return []
    after = successors(graph, ctx)
    envs = admissible_envs(graph, ctx)
    out: list[tuple[str, str]] = []
    for task in graph.tasks:
        if not after[task.name]:
            continue
        needed: set[str] = set()
        for wait in task.waits:
            per_point = [_needed(graph, ctx, task, wait, env) for env in envs]
            needed |= set.intersection(*per_point)
        for name in sorted(needed):
            n = graph.task(name)
            out += [(name, s) for s in after[task.name] if n.order < graph.task(s).order]
    return out


def _needed(graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int]) -> set[str]:
    """The notifiers ``wait`` cannot pass without, at ``env`` (rank 0 stands for every rank)."""
    if wait.cmp != "ge":
        return set()
    try:
        try:
            epoch = epoch_name(wait.expected)
        except DataThreshold:
            epoch = _DATA  # the gap-free ordinal D103 names: taken as exact
        instances = []  # (cell, thresholds at epochs 0, 1, 2), taken as each instance is enumerated
        for rank, cell, scoped, _b in wait_cells(graph, task, wait, env):
            if rank == 0:
                f = (
                    None
                    if epoch is _DATA
                    else tuple(threshold(wait.expected, scoped, epoch, e) for e in (0, 1, 2))
                )
                instances.append((cell, f))
        cells = {cell for cell, _ in instances}
        if any(s.dst == 0 and s.cell in cells for s in set_writes(graph, ctx, wait.signal, env)):
            return set()
        landed, into = _credits(graph, ctx, task, wait, env, cells)
        if not _exact(instances, landed, into):
            return set()
    except (Uncountable, Unchecked, _NotOwnCell):
        return set()
    return {name for name in {d.task for d in landed} if _sends_last(graph.task(name), wait, landed)}


class _NotOwnCell(Exception):
    """A cell a peer credits, or one a retire can lower before the wait passes."""


def _credits(
    graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int], cells: set
) -> tuple[list[Deposit], list[Deposit]]:
    """(the credits into rank 0's ``cells`` that can land before ``wait`` passes, every deposit
    into them). A notify ordered after the wait cannot change what it sees, so it may be
    uncountable (a retire sized from data); only this rank may credit the cells."""
    anc = ctx.ancestors  # the graph's own order: implied edges are drawn from it
    landed: list[Deposit] = []
    into: list[Deposit] = []

    def is_after(name: str, order: int) -> bool:
        return _relation(anc, name, order, task.name, wait.order) == "after"

    for d, after in adds_around(graph, task, wait, env, is_after):
        if d.dst != 0 or d.cell not in cells:
            continue
        if d.src != d.dst or (d.value <= 0 and not after):
            raise _NotOwnCell
        into.append(d)
        if d.value > 0 and not after:
            landed.append(d)
    return landed, into


_DATA = object()  # the epoch of a threshold computed from data


def _exact(instances: list[tuple], landed: list[Deposit], into: list[Deposit]) -> bool:
    """Every wait instance's threshold is the sum of the credits that can have landed: this
    round's ``landed`` plus what earlier rounds left (their net), epochs counted from 1 or 0.
    An instance with no thresholds (computed from data) is taken as exact."""
    for cell, f in instances:
        if f is None:
            continue
        prefix = sum(d.value for d in landed if d.cell == cell)
        net = sum(d.value for d in into if d.cell == cell)
        if not any(f[base] == prefix and f[base + 1] == prefix + net for base in (0, 1)):
            return False
    return True


def _sends_last(notifier: Task, wait: SignalOp, landed: list[Deposit]) -> bool:
    """Every block of ``notifier`` sends a needed credit, and its notifies among them come
    after every other signal op and barrier of the task."""
    ops = [d for d in landed if d.task == notifier.name]
    if {d.block for d in ops} != set(range(notifier.blocks)):
        return False
    first = min(d.op.order for d in ops)
    last_ops = {d.op.order for d in ops}
    return all(s.order < first or s.order in last_ops for s in notifier.signals) and all(
        b.order < first for b in notifier.barriers
    )
