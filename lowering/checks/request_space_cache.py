"""Request spaces cached per check context: the scalar space at a parameter point and the
interval of each runtime scalar over the accepted requests, built once for all the rules that
ask at that point."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from lowering.checks.request_space import scalar_space

# Request spaces kept per check context: the rules visit parameter points one after another, and a
# space can hold millions of requests, so keeping one per point (64 of them for prefill_csa's T)
# costs gigabytes for no hits.
_SPACES_KEPT = 8


def space_at(ctx, point: Mapping[str, int], only=None):
    """The request space at ``point`` (cached on the check context); ``only``: projected onto
    those runtime scalars (see ``request_space.scalar_space``)."""
    names = None if only is None else frozenset(only)
    key = (tuple(sorted(point.items())), names)
    spaces = ctx.cache.setdefault("scalar_space", OrderedDict())
    if key in spaces:
        spaces.move_to_end(key)
        return spaces[key]
    space = spaces[key] = scalar_space(ctx.graph, point, only=names)
    if len(spaces) > _SPACES_KEPT:
        spaces.popitem(last=False)
    return space


def scalar_intervals(ctx, point: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Per runtime scalar, the (lo, hi) over the accepted requests, each from its own projection
    (exact, and cheap: one range at a time)."""
    key = ("scalar_intervals", tuple(sorted(point.items())))
    if key not in ctx.cache:
        out: dict[str, tuple[int, int]] = {}
        for s in ctx.graph.scalars.values():
            if s.domain is not None:
                out.update(space_at(ctx, point, (s.name,)).intervals())
        ctx.cache[key] = out
    return ctx.cache[key]
