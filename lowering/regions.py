"""Regions touched by accesses: index boxes over all blocks and iterations, and byte ranges.

The runtime compares the byte ranges of task arguments (same base, intersecting
``[offset, offset + size)``), so a column band of a row-major tensor overlaps every other
column band it shares a row with. We reproduce that, not an idealised overlap test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from lowering.ir import Access, Graph, Loop, Task, Tensor
from lowering.symbolic import Const, EvalError, Expr, Interval, bounds, free_symbols

Box = tuple[tuple[int, int], ...]  # inclusive index interval per dimension


@dataclass(frozen=True)
class Footprint:
    """What one task touches of one tensor, at one parameter point."""

    tensor: str
    box: Box
    byte_lo: int
    byte_hi: int  # exclusive
    reads: bool
    writes: bool
    anchor_only: bool  # every read is an anchor read

    def text(self) -> str:
        return self._text

    @cached_property
    def _text(self) -> str:  # one footprint is the producer side of many edges
        return "[" + ", ".join(f"{lo}:{hi + 1}" for lo, hi in self.box) + "]"


def loop_env(loops: tuple[Loop, ...], env: Mapping[str, int | Interval]) -> dict[str, int | Interval] | None:
    """Bind each loop variable to its interval; None when some loop never runs.

    The result is for reading only: without loops it is ``env`` itself.
    """
    if not loops:
        return env  # type: ignore[return-value]  # read-only use; no copy on the hot path
    out: dict[str, int | Interval] = dict(env)
    for loop in loops:
        try:
            lo, _ = bounds(loop.start, out)
            _, hi = bounds(loop.stop, out)
        except EvalError:
            continue  # bounds read from data: the variable stays unknown, regions on it widen
        if hi - 1 < lo:
            return None
        out[loop.var] = (lo, hi - 1)
    return out


def access_box(access: Access, tensor: Tensor, env: Mapping[str, int | Interval]) -> Box | None:
    """Index box of ``access`` over all blocks/iterations; None if it can never execute.

    A dimension whose bounds depend on something unknown (a data-dependent index) is the
    whole extent: the conservative answer the runtime would also give for an opaque view.
    """
    scoped = loop_env(access.loops, env)
    if scoped is None:
        return None
    box = []
    for rng, extent in zip(access.region, tensor.dims, strict=True):
        start, stop = rng.start, rng.stop
        if type(start) is Const and type(stop) is Const:  # fast path: constant index
            lo, hi = start.value, stop.value - 1
        else:
            try:
                lo, _ = bounds(start, scoped)
                _, hi = bounds(stop, scoped)
                hi -= 1
            except EvalError:
                lo, hi = 0, (extent - 1 if extent is not None else 1 << 40)
        if extent is not None:
            if lo < 0:
                lo = 0
            if hi >= extent:
                hi = extent - 1
        if hi < lo:
            return None
        box.append((lo, hi))
    return tuple(box)


def byte_range(box: Box, tensor: Tensor) -> tuple[int, int]:
    dims = tensor.dims
    if None in dims:
        return 0, 1 << 62
    first = last = 0
    for (lo, hi), extent in zip(box, dims, strict=True):
        first = first * extent + lo
        last = last * extent + hi
    return first * tensor.itemsize, (last + 1) * tensor.itemsize


def union(a: Box, b: Box) -> Box:
    return tuple(
        [(x0 if x0 < y0 else y0, x1 if x1 > y1 else y1) for (x0, x1), (y0, y1) in zip(a, b, strict=True)]
    )


def task_footprints(
    accesses: tuple[Access, ...], tensors: Mapping[str, Tensor], env: Mapping[str, int | Interval]
) -> list[Footprint]:
    """One footprint per tensor a task touches (signals excluded: they carry no edges)."""
    acc_state: dict[str, list] = {}  # tensor -> [box, reads, writes, anchor_only]
    for acc in accesses:
        tensor = tensors[acc.tensor]
        if tensor.kind == "signal":
            continue
        box = access_box(acc, tensor, env)
        if box is None:
            continue
        mode = acc.mode
        is_read = mode == "read" or mode == "anchor" or mode == "atomic"
        state = acc_state.get(acc.tensor)
        if state is None:
            acc_state[acc.tensor] = [
                box,
                is_read,
                mode == "write" or mode == "atomic",
                is_read and mode == "anchor",
            ]
            continue
        state[0] = union(state[0], box)
        if is_read:
            state[3] = (state[3] if state[1] else True) and mode == "anchor"
            state[1] = True
        if mode == "write" or mode == "atomic":
            state[2] = True
    out = []
    for name, (box, reads, writes, anchor_only) in acc_state.items():
        lo, hi = byte_range(box, tensors[name])
        out.append(Footprint(name, box, lo, hi, reads, writes, anchor_only))
    return out


def task_env(
    base: Mapping[str, int], blocks: int, nranks: int, scalar_ranges: Mapping[str, Interval]
) -> dict[str, int | Interval]:
    env: dict[str, int | Interval] = dict(base)
    env["block"] = (0, max(blocks - 1, 0))
    env["rank"] = (0, max(nranks - 1, 0))
    env["nranks"] = nranks
    env.update(scalar_ranges)
    return env


def names_bounded(graph: Graph, task: Task, access: Access, extra: tuple[Expr | None, ...] = ()) -> set[str]:
    """Every name bounding ``access`` over its task's blocks, loops and ranks can look up: its
    region, its loop bounds, its tensor's extents, the task's grid and ``extra`` (conditions,
    valid extents), and the rank count only when one of them names the rank. Two parameter
    points that agree on these names bound the access alike."""
    exprs = [task.grid, *graph.tensors[access.tensor].shape]
    exprs += [e for r in access.region for e in (r.start, r.stop)]
    exprs += [e for lp in access.loops for e in (lp.start, lp.stop, lp.step)]
    exprs += [e for e in extra if e is not None]
    names = {s.name for e in exprs for s in free_symbols(e)}
    if names & {"rank", "nranks"}:  # bound as an interval from the rank count
        names |= {s.name for s in free_symbols(graph.ranks)}
    return names
