"""Order facts of a graph shared by several rule families (cached on the check context)."""

from __future__ import annotations

from lowering.checks.rule import CheckContext
from lowering.ir import Graph


def descendants(graph: Graph, ctx: CheckContext) -> dict[str, frozenset[str]]:
    """Transitive successors of each task."""
    cached = ctx.cache.get("descendants")
    if cached is None:
        acc: dict[str, set[str]] = {t.name: set() for t in graph.tasks}
        for t in graph.tasks:
            for a in ctx.ancestors[t.name]:
                acc[a].add(t.name)
        cached = {k: frozenset(v) for k, v in acc.items()}
        ctx.cache["descendants"] = cached
    return cached


def predecessors(graph: Graph, ctx: CheckContext) -> dict[str, set[str]]:
    """Direct producers of each task (every in-round edge)."""
    cached = ctx.cache.get("predecessors")
    if cached is None:
        cached = ctx.cache["predecessors"] = graph.predecessors()
    return cached


def unordered(ctx: CheckContext, a: str, b: str) -> bool:
    """Neither task is an ancestor of the other."""
    return a != b and a not in ctx.ancestors[b] and b not in ctx.ancestors[a]
