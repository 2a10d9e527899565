"""The top-k chain on UB tiles: iota, masks, Sort32, MrgSort, GatherMask (see vecops' doc).

Sorted rows are the Sort32 record format of A2/A3: each record is 8 bytes, the f32 value
then its uint32 index, so a row of ``N`` records is a ``[1, 2N]`` f32 tile, as in the DSL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import round_up
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.part import WriterPart
from lowering.codegen.ascendc.tiles import Tile

if TYPE_CHECKING:
    pass

MAX_MRGSORT_REPEATS = 255
_NEG_INF = "-__builtin_huge_valf()"


class SortOps(WriterPart):
    """The ops of the top-k chain (``iota`` ... ``odd_lanes``), named as the DSL names them;
    the writer computes the operands."""

    def lower(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return getattr(self, v.op)(v, hint)

    def iota(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        n = self.w.const_int(v.args[0].expr)
        dst = self.ub.calc_tile(1, n, "i32", "iota")
        self.text.emit(f"AscendC::CreateVecIndex({dst.ref()}, static_cast<int32_t>(0), {n});")
        return dst

    def index_mask(self, width: int, valid: str) -> Tile:
        """A bit mask of ``width`` lanes: lane i set when i < valid (CompareScalar on an iota)."""
        if width % 64:
            raise refuse(
                "A713", f"a masked row of {width} lanes (Compare needs a multiple of 64)", self.w.span
            )
        index = self.ub.calc_tile(1, width, "i32", "lane index")
        lanes = self.ub.calc_tile(1, width, "f32", "lane index as f32")
        mask = self.ub.calc_tile(1, width // 8, "u8", "lane mask")
        self.text.emit(f"AscendC::CreateVecIndex({index.ref()}, static_cast<int32_t>(0), {width});")
        self.text.emit(
            f"AscendC::Cast({lanes.ref()}, {index.ref()}, AscendC::RoundMode::CAST_NONE, {width});"
        )
        self.text.emit(
            f"AscendC::CompareScalar({mask.ref()}, {lanes.ref()}, static_cast<float>({valid}), "
            f"AscendC::CMPMODE::LT, {width});"
        )
        self.ub.consume(index, lanes)
        return mask

    def mask_tail(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Columns at or past ``valid`` become -inf, and the row is padded to ``width``."""
        row_v, valid_v, width_v = v.args
        row = self.w.operand(row_v)
        if row.rows != 1 or row.dtype != "f32":
            raise refuse("A701", "mask_tail of anything but one f32 row", self.w.span)
        width = self.w.const_int(width_v.expr)
        valid = self.w.scalar(valid_v).code
        dst = self.ub.calc_tile(1, width, "f32", "masked row")
        self.w.ops.vector_call("Duplicate", dst, [], [_NEG_INF])
        self.w.copy(dst.view("0", 0, 1, row.cols), row)
        mask = self.index_mask(width, valid)
        self.text.emit(
            f"AscendC::Select({dst.ref()}, {mask.ref()}, {dst.ref()}, {_NEG_INF}, "
            f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {width});"
        )
        self.ub.consume(row, mask)
        return dst

    def fillpad(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Columns at or past ``cols`` take the pad value (bitwise lane select)."""
        x_v, cols_v, pad_v = v.args
        x = self.w.operand(x_v)
        if x.rows != 1 or x.dtype not in ("f32", "i32"):
            raise refuse("A701", "fillpad of anything but one f32 or i32 row", self.w.span)
        width = round_up(x.cols, 64)
        if width != x.cols:
            raise refuse("A713", f"fillpad of a row of {x.cols} lanes (needs a multiple of 64)", self.w.span)
        mask = self.index_mask(width, self.w.scalar(cols_v).code)
        pad = self.ub.calc_tile(1, width, x.dtype, "pad row")
        self.w.ops.vector_call("Duplicate", pad, [], [self.w.ops.scalar_arg(pad_v, x.dtype)])
        dst = self.ub.calc_tile(1, width, x.dtype, "padded row")
        fx, fp, fd = (t if t.dtype == "f32" else self.w.reinterpret(t, "f32") for t in (x, pad, dst))
        self.text.emit(
            f"AscendC::Select({fd.ref()}, {mask.ref()}, {fx.ref()}, {fp.ref()}, "
            f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {width});"
        )
        self.ub.consume(x, mask, pad)
        return dst

    def sort32(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        values, index = self.w.operands(v.args)
        n = values.cols
        if values.rows != 1 or n % 32:
            raise refuse(
                "A701", f"sort32 of a [{values.rows}, {n}] tile (one row of 32k values)", self.w.span
            )
        dst = self.ub.calc_tile(1, 2 * n, "f32", "sorted records")
        u32 = self.w.reinterpret(index, "u32") if index.dtype != "u32" else index
        self.text.emit(f"AscendC::Sort32({dst.ref()}, {values.ref()}, {u32.ref()}, {n // 32});")
        self.ub.consume(values, index)
        return dst

    def mrgsort(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Merge each 4 consecutive sorted runs of ``block_len`` columns (one MrgSort, repeated)."""
        src_v, block_v = v.args
        src = self.w.operand(src_v)
        block_len = self.w.const_int(block_v.expr)
        cols = src.cols
        if block_len % 64 or cols % (4 * block_len):
            raise refuse("A701", f"mrgsort of {cols} columns in runs of {block_len}", self.w.span)
        repeat = cols // (4 * block_len)
        if repeat > MAX_MRGSORT_REPEATS:
            raise refuse(
                "A713", f"mrgsort needs {repeat} repeats (at most {MAX_MRGSORT_REPEATS})", self.w.span
            )
        dst = self.ub.calc_tile(1, cols, "f32", "merged records")
        records = block_len // 2
        lists, counts, info = self.text.fresh("lists"), self.text.fresh("counts"), self.text.fresh("info")
        runs = ", ".join(src.ref(str(k * block_len)) for k in range(4))
        self.text.emit(f"AscendC::MrgSortSrcList<float> {lists}({runs});")
        self.text.emit(f"uint16_t {counts}[4] = {{{records}, {records}, {records}, {records}}};")
        self.text.emit(f"AscendC::MrgSort4Info {info}({counts}, false, 0b1111, {repeat});")
        self.text.emit(f"AscendC::MrgSort({dst.ref()}, {lists}, {info});")
        self.ub.consume(src)
        return dst

    def topk_pairs(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        src = self.w.operand(v.args[0])
        k = self.w.const_int(v.args[1].expr)
        return src.view("0", 0, 1, 2 * k)

    def even_lanes(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return self.lanes(v, 1, "f32")

    def odd_lanes(self, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return self.lanes(v, 2, "i32")

    def lanes(self, v: ir_body.CallV, pattern: int, dtype: str) -> Tile:
        """GatherMask with the fixed pattern 1 (0101: values) or 2 (1010: indices)."""
        x = self.w.operand(v.args[0])
        if x.rows != 1 or x.dtype != "f32":
            raise refuse("A701", "even/odd lanes of anything but one f32 row", self.w.span)
        out = x.cols // 2
        repeat = round_up(x.cols * 4, 256) // 256
        dst = self.ub.calc_tile(1, round_up(out, 32), "f32", "lanes")  # whole repeats are written
        count = self.text.fresh("kept")
        self.text.emit(f"uint64_t {count} = 0;")
        self.text.emit(
            f"AscendC::GatherMask({dst.ref()}, {x.ref()}, static_cast<uint8_t>({pattern}), false, "
            f"static_cast<uint32_t>(0), AscendC::GatherMaskParams{{1, {repeat}, 8, 0}}, {count});"
        )
        self.ub.consume(x)
        view = dst.view("0", 0, 1, out)
        if dtype == "f32":
            return view
        as_int = self.w.reinterpret(dst, "i32")
        return as_int.view("0", 0, 1, out)
