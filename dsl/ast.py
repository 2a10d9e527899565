"""Typed AST of the dslc language. Every node carries the span it was parsed from."""

from __future__ import annotations

from collections.abc import Iterator
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


@dataclass(frozen=True)
class ReduceSum(Node):
    """``reduce_sum s in range(S) { ...; return partial }``: an ordered split-K reduction.

    Lowered before elaboration (``dsl/sugar/reduce_sum.py``) into disjoint per-split partial
    buffers and a task that sums the splits in ascending order.
    """

    var: str
    args: tuple[Expr, ...]
    body: tuple[Stmt, ...]


Expr = IntLit | FloatLit | BoolLit | Name | Unary | Binary | Access | Call | ListLit | ReduceSum

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
class Return(Node):
    """The value of a ``reduce_sum`` body (only allowed there)."""

    value: Expr


@dataclass(frozen=True)
class ExprStmt(Node):
    call: Call


Stmt = (
    Let | Assign | Store | Accumulate | For | If | RemoteStore | Notify | Wait | Barrier | ExprStmt | Return
)

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
    """``golden "hc_pre_golden.py"``: a NumPy reference beside the source (see docs/golden.md)."""

    path: str


@dataclass(frozen=True)
class ReductionDecl(Node):
    """``reduction sq_sum: splits RMS_OK, chunks 2``: the summation tree of hand-written split
    partials and their ascending reduce into ``tensor`` (rule N203 compares it with the
    golden's). The reduce_sum lowering attaches one to the reducing task it generates."""

    tensor: str
    tensor_span: Span
    splits: Expr
    chunks: Expr | None


@dataclass(frozen=True)
class ScalarDef(Node):
    """``scalar max_visible_cmp = (start_pos + num_tokens) / 4``: a host value derived from
    runtime scalars; usable in guards, shapes of checks and task bodies (inlined there)."""

    name: str
    value: Expr


@dataclass(frozen=True)
class GuardStmt(Node):
    """``guard cond, "message"``: a host-side check on runtime scalars; requests where
    ``cond`` is false are refused before launch (the ``build_tensor_specs`` guards)."""

    cond: Expr
    message: str | None


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
    previous: bool = False  # ``prev(t)``: t's instance of the previous round


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
    reduction: ReductionDecl | None = None  # set by the reduce_sum lowering on its reducer


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
    | ScalarDef
    | GuardStmt
    | RanksDecl
    | ReductionDecl
    | TensorDecl
    | TaskIdDecl
    | TaskDef
    | LayerFor
    | LayerIf
    | LayerCall
)


def layer_stmts(stmts: tuple[LayerStmt, ...]) -> Iterator[LayerStmt]:
    """Every statement of a layer body, those under layer-level ``for`` and ``if`` included, in
    source order."""
    for s in stmts:
        yield s
        if isinstance(s, LayerFor):
            yield from layer_stmts(s.body)
        elif isinstance(s, LayerIf):
            yield from layer_stmts(s.then)
            yield from layer_stmts(s.orelse)


def body_stmts(stmts: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement of a task body, those inside loops and branches included, in source order."""
    for s in stmts:
        yield s
        if isinstance(s, For):
            yield from body_stmts(s.body)
        elif isinstance(s, If):
            yield from body_stmts(s.then)
            yield from body_stmts(s.orelse)


@dataclass(frozen=True)
class Layer(Node):
    name: str
    params: tuple[Param, ...]
    body: tuple[LayerStmt, ...]


@dataclass(frozen=True)
class Module(Node):
    layers: tuple[Layer, ...] = field(default=())


_PRECEDENCE = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4}
_PRECEDENCE.update({"+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6})


def expr_text(e: Expr, parent: int = 0) -> str:
    """Source-like text of an expression (for messages: ``WIN + max_visible_cmp <= PAD``)."""
    if isinstance(e, IntLit):
        return str(e.value)
    if isinstance(e, FloatLit):
        return e.text
    if isinstance(e, BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, Name):
        return e.id
    if isinstance(e, Unary):
        inner = expr_text(e.operand, 7)
        return f"-{inner}" if e.op == "-" else f"not {inner}"
    if isinstance(e, Binary):
        prec = _PRECEDENCE.get(e.op, 3)
        text = f"{expr_text(e.left, prec)} {e.op} {expr_text(e.right, prec + 1)}"
        return f"({text})" if prec < parent else text
    if isinstance(e, Call):
        args = [expr_text(a) for a in e.args] + [f"{k}={expr_text(v)}" for k, v in e.kwargs]
        return f"{e.func}({', '.join(args)})"
    if isinstance(e, Access):
        subs = []
        for sub in e.subscripts:
            if isinstance(sub, Slice):
                parts = [expr_text(x) if x is not None else "" for x in (sub.start, sub.stop)]
                subs.append(":".join(parts) + (f":{expr_text(sub.step)}" if sub.step is not None else ""))
            else:
                subs.append(expr_text(sub))
        return f"{e.name}[{', '.join(subs)}]"
    if isinstance(e, ListLit):
        return "[" + ", ".join(expr_text(i) for i in e.items) + "]"
    return "?"
