"""D113: a threshold that ignores the epoch on a persistent counter, or an unsafe zero-write clear.

## What it catches

Two ways a signal (or a window) is reused across rounds unsafely (docs/runtime-semantics.md §21.1,
rule R9, `7a57215c` #960 and `b1daab68` #975):

1. **Epoch reuse.** A wait whose threshold does not grow with the epoch (it is a constant,
   or written with a per-dispatch counter that restarts) on a cell that nothing returns to
   its starting value each round: no ``notify sig[i] @ rank = 0`` clear and no retire
   (``notify sig[i] @ rank += -n``) that cancels the round's credits. Set-written flags
   count too unless the value they set grows with the epoch.
2. **Unsafe clear.** A zero-write of a signal cell (``notify sig[i] @ peer = 0``) or of a
   window (``win[...] = zeros(...)``, ``= 0``) that is not ordered after a wait which has
   observed *every* notify into that cell -- a wait on the same cell, on this rank, in an
   ancestor task (or earlier in the same task), whose threshold at epoch 1 is at least the
   full per-round count of credits. For a window, the wait must be on a signal that
   publishes the window (its notifier is, or runs after, a task that remote-stores it).
   Clearing a cell on another rank is always reported: only the owner can observe its cell.
   In PyPTO a clear is a zero ``pl.write`` into the signal's window (the reader turns it into
   ``notify sig[i] @ rank = 0``). A clear of cells whose credits depend on a runtime scalar
   argument (``tp_rank``) is not judged, as D103 does not judge such counts.

The clear check is R9 as stated: it does not model a peer that is already a round ahead.
``dslc verify --rounds 2`` does, and finds that a clear after the full-count wait still races
such a peer: its next-round credit (or row) can land before the clear and be wiped by it - a
deadlock, or lost rows. The clear is safe only when no peer starts the next round before every
rank has cleared (the good fixtures hold the peers back with a ``cleared`` handshake whose
token the next round's pushes read). A ``remote_store`` of zeros is treated as data, not as a
clear.

## Why it breaks on the device

Signal cells are never reset within a run and persistent windows survive across dispatches.
A wait for ``>= N_LOCAL`` is right in round 1 and already satisfied in every later round, so
flow control disappears: the leading rank overruns the windows (V4 Pro trapped its AIV cores
around dispatch 9, #960). A zero-write races the peers: a trailing credit that no wait has
observed can land just after the clear and survive into the next round, or the clear wipes
a credit that a wait still needs -- early release or a hang, depending on the order.

## Example

    task wait on aiv after push {
      for src in range(EP) { if src != rank { wait data_arrived[src] >= N_LOCAL } }   # moe_epoch restarted at 1
    }

## Use instead

    for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch * N_LOCAL } }

with ``epoch`` strictly monotonic over every reuse of the window, or retire the credits by a
commutative atomic subtraction after the wait (``notify data_arrived[src] @ rank += -N_LOCAL``);
clear with a zero-write only after a wait that has seen the full count.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points); the thresholds at every admissible point
(thinned beyond 256).
Rounds: every round: epoch reuse shows from round 2 on; Set writers of two rounds are compared
as far apart as the task ring holds rounds (`lowering.checks.rounds`, at most 16 apart); a
clear is judged within one round (see above).
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.body import StoreS, nested_stmts
from lowering.checks import signals
from lowering.checks.bodies import is_zero, summary
from lowering.checks.index import graph_index, waits_on
from lowering.checks.protocol import counting, implied_order, instances
from lowering.checks.protocol.instances import Unchecked, Uncountable
from lowering.checks.rounds import ordered_before
from lowering.checks.rule import CheckContext, finding
from lowering.checks.signals import ScalarDependent
from lowering.ir import Graph, SignalOp, Task
from lowering.source import Diagnostic

CODE = "D113"
NAME = "epoch_reuse_or_unsafe_clear"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "a threshold that ignores the epoch on a persistent counter, or an unsafe zero-write clear"
COUNTS = True


# ------------------------------------------------------------------ 1. epoch reuse


def _epoch_reuse(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    reported: set = set()
    for task in graph.tasks:
        for wait in task.waits:
            if wait.span in reported:
                continue
            for env in instances.points(graph):
                try:
                    cells = counting.analyse_wait(graph, ctx, task, wait, env)
                except (Uncountable, Unchecked):
                    break  # D103 reports what depends on data
                hit = next(
                    (
                        c
                        for c in cells
                        if c.slope == 0
                        and not c.cleared
                        and ((c.flag and not c.flag_grows) or (not c.flag and c.net > 0))
                    ),
                    None,
                )
                if hit is None:
                    backwards = _flag_goes_back(graph, ctx, wait, cells, env)
                    if backwards is not None:
                        reported.add(wait.span)
                        yield _backwards_finding(graph, task, wait, env, *backwards)
                        break
                    continue
                reported.add(wait.span)
                cell = instances.cell_text(wait.signal, hit.cell)
                epoch = counting.epoch_text(graph, hit)
                count = counting.count_text(graph, hit, env) if hit.prefix == hit.net else str(hit.net)
                scalar_note = (
                    "" if graph.scalars else " (declare `scalar epoch: i32` and pass the round number)"
                )
                if hit.flag:
                    state = "a flag that stays set across rounds (its Set value does not grow with the epoch)"
                    fix = f"set and wait for `{epoch}`: `notify ... = {epoch}` and `wait ... >= {epoch}`"
                else:
                    state = f"a counter that persists across rounds ({hit.net} deposited per round, never cleared or retired)"
                    fix = f"expect `{epoch} * {count}`{scalar_note}, or retire the credits after the wait"
                if wait.cmp == "eq":
                    why = "from round 2 on the counter is past it and `==` never holds again: the wait hangs"
                else:
                    why = (
                        "from round 2 on the wait is already satisfied when it starts, so it releases before "
                        "this round's notifies (and their data) arrive and flow control is gone"
                    )
                yield finding(
                    CODE,
                    SEVERITY,
                    wait.span,
                    f"{task.name} waits until {cell} on rank {hit.rank} {'>=' if wait.cmp == 'ge' else '=='} "
                    f"{instances.expr_text(wait.expected)}, which does not grow with the epoch, but {cell} is "
                    f"{state}{instances.point_label(graph, env)}: {why}",
                    fix=fix,
                )
                break


def _flag_goes_back(graph: Graph, ctx: CheckContext, wait: SignalOp, cells, env) -> tuple | None:
    """A flag whose Set value grows with the epoch, written by Set notifies of two rounds that
    nothing orders: (earlier writer, later writer, rounds apart, cell)."""
    try:
        sets = instances.set_writes(graph, ctx, wait.signal, env)
    except Uncountable:
        return None
    for c in cells:
        if not (c.flag and c.flag_grows):
            continue
        writers = sorted({w.task for w in sets if (w.dst, w.cell) == (c.rank, c.cell) and not w.clear})
        for later in writers:
            earlier = ordered_before(graph, ctx, later)
            for first in writers:
                k = earlier.first_gap(first)
                if k is not None:
                    return first, later, k, c
    return None


def _backwards_finding(graph: Graph, task: Task, wait: SignalOp, env, first: str, later: str, k: int, c):
    cell = instances.cell_text(wait.signal, c.cell)
    epoch = counting.epoch_text(graph, c)
    apart = "the next round's" if k == 1 else f"round r + {k}'s"
    who = first if first == later else f"{first} and {later}"
    return finding(
        CODE,
        SEVERITY,
        wait.span,
        f"{task.name} waits until {cell} on rank {c.rank} >= {instances.expr_text(wait.expected)}, a flag that "
        f"the Set notifies of {who} raise to `{epoch}`, but nothing orders {first} of round r "
        f"before {apart} {later}{instances.point_label(graph, env)}: round r's Set can land after the later "
        f"round's and take the flag back, and a wait for the later epoch that has not seen it yet hangs",
        fix=f"add `after prev({first})` to task {later} (each round's Set after the previous round's), or use "
        f"an AtomicAdd counter (`+= 1`, expect `{epoch} * count`)",
        related=((graph.task(later).header_span, f"the Set writer ({later})"),),
        data=(("task", later), ("add_after", f"prev({first})")),
    )


# ------------------------------------------------------------------ 2. unsafe clears


def _ordered_before(ctx: CheckContext, a_task: str, a_order: int, b_task: str, b_order: int) -> bool:
    return implied_order.relation(ctx, a_task, a_order, b_task, b_order) == "before"


def _full_observers(
    graph: Graph, ctx: CheckContext, signal: str, env: dict, rank: int, cell: tuple, before: tuple[str, int]
) -> list[tuple[Task, SignalOp]]:
    """Waits on ``(rank, cell)`` ordered before ``before`` whose threshold covers every credit."""
    out = []
    for task, wait in waits_on(graph, signal):
        if not _ordered_before(ctx, task.name, wait.order, *before):
            continue
        try:
            cells = counting.analyse_wait(graph, ctx, task, wait, env)
        except (Uncountable, Unchecked):
            continue
        if any(c.rank == rank and c.cell == cell and c.f1 >= c.credits for c in cells):
            out.append((task, wait))
    return out


def _signal_clears(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    reported: set = set()
    for task in graph.tasks:
        for op in task.notifies:
            if not instances.is_clear(op) or op.span in reported:
                continue
            problem = None
            try:
                credits: dict[tuple[int, tuple], int] = {}
                for d in instances.deposits(graph, ctx, op.signal, env):
                    credits[(d.dst, d.cell)] = credits.get((d.dst, d.cell), 0) + max(d.value, 0)
                for scoped, rank, _block in signals.run(graph, task, op.loops, op.conds, env, lenient=True):
                    peer = instances.evaluate_or_raise(op.peer, scoped, "peer")
                    cell = tuple(instances.evaluate_or_raise(i, scoped, "cell index") for i in op.index)
                    text = instances.cell_text(op.signal, cell)
                    if peer != rank:
                        problem = (
                            f"rank {rank} clears {text} on rank {peer}, which only rank {peer} can observe: a "
                            f"credit still in flight to it survives the clear or is wiped before its wait sees it"
                        )
                        break
                    if not credits.get((rank, cell)):
                        continue
                    if not _full_observers(graph, ctx, op.signal, env, rank, cell, (task.name, op.order)):
                        problem = (
                            f"{text} on rank {rank} receives {credits[(rank, cell)]} credits per round but no wait "
                            f"ordered before the clear observes all of them: a trailing credit can land after "
                            f"the zero-write and leak into the next round"
                        )
                        break
            except ScalarDependent:
                continue  # fixed by the caller's scalar arguments, not by data: as D103, not judged
            except Uncountable as err:
                problem = f"which cells it clears, or what they receive, depends on data ({err.reason})"
            if problem is not None:
                reported.add(op.span)
                yield finding(
                    CODE,
                    SEVERITY,
                    op.span,
                    f"{task.name} zero-writes {op.signal} (`= 0`): {problem}",
                    fix=(
                        f"retire the credits with `+= -n` after the wait that observes them, or clear only "
                        f"after a wait on {op.signal} whose threshold is the full count"
                    ),
                )


def _window_clears(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    anc = ctx.ancestors
    remote_writers: dict[str, set[str]] = {}
    for t in graph.tasks:
        for a in t.accesses:
            if a.peer is not None and a.writes:
                remote_writers.setdefault(a.tensor, set()).add(t.name)
    adders = [(t, op) for ops in graph_index(graph).notifies.values() for t, op in ops if op.op == "add"]
    publishing_of: dict[frozenset[str], set[str]] = {}
    reported: set = set()
    windows = {n for n in remote_writers if getattr(graph.tensors.get(n), "kind", None) == "window"}
    for task in graph.tasks:
        if not summary(graph, task).stores & windows:
            continue  # stores into no window a peer writes: its statements are not walked
        for stmt in nested_stmts(task.body):
            if not isinstance(stmt, StoreS) or stmt.mode != "write" or not is_zero(stmt.value):
                continue
            if stmt.span in reported:
                continue
            tensor = graph.tensors.get(stmt.tensor)
            writers = remote_writers.get(stmt.tensor, set()) - {task.name}
            if tensor is None or tensor.kind != "window" or not writers:
                continue
            order = next(
                (
                    a.order
                    for a in task.accesses
                    if a.tensor == stmt.tensor and a.mode == "write" and counting.contains(stmt.span, a.span)
                ),
                10**9,
            )
            key = frozenset(writers)
            if key not in publishing_of:  # signals notified by (or after) a writer
                publishing_of[key] = {
                    op.signal for t, op in adders if any(w == t.name or w in anc[t.name] for w in writers)
                }
            publishing = publishing_of[key]
            observed = False
            for signal in sorted(publishing):
                for wt, wait in waits_on(graph, signal):
                    if not _ordered_before(ctx, wt.name, wait.order, task.name, order):
                        continue
                    try:
                        cells = counting.analyse_wait(graph, ctx, wt, wait, env)
                    except (Uncountable, Unchecked):
                        continue
                    if cells and all(c.f1 >= c.credits for c in cells):
                        observed = True
            if observed:
                continue
            reported.add(stmt.span)
            names = ", ".join(sorted(writers))
            yield finding(
                CODE,
                SEVERITY,
                stmt.span,
                f"{task.name} zero-writes window {stmt.tensor}, which peers fill with remote_store ({names}), "
                f"but it is not ordered after a wait that has observed every notify publishing those stores: "
                f"a trailing remote store can land after the clear, or the clear wipes rows a consumer has "
                f"not read yet",
                fix=f"clear {stmt.tensor} only in a task ordered after the wait that sees the full count",
            )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _epoch_reuse(graph, ctx)
    yield from _signal_clears(graph, ctx)
    yield from _window_clears(graph, ctx)
