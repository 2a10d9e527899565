"""C++ text for the AscendC emitter: dtypes, literals and integer index expressions.

Index arithmetic is 64-bit (``int64_t``). Parameters and constants are folded to literals:
like the NumPy module, an AscendC project is specific to one parameter point. ``//`` and
``%`` are C++ ``/`` and ``%`` where both operands are provably non-negative over the block,
loop, rank and runtime-scalar ranges (the common case), else the floor-rounding helpers
``dslc::FloorDiv``/``FloorMod`` of the kernel prelude, which agree with the DSL for every sign.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping

from lowering.codegen.ascendc import names
from lowering.ir import DTYPE_BYTES
from lowering.symbolic import (
    BLOCK,
    DYNAMIC,
    LOOP,
    NRANKS,
    RANK,
    SCALAR,
    Bin,
    Const,
    EvalError,
    Expr,
    Sym,
    simplify,
    substitute,
)
from lowering.symbolic import bounds as sym_bounds

CXX_TYPES = {
    "f32": "float",
    "f16": "half",
    "bf16": "bfloat16_t",
    "i8": "int8_t",
    "u8": "uint8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "u32": "uint32_t",
    "i64": "int64_t",
    "bool": "uint8_t",
}
BLOCK_BYTES = 32  # the UB block: DataCopy lengths and vector addresses are multiples of it

RANK_VAR = "dslcRank"
BLOCK_VAR = "block"


def cxx_type(dtype: str) -> str:
    return CXX_TYPES[dtype]


def block_elems(dtype: str) -> int:
    """Elements of ``dtype`` in one 32-byte block."""
    return BLOCK_BYTES // DTYPE_BYTES[dtype]


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def float_literal(x: float, dtype: str = "f32") -> str:
    """A literal of ``dtype`` holding ``x`` rounded to float32 (the scalar register's width)."""
    if math.isnan(x):
        return f'static_cast<{cxx_type(dtype)}>(__builtin_nanf(""))'
    if math.isinf(x):
        inf = "__builtin_huge_valf()" if x > 0 else "-__builtin_huge_valf()"
        return inf if dtype == "f32" else f"static_cast<{cxx_type(dtype)}>({inf})"
    text = shortest_f32(x)
    if "e" not in text and "." not in text and "n" not in text:
        text += ".0"
    text += "f"
    if dtype == "f32":
        return text
    return f"static_cast<{cxx_type(dtype)}>({text})"


def to_f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (overflow to inf), as a Python float."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def shortest_f32(x: float) -> str:
    """The shortest decimal that reads back as the float32 nearest to ``x``."""
    single = to_f32(x)
    for digits in range(1, 18):
        text = f"{single:.{digits}g}"
        if to_f32(float(text)) == single:
            return text
    return repr(single)


def int_literal(v: int) -> str:
    if -(2**31) <= v < 2**31:
        return str(v)
    return f"{v}LL"


class IntWriter:
    """Renders symbolic integer expressions of one task as C++ (see the module doc)."""

    def __init__(
        self, env: Mapping[str, int], ranges: Mapping[str, object], nranks: int, helpers: str = "dslc"
    ):
        self.env = dict(env)  # parameters and constants at this point
        self.ranges = dict(ranges)  # block, rank, loop and scalar intervals for sign proofs
        self.nranks = nranks
        self.helpers = helpers  # namespace of FloorDiv/FloorMod/Min/Max (device or host)
        self.folding = {k: Const(v) for k, v in self.env.items()}

    def name_of(self, sym: Sym) -> str:
        if sym.kind == BLOCK:
            return BLOCK_VAR
        if sym.kind == RANK:
            return RANK_VAR
        if sym.kind == NRANKS:
            return str(self.nranks)
        if sym.kind == SCALAR:
            return names.scalar(sym.name)
        if sym.kind in (LOOP, DYNAMIC):
            return names.local(sym.name)
        if sym.name in self.env:
            return int_literal(self.env[sym.name])
        raise EvalError(f"'{sym.name}' has no value in generated code")

    def nonneg(self, e: Expr) -> bool:
        try:
            return sym_bounds(e, {**self.env, **self.ranges})[0] >= 0
        except EvalError:
            return False

    def fold(self, e: Expr) -> Expr:
        return substitute(e, self.folding)

    def constant(self, e: Expr) -> int | None:
        """The value of ``e`` when it is known at compile time."""
        folded = simplify(self.fold(e))
        return folded.value if isinstance(folded, Const) else None

    def code(self, e: Expr) -> str:
        return self._code(self.fold(e))

    def _code(self, e: Expr) -> str:
        if isinstance(e, Const):
            return int_literal(e.value)
        if isinstance(e, Sym):
            return self.name_of(e)
        assert isinstance(e, Bin)
        a, b = self._code(e.a), self._code(e.b)
        op = e.op
        if op in ("+", "-", "*"):
            if op == "-" and isinstance(e.a, Const) and e.a.value == 0:
                return f"(-{b})"
            return f"({a} {op} {b})"
        if op in ("//", "%"):
            if self.nonneg(e.a) and self.nonneg(e.b):
                return f"({a} {'/' if op == '//' else '%'} {b})"
            helper = "FloorDiv" if op == "//" else "FloorMod"
            return f"{self.helpers}::{helper}({a}, {b})"
        if op == "cdiv":
            if self.nonneg(e.a) and self.nonneg(e.b):
                return f"(({a} + {b} - 1) / {b})"
            return f"(-{self.helpers}::FloorDiv(-{a}, {b}))"
        if op in ("min", "max"):
            return f"{self.helpers}::{op.capitalize()}({a}, {b})"
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        if op == "and":
            return f"({a} && {b})"
        if op == "or":
            return f"({a} || {b})"
        raise EvalError(f"operator {op!r} has no C++ form")


def capacity_dims(graph, name: str, env: Mapping[str, int]) -> tuple[int, ...] | None:
    """The dims a tensor's buffer is allocated with: its dims at these parameters, and a
    leading dim that depends on runtime scalars at its largest value over their ranges
    (``input x: f32[t_dim, D]`` with ``scalar t_dim: i32 in 1..16``: 16 rows). Kernels address
    a row-major tensor through its trailing dims only, so the capacity is all they need; the
    host reads and writes the rows the scalars give. None: another dim is runtime, or a
    scalar it depends on has no range."""
    t = graph.tensors[name]
    if all(d is not None for d in t.dims):
        return tuple(t.dims)
    if not t.dims or any(d is None for d in t.dims[1:]):
        return None
    try:
        high = sym_bounds(t.shape[0], {**env, **graph.scalar_ranges()})[1]
    except EvalError:
        return None
    if not isinstance(high, int) or high < 0:
        return None
    return (high, *t.dims[1:])
