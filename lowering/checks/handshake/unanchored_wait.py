"""D107: a task with a blocking wait has no incoming edge at all.

## What it catches

A task that spins in ``wait`` and has neither an ``after`` edge nor an inferred tensor edge
(it reads only layer inputs, or nothing). When its notifier is another local task that is
not an ancestor, D101 already reports it (with the fix that also anchors it), so this rule
fires on the remaining cases: a single-block task that notifies its peers and then waits
(an all-rank barrier, a flow-control credit), or a wait on a signal notified from outside
(also D106).

## Why it breaks on the device

A task without producers is ready the moment the orchestrator submits it. The scheduler
dispatches it at once and it spins in TWAIT, holding its core, until every peer arrives,
however far ahead of the work it synchronises it was submitted. When layers are pipelined
(submitted back to back), these spinners stack up and take the cores that the work in
front of them needs: the comment in the MoE code that made every wait `deps=[push_tid]`.

## Example

    task quant spmd(T / 16) on aiv { xq[...] = cast(x[...], i8) }
    task handshake on aiv {                              # no incoming edge
      for peer in range(EP) { if peer != rank { notify ready[rank] @ peer += 1 } }
      for src in range(EP) { if src != rank { wait ready[src] >= epoch } }
    }

## Use instead

    task handshake on aiv after quant { ... }            # dispatched once quant has finished

## What dslc verify shows

``dslc verify`` finds a schedule-dependent result in ``bad.dsl`` at EP 2: the unanchored
handshake can notify before the push grid has stored, and the readers it releases see the
window half written. ``good.dsl`` verifies complete.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.handshake.need import needed_notifiers, self_exempt, waiters
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "D107"
NAME = "unanchored_wait"
FAMILY = "handshake"
SEVERITY = "warning"
SUMMARY = "a task with a blocking wait has no incoming edge and spins from the moment it is submitted"


def _reported_by_d101(graph: Graph, ctx: CheckContext, waiter: Task) -> bool:
    env = graph.env()
    for wait in waiter.waits:
        for name in needed_notifiers(graph, waiter, wait, env):
            if name == waiter.name:
                if not self_exempt(waiter, wait.signal):
                    return True
            elif name not in ctx.ancestors[waiter.name]:
                return True
    return False


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    has_edge = {e.dst for e in graph.edges}
    for waiter in waiters(graph):
        if waiter.name in has_edge or _reported_by_d101(graph, ctx, waiter):
            continue
        earlier = [t for t in graph.tasks if t.order < waiter.order]
        signals = ", ".join(dict.fromkeys(w.signal for w in waiter.waits))
        if earlier:
            prev = earlier[-1].name
            fix = f"add `after {prev}` to task {waiter.name} (anchor it on the work it synchronises)"
        else:
            fix = f"give task {waiter.name} an `after` edge on the work it synchronises"
        yield finding(
            CODE,
            SEVERITY,
            waiter.header_span,
            f"{waiter.name} ({describe.grid(waiter)}) blocks on {signals} but has no incoming edge: it is "
            f"dispatched as soon as the layer is submitted and spins holding an {waiter.core.upper()} core "
            f"until every peer arrives; in pipelined layers such spinners stack up and take the cores the "
            f"work before them needs",
            fix=fix,
            related=((waiter.waits[0].span, "the blocking wait"),),
        )
