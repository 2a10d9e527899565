"""The memory ops and tensor subscripts of a task body -> the region each reads or writes.

A subscript of a tensor (numpy rules: a scalar index keeps the axis as a point, missing
trailing indices mean ``:``), ``pl.slice``/``pl.load`` (``valid_shape=`` gives a ``valid``
extent) and ``pl.read`` are reads of a region; ``pl.assemble``/``pl.store``/``pl.write`` and
``t[a:b, :] = v`` are writes whose region is the offsets plus the stored tile's shape (or
the given ``shapes``), atomic with ``atomic=pl.AtomicType.Add``; ``pl.gather_row`` reads one
row of a GM tensor. The kernel evaluator (``kernel.KernelReader``) evaluates the operands and
the access recorder (``accesses``) records the result.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.accesses import local_load, point
from lowering.pypto_reader.ops import dtype_of, tile_type
from lowering.pypto_reader.values import UNKNOWN, PlRef, TensorVal, TileVal, Val
from lowering.symbolic import DYNAMIC, Const, Expr, Sym, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.kernel import KernelReader


def region_sub(k: KernelReader, t: TensorVal, node: ast.Subscript) -> tuple[ir_body.Range, ...] | None:
    """The region of ``t[...]`` (numpy rules: missing trailing indices mean ``:``)."""
    shape = k.access.tensor_shape_exprs(t)
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
            start = k.int_expr(k.eval(e.lower)) if e.lower is not None else Const(0)
            stop = k.int_expr(k.eval(e.upper)) if e.upper is not None else dim
            step = k.int_expr(k.eval(e.step)) if e.step is not None else Const(1)
            if start is None or stop is None or step is None:
                return None
            out.append(ir_body.Range(start, stop, step))
        else:
            idx = k.int_expr(k.eval(e))
            if idx is None:
                return None
            out.append(ir_body.Range(idx, binop("+", idx, Const(1)), Const(1), point=True))
    return tuple(out)


def memory_op(k: KernelReader, key: str, node: ast.Call) -> Val:
    if key == "read":
        b = k.arguments(node, ["src", "offset"])
        src = b.get("src") or b.get("tensor") or b.get("tile")
        off = b.get("offset") or b.get("indices")
        return scalar_read(k, src, off, node)
    if key == "write":
        b = k.arguments(node, ["dst", "offset", "value"])
        t = k.tensor_of(b["dst"]) if "dst" in b else None
        idx = k.int_list(b.get("offset"))
        if t is None or idx is None or "value" not in b:
            return k.opaque_op("write", node, "a pl.write the reader cannot evaluate")
        region = tuple(point(i) for i in idx)
        value = k.value(k.eval(b["value"]))
        k.access.record(t, region, "write", node)
        k.body.emit(ir_body.StoreS(t.root, k.access.root_region(t, region), value, "write", k.span(node)))
        return t
    if key in ("load", "slice"):
        names = (
            ["tensor", "offsets", "shapes", "valid_shape"]
            if key == "load"
            else ["input", "shape", "offset", "valid_shape"]
        )
        b = k.arguments(node, names)
        src_node = b.get(names[0])
        if src_node is None:
            return k.opaque_op(key, node)
        src = k.eval(src_node)
        offs = k.int_list(b.get("offsets" if key == "load" else "offset"))
        shape = k.int_list(b.get("shapes" if key == "load" else "shape"))
        if isinstance(src, TileVal) and isinstance(src.value, ir_body.LocalV):
            t = tile_type(src.value)
            view = TensorVal(src.value.name, None, t.shape if t else None)
            region = k.access.region_at(view, offs, shape)
            loaded = local_load(src.value.name, t, region) if t else src
        elif isinstance(src, TensorVal):
            region = k.access.region_at(src, offs, shape)
            valid = k.int_list(b["valid_shape"]) if "valid_shape" in b else None
            moved = shape is not None and valid is not None and len(valid) == len(shape)
            # the DMA moves the valid part only: the rest of the tile is not read from GM
            k.access.record(src, k.access.region_at(src, offs, valid) if moved else region, "read", node)
            loaded = k.access.load_value(src, region)
        else:
            return k.opaque_op(key, node)
        if "valid_shape" in b:
            valid = k.int_list(b["valid_shape"])
            if valid:
                rows = valid[-2] if len(valid) >= 2 else None
                return TileVal(_sorting.valid_call(loaded.value, rows, valid[-1]))
        return loaded
    # assemble / store
    if key == "assemble":
        b = k.arguments(node, ["target", "source", "offset"])
        target, source, off = b.get("target"), b.get("source"), b.get("offset")
    else:
        b = k.arguments(node, ["tile", "offsets", "output_tensor", "shapes"])
        target, source, off = b.get("output_tensor"), b.get("tile"), b.get("offsets")
    t = k.tensor_of(target) if target is not None else None
    if t is None or source is None:
        return k.opaque_op(key, node, f"a pl.{key} whose target the reader cannot resolve")
    value = k.value(k.eval(source))
    offs = k.int_list(off) if off is not None else None
    unknown_offsets = off is not None and offs is None
    if unknown_offsets:
        k.notes.not_modelled(
            k.span(off), f"the offsets of this pl.{key}", "the whole target is taken as written"
        )
    extent = k.int_list(b.get("shapes")) if key == "store" and "shapes" in b else tile_type(value)
    region = k.access.region_at(t, offs, extent)
    held = k.names.valid_locals.get(value.name) if isinstance(value, ir_body.LocalV) else None
    valid = valid_extent(held if held is not None else value)
    atomic = False
    if "atomic" in b:
        a = k.eval(b["atomic"])
        atomic = isinstance(a, PlRef) and a.path.endswith(".Add")
    mode = "atomic" if atomic else "write"
    if unknown_offsets:  # every block may write anywhere in it: edges see all of it, R505 judges none
        k.access.record(t, k.access.region_at(t, None, None), mode, node, opaque=True)
    else:  # a tile with a valid shape stores its valid part only
        k.access.record(t, region if valid is None else k.access.region_at(t, offs, valid), mode, node)
    k.body.emit(ir_body.StoreS(t.root, k.access.root_region(t, region), value, mode, k.span(node)))
    return t


def gather_row(k: KernelReader, node: ast.Call) -> Val:
    """``pl.gather_row(dst, src, dst_offset, src_offset, shapes)``: a row of a GM tensor into a tile."""
    b = k.arguments(node, ["dst", "src", "dst_offset", "src_offset", "shapes"])
    dst = k.eval(b["dst"]) if "dst" in b else None
    src = k.tensor_of(b["src"]) if "src" in b else None
    if src is None or not isinstance(dst, TileVal):
        return k.opaque_op("gather_row", node)
    region = k.access.region_at(src, k.int_list(b.get("src_offset")), k.int_list(b.get("shapes")))
    k.access.record(src, region, "read", node)
    k.body.unit("vector")
    row = k.access.load_value(src, region).value
    return TileVal(ir_body.CallV("gather_row", (dst.value, row), (), dst.type))


def scalar_read(k: KernelReader, src: ast.expr | None, off: ast.expr | None, node: ast.Call) -> Val:
    if src is None:
        return UNKNOWN
    base = k.eval(src)
    idx = k.int_list(off)
    if isinstance(base, TensorVal) and idx is not None:
        region = tuple(point(i) for i in idx)
        mode = "anchor" if k.access.anchor_next else "read"
        k.access.anchor_next = False
        k.access.last_read = k.access.record(base, region, mode, node)
        load = k.access.load_value(base, region)
        return TileVal(ir_body.CallV("read", (load.value,), (), load.type))
    if isinstance(base, TileVal) and isinstance(base.value, ir_body.LocalV) and idx is not None:
        region = tuple(point(i) for i in idx)
        load = ir_body.LoadV(base.value.name, region, ir_body.ScalarType(dtype_of(base.value)), local=True)
        return TileVal(ir_body.CallV("read", (load,), (), load.type))
    k.notes.not_modelled(k.span(node), "a pl.read the reader cannot evaluate", "it orders nothing here")
    return UNKNOWN


def valid_extent(value: ir_body.Value) -> tuple[Expr, ...] | None:
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
