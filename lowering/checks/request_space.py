"""The requests the host can send at one parameter point: the *scalar space*.

Every combination of the declared runtime scalars (``scalar start_pos: i32 in 0..8192``),
enumerated as NumPy arrays (thinned to evenly spaced values, ends included, when the product
is too large), with one boolean mask per host ``guard``; a question that depends on a few
scalars gets the space projected onto them (:func:`scalar_space` ``only=``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lowering.checks.extents import Bound, ranges_text, vbounds, veval
from lowering.ir import Graph
from lowering.parameters import Domain
from lowering.symbolic import SCALAR, Bin, Const, EvalError, Expr, Sym, binop, evaluate, free_symbols

MAX_POINTS = 1 << 21  # requests enumerated per parameter point


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


def requests_text(space: ScalarSpace, mask: np.ndarray, limit: int = 3) -> str:
    """``t_dim in 1..15`` (per runtime scalar, over the requests in ``mask``)."""
    parts = []
    for name, vals in list(space.values.items())[:limit]:
        parts.append(f"{name} in {ranges_text(np.unique(vals[mask]).tolist())}")
    return "; ".join(parts) or "every request"
