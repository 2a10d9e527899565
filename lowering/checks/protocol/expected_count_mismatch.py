"""D103: a wait's threshold is not epoch x the notifies its cell receives per epoch.

## What it catches

A ``wait sig[i] >= expected`` whose threshold, as a function of the runtime epoch, differs
from what the notifiers actually deposit into that cell (docs/runtime-semantics.md §16.5, rule R3).
dslc counts the deposits exactly -- grid sizes x loop trip counts x conditions x values, for the
source-side counterpart of every rank -- at every admissible parameter value, and evaluates
the threshold at epoch 1 and epoch 2 (slope and offset). For the usual monotonic counter
the threshold must be ``epoch * n`` where ``n`` is the per-epoch count. Two refinements:

- notifies ordered *after* the wait (a later phase on the same cell, a retire
  ``notify sig[i] @ rank += -n`` after the wait) are not part of what the wait observes,
  so the threshold is ``prefix + (epoch - 1) * net`` (``net`` = what one round leaves in
  the cell after retires);
- a cell cleared every round (``notify sig[i] @ rank = 0``) must be waited with the
  per-round count, not an epoch multiple. In a graph read from PyPTO the threshold's scalar
  is a call id that restarts at every dispatch (docs/runtime-semantics.md §7.3), so on a cell
  the program clears (a zero ``pl.write``) only the first call's threshold is judged;
- a *reuse wait* -- the wait before a peer's window is overwritten, ``wait consumed[p] >=
  epoch - 1`` followed by a ``remote_store`` to ``p`` in the same task (or in the direct
  successors of a task of waits alone) -- asks only for the credits the earlier rounds left
  (``(epoch - 1) * net`` at most) and is right as written: the peer's consumption credit of
  this round comes after this round's exchange. The same lag on a wait that gates a read of
  published data is an off-by-one and is reported (``good_reuse_wait.dsl`` /
  ``bad_data_lag.dsl``). D101 does not ask a reuse wait for this round's notifiers either.

A waited cell chosen by data -- ``wait ready[owner]`` with ``owner`` read from a table -- is
judged at every cell of that dimension the wait's conditions admit: the threshold must be
right whichever rank the table names (``good_data_cell.dsl``; a cell no notify reaches is
D106's, ``../D106/bad_data_cell.dsl``).

A count that depends on data -- a notify under a data-dependent ``if``, a loop over a
data-dependent count, a data-dependent peer, cell or value, a notifier task with a
``when`` predicate -- is an error too: the arithmetic cannot be checked and a rank that
sends fewer notifies than its peer expects hangs it. A *threshold* computed from data while
the notifies are countable -- the epoch of a call that the orchestrator reads from a table,
``moe_epoch = tile_ord_base + tile_id + 1`` with ``tile_ord_base`` an exclusive prefix sum of
earlier calls -- is a note: the threshold may well be right (a gap-free ordinal of the calls
is), dslc cannot tell, and the note names the data it comes from and what it assumes. Only
the notifies the wait observes need to be countable for that: a retire ordered after the
wait, whose size is read from data, cannot change what the wait sees. A negative deposit
(a retire) that nothing orders after the wait stays an error: the wait sees it or not
depending on the schedule, so no threshold is right in both orders
(``tests/fixtures/pypto/reader/host_epoch``). A threshold
that does not grow with the epoch on a counter that persists is left to D113, cells written
by a non-zero Set (flags) to D111/D113, cells no notify reaches to D106, and thresholds
written with several runtime scalars are not checked; neither are counts that depend on a
runtime scalar argument other than the epoch (a PyPTO ``pl.Scalar`` such as ``tp_rank``, the
rank's place in its group): the caller fixes it, it is not data, and the graph does not say
which value each rank passes. Parameter points beyond 256 are thinned
to the extremes of each range and a spread of inner values.

## Why it breaks on the device

TWAIT spins until the INT32 cell reaches ``expected``. If the threshold is higher than what
the peers deposit, it is never reached: the waiter holds its core forever and the layer
hangs (507018 / TENSOR_WAIT_TIMEOUT). If it is lower, the wait releases after only part
of the notifies -- so before the remote stores they publish have landed -- and the
consumers read stale or half-written windows. Counters are never reset within a run, so a
threshold that matches epoch 1 but not epoch 2 breaks from the second round on.

## Example

    task push spmd(N_LOCAL) on aiv { ...; for dst in range(EP) { if dst != rank { notify data_arrived[rank] @ dst += 1 } } }
    task wait on aiv after push {
      for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch } }   # receives N_LOCAL per epoch
    }

## Use instead

    for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch * N_LOCAL } }

or, better, notify once per peer after the grid join and wait for ``epoch`` (see D105).

## Parameter and round coverage

Parameters: every admissible point of each structure class, the compiled point first, thinned
beyond 256 points.
Rounds: every round: the threshold is checked at epochs 1 and 2 against one round's deposits
plus the epochs before (`prefix + (e - 1) * net`); instances of two rounds in flight together
are D113's and D117's.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.protocol import counting, instances
from lowering.checks.protocol.counting import CellCount
from lowering.checks.protocol.instances import DataThreshold, Deposit, Unchecked, Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.checks.signals import ScalarDependent
from lowering.ir import Graph, SignalOp, Task
from lowering.source import Diagnostic
from lowering.symbolic import DYNAMIC, free_symbols

CODE = "D103"
NAME = "expected_count_mismatch"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "a wait's threshold is not epoch x the notifies its cell receives per epoch"
COUNTS = True
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def _grid(graph: Graph, task: Task, env: dict) -> str:
    blocks = instances.evaluate_or_raise(task.grid, env, "grid")
    size = f"spmd {blocks}" if blocks != 1 else "1 block"
    return f"{size}, {task.core.upper()}"


def _breakdown(graph: Graph, contributors: dict[str, list[Deposit]], env: dict) -> str:
    if not contributors:
        return "no notify reaches it"
    parts = []
    for name, deps in sorted(contributors.items()):
        task = graph.task(name)
        total = sum(d.value for d in deps)
        blocks = len({(d.src, d.block) for d in deps})
        what = f"{len(deps)} notifies" if len(deps) != 1 else "1 notify"
        if sum(d.value for d in deps) != len(deps):
            what += f" worth {total}"
        src = "from " + (f"{blocks} blocks" if blocks != 1 else "1 block")
        parts.append(f"{name} ({_grid(graph, task, env)}): {what} {src}")
    return "; ".join(parts)


def _suggest(graph: Graph, c: CellCount, env: dict) -> str:
    """A threshold expression for the fix line."""
    count = counting.count_text(graph, c, env)
    epoch = counting.epoch_text(graph, c)
    if c.net == 0:
        return count
    if c.net == c.prefix:
        return epoch if count == "1" else f"{epoch} * {count}"
    return f"{c.prefix} + ({epoch} - 1) * {c.net}"


def _uncountable(task: Task, wait: SignalOp, err: Uncountable, graph: Graph, env: dict) -> Diagnostic:
    where = ""
    related = ()
    if err.span is not None and err.span != wait.span:
        where = f" ({err.task}, line {err.span.line})"
        related = ((err.span, "the count depends on data here"),)
    return finding(
        CODE,
        SEVERITY,
        wait.span,
        f"{task.name} waits on {wait.signal} (expects {instances.expr_text(wait.expected)}) but the number of "
        f"notifies into that cell cannot be counted: {err.reason}{where}{instances.point_label(graph, env)}. "
        f"A rank whose data yields fewer notifies than the threshold hangs the wait; one that yields more "
        f"releases it early",
        fix="make the notify count independent of data: notify each peer once from a task ordered after the grid",
        related=related,
    )


def _data_source(name: str) -> str:
    """Where a data symbol of a threshold comes from, as the reader names it."""
    what, _, where = name.partition("@")
    line = where.split(":")[0]
    if what in ("host_read", "host_write") and line.isdigit():
        return f"the host's read at line {line}"
    if what == "data" and line.isdigit():
        return f"a value read from data at line {line}"
    if what == "dim" and line.isdigit():
        return f"a run-time dimension at line {line}"
    return f"`{name}`"


def _data_threshold(graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict) -> Diagnostic:
    """A threshold computed from data: an error when what the wait observes cannot be counted
    either, or when a retire can land before it; otherwise a note naming the assumption."""
    try:
        seen = counting.observed(graph, ctx, task, wait, env)
    except Uncountable as err:
        return _uncountable(task, wait, err, graph, env)
    expects = instances.expr_text(wait.expected)
    retire = next((d for d in seen if d.value < 0), None)
    if retire is not None:
        return finding(
            CODE,
            SEVERITY,
            wait.span,
            f"{task.name} waits on {wait.signal} (expects {expects}), but {retire.task} lowers that cell by "
            f"{-retire.value} (line {retire.op.span.line}) with nothing ordering it after the wait"
            f"{instances.point_label(graph, env)}: whether the wait sees the retire depends on the schedule, so "
            f"no threshold is right in both orders -- it hangs when the retire lands first, or releases before "
            f"the last notifies when it lands last",
            fix="order the retire after the wait: in the waiting task after its wait, or in a task that deps on it",
            related=((retire.op.span, "the retire"),),
        )
    contributors: dict[str, list[Deposit]] = {}
    per_cell: dict[tuple, int] = {}
    for d in seen:
        contributors.setdefault(d.task, []).append(d)
        per_cell[(d.dst, d.cell)] = per_cell.get((d.dst, d.cell), 0) + d.value
    counts = sorted(set(per_cell.values())) or [0]
    sources = sorted({s.name for s in free_symbols(wait.expected) if s.kind == DYNAMIC})
    return finding(
        CODE,
        "note",
        wait.span,
        f"{task.name} waits on {wait.signal} until {expects}, a threshold computed from data "
        f"({', '.join(_data_source(n) for n in sources)}): the notifies it observes in its round are countable "
        f"({' or '.join(map(str, counts))} into each waited cell: {_breakdown(graph, contributors, env)}), "
        f"the threshold is not, so dslc does not compare them{instances.point_label(graph, env)}. It assumes "
        f"the program passes what the counter holds once this round's notifies are in -- for an epoch built "
        f"from a table, the gap-free ordinal of the call (the count of earlier calls + 1); a smaller value "
        f"releases the wait early, a larger one hangs it",
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    reported: set = set()
    for task in graph.tasks:
        for wait in task.waits:
            if wait.span in reported:
                continue  # task arrays share one source line
            for env in instances.points(graph):
                try:
                    cells = counting.analyse_wait(graph, ctx, task, wait, env)
                except ScalarDependent:
                    break  # fixed by the caller's arguments, not by data: not modelled, as Unchecked
                except DataThreshold:
                    reported.add(wait.span)
                    yield _data_threshold(graph, ctx, task, wait, env)
                    break
                except Uncountable as err:
                    reported.add(wait.span)
                    yield _uncountable(task, wait, err, graph, env)
                    break
                except Unchecked:
                    break
                if counting.reuse_wait(graph, ctx, task, wait, cells):
                    continue  # asks only for the earlier rounds' credits before a window is reused
                bad = next(
                    ((c, e) for c in cells if (e := counting.mismatch(c, graph.epoch_counts)) is not None),
                    None,
                )
                if bad is None:
                    continue
                c, e = bad
                reported.add(wait.span)
                got, want = (c.f1, c.required(1)) if e == 1 else (c.f2, c.required(2))
                cell = instances.cell_text(wait.signal, c.cell)
                if got > want:
                    why = f"the threshold is never reached and rank {c.rank} deadlocks"
                else:
                    why = "the wait releases before every notify -- and the data it publishes -- has arrived"
                per_epoch = f"{c.prefix} per epoch" if c.net == c.prefix else f"{c.required(e)} by epoch {e}"
                if c.cleared:
                    per_epoch += f" (the cell is cleared every round, so {c.prefix} in every epoch)"
                yield finding(
                    CODE,
                    SEVERITY,
                    wait.span,
                    f"{task.name} waits until {cell} on rank {c.rank} {'>=' if wait.cmp == 'ge' else '=='} "
                    f"{instances.expr_text(wait.expected)} (= {got} at epoch {e}), but the notifiers deposit "
                    f"{per_epoch} into that cell ({_breakdown(graph, c.contributors, env)}){instances.point_label(graph, env)}: "
                    f"{why}",
                    fix=f"expect `{_suggest(graph, c, env)}` in this wait",
                )
                break
