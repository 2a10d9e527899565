"""What a task body touches, summarised once per task for the rules that only need a
little of it (which tensors it loads and stores, which ops it calls)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lowering import body as ir
from lowering.ir import Graph, Task
from lowering.symbolic import Const


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


def walk(stmts) -> Iterator[ir.Stmt]:
    """Every statement of a body, nested ones included, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, ir.ForS):
            yield from walk(s.body)
        elif isinstance(s, ir.IfS):
            yield from walk(s.then)
            yield from walk(s.orelse)


def is_zero(value) -> bool:
    """``0``, ``0.0``, ``zeros(...)`` or ``full(..., 0)`` (either zero sign)."""
    if isinstance(value, ir.IntV):
        return value.expr == Const(0)
    if isinstance(value, ir.FloatV):
        return value.value == 0.0
    if isinstance(value, ir.CallV):
        if value.op == "zeros":
            return True
        if value.op == "full" and len(value.args) == 3:
            return is_zero(value.args[2])
    return False


def zero_stores(task: Task) -> list[ir.StoreS]:
    """The plain stores of ``task`` whose value is an exact zero (a seed)."""
    return [s for s in walk(task.body) if isinstance(s, ir.StoreS) and s.mode == "write" and is_zero(s.value)]
