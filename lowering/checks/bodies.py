"""What a task body touches, summarised once per task for the rules that only need a
little of it (which tensors it loads and stores, which ops it calls)."""

from __future__ import annotations

from dataclasses import dataclass

from lowering import body as ir
from lowering.ir import Graph, Task


@dataclass(frozen=True)
class BodySummary:
    loads: frozenset[str]  # tensors loaded from GM (a non-local LoadV) anywhere in the body
    stores: frozenset[str]  # tensors written by a plain store (StoreS)
    calls: frozenset[str]  # ops of every call


def summary(graph: Graph, task: Task) -> BodySummary:
    """The :class:`BodySummary` of ``task`` (cached on the graph)."""
    cache = graph.__dict__.setdefault("_body_summaries", {})
    found = cache.get(task.name)
    if found is None or found[0] is not task.body:
        loads: set[str] = set()
        stores: set[str] = set()
        calls: set[str] = set()
        for s in ir.nested_stmts(task.body):
            if isinstance(s, ir.StoreS):
                stores.add(s.tensor)
            for v in (w for top in ir.stmt_values(s) for w in ir.nested_values(top)):
                if isinstance(v, ir.LoadV) and not v.local:
                    loads.add(v.tensor)
                elif isinstance(v, ir.CallV):
                    calls.add(v.op)
        found = cache[task.name] = (
            task.body,
            BodySummary(frozenset(loads), frozenset(stores), frozenset(calls)),
        )
    return found[1]
