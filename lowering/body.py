"""Task bodies in the IR: a small typed statement tree that code generators render.

Integer index arithmetic is kept as symbolic expressions (``lowering.symbolic``) so that
regions stay analysable; tile and scalar values are ``Value`` nodes with a type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lowering.source import Span
from lowering.symbolic import Expr, free_symbols

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
    span: Span | None = field(default=None, compare=False)  # the literal (with its sign), for lints


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


#: The front end's own ``let`` names (``_v1``: a value read from data that index arithmetic
#: uses). They are unique in a body but say nothing; a target names each after what it holds.
TEMP_PREFIX = "_v"


def is_temp(name: str | None) -> bool:
    """Is ``name`` a front-end temporary (``TEMP_PREFIX`` and a number)?"""
    return bool(name) and name.startswith(TEMP_PREFIX) and name[len(TEMP_PREFIX) :].isdigit()


@dataclass(frozen=True)
class LetS:
    """``let name = value``. With ``inlined``, an integer let (``let t0 = block * T_TILE``)
    whose uses the IR holds as the expression itself, so that regions stay analysable: the
    statement only keeps the author's name for the code generators, which write the binding
    once and the name at each use (``lowering.codegen.names.NamedInts``). Checks may ignore it."""

    name: str
    value: Value
    span: Span
    inlined: bool = False


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


# ---------------------------------------------------------------- reading a body


def nested_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of ``stmts``, those inside loops and branches included, in program order."""
    for s in stmts:
        yield s
        if isinstance(s, ForS):
            yield from nested_stmts(s.body)
        elif isinstance(s, IfS):
            yield from nested_stmts(s.then)
            yield from nested_stmts(s.orelse)


def stmt_values(s: Stmt) -> tuple[Value, ...]:
    """The values one statement computes: what it binds, stores or evaluates; an if's condition."""
    if isinstance(s, LetS | AssignS | StoreS | RemoteStoreS | EvalS):
        return (s.value,)
    if isinstance(s, IfS):
        return (s.cond,)
    return ()


def read_names(stmts: tuple[Stmt, ...], symbols: bool = True) -> set[str]:
    """Locals and loop variables the statements read (in values, indices, bounds and conditions).
    ``symbols=False``: only the tile locals they read, not the names inside integer expressions
    (loop variables, integer lets, parameters), which is what a tile's last use needs."""
    exprs: list[Expr] = []
    out: set[str] = set()
    for s in nested_stmts(stmts):
        for v in (w for top in stmt_values(s) for w in nested_values(top)):
            if isinstance(v, IntV):
                exprs.append(v.expr)
            elif isinstance(v, ListV):
                exprs.extend(v.items)
            elif isinstance(v, LocalV):
                out.add(v.name)
            elif isinstance(v, LoadV):
                if v.local:
                    out.add(v.tensor)
                exprs.extend(e for r in v.region for e in (r.start, r.stop, r.step))
        if isinstance(s, StoreS | RemoteStoreS):
            exprs.extend(e for r in s.region for e in (r.start, r.stop, r.step))
        if isinstance(s, RemoteStoreS):
            exprs.append(s.peer)
        elif isinstance(s, ForS):
            exprs.extend((s.start, s.stop, s.step))
        elif isinstance(s, NotifyS):
            exprs.extend((*s.index, s.peer, s.value))
        elif isinstance(s, WaitS):
            exprs.extend((*s.index, s.expected))
    if symbols:
        out.update(sym.name for e in exprs for sym in free_symbols(e))
    return out


def nested_values(v: Value) -> Iterator[Value]:
    """``v`` and every value inside it (operands, call arguments and attributes), outer first."""
    yield v
    if isinstance(v, BinV):
        yield from nested_values(v.a)
        yield from nested_values(v.b)
    elif isinstance(v, CallV):
        for a in v.args:
            yield from nested_values(a)
        for _, a in v.attrs:
            yield from nested_values(a)


# ---------------------------------------------------------------- valid shapes

VALID_OPS = ("valid", "fillpad")  # valid(x, cols) / valid(x, rows, cols) / fillpad(x, cols, pad)


def valid_extents(v: CallV) -> tuple[Expr | None, Expr | None]:
    """(valid rows, valid cols) of a ``valid``/``fillpad`` call; None where not given."""
    ints = [a.expr for a in v.args[1:] if isinstance(a, IntV)]
    if v.op == "fillpad":
        return None, ints[0] if ints else None
    if len(ints) >= 2:
        return ints[0], ints[1]
    return None, ints[0] if ints else None


def valid_regions(
    stmts: tuple[Stmt, ...],
) -> dict[tuple[str, tuple[Range, ...]], tuple[Expr | None, Expr | None]]:
    """Tensor regions moved through ``valid(...)``/``fillpad(...)``: a region read directly
    inside one (PyPTO ``pl.slice(..., valid_shape=)``) or stored from one (a store of a tile
    with a valid shape) transfers only its valid part. Maps (tensor, region) to the (rows,
    cols) valid extents, as the bounds checks (E305, C402) need them."""
    out: dict[tuple[str, tuple[Range, ...]], tuple[Expr | None, Expr | None]] = {}
    for s in nested_stmts(stmts):
        if isinstance(s, StoreS | RemoteStoreS) and isinstance(s.value, CallV) and s.value.op in VALID_OPS:
            out[(s.tensor, s.region)] = valid_extents(s.value)
        for v in (w for top in stmt_values(s) for w in nested_values(top)):
            if isinstance(v, CallV) and v.op in VALID_OPS and v.args:
                loaded = v.args[0]
                if isinstance(loaded, LoadV) and not loaded.local:
                    out[(loaded.tensor, loaded.region)] = valid_extents(v)
    return out
