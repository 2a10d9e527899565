"""Tile comparisons, logic, ``select``, ``//`` and ``%`` of the AIV writer (``lowering.codegen.ascendc.aiv``).

A ``bool`` tile is what the A2/A3 compare unit makes of it: a bit mask in UB, one bit per
lane, lane ``r * stride + c`` for element ``[r, c]`` (``stride`` the padded row of the tile
that was compared), in a ``LocalTensor<uint8_t>`` of the calc buffer. So

- ``a < b`` (tiles) is one ``Compare``, ``x >= s`` one ``CompareScalar`` (CMPMODE LT ... NE);
- ``and`` / ``or`` / ``not`` are ``And`` / ``Or`` / ``Not`` on the mask as uint16 lanes;
- ``select(m, a, b)`` is ``Select`` with the mask (``VSEL_TENSOR_TENSOR_MODE``, or
  ``VSEL_TENSOR_SCALAR_MODE`` for a float scalar ``b``); Select moves lanes bit for bit, so
  i32 / i16 / bf16 tiles are selected as f32 / f16 of the same bits.

dav-2201 orders only f16 and f32 (``Compare`` of int32 knows EQ alone). An i32 tile is
compared with a scalar through f32: the cast is monotone and exact on [-2^24, 2^24], so
for a constant ``|s| < 2^24`` the comparison of the cast is the comparison of the integers
for every i32 value; other i32 orderings are refused (A702). The compare unit works in
whole 256-byte repeats: the count is rounded up to a repeat, so it reads up to one repeat
past the tile (the calc buffer holds ``placement.OVERREAD_BYTES`` of slack for it) and the padding
lanes' bits are garbage that no op reads.

``x // 2^k`` and ``x % 2^k`` on i32 / i16 tiles are ``ShiftRight`` (arithmetic: floor
division, as the DSL's ``//``) and ``And`` with ``2^k - 1`` (two's complement: the floor
modulus, non-negative as the DSL's ``%``). Any other divisor, or ``//`` / ``%`` on float
tiles, is refused (A701) rather than approximated.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import cxx_type, float_literal, round_up
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.part import WriterPart
from lowering.codegen.ascendc.tiles import Tile
from lowering.ir import DTYPE_BYTES

if TYPE_CHECKING:
    pass

COMPARES = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}
_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # s op x == x FLIP s
EXACT_F32_INT = 1 << 24  # |i| below this: an int32 -> f32 cast is exact, and so is its order
#: Select's data dtypes (it moves bits): the dtype a tile of each dtype is selected as.
_SELECT_AS = {"f32": "f32", "i32": "f32", "u32": "f32", "f16": "f16", "bf16": "f16", "i16": "f16"}


def is_bool(t: Tile) -> bool:
    return t.dtype == "bool"


def tile_valued(v: ir_body.Value) -> bool:
    """A tile, or an op of one: the front end types ``not x`` of a tile as a scalar bool
    (``x == 0``), so the type alone does not say it."""
    if isinstance(v.type, ir_body.TileType):
        return True
    return isinstance(v, ir_body.BinV) and (tile_valued(v.a) or tile_valued(v.b))


class MaskOps(WriterPart):
    """Bool tiles as bit masks: comparisons, ``and`` / ``or`` / ``not``, ``select``, and the
    integer ``//`` and ``%`` by powers of two; the writer computes the operands."""

    # ---------------------------------------------------------------- masks
    def mask_tile(self, rows: int, cols: int, stride: int, lanes: int) -> Tile:
        """A mask of ``rows * stride`` lanes rounded up to ``lanes`` (one compare repeat)."""
        nbits = round_up(rows * stride, lanes)
        slot = self.ub.calc_tile(1, nbits // 8, "u8", "mask")
        return Tile(slot.base, "bool", rows, cols, stride)

    def mask_bits(self, m: Tile) -> int:
        return round_up(m.rows * m.stride, 128)

    def dense_operand(self, t: Tile) -> Tile:
        """``t`` itself when one count-mode op over ``rows * stride`` lanes covers it, else a
        packed copy (a view with a row step, or a view starting inside a row)."""
        if t.dense and t.aligned:
            return t
        out = self.ub.temp_like(t)
        self.w.copy(out, t)
        return out

    # ---------------------------------------------------------------- comparisons
    def compare(self, v: ir_body.BinV, hint: Tile | None) -> Tile:
        a_tile, b_tile = tile_valued(v.a), tile_valued(v.b)
        if a_tile and b_tile:
            a, b = self.w.operands((v.a, v.b))
            if is_bool(a) or is_bool(b):
                return self.mask_equality(v.op, a, b)
            return self.compare_tiles(v.op, a, b)
        op, tile_side, scalar_side = (v.op, v.a, v.b) if a_tile else (_FLIP[v.op], v.b, v.a)
        x = self.w.operand(tile_side)
        if is_bool(x):
            return self.mask_test(op, x, scalar_side)
        return self.compare_scalar(op, x, scalar_side)

    def compare_tiles(self, op: str, a: Tile, b: Tile) -> Tile:
        dtype = a.dtype
        if dtype in ("i32", "i16") and op not in ("eq", "ne") or dtype not in ("f32", "f16", "i32"):
            raise refuse(
                "A702",
                f"'{op}' of two {dtype} tiles: the A2/A3 Compare orders f16 and f32 only (int32 only for ==)",
                self.w.span,
                hint="compare with a constant, or cast both tiles to f32",
            )
        a2, b2 = self.dense_operand(a), self.dense_operand(b)
        if a2.stride != b2.stride:
            b2 = self.ub.temp_like(a2)
            self.w.copy(b2, b)
        lanes = 256 // DTYPE_BYTES[dtype]
        mask = self.mask_tile(a.rows, a.cols, a2.stride, lanes)
        complement = op == "ne" and dtype == "i32"  # int32 knows EQ only: NE is its complement
        mode = "EQ" if complement else COMPARES[op]
        count = round_up(a.rows * a2.stride, lanes)
        self.ub.note_overread()
        self.text.emit(
            f"AscendC::Compare({mask.ref()}, {a2.ref()}, {b2.ref()}, AscendC::CMPMODE::{mode}, {count});"
        )
        self.ub.consume(a, b, a2, b2)
        return self.mask_not(mask) if complement else mask

    def compare_scalar(self, op: str, x: Tile, s: ir_body.Value) -> Tile:
        dtype = x.dtype
        if dtype not in ("f32", "f16", "i32"):
            raise refuse(
                "A702", f"'{op}' on {dtype} tiles: the A2/A3 Compare takes f16, f32, int32", self.w.span
            )
        x2 = self.dense_operand(x)
        scalar = self.w.scalar(s)
        if dtype == "i32" and op not in ("eq", "ne"):
            if (
                scalar.const is None
                or not math.isfinite(scalar.const)
                or abs(int(scalar.const)) >= EXACT_F32_INT
                or scalar.const != int(scalar.const)
            ):
                raise refuse(
                    "A702",
                    f"'{op}' of an i32 tile with {scalar.code}: the A2/A3 Compare orders f16 and f32 only, and "
                    f"an i32 tile is compared through f32 only against a constant integer below 2^24",
                    self.w.span,
                    hint="compare with a constant, or cast the tile to f32",
                )
            as_f32 = self.ub.calc_tile(x2.rows, x2.stride, "f32", "i32 compared as f32")
            self.text.emit(
                f"AscendC::Cast({as_f32.ref()}, {x2.ref()}, AscendC::RoundMode::CAST_RINT, {x2.rows * x2.stride});"
            )
            operand, ctype, arg = as_f32, "f32", float_literal(float(scalar.const), "f32")
        else:
            operand, ctype, arg = x2, dtype, self.w.ops.scalar_arg(s, dtype)
        lanes = 256 // DTYPE_BYTES[ctype]
        mask = self.mask_tile(x.rows, x.cols, x2.stride, lanes)
        count = round_up(x.rows * x2.stride, lanes)
        mode = "EQ" if op == "ne" and ctype == "i32" else COMPARES[op]
        self.ub.note_overread()
        self.text.emit(
            f"AscendC::CompareScalar({mask.ref()}, {operand.ref()}, {arg}, AscendC::CMPMODE::{mode}, {count});"
        )
        self.ub.consume(x, x2, operand)
        if op == "ne" and ctype == "i32":
            return self.mask_not(mask)
        return mask

    # ---------------------------------------------------------------- logic
    def logic(self, v: ir_body.BinV, hint: Tile | None) -> Tile:
        if not (tile_valued(v.a) and tile_valued(v.b)):
            raise refuse("A701", f"'{v.op}' of a bool tile and a scalar", self.w.span, hint="use select()")
        a, b = self.w.operands((v.a, v.b))
        if not (is_bool(a) and is_bool(b)):
            raise refuse(
                "A701", f"'{v.op}' of {a.dtype} and {b.dtype} tiles (logic takes bool tiles)", self.w.span
            )
        self.same_lanes(a, b, v.op)
        out = self.mask_tile(a.rows, a.cols, a.stride, 128)
        api = "And" if v.op == "and" else "Or"
        words = self.mask_bits(a) // 16
        ua, ub, uo = (self.as_words(t) for t in (a, b, out))
        self.text.emit(f"AscendC::{api}({uo}, {ua}, {ub}, {words});")
        self.ub.consume(a, b)
        return out

    def same_lanes(self, a: Tile, b: Tile, what: str) -> None:
        if a.stride != b.stride and a.rows > 1:
            raise refuse(
                "A701",
                f"'{what}' of masks laid out for different row strides ({a.stride} and {b.stride} lanes)",
                self.w.span,
                hint="compare tiles of the same dtype",
            )

    def as_words(self, m: Tile) -> str:
        var = self.text.fresh("as")
        self.text.emit(f"AscendC::LocalTensor<uint16_t> {var} = {m.base}.ReinterpretCast<uint16_t>();")
        return var

    def mask_not(self, m: Tile) -> Tile:
        out = self.mask_tile(m.rows, m.cols, m.stride, 128)
        src, dst = self.as_words(m), self.as_words(out)
        self.text.emit(f"AscendC::Not({dst}, {src}, {self.mask_bits(m) // 16});")
        self.ub.consume(m)
        return out

    def mask_test(self, op: str, m: Tile, s: ir_body.Value) -> Tile:
        """``m == 0`` (the DSL's ``not m``), ``m != 0``, ``m == 1``: Not or the mask itself."""
        c = self.w.scalar(s).const
        if op not in ("eq", "ne") or c not in (0, 1):
            raise refuse("A701", f"'{op}' of a bool tile with {self.w.scalar(s).code}", self.w.span)
        return self.mask_not(m) if (op == "eq") == (c == 0) else m

    def mask_equality(self, op: str, a: Tile, b: Tile) -> Tile:
        raise refuse("A701", f"'{op}' of two bool tiles", self.w.span, hint="use and / or / not")

    # ---------------------------------------------------------------- select
    def select(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        cond_v, a_v, b_v = v.args
        mask = self.w.operand(cond_v)
        if not is_bool(mask):
            raise refuse("A701", "select() of a non-bool condition tile", self.w.span)
        rows, cols = self.w.shape(v.type)
        dtype = v.type.dtype
        if dtype not in _SELECT_AS:
            raise refuse("A702", f"select() of {dtype} tiles: Select moves 16- and 32-bit lanes", self.w.span)
        scalar_b = not isinstance(b_v.type, ir_body.TileType)
        a = self.select_operand(a_v, rows, cols, dtype)
        b = None if scalar_b and dtype in ("f32", "f16") else self.select_operand(b_v, rows, cols, dtype)
        dst = self.w.target(hint, rows, cols, dtype, [a] + ([b] if b else []), positionwise=True)
        if not dst.dense or (b is not None and b.stride != a.stride) or dst.stride != a.stride:
            dst = self.ub.calc_tile(rows, cols, dtype, "select")
        if mask.stride != a.stride and rows > 1:
            raise refuse(
                "A701",
                f"select() of a {dtype} tile with a mask laid out for rows of {mask.stride} lanes",
                self.w.span,
                hint="compare tiles of the same dtype as the selected ones",
            )
        kind = _SELECT_AS[dtype]
        fa, fd = (t if t.dtype == kind else self.w.reinterpret(t, kind) for t in (a, dst))
        count = rows * a.stride
        if b is None:
            arg = self.w.ops.scalar_arg(b_v, dtype)
            self.text.emit(
                f"AscendC::Select({fd.ref()}, {mask.ref()}, {fa.ref()}, {arg}, "
                f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {count});"
            )
        else:
            fb = b if b.dtype == kind else self.w.reinterpret(b, kind)
            self.text.emit(
                f"AscendC::Select({fd.ref()}, {mask.ref()}, {fa.ref()}, {fb.ref()}, "
                f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {count});"
            )
        self.ub.consume(mask, a, b, keep=dst)
        return dst

    def select_operand(self, v: ir_body.Value, rows: int, cols: int, dtype: str) -> Tile:
        """A tile operand of Select, packed; a scalar one filled into a tile (Duplicate)."""
        if isinstance(v.type, ir_body.TileType):
            return self.dense_operand(self.w.operand(v))
        fill = self.ub.calc_tile(rows, cols, dtype, "select operand")
        self.w.ops.vector_call("Duplicate", fill, [], [self.w.ops.scalar_arg(v, dtype)])
        return fill

    # ---------------------------------------------------------------- // and %
    def int_division(self, v: ir_body.BinV, hint: Tile | None) -> Tile:
        sym = "//" if v.op == "floordiv" else "%"
        dtype = v.type.dtype
        if not isinstance(v.a.type, ir_body.TileType) or isinstance(v.b.type, ir_body.TileType):
            raise refuse(
                "A701",
                f"'{sym}' with a tile divisor: only a tile divided by a constant has a lowering",
                self.w.span,
            )
        if dtype not in ("i32", "i16"):
            raise refuse(
                "A701",
                f"'{sym}' on {dtype} tiles: only integer tiles divided by a power of two have an exact lowering",
                self.w.span,
            )
        d = self.w.scalar(v.b).const
        if d is None or not math.isfinite(d) or d != int(d) or int(d) <= 0 or int(d) & (int(d) - 1):
            raise refuse(
                "A701",
                f"'{sym}' of an {dtype} tile by {self.w.scalar(v.b).code}: only a constant power of two has an "
                "exact AscendC lowering (ShiftRight / And)",
                self.w.span,
                hint="divide by a power of two, or compute the quotient from indices",
            )
        k = int(d).bit_length() - 1
        x = self.w.operand(v.a)
        rows, cols = x.rows, x.cols
        dst = self.w.target(hint, rows, cols, dtype, [x], positionwise=True)
        ctype = cxx_type(dtype)
        if v.op == "floordiv":  # arithmetic shift: floor(x / 2^k), negatives included
            self.w.ops.vector_call("ShiftRight", dst, [x], [f"static_cast<{ctype}>({k})"])
        else:  # x & (2^k - 1): the non-negative floor modulus in two's complement
            low = self.ub.temp_like(x)
            self.w.ops.vector_call("Duplicate", low, [], [f"static_cast<{ctype}>({(1 << k) - 1})"])
            if dtype == "i16":
                self.w.ops.vector_call("And", dst, [x, low])
            else:  # And takes 16-bit lanes: an int32 mask is two of them
                d16, x16, l16 = (self.w.reinterpret(t, "i16") for t in (dst, x, low))
                self.w.ops.vector_call("And", d16, [x16, l16])
            self.ub.consume(low)
        self.ub.consume(x, keep=dst)
        return dst
