"""C402: a region can reach past a tensor's extent for some admitted request.

## What it catches

A tensor access whose region or whose tensor extent depends on a runtime scalar: a dynamic
dim (``input x: f32[t_dim, HC_DIM]`` with ``scalar t_dim: i32 in 1..16``) or an offset such
as ``kv[start_pos + i, :]``. The region is bounded over every request the host admits (the
scalar ranges, filtered by the layer's ``guard``s), every block and loop iteration, and the
enclosing ``if``s (``if t0 + 16 <= t_dim``); a region moved through ``valid(x[...], rows,
cols)`` / ``fillpad(...)`` (a load or store with a valid shape) only transfers its valid
part. Rule R19 of docs/runtime-semantics.md §21.4 (``d9b5fef9``: hc_head read
``x_flat[t0 : t0 + 16]`` while t_dim was 8, because t_linear rounds up to 16).

**Boundary with E305.** The front end rejects (E305) any region that can exceed an extent
known at compile time, for any admissible parameter value; it never looks at runtime
scalars. Everything that depends on a runtime scalar is C402's, because only the lint sees
guards and request ranges. A region that depends on data (an index read from a tensor) is
judged by neither.

## Why it breaks on the device

DMA does not check bounds. A read past the end of a tensor returns whatever lies after it
in device memory, and a write corrupts it; it faults only when the next page happens to be
unmapped (the hc_head read was 896 KiB out of bounds and crashed only in decode_mtp, where
a different buffer layout followed x). Tests with full-size inputs never see it.

## Example

    scalar t_dim: i32 in 1..T_LINEAR
    input  x: f32[t_dim, HC_DIM]
    ...  matmul_acc(acc, x[t0 : t0 + 16, k0 : k0 + K_CHUNK], w[:, k0 : k0 + K_CHUNK], b_trans)

## Use instead

    let xt = valid(x[t0 : t0 + 16, k0 : k0 + K_CHUNK], min(16, t_dim - t0), K_CHUNK)
    ...  matmul_acc(acc, xt, w[:, k0 : k0 + K_CHUNK], b_trans)   # only the valid rows are read

## Parameter and round coverage

Parameters: every admissible point of each structure class, the compiled point first (thinned
beyond 4,096); per point every admitted request: first over the box of accepted requests (one
interval per runtime scalar, exact for every request), then, only when the box leaves a doubt,
request by request (exact up to 2M combinations, sampled beyond, and the message says so).
An access is judged once per distinct value of what its bounds and the requests read (its
region, loops, conditions, valid extents, grid, tensor extents, the scalars' ranges and the
guards): points that agree on all of it get the same answer.
Rounds: not round-dependent: one request at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from lowering.body import VALID_OPS, valid_regions
from lowering.checks.bodies import summary
from lowering.checks.capacity.emission import task_env
from lowering.checks.extents import bind_loops, implies_at_most, narrow, nonempty, point_text, pretty, vbounds
from lowering.checks.points import own_point_first
from lowering.checks.request_space import depends_on_scalars, requests_text
from lowering.checks.request_space_cache import scalar_intervals, space_at
from lowering.checks.rule import CheckContext, finding
from lowering.checks.validity import facts_for
from lowering.ir import Access, Graph, Tensor
from lowering.regions import names_bounded
from lowering.source import Diagnostic
from lowering.symbolic import SCALAR, Bin, Const, EvalError, Sym, binop, free_symbols

CODE = "C402"
NAME = "slice_out_of_bounds_unguarded"
FAMILY = "capacity"
SEVERITY = "error"
SUMMARY = "a region that depends on runtime values can reach past the tensor's extent"
POINTS = "all"  # visits every admissible parameter point of the structure class itself

_VERB = {"read": "read", "anchor": "read", "write": "write", "atomic": "atomic add", "accumulate": "update"}


def _limits(graph: Graph, ctx: CheckContext, point, task, bodies: dict) -> dict:
    if task.name not in bodies:
        bodies[task.name] = valid_regions(task.body)
    out = dict(bodies[task.name])
    for sf in facts_for(ctx, point, "valid")[task.name].stores:
        marked = sf.rows is not None or (sf.finite is not None and sf.finite != Const(0))
        if marked:
            out.setdefault((sf.tensor, sf.region), (sf.rows, sf.finite))
    return out


def _marks_valid(graph: Graph, task) -> bool:
    """Whether the task's body can store a tile with a declared valid extent (``valid``,
    ``fillpad`` or topk's ``mask_tail``): only then do its store facts add limits."""
    return bool(summary(graph, task).calls & _MARKING)


_MARKING = frozenset({*VALID_OPS, "mask_tail"})
_VALID = frozenset(VALID_OPS)


def _scalar_dep(e) -> bool:
    """``depends_on_scalars(e)`` without building the set of free symbols."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Bin):
            stack.append(x.a)
            stack.append(x.b)
        elif isinstance(x, Sym) and x.kind == SCALAR:
            return True
    return False


def _candidates(graph: Graph, task, shapes: dict[str, bool]) -> list[tuple[Access, Tensor, object]]:
    """The accesses of ``task`` that may depend on runtime scalars at some point, each with
    its valid extents when they do not depend on the point (``_AT_POINT`` when they do).

    The limits of an access are ``valid_regions`` of the body, else the marked store facts
    at the point (``_limits``); only a body that marks valid extents has the latter.
    """
    # a body that calls no valid()/fillpad() moves no region through one: not walked for it
    static = valid_regions(task.body) if summary(graph, task).calls & _VALID else {}
    marks = None
    out = []
    for acc in task.accesses:
        tensor = graph.tensors[acc.tensor]
        if tensor.kind == "signal":
            continue
        if acc.tensor not in shapes:
            shapes[acc.tensor] = any(_scalar_dep(e) for e in tensor.shape)
        exprs = [e for r in acc.region for e in (r.start, r.stop)]
        key = (acc.tensor, acc.region)
        if key in static:
            valid = static[key]
        else:
            if marks is None:
                marks = _marks_valid(graph, task)
            if marks:
                out.append((acc, tensor, _AT_POINT))
                continue
            valid = None
        exprs += [e for e in valid or () if e is not None]
        if shapes[acc.tensor] or any(_scalar_dep(e) for e in exprs):
            out.append((acc, tensor, valid))
    return out


_AT_POINT = object()


def check(graph: Graph, ctx: CheckContext) -> Iterator[Diagnostic]:
    reported: set = set()
    ranged = any(p.domain is not None for p in graph.params.values())
    plan = None  # per task, the accesses worth looking at (the same at every point)
    requests = _request_names(graph)
    judged: set[tuple] = set()  # (task, access, valid extents, the values its verdict reads)
    reads: dict[tuple, tuple[str, ...]] = {}
    bodies: dict[str, dict] = {}
    for point in own_point_first(graph):
        if plan is None:
            shapes: dict[str, bool] = {}
            plan = [(task, found) for task in graph.tasks if (found := _candidates(graph, task, shapes))]
        for task, candidates in plan:
            limits = None
            for i, (acc, tensor, valid) in enumerate(candidates):
                if acc.span in reported:
                    continue
                at_point = valid is _AT_POINT
                if at_point:
                    if limits is None:
                        limits = _limits(graph, ctx, point, task, bodies)
                    valid = limits.get((acc.tensor, acc.region))
                names = reads.get((task.name, i, valid))
                if names is None:
                    conds = tuple(c.expr for c in acc.conds)
                    names = reads[(task.name, i, valid)] = tuple(
                        sorted(names_bounded(graph, task, acc, (*conds, *(valid or ()))) | requests)
                    )
                seen = (task.name, i, valid, tuple(point.get(n) for n in names))
                if seen in judged:
                    continue  # the same question as at an earlier point: the same answer
                judged.add(seen)
                if at_point:
                    exprs = [e for r in acc.region for e in (r.start, r.stop)] + list(tensor.shape)
                    exprs += [e for e in valid or () if e is not None]
                    if not any(depends_on_scalars(e) for e in exprs):
                        continue  # compile-time: the front end's E305
                if _inside_on_box(graph, task, acc, tensor, valid, point, scalar_intervals(ctx, point)):
                    continue
                space = space_at(ctx, point, _scalars(acc, tensor, valid))
                d = _check_access(graph, task, acc, tensor, valid, point, space, ranged)
                if d is not None:
                    reported.add(acc.span)
                    yield d


def _request_names(graph: Graph) -> frozenset[str]:
    """The parameters and constants the accepted requests depend on: the scalars' ranges, the
    guards and the derived scalars."""
    exprs = [g.cond for g in graph.guards]
    for s in graph.scalars.values():
        if s.value is not None:
            exprs.append(s.value)
        if s.form is not None:
            exprs += [s.form.lo, s.form.hi, s.form.step, *(s.form.values or ())]
    return frozenset(x.name for e in exprs for x in free_symbols(e))


def _scalars(acc: Access, tensor: Tensor, valid) -> frozenset[str]:
    """The runtime scalars the bounds of ``acc`` depend on (its space is projected onto them)."""
    exprs = [e for r in acc.region for e in (r.start, r.stop)] + list(tensor.shape)
    exprs += [c.expr for c in acc.conds] + [e for lp in acc.loops for e in (lp.start, lp.stop)]
    exprs += [e for e in valid or () if e is not None]
    return frozenset(s.name for e in exprs for s in free_symbols(e) if s.kind == SCALAR)


def _inside_on_box(graph, task, acc, tensor, valid, point, box) -> bool:
    """Whether the access stays inside its tensor at every request of ``box`` (one interval per
    runtime scalar, enclosing every accepted request): proven without enumerating the requests.
    False when it may leave, or when a bound cannot be taken over the box (a divisor interval
    containing zero, a scalar no request admits): the requests then decide."""
    try:
        return not any(
            bad.any() for _, bad, *_ in _overflows(graph, task, acc, tensor, valid, point, box, True)
        )
    except EvalError:
        return False


def _overflows(graph, task, acc, tensor, valid, point, scalars, strict=False):
    """Per dimension the access can leave its tensor in, ``(dim, bad, lo, hi, extent)``: masks
    and bounds over the requests of ``scalars`` (arrays per request, or one interval each);
    nothing when the environment cannot be evaluated (``strict``: raises EvalError instead)."""
    env = task_env(graph, task, point, scalars)
    try:
        runs = bind_loops(env, acc.loops)
        narrow(env, acc.conds)
        runs = runs & nonempty(env, ["block", *(lp.var for lp in acc.loops)])
    except EvalError:
        if strict:
            raise
        return
    ndim = len(acc.region)
    for dim, rng in enumerate(acc.region):
        stop = rng.stop
        if valid is not None:
            limit = valid[1] if dim == ndim - 1 else valid[0] if dim == ndim - 2 else None
            if limit is not None:
                stop = binop("+", rng.start, limit)
        within = implies_at_most(acc.conds, stop, tensor.shape[dim])  # `if t0 + r < n` over x[t0 + r]
        try:
            lo, _ = vbounds(rng.start, env)
            _, hi = vbounds(stop, env)
            extent, _ = vbounds(tensor.shape[dim], env)
        except EvalError:
            if strict:
                raise
            continue
        yield dim, runs & (((hi > extent) & (not within)) | (lo < 0)), lo, hi, extent


def _check_access(graph, task, acc, tensor, valid, point, space, ranged) -> Diagnostic | None:
    admitted = space.accepted
    for dim, bad, lo, hi, extent in _overflows(graph, task, acc, tensor, valid, point, space):
        lo, hi, extent, bad = (np.broadcast_to(x, (space.size,)) for x in (lo, hi, extent, bad))
        bad = admitted & bad
        if not bad.any():
            continue
        idx = np.flatnonzero(bad)
        i = int(idx[np.argmax(extent[idx])])  # the largest extent that still overflows
        example = requests_text(space, bad)
        at = f" at {point_text(graph, point)}" if ranged else ""
        sampled = " (requests sampled)" if space.thinned else ""
        past = (
            f"reaches index {int(hi[i]) - 1} of extent {int(extent[i])}"
            if hi[i] > extent[i]
            else f"starts at {int(lo[i])}"
        )
        verb = _VERB.get(acc.mode, acc.mode)
        hint = (
            f"{verb} through valid({acc.tensor}[...], <rows in bounds>, ...) so only the valid part moves, "
            f"or refuse these requests with a guard"
        )
        return finding(
            CODE,
            SEVERITY,
            acc.span,
            f"{task.base}: this {verb} of '{acc.tensor}' dimension {dim} (extent {pretty(tensor.shape[dim])}) "
            f"{past} for {int(bad.sum())} admitted requests ({example}){at}{sampled}; DMA does not "
            f"check bounds, so it touches whatever memory follows the tensor",
            fix=hint,
        )
    return None
