"""Task arrays back into orchestration loops, for the PyPTO emitter.

The IR has every instance of a task array (``for e in range(N) { task mm[e] ... }``) as a
task of its own, with the index folded into its grid, body and deps. To write one
``for e in pl.parallel(N): with pl.spmd(...)`` instead of N copies, the instances are
*anti-unified*: every place where they differ must be an affine function of the index
(``e * RECV_MAX + block * 128``), found by comparing the expressions as polynomials. When
that fails the emitter falls back to one single-iteration loop per instance, which reads
back to the same graph.
"""

from __future__ import annotations

import dataclasses
import re

from lowering.ir import DepRef, Task
from lowering.source import Span
from lowering.symbolic import Bin, Const, Expr, Sym, from_poly, poly

_INSTANCE = re.compile(r"^(.*)\[(-?[0-9]+)\]$")


class _Fail(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class ArrayDep:
    """A dep on ``base[var + offset]`` (an element of the task-id array of ``base``)."""

    base: str
    offset: int


MAX_PERIOD = 8  # tasks per iteration of a layer loop that the emitter folds back


def groups(tasks: list[Task]) -> list[list[list[Task]]]:
    """Tasks split into loop groups: each group is a list of iterations (periods), each
    iteration the instances of one or more task arrays that share an index, the indices
    evenly spaced (``for e in range(N) { task a[e] ... task b[e] ... }``). A task that is
    in no such group is a group of one iteration of itself."""
    out: list[list[list[Task]]] = []
    i = 0
    while i < len(tasks):
        best: list[list[Task]] | None = None
        if tasks[i].index is not None:
            for period in range(1, MAX_PERIOD + 1):
                found = _periods(tasks, i, period)
                if found and len(found) >= 2 and (best is None or len(found) * period > sum(map(len, best))):
                    best = found
        if best is None:
            out.append([[tasks[i]]])
            i += 1
        else:
            out.append(best)
            i += sum(map(len, best))
    return out


def _periods(tasks: list[Task], i: int, period: int) -> list[list[Task]] | None:
    first = tasks[i : i + period]
    if len(first) < period or len({t.base for t in first}) != period:
        return None
    if any(t.index != first[0].index or t.in_sequential_loop != first[0].in_sequential_loop for t in first):
        return None
    bases = [t.base for t in first]
    found = [first]
    step = None
    j = i + period
    while j + period <= len(tasks):
        nxt = tasks[j : j + period]
        if [t.base for t in nxt] != bases or any(t.index != nxt[0].index for t in nxt):
            break
        if any(t.in_sequential_loop != first[0].in_sequential_loop for t in nxt):
            break
        gap = nxt[0].index - found[-1][0].index  # type: ignore[operator]
        if gap <= 0 or (step is not None and gap != step):
            break
        step = gap
        found.append(nxt)
        j += period
    return found


def templates(periods: list[list[Task]], var: str) -> list[tuple[Task, list[object]]] | None:
    """Per position in the iteration, the task standing for every iteration (None if the
    instances do not differ only affinely in the index)."""
    out = []
    for position in range(len(periods[0])):
        found = template([p[position] for p in periods], var)
        if found is None:
            return None
        out.append(found)
    return out


def template(run: list[Task], var: str) -> tuple[Task, list[object]] | None:
    """One task standing for every instance of ``run`` with ``Sym(var, loop)`` as the index,
    and its deps (task names, or ArrayDep for an element that moves with the index)."""
    if len(run) < 2:
        return None
    idxs = [t.index for t in run]
    sym = Sym(var, "loop")
    try:
        for field in ("core", "early_resolve", "sync_start", "manual", "in_sequential_loop"):
            if len({getattr(t, field) for t in run}) != 1:
                raise _Fail
        grid = _au([t.grid for t in run], idxs, sym)
        body = _au([t.body for t in run], idxs, sym)
        predicate = _au([t.predicate for t in run], idxs, sym)
        deps = _deps(run, idxs)
    except _Fail:
        return None
    first = run[0]
    task = dataclasses.replace(first, grid=grid, body=body, predicate=predicate, after=())
    return task, deps


def _deps(run: list[Task], idxs: list[int]) -> list[object]:
    lists = [[d.target for d in t.after] for t in run]
    if len({len(x) for x in lists}) != 1:
        raise _Fail
    out: list[object] = []
    for column in zip(*lists, strict=True):
        if len(set(column)) == 1:
            out.append(column[0])
            continue
        parts = [_INSTANCE.match(c) for c in column]
        if not all(parts) or len({p.group(1) for p in parts}) != 1:  # type: ignore[union-attr]
            raise _Fail
        offsets = {int(p.group(2)) - i for p, i in zip(parts, idxs, strict=True)}  # type: ignore[union-attr]
        if len(offsets) != 1:
            raise _Fail
        out.append(ArrayDep(parts[0].group(1), offsets.pop()))  # type: ignore[union-attr]
    return out


def _au(values: list, idxs: list[int], var: Sym):
    first = values[0]
    if all(v == first for v in values[1:]):
        return first
    if all(isinstance(v, Expr) for v in values):
        return _au_expr(values, idxs, var)
    if isinstance(first, Span):
        return first
    if isinstance(first, tuple) and all(isinstance(v, tuple) and len(v) == len(first) for v in values):
        return tuple(_au([v[i] for v in values], idxs, var) for i in range(len(first)))
    if dataclasses.is_dataclass(first) and all(type(v) is type(first) for v in values):
        changes = {}
        for f in dataclasses.fields(first):
            column = [getattr(v, f.name) for v in values]
            out = _au(column, idxs, var)
            if out is not column[0]:
                changes[f.name] = out
        return dataclasses.replace(first, **changes) if changes else first
    raise _Fail


def _au_expr(values: list[Expr], idxs: list[int], var: Sym) -> Expr:
    first = values[0]
    if all(isinstance(v, Bin) and v.op == first.op for v in values) and isinstance(first, Bin):
        try:
            a = _au_expr([v.a for v in values], idxs, var)  # type: ignore[union-attr]
            b = _au_expr([v.b for v in values], idxs, var)  # type: ignore[union-attr]
            return Bin(first.op, a, b)
        except _Fail:
            pass
    polys = [poly(v) for v in values]
    if any(p is None for p in polys):
        raise _Fail
    p0, p1 = polys[0], polys[1]
    step = idxs[1] - idxs[0]
    slope: dict = {}
    for mono in set(p0) | set(p1):
        diff = p1.get(mono, 0) - p0.get(mono, 0)  # type: ignore[union-attr]
        if diff % step:
            raise _Fail
        if diff:
            slope[mono] = diff // step
    base = {m: c - idxs[0] * slope.get(m, 0) for m, c in p0.items()}  # type: ignore[union-attr]
    for m, c in slope.items():
        base.setdefault(m, -idxs[0] * c)
    for p, i in zip(polys, idxs, strict=True):
        want = {m: base.get(m, 0) + i * slope.get(m, 0) for m in set(base) | set(slope)}
        want = {m: c for m, c in want.items() if c}
        if want != p:
            raise _Fail
    out: dict = {m: c for m, c in base.items() if c}
    for m, c in slope.items():
        key = tuple(sorted((*m, var), key=str))
        out[key] = out.get(key, 0) + c
    return from_poly(out) if out else Const(0)


__all__ = ["ArrayDep", "DepRef", "groups", "template", "templates"]
