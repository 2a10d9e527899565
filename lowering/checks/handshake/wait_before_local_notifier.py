"""D101: a blocking wait is not ordered after the local task whose notifies its peers need.

## What it catches

A task that spins in ``wait sig[i] >= e`` while some task that notifies ``sig`` is not one
of its ancestors in the local graph (explicit ``after`` or an inferred edge). Every rank
runs the same graph, so the notifier a peer is waiting for is, on that peer, the task of the
same name: its ordering is checked here, on the local graph (docs/runtime-semantics.md §15.5, rule
R1). Only credits are needed: a notify that adds a negative value -- the retire of consumed
credits on one's own rank after the wait, ``notify got[q] @ rank += -N`` -- or a zero-write
clear takes a cell down, and no wait needs it to run. A task that notifies before it waits is exempt when no block of it can be parked behind a
spinning sibling: a single block, or a ``sync_start`` grid (the runtime places every block
of the cohort on an idle core at once; a cohort larger than the device is O602). So is a
single block whose notifies on the signal all come *after* the wait (the credit it sends once
it has consumed a window): its own credit is a later phase of the cell, and each peer's copy
comes after the peer's wait, so no wait of this round needs it -- whether the count is right
is D103's (``good_later_credit.dsl``, verified deadlock-free over two rounds).

## Why it breaks on the device

A wait spins while it holds its core. The scheduler may park a block of the notifier in the
pending slot of that very core (a pending task only runs after the running one ends) or
leave it queued behind cores held by spinners and gated tasks. Then this rank never
notifies; if a peer did the same in the same epoch, the two waits need each other's parked
notifier and the all-to-all deadlocks. It shows up only with many ranks and many rounds,
as the EP8/EP16 MoE hang that 2-rank CI never saw.

## Example

    task push spmd(N_LOCAL) on aiv early_resolve { ...; notify data_arrived[rank] @ dst += 1 }
    task wait on aiv early_resolve {
      read(indices[0, 0])                                  # anchor read: orders after gate only
      for src in range(EP) { if src != rank { wait data_arrived[src] >= epoch * N_LOCAL } }
    }

## Use instead

    task wait on aiv after push early_resolve { ... }      # the waiter runs after every push block

## What dslc verify shows

With a producer that releases the notifier and the waiter together (the seed's gate:
``tests/fixtures/run/handshake_pre.dsl``, ``tests/fixtures/seed/dispatch_pre.dsl``) ``dslc verify``
finds the cross-rank cycle at EP 2 on one cluster per rank. In ``bad.dsl`` push and wait have no
producer: both are ready when submitted and enter the FIFO AIV queue in program order, so every
push block takes a slot before the waiter, and verify proves ``bad.dsl`` deadlock-free at EP 2
(N_LOCAL 2, 2 rounds). The finding stands - one common producer, or a queue race the runtime
model does not have, is enough to hang it.

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round: the order within a round (a later round overtaking an earlier one is D117).
Order: the graph's edges, plus in a PyPTO program the order a wait's count implies (a credit
the wait cannot pass without comes before the waiting task's successors: docs/lint.md, "Order").
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks import describe
from lowering.checks.handshake.need import notifies_after, same_epoch_notifiers, self_exempt
from lowering.checks.protocol.implied_order import progress_ancestors
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.source import Diagnostic

CODE = "D101"
NAME = "wait_before_local_notifier"
FAMILY = "handshake"
SEVERITY = "error"
SUMMARY = "a blocking wait is not ordered after the local notifier its peers need"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    for waiter in graph.tasks:
        reported: set[str] = set()
        for wait in waiter.waits:
            for name in sorted(same_epoch_notifiers(graph, ctx, waiter, wait, env)):
                if name in reported:
                    continue
                notifier = graph.task(name)
                if name == waiter.name:
                    if self_exempt(waiter, wait.signal) or notifies_after(waiter, wait):
                        continue
                    reported.add(name)
                    yield finding(
                        CODE,
                        SEVERITY,
                        wait.span,
                        f"{waiter.name} ({describe.grid(waiter)}) both notifies and waits on {wait.signal}, "
                        f"but not as one block that notifies first: a spinning block can hold the core a "
                        f"sibling block needs to send its notify, and peers then wait forever",
                        fix=f"move the wait into a single-block task with `after {waiter.name}`",
                    )
                    continue
                if name in progress_ancestors(graph, ctx)[waiter.name]:
                    continue
                reported.add(name)
                shape = waiter.core.upper()
                yield finding(
                    CODE,
                    SEVERITY,
                    waiter.header_span,
                    f"{waiter.name} blocks on {wait.signal} (expects {wait.expected}) but the local notifier "
                    f"{name} ({describe.grid(notifier)}) is not an ancestor; {describe.incoming(graph, waiter)}. "
                    f"The waiter can hold an {shape} core while a {name} block sits in that core's pending "
                    f"slot; if two ranks do this in one epoch the all-to-all deadlocks",
                    fix=f"add `after {name}` to task {waiter.name}",
                    related=((wait.span, "the blocking wait"), (notifier.header_span, "the notifier")),
                    data=(("task", waiter.name), ("add_after", name)),
                )
