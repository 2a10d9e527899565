"""Typed AST of the dslc language. Every node carries the span it was parsed from."""

from __future__ import annotations

from dataclasses import dataclass, field

from lowering.source import Span

# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Node:
    span: Span


@dataclass(frozen=True)
class IntLit(Node):
    value: int


@dataclass(frozen=True)
class FloatLit(Node):
    value: float
    text: str


@dataclass(frozen=True)
class BoolLit(Node):
    value: bool


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Unary(Node):
    op: str  # "-" or "not"
    operand: Expr


@dataclass(frozen=True)
class Binary(Node):
    op: str  # + - * / // % == != < <= > >= and or
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Slice(Node):
    start: Expr | None
    stop: Expr | None
    step: Expr | None


@dataclass(frozen=True)
class Access(Node):
    """``name[i, a:b, :]``: a tensor region (or a point, when every subscript is an index)."""

    name: str
    name_span: Span
    subscripts: tuple[Expr | Slice, ...]


@dataclass(frozen=True)
class ListLit(Node):
    """``[a, b]``: a shape or index list passed to an op (``zeros(f32, [16, MIX])``)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Call(Node):
    func: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]


Expr = IntLit | FloatLit | BoolLit | Name | Unary | Binary | Access | Call | ListLit

# ---------------------------------------------------------------- task bodies


@dataclass(frozen=True)
class Let(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Assign(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Store(Node):
    target: Access
    value: Expr


@dataclass(frozen=True)
class Accumulate(Node):
    """``t[r] += v`` (read-modify-write) or ``t[r] += v atomic`` (hardware atomic add)."""

    target: Access
    value: Expr
    atomic: bool


@dataclass(frozen=True)
class For(Node):
    var: str
    kind: str  # range | parallel | pipeline
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class If(Node):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class RemoteStore(Node):
    target: Access
    peer: Expr
    value: Expr
    atomic: bool


@dataclass(frozen=True)
class Notify(Node):
    cell: Access
    peer: Expr
    op: str  # "add" | "set"
    value: Expr


@dataclass(frozen=True)
class Wait(Node):
    cell: Access
    cmp: str  # "ge" | "eq"
    expected: Expr


@dataclass(frozen=True)
class Barrier(Node):
    soft: bool


@dataclass(frozen=True)
class ExprStmt(Node):
    call: Call


Stmt = Let | Assign | Store | Accumulate | For | If | RemoteStore | Notify | Wait | Barrier | ExprStmt

# ---------------------------------------------------------------- layer level


@dataclass(frozen=True)
class Domain(Node):
    """Admissible values of a parameter: ``lo..hi [step s]`` or ``{a, b, c}``."""

    lo: Expr | None = None
    hi: Expr | None = None
    step: Expr | None = None
    values: tuple[Expr, ...] | None = None


@dataclass(frozen=True)
class Param(Node):
    name: str
    default: Expr
    domain: Domain | None


@dataclass(frozen=True)
class ConstDef(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class AssertStmt(Node):
    cond: Expr
    message: str | None


@dataclass(frozen=True)
class ScalarDecl(Node):
    name: str
    dtype: str
    dtype_span: Span
    domain: Domain | None


@dataclass(frozen=True)
class GoldenDecl(Node):
    """``golden "hc_pre_golden.py"``: a NumPy reference beside the source (see docs/run.md)."""

    path: str


@dataclass(frozen=True)
class RanksDecl(Node):
    """``ranks EP``: the layer runs on EP ranks (``rank`` in 0..EP-1)."""

    count: Expr


@dataclass(frozen=True)
class TensorDecl(Node):
    direction: str  # input | output | inout | scratch | window | signal
    name: str
    dtype: str
    dtype_span: Span
    shape: tuple[Expr, ...]
    manual_dep: bool


@dataclass(frozen=True)
class TaskIdDecl(Node):
    name: str


@dataclass(frozen=True)
class TaskRef(Node):
    path: tuple[str, ...]
    index: Expr | None


@dataclass(frozen=True)
class TaskDef(Node):
    name: str
    index: Expr | None
    spmd: Expr | None = None
    core: str | None = None
    core_span: Span | None = None
    after: tuple[TaskRef, ...] = ()
    early_resolve: bool = False
    sync_start: bool = False
    manual: bool = False
    predicate: Expr | None = None
    body: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class LayerFor(Node):
    var: str
    kind: str
    args: tuple[Expr, ...]
    body: tuple[LayerStmt, ...]


@dataclass(frozen=True)
class LayerIf(Node):
    cond: Expr
    then: tuple[LayerStmt, ...]
    orelse: tuple[LayerStmt, ...]


@dataclass(frozen=True)
class LayerCall(Node):
    alias: str
    layer: str
    layer_span: Span
    bindings: tuple[tuple[str, Expr | TaskRef, Span], ...]


LayerStmt = (
    ConstDef
    | AssertStmt
    | ScalarDecl
    | RanksDecl
    | TensorDecl
    | TaskIdDecl
    | TaskDef
    | LayerFor
    | LayerIf
    | LayerCall
)


@dataclass(frozen=True)
class Layer(Node):
    name: str
    params: tuple[Param, ...]
    body: tuple[LayerStmt, ...]


@dataclass(frozen=True)
class Module(Node):
    layers: tuple[Layer, ...] = field(default=())
