"""What a task body touches, summarised once per task for the rules that only need a
little of it (which tensors it loads and stores, which ops it calls)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from lowering import body as ir_body
from lowering.ir import Graph, Task
from lowering.symbolic import BLOCK, DYNAMIC, Const, Expr, free_symbols

T = TypeVar("T")


@dataclass(frozen=True)
class BodySummary:
    loads: frozenset[str]  # tensors loaded from GM (a non-local LoadV) anywhere in the body
    stores: frozenset[str]  # tensors written by a plain store (StoreS)
    calls: frozenset[str]  # ops of every call
    fills_neg_inf: bool = False  # some call is full(..., -inf): a tile with no finite column

    def renamed(self, renames: Mapping[str, str]) -> BodySummary:
        loads = frozenset(renames.get(n, n) for n in self.loads)
        return replace(self, loads=loads, stores=frozenset(renames.get(n, n) for n in self.stores))

    def __or__(self, other: BodySummary) -> BodySummary:
        return BodySummary(
            self.loads | other.loads,
            self.stores | other.stores,
            self.calls | other.calls,
            self.fills_neg_inf or other.fills_neg_inf,
        )


def summary(graph: Graph, task: Task) -> BodySummary:
    """The :class:`BodySummary` of ``task`` (cached on the graph). A body made from a template
    (``template``, ``renames`` and ``extra``, as the PyPTO reader's instances have) is summarised
    from the template, once for all its instances, without making the statements."""
    cache = graph.__dict__.setdefault("_body_summaries", {})
    found = cache.get(task.name)
    if found is None or found[0] is not task.body:
        body = task.body
        template = getattr(body, "template", None)
        if template is None:
            made = summarise(body)
        else:
            cache = graph.__dict__.setdefault("_template_summaries", {})
            made = of_template(cache, template, summarise).renamed(body.renames) | summarise(body.extra)
        found = cache[task.name] = (body, made)
    return found[1]


def of_template(cache: dict, template: tuple, compute: Callable[[tuple], T]) -> T:
    """``compute(template)``, once per template in ``cache``: an instance's body made from a
    template (``template``, ``renames``, ``extra``: the PyPTO reader's ``LazyBody``) shares with
    every other instance what depends only on the template's statements."""
    known = cache.get(id(template))
    if known is None or known[0] is not template:  # the template is kept: its id stays its own
        known = cache[id(template)] = (template, compute(template))
    return known[1]


def summarise(stmts) -> BodySummary:
    """The :class:`BodySummary` of ``stmts``, from their statements."""
    loads: set[str] = set()
    stores: set[str] = set()
    calls: set[str] = set()
    neg_inf = False
    for s in ir_body.nested_stmts(stmts):
        if isinstance(s, ir_body.StoreS):
            stores.add(s.tensor)
        for v in (w for top in ir_body.stmt_values(s) for w in ir_body.nested_values(top)):
            if isinstance(v, ir_body.LoadV) and not v.local:
                loads.add(v.tensor)
            elif isinstance(v, ir_body.CallV):
                calls.add(v.op)
                neg_inf = neg_inf or (v.op == "full" and len(v.args) == 3 and is_neg_inf(v.args[2]))
    return BodySummary(frozenset(loads), frozenset(stores), frozenset(calls), neg_inf)


def is_neg_inf(v: ir_body.Value) -> bool:
    """``-inf`` as a float literal or the negation of ``inf``."""
    if isinstance(v, ir_body.FloatV):
        return v.value == float("-inf")
    if isinstance(v, ir_body.CallV) and v.op == "neg" and v.args and isinstance(v.args[0], ir_body.FloatV):
        return v.args[0].value == float("inf")
    return False


def ops_called(stmts) -> set[str]:
    """The ops of every call in ``stmts`` (nested statements included)."""
    return {
        v.op
        for s in ir_body.nested_stmts(stmts)
        for top in ir_body.stmt_values(s)
        for v in ir_body.nested_values(top)
        if isinstance(v, ir_body.CallV)
    }


def is_zero(value) -> bool:
    """``0``, ``0.0``, ``zeros(...)`` or ``full(..., 0)`` (either zero sign)."""
    if isinstance(value, ir_body.IntV):
        return value.expr == Const(0)
    if isinstance(value, ir_body.FloatV):
        return value.value == 0.0
    if isinstance(value, ir_body.CallV):
        if value.op == "zeros":
            return True
        if value.op == "full" and len(value.args) == 3:
            return is_zero(value.args[2])
    return False


def zero_stores(task: Task) -> list[ir_body.StoreS]:
    """The plain stores of ``task`` whose value is an exact zero (a seed)."""
    return [
        s
        for s in ir_body.nested_stmts(task.body)
        if isinstance(s, ir_body.StoreS) and s.mode == "write" and is_zero(s.value)
    ]


class BlockUniform:
    """Which data-dependent conditions of a task every block of it evaluates alike.

    A condition that reads data (``if read(mode[0, 0]) > 0``) is uncountable, but when every
    value it is computed from is the same for every block of the grid -- parameters, runtime
    scalars, ``rank``, loop indices, and elements of tensors no task of the graph writes (layer
    inputs) at indices that do not depend on ``block`` -- all blocks take the same branch.
    """

    def __init__(self, graph: Graph, task: Task):
        self.graph = graph
        self.defs: dict[str, list] = {}
        self.conds: dict[tuple[int, int], ir_body.Value] = {}
        for s in ir_body.nested_stmts(task.body):
            if isinstance(s, ir_body.LetS | ir_body.AssignS):
                self.defs.setdefault(s.name, []).append(s.value)
            elif isinstance(s, ir_body.IfS):
                self.conds[(s.span.line, s.span.col)] = s.cond
        self.written = {a.tensor for t in graph.tasks for a in t.accesses if a.writes}
        self._memo: dict[str, bool] = {}

    def expr(self, e: Expr) -> bool:
        for sym in free_symbols(e):
            if sym.kind == BLOCK:
                return False
            if sym.kind == DYNAMIC and not self._name(sym.name):
                return False
        return True

    def _name(self, name: str) -> bool:
        if name not in self._memo:
            self._memo[name] = False  # a cycle is not uniform
            if name.startswith("data@"):
                line, col = name[5:].split(":")
                value = self.conds.get((int(line), int(col)))
                self._memo[name] = value is not None and self.value(value)
            else:
                values = self.defs.get(name, [])
                self._memo[name] = len(values) == 1 and self.value(values[0])
        return self._memo[name]

    def value(self, v) -> bool:
        if isinstance(v, ir_body.IntV):
            return self.expr(v.expr)
        if isinstance(v, ir_body.FloatV | ir_body.DtypeV):
            return True
        if isinstance(v, ir_body.ListV):
            return all(self.expr(i) for i in v.items)
        if isinstance(v, ir_body.LocalV):
            return self._name(v.name)
        if isinstance(v, ir_body.LoadV):
            if not v.local and (v.tensor in self.written or self.graph.tensors[v.tensor].kind != "input"):
                return False
            if v.local and not self._name(v.tensor):
                return False
            return all(self.expr(e) for r in v.region for e in (r.start, r.stop, r.step))
        if isinstance(v, ir_body.BinV):
            return self.value(v.a) and self.value(v.b)
        if isinstance(v, ir_body.CallV):
            return all(self.value(a) for a in v.args) and all(self.value(a) for _n, a in v.attrs)
        return False
