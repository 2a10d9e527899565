"""Sort chains and valid extents: ``pl.sort32``, ``pl.mrgsort(block_len=)``, top-k readouts,
``pl.set_validshape``, ``pl.fillpad`` and ``pl.slice(..., valid_shape=)``.

These become the DSL's ``sort32`` / ``mrgsort(s, block_len)`` / ``topk_pairs(s, k)`` /
``valid(x, [rows,] cols)`` / ``fillpad(x, cols, pad)`` / ``mask_tail(x, n, width)`` /
``iota(n)``, with the block lengths and extents kept symbolic (``pl.min(TOPK_CAP, visible)``
stays a ``min``), so the sort rule (S301) sees the chain and the bound of finite candidates
exactly as in a DSL layer, at every admissible parameter value.

Format 2, ``pl.mrgsort(a, b[, c[, d]])``, merges 2 to 4 separately sorted operands (slices of
whole runs) into one sorted list (``mrgsort_merge``). A readout is the PyPTO idiom
``pairs = s[:, 0 : 2 * K]`` on a sorted row (docs/runtime-semantics.md §11.3): it becomes
``topk_pairs(s, K)``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.pypto_reader.ops import OpTable, dtype_of, first_operand, negative_float, operands, tile_type
from lowering.pypto_reader.values import PlRef, TileVal, Val
from lowering.symbolic import Bin, Const, Expr, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.kernel import KernelReader

#: The sort, merge and top-k ops of this module.
SORT_OPS = OpTable()
op = SORT_OPS.op

SORTED_OPS = frozenset({"sort32", "mrgsort"})


@op("sort32", params=("src", "idx"))
def _sort32(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    pair = operands(k, b, ("src", "idx"))
    if pair is None:
        return k.opaque_op(name, node)
    src, idx = pair
    t = tile_type(src)
    k.body.unit("vector")
    rtype = ir_body.TileType("f32", (t.shape[0], binop("*", Const(2), t.shape[-1]))) if t else src.type
    return TileVal(ir_body.CallV("sort32", (src, idx), (), rtype))


@op("mrgsort", params=("src0", "src1", "src2", "src3", "tmp"))
def _mrgsort(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "src0" not in b:
        return k.opaque_op(name, node)
    src = k.value(k.eval(b["src0"]))
    k.body.unit("vector")
    if "block_len" in b and "src1" not in b:
        bl = k.int_expr(k.eval(b["block_len"]))
        if bl is None:
            k.notes.not_modelled(
                k.span(b["block_len"]),
                "an mrgsort block_len the reader cannot evaluate",
                "the sort chain of this task is not checked (S301 may miss a short run)",
            )
            return TileVal(ir_body.CallV("mrgsort", (src, ir_body.IntV(Const(0))), (), src.type))
        return TileVal(ir_body.CallV("mrgsort", (src, ir_body.IntV(bl)), (), src.type))
    others = [k.value(k.eval(b[n])) for n in ("src1", "src2", "src3") if n in b]
    tt = [tile_type(v) for v in (src, *others)]
    rtype = src.type
    if all(t is not None for t in tt):
        width: Expr = tt[0].shape[-1]  # type: ignore[union-attr]
        for t in tt[1:]:
            width = binop("+", width, t.shape[-1])  # type: ignore[union-attr]
        rtype = ir_body.TileType(tt[0].dtype, (tt[0].shape[0], width))  # type: ignore[union-attr]
    return TileVal(ir_body.CallV("mrgsort_merge", (src, *others), (), rtype))


@op("arange", "ci", params=("start", "shape", "dtype", "descending"))
def _arange(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    shape = k.int_seq(b.get("shape"))
    start = k.int_expr(k.eval(b["start"])) if "start" in b else Const(0)
    if shape is None or start is None:
        return k.opaque_op(name, node)
    dtype = k.dtype_named(b.get("dtype"), "i32")
    descending = "descending" in b and k.truth(k.eval(b["descending"])) is True
    rtype = ir_body.TileType(dtype, shape)
    k.body.unit("vector")
    if start == Const(0) and not descending and len(shape) == 2 and shape[0] == Const(1):
        return TileVal(ir_body.CallV("iota", (ir_body.IntV(shape[1]),), (), rtype))
    lst = ir_body.ListV(shape, ir_body.ListType(len(shape)))
    return TileVal(ir_body.CallV("arange", (ir_body.IntV(start), lst), (), rtype))


def valid_call(x: ir_body.Value, rows: Expr | None, cols: Expr) -> ir_body.CallV:
    """``valid(x, cols)``, or ``valid(x, rows, cols)`` when ``rows`` is not the full row extent."""
    t = tile_type(x)
    full_rows = t is not None and len(t.shape) >= 2 and rows is not None and rows == t.shape[-2]
    if rows is None or full_rows:
        return ir_body.CallV("valid", (x, ir_body.IntV(cols)), (), x.type)
    return ir_body.CallV("valid", (x, ir_body.IntV(rows), ir_body.IntV(cols)), (), x.type)


@op("set_validshape", params=("input", "valid_rows", "valid_cols"))
def _set_validshape(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "input" not in b or "valid_cols" not in b:
        return k.opaque_op(name, node)
    x = k.value(k.eval(b["input"]))
    rows = k.int_expr(k.eval(b["valid_rows"])) if "valid_rows" in b else None
    cols = k.int_expr(k.eval(b["valid_cols"]))
    if cols is None:
        k.notes.not_modelled(
            k.span(b["valid_cols"]),
            "a valid extent the reader cannot evaluate",
            "the bound of valid columns here is unknown to the sort and capacity rules",
        )
        return TileVal(x)
    return TileVal(valid_call(x, rows, cols))


def _pad_value(k: KernelReader, node: ast.expr | None) -> ir_body.Value | None:
    """The pad value of ``pad_value=pl.PadValue.min|max|zero|null`` (-inf, inf, 0, 0) or of a
    number (``pad_value=-1``, ``-3.4e38``: PyPTO takes an int or a float); None for one the
    reader does not understand."""
    if node is None:
        return ir_body.FloatV(0.0)
    sign, literal = 1, node
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, literal = -1, node.operand
    if isinstance(literal, ast.Constant) and type(literal.value) in (int, float):
        value = literal.value
        if type(value) is int:
            return ir_body.IntV(Const(sign * value), ir_body.ScalarType("i32"))
        return negative_float(value) if sign < 0 else ir_body.FloatV(value)
    v = k.eval(node)
    which = v.path.rsplit(".", 1)[-1] if isinstance(v, PlRef) else None
    if which == "min":
        return negative_float(float("inf"))
    if which == "max":
        return ir_body.FloatV(float("inf"))
    if which in ("zero", "null"):
        return ir_body.FloatV(0.0)
    return None


def _unvalid(x: ir_body.Value) -> tuple[ir_body.Value, Expr | None]:
    """``valid(y, cols)`` -> (y, cols); anything else -> (x, None)."""
    if isinstance(x, ir_body.CallV) and x.op == "valid":
        ints = [a.expr for a in x.args[1:] if isinstance(a, ir_body.IntV)]
        if ints:
            return x.args[0], ints[-1]
    return x, None


@op("fillpad", "fillpad_inplace", params=("value", "pad_value"))
def _fillpad(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    operand = first_operand(b, node, "value", "tile")
    if operand is None:
        return k.opaque_op(name, node)
    x = k.value(k.eval(operand))
    pad = _pad_value(k, b.get("pad_value"))
    inner, cols = _unvalid(x)
    t = tile_type(x)
    if cols is None:
        cols = t.shape[-1] if t is not None else None
    k.body.unit("vector")
    if pad is None or cols is None:
        return TileVal(ir_body.CallV("fillpad", (x,), (), x.type))
    return TileVal(ir_body.CallV("fillpad", (inner, ir_body.IntV(cols), pad), (), x.type))


@op("fillpad_expand", params=("value", "shape", "pad_value"))
def _fillpad_expand(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    operand = first_operand(b, node, "value", "tile")
    if operand is None or "shape" not in b:
        return k.opaque_op(name, node)
    x = k.value(k.eval(operand))
    shape = k.int_seq(b["shape"])
    pad = _pad_value(k, b.get("pad_value"))
    inner, cols = _unvalid(x)
    k.body.unit("vector")
    if shape is None:
        return k.opaque_op(name, node)
    rtype = ir_body.TileType(dtype_of(x), shape)
    if cols is not None and isinstance(pad, ir_body.CallV) and len(shape) == 2:
        return TileVal(
            ir_body.CallV("mask_tail", (inner, ir_body.IntV(cols), ir_body.IntV(shape[1])), (), rtype)
        )
    return TileVal(ir_body.CallV("fillpad_expand", (x,), (), rtype))


def readout(k: KernelReader, base: TileVal, node: ast.Subscript) -> Val | None:
    """``s[:, 0 : 2 * K]`` on a sorted row -> ``topk_pairs(s, K)`` (None if not that form)."""
    if not (isinstance(base.value, ir_body.LocalV) and base.value.name in k.names.sorted_locals):
        return None
    sl = node.slice
    if not (isinstance(sl, ast.Tuple) and len(sl.elts) == 2):
        return None
    rows, cols = sl.elts
    if not (isinstance(rows, ast.Slice) and rows.lower is None and rows.upper is None and rows.step is None):
        return None
    if not (isinstance(cols, ast.Slice) and cols.step is None and cols.upper is not None):
        return None
    lower = k.int_expr(k.eval(cols.lower)) if cols.lower is not None else Const(0)
    width = k.int_expr(k.eval(cols.upper))
    if lower != Const(0) or width is None:
        return None
    if isinstance(width, Bin) and width.op == "*" and width.a == Const(2):
        count = width.b
    elif isinstance(width, Const) and width.value % 2 == 0:
        count = Const(width.value // 2)
    else:
        count = binop("//", width, Const(2))
    t = tile_type(base.value)
    rtype = ir_body.TileType(dtype_of(base.value), (t.shape[0] if t else Const(1), width))
    k.body.unit("vector")
    k.body.ops.add("topk_pairs")
    return TileVal(ir_body.CallV("topk_pairs", (base.value, ir_body.IntV(count)), (), rtype))
