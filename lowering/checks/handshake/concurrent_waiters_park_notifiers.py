"""D109: two unordered spinning waiters of one core shape, where one can park what the other needs.

## What it catches

Two tasks W1 and W2 that both spin in a blocking ``wait``, run on the same kind of core,
and are unordered (neither is an ancestor of the other), where Need(W1) -- the notifiers
W1's cells depend on, their ancestors, and the needs of the waits among them, under rank
symmetry -- contains W2, or a task that can be staged into the pending slot of a core on
which W2 spins (a task of a shape W2's cores run that is unordered with W2). This is the
strengthening of R1 in docs/runtime-semantics.md §15.5: each waiter may be correctly ordered after
its own notifiers (D101 is silent), and the pair can still deadlock. Pairs of instances of one
task array (per-chunk waiters) are D116's finding, not this rule's.

## Why it breaks on the device

A spinning wait holds its core, and a task staged into that core's pending slot only runs
after the wait ends. With two independent spinners, rank p can park a notifier that W1
needs behind W2 while rank q parks, behind its W1, the task W2 needs: wait@q -> notifier@p
-> W2@p -> W2@q -> wait@q is a cycle across ranks. It needs an unlucky placement on two
ranks in one epoch, so it appears only at scale: the EP16 stalls in ``dispatch_meta`` of
pypto-lib #1208/#1213, after the dispatch handshake itself had been fixed.

## Example

    task meta on aiv { ...; notify arrived[rank] @ dst += 1; ...; wait arrived[src] >= epoch }
    task push spmd(N_LOCAL) on aiv { ...; notify data_arrived[rank] @ dst += 1 }
    task wait on aiv after push { ...; wait data_arrived[src] >= epoch * N_LOCAL }   # || meta

## Use instead

    task wait on aiv after push, meta { ... }   # order the two spins, or split meta (#1208)

## What dslc verify shows

``dslc verify --rounds 2 --round-scalar moe_epoch`` finds the cycle in ``bad.dsl`` at EP 2
(``wait@r0 -> push@r1 -> meta@r1 -> meta@r0``): a round's meta and wait park what the other
needs. In one round it cannot: meta is queued with the push grid and gets a slot before the
wait, which only becomes ready after the pushes.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points); the notifiers a wait needs are gathered over
every admissible point.
Rounds: one round.
Order: the graph's edges, plus in a PyPTO program the order a wait's count implies (a credit
the wait cannot pass without comes before the waiting task's successors: docs/lint.md, "Order").
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.handshake.need import need, shares_cores, waiters
from lowering.checks.protocol.implied_order import can_overlap, progress
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "D109"
NAME = "concurrent_waiters_park_notifiers"
FAMILY = "handshake"
SEVERITY = "warning"
SUMMARY = "unordered spinning waiters of one core shape, where one can park a task the other needs"


def _needed(graph: Graph, ctx: CheckContext, waiter: Task) -> list[tuple[Task, int]]:
    """Need(waiter) in submission order, each task with its reachability number (cached)."""
    key = ("D109.need", waiter.name)
    if key not in ctx.cache:
        r = progress(graph, ctx)
        tasks = sorted((graph.task(n) for n in need(graph, ctx, waiter)), key=lambda t: t.order)
        ctx.cache[key] = [(t, r.number(t.name)) for t in tasks]
    return ctx.cache[key]


def _hazard(graph: Graph, ctx: CheckContext, w1: Task, w2: Task) -> list[Task]:
    """Tasks of Need(w1) that w2 blocks: w2 itself, or tasks parkable behind w2: unordered with
    it (neither before the other by progress number) and on cores it can hold (``shares_cores``)."""
    r = progress(graph, ctx)
    k2 = r.number(w2.name)
    out = []
    for task, k in _needed(graph, ctx, w1):
        if task.name == w2.name:
            out.append(task)
        elif shares_cores(task, w2) and not r.before_number(k, k2) and not r.before_number(k2, k):
            out.append(task)
    return out


def _reason(w1: Task, w2: Task, hazard: list[Task]) -> str:
    signals = ", ".join(dict.fromkeys(w.signal for w in w1.waits))
    if any(t.name == w2.name for t in hazard):
        return f"{w1.name} (on {signals}) needs {w2.name} itself to run, and {w2.name} spins too"
    if any(t.name == w1.name for t in hazard):
        return (
            f"{w1.name} needs its peers' {w1.name} (it notifies {signals} itself), and a block of "
            f"{w1.name} can be staged behind a spinning {w2.name}"
        )
    return (
        f"{w1.name} (on {signals}) needs {describe.names(hazard)}, which can be staged into the pending "
        f"slot of a core on which {w2.name} spins"
    )


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    spinners = waiters(graph)
    for i, first in enumerate(spinners):
        for second in spinners[i + 1 :]:
            if first.core != second.core or not shares_cores(first, second):
                continue
            if not can_overlap(graph, ctx, first.name, second.name):
                continue
            if first.index is not None and first.base == second.base:
                continue  # instances of one task array: D116 (chunk tasks waiting across ranks)
            reasons = []
            for w1, w2 in ((second, first), (first, second)):
                hazard = _hazard(graph, ctx, w1, w2)
                if hazard:
                    reasons.append(_reason(w1, w2, hazard))
            if not reasons:
                continue
            shape = first.core.upper()
            yield finding(
                CODE,
                SEVERITY,
                second.header_span,
                f"{second.name} and {first.name} are unordered blocking waiters on {shape} cores: "
                f"{'; and '.join(reasons)}. If one rank parks that task behind one spinner while a "
                f"peer does the same behind the other, each waits on the other and the ranks deadlock "
                f"(the residual EP16 stall of dispatch_meta, pypto-lib #1208)",
                fix=f"add `after {first.name}` to task {second.name}, so the two spins cannot hold each "
                f"other's notifiers",
                related=((first.header_span, "the other spinning waiter"),),
            )
