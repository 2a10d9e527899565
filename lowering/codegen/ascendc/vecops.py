"""The vector ops of the language on UB tiles, for the AIV writer (``lowering.codegen.ascendc.aiv``).

Each op is one or a few AscendC basic-API calls in count mode, over the whole tile when
its rows are packed alike (``Tile.dense``), else row by row. The DSL's compound ops are the
same formulas the NumPy kernels compute, in the same order (``sigmoid(x)`` =
``1 / (1 + exp(-x))``, ``silu(x)`` = ``x * sigmoid(x)``), so the two targets differ only by
the device's rounding of each step. Reductions over a row are ``ReduceSum``/``ReduceMax``/
``ReduceMin`` per row (the hardware's summation tree, not NumPy's: AscendC numerics are
checked only on a device); a row broadcast (``row_expand_*``) reads the row's scalar once.
Casts that A2/A3 has no instruction for go through exact intermediate types (f32 -> i8 is
f32 -> i32 -> f32 -> f16 -> i8, each step exact after the first rounding).

The top-k chain after ``expand_topk`` maps one to one: ``iota`` is ``CreateVecIndex``,
``mask_tail``/``fillpad`` a ``CompareScalar`` against the index row and a ``Select``,
``sort32`` is ``Sort32``, each ``mrgsort`` one ``MrgSort`` of four runs (repeated over the
row), ``even_lanes``/``odd_lanes`` ``GatherMask`` with the fixed 0101/1010 patterns.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import cxx_type, float_literal
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.masks import COMPARES
from lowering.codegen.ascendc.part import WriterPart
from lowering.codegen.ascendc.tiles import Tile, padded
from lowering.ir import DTYPE_BYTES, FLOAT_DTYPES

if TYPE_CHECKING:
    pass

_ARITH_DTYPES = ("f32", "f16", "i32", "i16")  # dtypes the A2/A3 vector unit computes in
_FLOAT_ARITH = ("f32", "f16")
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max", "minimum": "Min"}
_UNARY = {
    "exp": "Exp",
    "log": "Ln",
    "sqrt": "Sqrt",
    "rsqrt": "Rsqrt",
    "recip": "Reciprocal",
    "relu": "Relu",
    "abs": "Abs",
}
_ROW_REDUCE = {"row_sum": "ReduceSum", "row_max": "ReduceMax", "row_min": "ReduceMin"}
_COL_REDUCE = {"col_sum": "Add", "col_max": "Max"}
_COL_EXPAND = {
    "col_expand_mul": "Mul",
    "col_expand_add": "Add",
    "col_expand_sub": "Sub",
    "col_expand_div": "Div",
}
_ROW_EXPAND = ("row_expand_mul", "row_expand_div", "row_expand_sub", "row_expand_add")
# (from, to) -> the one-instruction casts of dav-2201; "round" marks the lossy ones
_CASTS = {
    ("f32", "f16"): "round", ("f16", "f32"): "exact", ("f32", "bf16"): "round", ("bf16", "f32"): "exact",
    ("f32", "i32"): "round", ("i32", "f32"): "round", ("f16", "i8"): "round", ("i8", "f16"): "exact",
    ("f16", "i32"): "round", ("f16", "u8"): "round", ("u8", "f16"): "exact", ("i16", "f16"): "round",
    ("f16", "i16"): "round",
}  # fmt: skip
# multi-step casts: exact after the first step
_CAST_PATHS = {
    ("f32", "i8"): ("i32", "f32", "f16", "i8"),
    ("i8", "f32"): ("f16", "f32"),
    ("i32", "i8"): ("f32", "f16", "i8"),
    ("i8", "i32"): ("f16", "i32"),
    ("bf16", "i32"): ("f32", "i32"),
    ("i32", "bf16"): ("f32", "bf16"),
    ("bf16", "f16"): ("f32", "f16"),
    ("f16", "bf16"): ("f32", "bf16"),
    ("bf16", "i8"): ("f32", "i32", "f32", "f16", "i8"),
    ("i8", "bf16"): ("f16", "f32", "bf16"),
}


class VectorOps(WriterPart):
    """Arithmetic, unary ops, reductions, broadcasts, casts and layout ops on tiles, and the
    dispatch of a tile op to its piece; the writer computes the operands and places results."""

    # ---------------------------------------------------------------- checks
    def need_dtype(self, dtype: str, allowed: tuple[str, ...], what: str) -> None:
        if dtype not in allowed:
            raise refuse(
                "A702",
                f"{what} on {dtype} tiles: the A2/A3 vector unit computes in {', '.join(allowed)}",
                self.w.span,
                hint="cast to f32 first" if dtype in ("bf16", "i8", "u8") else None,
            )

    def scalar_arg(self, v: ir_body.Value, dtype: str) -> str:
        """The scalar operand of a vector op, as a literal or a named ``const`` read once."""
        s = self.w.scalar(v)
        if s.const is not None and dtype in FLOAT_DTYPES:
            return float_literal(float(s.const), dtype)
        if s.const is not None:
            return f"static_cast<{cxx_type(dtype)}>({int(s.const)})"
        var = self.text.fresh("s")
        self.text.emit(f"const {cxx_type(dtype)} {var} = static_cast<{cxx_type(dtype)}>({s.code});")
        return var

    # ---------------------------------------------------------------- elementwise helpers
    def vector_call(self, api: str, dst: Tile, srcs: list[Tile], extra: list[str] | None = None) -> None:
        """``api(dst, srcs..., extra..., count)`` over the tile, or per row."""
        extra = extra or []
        tiles = [dst, *srcs]
        if all(t.dense for t in tiles) and len({t.stride for t in tiles}) == 1 or dst.rows == 1:
            count = padded(dst.cols, dst.dtype) if dst.rows == 1 else dst.rows * dst.stride
            args = [t.ref() for t in tiles] + extra + [str(count)]
            self.text.emit(f"AscendC::{api}({', '.join(args)});")
            return
        self.per_row(
            dst.rows,
            lambda r: [f"AscendC::{api}({', '.join([t.row(r) for t in tiles] + extra + [str(dst.cols)])});"],
        )

    def per_row(self, rows: int, body: Callable[[str], list[str]]) -> None:
        """The lines ``body(r)`` for each row r: a C++ loop, or the lines for row 0 alone."""
        if rows == 1:
            for line in body("0"):
                self.text.emit(line)
            return
        r = self.text.fresh("r")
        self.text.emit(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
        for line in body(r):
            self.text.emit("    " + line)
        self.text.emit("}")

    # ---------------------------------------------------------------- binary
    def binary(self, v: ir_body.BinV, hint: Tile | None) -> Tile:
        a_tile = isinstance(v.a.type, ir_body.TileType)
        b_tile = isinstance(v.b.type, ir_body.TileType)
        if v.op in COMPARES:
            return self.w.masks.compare(v, hint)
        if v.op in ("and", "or"):
            return self.w.masks.logic(v, hint)
        if v.op in ("floordiv", "mod"):
            return self.w.masks.int_division(v, hint)
        if v.op not in ("add", "sub", "mul", "div"):
            raise refuse("A701", f"the tile operator {v.op!r}", self.w.span)
        rows, cols = self.w.shape(v.type)
        dtype = v.type.dtype
        self.need_dtype(dtype, _ARITH_DTYPES if v.op != "div" else _FLOAT_ARITH, f"'{v.op}'")
        if a_tile and b_tile:
            a, b = self.w.operands((v.a, v.b))
            dst = self.w.target(hint, rows, cols, dtype, [a, b], positionwise=True)
            self.vector_call(_BINARY[v.op], dst, [a, b])
            self.ub.consume(a, b, keep=dst)
            return dst
        tile_side, scalar_side = (v.a, v.b) if a_tile else (v.b, v.a)
        x = self.w.operand(tile_side)
        dst = self.w.target(hint, rows, cols, dtype, [x], positionwise=True)
        s = self.w.scalar(scalar_side)
        if v.op in ("add", "mul"):
            self.vector_call(
                "Adds" if v.op == "add" else "Muls", dst, [x], [self.scalar_arg(scalar_side, dtype)]
            )
        elif v.op == "sub" and a_tile:  # x - s == x + (-s), exactly
            if s.const is not None and dtype in FLOAT_DTYPES:
                arg = float_literal(-float(s.const), dtype)
            else:
                arg = f"static_cast<{cxx_type(dtype)}>(-({self.scalar_arg(scalar_side, dtype)}))"
            self.vector_call("Adds", dst, [x], [arg])
        elif v.op == "sub":  # s - x == (-x) + s
            self.vector_call("Muls", dst, [x], [self.minus_one(dtype)])
            self.vector_call("Adds", dst, [dst], [self.scalar_arg(scalar_side, dtype)])
        else:  # division by (or of) a scalar: a real Div, not a multiply by the reciprocal
            fill = self.ub.temp_like(dst)
            self.vector_call("Duplicate", fill, [], [self.scalar_arg(scalar_side, dtype)])
            self.vector_call("Div", dst, [x, fill] if a_tile else [fill, x])
            self.ub.consume(fill)
        self.ub.consume(x, keep=dst)
        return dst

    def minus_one(self, dtype: str) -> str:
        return float_literal(-1.0, dtype) if dtype in FLOAT_DTYPES else f"static_cast<{cxx_type(dtype)}>(-1)"

    # ---------------------------------------------------------------- calls
    def call(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        op = v.op
        if op in ("zeros", "full"):
            return self.fill(v, hint)
        if op in _UNARY or op in ("neg", "sigmoid", "silu"):
            return self.unary(v, hint)
        if op in ("maximum", "minimum"):
            return self.extremum(v, hint)
        if op in _ROW_REDUCE:
            return self.row_reduce(v)
        if op in _COL_REDUCE:
            return self.col_reduce(v)
        if op in _ROW_EXPAND:
            return self.row_expand(v, hint)
        if op in _COL_EXPAND:
            x, row = self.w.operands(v.args)
            self.need_dtype(x.dtype, _ARITH_DTYPES if op != "col_expand_div" else _FLOAT_ARITH, op)
            dst = self.w.target(hint, x.rows, x.cols, x.dtype, [x], positionwise=True)
            if row.base == dst.base:
                dst = self.ub.temp_like(x)
            self.per_row(
                x.rows,
                lambda r: [f"AscendC::{_COL_EXPAND[op]}({dst.row(r)}, {x.row(r)}, {row.ref()}, {x.cols});"],
            )
            self.ub.consume(x, row, keep=dst)
            return dst
        if op == "cast":
            return self.cast(v, hint)
        if op == "valid":  # marks the valid part only; the data is unchanged
            return self.w.value(v.args[0], hint)
        if op == "transpose":
            return self.transpose(v)
        if op in (
            "iota",
            "sort32",
            "mrgsort",
            "topk_pairs",
            "even_lanes",
            "odd_lanes",
            "mask_tail",
            "fillpad",
        ):
            return self.sort_op(v, hint)
        if op == "gather":
            return self.gather(v)
        if op == "select":
            return self.w.masks.select(v, hint)
        if op == "gather_rows":
            return self.w.strided.gather_rows(v)
        raise refuse("A701", f"{op}() has no AscendC lowering in dslc", self.w.span)

    def fill(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        dtype = v.type.dtype
        rows, cols = self.w.shape(v.type)
        dst = self.w.target(hint, rows, cols, dtype, [], positionwise=True)
        value = v.args[2] if v.op == "full" else ir_body.FloatV(0.0)
        if dtype in ("bf16", "i8", "u8"):  # no Duplicate of these: fill the bit pattern as int16
            bits = self.pattern16(value, dtype)
            wide = self.w.reinterpret(dst, "i16")
            self.vector_call("Duplicate", wide, [], [f"static_cast<int16_t>({bits})"])
            return dst
        self.vector_call("Duplicate", dst, [], [self.scalar_arg(value, dtype)])
        return dst

    def pattern16(self, value: ir_body.Value, dtype: str) -> int:
        s = self.w.scalar(value)
        if s.const is None:
            raise refuse("A702", f"a {dtype} fill needs a compile-time value", self.w.span)
        if dtype == "bf16":
            word = struct.unpack("<I", struct.pack("<f", float(s.const)))[0]
            half = (word + 0x7FFF + ((word >> 16) & 1)) >> 16  # round to nearest even
            return half - (1 << 16) if half >= 1 << 15 else half
        byte = int(s.const) & 0xFF
        word = byte | (byte << 8)
        return word - (1 << 16) if word >= 1 << 15 else word

    def unary(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        (x,) = self.w.operands(v.args)
        op = v.op
        floats = op not in ("relu", "abs", "neg")
        self.need_dtype(x.dtype, _FLOAT_ARITH if floats else _ARITH_DTYPES, f"{op}()")
        dst = self.w.target(hint, x.rows, x.cols, x.dtype, [x], positionwise=True)
        if op in _UNARY:
            self.vector_call(_UNARY[op], dst, [x])
        elif op == "neg":
            self.vector_call("Muls", dst, [x], [self.minus_one(x.dtype)])
        elif op == "sigmoid":
            self.sigmoid(dst, x)
        else:  # silu(x) = x * sigmoid(x)
            gate = self.ub.temp_like(x)
            self.sigmoid(gate, x)
            self.vector_call("Mul", dst, [x, gate])
            self.ub.consume(gate)
        self.ub.consume(x, keep=dst)
        return dst

    def sigmoid(self, dst: Tile, x: Tile) -> None:
        """dst = 1 / (1 + exp(-x)); ``dst`` may be ``x``."""
        one = self.ub.temp_like(x)
        self.vector_call("Muls", dst, [x], [self.minus_one(x.dtype)])
        self.vector_call("Exp", dst, [dst])
        self.vector_call("Adds", dst, [dst], [float_literal(1.0, x.dtype)])
        self.vector_call("Duplicate", one, [], [float_literal(1.0, x.dtype)])
        self.vector_call("Div", dst, [one, dst])
        self.ub.consume(one)

    def extremum(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        a, b = v.args
        api = _BINARY[v.op]
        rows, cols = self.w.shape(v.type)
        self.need_dtype(v.type.dtype, _ARITH_DTYPES, f"{v.op}()")
        if isinstance(a.type, ir_body.TileType) and isinstance(b.type, ir_body.TileType):
            x, y = self.w.operands((a, b))
            dst = self.w.target(hint, rows, cols, x.dtype, [x, y], positionwise=True)
            self.vector_call(api, dst, [x, y])
            self.ub.consume(x, y, keep=dst)
            return dst
        tile_side, scalar_side = (a, b) if isinstance(a.type, ir_body.TileType) else (b, a)
        x = self.w.operand(tile_side)
        dst = self.w.target(hint, rows, cols, x.dtype, [x], positionwise=True)
        self.vector_call(api + "s", dst, [x], [self.scalar_arg(scalar_side, x.dtype)])
        self.ub.consume(x, keep=dst)
        return dst

    # ---------------------------------------------------------------- reductions and broadcasts
    def row_reduce(self, v: ir_body.CallV) -> Tile:
        (x,) = self.w.operands(v.args)
        self.need_dtype(x.dtype, _FLOAT_ARITH, f"{v.op}()")
        dst = self.ub.calc_tile(x.rows, 1, x.dtype, "row reduction")
        work = self.ub.calc_tile(1, x.cols, x.dtype, "reduction work")
        calindex = ", false" if v.op != "row_sum" else ""
        api = _ROW_REDUCE[v.op]
        self.per_row(
            x.rows, lambda r: [f"AscendC::{api}({dst.row(r)}, {x.row(r)}, {work.ref()}, {x.cols}{calindex});"]
        )
        self.ub.consume(x, work)
        return dst

    def col_reduce(self, v: ir_body.CallV) -> Tile:
        (x,) = self.w.operands(v.args)
        self.need_dtype(x.dtype, _ARITH_DTYPES, f"{v.op}()")
        dst = self.ub.calc_tile(1, x.cols, x.dtype, "column reduction")
        self.w.copy(dst, x.view("0", 0, 1, x.cols))
        r = self.text.fresh("r")
        self.text.emit(f"for (int32_t {r} = 1; {r} < {x.rows}; ++{r}) {{")
        self.text.emit(f"    AscendC::{_COL_REDUCE[v.op]}({dst.ref()}, {dst.ref()}, {x.row(r)}, {x.cols});")
        self.text.emit("}")
        self.ub.consume(x)
        return dst

    def row_expand(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """x op v[r] on each row r: the row's scalar is read once, then one vector op."""
        x, col = self.w.operands(v.args)
        op = v.op.removeprefix("row_expand_")
        self.need_dtype(x.dtype, _ARITH_DTYPES if op != "div" else _FLOAT_ARITH, v.op)
        dst = self.w.target(hint, x.rows, x.cols, x.dtype, [x], positionwise=True)
        if col.base == dst.base and not col.same_place(dst):
            dst = self.ub.temp_like(x)
        row = self.ub.calc_tile(1, x.cols, x.dtype, "broadcast row") if op == "div" else None
        ctype = cxx_type(x.dtype)
        self.w.scalar_barrier()
        s = self.text.fresh("s")

        def body(r: str) -> list[str]:
            lines = [f"const {ctype} {s} = {col.base}.GetValue({col.index(r)});"]
            if op == "mul":
                lines.append(f"AscendC::Muls({dst.row(r)}, {x.row(r)}, {s}, {x.cols});")
            elif op == "add":
                lines.append(f"AscendC::Adds({dst.row(r)}, {x.row(r)}, {s}, {x.cols});")
            elif op == "sub":
                lines.append(
                    f"AscendC::Adds({dst.row(r)}, {x.row(r)}, static_cast<{ctype}>(-{s}), {x.cols});"
                )
            else:
                lines.append(f"AscendC::Duplicate({row.ref()}, {s}, {x.cols});")
                lines.append(f"AscendC::Div({dst.row(r)}, {x.row(r)}, {row.ref()}, {x.cols});")
            return lines

        self.per_row(x.rows, body)
        self.ub.consume(x, col, row, keep=dst)
        return dst

    # ---------------------------------------------------------------- casts
    def cast(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Round to nearest even (the DSL's default mode) on the first lossy step."""
        if any(name == "mode" for name, _ in v.attrs):
            raise refuse("A701", "cast with an explicit rounding mode", self.w.span)
        (x,) = self.w.operands(v.args[:1])
        target = v.type.dtype
        if x.dtype == target:
            return x
        path = _CAST_PATHS.get((x.dtype, target), (target,))
        current = x
        for i, step in enumerate(path):
            kind = _CASTS.get((current.dtype, step))
            if kind is None:
                raise refuse("A702", f"no cast from {x.dtype} to {target} on A2/A3", self.w.span)
            if i == len(path) - 1:
                dst = self.w.target(hint, x.rows, x.cols, step, [current], positionwise=True)
            else:
                dst = self.ub.calc_tile(x.rows, x.cols, step, "cast step")
            mode = "CAST_RINT" if kind == "round" and i == 0 else "CAST_NONE"
            self.cast_call(dst, current, f"AscendC::RoundMode::{mode}")
            self.ub.consume(current, keep=dst)
            current = dst
        return current

    def cast_call(self, dst: Tile, src: Tile, rounding: str) -> None:
        if dst.dense and src.dense and dst.stride == src.stride:
            count = padded(dst.cols, dst.dtype) if dst.rows == 1 else dst.rows * dst.stride
            self.text.emit(f"AscendC::Cast({dst.ref()}, {src.ref()}, {rounding}, {count});")
            return
        self.per_row(
            dst.rows, lambda r: [f"AscendC::Cast({dst.row(r)}, {src.row(r)}, {rounding}, {dst.cols});"]
        )

    # ---------------------------------------------------------------- layout ops
    def transpose(self, v: ir_body.CallV) -> Tile:
        (x,) = self.w.operands(v.args)
        if x.rows != 1 and x.cols != 1:
            raise refuse("A701", "transpose of a tile with more than one row and column", self.w.span)
        dst = self.ub.calc_tile(x.cols, x.rows, x.dtype, "transpose")
        r = self.text.fresh("i")
        self.w.scalar_barrier()
        n = max(x.rows, x.cols)
        src_at = f"{r} * {x.stride}" if x.cols == 1 else r
        dst_at = f"{r} * {dst.stride}" if dst.cols == 1 else r
        base_src = f"{x.offset} + " if x.offset != "0" else ""
        self.text.emit(f"for (int32_t {r} = 0; {r} < {n}; ++{r}) {{")
        self.text.emit(f"    {dst.base}.SetValue({dst_at}, {x.base}.GetValue({base_src}{src_at}));")
        self.text.emit("}")
        self.w.scalar_barrier()
        self.ub.consume(x)
        return dst

    def gather(self, v: ir_body.CallV) -> Tile:
        """out[r, j] = x[r, idx[r, j]]: byte offsets per row, then ``Gather``."""
        x, idx = self.w.operands(v.args)
        if idx.dtype != "i32":
            raise refuse("A702", f"gather indices must be i32, got {idx.dtype}", self.w.span)
        rows, cols = self.w.shape(v.type)
        size = DTYPE_BYTES[x.dtype]
        offsets = self.ub.calc_tile(rows, cols, "i32", "gather offsets")
        dst = self.ub.calc_tile(rows, cols, x.dtype, "gather")
        r = self.text.fresh("r")
        self.text.emit(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
        self.text.emit(
            f"    AscendC::Muls({offsets.row(r)}, {idx.row(r)}, static_cast<int32_t>({size}), {cols});"
        )
        row_bytes = f"static_cast<int32_t>({r} * {x.stride * size})"
        self.text.emit(f"    AscendC::Adds({offsets.row(r)}, {offsets.row(r)}, {row_bytes}, {cols});")
        self.text.emit("}")
        as_u32 = self.w.reinterpret(offsets, "u32")
        self.text.emit(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
        self.text.emit(
            f"    AscendC::Gather({dst.row(r)}, {x.ref()}, {as_u32.row(r)}, static_cast<uint32_t>(0), {cols});"
        )
        self.text.emit("}")
        self.ub.consume(x, idx, offsets)
        return dst

    def sort_op(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return self.w.sorting.lower(v, hint)
