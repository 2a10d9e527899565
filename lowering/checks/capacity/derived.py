"""Pass ``derive_capacities``: ``emitted(T)`` and ``derived(expr)`` (docs/language_sort_capacity.md).

The language lets a host guard and a capacity be *derived from the producers* instead of
restating a bound by hand (docs/runtime-semantics.md §19, the sparse CSA packed rows):

``emitted(T)``
    A host value per request: the most valid columns per row that the producers of tensor
    ``T`` store (``T[...] = fillpad(x, n, pad)`` / ``valid(x, n)``), over the blocks and
    loop iterations that run for that request. It is the closed form of the count rule
    C401 computes (:func:`emission.emitted_bound`, the symbolic twin of
    :func:`emission.emissions`), so ``guard WIN + emitted(cmp_indices) <= PAD`` refuses
    exactly the requests for which the producer emits more than the capacity keeps.

``derived(expr)``
    A compile-time capacity: the maximum of ``expr`` (a host expression: runtime scalars,
    derived scalars, ``emitted(T)``, parameters, constants) over every admissible request
    -- each ranged runtime scalar over its range, filtered by the guards declared *before*
    it -- at each admissible parameter point. ``const PAD = derived(WIN +
    emitted(cmp_indices))`` is 640 for the mtp constants: the tightest bound the producers
    imply. Usable as a ``const`` or directly in a tensor extent.

The elaborator parses both into placeholders (a ``Sym`` of kind ``emitted``; a ``const``
whose value is pending) because guards and capacities are declared before the tasks that
define what is emitted. This pass runs once the tasks are elaborated: it computes each
``emitted(T)`` (per admissible parameter point; a piecewise expression over the ranged
parameters when the forms differ), substitutes it in guards and derived scalars (and
records it in ``graph.derived`` under the name ``emitted(T)``, so messages and the
generated host guard can show its value), then evaluates the pending constants in source
order and fills in the tensor extents that use them.

When the requests of a point are too many to enumerate (more than ``MAX_POINTS``), the
maximum is the interval bound over the scalar ranges (sound, guards ignored).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from lowering.checks.capacity.emission import emitted_bound
from lowering.checks.extents import vbounds, veval
from lowering.checks.request_space import scalar_space
from lowering.checks.validity import analyse
from lowering.ir import Graph
from lowering.parameters import Const, Scalar
from lowering.source import Diagnostic, Severity, Span
from lowering.symbolic import PARAM, SCALAR, EvalError, Expr, Sym, binop, evaluate, free_symbols, substitute
from lowering.symbolic import Const as C

EMITTED = "emitted"  # Sym kind of an ``emitted(T)`` placeholder until this pass replaces it


def emitted_name(tensor: str) -> str:
    return f"emitted({tensor})"


@dataclass(frozen=True)
class PendingConst:
    """A ``const`` whose value needs the tasks: ``derived(expr)`` (``derived=True``) or an
    expression over such constants (``CMP_COLS = PAD - WIN``)."""

    name: str
    expr: Expr
    span: Span
    derived: bool
    guards_before: int  # guards declared before it (a derived(...) ranges over what they admit)


@dataclass(frozen=True)
class EmittedUse:
    placeholder: str  # the Sym name in guards / derived scalars / pending expressions
    tensor: str | None  # the tensor's full name, None when the name is not a tensor
    source: str  # the name as written
    span: Span


def _diag(code: str, span: Span, message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(code, message, span, Severity.ERROR, hint)


def derive_capacities(
    graph: Graph, pending: Sequence[PendingConst], uses: Sequence[EmittedUse]
) -> list[Diagnostic]:
    """Resolve ``emitted(T)`` and ``derived(...)`` in ``graph`` (in place); returns errors."""
    diags: list[Diagnostic] = []
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    current = graph.env()
    points = list(graph.admissible_points())
    key = _key(ranged)
    if key(current) not in {key(p) for p in points}:
        points.append(current)
    facts = {key(p): analyse(graph, p, graph.scalar_ranges(p)) for p in points}
    named = [*graph.params, *graph.consts]
    positive = frozenset(n for n in named if all(p.get(n, 0) > 0 for p in points))

    forms: dict[str, Expr] = {}
    for use in uses:
        if use.placeholder in forms:
            continue
        if use.tensor is None:
            diags.append(_diag("E201", use.span, f"emitted({use.source}): '{use.source}' is not a tensor"))
            continue
        per: dict[tuple, Expr] = {}
        try:
            for p in points:
                form = emitted_bound(graph, facts[key(p)], use.tensor, positive)
                if form is None:
                    raise _Nothing()
                per[key(p)] = form
        except _Nothing:
            diags.append(
                _diag(
                    "E206",
                    use.span,
                    f"emitted({use.source}): no task declares what it emits into '{use.source}'",
                    hint="store a tile marked valid(x, n) or fillpad(x, n, pad) into it",
                )
            )
            continue
        except EvalError as err:
            diags.append(_diag("E206", use.span, f"emitted({use.source}) has no closed form: {err}"))
            continue
        forms[use.placeholder] = _piecewise(ranged, per, key(current))
    if diags:
        return diags

    # emitted(T) in guards and derived scalars; recorded as a derived scalar of its own
    for use in uses:
        if use.placeholder in graph.derived:
            continue
        form = forms[use.placeholder]
        refs = tuple(sorted({s.name for s in free_symbols(form) if s.kind == SCALAR}))
        graph.derived[use.placeholder] = Scalar(use.placeholder, "i32", None, use.span, value=form, refs=refs)
    for name, d in list(graph.derived.items()):
        if d.value is not None and name not in forms:
            graph.derived[name] = dataclasses.replace(d, value=substitute(d.value, forms))
    graph.guards[:] = [dataclasses.replace(g, cond=substitute(g.cond, forms)) for g in graph.guards]

    # pending constants, in source order, at every point
    values: dict[str, dict[tuple, int]] = {p.name: {} for p in pending}
    exprs = {p.name: substitute(p.expr, forms) for p in pending}
    for point in points:
        env = dict(point)
        for p in pending:
            try:
                v = _derive(graph, p, exprs[p.name], env) if p.derived else evaluate(exprs[p.name], env)
            except _Refused as err:
                diags.append(_diag("E206", p.span, f"{p.name}: {err}"))
                return diags
            except EvalError as err:
                diags.append(_diag("E206", p.span, f"cannot derive {p.name}: {err}"))
                return diags
            env[p.name] = v
            values[p.name][key(point)] = v
    for p in pending:
        per = values[p.name]
        expr = _piecewise(ranged, {k: C(v) for k, v in per.items()}, key(current)) if p.derived else p.expr
        graph.consts[p.name] = Const(p.name, expr, per[key(current)], p.span)
    graph.forget_points()  # the points listed above do not hold the derived constants yet

    # tensor extents that name a pending constant
    env = graph.env()
    names = {p.name for p in pending}
    for name, t in list(graph.tensors.items()):
        if not any(s.name in names for e in t.shape for s in free_symbols(e)):
            continue
        dims = list(t.dims)
        for i, e in enumerate(t.shape):
            if any(s.kind == SCALAR for s in free_symbols(e)):
                continue
            v = evaluate(e, env)
            if v <= 0:
                diags.append(_diag("E207", t.span, f"extent {i} of '{name}' must be positive, got {v}"))
            dims[i] = v
        graph.tensors[name] = dataclasses.replace(t, dims=tuple(dims))
    return diags


class _Nothing(Exception):
    pass


class _Refused(Exception):
    pass


def _key(ranged: Sequence[str]):
    def key(env: Mapping[str, int]) -> tuple:
        return tuple(env[n] for n in ranged)

    return key


def _derive(graph: Graph, p: PendingConst, expr: Expr, env: Mapping[str, int]) -> int:
    """max of ``expr`` over the requests admitted by the guards declared before ``p``."""
    scalars = {s.name for s in free_symbols(expr) if s.kind == SCALAR}
    if not scalars:
        return evaluate(expr, env)
    space = scalar_space(dataclasses.replace(graph, guards=graph.guards[: p.guards_before]), env)
    unbounded = sorted(scalars & space.unbounded)
    if unbounded:
        raise _Refused(
            f"derived(...) depends on runtime scalar {unbounded[0]!r}, which has no range (`in lo..hi`)"
        )
    if space.thinned:  # too many requests to enumerate: the interval bound (sound, guards ignored)
        ranges = graph.scalar_ranges(env)
        _, hi = vbounds(expr, {**env, **ranges})
        return int(hi)
    accepted = space.accepted
    if not accepted.any():
        raise _Refused("the guards declared before it admit no request")
    vals = np.broadcast_to(veval(expr, {**env, **space.values}), (space.size,))
    return int(vals[accepted].max())


def _piecewise(ranged: Sequence[str], per: Mapping[tuple, Expr], default: tuple) -> Expr:
    """One expression equal to ``per[point]`` at every point (over the ranged parameters):
    the common form, or the default point's plus ``(P == p) * (form_p - default)`` terms."""
    base = per[default]
    if all(f == base for f in per.values()):
        return base
    terms: list[Expr] = []
    for k, f in per.items():
        if f == base:
            continue
        cond: Expr = C(1)
        for name, v in zip(ranged, k, strict=True):
            cond = binop("*", cond, binop("==", Sym(name, PARAM), C(v)))
        terms.append(binop("*", cond, binop("-", f, base)))
    while len(terms) > 1:  # a balanced sum: no deep recursion when evaluating it
        terms = [
            binop("+", terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i]
            for i in range(0, len(terms), 2)
        ]
    return binop("+", base, terms[0])
