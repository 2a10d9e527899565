"""D116: per-chunk tasks that each wait on the peer's matching chunk.

## What it catches

A task array -- ``task x[c]`` declared in a layer-level ``for c in parallel(...)`` (or
``range``) -- whose elements block in a ``wait`` on cells fed by the peer's copy of the
*same chunk* (a notifier ``y[c]`` with the same index, possibly ``x[c]`` itself), while
nothing orders the waiting elements among themselves (docs/runtime-semantics.md §21.1, rule R14).
Arrays chained by edges run in the same order on every rank and are not reported.

## Why it breaks on the device

Each chunk is a task of its own, so each rank's scheduler picks the order: rank 0 may start
chunk 0 while rank 1 starts chunk 1. A waiting chunk spins while it holds its core; if the
chunk its peer needs sits in that core's pending slot or behind the cores the spinners hold,
rank 0 waits for rank 1's chunk 0, which waits behind rank 1's chunk 1, which waits for rank
0's chunk 1, which waits behind rank 0's chunk 0. pypto's distributed docs call this out:
``pl.parallel`` chunk tasks waiting on another rank's matching chunk can deadlock.

## Example

    for c in parallel(CHUNKS) {
      task exchange[c] on aiv after send[c] {
        for p in range(EP) { if p != rank { notify ready[c, rank] @ p += 1 } }
        for src in range(EP) { if src != rank { wait ready[c, src] >= epoch } }
      }
    }

## Use instead

    task publish spmd(CHUNKS) on aiv after send {
      for p in range(EP) { if p != rank { notify ready[block, rank] @ p += 1 } }
    }
    task exchange spmd(CHUNKS) on aiv sync_start after publish {       # one grid, all blocks co-resident
      for src in range(EP) { if src != rank { wait ready[block, src] >= epoch } }
    }

## Parameter and round coverage

Parameters: the compiled point, and again at the probe points of every structure class (`dslc
check`, docs/lint.md "Coverage": one point per setting of the parameter-only conditions and
`min`/`max`, and each ranged parameter at its extremes; at most 8 per class, the finding says
when that is fewer than the admissible points).
Rounds: one round.
Order: the graph's edges, plus in a PyPTO program the order a wait's count implies (a credit
the wait cannot pass without comes before the waiting task's successors: docs/lint.md, "Order").
"""

from __future__ import annotations

from collections.abc import Iterator

from lowering.checks.protocol import counting
from lowering.checks.protocol.implied_order import progress_ancestors
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph, Task
from lowering.source import Diagnostic

CODE = "D116"
NAME = "chunk_tasks_wait_across_ranks"
FAMILY = "protocol"
SEVERITY = "error"
SUMMARY = "per-chunk tasks wait on a peer's matching chunk; ranks may run the chunks in different orders"


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    env = graph.env()
    anc = progress_ancestors(graph, ctx)
    arrays: dict[str, list[Task]] = {}
    for t in graph.tasks:
        if t.index is not None:
            arrays.setdefault(t.base, []).append(t)
    reported: set = set()
    for base, elements in arrays.items():
        waiting = [t for t in elements if t.waits]
        if len(waiting) < 2:
            continue
        for t in waiting:
            others = [
                u
                for u in waiting
                if u.name != t.name and u.name not in anc[t.name] and t.name not in anc[u.name]
            ]
            if not others:
                continue
            for wait in t.waits:
                if wait.span in reported:
                    continue
                fed_by = [graph.task(n) for n in sorted(counting.feeders(graph, ctx, t, wait, env))]
                matching = [f for f in fed_by if f.index == t.index]
                if not matching:
                    continue
                reported.add(wait.span)
                peer = matching[0]
                source = "its own notify" if peer.name == t.name else f"{peer.name}"
                yield finding(
                    CODE,
                    SEVERITY,
                    wait.span,
                    f"{t.name} is one of {len(elements)} per-chunk tasks `{base}[...]` that each wait on "
                    f"{wait.signal} for the peer's matching chunk ({source} on the peer), and nothing orders "
                    f"{t.name} with {others[0].name}: ranks can run the chunks in different orders, and a chunk "
                    f"spinning on one rank holds the core its peer's chunk needs on the other -- a cross-rank "
                    f"deadlock",
                    fix=f"replace the chunk tasks by one `spmd({len(elements)}) sync_start` grid (block = chunk)",
                )
