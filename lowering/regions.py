"""Regions touched by accesses: index boxes over all blocks and iterations, and byte ranges.

The runtime compares the byte ranges of task arguments (same base, intersecting
``[offset, offset + size)``), so a column band of a row-major tensor overlaps every other
column band it shares a row with. We reproduce that, not an idealised overlap test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lowering.ir import Access, Loop, Tensor
from lowering.symbolic import EvalError, Interval, bounds, evaluate

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
        return "[" + ", ".join(f"{lo}:{hi + 1}" for lo, hi in self.box) + "]"


def loop_env(loops: tuple[Loop, ...], env: Mapping[str, int | Interval]) -> dict[str, int | Interval] | None:
    """Bind each loop variable to its interval; None when some loop never runs."""
    out: dict[str, int | Interval] = dict(env)
    for loop in loops:
        lo, _ = bounds(loop.start, out)
        _, hi = bounds(loop.stop, out)
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
    for dim, rng in enumerate(access.region):
        extent = tensor.dims[dim]
        try:
            lo, _ = bounds(rng.start, scoped)
            _, hi = bounds(rng.stop, scoped)
            hi -= 1
        except EvalError:
            lo, hi = 0, (extent - 1 if extent is not None else 1 << 40)
        if extent is not None:
            lo, hi = max(lo, 0), min(hi, extent - 1)
        if hi < lo:
            return None
        box.append((lo, hi))
    return tuple(box)


def byte_range(box: Box, tensor: Tensor) -> tuple[int, int]:
    dims = tensor.dims
    if any(d is None for d in dims):
        return 0, 1 << 62
    first = last = 0
    for (lo, hi), extent in zip(box, dims, strict=True):
        first = first * extent + lo
        last = last * extent + hi
    return first * tensor.itemsize, (last + 1) * tensor.itemsize


def union(a: Box, b: Box) -> Box:
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def task_footprints(
    accesses: tuple[Access, ...], tensors: Mapping[str, Tensor], env: Mapping[str, int | Interval]
) -> list[Footprint]:
    """One footprint per tensor a task touches (signals excluded: they carry no edges)."""
    boxes: dict[str, Box] = {}
    reads: dict[str, bool] = {}
    writes: dict[str, bool] = {}
    anchor_only: dict[str, bool] = {}
    for acc in accesses:
        tensor = tensors[acc.tensor]
        if tensor.kind == "signal":
            continue
        box = access_box(acc, tensor, env)
        if box is None:
            continue
        boxes[acc.tensor] = union(boxes[acc.tensor], box) if acc.tensor in boxes else box
        is_read = acc.mode in ("read", "anchor", "atomic")
        reads[acc.tensor] = reads.get(acc.tensor, False) or is_read
        writes[acc.tensor] = writes.get(acc.tensor, False) or acc.writes
        if is_read:
            anchor_only[acc.tensor] = anchor_only.get(acc.tensor, True) and acc.mode == "anchor"
    out = []
    for name, box in boxes.items():
        lo, hi = byte_range(box, tensors[name])
        out.append(Footprint(name, box, lo, hi, reads[name], writes[name], anchor_only.get(name, False)))
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


def eval_or_none(expr, env: Mapping[str, int]) -> int | None:
    try:
        return evaluate(expr, env)
    except EvalError:
        return None
