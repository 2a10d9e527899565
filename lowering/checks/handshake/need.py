"""Shared handshake analysis: which tasks a blocking wait needs, and who can park whom.

Need(W) (docs/runtime-semantics.md §15.5, R1) is the set of tasks whose execution is necessary for
the wait condition of W: the notifiers that can feed W's cells in the same epoch, under rank
symmetry (a peer's notifier is the local task of the same name), plus, transitively, their
ancestors and the needs of the waits those tasks contain. Not a rule module (no ``CODE``).
"""

from __future__ import annotations

from itertools import chain

from lowering.checks.points import admissible_envs, group_envs, signal_exprs
from lowering.checks.protocol.counting import analyse_wait, reuse_wait
from lowering.checks.protocol.implied_order import progress_ancestors, progress_descendants
from lowering.checks.protocol.instances import Unchecked, Uncountable
from lowering.checks.rule import CheckContext
from lowering.checks.signals import NotCountable, env_key, notifiers_of, notify_counts, waited_cells
from lowering.ir import Graph, SignalOp, Task
from lowering.symbolic import Const

# The physical cores a block of each shape occupies (a MIX block takes a whole cluster).
_UNITS = {"aic": frozenset({"aic"}), "aiv": frozenset({"aiv"}), "mix": frozenset({"aic", "aiv"})}


def needed_notifiers(graph: Graph, waiter: Task, wait: SignalOp, env: dict[str, int]) -> set[str]:
    """Tasks whose notifies can feed the cells ``wait`` spins on (all notifiers if unsure).

    Only credits feed a wait: a notify that adds a negative value (the retire of consumed
    credits, ``notify got[q] @ rank += -N``) or a zero-write clear takes a cell down, and no
    wait needs it to run. Set notifies other than clears may raise a cell and count."""
    candidates = notifiers_of(graph, wait.signal)
    try:
        cells = {cell for (rank, cell) in waited_cells(graph, waiter, wait, env) if rank == 0}
        needed = set()
        for task, op in candidates:
            if _is_clear(op):
                continue
            counts = notify_counts(graph, task, op, env)
            credit = op.op == "set" or any(v > 0 for v in counts.values())
            if credit and any(dst == 0 and cell in cells for (_src, dst, cell) in counts):
                needed.add(task.name)
        return needed
    except NotCountable:
        return {task.name for task, op in candidates if not _is_clear(op)}


def waiters(graph: Graph) -> list[Task]:
    """Tasks that contain a blocking wait, in submission order."""
    return [t for t in graph.tasks if t.waits]


def _is_clear(op: SignalOp) -> bool:
    return op.op == "set" and op.value == Const(0)


def same_epoch_notifiers(
    graph: Graph, ctx: CheckContext, waiter: Task, wait: SignalOp, env: dict[str, int]
) -> set[str]:
    """Notifiers of ``wait``'s cells that can release it in the current epoch.

    Left out: tasks that run after the waiter (they feed a later epoch: a credit for the next
    round) and tasks whose only notifies on the signal are zero-write clears; and every
    notifier when the wait lags a round (``CellCount.lags``: it needs only what the earlier
    rounds deposited, as the wait before a window is reused does).
    """
    if lags_a_round(graph, ctx, waiter, wait, env):
        return set()
    after = progress_descendants(graph, ctx)[waiter.name]
    out = set()
    for name in needed_notifiers(graph, waiter, wait, env):
        if name in after:
            continue
        ops = [op for op in graph.task(name).notifies if op.signal == wait.signal]
        if ops and all(_is_clear(op) for op in ops):
            continue
        out.add(name)
    return out


def lags_a_round(graph: Graph, ctx: CheckContext, waiter: Task, wait: SignalOp, env: dict[str, int]) -> bool:
    """``wait`` is a reuse wait (``counting.reuse_wait``): the deposits of the earlier rounds
    alone satisfy it."""
    key = ("lags", waiter.name, wait.order, env_key(env))
    if key not in ctx.cache:
        try:
            cells = analyse_wait(graph, ctx, waiter, wait, env)
        except (Uncountable, Unchecked):
            cells = []
        ctx.cache[key] = reuse_wait(graph, ctx, waiter, wait, cells)
    return ctx.cache[key]


def notifiers_needed(graph: Graph, ctx: CheckContext, waiter: Task) -> set[str]:
    """Tasks whose notifies can feed any wait of ``waiter`` in its epoch, at any admissible point."""
    key = ("notifiers_needed", waiter.name)
    if key not in ctx.cache:
        out: set[str] = set()
        for wait in waiter.waits:
            exprs = signal_exprs(waiter, wait)
            for task, op in notifiers_of(graph, wait.signal):
                exprs += signal_exprs(task, op)
            for env, _ in group_envs(graph, admissible_envs(graph, ctx), exprs):
                out |= same_epoch_notifiers(graph, ctx, waiter, wait, env)
        ctx.cache[key] = out
    return ctx.cache[key]


def need(graph: Graph, ctx: CheckContext, waiter: Task) -> set[str]:
    """Need(W): needed notifiers, their ancestors, and the needs of waits among them."""
    key = ("need", waiter.name)
    if key in ctx.cache:
        return ctx.cache[key]
    out: set[str] = set()
    seen: set[str] = set()
    stack = [waiter]
    while stack:
        w = stack.pop()
        if w.name in seen:
            continue
        seen.add(w.name)
        for name in notifiers_needed(graph, ctx, w):
            if name in out:
                continue  # then so are its ancestors: they are ancestors of what brought it in
            for t in chain((name,), progress_ancestors(graph, ctx)[name]):
                if t not in out:
                    out.add(t)
                    task = graph.task(t)
                    if task.waits:
                        stack.append(task)
    ctx.cache[key] = out
    return out


def self_exempt(task: Task, signal: str) -> bool:
    """Its notifies on ``signal`` all come before its first wait, and no block of it can be
    parked behind a spinning sibling: a single block, or a ``sync_start`` cohort, which the
    runtime places on idle cores all at once (R1)."""
    notifies = [s.order for s in task.notifies if s.signal == signal]
    waits = [s.order for s in task.waits if s.signal == signal]
    return (task.blocks == 1 or task.sync_start) and bool(notifies) and max(notifies) < min(waits)


def notifies_after(task: Task, wait: SignalOp) -> bool:
    """A single block whose notifies on the waited signal all come after ``wait``: its own
    credit is a later phase, and each peer's copy comes after the peer's instance of the wait,
    so a wait that needed it this round would need the peer to pass first, and the peer, by
    symmetry, this one -- a count D103 judges (``counting`` leaves such credits out), not a
    notifier starved by a spinning sibling: there is none."""
    notifies = [s.order for s in task.notifies if s.signal == wait.signal]
    return task.blocks == 1 and bool(notifies) and min(notifies) > wait.order


def shares_cores(a: Task, b: Task) -> bool:
    """Whether a block of ``a`` can sit in the pending slot of a core running ``b``."""
    return bool(_UNITS[a.core] & _UNITS[b.core])
