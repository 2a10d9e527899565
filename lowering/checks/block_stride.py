"""Blocks that their offsets keep apart: a proof, without listing executions, that two accesses
of one task never meet across blocks.

Tiled kernels index a region by the block: ``x[block * TILE + i * 16 : ... + 16]``, or, for a
2-D tiling or a split-K partial, by digits of it: ``p[(block % S) * T + (block // S) * TILE :
... + TILE]``. Split each end of a dimension into the part that depends on ``block`` (its
*offset*, a number per block at the graph's point) and the rest; every block's elements of the
access then lie in ``[offset(block) + lo, offset(block) + hi)``, with ``lo``/``hi`` the lowest
start and highest stop of the rest over the loops, the ranks and the runtime scalars' ranges.
If the distinct offsets of the grid are at least that wide apart, blocks with different
offsets never meet in that dimension; if such dimensions tell every two blocks apart, no
two blocks meet at all. The race rule R505 need not enumerate the thousands of executions of
a large grid to see it. Conditions, steps and the clamping at the tensor's extent only remove
elements, so leaving them out keeps the proof sound; anything that cannot be bounded (a
region read from data, an offset that moves with a loop) leaves the question to the
enumeration.
"""

from __future__ import annotations

import numpy as np

from lowering.checks.extents import veval
from lowering.ir import Access, Graph
from lowering.regions import loop_env
from lowering.symbolic import BLOCK, Const, EvalError, Expr, Sym, bounds, free_symbols, from_poly, poly

MAX_LISTED = 1 << 20  # blocks whose offsets are computed one by one


def blocks_apart(graph: Graph, a: Access, b: Access, blocks: int) -> bool:
    """Whether no execution of ``a`` by one of the ``blocks`` blocks of a grid shares an element
    with an execution of ``b`` by another block, at the graph's point (see the module docs)."""
    env: dict = {**graph.env(), **graph.scalar_ranges()}
    env.update(rank=(0, max(graph.nranks, 1) - 1), nranks=graph.nranks)
    try:
        env_a, env_b = loop_env(a.loops, env), loop_env(b.loops, env)
    except EvalError:
        return False
    if env_a is None or env_b is None:
        return True  # a loop that never runs: no execution at all
    dealt = _dealt(a.loops, env, blocks)
    if dealt != _dealt(b.loops, env, blocks):
        dealt = {}  # the two accesses deal out different loops: only the block itself separates
    separating: list[np.ndarray] = []
    for ra, rb in zip(a.region, b.region, strict=True):
        span_a, span_b = _span(ra, env_a, dealt), _span(rb, env_b, dealt)
        if span_a is None or span_b is None or span_a[0] != span_b[0]:
            continue
        offset, a_lo, a_hi = span_a
        _, b_lo, b_hi = span_b
        width = max(a_hi - b_lo, b_hi - a_lo)  # how far apart two offsets must be
        moving = {x.name for x in free_symbols(offset)} & dealt.keys()
        if moving:
            if (
                len(moving) == 1
                and not _on_block(offset)
                and _dealt_apart(graph, offset, (var := moving.pop()), dealt[var], width)
            ):
                return True
            continue
        stride = _stride(offset)
        if stride is not None:
            if stride >= width:
                return True  # k * block: every two blocks at least k apart
            continue
        found = _offsets(graph, offset, blocks)
        if found is None:
            continue
        values, count, gap = found
        if gap >= width:
            if count == blocks:
                return True  # every block at its own offset
            separating.append(values)
    return bool(separating) and _distinct_rows(separating) == blocks


def _distinct_rows(columns: list[np.ndarray]) -> int:
    """How many distinct rows the columns (one value per block each) make."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    span = 1
    for col in columns:
        low, high = int(col.min()), int(col.max())
        span *= high - low + 1
        if span >= 1 << 62:  # no single integer per row: compare the rows themselves
            return len(np.unique(np.stack(columns, axis=1), axis=0))
        key = key * (high - low + 1) + (col - low)
    return len(np.unique(key))


def _dealt(loops, env, blocks: int) -> dict[str, tuple]:
    """The loops that deal their iterations out to the blocks (``for j in range(block, N,
    GRID)`` with a step of at least the grid): each value of the variable belongs to one block
    only. Variable -> (start, stop, step, lowest value, highest stop)."""
    out: dict[str, tuple] = {}
    for loop in loops:
        split = _split(loop.start, {})
        if split is None or poly(split[0]) != {(Sym("block", BLOCK),): 1}:
            continue
        try:
            first, last = bounds(split[1], env)
            step_lo, step_hi = bounds(loop.step, env)
            _, stop = bounds(loop.stop, env)
        except EvalError:
            continue
        if first == last and step_lo == step_hi >= blocks:  # the same start offset for every block
            out[loop.var] = (loop.start, loop.stop, loop.step, first, stop)
    return out


def _dealt_apart(graph: Graph, offset: Expr, var: str, loop: tuple, width: int) -> bool:
    """Whether ``offset``, a function of the dealt-out loop variable ``var``, takes a different
    value, at least ``width`` apart, at every value ``var`` can take in any block."""
    *_, first, stop = loop
    if stop - first > MAX_LISTED or stop <= first:
        return stop <= first  # no iteration at all, or too many to list
    env = {**graph.env(), var: np.arange(first, stop, dtype=np.int64)}
    try:
        values = np.broadcast_to(veval(offset, env), (stop - first,))
    except EvalError:
        return False
    distinct = np.unique(values)
    return len(distinct) == stop - first and (len(distinct) < 2 or int(np.diff(distinct).min()) >= width)


def _span(rng, env, dealt: dict) -> tuple[Expr, int, int] | None:
    """(offset, lowest start, highest stop) of one dimension, the offset taken out of both
    ends; None when the two ends move differently with the block (or a dealt-out loop) or
    cannot be bounded."""
    start, stop = _split(rng.start, dealt), _split(rng.stop, dealt)
    if start is None or stop is None or start[0] != stop[0] or start[0] == Const(0):
        return None
    try:
        lo, _ = bounds(start[1], env)
        _, hi = bounds(stop[1], env)
    except EvalError:
        return None
    return start[0], lo, hi


def _split(e: Expr, dealt) -> tuple[Expr, Expr] | None:
    """``e`` as (the terms that depend on ``block`` or a dealt-out loop variable, the rest)."""
    form = poly(e)
    if form is None:
        return None
    moving: dict = {}
    rest: dict = {}
    for mono, coeff in form.items():
        moves = any(s.kind == BLOCK or s.name in dealt for atom in mono for s in free_symbols(atom))
        (moving if moves else rest)[mono] = coeff
    return from_poly(moving), from_poly(rest)


def _on_block(e: Expr) -> bool:
    return any(s.kind == BLOCK for s in free_symbols(e))


def _stride(offset: Expr) -> int | None:
    """``k`` when the offset is ``k * block`` with a constant k > 0."""
    form = poly(offset)
    if form is None or len(form) != 1:
        return None
    ((mono, coeff),) = form.items()
    if len(mono) == 1 and isinstance(mono[0], Sym) and mono[0].kind == BLOCK and coeff > 0:
        return coeff
    return None


def _offsets(graph: Graph, offset: Expr, blocks: int) -> tuple[np.ndarray, int, float] | None:
    """The offset of every block, how many distinct ones there are and the smallest gap between
    two of them (kept on the graph: the accesses of a tensor share their offsets); None when
    it depends on more than the block and the point."""
    if blocks > MAX_LISTED:
        return None
    cache = graph.__dict__.setdefault("_block_offsets", {})
    key = (offset, blocks)
    if key not in cache:
        env = {**graph.env(), "block": np.arange(blocks, dtype=np.int64)}
        try:
            values = np.broadcast_to(veval(offset, env), (blocks,))
        except EvalError:
            cache[key] = None
        else:
            distinct = np.unique(values)
            gap = float(np.diff(distinct).min()) if len(distinct) > 1 else float("inf")
            cache[key] = (values, len(distinct), gap)
    return cache[key]
