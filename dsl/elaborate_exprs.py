"""Expressions in task bodies: AST expressions -> IR values with their types.

Integers stay symbolic (``block``, loop indices, parameters, ``rank``); an integer computed
from tile data becomes a ``let`` of a dynamic value. Tile operands get a dtype and a
symbolic shape from the op's signature (``dsl.ops``), and a mismatch is reported at the
offending operand. A read of a tensor region is recorded as an access, like any other
(``dsl.elaborate_summary``). The :class:`ExprElaborator` also owns what expressions resolve
against: the body's local names (bound by ``let`` and loops), the ``let`` temporaries it
introduces, and the regions of tensor subscripts, which stores use too. The statements are
``dsl.elaborate_body.BodyElaborator``, which composes an ExprElaborator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dsl import ast
from dsl.codes import diag
from dsl.elaborate_summary import BodySummary
from dsl.ops import SIGNATURES, OpTypeError, elementwise
from lowering import body as ir_body
from lowering.ir import DTYPES, INT_DTYPES, Tensor
from lowering.source import Diagnostic, Span
from lowering.symbolic import BLOCK, DYNAMIC, NRANKS, RANK, SCALAR, Const, Expr, Sym, binop, difference

_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
INT_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "//": "//", "%": "%"}  # integer `/` is exact: `//`
_BOOL = ir_body.ScalarType("bool")
_SMALL_INTS = {v: ir_body.IntV(Const(v)) for v in range(-16, 1025)}  # shared: IntV and Const are immutable
_BUILTINS = {"block": Sym("block", BLOCK), "rank": Sym("rank", RANK), "nranks": Sym("nranks", NRANKS)}
_ZERO, _ONE = Const(0), Const(1)
_FULL_RANGES: dict[Expr, tuple] = {}  # dim -> (Range, extent) of `:` over it (immutable, shared)
_POINT_RANGES: dict[Const, ir_body.Range] = {}  # constant index -> its point Range (immutable, shared)


class BodyAbort(Exception):
    """Stops elaborating the current statement after a diagnostic was recorded."""


@dataclass
class LayerNames:
    """What a task body can see of its layer."""

    ints: dict[str, Expr]  # parameters, constants, layer loop variables
    tensors: dict[str, Tensor]  # by source name (already renamed for called layers)
    scalars: dict[str, str]  # runtime scalar -> dtype
    nranks: Expr
    prefix: str = ""  # the call path of the layer instance ("dispatch."), "" at the root


class ExprElaborator:
    """Elaborates the expressions of one task body against ``names`` and its local scopes;
    reads go to ``summary``, diagnostics to ``report``."""

    def __init__(self, names: LayerNames, report: Callable[[Diagnostic], None], summary: BodySummary) -> None:
        self.names = names
        self.report = report
        self.summary = summary
        self.result = summary.result  # ops and units the expressions use
        self.scopes: list[dict[str, tuple[str, object]]] = [{}]
        self.pending: list[ir_body.Stmt] = []  # lets of the temporaries, emitted before the statement
        self.temp = 0

    def error(self, code: str, span: Span, message: str, hint: str | None = None) -> BodyAbort:
        """Report an error; the caller raises the returned :class:`BodyAbort`."""
        self.report(diag(code, span, message, hint=hint))
        return BodyAbort()

    # ------------------------------------------------------------ names
    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def bind(self, name: str, kind: str, value: object, span: Span) -> None:
        if self.lookup(name) is not None or name in self.names.ints or name in self.names.tensors:
            raise self.error("E202", span, f"'{name}' is already defined", "choose another name")
        self.scopes[-1][name] = (kind, value)

    # ------------------------------------------------------------ expressions

    def int_expr(self, e) -> Expr:
        value = self._int_scalar(self.value(e), e.span)
        if isinstance(value, ir_body.IntV):
            return value.expr
        raise self.error("E309", e.span, f"expected an integer, got {value.type}")

    def value(self, e) -> ir_body.Value:
        return EXPR_DISPATCH[type(e)](self, e)

    def expr_IntLit(self, e: ast.IntLit):
        v = _SMALL_INTS.get(e.value)
        return v if v is not None else ir_body.IntV(Const(e.value))

    def expr_BoolLit(self, e: ast.BoolLit):
        return ir_body.IntV(Const(int(e.value)), ir_body.ScalarType("bool"))

    def expr_FloatLit(self, e: ast.FloatLit):
        return ir_body.FloatV(e.value, span=e.span)

    def expr_ListLit(self, e: ast.ListLit):
        items = tuple(self.int_expr(i) for i in e.items)
        return ir_body.ListV(items, ir_body.ListType(len(items)))

    def expr_Name(self, e: ast.Name):
        bound = self.lookup(e.id)
        if bound is not None:
            kind, value = bound
            if kind == "int":
                return ir_body.IntV(value)
            return ir_body.LocalV(e.id, value)
        if e.id in self.names.ints:
            return ir_body.IntV(self.names.ints[e.id])
        if e.id in _BUILTINS:
            return ir_body.IntV(_BUILTINS[e.id])
        if e.id in self.names.scalars:
            return ir_body.IntV(Sym(e.id, SCALAR), ir_body.ScalarType(self.names.scalars[e.id]))
        if e.id in DTYPES:
            return ir_body.DtypeV(e.id)
        if e.id in self.names.tensors:
            raise self.error("E303", e.span, f"'{e.id}' is a tensor: index it, e.g. {e.id}[0:16, :]")
        raise self.error("E201", e.span, f"unknown name '{e.id}'")

    def expr_Unary(self, e: ast.Unary):
        operand = self.value(e.operand)
        if isinstance(operand, ir_body.IntV):
            op = "-" if e.op == "-" else "=="
            return ir_body.IntV(
                binop(op, Const(0), operand.expr) if op == "-" else binop("==", operand.expr, Const(0))
            )
        if e.op == "-" and isinstance(operand, ir_body.FloatV):  # a negative literal stays a literal
            return ir_body.FloatV(-operand.value, operand.type, span=e.span)
        if e.op == "-":
            return ir_body.CallV("neg", (operand,), (), operand.type)
        return ir_body.BinV("eq", operand, ir_body.IntV(Const(0)), ir_body.ScalarType("bool"))

    def _int_scalar(self, v: ir_body.Value, span: Span) -> ir_body.Value:
        """Runtime integer scalars become symbols, so index arithmetic on them stays affine."""
        if isinstance(v, ir_body.IntV):
            return v
        vt = v.type
        if not isinstance(vt, ir_body.ScalarType) or vt.dtype not in INT_DTYPES + ("bool",):
            return v
        if isinstance(v, ir_body.LocalV):
            return ir_body.IntV(Sym(v.name, DYNAMIC), vt)
        self.temp += 1
        name = f"{ir_body.TEMP_PREFIX}{self.temp}"
        self.pending.append(ir_body.LetS(name, v, span))
        return ir_body.IntV(Sym(name, DYNAMIC), vt)

    def expr_Binary(self, e: ast.Binary):
        a, b = self.value(e.left), self.value(e.right)
        if type(a) is ir_body.IntV and type(b) is ir_body.IntV:  # fast path: index arithmetic
            rtype = _BOOL if e.op in _COMPARE or e.op in ("and", "or") else a.type
            return ir_body.IntV(binop(INT_OPS.get(e.op, e.op), a.expr, b.expr), rtype)
        if isinstance(a, ir_body.IntV | ir_body.LocalV | ir_body.LoadV | ir_body.CallV) and isinstance(
            b, ir_body.IntV | ir_body.LocalV | ir_body.LoadV | ir_body.CallV
        ):
            a2, b2 = self._int_scalar(a, e.left.span), self._int_scalar(b, e.right.span)
            if isinstance(a2, ir_body.IntV) and isinstance(b2, ir_body.IntV):
                a, b = a2, b2
        if isinstance(a, ir_body.IntV) and isinstance(b, ir_body.IntV):
            op = INT_OPS.get(e.op, e.op)
            rtype = ir_body.ScalarType("bool") if e.op in _COMPARE or e.op in ("and", "or") else a.type
            return ir_body.IntV(binop(op, a.expr, b.expr), rtype)
        for side, v in (("left", a), ("right", b)):
            if isinstance(v.type, ir_body.DtypeType | ir_body.ListType):
                raise self.error(
                    "E303", (e.left if side == "left" else e.right).span, f"cannot use a {v.type} here"
                )
        try:
            rtype = elementwise(a.type, b.type)
        except OpTypeError as err:
            raise self.error(
                err.code, e.span, f"'{e.op}': {err}", "use cast()" if err.code == "E302" else None
            ) from None
        if isinstance(rtype, ir_body.TileType):
            self.result.units.add("vector")
        if e.op in _COMPARE or e.op in ("and", "or"):
            rtype = (
                ir_body.TileType("bool", rtype.shape)
                if isinstance(rtype, ir_body.TileType)
                else ir_body.ScalarType("bool")
            )
            return ir_body.BinV(_COMPARE.get(e.op, e.op), a, b, rtype)
        op = _ARITH[e.op]
        if op == "div" and rtype.dtype in INT_DTYPES:
            op = "floordiv"  # `/` on integers is floor division, as in the language's index arithmetic
        return ir_body.BinV(op, a, b, rtype)

    def expr_Access(self, e: ast.Access):
        bound = self.lookup(e.name)
        if bound is not None and bound[0] == "var" and isinstance(bound[1], ir_body.TileType):
            tile = bound[1]
            if len(e.subscripts) != len(tile.shape):
                raise self.error("E304", e.span, f"'{e.name}' has {len(tile.shape)} dims")
            region, vtype = self.ranges(e.subscripts, tile.shape, tile.dtype)
            return ir_body.LoadV(e.name, region, vtype, local=True)
        tensor = self.tensor(e)
        region, vtype = self.region(e, tensor)
        self.summary.access(tensor, region, "read", e.span, written=e.name)
        return ir_body.LoadV(tensor.name, region, vtype)

    def expr_Call(self, e: ast.Call):
        sig = SIGNATURES.get(e.func)
        if sig is None:
            raise self.error(
                "E306", e.span, f"unknown operation '{e.func}'", "see docs/language.md for the op list"
            )
        args: list[ir_body.Value] = []
        attrs: dict[str, ir_body.Value] = {}
        for a in e.args:
            if isinstance(a, ast.Name) and a.id in sig.flags and self.lookup(a.id) is None:
                attrs[a.id] = ir_body.IntV(Const(1), ir_body.ScalarType("bool"))
            else:
                args.append(self.value(a))
        for key, val in e.kwargs:
            if key not in sig.kwargs:
                raise self.error("E306", val.span, f"{e.func}() has no option '{key}'")
            attrs[key] = self.value(val)
        if not sig.min_args <= len(args) <= sig.max_args:
            want = sig.min_args if sig.min_args == sig.max_args else f"{sig.min_args} to {sig.max_args}"
            raise self.error("E306", e.span, f"{e.func}() takes {want} arguments, got {len(args)}")
        if e.func in ("min", "max", "cdiv") and all(isinstance(a, ir_body.IntV) for a in args):
            return ir_body.IntV(binop(e.func, args[0].expr, args[1].expr))
        extra = self._op_extras(e, args)
        try:
            rtype = sig.rule([a.type for a in args], {**attrs, **extra})
        except OpTypeError as err:
            span = e.args[err.arg].span if err.arg is not None and err.arg < len(e.args) else e.span
            raise self.error(err.code, span, f"{e.func}(): {err}") from None
        self.result.ops.add(e.func)
        if sig.unit != "none":
            self.result.units.add(sig.unit)
        return ir_body.CallV(e.func, tuple(args), tuple(sorted(attrs.items())), rtype)

    def _op_extras(self, e: ast.Call, args: list[ir_body.Value]) -> dict:
        extra: dict = {}
        if e.func in ("zeros", "full") and len(args) >= 2:
            if isinstance(args[0], ir_body.DtypeV) and isinstance(args[1], ir_body.ListV):
                extra["_result"] = ir_body.TileType(args[0].dtype, args[1].items)
        if e.func == "cast" and len(args) == 2 and isinstance(args[1], ir_body.DtypeV):
            extra["_dtype"] = args[1].dtype
        if e.func == "topk_pairs" and len(args) == 2 and isinstance(args[1], ir_body.IntV):
            extra["_k"] = binop("*", Const(2), args[1].expr)
        if e.func == "odd_lanes":
            extra["_dtype"] = "i32"  # odd lanes of a sorted pairs row hold the index payloads
        if e.func == "topk" and len(args) == 2 and isinstance(args[1], ir_body.IntV):
            extra["_k"] = binop("*", Const(2), args[1].expr)
        return extra

    def expr_ReduceSum(self, e: ast.ReduceSum):
        raise self.error("E405", e.span, "reduce_sum is only allowed as the value of a task's last store")

    # ------------------------------------------------------------ tensors and regions
    def tensor(self, access: ast.Access) -> Tensor:
        tensor = self.names.tensors.get(access.name)
        if tensor is None:
            raise self.error("E201", access.name_span, f"unknown tensor '{access.name}'")
        return tensor

    def region(self, access: ast.Access, tensor: Tensor) -> tuple[tuple[ir_body.Range, ...], ir_body.Type]:
        if len(access.subscripts) != len(tensor.shape):
            raise self.error(
                "E304",
                access.span,
                f"'{access.name}' has {len(tensor.shape)} dims "
                f"but {len(access.subscripts)} subscripts were given",
            )
        return self.ranges(access.subscripts, tensor.shape, tensor.dtype)

    def ranges(
        self, subscripts, shape: tuple[Expr, ...], dtype: str
    ) -> tuple[tuple[ir_body.Range, ...], ir_body.Type]:
        ranges, extents, all_points = [], [], True
        for sub, dim in zip(subscripts, shape, strict=True):
            if type(sub) is ast.Slice:
                all_points = False
                if sub.start is None and sub.stop is None and sub.step is None:  # `:`, shared
                    full = _FULL_RANGES.get(dim)
                    if full is None:
                        if len(_FULL_RANGES) > 4096:
                            _FULL_RANGES.clear()
                        full = _FULL_RANGES[dim] = (ir_body.Range(_ZERO, dim, _ONE), difference(dim, _ZERO))
                    ranges.append(full[0])
                    extents.append(full[1])
                    continue
                start = self.int_expr(sub.start) if sub.start is not None else _ZERO
                stop = self.int_expr(sub.stop) if sub.stop is not None else dim
                step = self.int_expr(sub.step) if sub.step is not None else _ONE
                if type(step) is Const and step.value <= 0:
                    raise self.error("E404", sub.step.span, "slice step must be positive")
                ranges.append(ir_body.Range(start, stop, step))
                extent = difference(stop, start)
                extents.append(extent if step == _ONE else binop("cdiv", extent, step))
            else:
                index = self.int_expr(sub)
                point = _POINT_RANGES.get(index) if type(index) is Const else None
                if point is None:
                    point = ir_body.Range(index, binop("+", index, _ONE), _ONE, point=True)
                    if type(index) is Const:
                        if len(_POINT_RANGES) > 65536:
                            _POINT_RANGES.clear()
                        _POINT_RANGES[index] = point
                ranges.append(point)
                extents.append(_ONE)
        vtype = ir_body.ScalarType(dtype) if all_points else ir_body.TileType(dtype, tuple(extents))
        return tuple(ranges), vtype


# A dict lookup by node type is much cheaper than ``getattr`` by name on the hot path of large
# task arrays.
EXPR_DISPATCH = {
    getattr(ast, name[5:]): f
    for name, f in vars(ExprElaborator).items()
    if name.startswith("expr_") and hasattr(ast, name[5:])
}
