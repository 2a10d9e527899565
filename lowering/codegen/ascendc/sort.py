"""The top-k chain on UB tiles: iota, masks, Sort32, MrgSort, GatherMask (see vecops' doc).

Sorted rows are the Sort32 record format of A2/A3: each record is 8 bytes, the f32 value
then its uint32 index, so a row of ``N`` records is a ``[1, 2N]`` f32 tile, as in the DSL.
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import round_up
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.tiles import Tile

MAX_MRGSORT_REPEATS = 255
_NEG_INF = "-__builtin_huge_valf()"


class SortOps:
    """Static helpers taking the ``VectorWriter`` as their first argument."""

    @staticmethod
    def lower(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return getattr(SortOps, v.op)(w, v, hint)

    @staticmethod
    def iota(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        n = w.const_int(v.args[0].expr)
        dst = w.ub.calc_tile(1, n, "i32", "iota")
        w.emit(f"AscendC::CreateVecIndex({dst.ref()}, static_cast<int32_t>(0), {n});")
        return dst

    @staticmethod
    def index_mask(w, width: int, valid: str) -> Tile:
        """A bit mask of ``width`` lanes: lane i set when i < valid (CompareScalar on an iota)."""
        if width % 64:
            raise refuse("A713", f"a masked row of {width} lanes (Compare needs a multiple of 64)", w.span)
        index = w.ub.calc_tile(1, width, "i32", "lane index")
        lanes = w.ub.calc_tile(1, width, "f32", "lane index as f32")
        mask = w.ub.calc_tile(1, width // 8, "u8", "lane mask")
        w.emit(f"AscendC::CreateVecIndex({index.ref()}, static_cast<int32_t>(0), {width});")
        w.emit(f"AscendC::Cast({lanes.ref()}, {index.ref()}, AscendC::RoundMode::CAST_NONE, {width});")
        w.emit(
            f"AscendC::CompareScalar({mask.ref()}, {lanes.ref()}, static_cast<float>({valid}), "
            f"AscendC::CMPMODE::LT, {width});"
        )
        w.ub.consume(index, lanes)
        return mask

    @staticmethod
    def mask_tail(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Columns at or past ``valid`` become -inf, and the row is padded to ``width``."""
        row_v, valid_v, width_v = v.args
        row = w.operand(row_v)
        if row.rows != 1 or row.dtype != "f32":
            raise refuse("A701", "mask_tail of anything but one f32 row", w.span)
        width = w.const_int(width_v.expr)
        valid = w.scalar(valid_v).code
        dst = w.ub.calc_tile(1, width, "f32", "masked row")
        w.vector_call("Duplicate", dst, [], [_NEG_INF])
        w.copy(dst.view("0", 0, 1, row.cols), row)
        mask = SortOps.index_mask(w, width, valid)
        w.emit(
            f"AscendC::Select({dst.ref()}, {mask.ref()}, {dst.ref()}, {_NEG_INF}, "
            f"AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, {width});"
        )
        w.ub.consume(row, mask)
        return dst

    @staticmethod
    def fillpad(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Columns at or past ``cols`` take the pad value (bitwise lane select)."""
        x_v, cols_v, pad_v = v.args
        x = w.operand(x_v)
        if x.rows != 1 or x.dtype not in ("f32", "i32"):
            raise refuse("A701", "fillpad of anything but one f32 or i32 row", w.span)
        width = round_up(x.cols, 64)
        if width != x.cols:
            raise refuse("A713", f"fillpad of a row of {x.cols} lanes (needs a multiple of 64)", w.span)
        mask = SortOps.index_mask(w, width, w.scalar(cols_v).code)
        pad = w.ub.calc_tile(1, width, x.dtype, "pad row")
        w.vector_call("Duplicate", pad, [], [w.scalar_arg(pad_v, x.dtype)])
        dst = w.ub.calc_tile(1, width, x.dtype, "padded row")
        fx, fp, fd = (t if t.dtype == "f32" else w.reinterpret(t, "f32") for t in (x, pad, dst))
        w.emit(
            f"AscendC::Select({fd.ref()}, {mask.ref()}, {fx.ref()}, {fp.ref()}, "
            f"AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, {width});"
        )
        w.ub.consume(x, mask, pad)
        return dst

    @staticmethod
    def sort32(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        values, index = w.operands(v.args)
        n = values.cols
        if values.rows != 1 or n % 32:
            raise refuse("A701", f"sort32 of a [{values.rows}, {n}] tile (one row of 32k values)", w.span)
        dst = w.ub.calc_tile(1, 2 * n, "f32", "sorted records")
        u32 = w.reinterpret(index, "u32") if index.dtype != "u32" else index
        w.emit(f"AscendC::Sort32({dst.ref()}, {values.ref()}, {u32.ref()}, {n // 32});")
        w.ub.consume(values, index)
        return dst

    @staticmethod
    def mrgsort(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        """Merge each 4 consecutive sorted runs of ``block_len`` columns (one MrgSort, repeated)."""
        src_v, block_v = v.args
        src = w.operand(src_v)
        block_len = w.const_int(block_v.expr)
        cols = src.cols
        if block_len % 64 or cols % (4 * block_len):
            raise refuse("A701", f"mrgsort of {cols} columns in runs of {block_len}", w.span)
        repeat = cols // (4 * block_len)
        if repeat > MAX_MRGSORT_REPEATS:
            raise refuse("A713", f"mrgsort needs {repeat} repeats (at most {MAX_MRGSORT_REPEATS})", w.span)
        dst = w.ub.calc_tile(1, cols, "f32", "merged records")
        records = block_len // 2
        lists, counts, info = w.fresh("lists"), w.fresh("counts"), w.fresh("info")
        runs = ", ".join(src.ref(str(k * block_len)) for k in range(4))
        w.emit(f"AscendC::MrgSortSrcList<float> {lists}({runs});")
        w.emit(f"uint16_t {counts}[4] = {{{records}, {records}, {records}, {records}}};")
        w.emit(f"AscendC::MrgSort4Info {info}({counts}, false, 0b1111, {repeat});")
        w.emit(f"AscendC::MrgSort({dst.ref()}, {lists}, {info});")
        w.ub.consume(src)
        return dst

    @staticmethod
    def topk_pairs(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        src = w.operand(v.args[0])
        k = w.const_int(v.args[1].expr)
        return src.view("0", 0, 1, 2 * k)

    @staticmethod
    def even_lanes(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return SortOps.lanes(w, v, 1, "f32")

    @staticmethod
    def odd_lanes(w, v: ir_body.CallV, hint: Tile | None) -> Tile:
        return SortOps.lanes(w, v, 2, "i32")

    @staticmethod
    def lanes(w, v: ir_body.CallV, pattern: int, dtype: str) -> Tile:
        """GatherMask with the fixed pattern 1 (0101: values) or 2 (1010: indices)."""
        x = w.operand(v.args[0])
        if x.rows != 1 or x.dtype != "f32":
            raise refuse("A701", "even/odd lanes of anything but one f32 row", w.span)
        out = x.cols // 2
        repeat = round_up(x.cols * 4, 256) // 256
        dst = w.ub.calc_tile(1, round_up(out, 32), "f32", "lanes")  # whole repeats are written
        count = w.fresh("kept")
        w.emit(f"uint64_t {count} = 0;")
        w.emit(
            f"AscendC::GatherMask({dst.ref()}, {x.ref()}, static_cast<uint8_t>({pattern}), false, "
            f"static_cast<uint32_t>(0), AscendC::GatherMaskParams{{1, {repeat}, 8, 0}}, {count});"
        )
        w.ub.consume(x)
        view = dst.view("0", 0, 1, out)
        if dtype == "f32":
            return view
        as_int = w.reinterpret(dst, "i32")
        return as_int.view("0", 0, 1, out)
