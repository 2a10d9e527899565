"""Column-strided reads and writes and ``gather_rows`` of the AIV writer (``lowering.codegen.ascendc.aiv``).

- A view ``x[:, a : b : 2]`` of a tile (or of a GM slice: the contiguous columns ``a`` ..
  ``b - 1`` are loaded first) is ``GatherMask`` with the fixed pattern 1 (lanes 0101...:
  the even ones) or 2 (1010...: the odd ones) from the 32-byte block that holds column
  ``a``; each row's lanes come out packed. Rows of at most 256 bytes go in one call, one
  repeat per row (``src0RepeatStride`` = the parent's row stride); longer rows one call
  each. GatherMask reads whole 256-byte repeats, so it may read up to one repeat past the
  row (the calc buffer keeps slack for it). Other steps, or a start two or more lanes into
  its block, are refused (A701).
- A store ``t[r0 : r1, a : b : s] = v`` spreads the value over one 32-byte block per element
  (``Brcb``), then each row is one ``DataCopyPad`` of ``cols`` one-element blocks whose GM
  gap is ``(s - 1)`` elements: the hardware's strided write, no read-modify-write of the
  lanes in between.
- ``gather_rows(src, idx)`` reads each index once through the scalar unit; from GM each
  valid row is one ``DataCopy``/``DataCopyPad`` (MTE2) into the result, from a tile one
  vector ``Copy``; a negative index gives a zero row (``Duplicate``), as the simulator's
  ``gather_row`` staging. An index past the source is not checked on the device (the
  simulator raises): the layer's own guards bound its indices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import BLOCK_BYTES, block_elems, cxx_type, round_up
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.part import WriterPart
from lowering.codegen.ascendc.tiles import Tile, padded
from lowering.ir import DTYPE_BYTES
from lowering.symbolic import Const, binop, difference

if TYPE_CHECKING:
    pass

MAX_REPEATS = 255


def _terms(*parts: str) -> str:
    kept = [p for p in parts if p != "0"]
    return " + ".join(kept) or "0"


class StridedLanes(WriterPart):
    """Views, loads and stores that step over columns (GatherMask, Brcb + strided DataCopyPad)
    and ``gather_rows``; the writer computes the values, ``GmTransfers`` loads the dense span."""

    # ---------------------------------------------------------------- GatherMask views
    def strided_view(
        self, parent: Tile, r0: str, c0: int, rows: int, rstep: int, cols: int, step: int
    ) -> Tile:
        """``parent[r0 :: rstep, c0 :: step]`` with ``cols`` columns, packed by GatherMask."""
        dtype = parent.dtype
        size = DTYPE_BYTES.get(dtype, 0)
        if step != 2 or size not in (2, 4) or dtype == "bool":
            raise refuse(
                "A701",
                f"a column-strided view of a {dtype} tile with step {step}: GatherMask's fixed patterns "
                "take every second 16- or 32-bit lane",
                self.w.span,
            )
        block = block_elems(dtype)
        base = c0 - c0 % block
        lead = c0 - base
        if lead > 1 or not parent.aligned:
            raise refuse(
                "A701",
                f"a column-strided view starting {lead} lanes into a 32-byte block: GatherMask starts at a block "
                "and its fixed patterns skip one lane at most",
                self.w.span,
                hint="slice at a multiple of 32 bytes (or one lane past it)",
            )
        pattern = 1 if lead == 0 else 2
        span_lanes = lead + 2 * (cols - 1) + 1  # source lanes from the block start to the last column
        per_repeat = 256 // size
        repeats = -(-span_lanes // per_repeat)
        row = parent.view(r0, base, 1, span_lanes)
        rows_stride = parent.stride * rstep
        count = self.text.fresh("kept")
        self.text.emit(f"uint64_t {count} = 0;")
        self.ub.note_overread()
        if repeats == 1 and rows <= MAX_REPEATS and (rows_stride * size) % BLOCK_BYTES == 0:
            out_stride = per_repeat // 2  # one repeat per row: its kept half, packed
            dst = self.ub.calc_tile(rows, out_stride, dtype, "strided view")
            src_blocks = rows_stride * size // BLOCK_BYTES
            if src_blocks > 65535:
                raise refuse("A713", f"a row stride of {src_blocks} blocks in one GatherMask", self.w.span)
            self.text.emit(
                f"AscendC::GatherMask({dst.ref()}, {row.ref()}, static_cast<uint8_t>({pattern}), false, "
                f"static_cast<uint32_t>(0), AscendC::GatherMaskParams{{1, {rows}, {src_blocks}, 0}}, {count});"
            )
            return Tile(dst.base, dtype, rows, cols, out_stride)
        if repeats > MAX_REPEATS:
            raise refuse(
                "A713", f"a strided view of {span_lanes} lanes per row ({repeats} repeats)", self.w.span
            )
        out_stride = padded(cols, dtype)
        spill = repeats * per_repeat // 2 - out_stride  # the last repeat's extra lanes land past the row
        dst = self.ub.calc_tile(rows + -(-max(spill, 0) // out_stride), out_stride, dtype, "strided view")
        r = self.text.fresh("r")
        src_row = f"{r} * {rows_stride}" if rows > 1 else "0"
        dst_row = f"{r} * {out_stride}" if rows > 1 else "0"
        self.text.emit(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
        self.text.emit(
            f"    AscendC::GatherMask({dst.ref(dst_row)}, {row.ref(src_row)}, static_cast<uint8_t>({pattern}), "
            f"false, static_cast<uint32_t>(0), AscendC::GatherMaskParams{{1, {repeats}, 8, 0}}, {count});"
        )
        self.text.emit("}")
        return Tile(dst.base, dtype, rows, cols, out_stride)

    def strided_load(self, v: ir_body.LoadV) -> Tile:
        """A GM slice with a column step: the contiguous columns it spans, then GatherMask."""
        col = v.region[-1]
        step = self.w.const_int(col.step)
        cols = self.w.const_int(binop("cdiv", difference(col.stop, col.start), col.step))
        start = self.w.ints.constant(col.start)
        lead = (
            1 if start is not None and start % block_elems(self.w.graph.tensors[v.tensor].dtype) == 1 else 0
        )
        # an odd start one lane past a block: load from the block (DataCopy) and keep the odd lanes
        first = col.start - Const(lead)
        span = lead + (cols - 1) * step + 1
        block = block_elems(self.w.graph.tensors[v.tensor].dtype)
        dims = self.w.dims(v.tensor, self.w.span)
        if start is not None and start - lead + round_up(span, block) <= dims[-1]:
            span = round_up(span, block)  # whole blocks of the same rows: a DataCopy, not a Pad
        last = ir_body.Range(first, first + Const(span), Const(1))
        dense = ir_body.LoadV(v.tensor, (*v.region[:-1], last), v.type, v.local)
        tile = self.w.transfers.load(dense)
        out = self.strided_view(tile, "0", lead, tile.rows, 1, cols, step)
        self.ub.consume(tile)
        return out

    # ---------------------------------------------------------------- strided stores
    def strided_store(
        self, tensor: str, region: tuple[ir_body.Range, ...], value: ir_body.Value, atomic: bool, gm: str,
        rows: int, cols: int, rstep: int, cstep: int,
    ) -> None:  # fmt: skip
        """Brcb spreads each element over a 32-byte block; each row is one DataCopyPad whose
        GM gap skips the ``cstep - 1`` lanes between the columns."""
        dtype = self.w.graph.tensors[tensor].dtype
        size = DTYPE_BYTES[dtype]
        if size not in (2, 4):
            raise refuse(
                "A701", f"a column-strided store of {dtype} (Brcb spreads 16- and 32-bit lanes)", self.w.span
            )
        if cols > 4095:
            raise refuse(
                "A713", f"{cols} columns in one strided DataCopyPad (the limit is 4095)", self.w.span
            )
        val = self.ub.calc_tile(rows, cols, dtype, "strided store value")
        self.w.value_into(value, val)
        per_block = BLOCK_BYTES // size
        lanes = round_up(rows * val.stride, 8)
        out = self.ub.queue_tile("outQueue", 1, lanes * per_block, dtype)
        done = 0
        while done < lanes:
            reps = min(MAX_REPEATS, (lanes - done) // 8)
            self.text.emit(
                f"AscendC::Brcb({out.ref(str(done * per_block))}, {val.ref(str(done))}, {reps}, "
                "AscendC::BrcbRepeatParams{1, 8});"
            )
            done += reps * 8
        self.ub.consume(val)
        self.text.emit(f"outQueue.EnQue({out.base});")
        self.text.emit(f"{out.base} = outQueue.DeQue<{cxx_type(dtype)}>();")
        if atomic:
            self.text.emit(f"AscendC::SetAtomicAdd<{cxx_type(dtype)}>();")
        offset, width = self.w.gm_origin(tensor, region)
        params = f"AscendC::DataCopyExtParams{{{cols}, {size}, 0, {(cstep - 1) * size}, 0}}"
        r = self.text.fresh("r") if rows > 1 else "0"
        gm_at = _terms(self.w.int(offset), f"{r} * {rstep * width}" if rows > 1 else "0")
        ub_at = f"{r} * {val.stride * per_block}" if rows > 1 else "0"
        line = f"AscendC::DataCopyPad({gm}[{gm_at}], {out.ref(ub_at)}, {params});"
        if rows > 1:
            self.text.emit(f"for (int32_t {r} = 0; {r} < {rows}; ++{r}) {{")
            self.text.emit("    " + line)
            self.text.emit("}")
        else:
            self.text.emit(line)
        if atomic:
            self.text.emit("AscendC::SetAtomicNone();")
        self.text.emit(f"outQueue.FreeTensor({out.base});")
        self.ub.outq.give()

    # ---------------------------------------------------------------- gather_rows
    def gather_rows(self, v: ir_body.CallV) -> Tile:
        src_v, idx_v = v.args
        idx = self.w.operand(idx_v)
        if idx.dtype != "i32" or idx.rows != 1:
            raise refuse("A702", f"gather_rows indices must be one i32 row, got {idx.dtype}", self.w.span)
        rows, cols = self.w.shape(v.type)
        dtype = v.type.dtype
        from_gm = isinstance(src_v, ir_body.LoadV) and not src_v.local
        if from_gm:
            _, _, rstep, cstep = self.w.region_shape(src_v.tensor, src_v.region)
            if cstep != 1:
                raise refuse("A701", "gather_rows of a column-strided slice", self.w.span)
            if src_v.tensor in self.w.dma_written:
                self.w.hard_event("MTE3_MTE2")  # this task stored to it before: the store lands first
            dst = self.ub.queue_tile("inQueue", rows, cols, dtype)
            src = None
        else:
            src = self.w.masks.dense_operand(self.w.operand(src_v))
            dst = self.ub.calc_tile(rows, cols, dtype, "gathered rows")
        self.w.scalar_barrier()  # the scalar unit reads the indices the pipes wrote
        j, row = self.text.fresh("j"), self.text.fresh("row")
        self.text.emit(f"for (int32_t {j} = 0; {j} < {rows}; ++{j}) {{")
        self.text.depth += 1
        self.text.emit(
            f"const int64_t {row} = static_cast<int64_t>({idx.base}.GetValue({idx.index('0', j)}));"
        )
        if from_gm:
            self.text.emit(f"if ({row} >= 0) {{")
            self.text.depth += 1
            self.gather_row_dma(src_v, dst, j, row, cols, rstep)
            self.text.depth -= 1
            self.text.emit("}")
        else:
            self.text.emit(f"if ({row} >= 0) {{")
            self.text.depth += 1
            self.w.copy(dst.view(j, 0, 1, cols), src.view(row, 0, 1, cols))
            self.text.depth -= 1
            self.text.emit("} else {")
            self.text.depth += 1
            self.zero_row(dst, j)
            self.text.depth -= 1
            self.text.emit("}")
        self.text.depth -= 1
        self.text.emit("}")
        if from_gm:
            self.text.emit(f"inQueue.EnQue({dst.base});")
            self.text.emit(f"{dst.base} = inQueue.DeQue<{cxx_type(dtype)}>();")
            self.text.emit(f"for (int32_t {j} = 0; {j} < {rows}; ++{j}) {{")
            self.text.emit(f"    if ({idx.base}.GetValue({idx.index('0', j)}) < 0) {{")
            self.text.depth += 2
            self.zero_row(dst, j)
            self.text.depth -= 2
            self.text.emit("    }")
            self.text.emit("}")
            self.ub.free_later("inQueue", dst, None)
        self.ub.consume(idx, src)
        return dst

    def gather_row_dma(
        self, src_v: ir_body.LoadV, dst: Tile, j: str, row: str, cols: int, rstep: int
    ) -> None:
        dtype = dst.dtype
        size = DTYPE_BYTES[dtype]
        offset, width = self.w.gm_origin(src_v.tensor, src_v.region)
        gm = self.w.gm(src_v.tensor)
        at = f"{gm}[{_terms(self.w.int(offset), f'{row} * {rstep * width}')}]"
        aligned = (cols * size) % BLOCK_BYTES == 0 and (rstep * width * size) % BLOCK_BYTES == 0
        if aligned and self.w.aligned(offset, BLOCK_BYTES // size):
            self.text.emit(f"AscendC::DataCopy({dst.row(j)}, {at}, {cols});")
            return
        pad = f"AscendC::DataCopyPadExtParams<{cxx_type(dtype)}>{{false, 0, 0, 0}}"
        self.text.emit(
            f"AscendC::DataCopyPad({dst.row(j)}, {at}, AscendC::DataCopyExtParams{{1, {cols * size}, 0, 0, 0}}, {pad});"
        )

    def zero_row(self, dst: Tile, j: str) -> None:
        """Row ``j`` of ``dst`` (its padding included) set to all-zero bits."""
        lanes = "i32" if DTYPE_BYTES[dst.dtype] == 4 else "i16"
        wide = self.w.reinterpret(dst, lanes) if dst.dtype != lanes else dst
        ctype = cxx_type(lanes)
        self.text.emit(f"AscendC::Duplicate({wide.row(j)}, static_cast<{ctype}>(0), {wide.stride});")
