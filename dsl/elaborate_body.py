"""Task bodies: AST statements -> IR statements, with the access and signal summaries.

Integer arithmetic on parameters, ``block``, loop indices and ``rank`` stays symbolic
(integer ``let``s that are never reassigned are inlined), so every region is an affine
form the checks can bound. Tile values get a dtype and a symbolic shape; mismatches are
reported with the span of the offending operand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dsl import ast
from dsl.codes import diag
from dsl.ops import SIGNATURES, OpTypeError, elementwise, shape_text
from lowering import body as ir
from lowering.ir import DTYPES, INT_DTYPES, Access, BarrierOp, Condition, Loop, SignalOp, Tensor
from lowering.source import Diagnostic, Span
from lowering.symbolic import (
    BLOCK,
    DYNAMIC,
    LOOP,
    NRANKS,
    RANK,
    SCALAR,
    Const,
    Expr,
    Sym,
    binop,
    difference,
)

_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod"}
_COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_INT_OP = {"+": "+", "-": "-", "*": "*", "/": "//", "//": "//", "%": "%"}
_ZERO, _ONE = Const(0), Const(1)
_FULL_RANGES: dict[Expr, tuple] = {}  # dim -> (Range, extent) of `:` over it (immutable, shared)
_POINT_RANGES: dict[Const, ir.Range] = {}  # constant index -> its point Range (immutable, shared)
_BOOL = ir.ScalarType("bool")
_SMALL_INTS = {v: ir.IntV(Const(v)) for v in range(-16, 1025)}  # shared: IntV and Const are immutable
_BUILTINS = {"block": Sym("block", BLOCK), "rank": Sym("rank", RANK), "nranks": Sym("nranks", NRANKS)}


class _Abort(Exception):
    """Stops elaborating the current statement after a diagnostic was recorded."""


@dataclass
class LayerNames:
    """What a task body can see of its layer."""

    ints: dict[str, Expr]  # parameters, constants, layer loop variables
    tensors: dict[str, Tensor]  # by source name (already renamed for called layers)
    scalars: dict[str, str]  # runtime scalar -> dtype
    nranks: Expr


@dataclass
class BodyResult:
    body: tuple[ir.Stmt, ...]
    accesses: list[Access] = field(default_factory=list)
    signals: list[SignalOp] = field(default_factory=list)
    barriers: list[BarrierOp] = field(default_factory=list)
    ops: set[str] = field(default_factory=set)
    units: set[str] = field(default_factory=set)


def _assigned_names(stmts) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.Assign):
            out.add(s.name)
        elif isinstance(s, ast.For):
            out |= _assigned_names(s.body)
        elif isinstance(s, ast.If):
            out |= _assigned_names(s.then) | _assigned_names(s.orelse)
    return out


class BodyElaborator:
    def __init__(self, names: LayerNames, report: Callable[[Diagnostic], None]):
        self.names = names
        self.report = report
        self.scopes: list[dict[str, tuple[str, object]]] = [{}]
        self.loops: list[Loop] = []
        self.conds: list[Condition] = []
        self.order = 0
        self.pending: list[ir.Stmt] = []
        self.temp = 0
        self.result = BodyResult(())
        self.reassigned: set[str] = set()

    # ------------------------------------------------------------ entry point
    def run(self, stmts: tuple[ast.Stmt, ...]) -> BodyResult:
        self.reassigned = _assigned_names(stmts)
        self.result.body = self.block(stmts)
        return self.result

    def error(self, code: str, span: Span, message: str, hint: str | None = None) -> _Abort:
        self.report(diag(code, span, message, hint=hint))
        return _Abort()

    def _next(self) -> int:
        self.order += 1
        return self.order

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

    # ------------------------------------------------------------ statements
    def block(self, stmts) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        self.scopes.append({})
        try:
            for s in stmts:
                try:
                    st = self.stmt(s)
                except _Abort:
                    st = None
                out.extend(self.pending)
                self.pending = []
                if st is not None:
                    out.append(st)
        finally:
            self.scopes.pop()
        return tuple(out)

    def stmt(self, s: ast.Stmt) -> ir.Stmt | None:
        return _STMT[type(s)](self, s)

    def stmt_Let(self, s: ast.Let):
        value = self.value(s.value)
        if isinstance(value, ir.IntV) and s.name not in self.reassigned:
            self.bind(s.name, "int", value.expr, s.span)
            return None
        if isinstance(value.type, ir.DtypeType | ir.ListType):
            raise self.error("E303", s.value.span, "a let binds a tile or a scalar, not a dtype or a list")
        self.bind(s.name, "var", value.type, s.span)
        return ir.LetS(s.name, value, s.span)

    def stmt_Assign(self, s: ast.Assign):
        bound = self.lookup(s.name)
        if bound is None:
            hint = f"declare it first: let {s.name} = ..."
            raise self.error("E201", s.span, f"'{s.name}' is not a local variable", hint)
        kind, declared = bound
        if kind != "var":
            raise self.error("E202", s.span, f"'{s.name}' cannot be reassigned")
        value = self.value(s.value)
        self._check_same_type(declared, value.type, s.value.span, f"'{s.name}'")
        return ir.AssignS(s.name, value, s.span)

    def _check_same_type(self, want, got, span: Span, what: str) -> None:
        if isinstance(want, ir.TileType) and isinstance(got, ir.TileType):
            if want.dtype != got.dtype:
                raise self.error(
                    "E302", span, f"{what} is {want.dtype} but the value is {got.dtype}", "use cast()"
                )
            try:
                elementwise(want, got)
            except OpTypeError as err:
                raise self.error(err.code, span, f"{what}: {err}") from None
        elif isinstance(want, ir.ScalarType) and isinstance(got, ir.TileType):
            raise self.error("E303", span, f"{what} is a scalar but the value is a tile {got}")
        elif isinstance(want, ir.TileType) and isinstance(got, ir.ScalarType):
            return  # scalar broadcast into a tile

    def stmt_Store(self, s: ast.Store):
        return self._store(s.target, s.value, "write", s.span)

    def stmt_Accumulate(self, s: ast.Accumulate):
        return self._store(s.target, s.value, "atomic" if s.atomic else "accumulate", s.span)

    def _store(self, target: ast.Access, value_ast, mode: str, span: Span):
        tensor = self.tensor(target)
        if tensor.kind == "input":
            raise self.error(
                "E307",
                target.name_span,
                f"'{target.name}' is an input and cannot be written",
                "declare it inout",
            )
        if tensor.kind == "signal":
            raise self.error("E308", target.name_span, f"'{target.name}' is a signal: use notify", None)
        region, vtype = self.region(target, tensor)
        value = self.value(value_ast)
        self._check_store(tensor, vtype, value, value_ast.span)
        if mode == "accumulate":
            self._record(tensor, region, "read", target.span)
        self._record(tensor, region, "atomic" if mode == "atomic" else "write", target.span)
        return ir.StoreS(tensor.name, region, value, mode, span)

    def _check_store(self, tensor: Tensor, target_type, value, span: Span) -> None:
        vt = value.type
        if isinstance(vt, ir.TileType | ir.ScalarType) and vt.dtype != tensor.dtype:
            if not (isinstance(value, ir.IntV | ir.FloatV)):
                raise self.error(
                    "E302",
                    span,
                    f"storing {vt.dtype} into {tensor.dtype} tensor '{tensor.name}'",
                    "use cast()",
                )
        if isinstance(vt, ir.TileType):
            if not isinstance(target_type, ir.TileType):
                raise self.error("E303", span, f"storing a tile {vt} into one element of '{tensor.name}'")
            try:
                elementwise(ir.TileType(vt.dtype, target_type.shape), vt)
            except OpTypeError:
                raise self.error(
                    "E303",
                    span,
                    f"value shape {shape_text(vt.shape)} does not match the region "
                    f"{shape_text(target_type.shape)} of '{tensor.name}'",
                ) from None

    def stmt_RemoteStore(self, s: ast.RemoteStore):
        tensor = self.tensor(s.target)
        if tensor.kind != "window":
            raise self.error(
                "E308", s.target.name_span, f"remote_store writes a window; '{tensor.name}' is {tensor.kind}"
            )
        region, vtype = self.region(s.target, tensor)
        peer = self.int_expr(s.peer)
        value = self.value(s.value)
        self._check_store(tensor, vtype, value, s.value.span)
        self._record(tensor, region, "atomic" if s.atomic else "write", s.target.span, peer=peer)
        return ir.RemoteStoreS(tensor.name, region, peer, value, s.atomic, s.span)

    def _signal_cell(self, cell: ast.Access) -> tuple[Tensor, tuple[Expr, ...]]:
        tensor = self.tensor(cell)
        if tensor.kind != "signal":
            article = "an" if tensor.kind[0] in "aeiou" else "a"
            raise self.error(
                "E308", cell.name_span, f"'{cell.name}' is {article} {tensor.kind} tensor, not a signal"
            )
        if len(cell.subscripts) != len(tensor.shape):
            raise self.error(
                "E304",
                cell.span,
                f"'{cell.name}' has {len(tensor.shape)} dims, got {len(cell.subscripts)} subscripts",
            )
        index = []
        for sub in cell.subscripts:
            if isinstance(sub, ast.Slice):
                raise self.error("E304", sub.span, "a signal cell is one element: use an index, not a slice")
            index.append(self.int_expr(sub))
        return tensor, tuple(index)

    def stmt_Notify(self, s: ast.Notify):
        tensor, index = self._signal_cell(s.cell)
        peer, value = self.int_expr(s.peer), self.int_expr(s.value)
        self.result.signals.append(
            SignalOp(
                "notify", tensor.name, index, tuple(self.loops), tuple(self.conds), s.span, self._next(),
                peer=peer, op=s.op, value=value,
            )
        )  # fmt: skip
        return ir.NotifyS(tensor.name, index, peer, s.op, value, s.span)

    def stmt_Wait(self, s: ast.Wait):
        tensor, index = self._signal_cell(s.cell)
        expected = self.int_expr(s.expected)
        self.result.signals.append(
            SignalOp(
                "wait", tensor.name, index, tuple(self.loops), tuple(self.conds), s.span, self._next(),
                cmp=s.cmp, expected=expected,
            )
        )  # fmt: skip
        return ir.WaitS(tensor.name, index, s.cmp, expected, s.span)

    def stmt_Barrier(self, s: ast.Barrier):
        self.result.barriers.append(
            BarrierOp(s.soft, tuple(self.loops), tuple(self.conds), s.span, self._next())
        )
        return ir.BarrierS(s.soft, s.span)

    def stmt_ExprStmt(self, s: ast.ExprStmt):
        call = s.call
        if call.func == "read" and len(call.args) == 1 and isinstance(call.args[0], ast.Access):
            target = call.args[0]
            if self.lookup(target.name) is None:
                tensor = self.tensor(target)
                region, vtype = self.region(target, tensor)
                self._record(tensor, region, "anchor", target.span)
                return ir.EvalS(ir.CallV("read", (ir.LoadV(tensor.name, region, vtype),), (), vtype), s.span)
        return ir.EvalS(self.value(call), s.span)

    def stmt_For(self, s: ast.For):
        start, stop, step = self.loop_bounds(s.args, s.span)
        stages = 1
        for key, val in s.kwargs:
            if key == "stages" and s.kind == "pipeline":
                stages_expr = self.int_expr(val)
                if not isinstance(stages_expr, Const) or stages_expr.value < 1:
                    raise self.error("E404", val.span, "stages must be a positive integer literal")
                stages = stages_expr.value
            else:
                raise self.error("E404", val.span, f"unknown loop option '{key}'")
        loop = Loop(s.var, start, stop, step, s.kind, s.span)
        header, self.pending = self.pending, []  # temporaries of the bounds go before the loop
        self.scopes.append({})
        self.bind(s.var, "int", Sym(s.var, LOOP), s.span)
        self.loops.append(loop)
        try:
            body = self.block(s.body)
        finally:
            self.loops.pop()
            self.scopes.pop()
            self.pending = header
        return ir.ForS(s.var, start, stop, step, s.kind, stages, body, s.span)

    def loop_bounds(self, args, span: Span) -> tuple[Expr, Expr, Expr]:
        if not 1 <= len(args) <= 3:
            raise self.error(
                "E404", span, "loop bounds take 1 to 3 arguments: (stop), (start, stop), (start, stop, step)"
            )
        ints = [self.int_expr(a) for a in args]
        if len(ints) == 1:
            return Const(0), ints[0], Const(1)
        if len(ints) == 2:
            return ints[0], ints[1], Const(1)
        if isinstance(ints[2], Const) and ints[2].value <= 0:
            raise self.error("E404", args[2].span, "loop step must be positive")
        return ints[0], ints[1], ints[2]

    def stmt_If(self, s: ast.If):
        cond = self.value(s.cond)
        if isinstance(cond, ir.IntV):
            expr = cond.expr
        else:
            expr = Sym(f"data@{s.span.line}:{s.span.col}", DYNAMIC)
        header, self.pending = self.pending, []  # temporaries of the condition go before the if
        self.conds.append(Condition(expr, s.cond.span))
        try:
            then = self.block(s.then)
        finally:
            self.conds.pop()
        self.conds.append(Condition(binop("==", expr, Const(0)), s.cond.span))
        try:
            orelse = self.block(s.orelse)
        finally:
            self.conds.pop()
            self.pending = header
        return ir.IfS(cond, then, orelse, s.span)

    # ------------------------------------------------------------ tensors and regions
    def tensor(self, access: ast.Access) -> Tensor:
        tensor = self.names.tensors.get(access.name)
        if tensor is None:
            raise self.error("E201", access.name_span, f"unknown tensor '{access.name}'")
        return tensor

    def region(self, access: ast.Access, tensor: Tensor) -> tuple[tuple[ir.Range, ...], ir.Type]:
        if len(access.subscripts) != len(tensor.shape):
            raise self.error(
                "E304",
                access.span,
                f"'{access.name}' has {len(tensor.shape)} dims "
                f"but {len(access.subscripts)} subscripts were given",
            )
        return self.ranges(access.subscripts, tensor.shape, tensor.dtype)

    def ranges(self, subscripts, shape: tuple[Expr, ...], dtype: str) -> tuple[tuple[ir.Range, ...], ir.Type]:
        ranges, extents, all_points = [], [], True
        for sub, dim in zip(subscripts, shape, strict=True):
            if type(sub) is ast.Slice:
                all_points = False
                if sub.start is None and sub.stop is None and sub.step is None:  # `:`, shared
                    full = _FULL_RANGES.get(dim)
                    if full is None:
                        if len(_FULL_RANGES) > 4096:
                            _FULL_RANGES.clear()
                        full = _FULL_RANGES[dim] = (ir.Range(_ZERO, dim, _ONE), difference(dim, _ZERO))
                    ranges.append(full[0])
                    extents.append(full[1])
                    continue
                start = self.int_expr(sub.start) if sub.start is not None else _ZERO
                stop = self.int_expr(sub.stop) if sub.stop is not None else dim
                step = self.int_expr(sub.step) if sub.step is not None else _ONE
                if type(step) is Const and step.value <= 0:
                    raise self.error("E404", sub.step.span, "slice step must be positive")
                ranges.append(ir.Range(start, stop, step))
                extent = difference(stop, start)
                extents.append(extent if step == _ONE else binop("cdiv", extent, step))
            else:
                index = self.int_expr(sub)
                point = _POINT_RANGES.get(index) if type(index) is Const else None
                if point is None:
                    point = ir.Range(index, binop("+", index, _ONE), _ONE, point=True)
                    if type(index) is Const:
                        if len(_POINT_RANGES) > 65536:
                            _POINT_RANGES.clear()
                        _POINT_RANGES[index] = point
                ranges.append(point)
                extents.append(_ONE)
        vtype = ir.ScalarType(dtype) if all_points else ir.TileType(dtype, tuple(extents))
        return tuple(ranges), vtype

    def _record(self, tensor: Tensor, region, mode: str, span: Span, peer: Expr | None = None) -> None:
        self.result.accesses.append(
            Access(
                tensor.name, mode, region, tensor.dtype, tuple(self.loops), tuple(self.conds), span,
                self._next(), peer,
            )
        )  # fmt: skip

    # ------------------------------------------------------------ expressions
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
        return _EXPR[type(e)](self, e)

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
            return ir.IntV(binop(_INT_OP.get(e.op, e.op), a.expr, b.expr), rtype)
        if isinstance(a, ir.IntV | ir.LocalV | ir.LoadV | ir.CallV) and isinstance(
            b, ir.IntV | ir.LocalV | ir.LoadV | ir.CallV
        ):
            a2, b2 = self._int_scalar(a, e.left.span), self._int_scalar(b, e.right.span)
            if isinstance(a2, ir.IntV) and isinstance(b2, ir.IntV):
                a, b = a2, b2
        if isinstance(a, ir.IntV) and isinstance(b, ir.IntV):
            op = _INT_OP.get(e.op, e.op)
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
        self._record(tensor, region, "read", e.span)
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

    def stmt_Return(self, s: ast.Return):
        raise self.error("E405", s.span, "`return` is only allowed at the end of a reduce_sum body")

    def expr_ReduceSum(self, e: ast.ReduceSum):
        raise self.error("E405", e.span, "reduce_sum is only allowed as the value of a task's last store")


# Dispatch tables, built from the ``stmt_*`` / ``expr_*`` methods: a dict lookup by node type
# is much cheaper than ``getattr`` by name on the hot path of large task arrays.
_STMT = {
    getattr(ast, name[5:]): f
    for name, f in vars(BodyElaborator).items()
    if name.startswith("stmt_") and hasattr(ast, name[5:])
}
_EXPR = {
    getattr(ast, name[5:]): f
    for name, f in vars(BodyElaborator).items()
    if name.startswith("expr_") and hasattr(ast, name[5:])
}
