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
from lowering.regions import loop_env, names_bounded, task_env
from lowering.source import Diagnostic
from lowering.symbolic import EvalError, binop, bounds, evaluate


def check_bounds(graph: Graph, max_points: int = 256) -> list[Diagnostic]:
    """E305 for every access at every admissible point (up to ``max_points``). An access is
    judged once per distinct value of the names its verdict reads (its region, loop bounds,
    valid extents, grid, tensor extents and the rank count): most parameters of a layer never
    reach most of its regions."""
    found: dict[tuple, Diagnostic] = {}
    scalar_ranges: dict = {}  # runtime scalars stay unbound: such regions are C402's
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    plan = []  # per task, per access: (index, access, valid extents, the names its verdict reads)
    for task in graph.tasks:
        through_valid = valid_regions(task.body)
        accesses = []
        for i, acc in enumerate(task.accesses):
            valid = through_valid.get((acc.tensor, acc.region)) if through_valid else None
            accesses.append(
                (i, acc, valid, tuple(sorted(names_bounded(graph, task, acc, tuple(valid or ())))))
            )
        plan.append((task, accesses))
    judged: set[tuple] = set()
    for point in graph.admissible_points(limit=max_points):
        try:
            nranks = evaluate(graph.ranks, point)
        except EvalError:
            continue
        extents: dict[str, tuple] = {}
        envs: dict[int, dict] = {}
        values: dict[tuple[str, ...], tuple] = {}  # names -> their values here (accesses share names)
        for task, accesses in plan:
            env = None
            for i, acc, valid, names in accesses:
                key = (task.base, acc.span)
                if key in found:
                    continue
                at = values.get(names)
                if at is None:
                    at = values[names] = tuple(point.get(n) for n in names)
                seen = (task.name, i, at)
                if seen in judged:
                    continue
                judged.add(seen)
                if env is None:
                    try:
                        blocks = evaluate(task.grid, point)
                    except EvalError:
                        break
                    env = envs.get(blocks)
                    if env is None:  # one environment per grid size (read-only below)
                        env = envs[blocks] = task_env(point, blocks, nranks, scalar_ranges)
                if acc.tensor not in extents:
                    extents[acc.tensor] = _extents(graph, acc.tensor, point)
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


def _extents(graph: Graph, tensor: str, point) -> tuple:
    try:
        return tuple(evaluate(d, point) for d in graph.tensors[tensor].shape)
    except EvalError:
        return tuple(None for _ in graph.tensors[tensor].shape)


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
