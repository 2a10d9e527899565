"""Expressions in task bodies: AST expressions -> IR values with their types.

Integers stay symbolic (``block``, loop indices, parameters, ``rank``); an integer computed
from tile data becomes a ``let`` of a dynamic value. Tile operands get a dtype and a
symbolic shape from the op's signature (``dsl.ops``), and a mismatch is reported at the
offending operand. A read of a tensor region is recorded as an access, like any other.
The statement half, and the names, loops and summaries it keeps, is
``dsl.elaborate_body.BodyElaborator``.
"""

from __future__ import annotations

from dsl import ast
from dsl.ops import SIGNATURES, OpTypeError, elementwise
from lowering import body as ir
from lowering.ir import DTYPES, INT_DTYPES
from lowering.source import Span
from lowering.symbolic import BLOCK, DYNAMIC, NRANKS, RANK, SCALAR, Const, Expr, Sym, binop

_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
INT_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "//": "//", "%": "%"}  # integer `/` is exact: `//`
_BOOL = ir.ScalarType("bool")
_SMALL_INTS = {v: ir.IntV(Const(v)) for v in range(-16, 1025)}  # shared: IntV and Const are immutable
_BUILTINS = {"block": Sym("block", BLOCK), "rank": Sym("rank", RANK), "nranks": Sym("nranks", NRANKS)}


class ExprElaboration:
    """The expression half of ``BodyElaborator`` (a mixin: it provides names, errors, records)."""

    def int_expr(self, e) -> Expr:
        value = self.value(e)
        if isinstance(value, ir.IntV):
            return value.expr
        vt = value.type
        if isinstance(vt, ir.ScalarType) and vt.dtype in INT_DTYPES + ("bool",):
            if isinstance(value, ir.LocalV):
                return Sym(value.name, DYNAMIC)
            self.temp += 1
            name = f"_v{self.temp}"
            self.pending.append(ir.LetS(name, value, e.span))
            return Sym(name, DYNAMIC)
        raise self.error("E309", e.span, f"expected an integer, got {vt}")

    def value(self, e) -> ir.Value:
        return EXPR_DISPATCH[type(e)](self, e)

    def expr_IntLit(self, e: ast.IntLit):
        v = _SMALL_INTS.get(e.value)
        return v if v is not None else ir.IntV(Const(e.value))

    def expr_BoolLit(self, e: ast.BoolLit):
        return ir.IntV(Const(int(e.value)), ir.ScalarType("bool"))

    def expr_FloatLit(self, e: ast.FloatLit):
        return ir.FloatV(e.value, span=e.span)

    def expr_ListLit(self, e: ast.ListLit):
        items = tuple(self.int_expr(i) for i in e.items)
        return ir.ListV(items, ir.ListType(len(items)))

    def expr_Name(self, e: ast.Name):
        bound = self.lookup(e.id)
        if bound is not None:
            kind, value = bound
            if kind == "int":
                return ir.IntV(value)
            return ir.LocalV(e.id, value)
        if e.id in self.names.ints:
            return ir.IntV(self.names.ints[e.id])
        if e.id in _BUILTINS:
            return ir.IntV(_BUILTINS[e.id])
        if e.id in self.names.scalars:
            return ir.IntV(Sym(e.id, SCALAR), ir.ScalarType(self.names.scalars[e.id]))
        if e.id in DTYPES:
            return ir.DtypeV(e.id)
        if e.id in self.names.tensors:
            raise self.error("E303", e.span, f"'{e.id}' is a tensor: index it, e.g. {e.id}[0:16, :]")
        raise self.error("E201", e.span, f"unknown name '{e.id}'")

    def expr_Unary(self, e: ast.Unary):
        operand = self.value(e.operand)
        if isinstance(operand, ir.IntV):
            op = "-" if e.op == "-" else "=="
            return ir.IntV(
                binop(op, Const(0), operand.expr) if op == "-" else binop("==", operand.expr, Const(0))
            )
        if e.op == "-" and isinstance(operand, ir.FloatV):  # a negative literal stays a literal
            return ir.FloatV(-operand.value, operand.type, span=e.span)
        if e.op == "-":
            return ir.CallV("neg", (operand,), (), operand.type)
        return ir.BinV("eq", operand, ir.IntV(Const(0)), ir.ScalarType("bool"))

    def _int_scalar(self, v: ir.Value, span: Span) -> ir.Value:
        """Runtime integer scalars become symbols, so index arithmetic on them stays affine."""
        if isinstance(v, ir.IntV):
            return v
        vt = v.type
        if not isinstance(vt, ir.ScalarType) or vt.dtype not in INT_DTYPES + ("bool",):
            return v
        if isinstance(v, ir.LocalV):
            return ir.IntV(Sym(v.name, DYNAMIC), vt)
        self.temp += 1
        name = f"_v{self.temp}"
        self.pending.append(ir.LetS(name, v, span))
        return ir.IntV(Sym(name, DYNAMIC), vt)

    def expr_Binary(self, e: ast.Binary):
        a, b = self.value(e.left), self.value(e.right)
        if type(a) is ir.IntV and type(b) is ir.IntV:  # fast path: index arithmetic
            rtype = _BOOL if e.op in _COMPARE or e.op in ("and", "or") else a.type
            return ir.IntV(binop(INT_OPS.get(e.op, e.op), a.expr, b.expr), rtype)
        if isinstance(a, ir.IntV | ir.LocalV | ir.LoadV | ir.CallV) and isinstance(
            b, ir.IntV | ir.LocalV | ir.LoadV | ir.CallV
        ):
            a2, b2 = self._int_scalar(a, e.left.span), self._int_scalar(b, e.right.span)
            if isinstance(a2, ir.IntV) and isinstance(b2, ir.IntV):
                a, b = a2, b2
        if isinstance(a, ir.IntV) and isinstance(b, ir.IntV):
            op = INT_OPS.get(e.op, e.op)
            rtype = ir.ScalarType("bool") if e.op in _COMPARE or e.op in ("and", "or") else a.type
            return ir.IntV(binop(op, a.expr, b.expr), rtype)
        for side, v in (("left", a), ("right", b)):
            if isinstance(v.type, ir.DtypeType | ir.ListType):
                raise self.error(
                    "E303", (e.left if side == "left" else e.right).span, f"cannot use a {v.type} here"
                )
        try:
            rtype = elementwise(a.type, b.type)
        except OpTypeError as err:
            raise self.error(
                err.code, e.span, f"'{e.op}': {err}", "use cast()" if err.code == "E302" else None
            ) from None
        if isinstance(rtype, ir.TileType):
            self.result.units.add("vector")
        if e.op in _COMPARE or e.op in ("and", "or"):
            rtype = (
                ir.TileType("bool", rtype.shape) if isinstance(rtype, ir.TileType) else ir.ScalarType("bool")
            )
            return ir.BinV(_COMPARE.get(e.op, e.op), a, b, rtype)
        op = _ARITH[e.op]
        if op == "div" and rtype.dtype in INT_DTYPES:
            op = "floordiv"  # `/` on integers is floor division, as in the language's index arithmetic
        return ir.BinV(op, a, b, rtype)

    def expr_Access(self, e: ast.Access):
        bound = self.lookup(e.name)
        if bound is not None and bound[0] == "var" and isinstance(bound[1], ir.TileType):
            tile = bound[1]
            if len(e.subscripts) != len(tile.shape):
                raise self.error("E304", e.span, f"'{e.name}' has {len(tile.shape)} dims")
            region, vtype = self.ranges(e.subscripts, tile.shape, tile.dtype)
            return ir.LoadV(e.name, region, vtype, local=True)
        tensor = self.tensor(e)
        region, vtype = self.region(e, tensor)
        self._record(tensor, region, "read", e.span, written=e.name)
        return ir.LoadV(tensor.name, region, vtype)

    def expr_Call(self, e: ast.Call):
        sig = SIGNATURES.get(e.func)
        if sig is None:
            raise self.error(
                "E306", e.span, f"unknown operation '{e.func}'", "see docs/language.md for the op list"
            )
        args: list[ir.Value] = []
        attrs: dict[str, ir.Value] = {}
        for a in e.args:
            if isinstance(a, ast.Name) and a.id in sig.flags and self.lookup(a.id) is None:
                attrs[a.id] = ir.IntV(Const(1), ir.ScalarType("bool"))
            else:
                args.append(self.value(a))
        for key, val in e.kwargs:
            if key not in sig.kwargs:
                raise self.error("E306", val.span, f"{e.func}() has no option '{key}'")
            attrs[key] = self.value(val)
        if not sig.min_args <= len(args) <= sig.max_args:
            want = sig.min_args if sig.min_args == sig.max_args else f"{sig.min_args} to {sig.max_args}"
            raise self.error("E306", e.span, f"{e.func}() takes {want} arguments, got {len(args)}")
        if e.func in ("min", "max", "cdiv") and all(isinstance(a, ir.IntV) for a in args):
            return ir.IntV(binop(e.func, args[0].expr, args[1].expr))
        extra = self._op_extras(e, args)
        try:
            rtype = sig.rule([a.type for a in args], {**attrs, **extra})
        except OpTypeError as err:
            span = e.args[err.arg].span if err.arg is not None and err.arg < len(e.args) else e.span
            raise self.error(err.code, span, f"{e.func}(): {err}") from None
        self.result.ops.add(e.func)
        if sig.unit != "none":
            self.result.units.add(sig.unit)
        return ir.CallV(e.func, tuple(args), tuple(sorted(attrs.items())), rtype)

    def _op_extras(self, e: ast.Call, args: list[ir.Value]) -> dict:
        extra: dict = {}
        if e.func in ("zeros", "full") and len(args) >= 2:
            if isinstance(args[0], ir.DtypeV) and isinstance(args[1], ir.ListV):
                extra["_result"] = ir.TileType(args[0].dtype, args[1].items)
        if e.func == "cast" and len(args) == 2 and isinstance(args[1], ir.DtypeV):
            extra["_dtype"] = args[1].dtype
        if e.func == "topk_pairs" and len(args) == 2 and isinstance(args[1], ir.IntV):
            extra["_k"] = binop("*", Const(2), args[1].expr)
        if e.func == "odd_lanes":
            extra["_dtype"] = "i32"  # odd lanes of a sorted pairs row hold the index payloads
        if e.func == "topk" and len(args) == 2 and isinstance(args[1], ir.IntV):
            extra["_k"] = binop("*", Const(2), args[1].expr)
        return extra

    def expr_ReduceSum(self, e: ast.ReduceSum):
        raise self.error("E405", e.span, "reduce_sum is only allowed as the value of a task's last store")


# A dict lookup by node type is much cheaper than ``getattr`` by name on the hot path of large
# task arrays.
EXPR_DISPATCH = {
    getattr(ast, name[5:]): f
    for name, f in vars(ExprElaboration).items()
    if name.startswith("expr_") and hasattr(ast, name[5:])
}
