"""Shared analysis for the sort and capacity rules: vectorised and symbolic interval bounds,
block and loop ranges, relational guards, and short texts for messages.

Rules bound symbolic expressions at every request of a scalar space
(``lowering.checks.request_space``) at once with :func:`vbounds`, the vectorised twin of
``symbolic.bounds``: each environment value is an int, an array over requests, or an interval
of either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from lowering.ir import Condition, Graph, Loop
from lowering.parameters import Domain
from lowering.symbolic import (
    BLOCK,
    LOOP,
    Bin,
    Const,
    EvalError,
    Expr,
    Sym,
    binop,
    free_symbols,
    from_poly,
    poly,
)

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
