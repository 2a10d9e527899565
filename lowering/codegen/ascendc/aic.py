"""AIC task bodies: ``matmul``/``matmul_acc`` on the cube with the basic API.

Why the basic API and not the ``Matmul`` high-level API: the language exposes the L0C
accumulator as a value (``acc = matmul_acc(acc, a, b)`` across a loop, then a store), and
its reduction order is part of the layer's numerics (rule N203, ``k_group``). The basic
API keeps that value in one L0C tile across the loop and accumulates in exactly the
program's order; ``Matmul`` owns L0C itself, iterates in its own order and needs host-side
tiling from the platform libraries for every shape. The basic API is also what the
asc-devkit ``matmul_basic_api`` introduction example shows.

Per ``matmul`` op, per K chunk (chunks sized so the chunk fits L0A and L0B):

1. GM -> L1 in Nz format with ``DataCopy(..., Nd2NzParams)`` (MTE2), unless the operand is a
   tile already in L1 (``let x0 = x[...]``);
2. L1 -> L0A (``LoadData``, one call per 16-row block of A) and L1 -> L0B (MTE1). With
   ``b_trans`` (B given as [N, K], as every model writes it) the Nz image of B^T already is
   the Zn layout L0B wants, so one contiguous ``LoadData`` moves it; without ``b_trans`` each
   16x16 fractal is transposed on the way (16-bit dtypes only);
3. ``Mmad`` into the accumulator (M), ``cmatrixInitVal`` on the first chunk of a ``matmul``
   or of the first ``matmul_acc`` into a ``zeros`` accumulator.

A store is ``Fixpipe`` L0C -> GM (FIX), inside ``SetAtomicAdd<T>()`` ... ``SetAtomicNone()``
for ``+= atomic``. Every hand-off between pipes is a ``SetFlag``/``WaitFlag`` pair set and
waited at once: correct, not overlapped (double buffering is future work). ``k_group`` is
the cube's own accumulation order on A2/A3: nothing to emit.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowering import body as ir_body
from lowering.codegen.ascendc.cxx import BLOCK_BYTES, cxx_type, round_up
from lowering.codegen.ascendc.diagnostics import refuse
from lowering.codegen.ascendc.tiles import Arena, Budget
from lowering.codegen.ascendc.writer import BodyWriter
from lowering.ir import DTYPE_BYTES, Graph, Task

L0A_BYTES = 65536
L0B_BYTES = 65536
FRACTAL_ROWS = 16
_OPERANDS = ("f16", "bf16", "f32", "i8")
_ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}
MAX_ND2NZ = 65535


def _at(tensor: str, offset: int) -> str:
    return f"{tensor}[{offset}]" if offset else tensor


@dataclass
class CubeTile:
    """A matrix in L1 (Nz) or L0C: ``rows x cols`` padded to ``prows x pcols``."""

    base: str
    dtype: str
    rows: int
    cols: int
    prows: int
    pcols: int
    init: str | None = None  # L0C: the bool that is true until the first Mmad writes it
    written: bool = False  # L0C: some Mmad surely ran before the current statement
    depth: int = 0  # L0C: enclosing loops/ifs where it was declared


class CubeWriter(BodyWriter):
    unit = "cube"

    def __init__(self, graph: Graph, task: Task, env: dict[str, int]):
        super().__init__(graph, task, env)
        self.l1a, self.l1b = Arena(), Arena()
        self.l0a_peak = 0
        self.l0b_peak = 0
        self.l0c = Arena()

    def arena_mark(self) -> int:
        return (self.l1a.mark(), self.l1b.mark(), self.l0c.mark())  # type: ignore[return-value]

    def arena_release(self, mark) -> None:
        self.l1a.release(mark[0])
        self.l1b.release(mark[1])
        self.l0c.release(mark[2])

    def budget(self) -> Budget:
        return Budget(
            l1=self.l1a.peak + self.l1b.peak,
            l0a=self.l0a_peak,
            l0b=self.l0b_peak,
            l0c=self.l0c.peak,
            peaks={
                "l1": ", ".join(x for x in (self.l1a.at_peak, self.l1b.at_peak) if x),
                "l0c": self.l0c.at_peak,
            },
        )

    def flag(self, event: str) -> None:
        self.emit(f"AscendC::SetFlag<AscendC::HardEvent::{event}>(EVENT_ID0);")
        self.emit(f"AscendC::WaitFlag<AscendC::HardEvent::{event}>(EVENT_ID0);")

    # ---------------------------------------------------------------- statements
    def tile_statement(self, s: ir_body.Stmt) -> None:
        mark = self.arena_mark()
        if isinstance(s, ir_body.LetS):
            self.let(s)
            return
        if isinstance(s, ir_body.AssignS):
            acc = self.lookup(s.name)
            if not (isinstance(acc, CubeTile) and acc.init is not None):
                raise refuse("A701", f"on the cube core only accumulators are reassigned ({s.name})", s.span)
            self.into_accumulator(s.value, acc)
        elif isinstance(s, ir_body.StoreS):
            self.store(s)
        elif isinstance(s, ir_body.EvalS):
            self.emit("// anchor read of a region: ordered by the launch order, no data use")
        elif isinstance(s, ir_body.BarrierS) and self.mix:
            self.barrier(s)
        elif isinstance(s, ir_body.RemoteStoreS | ir_body.NotifyS | ir_body.WaitS):
            raise refuse("A705", "cross-rank ops on the cube core (move them to an aiv task)", s.span)
        else:
            raise refuse("A701", f"{type(s).__name__} on the cube core", s.span)
        self.arena_release(mark)

    def let(self, s: ir_body.LetS) -> None:
        v = s.value
        if isinstance(v, ir_body.CallV) and v.op == "zeros":
            self.bind(s.name, self.accumulator(v.type, s.name))
        elif isinstance(v, ir_body.CallV) and v.op in ("matmul", "matmul_acc"):
            acc = self.accumulator(v.type, s.name)
            self.bind(s.name, acc)
            self.into_accumulator(v, acc)
        elif isinstance(v, ir_body.LoadV) and not v.local:
            self.bind(s.name, self.stage(v, "A", s.name))
        elif isinstance(v, ir_body.CallV) and v.op == "valid" and self.is_gm_slice(v.args[0]):
            # valid(x[...], rows[, cols]): only the valid part is read; the padding of the L1
            # tile keeps what it held (valid() leaves the tail unspecified)
            extents = [self.scalar(e).code for e in v.args[1:]]
            rows, cols = (extents[0], extents[1]) if len(extents) == 2 else (None, extents[0])
            self.bind(s.name, self.stage(v.args[0], "A", s.name, valid=(rows, cols)))
        else:
            raise refuse(
                "A701",
                "the cube core has no vector unit: only zeros, matmul and GM slices bind tiles here",
                s.span,
                hint="move the vector work to an aiv task after this one",
            )

    def accumulator(self, t: ir_body.Type, name: str) -> CubeTile:
        rows, cols = self.matrix_shape(t)
        dtype = t.dtype
        if dtype not in ("f32", "i32"):
            raise refuse("A702", f"a cube accumulator of {dtype} (f32 or i32)", self.span)
        prows, pcols = round_up(rows, FRACTAL_ROWS), round_up(cols, FRACTAL_ROWS)
        offset = self.l0c.alloc(prows * pcols * DTYPE_BYTES[dtype], name)
        var, init = self.fresh("acc"), self.fresh("init")
        ctype = cxx_type(dtype)
        self.emit(
            f"AscendC::LocalTensor<{ctype}> {var} = l0cBuf.GetWithOffset<{ctype}>({prows * pcols}, {offset});"
        )
        self.emit(f"bool {init} = true;")
        return CubeTile(var, dtype, rows, cols, prows, pcols, init, depth=len(self.certain))

    def matrix_shape(self, t: ir_body.Type) -> tuple[int, int]:
        if not isinstance(t, ir_body.TileType) or len(t.shape) != 2:
            raise refuse("A704", f"cube operands are 2-D tiles, got {t}", self.span)
        return self.const_int(t.shape[0]), self.const_int(t.shape[1])

    # ---------------------------------------------------------------- L1 staging
    def is_gm_slice(self, v: ir_body.Value) -> bool:
        return isinstance(v, ir_body.LoadV) and not v.local

    def stage(
        self, v: ir_body.LoadV, side: str, what: str, k0: int = 0, kc: int | None = None, k_rows: bool = False,
        valid: tuple[str | None, str | None] = (None, None),
    ) -> CubeTile:  # fmt: skip
        """GM [rows, cols] (columns k0 .. k0 + kc; rows with ``k_rows``, B given as [K, N]) -> L1 in
        Nz format (MTE2). Rows are padded to a fractal, or to a 32x32 square for an int8 B [K, N]
        (its LoadDataWithTranspose moves whole squares)."""
        dtype = self.graph.tensors[v.tensor].dtype
        if dtype not in _OPERANDS:
            raise refuse("A702", f"matmul operands of {dtype} (f16, bf16, f32 or i8)", self.span)
        rows, cols = self.matrix_shape(v.type)
        r, c = v.region
        if self.const_int(c.step) != 1:
            raise refuse("A701", "a column-strided matmul operand", self.span)
        row_step = self.const_int(r.step)
        width = self.dims(v.tensor, self.span)[-1]
        c0 = BLOCK_BYTES // DTYPE_BYTES[dtype]
        if k_rows:
            rows = rows if kc is None else kc
        else:
            cols = cols if kc is None else kc
        prows, pcols = round_up(rows, FRACTAL_ROWS if not (k_rows and c0 == 32) else 32), round_up(cols, c0)
        if row_step * width > MAX_ND2NZ or cols > MAX_ND2NZ:
            raise refuse(
                "A713", f"an Nd2Nz row stride of {row_step * width} elements (at most {MAX_ND2NZ})", self.span
            )
        arena = self.l1a if side == "A" else self.l1b
        offset = arena.alloc(prows * pcols * DTYPE_BYTES[dtype], what)
        var = self.fresh("l1")
        ctype = cxx_type(dtype)
        buf = "l1aBuf" if side == "A" else "l1bBuf"
        self.emit(
            f"AscendC::LocalTensor<{ctype}> {var} = {buf}.GetWithOffset<{ctype}>({prows * pcols}, {offset});"
        )
        start, _ = self.row_major(v.tensor, v.region, self.span)
        gm = self.gm(v.tensor)
        skip = k0 * row_step * width if k_rows else k0  # the chunk's first row, or column
        code = self.int(start + skip) if k0 else self.int(start)
        at = gm if code == "0" else f"{gm}[{code}]"
        self.flag("MTE1_MTE2")  # the previous LoadData has read this L1 range
        n_value, d_value = str(rows), str(cols)
        if valid[0] is not None:  # 0 .. the slice's rows, whatever the runtime extent
            n_value = f"static_cast<uint16_t>(dslc::Max(0, dslc::Min({rows}, {valid[0]})))"
        if valid[1] is not None and valid[1] != str(cols):
            d_value = f"static_cast<uint16_t>(dslc::Max(0, dslc::Min({cols}, {valid[1]})))"
        self.emit(
            f"AscendC::DataCopy({var}, {at}, AscendC::Nd2NzParams{{1, {n_value}, {d_value}, 0, {row_step * width}, "
            f"{prows}, 1, 0}});"
        )
        self.flag("MTE2_MTE1")
        return CubeTile(var, dtype, rows, cols, prows, pcols)

    # ---------------------------------------------------------------- matmul
    def into_accumulator(self, v: ir_body.Value, acc: CubeTile) -> None:
        if not (isinstance(v, ir_body.CallV) and v.op in ("matmul", "matmul_acc")):
            raise refuse("A701", "the cube core has no vector unit: only matmul/matmul_acc here", self.span)
        attrs = dict(v.attrs)
        if "a_trans" in attrs:
            raise refuse("A701", "matmul with a_trans (store A as [M, K])", self.span)
        if v.op == "matmul_acc":
            first, a_v, b_v = v.args
            if not (isinstance(first, ir_body.LocalV) and self.lookup(first.name) is acc):
                raise refuse("A701", "matmul_acc must accumulate into the tile it is assigned to", self.span)
            init = acc.init
        else:
            a_v, b_v = v.args
            init = "true"
        self.mmad(acc, a_v, b_v, "b_trans" in attrs, init)
        acc.written = acc.written or all(self.certain[acc.depth :])

    def operand(
        self, v: ir_body.Value, side: str, k0: int, kc: int, full_k: int, k_rows: bool = False
    ) -> tuple[CubeTile, int]:
        """(L1 tile holding the chunk, element offset of the chunk's first Nz column block, or of
        its first row with ``k_rows``: B given as [K, N], K along the rows of each column block)."""
        if isinstance(v, ir_body.LocalV):
            tile = self.lookup(v.name)
            if not isinstance(tile, CubeTile) or tile.init is not None:
                raise refuse("A701", f"{v.name} is not a matrix in L1", self.span)
            c0 = BLOCK_BYTES // DTYPE_BYTES[tile.dtype]
            return tile, k0 * c0 if k_rows else k0 * tile.prows
        if isinstance(v, ir_body.LoadV) and not v.local:
            return self.stage(v, side, f"{v.tensor}[...]", k0, kc if kc != full_k else None, k_rows), 0
        raise refuse("A701", "matmul operands must be GM slices or tiles loaded from GM", self.span)

    def mmad(self, acc: CubeTile, a_v: ir_body.Value, b_v: ir_body.Value, b_trans: bool, init: str) -> None:
        a_rows, k = self.matrix_shape(a_v.type)
        b_rows, b_cols = self.matrix_shape(b_v.type)
        n = b_rows if b_trans else b_cols
        dtype = a_v.type.dtype
        if dtype not in _OPERANDS or _ACC[dtype] != acc.dtype:
            raise refuse("A702", f"a {dtype} matmul into a {acc.dtype} accumulator", self.span)
        c0 = BLOCK_BYTES // DTYPE_BYTES[dtype]
        if k == 0:  # no Mmad to issue, and an accumulator no Mmad ever initialises
            raise refuse("A704", "a matmul over an empty inner dimension (K = 0)", self.span)
        if k % c0:
            raise refuse(
                "A704",
                f"the inner dimension {k} is not a multiple of {c0} ({dtype} fractal width)",
                self.span,
            )
        if not b_trans and dtype == "f32":
            raise refuse(
                "A701",
                "matmul without b_trans on f32: A2/A3 transposes 32-bit B on the way to L0B only through "
                "Load3Dv2, which dslc does not emit (store B as [N, K] and pass b_trans)",
                self.span,
            )
        if not b_trans and dtype == "i8" and n % 32:
            raise refuse(
                "A704",
                f"an int8 matmul without b_trans over N = {n}: LoadDataWithTranspose moves 32x32 int8 squares, "
                "so N must be a multiple of 32 (or store B as [N, K] and pass b_trans)",
                self.span,
            )
        mp, np_ = round_up(a_rows, FRACTAL_ROWS), round_up(n, FRACTAL_ROWS)
        size = DTYPE_BYTES[dtype]
        kc = k
        while kc > c0 and (
            mp * kc * size > L0A_BYTES or np_ * kc * size > L0B_BYTES or (np_ // 16) * (kc // c0) > 255
        ):
            kc = round_up(kc // 2, c0)
        if mp * kc * size > L0A_BYTES or np_ * kc * size > L0B_BYTES:
            raise refuse("A711", f"a [{a_rows}, {c0}] x [{c0}, {n}] chunk does not fit L0A/L0B", self.span)
        self.l0a_peak = max(self.l0a_peak, mp * kc * size)
        self.l0b_peak = max(self.l0b_peak, np_ * kc * size)
        ctype = cxx_type(dtype)
        for k0 in range(0, k, kc):
            width = min(kc, k - k0)
            mark = (self.l1a.mark(), self.l1b.mark())
            a1, a_at = self.operand(a_v, "A", k0, width, k)
            b1, b_at = self.operand(b_v, "B", k0, width, k, k_rows=not b_trans)
            a2, b2 = self.fresh("a2"), self.fresh("b2")
            self.emit(f"AscendC::LocalTensor<{ctype}> {a2} = l0aBuf.GetWithOffset<{ctype}>({mp * width}, 0);")
            self.emit(
                f"AscendC::LocalTensor<{ctype}> {b2} = l0bBuf.GetWithOffset<{ctype}>({np_ * width}, 0);"
            )
            self.flag("M_MTE1")  # the previous Mmad has read L0A/L0B
            self.load_a(a2, a1, a_at, mp, width, c0)
            self.load_b(b2, b1, b_at, np_, width, c0, b_trans)
            self.flag("MTE1_M")
            first = init if k0 == 0 else "false"
            if k0 == 0 and init != "false":
                self.flag("FIX_M")  # a Fixpipe of this accumulator has finished reading it
            self.emit(
                f"AscendC::Mmad({acc.base}, {a2}, {b2}, AscendC::MmadParams{{{a_rows}, {n}, {width}, 0, false, {first}}});"
            )
            self.l1a.release(mark[0])
            self.l1b.release(mark[1])
        if acc.init is not None and init == acc.init:
            self.emit(f"{acc.init} = false;")

    def load_a(self, a2: str, a1: CubeTile, at: int, mp: int, kc: int, c0: int) -> None:
        """Nz (column blocks of C0) -> Zz (row blocks of 16): one LoadData per row block."""
        for i in range(mp // FRACTAL_ROWS):
            src = at + i * FRACTAL_ROWS * c0
            self.emit(
                f"AscendC::LoadData({_at(a2, i * FRACTAL_ROWS * kc)}, {_at(a1.base, src)}, "
                f"AscendC::LoadData2DParams{{0, {kc // c0}, {a1.prows // FRACTAL_ROWS}, 0, 0, false, 0}});"
            )

    def load_b(self, b2: str, b1: CubeTile, at: int, np_: int, kc: int, c0: int, b_trans: bool) -> None:
        if b_trans:  # Nz of B^T == Zn of B: the chunk's fractals are contiguous
            self.emit(
                f"AscendC::LoadData({b2}, {_at(b1.base, at)}, "
                f"AscendC::LoadData2DParams{{0, {(np_ // FRACTAL_ROWS) * (kc // c0)}, 1, 0, 0, false, 0}});"
            )
            return
        if c0 == 32:  # int8 B [K, N]: each 32x32 square of L1 becomes two 16x32 L0B fractals
            for i in range(kc // 32):
                self.emit(
                    f"AscendC::LoadDataWithTranspose({_at(b2, i * np_ * 32)}, {_at(b1.base, at + i * 32 * 32)}, "
                    f"AscendC::LoadData2dTransposeParams{{0, {np_ // 32}, {b1.prows // 32}, 1, 0}});"
                )
            return
        for i in range(kc // FRACTAL_ROWS):  # 16-bit B [K, N]: transpose each 16x16 fractal
            self.emit(
                f"AscendC::LoadData({_at(b2, i * np_ * FRACTAL_ROWS)}, {_at(b1.base, at + i * FRACTAL_ROWS * FRACTAL_ROWS)}, "
                f"AscendC::LoadData2DParams{{0, {np_ // FRACTAL_ROWS}, {b1.prows // FRACTAL_ROWS}, 0, 0, true, 0}});"
            )

    # ---------------------------------------------------------------- stores
    def store(self, s: ir_body.StoreS) -> None:
        v = s.value
        if isinstance(v, ir_body.LocalV):
            acc = self.lookup(v.name)
            if not (isinstance(acc, CubeTile) and acc.init is not None):
                raise refuse("A701", f"only accumulators are stored from the cube core ({v.name})", s.span)
            if not acc.written:
                raise refuse(
                    "A701", f"{v.name} may be stored before any matmul wrote it (an empty loop)", s.span
                )
        elif isinstance(v, ir_body.CallV) and v.op == "matmul":
            acc = self.accumulator(v.type, "stored product")
            self.into_accumulator(v, acc)
        else:
            raise refuse(
                "A701",
                "the cube core stores matmul results only",
                s.span,
                hint="copies and vector work belong to an aiv task",
            )
        if s.mode == "accumulate":
            raise refuse("A701", "a non-atomic += from the cube core (use += ... atomic)", s.span)
        dtype = self.graph.tensors[s.tensor].dtype
        if dtype != acc.dtype:
            raise refuse("A702", f"storing a {acc.dtype} accumulator into {dtype} {s.tensor}", s.span)
        rows = self.const_int(s.region[0].stop - s.region[0].start)
        cols = self.const_int(s.region[1].stop - s.region[1].start) if len(s.region) > 1 else 1
        if (rows, cols) != (acc.rows, acc.cols):
            raise refuse("A704", f"storing [{acc.rows}, {acc.cols}] into a [{rows}, {cols}] region", s.span)
        start, _ = self.row_major(s.tensor, s.region, s.span)
        width = self.dims(s.tensor, s.span)[-1]
        row_step = self.const_int(s.region[0].step)
        gm = self.gm(s.tensor)
        code = self.int(start)
        at = gm if code == "0" else f"{gm}[{code}]"
        self.flag("M_FIX")
        if s.mode == "atomic":
            self.emit(f"AscendC::SetAtomicAdd<{cxx_type(dtype)}>();")
        self.emit(
            f"AscendC::Fixpipe({at}, {acc.base}, AscendC::FixpipeParamsV220{{{acc.cols}, {acc.rows}, {acc.prows}, "
            f"{row_step * width}, false}});"
        )
        if s.mode == "atomic":
            self.emit("AscendC::SetAtomicNone();")
