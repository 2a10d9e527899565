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
        _stmts(task.body, loads, stores, calls)
        found = cache[task.name] = (
            task.body,
            BodySummary(frozenset(loads), frozenset(stores), frozenset(calls)),
        )
    return found[1]


def _stmts(stmts, loads: set[str], stores: set[str], calls: set[str]) -> None:
    for s in stmts:
        if isinstance(s, ir.StoreS):
            stores.add(s.tensor)
            _value(s.value, loads, calls)
        elif isinstance(s, ir.LetS | ir.AssignS | ir.EvalS | ir.RemoteStoreS):
            _value(s.value, loads, calls)
        elif isinstance(s, ir.ForS):
            _stmts(s.body, loads, stores, calls)
        elif isinstance(s, ir.IfS):
            _value(s.cond, loads, calls)
            _stmts(s.then, loads, stores, calls)
            _stmts(s.orelse, loads, stores, calls)


def _value(v, loads: set[str], calls: set[str]) -> None:
    if isinstance(v, ir.LoadV):
        if not v.local:
            loads.add(v.tensor)
    elif isinstance(v, ir.BinV):
        _value(v.a, loads, calls)
        _value(v.b, loads, calls)
    elif isinstance(v, ir.CallV):
        calls.add(v.op)
        for a in v.args:
            _value(a, loads, calls)
        for _name, a in v.attrs:
            _value(a, loads, calls)
