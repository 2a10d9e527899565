"""Task bodies in the IR: a small typed statement tree that code generators render.

Integer index arithmetic is kept as symbolic expressions (``lowering.symbolic``) so that
regions stay analysable; tile and scalar values are ``Value`` nodes with a type.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowering.source import Span
from lowering.symbolic import Expr

# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class ScalarType:
    dtype: str

    def __str__(self) -> str:
        return self.dtype


@dataclass(frozen=True)
class TileType:
    dtype: str
    shape: tuple[Expr, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class ListType:
    """A list of integers passed to an op (shapes, offsets)."""

    length: int


@dataclass(frozen=True)
class DtypeType:
    """A dtype passed as an op argument (``zeros(f32, ...)``, ``cast(x, bf16)``)."""


Type = ScalarType | TileType | ListType | DtypeType

# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Range:
    """One dimension of a region: ``start : stop : step`` (stop exclusive)."""

    start: Expr
    stop: Expr
    step: Expr
    point: bool = False  # written as a single index, not a slice

    def __str__(self) -> str:
        if self.point:
            return str(self.start)
        step = "" if str(self.step) == "1" else f":{self.step}"
        return f"{self.start}:{self.stop}{step}"


def region_text(region: tuple[Range, ...]) -> str:
    return "[" + ", ".join(str(r) for r in region) + "]"


@dataclass(frozen=True)
class IntV:
    expr: Expr
    type: Type = ScalarType("i32")


@dataclass(frozen=True)
class FloatV:
    value: float
    type: Type = ScalarType("f32")


@dataclass(frozen=True)
class DtypeV:
    dtype: str
    type: Type = DtypeType()


@dataclass(frozen=True)
class ListV:
    items: tuple[Expr, ...]
    type: Type = ListType(0)


@dataclass(frozen=True)
class LocalV:
    name: str
    type: Type


@dataclass(frozen=True)
class LoadV:
    """A region of a tensor (or, with ``local``, of a tile held in a local variable)."""

    tensor: str
    region: tuple[Range, ...]
    type: Type
    local: bool = False


@dataclass(frozen=True)
class BinV:
    op: str  # add sub mul div floordiv mod eq ne lt le gt ge and or
    a: Value
    b: Value
    type: Type


@dataclass(frozen=True)
class CallV:
    op: str
    args: tuple[Value, ...]
    attrs: tuple[tuple[str, Value], ...]
    type: Type


Value = IntV | FloatV | DtypeV | ListV | LocalV | LoadV | BinV | CallV

# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class LetS:
    name: str
    value: Value
    span: Span


@dataclass(frozen=True)
class AssignS:
    name: str
    value: Value
    span: Span


@dataclass(frozen=True)
class StoreS:
    """``tensor[region] = value``; mode ``atomic`` is a hardware atomic add, ``accumulate``
    a plain read-modify-write (``+=`` without ``atomic``)."""

    tensor: str
    region: tuple[Range, ...]
    value: Value
    mode: str
    span: Span


@dataclass(frozen=True)
class RemoteStoreS:
    tensor: str
    region: tuple[Range, ...]
    peer: Expr
    value: Value
    atomic: bool
    span: Span


@dataclass(frozen=True)
class ForS:
    var: str
    start: Expr
    stop: Expr
    step: Expr
    kind: str  # range | parallel | pipeline
    stages: int
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class IfS:
    cond: Value
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class NotifyS:
    signal: str
    index: tuple[Expr, ...]
    peer: Expr
    op: str  # add | set
    value: Expr
    span: Span


@dataclass(frozen=True)
class WaitS:
    signal: str
    index: tuple[Expr, ...]
    cmp: str  # ge | eq
    expected: Expr
    span: Span


@dataclass(frozen=True)
class BarrierS:
    soft: bool
    span: Span


@dataclass(frozen=True)
class EvalS:
    value: Value
    span: Span


Stmt = LetS | AssignS | StoreS | RemoteStoreS | ForS | IfS | NotifyS | WaitS | BarrierS | EvalS
