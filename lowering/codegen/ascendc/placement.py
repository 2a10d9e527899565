"""Where the AIV writer's tiles live in UB: the calc buffer and the two queues.

Vector ops write tiles of one ``TBuf<VECCALC>`` placed first fit (``tiles.Arena``); a
temporary is freed by ``consume`` once the op that reads it last is emitted, a let's slot at
the end of its block. GM loads land in ``inQueue`` tiles and stores leave from ``outQueue``
ones (``AllocTensor`` ... ``FreeTensor``); an operand's queue tile is freed at the end of its
statement, a let's at the end of its block. ``budget`` is what the kernel prologue reserves.
"""

from __future__ import annotations

from collections.abc import Callable

from lowering.codegen.ascendc.cxx import cxx_type
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.tiles import UB_BYTES, Arena, Budget, QueueUse, Tile, padded, tile_bytes
from lowering.codegen.ascendc.writer import CodeText
from lowering.source import Span

#: Bytes the compare unit and GatherMask may read past a tile (one 256-byte repeat).
OVERREAD_BYTES = 256


class UbPlacement:
    """The calc buffer, the queues and the buffers not freed yet, for one AIV body."""

    def __init__(self, text: CodeText, span: Callable[[], Span]) -> None:
        self.text = text
        self.span = span  # the statement being written, for a refusal
        self.calc = Arena()
        self.inq = QueueUse()
        self.outq = QueueUse()
        self.pending: list[tuple[str, QueueUse]] = []  # FreeTensor lines of the current statement
        self.temps: dict[str, int] = {}  # calc temporaries not consumed yet: var -> offset
        self.overread = 0  # slack past the calc buffer, once an op reads past its operands

    def calc_tile(self, rows: int, cols: int, dtype: str, what: str, temp: bool = True) -> Tile:
        """A tile of the calc buffer; a temporary is freed by ``consume`` (a let slot by its block)."""
        stride = padded(cols, dtype)
        if tile_bytes(rows, cols, dtype) > UB_BYTES:  # before emitting code proportional to its size
            raise refuse(
                "A711",
                f"a [{rows}, {cols}] {dtype} tile needs {tile_bytes(rows, cols, dtype)} B, more than the "
                f"{UB_BYTES} B of UB on an A2/A3 core",
                self.span(),
            )
        offset = self.calc.alloc(tile_bytes(rows, cols, dtype), what)
        var = self.text.fresh("ub")
        ctype = cxx_type(dtype)
        self.text.emit(
            f"AscendC::LocalTensor<{ctype}> {var} = calcBuf.GetWithOffset<{ctype}>({rows * stride}, {offset});"
        )
        if temp:
            self.temps[var] = offset
        return Tile(var, dtype, rows, cols, stride)

    def temp_like(self, t: Tile, dtype: str | None = None, cols: int | None = None) -> Tile:
        return self.calc_tile(t.rows, t.cols if cols is None else cols, dtype or t.dtype, "temporary")

    def keep(self, t: Tile) -> None:
        """``t`` is no temporary any more: a let keeps it to the end of its block."""
        self.temps.pop(t.base, None)

    def consume(self, *tiles: Tile | None, keep: Tile | None = None) -> None:
        """The op just emitted was the last reader of these operands: free their buffers now
        (calc ranges for reuse; queue tiles with FreeTensor), except ``keep``, its result."""
        for t in tiles:
            if t is None or (keep is not None and t.base == keep.base):
                continue
            if t.base in self.temps:
                self.calc.free(self.temps.pop(t.base))
                continue
            for i, (line, use) in enumerate(self.pending):
                if line.endswith(f"({t.base});"):
                    self.text.emit(line)
                    use.give()
                    del self.pending[i]
                    break

    def note_overread(self) -> None:
        self.overread = OVERREAD_BYTES

    # ---------------------------------------------------------------- queues
    def queue(self, queue: str) -> QueueUse:
        return self.inq if queue == "inQueue" else self.outq

    def queue_tile(self, queue: str, rows: int, cols: int, dtype: str) -> Tile:
        self.queue(queue).take(tile_bytes(rows, cols, dtype))
        var = self.text.fresh("in" if queue == "inQueue" else "out")
        self.text.emit(
            f"AscendC::LocalTensor<{cxx_type(dtype)}> {var} = {queue}.AllocTensor<{cxx_type(dtype)}>();"
        )
        return Tile(var, dtype, rows, cols, padded(cols, dtype))

    def free_later(
        self, queue: str, tile: Tile, block_cleanup: list[tuple[str, Callable[[], None] | None]] | None
    ) -> None:
        """FreeTensor at the end of the statement (an operand), or of the block whose cleanup
        list is ``block_cleanup`` (a let)."""
        line = f"{queue}.FreeTensor({tile.base});"
        use = self.queue(queue)
        if block_cleanup is not None:
            block_cleanup.append((line, use.give))
        else:
            self.pending.append((line, use))

    def statement_mark(self) -> int:
        return len(self.pending)

    def flush(self, start: int) -> None:
        """Free the queue tiles the statement took since ``start`` (newest first)."""
        for line, use in reversed(self.pending[start:]):
            self.text.emit(line)
            use.give()
        del self.pending[start:]

    def budget(self) -> Budget:
        return Budget(
            calc=self.calc.peak + (self.overread if self.calc.peak else 0),
            in_bytes=self.inq.largest,
            in_count=self.inq.peak,
            out_bytes=self.outq.largest,
            out_count=self.outq.peak,
            peaks={"calc": self.calc.at_peak},
        )
