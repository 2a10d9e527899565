"""D104: ``wait ... == e`` on a cell that only AtomicAdd notifies ever write.

## What it catches

A wait with ``==`` on a signal cell that is a monotonic counter: every notify that reaches
it is an AtomicAdd (``+=``), none is a non-zero Set. Cells are matched exactly at the
default parameter point; when they depend on data the whole signal is considered. Cells
that a non-zero Set writes are flags (``==`` may be meant) or mixed (D111), and are left
alone.

## Why it breaks on the device

Counters only grow. Nothing stops a fast peer from sending its next-round notify before
this rank's wait has read the cell, and a counter past the value never comes back to it:
``==`` then never holds, the wait spins forever while holding its core, and the layer
hangs. pypto's own rule for TWAIT is ``Ge``, never ``Eq``, on counters
(docs/runtime-semantics.md §7.2, §21.1).

## Example

    task wait on aiv after push {
      for src in range(EP) { if src != rank { wait data_arrived[src] == epoch * N_LOCAL } }
    }

## Use instead

    for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch * N_LOCAL } }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: every round: a counter only AtomicAdd writes is past an `==` threshold from round 2 on.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.index import notifiers
from lowering.checks.protocol import instances
from lowering.checks.protocol.instances import Uncountable
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, SignalOp, Task
from lowering.source import Diagnostic

CODE = "D104"
NAME = "equality_wait_on_counter"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "`wait ... ==` on a counter that only AtomicAdd notifies write"
COUNTS = True


def _adders(graph: Graph, ctx: CheckContext, task: Task, wait: SignalOp, env: dict) -> list[str] | None:
    """Tasks adding to the waited cells when no non-zero Set writes them; None otherwise."""
    try:
        cells = {(rank, cell) for rank, cell, _s, _b in instances.wait_cells(graph, task, wait, env)}
        adds = [d for d in instances.deposits(graph, ctx, wait.signal, env) if (d.dst, d.cell) in cells]
        sets = [s for s in instances.set_writes(graph, ctx, wait.signal, env) if (s.dst, s.cell) in cells]
        if any(not s.clear for s in sets) or not adds:
            return None
        return sorted({d.task for d in adds})
    except Uncountable:
        ops = [(t.name, op) for t, op in notifiers(graph, wait.signal)]
        if any(op.op == "set" and not instances.is_clear(op) for _, op in ops):
            return None
        names = sorted({name for name, op in ops if op.op == "add"})
        return names or None


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    reported: set = set()
    for task in graph.tasks:
        for wait in task.waits:
            if wait.cmp != "eq" or wait.span in reported:
                continue
            adders = _adders(graph, ctx, task, wait, env)
            if not adders:
                continue
            reported.add(wait.span)
            expected = instances.expr_text(wait.expected)
            yield finding(
                CODE,
                SEVERITY,
                wait.span,
                f"{task.name} waits for {wait.signal} == {expected}, but that cell is a counter only AtomicAdd "
                f"notifies write ({', '.join(adders)}): a fast peer's next notify can land before this wait "
                f"reads it, the counter passes {expected}, and `==` never holds again -- the wait hangs",
                fix=f"use `>=`: wait {wait.signal}[...] >= {expected}",
            )
