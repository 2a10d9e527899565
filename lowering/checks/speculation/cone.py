"""Shared speculation analysis: what early dispatch can stage while a task is incomplete.

The runtime (docs/runtime-semantics.md §6) makes a consumer an early candidate when every direct
producer is flagged ``early_resolve`` (and fully published) or already complete, and the
consumer has no predicate. Statically, a producer outside the descendants of W may already
be complete while W runs; a producer that is W or one of its descendants is incomplete, so
it must be flagged and itself staged. Not a rule module (no ``CODE``).
"""

from __future__ import annotations

import heapq

from lowering.checks.order import descendants, predecessors, submitted_while, successors
from lowering.checks.points import blocks
from lowering.checks.rule import CheckContext
from lowering.ir import Graph, Task

RESOURCES = ("aic", "aiv")


def cone(graph: Graph, ctx: CheckContext, root: Task, unflagged: frozenset[str] = frozenset()) -> list[Task]:
    """Tasks that can be pre-staged (gated) while ``root`` is incomplete, in submission order.

    ``unflagged`` names tasks whose ``early_resolve`` is taken as removed (to try a fix).
    """
    below = descendants(graph, ctx)[root.name]
    preds = predecessors(graph, ctx)
    succs = successors(graph, ctx)
    position = ctx.reach.position
    staged = {root.name}

    def flagged(name: str) -> bool:
        return graph.task(name).early_resolve and name not in unflagged

    # A staged task has a staged predecessor (its path from the root), so only successors of
    # staged tasks are candidates; they are decided in submission order, as a scan would.
    out = []
    frontier = [position[s] for s in succs[root.name]]
    heapq.heapify(frontier)
    decided: set[int] = set()
    while frontier:
        i = heapq.heappop(frontier)
        if i in decided:
            continue
        decided.add(i)
        t = graph.tasks[i]
        if t.predicate is not None or not submitted_while(graph, ctx, t.name, root.name, below):
            continue
        incomplete = [p for p in preds[t.name] if p == root.name or p in below]
        if all(p in staged and flagged(p) for p in incomplete):
            staged.add(t.name)
            out.append(t)
            for s in succs[t.name]:
                heapq.heappush(frontier, position[s])
    return out


def demand(tasks: list[Task], env: dict[str, int]) -> dict[str, int]:
    """Cores taken per physical kind: an AIC/AIV block takes one, a MIX block a whole cluster."""
    out = dict.fromkeys(RESOURCES, 0)
    for t in tasks:
        n = blocks(t, env)
        if t.core == "mix":
            out["aic"] += n
            out["aiv"] += 2 * n
        else:
            out[t.core] += n
    return out


def capacity(ctx: CheckContext) -> dict[str, int]:
    return {k: ctx.cores[k] for k in RESOURCES}
