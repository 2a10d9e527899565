"""Slice bounds against tensor extents, for every admissible parameter value (E305).

Each region is bounded over all blocks of its task, all iterations of its loops and all
ranks, with interval arithmetic on the symbolic form; this is repeated at every admissible
parameter point, so a slice that only overflows for a long chunk (T = 8192) is still found.
"""

from __future__ import annotations

from dsl.codes import diag
from lowering.ir import Graph
from lowering.regions import loop_env, task_env
from lowering.source import Diagnostic
from lowering.symbolic import EvalError, bounds, evaluate


def check_bounds(graph: Graph, max_points: int = 256) -> list[Diagnostic]:
    found: dict[tuple, Diagnostic] = {}
    scalar_ranges = graph.scalar_ranges()
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    for point in graph.admissible_points(limit=max_points):
        try:
            nranks = evaluate(graph.ranks, point)
        except EvalError:
            continue
        extents = {}
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
            env = task_env(point, blocks, nranks, scalar_ranges)
            for acc in task.accesses:
                key = (task.base, acc.span)
                if key in found:
                    continue
                problem = _overflow(acc, extents[acc.tensor], env)
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


def _overflow(acc, extents, env):
    scoped = loop_env(acc.loops, env)
    if scoped is None:
        return None
    for dim, (rng, extent) in enumerate(zip(acc.region, extents, strict=True)):
        if extent is None:
            continue
        try:
            lo, _ = bounds(rng.start, scoped)
            _, hi = bounds(rng.stop, scoped)
        except EvalError:
            continue
        if lo < 0 or hi - 1 >= extent:
            return dim, lo, hi - 1, extent
    return None
