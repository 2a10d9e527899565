"""The counting model shared by the protocol rules.

A signal cell is an INT32 counter on one rank. In one round of the layer (epoch ``e``, the
runtime scalar the waits are written with) every AtomicAdd notify instance adds its value
to cell ``sig[index]`` of its peer. Every rank runs the same graph, so the instances are
enumerated over ranks x blocks x loop iterations at one parameter point, with conditions,
peers, cells and values evaluated exactly by the one enumerator, ``lowering.checks.signals``
(``instances`` keeps the block and the op each instance comes from).

For a wait ``W`` on cell ``c`` of rank ``r``:

- ``prefix`` is what the notifies of one round that are not ordered after ``W`` deposit
  into ``(r, c)``: the notifies ``W`` has to observe in its round. A notify is *after* ``W``
  when its task descends from ``W``'s task (through edges or the order a wait's count
  implies, ``implied_order``), or sits later in the same task; everything else (ancestors,
  unordered tasks, peers' copies of both) counts.
- ``net`` is what all notifies of one round deposit into ``(r, c)`` (credits minus
  retires), or 0 when a ``notify sig[..] @ rank = 0`` clear resets the cell every round.
- The counter holds ``prefix + (e - 1) * net`` when round ``e``'s notifies for ``W`` have
  all arrived, so that is the threshold ``W`` must use. For the usual handshake
  (``net == prefix``) it is ``e * prefix``.

A count that depends on data (a data-dependent condition, trip count, peer, cell or value,
a notifier task with a ``when`` predicate, or one read once from a data-sized orchestration
loop that does not enclose the wait) raises :class:`Uncountable`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from lowering.body import RemoteStoreS, nested_stmts
from lowering.checks.index import notifiers
from lowering.checks.order import successors
from lowering.checks.protocol.implied_order import relation
from lowering.checks.protocol.instances import (
    Deposit,
    SetWrite,
    Unchecked,
    Uncountable,
    adds_around,
    deposits,
    epoch_name,
    evaluate_or_raise,
    expr_text,
    set_writes,
    signal_key,
    threshold,
    wait_cells,
)
from lowering.checks.rule import CheckContext
from lowering.ir import Access, Graph, SignalOp, Task
from lowering.source import Span
from lowering.symbolic import SCALAR, free_symbols


def _countable_for(graph: Graph, waiter: Task, d: Deposit) -> None:
    """Raise Uncountable when ``d``'s task stands for an unknown number of tasks the waiter does
    not share: read once from an orchestration loop that does not also enclose the waiter, so
    how many of its instances the wait sees is unknown. Inside the same loops the wait sees one
    per iteration, as a round sees its own."""
    task = graph.task(d.task)
    if not set(task.repeated) <= set(waiter.repeated):
        raise Uncountable(
            f"task {task.name} stands for an unknown number of tasks (an orchestration loop whose trip count "
            f"depends on data)",
            task.name,
            d.op.span,
        )


def observed(
    graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int]
) -> list[Deposit]:
    """The AtomicAdd instances ``wait`` observes in its round, into the cells it spins on: the
    notifies not ordered after it (a peer's retire counts, as in :func:`analyse_wait`). For a
    wait whose threshold is not countable (:class:`DataThreshold`): what comes after the wait
    -- a retire whose size is read from data, say -- cannot change what it sees, so only
    these have to be countable. Raises Uncountable when one of them is not."""
    cells = {(rank, cell) for rank, cell, _s, _b in wait_cells(graph, task, wait, env)}
    out: list[Deposit] = []
    for d, after in adds_around(graph, task, wait, env, _after(ctx, task, wait)):
        if (d.dst, d.cell) in cells and (not after or (d.src != d.dst and d.value < 0)):
            _countable_for(graph, task, d)
            out.append(d)
    return out


def _after(ctx: CheckContext, task: Task, wait: SignalOp):
    """Whether a notify (its task, its op order) is ordered after ``wait``."""
    return lambda name, order: relation(ctx, name, order, task.name, wait.order) == "after"


# ------------------------------------------------------------------ the per-cell account


@dataclass
class CellCount:
    """What one wait instance sees of one cell, per round."""

    rank: int
    cell: tuple[int, ...]
    f1: int  # threshold at epoch 1
    f2: int  # threshold at epoch 2
    prefix: int  # deposits the wait must observe in its round
    net: int  # what one round leaves in the cell (0 when it is cleared every round)
    credits: int  # positive deposits of one round (all notifies)
    cleared: bool
    flag: bool  # the cell is also written by a non-zero Set
    flag_grows: bool  # some Set value involves a runtime scalar
    epoch: str | None
    contributors: dict[str, list[Deposit]] = field(default_factory=dict)

    @property
    def slope(self) -> int:
        return self.f2 - self.f1

    def required(self, e: int) -> int:
        return self.prefix + (e - 1) * self.net

    @property
    def lags(self) -> bool:
        """The threshold never asks for more than the earlier rounds left in the cell (at most
        ``(e - 1) * net`` at epoch e): the wait needs none of this round's deposits."""
        return self.f1 <= 0 and self.slope <= self.net


def reuse_wait(graph: Graph, ctx: CheckContext, waiter: Task, wait: SignalOp, cells: list[CellCount]) -> bool:
    """A wait for the credits of earlier rounds before a peer's window is overwritten.

    Its threshold lags (every cell: ``CellCount.lags``) and what it gates is a remote store:
    the waiting task stores to a peer after the wait, or it is a task of waits alone whose
    direct successors do. A lagging wait that gates a read of published data is an off-by-one
    instead, and stays D103's."""
    if not cells or not all(c.lags for c in cells):
        return False
    if any(a.peer is not None and a.writes and a.order > wait.order for a in waiter.accesses):
        return True
    if any(a.mode != "anchor" for a in waiter.accesses):
        return False
    return any(
        a.peer is not None and a.writes
        for name in successors(graph, ctx)[waiter.name]
        for a in graph.task(name).accesses
    )


def deferred_to_d113(c: CellCount) -> bool:
    """A threshold that is right for round 1 but does not grow on a persistent counter."""
    return c.slope == 0 and c.net > 0 and c.f1 == c.prefix


def mismatch(c: CellCount, epoch_counts: str) -> int | None:
    """The first epoch (1 or 2) at which the threshold is wrong, or None (D103's judgement)."""
    if c.flag or c.credits == 0 or deferred_to_d113(c):
        return None  # flags: D111/D113; cells nothing notifies: D106; no epoch growth: D113
    # A PyPTO epoch is a call id that restarts at every dispatch: a cell cleared every
    # dispatch only ever meets the first call's threshold (Graph.epoch_counts).
    epochs = (1,) if c.cleared and epoch_counts == "calls" else (1, 2)
    for e in epochs:
        if (c.f1 if e == 1 else c.f2) != c.required(e):
            return e
    return None


def _from_zero(c: CellCount) -> CellCount:
    """``c`` with the epoch scalar counted from 0: round e passes e - 1."""
    return replace(c, f1=2 * c.f1 - c.f2, f2=c.f1)


def epoch_base(graph: Graph, ctx: CheckContext, epoch: str | None) -> int:
    """The value a PyPTO program passes for its epoch scalar at the first call: 1, or 0.

    In a PyPTO graph the epoch is a scalar argument the caller chooses (``Graph.epoch_counts ==
    "calls"``); docs/runtime-semantics.md §7.3 describes 1-based protocol epochs (``moe_epoch *
    N_LOCAL``), but a program may count its calls from 0 and wait for ``epoch + 1``. The base
    is the program's: 0 when every wait written with the scalar (reuse waits aside) is right
    counted from 0 and some is wrong counted from 1; otherwise 1. All waits of the scalar are
    judged together, so one consistent program passes and an inconsistent one still fails."""
    if epoch is None or graph.epoch_counts != "calls":
        return 1
    key = ("protocol.epoch_base", epoch)
    if key not in ctx.cache:
        ok = {0: True, 1: True}
        env = graph.env()
        for task in graph.tasks:
            for wait in task.waits:
                try:
                    if epoch_name(wait.expected) != epoch:
                        continue
                    cells = _analyse(graph, ctx, task, wait, env)
                except (Uncountable, Unchecked):
                    continue
                for base in (0, 1):
                    counted = cells if base == 1 else [_from_zero(c) for c in cells]
                    if not reuse_wait(graph, ctx, task, wait, counted) and any(
                        mismatch(c, graph.epoch_counts) is not None for c in counted
                    ):
                        ok[base] = False
        ctx.cache[key] = 0 if ok[0] and not ok[1] else 1
    return ctx.cache[key]


def analyse_wait(
    graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int]
) -> list[CellCount]:
    """One :class:`CellCount` per distinct (rank, cell, threshold) the wait can spin on, its
    thresholds taken at the program's epoch base (:func:`epoch_base`).

    Raises :class:`Uncountable` (a count depends on data) or :class:`Unchecked`. Kept per wait
    and per distinct value of what its signal's ops read (``instances.signal_key``).
    """
    key = ("protocol.wait", task.name, wait.order, wait.span, signal_key(graph, wait.signal, env))
    found = ctx.cache.get(key)
    if found is None:
        try:
            cells = _analyse(graph, ctx, task, wait, env)
            if cells and epoch_base(graph, ctx, cells[0].epoch) == 0:
                cells = [_from_zero(c) for c in cells]
            found = tuple(cells)
        except (Uncountable, Unchecked) as err:
            found = err
        ctx.cache[key] = found
    if isinstance(found, Exception):
        raise found.with_traceback(None)
    return list(found)


def _analyse(
    graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int]
) -> list[CellCount]:
    try:
        epoch = epoch_name(wait.expected)
    except Uncountable as err:
        raise type(err)(err.reason, task.name, wait.span) from None
    deps = deposits(graph, ctx, wait.signal, env)
    sets = set_writes(graph, ctx, wait.signal, env)
    by_cell: dict[tuple[int, tuple[int, ...]], list[Deposit]] = {}
    for d in deps:
        by_cell.setdefault((d.dst, d.cell), []).append(d)
    set_by_cell: dict[tuple[int, tuple[int, ...]], list[SetWrite]] = {}
    for s in sets:
        set_by_cell.setdefault((s.dst, s.cell), []).append(s)
    rel: dict[tuple[str, int], str] = {}
    out: list[CellCount] = []
    seen: set[tuple] = set()
    for rank, cell, scoped, _block in wait_cells(graph, task, wait, env):
        try:
            f1 = threshold(wait.expected, scoped, epoch, 1)
            f2 = threshold(wait.expected, scoped, epoch, 2)
        except Uncountable as err:
            raise type(err)(err.reason, task.name, wait.span) from None
        key = (rank, cell, f1, f2)
        if key in seen:
            continue
        seen.add(key)
        prefix = net = credits = 0
        contributors: dict[str, list[Deposit]] = {}
        for d in by_cell.get((rank, cell), ()):
            _countable_for(graph, task, d)
            net += d.value
            credits += max(d.value, 0)
            where = rel.get((d.task, d.op.order))
            if where is None:
                where = relation(ctx, d.task, d.op.order, task.name, wait.order)
                rel[(d.task, d.op.order)] = where
            if d.src != rank and d.value < 0:
                # A peer's retire (a negative deposit) after its own wait can land before ours.
                # A peer's *credit* ordered after the waiter (on the peer, after the peer's
                # instance of it) is after it here too: a wait that needed it in this epoch
                # would need the peer's waiter to pass first, and that one, by symmetry,
                # ours -- a deadlock, not a count. So it is a later phase of the cell.
                where = "unordered"
            if where != "after":
                prefix += d.value
                contributors.setdefault(d.task, []).append(d)
        writes = set_by_cell.get((rank, cell), ())
        cleared = any(s.clear for s in writes)
        flags = [s for s in writes if not s.clear]
        grows = any(any(sym.kind == SCALAR for sym in free_symbols(s.op.value)) for s in flags if s.op.value)
        out.append(
            CellCount(
                rank, cell, f1, f2, prefix, 0 if cleared else net, credits, cleared, bool(flags), grows, epoch,
                contributors,
            )
        )  # fmt: skip
    return out


def count_text(graph: Graph, c: CellCount, env: dict[str, int]) -> str:
    """The per-round count ``c.prefix`` as source text: ``N_LOCAL`` when one grid sends it."""
    if len(c.contributors) == 1:
        ((name, deps),) = c.contributors.items()
        task = graph.task(name)
        per_block: dict[int, int] = {}
        for d in deps:
            per_block[d.block] = per_block.get(d.block, 0) + d.value
        values = set(per_block.values())
        blocks = evaluate_or_raise(task.grid, env, "grid")
        if len(per_block) == blocks and blocks > 1 and len(values) == 1:
            (v,) = values
            grid = expr_text(task.grid)
            grid = grid if grid.isidentifier() or grid.isdigit() else f"({grid})"
            return grid if v == 1 else f"{v} * {grid}"
    return str(c.prefix)


def epoch_text(graph: Graph, c: CellCount) -> str:
    """The epoch scalar of the threshold, else the layer's only runtime scalar, else ``epoch``."""
    if c.epoch is not None:
        return c.epoch
    if len(graph.scalars) == 1:
        return next(iter(graph.scalars))
    return "epoch"


def feeders(graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict[str, int]) -> set[str]:
    """Tasks whose positive AtomicAdds reach a cell ``wait`` spins on (all notifiers if unsure)."""
    try:
        cells = {(rank, cell) for rank, cell, _s, _b in wait_cells(graph, task, wait, env)}
        return {
            d.task for d in deposits(graph, ctx, wait.signal, env) if d.value > 0 and (d.dst, d.cell) in cells
        }
    except Uncountable:
        return {t.name for t, op in notifiers(graph, wait.signal) if op.op == "add"}


# ------------------------------------------------------------------ bodies


def contains(outer: Span, inner: Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (inner.end_line, inner.end_col) <= (
        outer.end_line,
        outer.end_col,
    )


def remote_store_of(task: Task, access: Access) -> RemoteStoreS | None:
    """The ``remote_store`` statement that recorded ``access``."""
    for s in nested_stmts(task.body):
        if isinstance(s, RemoteStoreS) and s.tensor == access.tensor and contains(s.span, access.span):
            return s
    return None
