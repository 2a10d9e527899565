"""Concrete instances of tensor accesses, for the race and numerics rules.

An :class:`Access` in the IR is symbolic: one statement of a task body, with a region in
terms of ``block``, loop indices and ``rank``. The runtime runs it once per rank x block x
iteration. :func:`hits` enumerates those executions at one parameter point and evaluates
each region exactly (``start:stop:step`` per dimension), so that two accesses conflict only
if some execution of one shares an element with some execution of the other.

Work is bounded by ``MAX_HITS`` per access, never by the size of the grid: beyond it, loops
are taken as intervals (one hull per block), and when the grid alone has more blocks than
that (``spmd(10**7)``), ``block`` is taken as its interval too -- one hull per rank, marked
``exact=False`` and ``block=-1``, so rules that need a certain overlap between two blocks
stay silent rather than enumerate ten million of them.

What cannot be evaluated is widened, never dropped: a dimension indexed by data (``read``
of a tensor) or by a runtime scalar spans the whole extent and marks the hit ``exact=False``;
an access under a condition that depends on data is kept and marked ``maybe=True``. Rules
that must not guess (a finding only when an overlap is certain) filter on these flags.

Ordering facts that hold *inside* one task are here too: executions of one block run in
program order, and a ``barrier`` between two accesses orders every block's first access
before every block's second (``phase``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from lowering.checks.fasteval import compiled_bounds
from lowering.ir import Access, Graph, Task, Tensor
from lowering.symbolic import Const, EvalError, Interval, bounds, evaluate, free_symbols

MAX_HITS = 60_000  # per access; beyond, loops are taken as intervals (one hull per block)
MAX_PAIR_TESTS = 2_000_000

Dim = tuple[int, int, int]  # start, stop (exclusive), step
Region = tuple[Dim, ...]


@dataclass(frozen=True)
class Hit:
    """One execution of an access (or, when loops are widened, of a block's whole loop nest)."""

    task: str
    access: Access
    rank: int  # the rank that runs it
    dest: int  # the rank whose memory it touches (-1: any, the peer depends on data)
    block: int
    phase: int  # barriers passed before it in program order
    region: Region
    exact: bool
    maybe: bool
    iters: tuple[tuple[str, int], ...] = ()

    def text(self) -> str:
        return region_text(self.region)


def region_text(region: Region) -> str:
    parts = []
    for lo, hi, step in region:
        parts.append(f"{lo}:{hi}" + (f":{step}" if step != 1 else ""))
    return "[" + ", ".join(parts) + "]"


def grid_sample(task: Task, per_end: int = 64) -> tuple[int, ...] | None:
    """The blocks a rule examines one by one in a grid too large to list (the first and the last
    ``per_end``), or None when the grid is small enough to list whole."""
    if task.blocks * max(len(task.accesses), 1) <= MAX_HITS:
        return None
    return tuple(
        sorted({*range(min(per_end, task.blocks)), *range(max(task.blocks - per_end, 0), task.blocks)})
    )


def phase_of(task: Task, access: Access) -> int:
    return sum(1 for b in task.barriers if b.order < access.order)


def depends_on_rank(access: Access) -> bool:
    exprs = [e for r in access.region for e in (r.start, r.stop, r.step)]
    exprs += [c.expr for c in access.conds]
    exprs += [e for loop in access.loops for e in (loop.start, loop.stop, loop.step)]
    return any(s.name in ("rank",) for e in exprs for s in free_symbols(e))


def _ranks(graph: Graph, access: Access) -> range:
    if access.peer is not None or depends_on_rank(access):
        return range(max(graph.nranks, 1))
    return range(1)


def _dim(rng, extent: int | None, env: Mapping[str, int | Interval], bound=bounds) -> tuple[Dim, bool] | None:
    """One dimension of a region; None when it is empty."""
    top = extent if extent is not None else 1 << 40
    try:
        slo, shi = bound(rng.start, env)
        tlo, thi = bound(rng.stop, env)
        exact = slo == shi and tlo == thi
        lo, hi = (slo, tlo) if exact else (slo, thi)
        step = 1
        if exact:
            try:
                step = rng.step.value if isinstance(rng.step, Const) else evaluate(rng.step, env)  # type: ignore[arg-type]
                step = max(step, 1)
            except (EvalError, TypeError):
                step, exact = 1, False
    except EvalError:
        lo, hi, step, exact = 0, top, 1, False
    lo, hi = max(lo, 0), min(hi, top)
    if hi <= lo:
        return None
    if step > 1:  # normalise the stop to one past the last element
        hi = lo + ((hi - 1 - lo) // step) * step + 1
    return (lo, hi, step), exact


def _cond_state(access: Access, env: Mapping[str, int | Interval], bound=bounds) -> bool | None:
    """True: runs; False: never; None: depends on data or on a widened loop."""
    state: bool | None = True
    for c in access.conds:
        try:
            lo, hi = bound(c.expr, env)
        except EvalError:
            state = None
            continue
        if lo == hi == 0:
            return False
        if not (lo == hi and lo != 0):
            state = None
    return state


def _compiled_bound(expr, env: Mapping[str, int | Interval]) -> Interval:
    return compiled_bounds(expr)(env)


class _TooMany(Exception):
    pass


def _loop_envs(
    loops, env: dict[str, int | Interval], widen: bool, budget: list[int]
) -> Iterator[tuple[dict[str, int | Interval], bool]]:
    """Environments of every iteration (exact=False once a loop had to be widened)."""
    if not loops:
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooMany
        yield env, True
        return
    loop, rest = loops[0], loops[1:]
    if not widen:
        try:
            start, stop, step = (evaluate(e, env) for e in (loop.start, loop.stop, loop.step))  # type: ignore[arg-type]
        except (EvalError, TypeError):
            pass
        else:
            for v in range(start, stop, max(step, 1)):
                yield from _loop_envs(rest, {**env, loop.var: v}, widen, budget)
            return
    try:
        lo, _ = bounds(loop.start, env)
        _, hi = bounds(loop.stop, env)
    except EvalError:
        inner = dict(env)
        inner.pop(loop.var, None)
        for e, _exact in _loop_envs(rest, inner, True, budget):
            yield e, False
        return
    if hi - 1 < lo:
        return
    for e, _exact in _loop_envs(rest, {**env, loop.var: (lo, hi - 1)}, True, budget):
        yield e, False


def hits(graph: Graph, task: Task, access: Access, blocks: tuple[int, ...] | None = None) -> list[Hit]:
    """Every execution of ``access`` at the graph's parameter point (see module docs), or only
    those of the given ``blocks`` (exact, for a rule that samples a grid too large to list)."""
    key = (task.name, access.order, blocks)
    cache = graph.__dict__.setdefault("_access_hits", {})
    if key not in cache:
        try:
            cache[key] = _hits(graph, task, access, widen=False, only=blocks)
        except _TooMany:
            cache[key] = _hits(graph, task, access, widen=True, only=blocks)
    return cache[key]


def widened_hits(
    graph: Graph, task: Task, access: Access, blocks: tuple[int, ...] | None = None
) -> list[Hit]:
    """One hit per rank x block with every loop taken as its interval: a box around all the
    block's executions of ``access``, cheap to compute where listing them is not (a
    necessary-condition test before :func:`hits`)."""
    key = (task.name, access.order, blocks)
    cache = graph.__dict__.setdefault("_widened_hits", {})
    if key not in cache:
        cache[key] = _hits(graph, task, access, widen=True, only=blocks)
    return cache[key]


def _looked_up(access: Access) -> set[str]:
    """Every name evaluating an instance of ``access`` can look up (its loop variables too)."""
    exprs = [e for r in access.region for e in (r.start, r.stop, r.step)]
    exprs += [c.expr for c in access.conds]
    exprs += [e for loop in access.loops for e in (loop.start, loop.stop, loop.step)]
    if access.peer is not None:
        exprs.append(access.peer)
    names = {loop.var for loop in access.loops}
    for e in exprs:
        names.update(s.name for s in free_symbols(e))
    return names


def can_be_certain(graph: Graph, access: Access) -> bool:
    """Whether some execution of ``access`` can be exact and not ``maybe``: every name its
    region, conditions and loop bounds look up is bound at the graph's point. A name that is
    not (a value read from data) makes every execution inexact or maybe, so a rule that wants
    certain hits alone need not enumerate them."""
    bound = graph.__dict__.get("_bound_names")
    if bound is None:
        bound = {*graph.env(), *graph.scalar_ranges(), "block", "rank", "nranks"}
        graph.__dict__["_bound_names"] = bound
    return _looked_up(access) - {loop.var for loop in access.loops} <= bound


def _hits(graph: Graph, task: Task, access: Access, widen: bool, only=None) -> list[Hit]:
    # Only the names the instances look up: the environment is copied at every block and
    # iteration, and a model's parameters and constants run into the hundreds.
    names = _looked_up(access)
    point = graph.__dict__.get("_hits_point")
    if point is None:  # one pair of dicts per graph: they are read at every access
        point = graph.__dict__["_hits_point"] = (graph.env(), graph.scalar_ranges())
    base = {k: v for k, v in point[0].items() if k in names}
    scalars = {k: v for k, v in point[1].items() if k in names}
    tensor = graph.tensors[access.tensor]
    phase = phase_of(task, access)
    out: list[Hit] = []
    budget = [MAX_HITS if not widen else 1 << 60]
    loop_vars = [loop.var for loop in access.loops]
    ranks = _ranks(graph, access)
    whole_grid = only is None and widen and len(ranks) * task.blocks > MAX_HITS
    blocks: range | list[int] | tuple[int, ...] = [-1] if whole_grid else only or range(task.blocks)
    points = len(ranks) * len(blocks)
    # The same few expressions at every rank x block x iteration: compiled once when that pays.
    bound = _compiled_bound if points >= 32 or (access.loops and points >= 4) else bounds
    for rank in ranks:
        for block in blocks:
            where: int | Interval = (0, task.blocks - 1) if whole_grid else block
            env: dict[str, int | Interval] = {**base, "rank": rank, "nranks": graph.nranks, "block": where}
            env.update(scalars)
            for scoped, loops_exact in _loop_envs(access.loops, env, widen, budget):
                state = _cond_state(access, scoped, bound)
                if state is False:
                    continue
                region = []
                exact = loops_exact and not whole_grid
                for rng, extent in zip(access.region, tensor.dims, strict=True):
                    d = _dim(rng, extent, scoped, bound)
                    if d is None:
                        break
                    region.append(d[0])
                    exact = exact and d[1]
                else:
                    dest = rank
                    if access.peer is not None:
                        try:
                            dest = evaluate(access.peer, scoped)  # type: ignore[arg-type]
                        except (EvalError, TypeError):
                            dest = -1
                    iters = tuple((v, scoped[v]) for v in loop_vars if isinstance(scoped.get(v), int))
                    out.append(
                        Hit(task.name, access, rank, dest, block, phase, tuple(region), exact,
                            state is None, iters)  # type: ignore[arg-type]
                    )  # fmt: skip
    return out


# ---------------------------------------------------------------- overlap


def _progressions_meet(a: Dim, b: Dim) -> bool:
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    if hi <= lo:
        return False
    sa, sb = a[2], b[2]
    if sa == 1 and sb == 1:
        return True
    g = math.gcd(sa, sb)
    if (b[0] - a[0]) % g:
        return False
    # first element of a at or after lo, then walk a at most sb/g steps to meet b's residue
    x = a[0] + -(-(lo - a[0]) // sa) * sa
    for _ in range(sb // g):
        if x >= hi:
            return False
        if (x - b[0]) % sb == 0:
            return True
        x += sa
    return False


def regions_meet(a: Region, b: Region) -> bool:
    """Do two regions (Cartesian products of progressions) share an element?"""
    return all(_progressions_meet(x, y) for x, y in zip(a, b, strict=True))


def intersection_text(a: Region, b: Region) -> str:
    return region_text(tuple((max(x[0], y[0]), min(x[1], y[1]), 1) for x, y in zip(a, b, strict=True)))


def _sweep_dim(hits_a: list[Hit], hits_b: list[Hit]) -> int:
    dims = len(hits_a[0].region)
    best, best_n = 0, -1
    for d in range(dims):
        n = len({h.region[d][0] for h in hits_a} | {h.region[d][0] for h in hits_b})
        if n > best_n:
            best, best_n = d, n
    return best


def overlapping_pairs(
    hits_a: list[Hit],
    hits_b: list[Hit] | None = None,
    accept: Callable[[Hit, Hit], bool] | None = None,
) -> Iterator[tuple[Hit, Hit]]:
    """Pairs (a, b) that share an element and touch the same rank's memory.

    With ``hits_b`` None, pairs within ``hits_a`` (each unordered pair once). ``accept``
    filters pairs before the (costlier) region test. Stops after ``MAX_PAIR_TESTS``
    candidate pairs (callers pass :func:`distinct` hits, which keeps that far away).
    """
    same = hits_b is None
    if same:
        hits_b = hits_a
    if not hits_a or not hits_b:
        return
    d = _sweep_dim(hits_a, hits_b)
    events = [(h.region[d][0], 0, i) for i, h in enumerate(hits_a)]
    if not same:
        events += [(h.region[d][0], 1, i) for i, h in enumerate(hits_b)]
    events.sort()
    active: list[list[tuple[int, int]]] = [[], []]  # (stop, index) per side
    tests = 0
    for start, side, i in events:
        h = (hits_a if side == 0 else hits_b)[i]
        for s in (0, 1):
            active[s] = [(stop, j) for stop, j in active[s] if stop > start]
        other = 0 if same else 1 - side
        for _stop, j in active[other]:
            tests += 1
            if tests > MAX_PAIR_TESTS:
                return
            g = (hits_a if other == 0 else hits_b)[j]
            a, b = (h, g) if side == 0 and not same else (g, h)
            if a.dest != b.dest and -1 not in (a.dest, b.dest):
                continue
            if accept is not None and not accept(a, b):
                continue
            if regions_meet(a.region, b.region):
                yield a, b
        active[side].append((h.region[d][1], i))


def distinct(found: list[Hit], key: Callable[[Hit], object] = lambda h: None) -> list[Hit]:
    """One hit per (key, rank, destination, region): repeated executions that touch the same
    elements (loop iterations that do not move the region, data-indexed hits widened to the
    whole extent) collapse into one; it is exact only if all were, maybe only if all were."""
    out: dict[tuple, Hit] = {}
    for h in found:
        k = (key(h), h.rank, h.dest, h.region)
        seen = out.get(k)
        if seen is None:
            out[k] = h
        elif (seen.exact and not h.exact) or (seen.maybe and not h.maybe):
            out[k] = Hit(seen.task, seen.access, seen.rank, seen.dest, seen.block, seen.phase, seen.region,
                         seen.exact and h.exact, seen.maybe and h.maybe, seen.iters)  # fmt: skip
    return list(out.values())


def distinct_hits(graph: Graph, task: Task, access: Access) -> list[Hit]:
    """:func:`distinct` executions of ``access`` at the graph's point, kept on the graph: the
    race rules meet one access in many pairs."""
    cache = graph.__dict__.setdefault("_distinct_hits", {})
    key = (task.name, access.order, access.tensor)
    found = cache.get(key)
    if found is None:
        found = cache[key] = distinct(hits(graph, task, access))
    return found


def hull(found: list[Hit]) -> tuple[tuple[int, int], ...] | None:
    """The bounding box (inclusive lo, exclusive hi per dimension) of some hits."""
    if not found:
        return None
    dims = len(found[0].region)
    return tuple(
        (min(h.region[d][0] for h in found), max(h.region[d][1] for h in found)) for d in range(dims)
    )


def hulls_meet(a: tuple[tuple[int, int], ...] | None, b: tuple[tuple[int, int], ...] | None) -> bool:
    if a is None or b is None:
        return False
    for x, y in zip(a, b, strict=True):  # a plain loop: this runs millions of times on big graphs
        if x[0] >= y[1] or y[0] >= x[1]:
            return False
    return True


def first_overlap(
    hits_a: list[Hit], hits_b: list[Hit] | None = None, accept: Callable[[Hit, Hit], bool] | None = None
) -> tuple[Hit, Hit] | None:
    return next(overlapping_pairs(hits_a, hits_b, accept), None)


# ---------------------------------------------------------------- ordering


def tasks_ordered(ancestors: Mapping[str, frozenset[str]], a: str, b: str) -> bool:
    """Is one of two distinct tasks a transitive predecessor of the other?"""
    return a in ancestors[b] or b in ancestors[a]


def hits_ordered(ancestors: Mapping[str, frozenset[str]], a: Hit, b: Hit) -> bool:
    """Are two executions ordered: same block in program order, across a barrier, or by edges?"""
    if a.rank != b.rank:
        return False  # ranks only meet through signals, which these rules do not model
    if a.task == b.task:
        return a.block == b.block or a.phase != b.phase
    return tasks_ordered(ancestors, a.task, b.task)


def local_tensor(tensor: Tensor) -> bool:
    """Tensors whose accesses are ordered by task edges (not windows or signal cells)."""
    return tensor.kind not in ("window", "signal")


def on_ranks(found: list[Hit], nranks: int) -> list[Hit]:
    """Hits of a rank-independent local access, repeated on every rank (rank symmetry)."""
    if nranks <= 1 or any(h.rank != 0 for h in found) or any(h.dest != h.rank for h in found):
        return found
    out = list(found)
    for r in range(1, nranks):
        out.extend(
            Hit(h.task, h.access, r, r, h.block, h.phase, h.region, h.exact, h.maybe, h.iters) for h in found
        )
    return out


def aligned(graph: Graph, a: list[Hit], b: list[Hit]) -> tuple[list[Hit], list[Hit]]:
    """Bring two hit lists onto the same ranks when only one of them depends on the rank."""
    multi_a = any(h.rank != 0 for h in a)
    multi_b = any(h.rank != 0 for h in b)
    if multi_a and not multi_b:
        return a, on_ranks(b, graph.nranks)
    if multi_b and not multi_a:
        return on_ranks(a, graph.nranks), b
    return a, b
