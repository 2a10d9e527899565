"""Task bodies: AST statements -> IR statements, with the access and signal summaries.

Integer arithmetic on parameters, ``block``, loop indices and ``rank`` stays symbolic
(integer ``let``s that are never reassigned are inlined), so every region is an affine
form the checks can bound. Tile values get a dtype and a symbolic shape; mismatches are
reported with the span of the offending operand.

The :class:`BodyElaborator` does the statements and composes two pieces: an
``dsl.elaborate_exprs.ExprElaborator`` (expressions, local names, regions) and a
``dsl.elaborate_summary.BodySummary`` (what the body accesses, signals and uses, at which
loop and condition nesting).
"""

from __future__ import annotations

from collections.abc import Callable

from dsl import ast
from dsl.elaborate_exprs import BodyAbort, ExprElaborator, LayerNames
from dsl.elaborate_summary import BodyResult, BodySummary
from dsl.ops import OpTypeError, elementwise, shape_text
from lowering import body as ir_body
from lowering.ir import BarrierOp, Condition, Loop, SignalOp, Tensor
from lowering.source import Diagnostic, Span
from lowering.symbolic import DYNAMIC, LOOP, Bin, Const, Expr, Sym, binop, free_symbols


def _assigned_names(stmts) -> set[str]:
    return {s.name for s in ast.body_stmts(stmts) if isinstance(s, ast.Assign)}


class BodyElaborator:
    """Elaborates the statements of one task body seen from its layer's ``names``."""

    def __init__(self, names: LayerNames, report: Callable[[Diagnostic], None]):
        self.summary = summary = BodySummary(names.prefix)
        self.result = summary.result
        self.loops: list[Loop] = summary.loops  # the nesting the summary records at
        self.conds: list[Condition] = summary.conds
        self.exprs = exprs = ExprElaborator(names, report, summary)
        # what the statements use of the expression piece, bound once (the hot path of task arrays)
        self.error = exprs.error
        self.value = exprs.value
        self.int_expr = exprs.int_expr
        self.lookup = exprs.lookup
        self.bind = exprs.bind
        self.tensor = exprs.tensor
        self.region = exprs.region
        self.reassigned: set[str] = set()

    # ------------------------------------------------------------ entry point
    def run(self, stmts: tuple[ast.Stmt, ...]) -> BodyResult:
        self.reassigned = _assigned_names(stmts)
        self.result.body = self.block(stmts)
        return self.result

    # ------------------------------------------------------------ statements
    def block(self, stmts) -> tuple[ir_body.Stmt, ...]:
        out: list[ir_body.Stmt] = []
        exprs = self.exprs
        exprs.scopes.append({})
        try:
            for s in stmts:
                try:
                    st = self.stmt(s)
                except BodyAbort:
                    st = None
                out.extend(exprs.pending)
                exprs.pending = []
                if st is not None:
                    out.append(st)
        finally:
            exprs.scopes.pop()
        return tuple(out)

    def stmt(self, s: ast.Stmt) -> ir_body.Stmt | None:
        return _STMT[type(s)](self, s)

    def stmt_Let(self, s: ast.Let):
        value = self.value(s.value)
        if isinstance(value, ir_body.IntV) and s.name not in self.reassigned:
            self.bind(s.name, "int", value.expr, s.span)
            if isinstance(value.expr, Bin) and all(sym.kind != DYNAMIC for sym in free_symbols(value.expr)):
                return ir_body.LetS(s.name, value, s.span, inlined=True)  # the name, for generated code
            return None
        if isinstance(value.type, ir_body.DtypeType | ir_body.ListType):
            raise self.error("E303", s.value.span, "a let binds a tile or a scalar, not a dtype or a list")
        self.bind(s.name, "var", value.type, s.span)
        return ir_body.LetS(s.name, value, s.span)

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
        return ir_body.AssignS(s.name, value, s.span)

    def _check_same_type(self, want, got, span: Span, what: str) -> None:
        if isinstance(want, ir_body.TileType) and isinstance(got, ir_body.TileType):
            if want.dtype != got.dtype:
                raise self.error(
                    "E302", span, f"{what} is {want.dtype} but the value is {got.dtype}", "use cast()"
                )
            try:
                elementwise(want, got)
            except OpTypeError as err:
                raise self.error(err.code, span, f"{what}: {err}") from None
        elif isinstance(want, ir_body.ScalarType) and isinstance(got, ir_body.TileType):
            raise self.error("E303", span, f"{what} is a scalar but the value is a tile {got}")
        elif isinstance(want, ir_body.TileType) and isinstance(got, ir_body.ScalarType):
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
            self.summary.access(tensor, region, "read", target.span, written=target.name)
        self.summary.access(
            tensor, region, "atomic" if mode == "atomic" else "write", target.span, written=target.name
        )
        return ir_body.StoreS(tensor.name, region, value, mode, span)

    def _check_store(self, tensor: Tensor, target_type, value, span: Span) -> None:
        vt = value.type
        if isinstance(vt, ir_body.TileType | ir_body.ScalarType) and vt.dtype != tensor.dtype:
            if not (isinstance(value, ir_body.IntV | ir_body.FloatV)):
                raise self.error(
                    "E302",
                    span,
                    f"storing {vt.dtype} into {tensor.dtype} tensor '{tensor.name}'",
                    "use cast()",
                )
        if isinstance(vt, ir_body.TileType):
            if not isinstance(target_type, ir_body.TileType):
                raise self.error("E303", span, f"storing a tile {vt} into one element of '{tensor.name}'")
            try:
                elementwise(ir_body.TileType(vt.dtype, target_type.shape), vt)
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
        self.summary.access(
            tensor, region, "atomic" if s.atomic else "write", s.target.span, peer=peer, written=s.target.name
        )
        return ir_body.RemoteStoreS(tensor.name, region, peer, value, s.atomic, s.span)

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
                "notify", tensor.name, index, tuple(self.loops), tuple(self.conds), s.span, self.summary.next(),
                peer=peer, op=s.op, value=value,
            )
        )  # fmt: skip
        return ir_body.NotifyS(tensor.name, index, peer, s.op, value, s.span)

    def stmt_Wait(self, s: ast.Wait):
        tensor, index = self._signal_cell(s.cell)
        expected = self.int_expr(s.expected)
        self.result.signals.append(
            SignalOp(
                "wait", tensor.name, index, tuple(self.loops), tuple(self.conds), s.span, self.summary.next(),
                cmp=s.cmp, expected=expected,
            )
        )  # fmt: skip
        return ir_body.WaitS(tensor.name, index, s.cmp, expected, s.span)

    def stmt_Barrier(self, s: ast.Barrier):
        self.result.barriers.append(
            BarrierOp(s.soft, tuple(self.loops), tuple(self.conds), s.span, self.summary.next())
        )
        return ir_body.BarrierS(s.soft, s.span)

    def stmt_ExprStmt(self, s: ast.ExprStmt):
        call = s.call
        if call.func == "read" and len(call.args) == 1 and isinstance(call.args[0], ast.Access):
            target = call.args[0]
            if self.lookup(target.name) is None:
                tensor = self.tensor(target)
                region, vtype = self.region(target, tensor)
                self.summary.access(tensor, region, "anchor", target.span, written=target.name)
                return ir_body.EvalS(
                    ir_body.CallV("read", (ir_body.LoadV(tensor.name, region, vtype),), (), vtype), s.span
                )
        return ir_body.EvalS(self.value(call), s.span)

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
        exprs = self.exprs
        header, exprs.pending = exprs.pending, []  # temporaries of the bounds go before the loop
        exprs.scopes.append({})
        self.bind(s.var, "int", Sym(s.var, LOOP), s.span)
        self.loops.append(loop)
        try:
            body = self.block(s.body)
        finally:
            self.loops.pop()
            exprs.scopes.pop()
            exprs.pending = header
        return ir_body.ForS(s.var, start, stop, step, s.kind, stages, body, s.span)

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
        if isinstance(cond, ir_body.IntV):
            expr = cond.expr
        else:
            expr = Sym(f"data@{s.span.line}:{s.span.col}", DYNAMIC)
        exprs = self.exprs
        header, exprs.pending = exprs.pending, []  # temporaries of the condition go before the if
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
            exprs.pending = header
        return ir_body.IfS(cond, then, orelse, s.span)

    def stmt_Return(self, s: ast.Return):
        raise self.error("E405", s.span, "`return` is only allowed at the end of a reduce_sum body")


# The statement dispatch table, built from the ``stmt_*`` methods (the expression one is in
# ``elaborate_exprs``): a dict lookup by node type is much cheaper than ``getattr`` by name on
# the hot path of large task arrays.
_STMT = {
    getattr(ast, name[5:]): f
    for name, f in vars(BodyElaborator).items()
    if name.startswith("stmt_") and hasattr(ast, name[5:])
}
