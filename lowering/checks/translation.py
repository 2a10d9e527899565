"""Tasks whose accesses differ only by a constant shift of each tensor's coordinates.

A model instantiates one kernel into thousands of tasks (one per layer, expert or head) whose
regions differ by a constant: `recv[e * RECV_MAX + t * TILE : ...]` for expert `e`. A verdict
that compares the accesses of one task with each other -- do blocks of its grid meet -- is the
same for two such tasks when every access of a tensor moves by the same offset in each
dimension and no region reaches past either end of its tensor (where the analysis clips it,
and a shift would change what is left). :func:`shift_key` is equal for two such tasks, so a
rule judges one of them and reuses the verdict for the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lowering.ir import Access, Graph, Task
from lowering.symbolic import Bin, EvalError, Expr, Interval, bounds, difference, evaluate, free_symbols, poly


def shift_key(graph: Graph, task: Task, accs: list[Access]) -> tuple | None:
    """The regions of ``accs`` with each tensor's constant offsets taken relative to its first
    access, or None when that is not sound for this task (a region that may be clipped, an
    offset that cannot be separated from the rest, a bound that cannot be evaluated)."""
    found = shifted(graph, task, accs)
    return None if found is None else found[0]


def shifted(
    graph: Graph, task: Task, accs: list[Access]
) -> tuple[tuple, list[tuple[int | None, ...]]] | None:
    """:func:`shift_key` and the constant offset of each access per dimension, None for a
    dimension that names a value unknown at the point: the analysis takes that one whole, at
    every offset, so the executions of two tasks with one key are the same there and differ by
    the difference of their offsets in the others."""
    consts, scalars = _point(graph)
    split = _splitter(graph, consts)
    # (the non-constant terms of a range, its loops, the grid) -> how far it reaches besides
    # its offsets: the same for every instance, as the terms range over the same values
    reach: dict[tuple, tuple[int, int] | str] = graph.__dict__.setdefault("_shift_reach", {})
    first: dict[str, tuple[int, tuple[int, ...]]] = {}
    out, placed = [], []
    for a in accs:
        if any(loop.var in consts for loop in a.loops):
            return None  # a loop variable shadows a constant: its terms are not offsets
        env = None
        dims = graph.tensors[a.tensor].dims
        region, offsets, moves = [], [], []
        for rng, extent in zip(a.region, dims, strict=True):
            start, stop = split(rng.start), split(rng.stop)
            if start is None or stop is None:
                return None
            key = (start[0], stop[0], a.loops, task.blocks)
            found = reach.get(key)
            if found is None:
                env = env if env is not None else _ranges(graph, task, a, consts, scalars)
                found = reach[key] = _reach(rng.start, rng.stop, start[1], stop[1], env)
            whole = found == _WHOLE
            if not whole and (found == _UNBOUNDED or not _fits(found, start[1], stop[1], extent)):
                return None
            region.append((start[0], stop[0], stop[1] - start[1], rng.step, rng.point))
            offsets.append(start[1])
            moves.append(None if whole else start[1])
        index, base = first.setdefault(a.tensor, (len(first), tuple(offsets)))
        relative = tuple(o - b for o, b in zip(offsets, base, strict=True))
        out.append(
            (index, dims, a.mode, a.dtype, tuple(region), relative, a.loops, a.conds, a.peer, a.span, a.order)
        )
        placed.append(tuple(moves))
    return tuple(out), placed


def _point(graph: Graph) -> tuple[dict[str, int], dict[str, Interval]]:
    point = graph.__dict__.get("_shift_point")
    if point is None:
        scalars = dict(graph.scalar_ranges())
        consts = {k: v for k, v in graph.env().items() if isinstance(v, int) and k not in scalars}
        point = graph.__dict__["_shift_point"] = (consts, scalars)
    return point


def _splitter(graph: Graph, consts: Mapping[str, int]) -> Callable[[Expr], tuple[frozenset, int] | None]:
    """:func:`_split` at the graph's point, once per expression: the instances of a kernel share
    most of theirs (kernel_instances.Images)."""
    done: dict[int, tuple[Expr, tuple[frozenset, int] | None]] = graph.__dict__.setdefault(
        "_shift_splits", {}
    )

    def split(expr: Expr) -> tuple[frozenset, int] | None:
        found = done.get(id(expr))
        if found is None or found[0] is not expr:  # the expression is kept: its id stays its own
            found = done[id(expr)] = (expr, _split(expr, consts))
        return found[1]

    return split


def _split(expr: Expr, consts: Mapping[str, int]) -> tuple[frozenset, int] | None:
    """``expr`` as (its terms that are not constant at the point, the sum of those that are)."""
    form = poly(expr)
    if form is None:
        return None
    rest, offset = [], 0
    for mono, coeff in form.items():
        value = coeff
        try:
            for atom in mono:
                value *= evaluate(atom, consts)
        except (EvalError, TypeError):
            rest.append((mono, coeff))
        else:
            offset += value
    return frozenset(rest), offset


def _ranges(
    graph: Graph, task: Task, access: Access, consts: Mapping[str, int], scalars: Mapping[str, Interval]
) -> dict[str, int | Interval]:
    """Every name an execution of ``access`` can look up, bound to the interval it ranges over."""
    env: dict[str, int | Interval] = {**consts, **scalars}
    env.update(block=(0, max(task.blocks, 1) - 1), rank=(0, max(graph.nranks, 1) - 1), nranks=graph.nranks)
    for loop in access.loops:
        try:
            lo, lo_hi = bounds(_as_modulo(loop.start), env)
            hi_lo, hi = bounds(_as_modulo(loop.stop), env)
            step = bounds(loop.step, env)
        except EvalError:
            env.pop(loop.var, None)  # as the analysis does: what the variable indexes is taken whole
            continue
        last = hi - 1
        if step[0] == step[1] and step[0] > 0:  # the last value the loop takes, where it is known
            try:
                span = bounds(_as_modulo(difference(loop.stop, loop.start)), env)
            except EvalError:
                span = (0, -1)
            if lo == lo_hi and hi_lo == hi:
                last = lo + (last - lo) // step[0] * step[0]
            elif span[0] == span[1] > 0:
                last = min(last, lo_hi + (span[0] - 1) // step[0] * step[0])
        env[loop.var] = (lo, max(lo, last))
    return env


_WHOLE = "whole"  # a range naming a value unknown at the point: taken whole at any offset
_UNBOUNDED = "unbounded"  # a range whose bounds cannot be evaluated


def _reach(start: Expr, stop: Expr, start_offset: int, stop_offset: int, env) -> tuple[int, int] | str:
    """The least start and the greatest stop of a range over its executions, without its
    constant offsets (:data:`_WHOLE`, :data:`_UNBOUNDED`)."""
    if any(s.name not in env for e in (start, stop) for s in free_symbols(e)):
        return _WHOLE
    try:
        lo, _ = bounds(_as_modulo(start), env)
        _, hi = bounds(_as_modulo(stop), env)
    except EvalError:
        return _UNBOUNDED
    return lo - start_offset, hi - stop_offset


def _fits(reach: tuple[int, int], start_offset: int, stop_offset: int, extent: int | None) -> bool:
    """Whether every execution's range lies within ``[0, extent)``: nothing is clipped."""
    return reach[0] + start_offset >= 0 and (extent is None or reach[1] + stop_offset <= extent)


def _as_modulo(expr: Expr) -> Expr:
    """``expr`` with ``x - (x // n) * n`` written ``x % n`` (equal for every integer ``x`` and
    ``n``), whose bounds are ``[0, n)`` where interval arithmetic on the difference is not: the
    block's position inside a group (``block % SPLIT``) is written the long way."""
    if not isinstance(expr, Bin):
        return expr
    a, b = _as_modulo(expr.a), _as_modulo(expr.b)
    if (
        expr.op == "-"
        and isinstance(b, Bin)
        and b.op == "*"
        and isinstance(b.a, Bin)
        and b.a.op == "//"
        and b.a.a == a
        and b.a.b == b.b
    ):
        return Bin("%", a, b.b)
    return expr if a is expr.a and b is expr.b else Bin(expr.op, a, b)
