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
    separating: list[np.ndarray] = []
    for ra, rb in zip(a.region, b.region, strict=True):
        span_a, span_b = _span(ra, env_a), _span(rb, env_b)
        if span_a is None or span_b is None or span_a[0] != span_b[0]:
            continue
        offset, a_lo, a_hi = span_a
        _, b_lo, b_hi = span_b
        width = max(a_hi - b_lo, b_hi - a_lo)  # how far apart two offsets must be
        stride = _stride(offset)
        if stride is not None:
            if stride >= width:
                return True  # k * block: every two blocks at least k apart
            continue
        values = _offsets(graph, offset, blocks)
        if values is None:
            continue
        distinct = np.unique(values)
        if len(distinct) < 2 or int(np.diff(distinct).min()) >= width:
            separating.append(values)
    if not separating:
        return False
    rows = np.stack(separating, axis=1)
    return len(np.unique(rows, axis=0)) == blocks


def _span(rng, env) -> tuple[Expr, int, int] | None:
    """(offset, lowest start, highest stop) of one dimension, the offset taken out of both
    ends; None when the two ends move differently with the block or cannot be bounded."""
    start, stop = _split(rng.start), _split(rng.stop)
    if start is None or stop is None or start[0] != stop[0] or start[0] == Const(0):
        return None
    try:
        lo, _ = bounds(start[1], env)
        _, hi = bounds(stop[1], env)
    except EvalError:
        return None
    return start[0], lo, hi


def _split(e: Expr) -> tuple[Expr, Expr] | None:
    """``e`` as (the terms that depend on ``block``, the rest)."""
    form = poly(e)
    if form is None:
        return None
    moving: dict = {}
    rest: dict = {}
    for mono, coeff in form.items():
        on_block = any(s.kind == BLOCK for atom in mono for s in free_symbols(atom))
        (moving if on_block else rest)[mono] = coeff
    return from_poly(moving), from_poly(rest)


def _stride(offset: Expr) -> int | None:
    """``k`` when the offset is ``k * block`` with a constant k > 0."""
    form = poly(offset)
    if form is None or len(form) != 1:
        return None
    ((mono, coeff),) = form.items()
    if len(mono) == 1 and isinstance(mono[0], Sym) and mono[0].kind == BLOCK and coeff > 0:
        return coeff
    return None


def _offsets(graph: Graph, offset: Expr, blocks: int) -> np.ndarray | None:
    """The offset of every block, or None when it depends on more than the block and the point."""
    if blocks > MAX_LISTED:
        return None
    env = {**graph.env(), "block": np.arange(blocks, dtype=np.int64)}
    try:
        return np.broadcast_to(veval(offset, env), (blocks,))
    except EvalError:
        return None
