"""Valid extents and sort chains in task bodies: an abstract interpreter at one parameter point.

For every tile value it tracks how many leading columns can be *finite* (valid), from
``valid(x, n)`` / ``fillpad(x, n, -inf)``, from ``full(..., -inf)`` (none), and, through
tensors, from what earlier tasks stored (a load of ``score_wide[t, 0:2048]`` holds at most as
many finite columns as the producers wrote). ``sort32`` starts a *chain* (runs of 32 records);
each ``mrgsort(s, block_len)`` merges four lists of ``block_len`` columns (two per record,
docs/runtime-semantics.md §11.2); ``topk_pairs(s, k)`` and slices of a sorted tile are *readouts*.

The facts are numbers at one parameter point (block and loop indices and runtime scalars are
bounded by intervals); the sort rules re-run this at every admissible point. Stores also
keep their symbolic valid extent, for the capacity rule that evaluates them per request.

This module runs the interpreter (``validity_interpreter``) over a graph and caches its facts
(``validity_facts``) per check context, for the tasks one kind of rule needs (their closure over
what they load: :func:`closure`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass

from lowering import body as ir_body
from lowering.checks.bodies import summary
from lowering.checks.points import CONST
from lowering.checks.request_space_cache import scalar_intervals
from lowering.checks.validity_facts import TaskFacts
from lowering.checks.validity_interpreter import Interpreter, TensorFinite
from lowering.ir import Graph
from lowering.source import Span
from lowering.symbolic import PARAM, Bin, Const, EvalError, Expr, Sym, evaluate, free_symbols


def analyse(
    graph: Graph,
    point: Mapping[str, int],
    scalars: Mapping[str, tuple[int, int]],
    only: set[str] | None = None,
) -> dict[str, TaskFacts]:
    """Facts of every task at one parameter point (tasks in program order, so a consumer sees
    what its producers stored). With ``only``, just the tasks named there are interpreted
    (the others get empty facts): ``only`` must hold every task that stores into a tensor
    an interpreted task loads (:func:`closure`), so that what they load is what the full
    analysis would see."""
    tensors: dict[str, TensorFinite] = {}
    out: dict[str, TaskFacts] = {}
    for task in graph.tasks:
        if only is not None and task.name not in only:
            out[task.name] = _NO_FACTS
            continue
        try:
            out[task.name] = Interpreter(graph, task, point, scalars, tensors).run()
        except EvalError:
            out[task.name] = TaskFacts()
    return out


_NO_FACTS = TaskFacts()


def closure(graph: Graph, seeds: set[str]) -> set[str]:
    """``seeds`` and every task whose stores can reach what they load: a task's facts depend
    on the tensors it loads, whose state comes from the stores of earlier tasks, whose stored
    values depend on what those load in turn."""
    stored_by: dict[str, list[str]] = {}
    for t in graph.tasks:
        for tensor in summary(graph, t).stores:
            stored_by.setdefault(tensor, []).append(t.name)
    out = set(seeds)
    pending = [tensor for name in seeds for tensor in summary(graph, graph.task(name)).loads]
    seen: set[str] = set()
    while pending:
        tensor = pending.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        for name in stored_by.get(tensor, ()):
            if name not in out:
                out.add(name)
                pending.extend(summary(graph, graph.task(name)).loads)
    return out


# What each kind of partial analysis is for: the tasks whose facts it must get right.
_SEED_OPS = {
    "sort": frozenset({"sort32"}),  # sort chains start at a sort32 (SortEvents)
    # stores with a valid extent: marked ones, and full(..., -inf) tiles (none finite)
    "valid": frozenset({*ir_body.VALID_OPS, "mask_tail"}),
}


def _seeds(s, kind: str) -> bool:
    return bool(s.calls & _SEED_OPS[kind]) or (kind == "valid" and s.fills_neg_inf)


def facts_for(ctx, point: Mapping[str, int], kind: str) -> dict[str, TaskFacts]:
    """:func:`analyse` at ``point`` (runtime scalars bounded by the accepted requests), exact for
    the tasks that call one of the ops of ``kind`` (``sort``: their sort events; ``valid``:
    their stores with a valid extent, declared or a full(..., -inf) tile) and empty for the
    tasks that cannot influence those.

    Points on which those tasks read the same (:class:`_Reads`) share one analysis: the rules
    visit every admissible point, and most parameters (a rank count, a protocol switch, a layer
    index compared with a constant) reach the bodies of a sort or a store in few ways, if any."""
    graph = ctx.graph
    only = ctx.cache.get(("validity.only", kind))
    if only is None:
        seeds = {t.name for t in graph.tasks if _seeds(summary(graph, t), kind)}
        only = ctx.cache[("validity.only", kind)] = closure(graph, seeds)
    reads = ctx.cache.get(("validity.reads", kind))
    if reads is None:
        reads = ctx.cache[("validity.reads", kind)] = _Reads(graph, only)
    scalars = scalar_intervals(ctx, point)
    key = ("validity", kind, reads.key(point), tuple(sorted(scalars.items())))
    if key not in ctx.cache:
        ctx.cache[key] = analyse(graph, point, scalars, only)
    return ctx.cache[key]


class _Reads:
    """What the interpreter can read of a parameter point for some tasks: the value of every
    symbol in their grids, the rank count and their bodies (regions, loop bounds, extents,
    tile shapes), except under a body ``if`` whose condition names parameters and constants
    only (``if LAYER_ID < NUM_HASH_LAYERS``): the interpreter evaluates that condition whole
    and takes one arm, so only its truth value is read. Two points with the same :meth:`key`
    give the same facts. A body that is an instance of a template (the PyPTO reader's lazy
    bodies, whose symbols are substituted when made) is not walked: the whole point is read
    (those graphs have one point anyway)."""

    def __init__(self, graph: Graph, tasks: set[str]):
        self.names: set[str] | None = set()
        self.conditions: dict[Expr, None] = {}
        for task in graph.tasks:
            if task.name not in tasks:
                continue
            if getattr(task.body, "template", None) is not None:
                self.names = None
                return
            self.names.update(s.name for s in free_symbols(task.grid))
            self._walk(task.body)
        if self.names & {"rank", "nranks"}:  # the interpreter binds them from the rank count
            self.names.update(s.name for s in free_symbols(graph.ranks))

    def key(self, point: Mapping[str, int]) -> tuple:
        if self.names is None:
            return tuple(sorted(point.items()))
        values = tuple(sorted((n, point[n]) for n in self.names if n in point))
        return values, tuple(self._truth(c, point) for c in self.conditions)

    @staticmethod
    def _truth(cond: Expr, point: Mapping[str, int]) -> int | None:
        try:
            return evaluate(cond, point)
        except EvalError:
            return None

    def _walk(self, body) -> None:
        assert self.names is not None
        seen: set[int] = set()
        stack = [body]
        while stack:
            x = stack.pop()
            kind = type(x)
            if kind in _LEAVES or x is None or id(x) in seen:
                continue
            seen.add(id(x))
            if kind in _EXPRS:
                self.names.update(s.name for s in free_symbols(x))
            elif kind is ir_body.IfS and _point_only(x.cond):
                self.conditions[x.cond.expr] = None  # type: ignore[union-attr]
                stack.extend((x.then, x.orelse))
            elif kind in (tuple, list, frozenset, set):
                stack.extend(x)
            elif kind is dict:
                stack.extend(x.values())
            elif isinstance(x, Expr):  # a kind of expression the table above does not list
                self.names.update(s.name for s in free_symbols(x))
            elif is_dataclass(x):
                names = _FIELDS.get(kind)
                if names is None:
                    names = _FIELDS[kind] = tuple(f.name for f in fields(x))
                stack.extend(getattr(x, n) for n in names)


_LEAVES = (str, int, float, bool, Span)  # no expression below
_EXPRS = (Const, Sym, Bin)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _point_only(cond) -> bool:
    return isinstance(cond, ir_body.IntV) and all(s.kind in (PARAM, CONST) for s in free_symbols(cond.expr))
