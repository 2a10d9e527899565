"""Shared analysis for the sort and capacity rules: runtime-scalar spaces, host guards,
vectorised interval bounds, and short texts for messages.

A *scalar space* is the set of requests the host can send: every combination of the
declared runtime scalars (``scalar start_pos: i32 in 0..8192``), enumerated as NumPy arrays
(thinned to extremes plus a spread when the product is too large), with one boolean mask per
host ``guard``. Rules bound symbolic expressions at every request at once with
:func:`vbounds`, the vectorised twin of ``symbolic.bounds``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lowering.ir import Condition, Domain, Graph, Loop
from lowering.symbolic import (
    BLOCK,
    LOOP,
    SCALAR,
    Bin,
    Const,
    EvalError,
    Expr,
    Sym,
    binop,
    evaluate,
    free_symbols,
    from_poly,
    poly,
)

MAX_POINTS = 1 << 21  # requests enumerated per parameter point

Bound = int | np.ndarray
Interval = tuple[Bound, Bound]


# ---------------------------------------------------------------- vectorised bounds


def _as(v: Bound) -> np.ndarray:
    return np.asarray(v, dtype=np.int64)


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor_divide(a, b)


def _cdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -np.floor_divide(-a, b)


def _lowest(values) -> np.ndarray:
    """Element-wise minimum of arrays that broadcast (a bound per request next to a scalar)."""
    out = values[0]
    for v in values[1:]:
        out = np.minimum(out, v)
    return out


def _highest(values) -> np.ndarray:
    out = values[0]
    for v in values[1:]:
        out = np.maximum(out, v)
    return out


def vbounds(expr: Expr, env: Mapping[str, Bound | Interval]) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive (lo, hi) of ``expr``; every env value is an int, an array, or a (lo, hi) pair
    of ints/arrays. Sound like ``symbolic.bounds``; raises EvalError for unbound symbols or a
    divisor range containing zero."""
    if isinstance(expr, Const):
        v = _as(expr.value)
        return v, v
    if isinstance(expr, Sym):
        try:
            v = env[expr.name]
        except KeyError:
            raise EvalError(f"'{expr.name}' is not known here") from None
        if isinstance(v, tuple):
            return _as(v[0]), _as(v[1])
        return _as(v), _as(v)
    assert isinstance(expr, Bin)
    alo, ahi = vbounds(expr.a, env)
    blo, bhi = vbounds(expr.b, env)
    op = expr.op
    # An exact operand comes back as one array twice (``lo is hi``); the arithmetic below
    # then computes one result instead of four corners (most index terms are exact per request).
    a_exact, b_exact = alo is ahi, blo is bhi
    if op in ("+", "-", "*") and a_exact and b_exact:
        v = alo + blo if op == "+" else alo - blo if op == "-" else alo * blo
        return v, v
    if op == "+":
        return alo + blo, ahi + bhi
    if op == "-":
        return alo - bhi, ahi - blo
    if op == "*":
        if b_exact and blo.ndim == 0:  # a scalar factor: the corners are known
            return (alo * blo, ahi * blo) if blo >= 0 else (ahi * blo, alo * blo)
        if a_exact and alo.ndim == 0:
            return (blo * alo, bhi * alo) if alo >= 0 else (bhi * alo, blo * alo)
        c = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
        return _lowest(c), _highest(c)
    if op in ("//", "cdiv"):
        if np.any((blo <= 0) & (bhi >= 0)):
            raise EvalError("divisor may be zero")
        f = _floordiv if op == "//" else _cdiv
        if b_exact:  # x // b is monotone in x: non-decreasing for b > 0, non-increasing for b < 0
            if a_exact:
                v = f(alo, blo)
                return v, v
            if blo.ndim == 0:
                return (f(alo, blo), f(ahi, blo)) if blo > 0 else (f(ahi, blo), f(alo, blo))
        c = [f(x, y) for x in (alo, ahi) for y in (blo, bhi)]
        return _lowest(c), _highest(c)
    if op == "%":
        if np.any((blo <= 0) & (bhi >= 0)):
            raise EvalError("divisor may be zero")
        exact = (alo == ahi) & (blo == bhi)
        m = np.maximum(np.abs(blo), np.abs(bhi)) - 1
        safe_b = np.where(blo == 0, 1, blo)
        ex = np.mod(alo, safe_b)
        lo = np.where(exact, ex, np.where((alo >= 0) & (blo > 0), 0, -m))
        hi = np.where(exact, ex, np.where(alo >= 0, np.minimum(m, np.maximum(ahi, 0)), m))
        return lo, hi
    if op == "min":
        return np.minimum(alo, blo), np.minimum(ahi, bhi)
    if op == "max":
        return np.maximum(alo, blo), np.maximum(ahi, bhi)
    if op in ("==", "!=", "<", "<=", ">", ">="):
        certain_true = {
            "<": ahi < blo,
            "<=": ahi <= blo,
            ">": alo > bhi,
            ">=": alo >= bhi,
            "==": (alo == ahi) & (blo == bhi) & (alo == blo),
            "!=": (ahi < blo) | (alo > bhi),
        }[op]
        certain_false = {
            "<": alo >= bhi,
            "<=": alo > bhi,
            ">": ahi <= blo,
            ">=": ahi < blo,
            "==": (ahi < blo) | (alo > bhi),
            "!=": (alo == ahi) & (blo == bhi) & (alo == blo),
        }[op]
        return _as(np.where(certain_true, 1, 0)), _as(np.where(certain_false, 0, 1))
    if op in ("and", "or"):  # on truth values: any non-zero integer is true, as in evaluate()
        a_lo, a_hi = _truth(alo, ahi)
        b_lo, b_hi = _truth(blo, bhi)
        f = np.minimum if op == "and" else np.maximum
        return f(a_lo, b_lo), f(a_hi, b_hi)
    raise EvalError(f"unknown operator {op!r}")


def _truth(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (lo, hi) truth value, 0 or 1, of an integer in [lo, hi]: surely true when the range
    leaves out zero, surely false when it is zero alone."""
    return _as((lo > 0) | (hi < 0)), _as((lo != 0) | (hi != 0))


def veval(expr: Expr, env: Mapping[str, Bound]) -> np.ndarray:
    """Exact value of ``expr`` when every symbol is bound to an int or an array."""
    lo, _ = vbounds(expr, env)
    return lo


# ---------------------------------------------------------------- symbolic bounds

SInterval = tuple[Expr, Expr]


def _sfold(op: str, xs: Sequence[Expr]) -> Expr:
    unique = list(dict.fromkeys(xs))
    out = unique[0]
    for x in unique[1:]:
        out = binop(op, out, x)
    return out


def _smin(*xs: Expr) -> Expr:
    return _sfold("min", xs)


def _smax(*xs: Expr) -> Expr:
    return _sfold("max", xs)


def sbounds(expr: Expr, env: Mapping[str, SInterval], positive: frozenset[str] = frozenset()) -> SInterval:
    """The symbolic twin of :func:`vbounds`: inclusive (lo, hi) *expressions* of ``expr`` when
    each symbol named in ``env`` (block and loop indices) ranges over an interval whose ends
    are expressions of the other symbols (runtime scalars, parameters, constants), which stay
    free. Evaluated at one request, the ends equal what :func:`vbounds` computes there.
    ``positive`` names parameters and constants known to be positive at every admissible
    point: a product or quotient by one of them is monotone (one bound, not four). Raises
    EvalError for an operator it cannot bound symbolically."""
    if isinstance(expr, Const):
        return expr, expr
    if isinstance(expr, Sym):
        return env.get(expr.name, (expr, expr))
    assert isinstance(expr, Bin)
    alo, ahi = sbounds(expr.a, env, positive)
    blo, bhi = sbounds(expr.b, env, positive)
    op = expr.op
    if alo == ahi and blo == bhi:  # exact operands: the exact value (also for % and comparisons)
        v = binop(op, alo, blo)
        return v, v
    if op == "+":
        return binop("+", alo, blo), binop("+", ahi, bhi)
    if op == "-":
        return binop("-", alo, bhi), binop("-", ahi, blo)
    if op in ("*", "//", "cdiv"):
        k = blo.value if isinstance(blo, Const) and blo == bhi else None
        if k is None and blo == bhi and isinstance(blo, Sym) and blo.name in positive:
            k = 1  # a positive parameter: the same sign as a constant k > 0
        if k is not None and k > 0:  # monotone in a: a * k, a // k
            return binop(op, alo, blo), binop(op, ahi, blo)
        if k is not None and k < 0:
            return binop(op, ahi, blo), binop(op, alo, blo)
        if op == "*" and isinstance(alo, Const) and alo == ahi and alo.value >= 0:
            return binop("*", alo, blo), binop("*", alo, bhi)
        c = [binop(op, x, y) for x in (alo, ahi) for y in (blo, bhi)]
        return _smin(*c), _smax(*c)
    if op == "min":
        return _smin(alo, blo), _smin(ahi, bhi)
    if op == "max":
        return _smax(alo, blo), _smax(ahi, bhi)
    if op in ("==", "!=", "<", "<=", ">", ">=", "and", "or"):
        return Const(0), Const(1)  # not decided per request: either truth value
    raise EvalError(f"cannot bound {op!r} of a ranged index symbolically")


def snarrow(
    env: dict[str, SInterval], conds: Iterable[Condition], positive: frozenset[str] = frozenset()
) -> None:
    """The symbolic twin of :func:`narrow`: tighten index intervals by enclosing conditions
    ``c*i + d < e`` (``block < num_tokens`` gives ``block <= min(grid - 1, num_tokens - 1)``)."""
    for c in conds:
        e = c.expr
        if not isinstance(e, Bin) or e.op not in _FLIP:
            continue
        for side, other, op in ((e.a, e.b, e.op), (e.b, e.a, _FLIP[e.op])):
            term = _index_term(side, env)
            if term is None:
                continue
            name, coeff, offset = term
            try:
                olo, ohi = sbounds(other, env, positive)
                dlo, dhi = sbounds(offset, env, positive)
            except EvalError:
                continue
            lo, hi = env[name]
            k = Const(coeff)
            if op == "<":
                hi = _smin(hi, binop("-", binop("cdiv", binop("-", ohi, dlo), k), Const(1)))
            elif op == "<=":
                hi = _smin(hi, binop("//", binop("-", ohi, dlo), k))
            elif op == ">":
                lo = _smax(lo, binop("+", binop("//", binop("-", olo, dhi), k), Const(1)))
            else:
                lo = _smax(lo, binop("cdiv", binop("-", olo, dhi), k))
            env[name] = (lo, hi)
            break


# ---------------------------------------------------------------- block and loop ranges

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _index_term(e: Expr, env: Mapping) -> tuple[str, int, Expr] | None:
    """``c * i + d`` with one block/loop index ``i`` and c > 0 -> (i, c, d)."""
    form = poly(e)
    if form is None:
        return None
    idx = [m for m in form if len(m) == 1 and isinstance(m[0], Sym) and m[0].kind in (BLOCK, LOOP)]
    if len(idx) != 1 or form[idx[0]] <= 0 or idx[0][0].name not in env:
        return None
    rest = {m: v for m, v in form.items() if m != idx[0]}
    if any(
        free_symbols(atom) & {s for s in free_symbols(e) if s.kind in (BLOCK, LOOP)}
        for m in rest
        for atom in m
    ):
        return None
    return idx[0][0].name, form[idx[0]], from_poly(rest)


def narrow(env: dict[str, Bound | Interval], conds: Iterable[Condition]) -> None:
    """Tighten the interval of ``block`` or a loop index by enclosing conditions of the form
    ``c*i + d < e`` (any of < <= > >=, either side; c a positive constant), in place."""
    for c in conds:
        e = c.expr
        if not isinstance(e, Bin) or e.op not in _FLIP:
            continue
        for side, other, op in ((e.a, e.b, e.op), (e.b, e.a, _FLIP[e.op])):
            term = _index_term(side, env)
            if term is None:
                continue
            name, coeff, offset = term
            try:
                olo, ohi = vbounds(other, env)
                dlo, dhi = vbounds(offset, env)
            except EvalError:
                continue
            cur = env[name]
            lo, hi = cur if isinstance(cur, tuple) else (cur, cur)
            lo, hi = _as(lo), _as(hi)
            k = _as(coeff)
            if op == "<":  # c*i + d < e  =>  i <= ceil((e - d) / c) - 1
                hi = np.minimum(hi, _cdiv(ohi - dlo, k) - 1)
            elif op == "<=":
                hi = np.minimum(hi, np.floor_divide(ohi - dlo, k))
            elif op == ">":
                lo = np.maximum(lo, np.floor_divide(olo - dhi, k) + 1)
            else:
                lo = np.maximum(lo, _cdiv(olo - dhi, k))
            env[name] = (lo, hi)
            break


def bind_loops(env: dict[str, Bound | Interval], loops: Sequence[Loop]) -> np.ndarray:
    """Bind each loop index to its interval; returns a mask of requests where every loop runs."""
    runs = np.asarray(True)
    for loop in loops:
        lo, _ = vbounds(loop.start, env)
        _, hi = vbounds(loop.stop, env)
        runs = runs & (hi - 1 >= lo)
        env[loop.var] = (lo, np.maximum(hi - 1, lo))
    return runs


def nonempty(env: Mapping[str, Bound | Interval], names: Iterable[str]) -> np.ndarray:
    ok = np.asarray(True)
    for n in names:
        v = env.get(n)
        if isinstance(v, tuple):
            ok = ok & (_as(v[0]) <= _as(v[1]))
    return ok


# ---------------------------------------------------------------- requests and guards


@dataclass
class ScalarSpace:
    """Every request (combination of runtime scalars) at one parameter point."""

    names: tuple[str, ...]  # base scalars with a declared range
    values: dict[str, np.ndarray]  # name -> array over requests
    size: int
    thinned: bool
    guards: list[np.ndarray] = field(default_factory=list)  # accepted-by-guard-i masks
    unbounded: frozenset[str] = frozenset()  # declared scalars without a range

    @property
    def accepted(self) -> np.ndarray:
        out = np.ones(self.size, dtype=bool)
        for g in self.guards:
            out &= g
        return out

    def accepted_before(self, i: int) -> np.ndarray:
        out = np.ones(self.size, dtype=bool)
        for g in self.guards[:i]:
            out &= g
        return out

    def accepted_except(self, i: int) -> np.ndarray:
        out = np.ones(self.size, dtype=bool)
        for j, g in enumerate(self.guards):
            if j != i:
                out &= g
        return out

    def env(self) -> dict[str, np.ndarray]:
        return dict(self.values)

    def intervals(self, mask: np.ndarray | None = None) -> dict[str, tuple[int, int]]:
        """Per scalar, the (lo, hi) over the requests in ``mask`` (all accepted by default)."""
        mask = self.accepted if mask is None else mask
        if not mask.any():
            return {}
        big = np.iinfo(np.int64)
        return {
            n: (int(v.min(where=mask, initial=big.max)), int(v.max(where=mask, initial=big.min)))
            for n, v in self.values.items()
        }


def _spread(domain: Domain, n: int) -> np.ndarray:
    """``Domain.spread(n)`` as an int64 array, computed in bulk (2M values in milliseconds)."""
    size = domain.size
    if domain.values is not None:
        return np.asarray(domain.spread(n), dtype=np.int64)
    if size <= n:
        return np.arange(domain.lo, domain.lo + size * domain.step, domain.step, dtype=np.int64)
    # size > n: the spacing is above 1, so the rounded indices are distinct and ascending
    idx = np.clip(np.rint(np.linspace(0, size - 1, n)), 0, size - 1).astype(np.int64)
    idx[-1] = size - 1  # the largest value itself, whatever the float rounding
    return domain.lo + idx * domain.step


def scalar_space(
    graph: Graph,
    env: Mapping[str, int],
    limit: int = MAX_POINTS,
    only: Iterable[str] | None = None,
    alone: bool = False,
) -> ScalarSpace:
    """The requests at one parameter point, with the host guards evaluated on them.

    ``only`` (the runtime scalars one question depends on) projects the space onto them, exactly:
    the other scalars a guard couples to them are enumerated too unless every guard that names
    one of them is monotone in it in the same direction (``num_tokens <= T``, ``(start_pos +
    num_tokens) / 4 <= CAP``), when the most permissive end of its range admits whatever any value
    does; guards on unrelated scalars only decide whether anything is admitted at all. Projected
    spaces are far smaller than the product of every range, so they are rarely thinned."""
    ranged = {s.name: s for s in graph.scalars.values() if s.domain is not None}
    unbounded = frozenset(s.name for s in graph.scalars.values() if s.domain is None)
    point = dict(env)
    syms = [frozenset(x.name for x in free_symbols(g.cond) if x.name in ranged) for g in graph.guards]
    fixed: dict[str, int] = {}
    outside: dict[int, bool] = {}  # guard index -> whether its own scalars admit anything
    if only is None:
        keep = list(ranged)
    else:
        component = set(only) & set(ranged)
        grown = True
        while grown:
            grown = False
            for names in syms:
                if names & component and not names <= component:
                    component |= names
                    grown = True
        inner = [i for i, names in enumerate(syms) if not names or names & component]
        keep = []
        for name in (n for n in ranged if n in component):
            end = (
                None
                if name in set(only)
                else _permissive_end(graph, [graph.guards[i].cond for i in inner], name, point)
            )
            if end is None:
                keep.append(name)
            else:
                domain = ranged[name].domain_at(point)
                fixed[name] = domain.low if end == "lo" else domain.high  # type: ignore[union-attr]
        rest = [i for i in range(len(graph.guards)) if i not in inner]
        if rest and not alone:  # ``alone``: the caller asks about these guards only
            others = frozenset().union(*(syms[i] for i in rest))
            ok = bool(scalar_space(graph, env, limit, others, alone=True).accepted.any())
            outside = {i: ok for i in rest}
        else:
            outside = {i: True for i in rest}
    kept = [ranged[n].domain_at(point) for n in keep]
    total = 1
    for d in kept:
        total *= max(d.size, 1)  # type: ignore[union-attr]
    thinned = total > limit
    # a range is never listed whole: when the requests are too many, each domain is thinned
    # to evenly spaced values (ends included) computed from its bounds (``Domain.spread``)
    per = max(2, int(limit ** (1 / len(kept)))) if thinned else limit
    domains = [_spread(d, per) for d in kept]  # type: ignore[arg-type]
    if domains:
        grids = np.meshgrid(*[np.asarray(d, dtype=np.int64) for d in domains], indexing="ij")
        values = {n: g.ravel() for n, g in zip(keep, grids, strict=True)}
        size = int(grids[0].size)
    else:
        values, size = {}, 1
    space = ScalarSpace(tuple(keep), values, size, thinned, unbounded=unbounded)
    full_env: dict[str, Bound] = {**env, **fixed, **values}
    for i, g in enumerate(graph.guards):
        if i in outside:
            space.guards.append(np.full(size, outside[i], dtype=bool))
            continue
        try:
            lo, hi = vbounds(g.cond, full_env)
            space.guards.append(np.broadcast_to(lo.astype(bool), (size,)).copy())
        except EvalError:
            space.guards.append(np.ones(size, dtype=bool))  # a guard on an unranged scalar
    return space


def _permissive_end(graph: Graph, conds: Sequence[Expr], name: str, env: Mapping[str, int]) -> str | None:
    """``"lo"``/``"hi"``: the end of ``name``'s range at which every condition holds whenever it
    holds for some value (each is monotone in ``name`` the same way); None when unknown."""
    end = "any"
    for c in conds:
        e = _cond_end(c, name, env)
        if e is None or (e != "any" and end not in ("any", e)):
            return None
        if e != "any":
            end = e
    return "lo" if end == "any" else end


def _cond_end(c: Expr, name: str, env: Mapping[str, int]) -> str | None:
    if isinstance(c, Bin) and c.op in ("and", "or"):
        a, b = _cond_end(c.a, name, env), _cond_end(c.b, name, env)
        if a is None or b is None:
            return None
        return b if a == "any" else a if b in ("any", a) else None
    if isinstance(c, Bin) and c.op in ("<", "<=", ">", ">="):
        d = _monotone(binop("-", c.a, c.b), name, env)
        if d is None:
            return None
        if c.op in (">", ">="):
            d = -d
        return "any" if d == 0 else "lo" if d > 0 else "hi"
    return "any" if _monotone(c, name, env) == 0 else None


def _monotone(e: Expr, name: str, env: Mapping[str, int]) -> int | None:
    """+1 / -1: ``e`` never decreases / never increases as ``name`` grows (0: independent)."""
    if isinstance(e, Const):
        return 0
    if isinstance(e, Sym):
        return 1 if e.name == name else 0
    if not isinstance(e, Bin):
        return None
    a, b = _monotone(e.a, name, env), _monotone(e.b, name, env)
    if a is None or b is None:
        return None
    if e.op in ("+", "min", "max"):
        return _combine(a, b)
    if e.op == "-":
        return _combine(a, -b)
    if e.op in ("*", "//", "cdiv"):
        if b == 0:
            k = _sign(e.b, env)
            return None if k is None else a * k
        if a == 0 and e.op == "*":
            k = _sign(e.a, env)
            return None if k is None else b * k
        return None
    return 0 if a == 0 and b == 0 else None


def _combine(a: int, b: int) -> int | None:
    if a == 0:
        return b
    if b == 0 or a == b:
        return a
    return None


def _sign(e: Expr, env: Mapping[str, int]) -> int | None:
    """The sign of an expression free of runtime scalars, at this parameter point."""
    try:
        v = evaluate(e, env)
    except EvalError:
        return None
    return (v > 0) - (v < 0)


def derived_values(graph: Graph, name: str, space: ScalarSpace, env: Mapping[str, int]) -> np.ndarray | None:
    """Values of a base or derived scalar over the requests (None if not computable)."""
    if name in space.values:
        return space.values[name]
    d = graph.derived.get(name)
    if d is None or d.value is None:
        return None
    try:
        return np.broadcast_to(veval(d.value, {**env, **space.values}), (space.size,))
    except EvalError:
        return None


def depends_on_scalars(expr: Expr) -> bool:
    return any(s.kind == SCALAR for s in free_symbols(expr))


# ---------------------------------------------------------------- texts


def ranges_text(values: Iterable[int], domain: Domain | None = None) -> str:
    """``1152..4096`` or ``128..512, 1024``: runs of consecutive values (in domain order; a
    range domain is never listed, its step says which values are neighbours)."""
    vals = sorted(set(int(v) for v in values))
    if not vals:
        return "none"
    order = {v: i for i, v in enumerate(domain.values)} if domain is not None and domain.values else None
    step = domain.step if domain is not None and domain.values is None else 1
    runs: list[list[int]] = [[vals[0], vals[0]]]
    for v in vals[1:]:
        prev = runs[-1][1]
        adjacent = order[v] == order[prev] + 1 if order and v in order and prev in order else v == prev + step
        if adjacent:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    parts = [f"{a}" if a == b else f"{a}..{b}" for a, b in runs]
    if len(parts) > 6:
        parts = parts[:3] + ["..."] + parts[-2:]
    return ", ".join(parts)


def points_text(graph: Graph, points: Sequence[Mapping[str, int]]) -> str:
    """The ranged parameters over ``points``: ``T in 1152..4096``."""
    ranged = [p for p in graph.params.values() if p.domain is not None]
    if not ranged:
        return "the current parameters"
    parts = []
    for p in ranged:
        parts.append(f"{p.name} in {ranges_text((pt[p.name] for pt in points), p.domain)}")
    return ", ".join(parts)


def point_text(graph: Graph, point: Mapping[str, int]) -> str:
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    return ", ".join(f"{n}={point[n]}" for n in ranged) or "the current parameters"


_PREC = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4}
_PREC.update({"+": 5, "-": 5, "*": 6, "//": 6, "%": 6})


def pretty(expr: Expr, parent: int = 0) -> str:
    """Readable text of a symbolic expression: ``min(visible, INDEXER_TOPK_CAP)``."""
    if isinstance(expr, Const):
        return str(expr.value)
    if isinstance(expr, Sym):
        return expr.name
    assert isinstance(expr, Bin)
    if expr.op in ("min", "max", "cdiv"):
        return f"{expr.op}({pretty(expr.a)}, {pretty(expr.b)})"
    prec = _PREC.get(expr.op, 3)
    op = "/" if expr.op == "//" else expr.op
    text = f"{pretty(expr.a, prec)} {op} {pretty(expr.b, prec + 1)}"
    return f"({text})" if prec < parent else text


def named_value(value: int, exprs: Iterable[Expr], env: Mapping[str, int]) -> str:
    """``INDEXER_SCORE_CAP=1024`` when a constant named in ``exprs`` has this value, else the number."""
    names = sorted({s.name for e in exprs for s in free_symbols(e) if s.kind in ("const", "param")})
    for n in names:
        if env.get(n) == value:
            return f"{n}={value}"
    return str(value)


def requests_text(space: ScalarSpace, mask: np.ndarray, limit: int = 3) -> str:
    """``t_dim in 1..15`` (per runtime scalar, over the requests in ``mask``)."""
    parts = []
    for name, vals in list(space.values.items())[:limit]:
        parts.append(f"{name} in {ranges_text(np.unique(vals[mask]).tolist())}")
    return "; ".join(parts) or "every request"


# ---------------------------------------------------------------- relational guards

_UPPER = {"<": -1, "<=": 0}  # a < b  <=>  a - b <= -1


def implies_at_most(conds: Iterable[Condition], a: Expr, b: Expr) -> bool:
    """Whether some enclosing condition proves ``a <= b`` by itself: ``if t0 + r < n`` proves
    that the region ``x[t0 + r : t0 + r + 1]`` ends within ``n`` whatever ``t0``, ``r`` and
    ``n`` are (the two differences differ by a constant). Interval bounds lose this relation
    when a condition couples two indices with a runtime scalar."""
    target = poly(binop("-", a, b))
    if target is None:
        return False
    for c in conds:
        e = c.expr
        if not isinstance(e, Bin) or e.op not in _FLIP:
            continue
        lhs, rhs, op = (e.a, e.b, e.op) if e.op in _UPPER else (e.b, e.a, _FLIP[e.op])
        known = poly(binop("-", lhs, rhs))  # known <= _UPPER[op]
        if known is None:
            continue
        rest = dict(target)
        for k, v in known.items():
            rest[k] = rest.get(k, 0) - v
        rest = {k: v for k, v in rest.items() if v}
        if all(k == () for k in rest) and rest.get((), 0) + _UPPER[op] <= 0:
            return True
    return False
