"""The access recorder of a task body: each read, write, atomic and anchor of a tensor region,
in program order, with the enclosing loops and conditions (``kernel_body.BodyBuilder``), like
the DSL front end does; and the body's signals, barriers and the tensors it signals through or
reads remotely.

Views made in orchestration (slices of a tensor passed to a scope or a kernel) are translated
back onto their root tensor here, so every access names a root tensor. Which region an
expression reads or writes is decided where it is evaluated (``memory``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace

from lowering import body as ir_body
from lowering.ir import Access, BarrierOp, SignalOp
from lowering.pypto_reader.kernel_body import BodyBuilder
from lowering.pypto_reader.tensors import TensorTable
from lowering.pypto_reader.values import TensorVal, TileVal
from lowering.source import Span
from lowering.symbolic import DYNAMIC, Const, Expr, Sym, binop, difference


class AccessRecorder:
    """The accesses, signals and barriers of one task body, over the program's tensors."""

    def __init__(
        self, tensors: TensorTable, body: BodyBuilder, span: Callable[[ast.AST | None], Span]
    ) -> None:
        self.tensors = tensors
        self.body = body
        self.span = span  # the evaluator's: it follows the file of a spliced helper
        self.accesses: list[Access] = []
        self.signals: list[SignalOp] = []
        self.barriers: list[BarrierOp] = []
        self.signal_tensors: set[str] = set()
        self.window_tensors: set[str] = set()
        self.anchor_next = False  # the pl.read being read is a statement of its own: an anchor
        self.read_lets: dict[str, int] = {}  # local bound to a pl.read -> index of its access
        self.last_read: int | None = None  # access index of the last pl.read in this statement

    # ---------------------------------------------------------------- tensors and regions
    def tensor_shape_exprs(self, t: TensorVal) -> tuple[Expr, ...] | None:
        if t.shape is not None:
            return t.shape
        info = self.tensors.get(t.root)
        return info.shape if info is not None else None

    def dtype(self, t: TensorVal) -> str:
        info = self.tensors.get(t.root)
        return info.dtype if info is not None else "f32"

    def region_at(self, t: TensorVal, offsets: tuple[Expr, ...] | None, extent) -> tuple[ir_body.Range, ...]:
        """The region at ``offsets`` of extent ``extent`` (a shape, a tile type, or None: to the end)."""
        shape = self.tensor_shape_exprs(t)
        rank = len(shape) if shape is not None else len(offsets or ()) or 2
        offs = list(offsets or ())
        offs += [Const(0)] * (rank - len(offs))
        if isinstance(extent, ir_body.TileType):
            ext = list(extent.shape)
            if len(ext) > rank:  # a 2-D tile written into a 1-D view: leading dims of 1
                ext = ext[len(ext) - rank :]
            ext = [Const(1)] * (rank - len(ext)) + ext
        elif extent is not None:
            ext = list(extent)
            ext = [Const(1)] * (rank - len(ext)) + ext
        else:
            ext = [None] * rank
        out = []
        for i in range(rank):
            start = offs[i]
            if ext[i] is not None:
                stop = binop("+", start, ext[i])
            elif shape is not None:
                stop = shape[i]
            else:
                stop = Sym("?", DYNAMIC)
            out.append(ir_body.Range(start, stop, Const(1)))
        return tuple(out)

    def root_region(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> tuple[ir_body.Range, ...]:
        if t.offsets is None:
            return region
        out, it = [], iter(region)
        for dim, off in enumerate(t.offsets):
            r = None if dim in t.dropped else next(it, None)
            if r is None:
                out.append(point(off))
                continue
            out.append(ir_body.Range(binop("+", off, r.start), binop("+", off, r.stop), r.step, r.point))
        return tuple(out)

    def region_type(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> ir_body.Type:
        return _region_type(self.dtype(t), region)

    def load_value(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> TileVal:
        return TileVal(ir_body.LoadV(t.root, self.root_region(t, region), self.region_type(t, region)))

    # ---------------------------------------------------------------- recording
    def record(
        self,
        t: TensorVal,
        region: tuple[ir_body.Range, ...],
        mode: str,
        node: ast.AST | None,
        peer: Expr | None = None,
        opaque: bool = False,
    ) -> int:
        root = self.root_region(t, region)
        body = self.body
        self.accesses.append(
            Access(
                t.root, mode, root, self.dtype(t), body.loop_tuple(), body.cond_tuple(), self.span(node),
                body.next_order(), peer, opaque=opaque,
            )
        )  # fmt: skip
        return len(self.accesses) - 1

    def finish_anchors(self, used: set[str]) -> None:
        """``_ = pl.read(t, [0, 0])`` (a ``_``-name never used) orders the task and carries no data."""
        for name, index in self.read_lets.items():
            if name.startswith("_") and name not in used and index < len(self.accesses):
                self.accesses[index] = replace(self.accesses[index], mode="anchor")


def local_load(name: str, t: ir_body.TileType, region: tuple[ir_body.Range, ...]) -> TileVal:
    """``region`` of the tile held in the local ``name`` (of type ``t``)."""
    return TileVal(ir_body.LoadV(name, region, _region_type(t.dtype, region), local=True))


def point(index: Expr) -> ir_body.Range:
    """The one-element range at ``index`` (the axis stays, as a point)."""
    return ir_body.Range(index, binop("+", index, Const(1)), Const(1), point=True)


def _region_type(dtype: str, region: tuple[ir_body.Range, ...]) -> ir_body.Type:
    """A scalar for a region of points, else a tile of the region's extents."""
    if region and all(r.point for r in region):
        return ir_body.ScalarType(dtype)
    ext = []
    for r in region:
        if r.point:
            ext.append(Const(1))
        else:
            e = difference(r.stop, r.start)
            ext.append(e if r.step == Const(1) else binop("cdiv", e, r.step))
    return ir_body.TileType(dtype, tuple(ext))
