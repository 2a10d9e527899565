"""Tensor accesses inside a kernel body: regions, views, loads, stores and scalar reads.

A subscript of a tensor (numpy rules: a scalar index keeps the axis as a point, missing
trailing indices mean ``:``), ``pl.slice``/``pl.load`` (``valid_shape=`` gives a ``valid``
extent) and ``pl.read`` are reads of a region; ``pl.assemble``/``pl.store``/``pl.write`` and
``t[a:b, :] = v`` are writes whose region is the offsets plus the stored tile's shape (or
the given ``shapes``), atomic with ``atomic=pl.AtomicType.Add``; ``pl.gather_row`` reads one
row of a GM tensor. Views made in orchestration (slices of a tensor passed to a scope or a
kernel) are translated back onto their root tensor. Each access is recorded with the
enclosing loops and conditions, in program order, like the DSL front end does.
"""

from __future__ import annotations

import ast

from lowering import body as ir_body
from lowering.ir import Access
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.ops import dtype_of, tile_type
from lowering.pypto_reader.values import (
    UNKNOWN,
    IntVal,
    PlRef,
    SeqVal,
    TensorVal,
    TileVal,
    Val,
)
from lowering.symbolic import DYNAMIC, Const, Expr, Sym, binop, difference


class AccessMixin:
    """The access half of ``KernelReader`` (it provides eval, notes, loops and conditions)."""

    # ---------------------------------------------------------------- tensors and regions
    def tensor_of(self, node: ast.expr) -> TensorVal | None:
        v = self.eval(node)
        return v if isinstance(v, TensorVal) else None

    def tensor_shape_exprs(self, t: TensorVal) -> tuple[Expr, ...] | None:
        if t.shape is not None:
            return t.shape
        info = self.tensors.get(t.root)
        return info.shape if info is not None else None

    def tensor_shape(self, t: TensorVal) -> Val:
        shape = self.tensor_shape_exprs(t)
        return SeqVal(tuple(IntVal(d) for d in shape)) if shape is not None else UNKNOWN

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

    def region_sub(self, t: TensorVal, node: ast.Subscript) -> tuple[ir_body.Range, ...] | None:
        """The region of ``t[...]`` (numpy rules: missing trailing indices mean ``:``)."""
        shape = self.tensor_shape_exprs(t)
        elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        rank = len(shape) if shape is not None else len(elts)
        if len(elts) > rank:
            return None
        out = []
        for i in range(rank):
            dim = shape[i] if shape is not None else Sym("?", DYNAMIC)
            if i >= len(elts):
                out.append(ir_body.Range(Const(0), dim, Const(1)))
                continue
            e = elts[i]
            if isinstance(e, ast.Slice):
                start = self.int_expr(self.eval(e.lower)) if e.lower is not None else Const(0)
                stop = self.int_expr(self.eval(e.upper)) if e.upper is not None else dim
                step = self.int_expr(self.eval(e.step)) if e.step is not None else Const(1)
                if start is None or stop is None or step is None:
                    return None
                out.append(ir_body.Range(start, stop, step))
            else:
                idx = self.int_expr(self.eval(e))
                if idx is None:
                    return None
                out.append(ir_body.Range(idx, binop("+", idx, Const(1)), Const(1), point=True))
        return tuple(out)

    def root_region(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> tuple[ir_body.Range, ...]:
        if t.offsets is None:
            return region
        out, it = [], iter(region)
        for dim, off in enumerate(t.offsets):
            r = None if dim in t.dropped else next(it, None)
            if r is None:
                out.append(_point(off))
                continue
            out.append(ir_body.Range(binop("+", off, r.start), binop("+", off, r.stop), r.step, r.point))
        return tuple(out)

    def region_type(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> ir_body.Type:
        return _region_type(self.dtype(t), region)

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
        self.accesses.append(
            Access(
                t.root, mode, root, self.dtype(t), self.loop_tuple(), self.cond_tuple(), self.span(node),
                self.next_order(), peer, opaque=opaque,
            )
        )  # fmt: skip
        return len(self.accesses) - 1

    def load_value(self, t: TensorVal, region: tuple[ir_body.Range, ...]) -> TileVal:
        return TileVal(ir_body.LoadV(t.root, self.root_region(t, region), self.region_type(t, region)))

    # ---------------------------------------------------------------- memory ops
    def memory_op(self, key: str, node: ast.Call) -> Val:
        if key == "read":
            b = self.arguments(node, ["src", "offset"])
            src = b.get("src") or b.get("tensor") or b.get("tile")
            off = b.get("offset") or b.get("indices")
            return self.scalar_read(src, off, node)
        if key == "write":
            b = self.arguments(node, ["dst", "offset", "value"])
            t = self.tensor_of(b["dst"]) if "dst" in b else None
            idx = self.int_list(b.get("offset"))
            if t is None or idx is None or "value" not in b:
                return self.opaque_op("write", node, "a pl.write the reader cannot evaluate")
            region = tuple(_point(i) for i in idx)
            value = self.value(self.eval(b["value"]))
            self.record(t, region, "write", node)
            self.emit(ir_body.StoreS(t.root, self.root_region(t, region), value, "write", self.span(node)))
            return t
        if key in ("load", "slice"):
            names = (
                ["tensor", "offsets", "shapes", "valid_shape"]
                if key == "load"
                else ["input", "shape", "offset", "valid_shape"]
            )
            b = self.arguments(node, names)
            src_node = b.get(names[0])
            if src_node is None:
                return self.opaque_op(key, node)
            src = self.eval(src_node)
            offs = self.int_list(b.get("offsets" if key == "load" else "offset"))
            shape = self.int_list(b.get("shapes" if key == "load" else "shape"))
            if isinstance(src, TileVal) and isinstance(src.value, ir_body.LocalV):
                t = tile_type(src.value)
                view = TensorVal(src.value.name, None, t.shape if t else None)
                region = self.region_at(view, offs, shape)
                loaded = local_load(src.value.name, t, region) if t else src
            elif isinstance(src, TensorVal):
                region = self.region_at(src, offs, shape)
                valid = self.int_list(b["valid_shape"]) if "valid_shape" in b else None
                moved = shape is not None and valid is not None and len(valid) == len(shape)
                # the DMA moves the valid part only: the rest of the tile is not read from GM
                self.record(src, self.region_at(src, offs, valid) if moved else region, "read", node)
                loaded = self.load_value(src, region)
            else:
                return self.opaque_op(key, node)
            if "valid_shape" in b:
                valid = self.int_list(b["valid_shape"])
                if valid:
                    rows = valid[-2] if len(valid) >= 2 else None
                    return TileVal(_sorting.valid_call(loaded.value, rows, valid[-1]))
            return loaded
        # assemble / store
        if key == "assemble":
            b = self.arguments(node, ["target", "source", "offset"])
            target, source, off = b.get("target"), b.get("source"), b.get("offset")
        else:
            b = self.arguments(node, ["tile", "offsets", "output_tensor", "shapes"])
            target, source, off = b.get("output_tensor"), b.get("tile"), b.get("offsets")
        t = self.tensor_of(target) if target is not None else None
        if t is None or source is None:
            return self.opaque_op(key, node, f"a pl.{key} whose target the reader cannot resolve")
        value = self.value(self.eval(source))
        offs = self.int_list(off) if off is not None else None
        unknown_offsets = off is not None and offs is None
        if unknown_offsets:
            self.notes.not_modelled(
                self.span(off), f"the offsets of this pl.{key}", "the whole target is taken as written"
            )
        extent = self.int_list(b.get("shapes")) if key == "store" and "shapes" in b else tile_type(value)
        region = self.region_at(t, offs, extent)
        held = self.valid_locals.get(value.name) if isinstance(value, ir_body.LocalV) else None
        valid = _valid_extent(held if held is not None else value)
        atomic = False
        if "atomic" in b:
            a = self.eval(b["atomic"])
            atomic = isinstance(a, PlRef) and a.path.endswith(".Add")
        mode = "atomic" if atomic else "write"
        if unknown_offsets:  # every block may write anywhere in it: edges see all of it, R505 judges none
            self.record(t, self.region_at(t, None, None), mode, node, opaque=True)
        else:  # a tile with a valid shape stores its valid part only
            self.record(t, region if valid is None else self.region_at(t, offs, valid), mode, node)
        self.emit(ir_body.StoreS(t.root, self.root_region(t, region), value, mode, self.span(node)))
        return t

    def gather_row(self, node: ast.Call) -> Val:
        """``pl.gather_row(dst, src, dst_offset, src_offset, shapes)``: a row of a GM tensor into a tile."""
        b = self.arguments(node, ["dst", "src", "dst_offset", "src_offset", "shapes"])
        dst = self.eval(b["dst"]) if "dst" in b else None
        src = self.tensor_of(b["src"]) if "src" in b else None
        if src is None or not isinstance(dst, TileVal):
            return self.opaque_op("gather_row", node)
        region = self.region_at(src, self.int_list(b.get("src_offset")), self.int_list(b.get("shapes")))
        self.record(src, region, "read", node)
        self.unit("vector")
        row = self.load_value(src, region).value
        return TileVal(ir_body.CallV("gather_row", (dst.value, row), (), dst.type))

    def scalar_read(self, src: ast.expr | None, off: ast.expr | None, node: ast.Call) -> Val:
        if src is None:
            return UNKNOWN
        base = self.eval(src)
        idx = self.int_list(off)
        if isinstance(base, TensorVal) and idx is not None:
            region = tuple(_point(i) for i in idx)
            mode = "anchor" if self.anchor_next else "read"
            self.anchor_next = False
            self.last_read = self.record(base, region, mode, node)
            load = self.load_value(base, region)
            return TileVal(ir_body.CallV("read", (load.value,), (), load.type))
        if isinstance(base, TileVal) and isinstance(base.value, ir_body.LocalV) and idx is not None:
            region = tuple(_point(i) for i in idx)
            load = ir_body.LoadV(
                base.value.name, region, ir_body.ScalarType(dtype_of(base.value)), local=True
            )
            return TileVal(ir_body.CallV("read", (load,), (), load.type))
        self.notes.not_modelled(
            self.span(node), "a pl.read the reader cannot evaluate", "it orders nothing here"
        )
        return UNKNOWN


def local_load(name: str, t: ir_body.TileType, region: tuple[ir_body.Range, ...]) -> TileVal:
    """``region`` of the tile held in the local ``name`` (of type ``t``)."""
    return TileVal(ir_body.LoadV(name, region, _region_type(t.dtype, region), local=True))


def _point(index: Expr) -> ir_body.Range:
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


def _valid_extent(value: ir_body.Value) -> tuple[Expr, ...] | None:
    """The extent a store of ``value`` writes when it carries a valid shape (``set_validshape``):
    the valid rows and columns of the tile; None when it carries none or is a ``fillpad``."""
    t = tile_type(value)
    if (
        not isinstance(value, ir_body.CallV)
        or value.op not in ir_body.VALID_OPS
        or t is None
        or len(t.shape) < 2
    ):
        return None
    rows, cols = ir_body.valid_extents(value)
    if value.op == "fillpad":
        return None  # fillpad writes the padding too: the whole tile
    return (
        *t.shape[:-2],
        rows if rows is not None else t.shape[-2],
        cols if cols is not None else t.shape[-1],
    )
