"""UB tiles and their placement: the layout every vector op and DataCopy of the target uses.

A tile ``[R, C]`` of dtype T sits in UB row-major with a row stride of ``S`` elements, ``S``
being ``C`` rounded up to a 32-byte block (8 f32, 16 f16/bf16, 32 int8): DataCopyPad puts
each GM row at a block boundary, and a vector op may then start at any row. A view of a
tile (``x[:, 8:24]``, ``q[jj : jj + 1, :]``) is the same buffer at an element offset with
the parent's stride; it is usable in place when its offset is a whole number of blocks.

Placement is static and computed while the body is emitted:

- **calc** (``TBuf<VECCALC>``): let-bound tiles live until the end of their block, a
  temporary until the op that consumes it; offsets are 32-byte aligned (``Arena``);
- **in** (``TQue<VECIN>``): every GM -> UB transfer; as many buffers as tiles loaded at
  once, each as large as the largest;
- **out** (``TQue<VECOUT>``): every UB -> GM transfer, one at a time.

``Budget`` totals what a kernel asked for; the lint (``lowering.codegen.ascendc.lint``)
compares it with the core's memories before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.codegen.ascendc.cxx import BLOCK_BYTES, block_elems, round_up
from lowering.ir import DTYPE_BYTES

#: Bytes of UB per AI core on A2/A3 (dav-2201).
UB_BYTES = 196608


@dataclass(frozen=True)
class Tile:
    """A UB tile: ``base[offset + r * stride + c]`` for ``r < rows``, ``c < cols``."""

    base: str  # the LocalTensor variable
    dtype: str
    rows: int
    cols: int
    stride: int
    offset: str = "0"  # element offset of [0, 0] in ``base`` (C++ code)
    aligned: bool = True  # offset is a whole number of 32-byte blocks

    @property
    def dense(self) -> bool:
        """Rows are packed: one vector op over ``rows * stride`` elements covers the tile."""
        return self.stride == padded(self.cols, self.dtype) or self.rows == 1

    @property
    def count(self) -> int:
        """Elements one dense op covers (the padding of the last row included)."""
        return (self.rows - 1) * self.stride + padded(self.cols, self.dtype)

    @property
    def nbytes(self) -> int:
        return self.rows * self.stride * DTYPE_BYTES[self.dtype]

    def ref(self, extra: str = "0") -> str:
        """``base[offset + extra]``, or ``base`` itself at offset 0."""
        parts = [p for p in (self.offset, extra) if p != "0"]
        if not parts:
            return self.base
        return f"{self.base}[{' + '.join(parts)}]"

    def index(self, r: str, c: str = "0") -> str:
        """The element index of ``[r, c]`` in ``base`` (for GetValue/SetValue)."""
        parts = [p for p in (self.offset, "0" if r == "0" else f"{r} * {self.stride}", c) if p != "0"]
        return " + ".join(parts) or "0"

    def row(self, r: str) -> str:
        return self.ref("0" if r == "0" else f"{r} * {self.stride}")

    def view(self, r0: str, c0: int, rows: int, cols: int, row_step: int = 1) -> Tile:
        extra = [p for p in (self.offset, f"{r0} * {self.stride}" if r0 != "0" else "0", str(c0)) if p != "0"]
        offset = " + ".join(extra) if extra else "0"
        aligned = self.aligned and (c0 * DTYPE_BYTES[self.dtype]) % BLOCK_BYTES == 0
        return Tile(self.base, self.dtype, rows, cols, self.stride * row_step, offset, aligned)

    def same_place(self, other: Tile) -> bool:
        return (self.base, self.offset, self.stride, self.rows) == (
            other.base,
            other.offset,
            other.stride,
            other.rows,
        )


def padded(cols: int, dtype: str) -> int:
    """``cols`` rounded up to whole 32-byte blocks of ``dtype``."""
    return round_up(max(cols, 1), block_elems(dtype))


def tile_bytes(rows: int, cols: int, dtype: str) -> int:
    return rows * padded(cols, dtype) * DTYPE_BYTES[dtype]


@dataclass
class Budget:
    """What one kernel allocates, per memory, in bytes (and the queue buffer counts)."""

    calc: int = 0
    in_bytes: int = 0
    in_count: int = 0
    out_bytes: int = 0
    out_count: int = 0
    l1: int = 0
    l0a: int = 0
    l0b: int = 0
    l0c: int = 0
    peaks: dict[str, str] = field(default_factory=dict)  # memory -> what was live at its peak

    @property
    def ub(self) -> int:
        return self.calc + self.in_bytes * self.in_count + self.out_bytes * self.out_count


class Arena:
    """32-byte-aligned byte ranges of one buffer, allocated first fit and freed explicitly.

    ``mark``/``release`` free everything allocated since the mark (a statement's or a block's
    leftovers); ``free`` returns one range as soon as its tile is consumed, so a chain of
    ops (``mrgsort(mrgsort(sort32(...)))``) needs two live results, not one per op. Reuse is
    safe for the calc buffer because only the vector pipe (in order) and the scalar unit
    (synchronous) touch it.
    """

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, int, str]] = {}  # id -> (offset, size, what)
        self.next_id = 0
        self.peak = 0
        self.at_peak = ""

    def alloc(self, nbytes: int, what: str) -> int:
        size = round_up(max(nbytes, BLOCK_BYTES), BLOCK_BYTES)
        offset = 0
        for start, length, _ in sorted(self.live.values()):
            if start - offset >= size:
                break
            offset = max(offset, start + length)
        self.live[self.next_id] = (offset, size, what)
        self.next_id += 1
        top = offset + size
        if top > self.peak:
            self.peak = top
            self.at_peak = ", ".join(w for _, _, w in sorted(self.live.values()))
        return offset

    def free(self, offset: int) -> None:
        for key, (start, _, _) in list(self.live.items()):
            if start == offset:
                del self.live[key]
                return

    def mark(self) -> int:
        return self.next_id

    def release(self, mark: int) -> None:
        for key in [k for k in self.live if k >= mark]:
            del self.live[key]


class QueueUse:
    """Buffers of one TQue: how many are allocated at once (peak) and the largest."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0
        self.largest = 0

    def take(self, nbytes: int) -> None:
        self.live += 1
        self.peak = max(self.peak, self.live)
        self.largest = max(self.largest, round_up(nbytes, BLOCK_BYTES))

    def give(self) -> None:
        self.live -= 1
