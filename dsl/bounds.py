"""Slice bounds against tensor extents, for every admissible parameter value (E305).

Each region is bounded over all blocks of its task, all iterations of its loops and all
ranks, with interval arithmetic on the symbolic form; this is repeated at every admissible
parameter point, so a slice that only overflows for a long chunk (T = 8192) is still found.

The boundary with the lint rule C402 (``slice_out_of_bounds_unguarded``): E305 judges only
regions and extents that are known at compile time (parameters, constants, ``block``, loop
indices, ``rank``). A region or an extent that depends on a runtime scalar (``start_pos``,
a dynamic dim ``x: f32[num_tokens, D]``) is left to C402, which can take the scalar's range,
the host ``guard``s, enclosing ``if``s and ``valid(...)`` extents into account.
"""

from __future__ import annotations

from dsl.codes import diag
from lowering.body import valid_regions
from lowering.ir import Graph
from lowering.regions import loop_env, task_env
from lowering.source import Diagnostic
from lowering.symbolic import EvalError, binop, bounds, evaluate


def check_bounds(graph: Graph, max_points: int = 256) -> list[Diagnostic]:
    found: dict[tuple, Diagnostic] = {}
    scalar_ranges: dict = {}  # runtime scalars stay unbound: such regions are C402's
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    for point in graph.admissible_points(limit=max_points):
        try:
            nranks = evaluate(graph.ranks, point)
        except EvalError:
            continue
        extents = {}
        envs: dict[int, dict] = {}
        for t in graph.tensors.values():
            try:
                extents[t.name] = tuple(evaluate(d, point) for d in t.shape)
            except EvalError:
                extents[t.name] = tuple(None for _ in t.shape)
        for task in graph.tasks:
            try:
                blocks = evaluate(task.grid, point)
            except EvalError:
                continue
            env = envs.get(blocks)
            if env is None:  # one environment per grid size (read-only below)
                env = envs[blocks] = task_env(point, blocks, nranks, scalar_ranges)
            through_valid = valid_regions(task.body)
            for acc in task.accesses:
                key = (task.base, acc.span)
                if key in found:
                    continue
                valid = through_valid.get((acc.tensor, acc.region)) if through_valid else None
                problem = _overflow(acc, extents[acc.tensor], env, valid)
                if problem is None:
                    continue
                dim, lo, hi, extent = problem
                at = ", ".join(f"{n}={point[n]}" for n in ranged) or "the current parameters"
                what = f"reaches index {hi}" if hi >= extent else f"starts at {lo}"
                found[key] = diag(
                    "E305",
                    acc.span,
                    f"'{acc.tensor}' dimension {dim} has extent {extent} but this region {what} (at {at})",
                    hint="narrow the slice, guard it, or widen the tensor",
                )
    return list(found.values())


def _overflow(acc, extents, env, valid=None):
    try:
        scoped = loop_env(acc.loops, env)
    except EvalError:  # a loop bound read from data: not a compile-time question
        return None
    if scoped is None:
        return None
    ndim = len(acc.region)
    for dim, (rng, extent) in enumerate(zip(acc.region, extents, strict=True)):
        if extent is None:
            continue
        stop = rng.stop
        if valid is not None:  # moved through valid(...): only the valid part is transferred
            limit = valid[1] if dim == ndim - 1 else valid[0] if dim == ndim - 2 else None
            if limit is not None:
                stop = binop("+", rng.start, limit)
        try:
            lo, _ = bounds(rng.start, scoped)
            _, hi = bounds(stop, scoped)
        except EvalError:
            continue
        if lo < 0 or hi - 1 >= extent:
            return dim, lo, hi - 1, extent
    return None
