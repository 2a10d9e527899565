"""AIV task bodies: tiles in UB, DataCopy(Pad) through TQue queues, vector ops in a TBuf.

The statements of one block, in the asc-devkit introduction idiom: a GM region becomes a
tile through ``inQueue`` (``AllocTensor``, ``DataCopy``/``DataCopyPad``, ``EnQue``,
``DeQue``: the queue carries the MTE2 -> V hand-off), vector ops write tiles of the calc
buffer (one ``TBuf<VECCALC>``, placed first fit, ``lowering.codegen.ascendc.tiles``), and
a store computes its value into an ``outQueue`` tile that is enqueued, dequeued (V -> MTE3)
and copied to GM. ``+= atomic`` wraps the copy in ``SetAtomicAdd<T>()`` ...
``SetAtomicNone()``.

A value is computed straight into its destination when the op reads each element only at
its own position (elementwise ops, casts, row/column broadcasts) or the destination is not
among its operands; otherwise into a temporary that is then copied (a tile is a value: the
DSL's ``c0 = row_expand_div(c0, row_sum(c0))`` may not see its own partial writes).

``VectorWriter`` walks the statements, evaluates values, binds locals and copies tiles in
UB; it is composed of one piece per kind of work, each holding the writer (for values,
scalars and GM addressing), the shared ``UbPlacement`` and the shared ``CodeText``:
``GmTransfers`` (GM <-> UB), ``StridedLanes`` (column steps, ``gather_rows``),
``MaskOps`` (bool tiles, ``select``, ``//`` and ``%``), ``VectorOps`` (the other tile
ops), ``SortOps`` (the top-k chain) and ``CrossRankComm`` (peer windows and signals).
"""

from __future__ import annotations

from lowering import body as ir_body
from lowering.codegen.ascendc.comm import CrossRankComm
from lowering.codegen.ascendc.cxx import BLOCK_BYTES, cxx_type
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.masks import MaskOps, is_bool
from lowering.codegen.ascendc.placement import UbPlacement
from lowering.codegen.ascendc.sort import SortOps
from lowering.codegen.ascendc.strided import StridedLanes
from lowering.codegen.ascendc.tiles import Budget, Tile, padded
from lowering.codegen.ascendc.transfers import GmTransfers
from lowering.codegen.ascendc.vecops import VectorOps
from lowering.codegen.ascendc.writer import BodyWriter, Scalar
from lowering.ir import DTYPE_BYTES, Graph, Task
from lowering.symbolic import Const, binop, difference

SCALAR_COPY_LIMIT = 1024  # elements an unaligned view may be copied one by one (A712 past it)


class VectorWriter(BodyWriter):
    """An AIV body: statements, values and UB copies here; each kind of op in its own piece."""

    unit = "vector"

    def __init__(self, graph: Graph, task: Task, env: dict[str, int]):
        super().__init__(graph, task, env)
        self.ub = UbPlacement(self.text, lambda: self.span)  # calc buffer and queues
        self.transfers = GmTransfers(self)  # loads, stores, GM -> GM copies and fills
        self.strided = StridedLanes(self)  # column-strided views, loads, stores; gather_rows
        self.masks = MaskOps(self)  # comparisons, logic, select, // and %
        self.ops = VectorOps(self)  # arithmetic, reductions, broadcasts, casts, layout ops
        self.sorting = SortOps(self)  # iota ... odd_lanes
        self.comm = CrossRankComm(self)  # remote stores, notify, wait

    # ---------------------------------------------------------------- placement
    def arena_mark(self) -> int:
        return self.ub.calc.mark()

    def arena_release(self, mark: int) -> None:
        self.ub.calc.release(mark)

    def budget(self) -> Budget:
        return self.ub.budget()

    # ---------------------------------------------------------------- shapes
    def shape(self, t: ir_body.Type) -> tuple[int, int]:
        if not isinstance(t, ir_body.TileType) or len(t.shape) > 2:
            raise refuse("A704", f"only 1-D and 2-D tiles are supported, got {t}", self.span)
        dims = [self.const_int(d) for d in t.shape]
        return (1, dims[0]) if len(dims) == 1 else (dims[0], dims[1])

    def region_shape(self, tensor: str, region: tuple[ir_body.Range, ...]) -> tuple[int, int, int, int]:
        """(rows, cols, row step, column step) of a GM region; point dims drop out."""
        extents = []
        for r in region:
            if r.point:
                continue
            step = self.const_int(r.step)
            extents.append((self.const_int(binop("cdiv", difference(r.stop, r.start), r.step)), step))
        if len(extents) > 2:
            raise refuse("A704", f"region of {tensor} has more than 2 dimensions", self.span)
        while len(extents) < 2:
            extents.insert(0, (1, 1))
        dims = self.dims(tensor, self.span)
        if len(dims) == 2 and region[0].point and not region[1].point:
            extents[0] = (1, 1)
        (rows, rstep), (cols, cstep) = extents
        return rows, cols, rstep, cstep

    # ---------------------------------------------------------------- GM transfers
    def hard_event(self, kind: str) -> None:
        var = self.fresh("event")
        self.emit(f"event_t {var} = static_cast<event_t>(pipe.FetchEventID(AscendC::HardEvent::{kind}));")
        self.emit(f"AscendC::SetFlag<AscendC::HardEvent::{kind}>({var});")
        self.emit(f"AscendC::WaitFlag<AscendC::HardEvent::{kind}>({var});")

    def scalar_barrier(self) -> None:
        """Before the scalar unit reads or writes UB, every pipe has finished with it."""
        self.emit("AscendC::PipeBarrier<PIPE_ALL>();")

    # ---------------------------------------------------------------- statements
    def tile_statement(self, s: ir_body.Stmt) -> None:
        mark, pending = self.ub.calc.mark(), self.ub.statement_mark()
        if isinstance(s, ir_body.LetS):
            self.tile_let(s)
        elif isinstance(s, ir_body.AssignS):
            self.value_into(s.value, self.assign_target(s))
        elif isinstance(s, ir_body.StoreS):
            self.store(s)
        elif isinstance(s, ir_body.RemoteStoreS):
            self.comm.remote_store(s)
        elif isinstance(s, ir_body.NotifyS):
            self.comm.notify(s)
        elif isinstance(s, ir_body.WaitS):
            self.comm.wait(s)
        elif isinstance(s, ir_body.BarrierS):
            self.barrier(s)
        elif isinstance(s, ir_body.EvalS):
            self.emit("// anchor read of a region: ordered by the launch order, no data use")
        else:
            raise refuse("A701", f"{type(s).__name__} on the vector core", s.span)
        self.ub.flush(pending)
        if not isinstance(s, ir_body.LetS):
            self.ub.calc.release(mark)

    def assign_target(self, s: ir_body.AssignS) -> Tile:
        target = self.lookup(s.name)
        if not isinstance(target, Tile):
            raise refuse("A701", f"{s.name} is not a tile", s.span)
        return target

    def tile_let(self, s: ir_body.LetS) -> None:
        v = s.value
        mutable = s.name in self.reassigned
        if v.type.dtype == "bool":  # a mask: bound where the compare wrote it, for the block
            if mutable:
                raise refuse("A701", f"reassigning the bool tile {s.name}", s.span, hint="bind a new name")
            mask = self.value(v, None)
            self.ub.keep(mask)
            self.bind(s.name, mask)
            return
        rows, cols = self.shape(v.type)
        if isinstance(v, ir_body.LoadV) and not v.local and not mutable:
            self.bind(s.name, self.transfers.load(v, scope_end=True))
            return
        if not mutable and self.is_stable_view(v):
            self.bind(s.name, self.operand(v))
            return
        if (
            not mutable
            and isinstance(v, ir_body.LoadV)
            and v.local
            and self.const_int(v.region[-1].step) != 1
        ):
            packed = self.operand(v)  # GatherMask already wrote a tile of its own: keep it
            self.ub.keep(packed)
            self.bind(s.name, packed)
            return
        slot = self.ub.calc_tile(rows, cols, v.type.dtype, s.name, temp=False)
        self.bind(s.name, slot)
        mark, pending = self.ub.calc.mark(), self.ub.statement_mark()
        self.value_into(v, slot)
        self.ub.flush(pending)
        self.ub.calc.release(mark)

    def is_stable_view(self, v: ir_body.Value) -> bool:
        """A local, or a view of one, that no later statement overwrites: bind, do not copy."""
        if isinstance(v, ir_body.LocalV):
            return v.name not in self.reassigned
        if isinstance(v, ir_body.LoadV) and v.local:
            if v.tensor in self.reassigned:
                return False
            parent = self.lookup(v.tensor)
            if self.const_int(v.region[-1].step) != 1:
                return False  # a strided view is a GatherMask copy, not the parent's storage
            return isinstance(parent, Tile) and self.view_of(parent, v).aligned
        return False

    def store(self, s: ir_body.StoreS) -> None:
        value = s.value
        if s.mode == "accumulate":  # a plain read-modify-write (not atomic)
            dtype = self.graph.tensors[s.tensor].dtype
            current = ir_body.LoadV(s.tensor, s.region, ir_body.TileType(dtype, value.type.shape))
            value = ir_body.BinV("add", current, value, value.type)
        self.transfers.put(s.tensor, s.region, value, s.mode == "atomic", self.gm(s.tensor))

    # ---------------------------------------------------------------- values
    def view_of(self, parent: Tile, v: ir_body.LoadV) -> Tile:
        """``parent[region]`` for a local tile (a 1-D tile is one row)."""
        region = v.region if len(v.region) == 2 else (ir_body.Range(Const(0), Const(1), Const(1)), *v.region)
        r, c = region
        rstep = self.const_int(r.step)
        rows = self.const_int(binop("cdiv", difference(r.stop, r.start), r.step)) if not r.point else 1
        c0 = self.const_int(c.start)
        cstep = self.const_int(c.step)
        if cstep != 1:
            cols = self.const_int(binop("cdiv", difference(c.stop, c.start), c.step))
            return self.strided.strided_view(parent, self.int(r.start), c0, rows, rstep, cols, cstep)
        cols = self.const_int(difference(c.stop, c.start)) if not c.point else 1
        return parent.view(self.int(r.start), c0, rows, cols, rstep)

    def value_into(self, v: ir_body.Value, dst: Tile) -> None:
        out = self.value(v, dst)
        if is_bool(out) != is_bool(dst):
            raise refuse(
                "A701",
                "a bool tile as a stored, cast or computed value (a mask lives in UB only)",
                self.span,
                hint="turn it into numbers with select(mask, full(...), zeros(...))",
            )
        if not out.same_place(dst):
            self.copy(dst, out)
            self.ub.consume(out, keep=dst)

    def operand(self, v: ir_body.Value) -> Tile:
        return self.value(v, None)

    def operands(self, values: tuple[ir_body.Value, ...]) -> list[Tile]:
        return [self.operand(v) for v in values]

    def value(self, v: ir_body.Value, hint: Tile | None) -> Tile:
        """Emit ``v``; the result is ``hint`` itself when it could be written in place."""
        if isinstance(v, ir_body.LocalV):
            bound = self.lookup(v.name)
            if not isinstance(bound, Tile):
                raise refuse("A701", f"{v.name} is a scalar where a tile is needed", self.span)
            return bound
        if isinstance(v, ir_body.LoadV):
            if v.local:
                parent = self.lookup(v.tensor)
                if not isinstance(parent, Tile):
                    raise refuse("A701", f"{v.tensor} is not a tile", self.span)
                view = self.view_of(parent, v)
                return view if view.aligned else self.unaligned_copy(view)
            return self.transfers.load(v)
        if isinstance(v, ir_body.BinV):
            return self.ops.binary(v, hint)
        if isinstance(v, ir_body.CallV):
            return self.ops.call(v, hint)
        raise refuse("A701", f"{type(v).__name__} as a tile value", self.span)

    def target(
        self, hint: Tile | None, rows: int, cols: int, dtype: str, operands: list[Tile], positionwise: bool
    ) -> Tile:
        """Where an op writes: ``hint`` when that is safe, else a new temporary."""
        if (
            hint is not None
            and hint.dtype == dtype
            and (hint.rows, hint.cols) == (rows, cols)
            and hint.aligned
        ):
            clash = [t for t in operands if t.base == hint.base]
            if all(positionwise and t.same_place(hint) and t.dtype == hint.dtype for t in clash):
                return hint
        return self.ub.calc_tile(rows, cols, dtype, "temporary")

    # ---------------------------------------------------------------- copies
    def copy(self, dst: Tile, src: Tile) -> None:
        """UB -> UB on the vector pipe (``Copy``): the whole tile at once when both are packed
        alike, else row by row through the repeat strides."""
        if (dst.rows, dst.cols) != (src.rows, src.cols) or dst.dtype != src.dtype:
            raise refuse(
                "A704",
                f"cannot copy a [{src.rows}, {src.cols}] tile into [{dst.rows}, {dst.cols}]",
                self.span,
            )
        if not (dst.aligned and src.aligned):
            self.scalar_copy(dst, src)
            return
        d, s = dst, src
        if DTYPE_BYTES[dst.dtype] == 1:  # Copy moves 16/32-bit lanes: int8 as int16 pairs
            d, s = self.reinterpret(dst, "i16"), self.reinterpret(src, "i16")
        size = DTYPE_BYTES[d.dtype]
        lanes = 256 // size
        if (d.dense and s.dense and d.stride == s.stride) or d.rows == 1:
            count = padded(d.cols, d.dtype) if d.rows == 1 else d.rows * d.stride
            self.copy_run(d, s, count, lanes)
            return
        cols = padded(d.cols, d.dtype)
        rep_d, rep_s = d.stride * size // BLOCK_BYTES, s.stride * size // BLOCK_BYTES
        for c0 in range(0, cols, lanes):
            for r0 in range(0, d.rows, 255):
                rows = min(255, d.rows - r0)
                at_d = " + ".join(p for p in (str(c0), str(r0 * d.stride)) if p != "0") or "0"
                at_s = " + ".join(p for p in (str(c0), str(r0 * s.stride)) if p != "0") or "0"
                self.emit(
                    f"AscendC::Copy({d.ref(at_d)}, {s.ref(at_s)}, {min(lanes, cols - c0)}, {rows}, "
                    f"AscendC::CopyRepeatParams{{1, 1, {rep_d}, {rep_s}}});"
                )

    def copy_run(self, d: Tile, s: Tile, count: int, lanes: int) -> None:
        """``count`` contiguous elements: full repeats of 256 bytes, then the tail."""
        done = 0
        while count - done >= lanes:
            repeat = min(255, (count - done) // lanes)
            at = str(done)
            self.emit(
                f"AscendC::Copy({d.ref(at)}, {s.ref(at)}, {lanes}, {repeat}, AscendC::CopyRepeatParams{{1, 1, 8, 8}});"
            )
            done += repeat * lanes
        if done < count:
            at = str(done)
            self.emit(
                f"AscendC::Copy({d.ref(at)}, {s.ref(at)}, {count - done}, 1, AscendC::CopyRepeatParams{{1, 1, 8, 8}});"
            )

    def reinterpret(self, t: Tile, dtype: str) -> Tile:
        """The same bytes as ``dtype`` lanes (wider: fewer columns; narrower: more)."""
        new, old = DTYPE_BYTES[dtype], DTYPE_BYTES[t.dtype]
        var = self.fresh("as")
        self.emit(
            f"AscendC::LocalTensor<{cxx_type(dtype)}> {var} = {t.ref()}.ReinterpretCast<{cxx_type(dtype)}>();"
        )
        if new >= old:
            ratio = new // old
            return Tile(var, dtype, t.rows, -(-t.cols // ratio), t.stride // ratio)
        ratio = old // new
        return Tile(var, dtype, t.rows, t.cols * ratio, t.stride * ratio)

    def unaligned_copy(self, view: Tile) -> Tile:
        out = self.ub.calc_tile(view.rows, view.cols, view.dtype, "aligned copy of a view")
        self.scalar_copy(out, view)
        return out

    def scalar_copy(self, dst: Tile, src: Tile) -> None:
        """Element by element through the scalar unit: the only way to shift inside a block."""
        if dst.rows * dst.cols > SCALAR_COPY_LIMIT:
            raise refuse(
                "A712",
                f"a [{src.rows}, {src.cols}] {src.dtype} view starts inside a 32-byte block; copying it "
                f"element by element is limited to {SCALAR_COPY_LIMIT} elements",
                self.span,
                hint="slice local tiles at multiples of 32 bytes, or load the columns from GM",
            )
        r, c = self.fresh("r"), self.fresh("c")
        self.scalar_barrier()
        self.emit(f"for (int32_t {r} = 0; {r} < {dst.rows}; ++{r}) {{")
        self.emit(f"    for (int32_t {c} = 0; {c} < {dst.cols}; ++{c}) {{")
        src_at = (
            f"{src.offset} + {r} * {src.stride} + {c}" if src.offset != "0" else f"{r} * {src.stride} + {c}"
        )
        dst_at = (
            f"{dst.offset} + {r} * {dst.stride} + {c}" if dst.offset != "0" else f"{r} * {dst.stride} + {c}"
        )
        self.emit(f"        {dst.base}.SetValue({dst_at}, {src.base}.GetValue({src_at}));")
        self.emit("    }")
        self.emit("}")
        self.scalar_barrier()

    def local_read(self, load: ir_body.LoadV) -> Scalar:
        parent = self.lookup(load.tensor)
        if not isinstance(parent, Tile):
            raise refuse("A701", f"{load.tensor} is not a tile", self.span)
        if is_bool(parent):
            raise refuse("A701", f"read() of the bool tile {load.tensor}", self.span, hint="use select()")
        region = (
            load.region
            if len(load.region) == 2
            else (ir_body.Range(Const(0), Const(1), Const(1)), *load.region)
        )
        r, c = (self.int(x.start) for x in region)
        at = (
            " + ".join(
                p for p in (parent.offset, f"{r} * {parent.stride}" if r != "0" else "0", c) if p != "0"
            )
            or "0"
        )
        self.scalar_barrier()
        value = f"{parent.base}.GetValue({at})"
        if parent.dtype in ("f32", "f16", "bf16"):
            return Scalar(f"static_cast<float>({value})" if parent.dtype != "f32" else value, "f32")
        return Scalar(f"static_cast<int64_t>({value})", "i32")
