"""C401: a capacity or a host guard is not derived from what the producer emits.

## What it catches

A producer declares what it emits per row by storing a tile marked ``valid(x, n)`` or
``fillpad(x, n, pad)`` (PyPTO's ``set_validshape``): ``cmp_indices[t, :] =
valid(sel, min(visible, INDEXER_TOPK_CAP))``. Over every request the host admits (runtime
scalars with ranges, ``scalar start_pos: i32 in 0..8192``, filtered by the layer's
``guard``s), the rule compares that emitted extent with (docs/runtime-semantics.md §19.5, rule R7):

- **capacities** (error): the stored region, or a consumer's packed prefix
  ``cmp_indices[t, 0:PREFILL_SPARSE_PAD - WIN]``, narrower than what can be emitted for
  some admitted request: rows are silently dropped (#874, the HCA tail);
- **guards looser than the derived bound** (warning): a ``guard`` that mentions a capacity's
  constants and refuses requests for which nothing would be truncated, because it bounds
  the raw candidate count instead of what the producer emits (#893: ``WIN +
  max_visible_cmp <= PREFILL_SPARSE_PAD`` refused 2052..8192-token prompts that fit);
- **dead guards** (note): a guard that refuses nothing once the earlier guards have run,
  though it would on its own (dspark after #982). A guard that can never refuse anything
  at all is a plain invariant and is not reported.

A guard is matched to the capacities whose constants it names (constants expanded to their
definitions). A point is first judged on the box of accepted requests; the requests are
enumerated (exactly up to 2M combinations, then sampled) only when the box cannot settle it.

## Why it breaks on the device

A packed buffer sized from a different expression than the producer's valid extent either
drops rows without any error (the consumer reads a prefix, the tail is never attended to,
the output is plausibly wrong) or makes the host refuse requests that would have run
correctly, which shows up as a serving limit nobody can explain.

## Example

    scalar max_visible_cmp = (start_pos + num_tokens) / COMPRESS_RATIO
    guard WIN + max_visible_cmp <= PREFILL_SPARSE_PAD          # raw candidate count
    task prefill_idx_topk ... { cmp_indices[t : t + 1, :] = valid(sel, min(visible, INDEXER_TOPK_CAP)) }
    task sparse_pack ... { ... = cmp_indices[t : t + 1, 0 : PREFILL_SPARSE_PAD - WIN] }

## Use instead

    guard WIN + min(max_visible_cmp, IDX_TOPK) <= PREFILL_SPARSE_PAD   # what the producer emits

or let dslc derive both from the producer (docs/language_sort_capacity.md, "Derived
capacities"): ``emitted(cmp_indices)`` is the closed form of the extent this rule computes,
so neither the guard nor the capacity can drift from it:

    const PREFILL_SPARSE_PAD = derived(WIN + emitted(cmp_indices))     # 640 at mtp
    guard WIN + emitted(cmp_indices) <= PREFILL_SPARSE_PAD

## Parameter and round coverage

Parameters: every admissible point of each structure class, the compiled point first (the
points are thinned to extremes and a spread beyond 4,096); per point every admitted request: first
over the box of accepted requests (one interval per runtime scalar, exact for every request),
then, only when the box leaves a doubt, request by request (exact up to 2M combinations,
sampled beyond, and the message says so).
Rounds: not round-dependent: one request at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from lowering.checks.capacity.emission import constants, cuts, emissions
from lowering.checks.extents import named_value, point_text, ranges_text, veval
from lowering.checks.points import own_point_first
from lowering.checks.request_space import derived_values
from lowering.checks.request_space_cache import scalar_intervals, space_at
from lowering.checks.rule import CheckContext, finding
from lowering.ir import Graph
from lowering.parameters import Guard
from lowering.source import Diagnostic
from lowering.symbolic import Bin, EvalError

CODE = "C401"
NAME = "capacity_not_derived_from_producer"
FAMILY = "capacity"
SEVERITY = "error"
SUMMARY = "a capacity or host guard is not derived from what the producer emits"
POINTS = "all"  # visits every admissible parameter point of the structure class itself


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    if not any(t.ops & {"valid", "fillpad"} for t in graph.tasks):
        return  # no producer declares what it emits
    reported: set[tuple] = set()
    for point in own_point_first(graph):
        for d in _at(graph, ctx, point):
            key = (d.span, d.severity)
            if key not in reported:
                reported.add(key)
                yield d


def _requests(graph: Graph, space, mask: np.ndarray, names: tuple[str, ...], point) -> str:
    """``max_visible_cmp in 513..2048, seq_len in 2052..8192`` over the requests in ``mask``."""
    parts: list[str] = []
    seen: set[str] = set()
    queue = list(names)
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        vals = derived_values(graph, name, space, point)
        if vals is not None:
            parts.append(f"{name} in {ranges_text(np.unique(vals[mask]).tolist())}")
        if name in graph.derived:  # follow derived values down to the request size they summarise
            queue.extend(r for r in graph.derived[name].refs if r in graph.derived)
    if not parts:
        parts = [f"{n} in {ranges_text(np.unique(v[mask]).tolist())}" for n, v in space.values.items()]
    return "; ".join(parts)


def _example(space, mask: np.ndarray) -> str:
    i = int(np.flatnonzero(mask)[0])
    return ", ".join(f"{n}={int(v[i])}" for n, v in space.values.items())


def _clean_on_box(graph: Graph, ctx: CheckContext, point) -> bool:
    """Whether this point has nothing to report, proven on the box of accepted requests (one
    interval per runtime scalar) without enumerating them: no store emits past its region, no
    consumer's prefix cuts what may be emitted, and no guard names a capacity's constants. The
    box encloses every request, so a clean box is clean everywhere; anything less (or a bound
    the box cannot give) leaves the verdict to the requests."""
    box = scalar_intervals(ctx, point)
    try:
        emitted = emissions(graph, ctx, point, box)
        found = cuts(graph, ctx, point, emitted, box)
    except EvalError:
        return False
    if any((em.runs & (em.count > em.width)).any() for em in emitted):
        return False
    if any(cut.truncates.any() for cut in found):
        return False
    return not any(_related(graph, g, cut) for g in graph.guards for cut in found)


def _at(graph: Graph, ctx: CheckContext, point) -> Iterator[Diagnostic]:
    if _clean_on_box(graph, ctx, point):
        return
    space = space_at(ctx, point)
    emitted = emissions(graph, ctx, point)
    if not emitted:
        return
    found = cuts(graph, ctx, point, emitted)
    accepted = space.accepted
    sampled = " (requests sampled)" if space.thinned else ""
    at = f" at {point_text(graph, point)}" if any(p.domain is not None for p in graph.params.values()) else ""
    # capacities too small for what is emitted: silent truncation
    for em in emitted:
        over = em.runs & (em.count > em.width) & accepted
        if over.any():
            i = int(np.flatnonzero(over)[0])
            sf = em.store
            yield finding(
                CODE,
                "error",
                sf.span,
                f"{em.producer.base} stores up to {int(em.count[i])} valid columns of {sf.tensor} per row"
                f"{_which(int(em.count[i]), sf, point)} into a region of "
                f"{int(em.width[i])} columns, for {int(over.sum())} admitted requests (e.g. "
                f"{_example(space, over)}){at}{sampled}; the columns past {int(em.width[i])} are dropped",
                fix=f"widen the stored region of {sf.tensor} to the emitted bound, or cap the emitted extent",
            )
    for cut in found:
        bad = cut.truncates & accepted
        if not bad.any():
            continue
        i = int(np.flatnonzero(bad)[0])
        em = cut.emission
        yield finding(
            CODE,
            "error",
            cut.access.span,
            f"{cut.consumer.base} keeps columns [0, {int(cut.stop[i])}) of {em.store.tensor} but "
            f"{em.producer.base} emits up to {int(em.end[i])} valid columns per row"
            f"{_which(int(em.count[i]), em.store, point)} for {int(bad.sum())} admitted "
            f"requests (e.g. {_example(space, bad)}){at}{sampled}: the rows past {int(cut.stop[i])} are "
            f"silently dropped",
            fix=f"size the packed capacity from the producer's bound ({int(em.end.max())} columns), or add a "
            f"guard that refuses these requests",
            related=((em.store.span, "what the producer emits"),),
        )
    # guards, judged against the capacities whose constants they name
    fits = np.ones(space.size, dtype=bool)
    for cut in found:
        fits &= ~cut.truncates
    for em in emitted:
        fits &= ~(em.runs & (em.count > em.width))
    for i, g in enumerate(graph.guards):
        related = [c for c in found if _related(graph, g, c)]
        if not related:
            continue
        refuses = ~space.guards[i]
        if not refuses.any():
            continue  # an invariant: refuses nothing at all
        earlier = [j for j in range(i) if (~space.guards[j]).any()]
        if not (space.accepted_before(i) & refuses).any():
            names = ", ".join(f"line {graph.guards[j].span.line}" for j in earlier) or "the earlier guards"
            yield finding(
                CODE,
                "note",
                g.span,
                f"guard `{g.text}` is dead: every request it would refuse is already refused by the "
                f"earlier guards ({names}){at}",
                fix="drop the guard, or keep it as the only bound and relax the earlier one",
                related=tuple((graph.guards[j].span, "the earlier guard") for j in earlier),
            )
            continue
        refused_fit = space.accepted_except(i) & refuses & fits
        if not refused_fit.any():
            continue
        cut = related[0]
        em = cut.emission
        n = int(refused_fit.sum())
        lhs = _lhs(g, space, point, space.accepted_before(i))
        yield finding(
            CODE,
            "warning",
            g.span,
            f"guard `{g.text}` refuses requests that fit{lhs}: the producer {em.producer.base} emits at most "
            f"{named_value(int(em.count.max()), [em.store.finite], point)} valid columns of {em.store.tensor} "
            f"per row and {cut.consumer.base} keeps [0, {int(cut.stop.max())}), so nothing is truncated; "
            f"{n} requests are refused although they fit: {_requests(graph, space, refused_fit, g.scalars, point)}"
            f"{at}{sampled}",
            fix="bound the guard by what the producer emits (e.g. min(count, "
            f"{named_value(int(em.count.max()), [em.store.finite], point).split('=')[0]}), or "
            f"emitted({em.store.tensor})), or drop it",
            related=((em.store.span, "what the producer emits"), (cut.access.span, "the packed capacity")),
        )


def _which(count: int, store, point) -> str:
    """`` (K=512)`` when the count is a constant the store's extent names, else nothing."""
    named = named_value(count, [store.finite], point)
    return f" ({named})" if named != str(count) else ""


def _related(graph: Graph, g: Guard, cut) -> bool:
    mine = constants(graph, [g.cond])
    region = [r for acc_region in (cut.access.region, cut.emission.store.region) for rr in acc_region[-1:]
              for r in (rr.start, rr.stop)]  # fmt: skip
    return bool(mine & constants(graph, region))


def _lhs(g: Guard, space, point, mask: np.ndarray) -> str:
    """`` (WIN + max_visible_cmp reaches 2176)`` for a guard ``lhs <= rhs``."""
    cond = g.cond
    if not isinstance(cond, Bin) or cond.op not in ("<=", "<") or not mask.any():
        return ""
    try:
        vals = np.broadcast_to(veval(cond.a, {**point, **space.values}), (space.size,))
    except EvalError:
        return ""
    text = re.split(r"\s*<=?\s*", g.text, maxsplit=1)[0]
    return f" ({text} reaches {int(vals[mask].max())})"
