"""GM <-> UB transfers of the AIV writer (``lowering.codegen.ascendc.aiv`` delegates to them).

A load goes through ``inQueue``, a store through ``outQueue`` (the queues carry the MTE2 -> V
and V -> MTE3 hand-offs), each as one ``DataCopy`` when the GM range is provably 32-byte
aligned and whole blocks long, else one ``DataCopyPad`` (byte lengths and gaps). A
tensor-to-tensor copy, and a fill whose row count is known only at run time, move in row
chunks of at most ``CHUNK_BYTES`` through one queue buffer, the landing buffer stored
straight back (``MTE2_MTE3`` / ``MTE3_MTE2`` events).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import BLOCK_BYTES, cxx_type
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.part import WriterPart
from lowering.codegen.ascendc.tiles import Tile, tile_bytes
from lowering.ir import DTYPE_BYTES
from lowering.symbolic import Const

if TYPE_CHECKING:
    pass

MAX_DATACOPY_ROWS = 4095
CHUNK_BYTES = 32768  # UB per chunk of a GM -> GM copy or fill


def _at(tensor: str, *offsets: str) -> str:
    """``tensor[a + b]`` without the zero terms (``tensor`` itself at offset 0)."""
    terms = [o for o in offsets if o != "0"]
    return f"{tensor}[{' + '.join(terms)}]" if terms else tensor


def fill_rows(fill: ir_body.CallV, rows: int) -> ir_body.CallV:
    """``full(dtype, [rows, cols], v)``: the fill of one chunk of rows."""
    dtype, shape, value = fill.args
    cols = shape.items[-1] if len(shape.items) > 1 else Const(1)
    new_shape = (Const(rows), cols)
    return ir_body.CallV(
        "full", (dtype, ir_body.ListV(new_shape), value), (), ir_body.TileType(fill.type.dtype, new_shape)
    )


class GmTransfers(WriterPart):
    """Loads of GM regions into inQueue tiles, stores of values from outQueue tiles, and GM ->
    GM copies and fills in row chunks; the writer computes the values and places the tiles."""

    def load(self, v: ir_body.LoadV, scope_end: bool = False) -> Tile:
        """GM region -> an inQueue tile (MTE2), dequeued so vector ops may read it."""
        dtype = self.w.graph.tensors[v.tensor].dtype
        rows, cols, rstep, cstep = self.w.region_shape(v.tensor, v.region)
        if cstep != 1:  # the packed copy lives in the calc buffer (a let keeps it to its block end)
            tile = self.w.strided.strided_load(v)
            if scope_end:
                self.ub.keep(tile)
            return tile
        if v.tensor in self.w.dma_written:
            self.w.hard_event("MTE3_MTE2")  # this task stored to it before: the store lands first
        gm = self.w.gm(v.tensor)
        tile = self.ub.queue_tile("inQueue", rows, cols, dtype)
        self.transfer(tile, gm, v.tensor, v.region, rows, cols, rstep, to_gm=False)
        self.text.emit(f"inQueue.EnQue({tile.base});")
        self.text.emit(f"{tile.base} = inQueue.DeQue<{cxx_type(dtype)}>();")
        self.ub.free_later("inQueue", tile, self.w.scopes[-1].cleanup if scope_end else None)
        return tile

    def transfer(
        self, tile: Tile, gm: str, tensor: str, region: tuple[ir_body.Range, ...], rows: int, cols: int,
        rstep: int, to_gm: bool,
    ) -> None:  # fmt: skip
        """One DataCopy (aligned) or DataCopyPad between ``tile`` and the region of ``gm``."""
        dtype = tile.dtype
        size = DTYPE_BYTES[dtype]
        offset, width = self.w.gm_origin(tensor, region)
        at = f"{gm}[{self.w.int(offset)}]" if self.w.ints.constant(offset) != 0 else gm
        if rows > MAX_DATACOPY_ROWS:
            raise refuse(
                "A713", f"{rows} rows in one DataCopy (the limit is {MAX_DATACOPY_ROWS})", self.w.span
            )
        gap = (rstep * width - cols) * size if rows > 1 else 0
        contiguous = rows == 1 or gap == 0
        aligned = (cols * size) % BLOCK_BYTES == 0 and gap % BLOCK_BYTES == 0
        gm_aligned = self.w.aligned(offset, BLOCK_BYTES // size)
        src, dst = (tile.base, at) if to_gm else (at, tile.base)
        if aligned and gm_aligned and contiguous:
            self.text.emit(f"AscendC::DataCopy({dst}, {src}, {rows * cols});")
        elif aligned and gm_aligned and gap < 65536 * BLOCK_BYTES:
            blocks = cols * size // BLOCK_BYTES
            gaps = (0, gap // BLOCK_BYTES) if to_gm else (gap // BLOCK_BYTES, 0)
            self.text.emit(
                f"AscendC::DataCopy({dst}, {src}, AscendC::DataCopyParams{{{rows}, {blocks}, {gaps[0]}, {gaps[1]}}});"
            )
        else:
            params = f"AscendC::DataCopyExtParams{{{rows}, {cols * size}, {0 if to_gm else gap}, {gap if to_gm else 0}, 0}}"
            if to_gm:
                self.text.emit(f"AscendC::DataCopyPad({dst}, {src}, {params});")
            else:
                pad = f"AscendC::DataCopyPadExtParams<{cxx_type(dtype)}>{{false, 0, 0, 0}}"
                self.text.emit(f"AscendC::DataCopyPad({dst}, {src}, {params}, {pad});")

    def store_tile(
        self, tensor: str, region: tuple[ir_body.Range, ...], value: ir_body.Value, atomic: bool, gm: str
    ) -> None:
        dtype = self.w.graph.tensors[tensor].dtype
        rows, cols, rstep, cstep = self.w.region_shape(tensor, region)
        if cstep != 1:
            self.w.strided.strided_store(tensor, region, value, atomic, gm, rows, cols, rstep, cstep)
            return
        out = self.ub.queue_tile("outQueue", rows, cols, dtype)
        self.w.value_into(value, out)
        self.text.emit(f"outQueue.EnQue({out.base});")
        self.text.emit(f"{out.base} = outQueue.DeQue<{cxx_type(dtype)}>();")
        if atomic:
            if dtype not in ("f32", "f16", "i32", "i16", "i8", "bf16"):
                raise refuse("A702", f"no atomic add of {dtype} in GM", self.w.span)
            self.text.emit(f"AscendC::SetAtomicAdd<{cxx_type(dtype)}>();")
        self.transfer(out, gm, tensor, region, rows, cols, rstep, to_gm=True)
        if atomic:
            self.text.emit("AscendC::SetAtomicNone();")
        self.text.emit(f"outQueue.FreeTensor({out.base});")
        self.ub.outq.give()

    def put(
        self, tensor: str, region: tuple[ir_body.Range, ...], value: ir_body.Value, atomic: bool, gm: str
    ) -> None:
        """Store ``value`` into ``gm``'s region: a GM -> GM copy, a fill, or a computed tile."""
        strided = any(
            self.w.const_int(r.step) != 1 for r in (region[-1:] + getattr(value, "region", ())[-1:])
        )
        if isinstance(value, ir_body.LoadV) and not value.local and not strided:
            self.gm_copy(tensor, region, value, atomic, gm)
            return
        if isinstance(value.type, ir_body.ScalarType):  # a scalar broadcast over a region
            dtype = self.w.graph.tensors[tensor].dtype
            shape = tuple(r.stop - r.start for r in region if not r.point)
            fill = ir_body.CallV(
                "full",
                (ir_body.DtypeV(dtype), ir_body.ListV(shape), value),
                (),
                ir_body.TileType(dtype, shape),
            )
            if self.w.ints.constant(region[0].stop - region[0].start) is None:
                self.chunked(tensor, region, None, fill, atomic, gm)
                return
            value = fill
        self.store_tile(tensor, region, value, atomic, gm)

    def gm_copy(
        self, tensor: str, region: tuple[ir_body.Range, ...], src: ir_body.LoadV, atomic: bool, gm: str
    ) -> None:
        """GM -> UB -> GM in chunks of rows, the row count possibly known only at run time."""
        if src.tensor in self.w.dma_written:
            self.w.hard_event("MTE3_MTE2")
        self.chunked(tensor, region, src, None, atomic, gm)

    def chunked(
        self, tensor: str, region: tuple[ir_body.Range, ...], src: ir_body.LoadV | None, fill: ir_body.CallV | None,
        atomic: bool, gm: str,
    ) -> None:  # fmt: skip
        """Row chunks of at most CHUNK_BYTES: ``for (r0 = 0; r0 < rows; r0 += n)`` when needed."""
        dtype = self.w.graph.tensors[tensor].dtype
        size = DTYPE_BYTES[dtype]
        dst_dims = self.w.dims(tensor, self.w.span)
        row_range = region[0] if len(region) == 2 else ir_body.Range(Const(0), Const(1), Const(1))
        col_range = region[-1]
        if len(dst_dims) == 2 and region[0].point:
            row_range = ir_body.Range(region[0].start, region[0].start + 1, Const(1))
        cols = 1 if col_range.point else self.w.const_int(col_range.stop - col_range.start)
        if self.w.const_int(col_range.step) != 1 or self.w.const_int(row_range.step) != 1:
            raise refuse("A701", f"a strided copy into {tensor}", self.w.span)
        rows_expr = row_range.stop - row_range.start
        rows_const = self.w.ints.constant(rows_expr)
        per_chunk = max(1, min(MAX_DATACOPY_ROWS, CHUNK_BYTES // max(tile_bytes(1, cols, dtype), 1)))
        chunk = per_chunk if rows_const is None else min(per_chunk, rows_const)
        if rows_const is not None and rows_const == 0:
            return
        dst_width = dst_dims[-1] if dst_dims else 1
        dst_offset, _ = self.w.row_major(tensor, region, self.w.span)
        loop = rows_const is None or rows_const > chunk
        r0, n = ("0", str(chunk))
        if loop:
            r0, n = self.text.fresh("r"), self.text.fresh("rows")
            total = self.w.int(rows_expr)
            self.text.emit(f"for (int64_t {r0} = 0; {r0} < {total}; {r0} += {chunk}) {{")
            self.text.depth += 1
            self.text.emit(f"const int64_t {n} = dslc::Min({chunk}, {total} - {r0});")
        count = f"static_cast<uint16_t>({n})"
        dst_at = _at(gm, self.w.int(dst_offset), f"{r0} * {dst_width}" if loop else "0")
        out_gap = (dst_width - cols) * size if chunk > 1 else 0
        if src is not None:
            src_dims = self.w.dims(src.tensor, self.w.span)
            src_width = src_dims[-1] if src_dims else 1
            src_offset, _ = self.w.row_major(src.tensor, src.region, self.w.span)
            src_gm = self.w.gm(src.tensor)
            tile = self.ub.queue_tile("inQueue", chunk, cols, dtype)
            src_at = _at(src_gm, self.w.int(src_offset), f"{r0} * {src_width}" if loop else "0")
            pad = f"AscendC::DataCopyPadExtParams<{cxx_type(dtype)}>{{false, 0, 0, 0}}"
            gap = (src_width - cols) * size if chunk > 1 else 0
            self.text.emit(
                f"AscendC::DataCopyPad({tile.base}, {src_at}, AscendC::DataCopyExtParams{{{count}, {cols * size}, "
                f"{gap}, 0, 0}}, {pad});"
            )
            self.w.hard_event("MTE2_MTE3")  # stored straight from the landing buffer
            queue = "inQueue"
        else:
            tile = self.ub.queue_tile("outQueue", chunk, cols, dtype)
            self.w.value_into(fill_rows(fill, chunk), tile)
            self.text.emit(f"outQueue.EnQue({tile.base});")
            self.text.emit(f"{tile.base} = outQueue.DeQue<{cxx_type(dtype)}>();")
            queue = "outQueue"
        if atomic:
            self.text.emit(f"AscendC::SetAtomicAdd<{cxx_type(dtype)}>();")
        self.text.emit(
            f"AscendC::DataCopyPad({dst_at}, {tile.base}, AscendC::DataCopyExtParams{{{count}, {cols * size}, 0, "
            f"{out_gap}, 0}});"
        )
        if atomic:
            self.text.emit("AscendC::SetAtomicNone();")
        if src is not None:
            self.w.hard_event("MTE3_MTE2")  # the next load into this buffer waits for the store
        self.text.emit(f"{queue}.FreeTensor({tile.base});")
        (self.ub.inq if queue == "inQueue" else self.ub.outq).give()
        if loop:
            self.text.depth -= 1
            self.text.emit("}")
