"""Tile and tensor ops inside a kernel scope -> IR values, with their types and core units.

Each PyPTO op maps to the DSL op of the same meaning (``pl.add`` -> ``a + b``,
``pl.full(..., value=0)`` -> ``zeros``, ``pl.gather(x, mask_pattern=P0101)`` -> ``even_lanes``),
so that a body read from PyPTO is the body the DSL front end would build and every rule
that looks into bodies works on it. Each handler marks the unit its op runs on (cube or
vector; shape and scalar ops none), from which the task's core kind follows as the
compiler's ExpandMixedKernel decides it: cube only -> AIC, vector or none -> AIV, both ->
MIX. Loads, stores and tensor accesses are in ``accesses``; signals and remote data in
``signals``; sort chains and valid extents in ``sorting``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.ir import FLOAT_DTYPES, INT_DTYPES
from lowering.pypto_reader.values import UNKNOWN, IntVal, PlRef, PyVal, TileVal, Val
from lowering.symbolic import Const, Expr, Sym, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.kernel import KernelReader

Handler = Callable[["KernelReader", str, ast.Call, dict[str, ast.expr]], Val]


class OpTable(dict[str, tuple[Handler, tuple[str, ...]]]):
    """Op name -> (handler, the parameter names it binds), filled by the module that defines
    the handlers through its table's :meth:`op` decorator; the kernel reader merges the
    tables it uses by name (:func:`merged`), so no table is filled by importing a module."""

    def op(self, *names: str, params: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
        def deco(fn: Handler) -> Handler:
            for n in names:
                if n in self:
                    raise ValueError(f"two handlers for the op {n!r}")
                self[n] = (fn, params)
            return fn

        return deco


def merged(*tables: OpTable) -> OpTable:
    """One table of every op of ``tables``; an op two tables define is an error."""
    out = OpTable()
    for table in tables:
        clash = out.keys() & table.keys()
        if clash:
            raise ValueError(f"ops defined twice: {sorted(clash)}")
        out.update(table)
    return out


#: The tile, scalar and memory ops of this module.
TILE_OPS = OpTable()
op = TILE_OPS.op

INTEGER_DTYPES = (*INT_DTYPES, "bool")  # a bool scalar indexes and counts like an integer
CMP_TYPES = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge"}
TILE_BINOPS = {  # PyPTO elementwise op (tile or scalar operand) -> the IR binary op
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "adds": "add",
    "subs": "sub",
    "muls": "mul",
    "divs": "div",
    "and_": "and",
    "or_": "or",
    "ands": "and",
    "ors": "or",
    "rem": "mod",
    "rems": "mod",
    "fmod": "mod",
    "fmods": "mod",
}


def short_name(path: str) -> str:
    """``pl.tile.add`` / ``pl.tensor.add`` / ``pl.add`` -> ``add``; ``pld.*`` keep their path."""
    for prefix in ("pl.tile.", "pl.tensor.", "pl."):
        if path.startswith(prefix) and path.count(".") == prefix.count("."):
            return path[len(prefix) :]
    return path


# ---------------------------------------------------------------- types


def tile_type(v: ir_body.Value | None) -> ir_body.TileType | None:
    t = getattr(v, "type", None)
    return t if isinstance(t, ir_body.TileType) else None


def dtype_of(v: ir_body.Value | None, default: str = "f32") -> str:
    t = getattr(v, "type", None)
    return getattr(t, "dtype", default) or default


def broadcast(a: ir_body.Value, b: ir_body.Value) -> ir_body.Type:
    ta, tb = tile_type(a), tile_type(b)
    if ta is not None:
        return ta
    if tb is not None:
        return tb
    da, db = dtype_of(a, "i32"), dtype_of(b, "i32")
    return ir_body.ScalarType(da if da in FLOAT_DTYPES or db not in FLOAT_DTYPES else db)


# ---------------------------------------------------------------- argument helpers


def operands(k: KernelReader, b: dict[str, ast.expr], names: tuple[str, ...]) -> list[ir_body.Value] | None:
    """The IR values of the arguments ``names``, evaluated in order; None if one is missing."""
    if any(n not in b for n in names):
        return None
    return [k.value(k.eval(b[n])) for n in names]


def first_operand(
    b: dict[str, ast.expr], node: ast.Call, name: str, alias: str | None = None
) -> ast.expr | None:
    """The argument ``name`` (or its other spelling ``alias``), else the first positional one."""
    for key in (name, alias):
        if key is not None and key in b:
            return b[key]
    return node.args[0] if node.args else None


def negative_float(magnitude: float) -> ir_body.CallV:
    """``-magnitude`` as the IR writes a negative float literal: ``neg`` of a positive one."""
    return ir_body.CallV("neg", (ir_body.FloatV(magnitude),), (), ir_body.ScalarType("f32"))


# ---------------------------------------------------------------- handlers


@op(*TILE_BINOPS, params=("lhs", "rhs"))
def _binop(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    args = operands(k, b, ("lhs", "rhs"))
    if args is None:
        return k.opaque_op(name, node)
    x, y = args
    rtype = broadcast(x, y)
    if isinstance(rtype, ir_body.TileType):
        k.body.unit("vector")
    op_name = TILE_BINOPS[name]
    if op_name == "div" and getattr(rtype, "dtype", "f32") not in FLOAT_DTYPES:
        op_name = "floordiv"  # integer tiles divide to an integer
    return TileVal(ir_body.BinV(op_name, x, y, rtype))


@op("cmp", "cmps", params=("lhs", "rhs", "cmp_type"))
def _cmp(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    args = operands(k, b, ("lhs", "rhs"))
    if args is None:
        return k.opaque_op(name, node)
    x, y = args
    code = k.static(k.eval(b["cmp_type"])) if "cmp_type" in b else 0
    rtype = broadcast(x, y)
    k.body.unit("vector")
    shape = rtype.shape if isinstance(rtype, ir_body.TileType) else None
    out = ir_body.TileType("bool", shape) if shape is not None else ir_body.ScalarType("bool")
    return TileVal(ir_body.BinV(CMP_TYPES.get(code if isinstance(code, int) else 0, "eq"), x, y, out))


@op("exp", "sqrt", "rsqrt", "recip", "log", "sin", "cos", "relu", "abs", "neg", "not_", params=("input",))
def _unary(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    operand = first_operand(b, node, "input", "tile")
    if operand is None:
        return k.opaque_op(name, node)
    x = k.value(k.eval(operand))
    k.body.unit("vector")
    return TileVal(ir_body.CallV(name, (x,), (), x.type))


@op("maximum", "minimum", "maximums", "minimums", params=("lhs", "rhs"))
def _minmax_tile(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    args = operands(k, b, ("lhs", "rhs"))
    if args is None:
        return k.opaque_op(name, node)
    x, y = args
    k.body.unit("vector")
    return TileVal(
        ir_body.CallV(name.rstrip("s") if name.endswith("ums") else name, (x, y), (), broadcast(x, y))
    )


@op(
    "row_sum", "row_max", "row_min", "row_prod", "col_sum", "col_max", "col_min", "col_prod",
    params=("input",),
)  # fmt: skip
def _reduce(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    """A row reduction keeps the rows (the last axis becomes 1), a column one the columns."""
    if "input" not in b:
        return k.opaque_op(name, node)
    x = k.value(k.eval(b["input"]))
    t = tile_type(x)
    k.body.unit("vector")
    if t is None:
        rtype: ir_body.Type = ir_body.ScalarType(dtype_of(x))
    elif name.startswith("row_"):
        rtype = ir_body.TileType(t.dtype, (*t.shape[:-1], Const(1)))
    else:
        rtype = ir_body.TileType(t.dtype, (Const(1), *t.shape[1:]))
    return TileVal(ir_body.CallV(name, (x,), (), rtype))


@op(
    "row_expand_mul", "row_expand_div", "row_expand_sub", "row_expand_add", "row_expand_max", "row_expand_min",
    "row_expand", "col_expand_mul", "col_expand_div", "col_expand_sub", "col_expand_add", "col_expand_max",
    "col_expand_min", "col_expand", "row_expand_expdif", "col_expand_expdif",
    params=("lhs", "rhs"),
)  # fmt: skip
def _expand(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    args = operands(k, b, ("lhs", "rhs"))
    if args is None:
        return k.opaque_op(name, node)
    x, y = args
    k.body.unit("vector")
    return TileVal(ir_body.CallV(name, (x, y), (), x.type))


@op("cast", params=("input", "target_type", "mode"))
def _cast(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "input" not in b or "target_type" not in b:
        return k.opaque_op(name, node)
    evaluated = k.eval(b["input"])
    index = k.integer_cast(evaluated, k.eval(b["target_type"]))
    if index is not None:
        return index  # a scalar integer into another integer type: still the same offset
    x = k.value(evaluated)
    dtype = k.dtype_named(b["target_type"], dtype_of(x))
    t = tile_type(x)
    k.body.unit("vector")
    rtype = ir_body.TileType(dtype, t.shape) if t else ir_body.ScalarType(dtype)
    return TileVal(ir_body.CallV("cast", (x, ir_body.DtypeV(dtype)), (), rtype))


def _flag(k: KernelReader, b: dict[str, ast.expr], key: str) -> bool:
    return key in b and k.truth(k.eval(b[key])) is True


@op("matmul", "matmul_acc", "matmul_bias", "gemv", "gemv_acc", "batch_matmul", "batch_matmul_acc")
def _matmul(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    acc = name.endswith("_acc")
    names = ("acc", "lhs", "rhs") if acc else ("lhs", "rhs")
    extra = ("a_trans", "b_trans") if acc else ("out_dtype", "a_trans", "b_trans")
    bound = k.arguments(node, [*names, *extra])
    if any(n not in bound for n in names):
        return k.opaque_op(name, node)
    args = [k.value(k.eval(bound[n])) for n in names]
    a_t, b_t = _flag(k, bound, "a_trans"), _flag(k, bound, "b_trans")
    true = ir_body.IntV(Const(1), ir_body.ScalarType("bool"))
    flags = tuple((f, true) for f, on in (("a_trans", a_t), ("b_trans", b_t)) if on)
    k.body.unit("cube")
    lhs, rhs = args[-2], args[-1]
    tl, tr = tile_type(lhs), tile_type(rhs)
    acc_dtype = "i32" if dtype_of(lhs) in ("i8", "u8", "i32") else "f32"
    if acc:
        rtype = args[0].type
    elif tl is not None and tr is not None and len(tl.shape) >= 2 and len(tr.shape) >= 2:
        m = tl.shape[-1] if a_t else tl.shape[-2]
        n = tr.shape[-2] if b_t else tr.shape[-1]
        rtype = ir_body.TileType(acc_dtype, (*_batch_dims(tl.shape[:-2], tr.shape[:-2]), m, n))
    else:
        unknown = Sym("?", "dynamic")
        rtype = ir_body.TileType(acc_dtype, (unknown, unknown))
    return TileVal(ir_body.CallV(name, tuple(args), flags, rtype))


def _batch_dims(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """The leading (batch) dimensions of a matmul of N-D tiles, broadcast as numpy does: a
    ``[1, N, K]`` weight slice that keeps its group axis gives a ``[1, M, N]`` result."""
    if len(a) < len(b):
        a, b = b, a
    out = list(a)
    for i, d in enumerate(b, start=len(a) - len(b)):
        if out[i] == Const(1):
            out[i] = d
    return tuple(out)


@op("full", "create_tile", "create", "expands", params=("shape", "dtype", "value"))
def _full(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if name == "expands":
        b = k.arguments(node, ["target", "scalar"])
        if "target" not in b:
            return k.opaque_op(name, node)
        target = k.value(k.eval(b["target"]))
        t = tile_type(target)
        if t is None:
            return k.opaque_op(name, node)
        fill = k.value(k.eval(b["scalar"])) if "scalar" in b else ir_body.FloatV(0.0)
        return TileVal(
            ir_body.CallV(
                "full",
                (ir_body.DtypeV(t.dtype), ir_body.ListV(t.shape, ir_body.ListType(len(t.shape))), fill),
                (),
                t,
            )
        )
    shape = k.int_seq(b.get("shape"))
    dtype = k.dtype_named(b.get("dtype"), "f32")
    if shape is None:
        return k.opaque_op(name, node)
    rtype = ir_body.TileType(dtype, shape)
    lst = ir_body.ListV(shape, ir_body.ListType(len(shape)))
    if name in ("create_tile", "create"):
        return TileVal(ir_body.CallV("zeros", (ir_body.DtypeV(dtype), lst), (), rtype))
    fill = k.eval(b["value"]) if "value" in b else PyVal(0.0)
    s = k.static(fill)
    if isinstance(s, int | float) and not isinstance(s, bool) and s == 0:
        return TileVal(ir_body.CallV("zeros", (ir_body.DtypeV(dtype), lst), (), rtype))
    return TileVal(ir_body.CallV("full", (ir_body.DtypeV(dtype), lst, k.value(fill)), (), rtype))


@op("sel", "sels", params=("mask", "lhs", "rhs", "tmp"))
def _select(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if name == "sels":
        b = k.arguments(node, ["mask", "lhs", "tmp", "rhs"])
    args = operands(k, b, ("mask", "lhs", "rhs"))
    if args is None:
        return k.opaque_op(name, node)
    m, x, y = args
    k.body.unit("vector")
    return TileVal(ir_body.CallV("select", (m, x, y), (), broadcast(x, y)))


@op("gather", params=("input", "dim", "index", "mask_pattern", "output_dtype"))
def _gather(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "input" not in b:
        return k.opaque_op(name, node)
    x = k.value(k.eval(b["input"]))
    t = tile_type(x)
    k.body.unit("vector")
    if "mask_pattern" in b:
        pattern = k.eval(b["mask_pattern"])
        which = pattern.path.rsplit(".", 1)[-1] if isinstance(pattern, PlRef) else ""
        lanes = {"P0101": "even_lanes", "P1010": "odd_lanes"}.get(which)
        if lanes is None or t is None:
            return k.opaque_op(name, node)
        dtype = k.dtype_named(b.get("output_dtype"), t.dtype)
        shape = (t.shape[0], binop("//", t.shape[1], Const(2)))
        return TileVal(ir_body.CallV(lanes, (x,), (), ir_body.TileType(dtype, shape)))
    if "index" in b:
        idx = k.value(k.eval(b["index"]))
        ti = tile_type(idx)
        rtype = (
            ir_body.TileType(t.dtype if t else "f32", ti.shape) if ti else (t or ir_body.ScalarType("f32"))
        )
        return TileVal(ir_body.CallV("gather", (x, idx), (), rtype))
    return k.opaque_op(name, node, "the compare form of gather (kvalue=) is not modelled")


@op("concat", params=("src0", "src1"))
def _concat(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    args = operands(k, b, ("src0", "src1"))
    if args is None:
        return k.opaque_op(name, node)
    x, y = args
    tx, ty = tile_type(x), tile_type(y)
    k.body.unit("vector")
    rtype = (
        ir_body.TileType(tx.dtype, (*tx.shape[:-1], binop("+", tx.shape[-1], ty.shape[-1])))
        if tx and ty
        else x.type
    )
    return TileVal(ir_body.CallV("concat", (x, y), (), rtype))


@op("reshape", params=("input", "shape"))
def _reshape(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "input" not in b:
        return k.opaque_op(name, node)
    src = k.eval(b["input"])
    if not isinstance(src, TileVal):
        return k.tensor_op(name, node)
    shape = k.int_seq(b.get("shape"))
    rtype = ir_body.TileType(dtype_of(src.value), shape) if shape else src.type
    return TileVal(ir_body.CallV("reshape", (src.value,), (), rtype))


@op("transpose", "transpose_view", params=("input",))
def _transpose(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    operand = first_operand(b, node, "input")
    if operand is None:
        return k.opaque_op(name, node)
    x = k.value(k.eval(operand))
    t = tile_type(x)
    k.body.unit("vector")
    rtype = ir_body.TileType(t.dtype, tuple(reversed(t.shape))) if t and len(t.shape) == 2 else x.type
    return TileVal(ir_body.CallV("transpose", (x,), (), rtype))


@op("min", "max", params=("lhs", "rhs"))
def _scalar_minmax(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "lhs" not in b or "rhs" not in b:
        return UNKNOWN
    a, c = k.eval(b["lhs"]), k.eval(b["rhs"])
    out = k.minmax(name, [a, c])
    if out is not UNKNOWN:
        return out
    x, y = k.value(a), k.value(c)
    return TileVal(ir_body.CallV(name, (x, y), (), broadcast(x, y)))


@op("get_block_idx")
def _block_idx(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return IntVal(Sym("block", "block"))


@op("get_block_num")
def _block_num(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return IntVal(k.grid)


@op("get_subblock_idx")
def _lane(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return IntVal(Sym("subblock_idx", "dynamic"))


@op("dim", params=("tensor", "axis"))
def _dim(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    if "tensor" not in b or "axis" not in b:
        return UNKNOWN
    t = k.tensor_of(b["tensor"])
    axis = k.static(k.eval(b["axis"]))
    if t is None or not isinstance(axis, int):
        return UNKNOWN
    shape = k.access.tensor_shape_exprs(t)
    if shape is None or not -len(shape) <= axis < len(shape):
        return UNKNOWN
    return IntVal(shape[axis])


@op("aiv_shard", "aic_gather", params=("x",))
def _identity(k: KernelReader, name: str, node: ast.Call, b: dict[str, ast.expr]) -> Val:
    return k.eval(b["x"]) if "x" in b else UNKNOWN


IGNORED = frozenset(
    {
        "pl.func_attr", "pl.static_assert", "pl.static_print", "pl.dump_tag", "pl.tensor.dump_tag",
        "pl.system.fence", "pl.system.cacheinvalid", "pl.system.bar_v", "pl.system.bar_m", "pl.system.bar_all",
        "pl.system.sync_src", "pl.system.sync_dst", "pl.system.sync_set", "pl.system.sync_wait",
        "pl.system.set_ffts", "pl.prefetch.async_prefetch", "pl.prefetch.make_context", "pl.prefetch.session",
        "pl.prefetch.wait", "pld.system.get_comm_ctx", "pld.get_comm_ctx",
    }
)  # fmt: skip
