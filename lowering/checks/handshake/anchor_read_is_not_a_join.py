"""D108: an anchor read stands in for a join over notifier instances it does not all cover.

## What it catches

A waiter whose ordering to the tasks that notify its signal goes through an anchor read
(``read(t[0, 0])`` as a statement) of a tensor written by only some of those notifier
instances: typically a task array ``for e in parallel(N) { task push[e] ... }`` where the
anchor reads the region of ``push[0]``. The anchor orders the waiter after the instances
that produced the bytes it reads; the other instances stay unordered
(docs/runtime-semantics.md §21.1, rule R10). D101 reports each unordered notifier; this rule points
at the anchor that was meant to be the join.

## Why it breaks on the device

The runtime turns an anchor read into an edge on the last writers of the bytes read, not on
a family of tasks. A notifier instance left out can be staged into the pending slot of the
core on which the waiter spins, and its notifies then never leave this rank: the
cross-rank handshake deadlocks as in D101. pypto-lib #975 measured exactly this: the anchor
ordered the waiter "after most of the expert grid but not all".

## Example

    for e in parallel(N_LOCAL) { task push[e] on aiv { ...; notify data_arrived[rank] @ dst += 1 } }
    task wait on aiv {
      read(recv_x[0, 0])                                   # written by push[0] only
      for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch * N_LOCAL } }
    }

## Use instead

    task wait on aiv after push { ... }                    # `after push` joins every push[e]

## What dslc verify shows

``dslc verify`` proves ``bad.dsl`` deadlock-free and deterministic at EP 2 (N_LOCAL 2, 1-2
rounds): the push tasks have no producer, so they are queued before the waiter and always get
slots first, and the waiter's threshold counts every push's notify, so it cannot release early.
The unjoined order becomes a hang when the pushes are released with (or after) the waiter.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.body import region_text
from lowering.checks import describe
from lowering.checks.handshake.need import same_epoch_notifiers, waiters
from lowering.checks.order import incoming
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Edge, Graph, Task
from lowering.source import Diagnostic

CODE = "D108"
NAME = "anchor_read_is_not_a_join"
FAMILY = "handshake"
SEVERITY = "error"
SUMMARY = "an anchor read orders a waiter after only some of the notifier instances it needs"


def _anchor_text(waiter: Task, edge: Edge) -> str:
    for acc in waiter.accesses:
        if acc.tensor == edge.tensor and acc.mode == "anchor":
            return f"{acc.tensor}{region_text(acc.region)}"
    return str(edge.tensor)


def _join_target(tasks: list[Task]) -> str:
    bases = list(dict.fromkeys(t.base for t in tasks))
    return ", ".join(bases)


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    for waiter in waiters(graph):
        anchors = [e for e in incoming(graph, ctx).get(waiter.name, ()) if e.anchor]
        if not anchors:
            continue
        ancestors = ctx.ancestors[waiter.name]
        reported: set[str | None] = set()
        for wait in waiter.waits:
            needed = sorted(
                (
                    graph.task(n)
                    for n in same_epoch_notifiers(graph, ctx, waiter, wait, env)
                    if n != waiter.name
                ),
                key=lambda t: t.order,
            )
            missing = [t for t in needed if t.name not in ancestors]
            if not missing:
                continue
            for edge in anchors:
                if edge.tensor in reported:
                    continue
                covered = [t for t in needed if t.name == edge.src or t.name in ctx.ancestors[edge.src]]
                if not covered:
                    continue
                reported.add(edge.tensor)
                target = _join_target(needed)
                yield finding(
                    CODE,
                    SEVERITY,
                    edge.span,
                    f"{waiter.name} reads `{_anchor_text(waiter, edge)}` as an anchor to order itself after "
                    f"the notifiers of {wait.signal}, but that orders it only after "
                    f"{describe.names(covered, counts=False)} ({len(covered)} of the {len(needed)} "
                    f"notifier instances {describe.names(needed, counts=False)}); "
                    f"{describe.names(missing, counts=False)} {'stays' if len(missing) == 1 else 'stay'} "
                    f"unordered. An anchor read is an edge on the writers of "
                    f"the bytes it reads, not a join: a notifier left out can sit in the pending slot of "
                    f"the core on which {waiter.name} spins, and the all-to-all deadlocks",
                    fix=f"replace the anchor read by `after {target}` on task {waiter.name}",
                    related=((wait.span, "the blocking wait"),),
                )
