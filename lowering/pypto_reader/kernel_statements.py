"""The statements of a task body: assignments, stores, loops, branches and scopes -> IR statements.

``StatementWalker`` walks them; the kernel evaluator (``kernel.KernelReader``) evaluates the
expressions in them: an integer assigned once is inlined as a symbolic expression, other
values become ``let``/assignments of locals; ``t[a:b, :] = v`` and ``t[...] += v`` are
stores; kernel loops (``pl.range``/``pl.pipeline``/``pl.unroll``/``range``/``pl.split_aiv``)
and ``if``s keep their symbolic bounds and conditions, and every access and signal inside
them records those. What the reader cannot model is a P001 note, never a dropped statement.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering import body as ir_body
from lowering.ir import Condition, Loop
from lowering.pypto_reader import sorting as _sorting
from lowering.pypto_reader.memory import region_sub
from lowering.pypto_reader.notes import line_span
from lowering.pypto_reader.ops import INTEGER_DTYPES, short_name
from lowering.pypto_reader.values import (
    FuncVal,
    IntVal,
    PlRef,
    PyVal,
    SeqVal,
    TensorVal,
    TileVal,
    Unknown,
    Val,
    unpacked,
)
from lowering.symbolic import DYNAMIC, LOOP, Const, Sym, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.kernel import KernelReader

LOOP_KINDS = {
    "pl.range": "range",
    "pl.parallel": "parallel",
    "pl.pipeline": "pipeline",
    "pl.unroll": "range",
    "range": "range",
    "pl.split_aiv": "range",
}


class StatementWalker:
    """Walks the statements of one task body; ``k`` evaluates the expressions in them."""

    def __init__(self, k: KernelReader) -> None:
        self.k = k
        self.names = k.names
        self.body = k.body
        self.access = k.access
        self.returned: Val | None = None  # what a ``return`` of a spliced helper gave
        self.carried: list[list[str]] = []  # the names each enclosing ``pl.range(init_values=)`` carries

    # ---------------------------------------------------------------- statements
    def statements(self, stmts: list[ast.stmt]) -> bool:
        """Read ``stmts``; False when a ``return`` ended the block."""
        for s in stmts:
            if isinstance(s, ast.Return):
                if s.value is not None:
                    self.returned = self.k.eval(s.value)
                return False
            self.k.current, self.access.last_read = s, None
            try:
                self.statement(s)
            except RecursionError:
                raise
            except Exception as err:  # noqa: BLE001 - the reader never crashes on one statement
                self.k.notes.add(
                    "P004",
                    self.k.span(s),
                    f"the reader failed on this statement of task {self.k.task} ({type(err).__name__}: {err})",
                )
        return True

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            self.expr_statement(s)
        elif isinstance(s, ast.Assign):
            value = self.assign_value(s.value, s.targets)
            for target in s.targets:
                self.assign(target, value, s)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.assign_value(s.value, [s.target]), s)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.With):
            self.with_stmt(s)
        elif isinstance(s, ast.While):
            self.k.notes.not_modelled(
                self.k.span(s),
                f"a while loop inside task {self.k.task}",
                "its body was read once, as if it ran a single iteration; counts of signals in it are wrong",
            )
            self.statements(s.body)
        elif isinstance(s, ast.Pass | ast.Assert | ast.FunctionDef | ast.Import | ast.ImportFrom):
            return
        else:
            self.k.notes.not_modelled(
                self.k.span(s),
                f"a {type(s).__name__} statement inside task {self.k.task}",
                "it is skipped; accesses or signals in it are not seen",
            )

    def expr_statement(self, s: ast.Expr) -> None:
        node = s.value
        if isinstance(node, ast.Constant):
            return  # a docstring
        if isinstance(node, ast.Call):
            func = self.k.eval(node.func)
            if isinstance(func, PlRef) and short_name(func.path) == "read":
                self.access.anchor_next = True
                v = self.k.eval(node)
                self.access.anchor_next = False
                if isinstance(v, TileVal):
                    self.body.emit(ir_body.EvalS(v.value, self.k.span(s)))
                return
            if isinstance(func, PlRef) and func.path == "pl.yield_":
                self.yield_values(node, s)
                return
        v = self.k.eval(node)
        if isinstance(v, TileVal) and isinstance(v.value, ir_body.CallV) and v.value.op != "opaque":
            self.body.emit(ir_body.EvalS(v.value, self.k.span(s)))

    def assign_value(self, node: ast.expr, targets: list[ast.expr]) -> Val:
        if (
            isinstance(node, ast.Call)
            and len(targets) == 1
            and isinstance(targets[0], ast.Name | ast.Tuple)
            and isinstance(self.k.eval(node.func), PlRef)
            and self.k.eval(node.func).path == "pl.yield_"  # type: ignore[union-attr]
        ):
            return self.yield_values(node, node)
        return self.k.eval(node)

    def assign(self, target: ast.expr, value: Val, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, stmt)
        elif isinstance(target, ast.Tuple | ast.List):
            for t, item in zip(target.elts, unpacked(value, len(target.elts)), strict=True):
                self.assign(t, item, stmt)
        elif isinstance(target, ast.Subscript):
            base = self.k.eval(target.value)
            if isinstance(base, TensorVal):
                region = region_sub(self.k, base, target) or self.access.region_at(base, None, None)
                v = self.k.value(value)
                self.access.record(base, region, "write", target)
                self.body.emit(
                    ir_body.StoreS(
                        base.root, self.access.root_region(base, region), v, "write", self.k.span(stmt)
                    )
                )
            else:
                self.k.notes.not_modelled(
                    self.k.span(target),
                    "an element or slice assignment into a local tile",
                    "the tile's content after it is unknown to the sort and capacity rules",
                )

    def assign_name(self, name: str, value: Val, stmt: ast.stmt) -> None:
        if isinstance(value, IntVal) and name not in self.names.unstable:
            existing = self.names.find(name)
            if not s_int(existing) or existing.expr.name != name:  # type: ignore[union-attr]
                self.names.bind(
                    name, value
                )  # an integer let: inlined (each assignment rebinds, as in Python)
                return
        if isinstance(value, TensorVal | PlRef | FuncVal | Unknown) or (
            isinstance(value, PyVal) and not isinstance(value.value, float | bool)
        ):
            self.names.bind(name, value)
            return
        if isinstance(value, SeqVal):
            self.names.bind(name, value)
            return
        v = self.k.value(value)
        existing = self.names.find(name)
        declared = (
            isinstance(existing, TileVal)
            and isinstance(existing.value, ir_body.LocalV)
            and existing.value.name == name
        )
        declared = declared or (isinstance(existing, IntVal) and existing.expr == Sym(name, DYNAMIC))
        self.body.emit((ir_body.AssignS if declared else ir_body.LetS)(name, v, self.k.span(stmt)))
        if (
            not declared
            and isinstance(v, ir_body.CallV)
            and v.op == "read"
            and self.access.last_read is not None
        ):
            self.access.read_lets[name] = self.access.last_read
        if isinstance(v, ir_body.CallV) and v.op in _sorting.SORTED_OPS:
            self.names.sorted_locals.add(name)
        if isinstance(v, ir_body.CallV) and v.op in ir_body.VALID_OPS:
            self.names.valid_locals[name] = v
        else:
            self.names.valid_locals.pop(name, None)
        vt = v.type
        if isinstance(vt, ir_body.ScalarType) and vt.dtype in INTEGER_DTYPES:
            self.names.bind_declared(name, IntVal(Sym(name, DYNAMIC)))
        else:
            self.names.bind_declared(name, TileVal(ir_body.LocalV(name, vt)))

    def aug_assign(self, s: ast.AugAssign) -> None:
        if isinstance(s.target, ast.Subscript):
            base = self.k.eval(s.target.value)
            if isinstance(base, TensorVal):
                region = region_sub(self.k, base, s.target) or self.access.region_at(base, None, None)
                v = self.k.value(self.k.eval(s.value))
                self.access.record(base, region, "read", s.target)
                self.access.record(base, region, "write", s.target)
                self.body.emit(
                    ir_body.StoreS(
                        base.root, self.access.root_region(base, region), v, "accumulate", self.k.span(s)
                    )
                )
                return
        if isinstance(s.target, ast.Name):
            old = self.k.lookup(s.target.id, s.target)
            new = self.k.binary(s.op, old, self.k.eval(s.value), s)
            self.names.assigned[s.target.id] += 1
            self.assign_name(s.target.id, new, s)
            return
        self.k.notes.not_modelled(self.k.span(s), "this augmented assignment", "it is skipped")

    def yield_values(self, node: ast.Call, stmt: ast.AST) -> Val:
        values = [self.k.eval(a) for a in node.args]
        if self.carried:
            for name, v in zip(self.carried[-1], values, strict=False):
                self.assign_name(name, v, stmt)  # type: ignore[arg-type]
        return SeqVal(tuple(values)) if len(values) != 1 else values[0]

    def for_loop(self, s: ast.For) -> None:
        it = s.iter
        func = self.k.eval(it.func) if isinstance(it, ast.Call) else None
        path = (
            func.path
            if isinstance(func, PlRef)
            else (it.func.id if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) else None)
        )
        kind = LOOP_KINDS.get(path or "")
        target = s.target
        carried: list[str] = []
        if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
            rest = target.elts[1:]
            if len(rest) == 1 and isinstance(rest[0], ast.Tuple):
                rest = list(rest[0].elts)
            carried = [t.id for t in rest if isinstance(t, ast.Name)]
            target = target.elts[0]
        if kind is None or not isinstance(target, ast.Name) or not isinstance(it, ast.Call):
            self.k.notes.not_modelled(
                self.k.span(s),
                f"a loop over '{ast.unparse(it)}' inside task {self.k.task}",
                "its body was read once with an unknown index",
            )
            self.names.push()
            if isinstance(target, ast.Name):
                self.names.bind(target.id, IntVal(Sym(target.id, DYNAMIC)))
            self.statements(s.body)
            self.names.pop()
            return
        pos = [a for a in it.args if not isinstance(a, ast.Starred)]
        kws = {kw.arg: kw.value for kw in it.keywords if kw.arg}
        if path == "pl.split_aiv":
            self.body.dual_lanes = True
            start, stop, step = Const(0), self.k.int_expr(self.k.eval(pos[0])) if pos else Const(2), Const(1)
        else:
            bounds = [self.k.int_expr(self.k.eval(a)) for a in pos]
            if not 1 <= len(bounds) <= 3 or any(b is None for b in bounds):
                self.k.notes.not_modelled(
                    self.k.span(it),
                    f"loop bounds the reader cannot evaluate inside task {self.k.task}",
                    "accesses in the loop are taken over the whole tensor extent",
                )
                bounds = [Const(0), Sym(f"data@{s.lineno}:{s.col_offset + 1}", DYNAMIC)]
            if len(bounds) == 1:
                start, stop, step = Const(0), bounds[0], Const(1)
            else:
                start, stop = bounds[0], bounds[1]
                step = bounds[2] if len(bounds) == 3 else Const(1)
        if stop is None:
            stop = Const(2)
        stages = 1
        if kind == "pipeline" and "stage" in kws:
            sv = self.k.static(self.k.eval(kws["stage"]))
            stages = sv if isinstance(sv, int) and sv > 0 else 1
        if carried and "init_values" in kws:
            inits = self.k.eval(kws["init_values"])
            items = inits.items if isinstance(inits, SeqVal) else (inits,)
            for name, v in zip(carried, items, strict=False):
                self.names.assigned[name] += 1
                self.assign_name(name, v, s)
        var = target.id
        loop = Loop(var, start, stop, step, kind, self.k.span(s))
        self.body.loops.append(loop)
        self.names.push({var: IntVal(Sym(var, LOOP))})
        self.body.open_block()
        if carried:
            self.carried.append(carried)
        try:
            self.statements(s.body)
        finally:
            body = self.body.close_block()
            self.names.pop()
            self.body.loops.pop()
            if carried:
                self.carried.pop()
        self.body.emit(ir_body.ForS(var, start, stop, step, kind, stages, tuple(body), self.k.span(s)))

    def if_stmt(self, s: ast.If) -> None:
        cond_val = self.k.eval(s.test)
        expr = self.k.int_expr(cond_val) if not isinstance(cond_val, PyVal) else None
        if expr is None:
            truth = self.k.truth(cond_val)
            if truth is not None:
                self.statements(s.body if truth else s.orelse)
                return
            expr = Sym(f"data@{s.test.lineno}:{s.test.col_offset + 1}", DYNAMIC)
            cond_ir: ir_body.Value = (
                self.k.value(cond_val) if isinstance(cond_val, TileVal) else ir_body.IntV(expr)
            )
        else:
            cond_ir = ir_body.IntV(expr, ir_body.ScalarType("bool"))
        span = self.k.span(s.test)
        then, then_scope = self.branch(Condition(expr, span), s.body)
        orelse, else_scope = self.branch(Condition(binop("==", expr, Const(0)), span), s.orelse)
        then, orelse = self.join_branches(then_scope, else_scope, then, orelse, s)
        self.body.emit(ir_body.IfS(cond_ir, then, orelse, self.k.span(s)))

    def branch(
        self, cond: Condition, stmts: list[ast.stmt]
    ) -> tuple[tuple[ir_body.Stmt, ...], dict[str, Val]]:
        """One arm of an ``if``: its own block and scope, its accesses under ``cond``."""
        self.body.conds.append(cond)
        self.body.open_block()
        self.names.push()
        try:
            self.statements(stmts)
        finally:
            body = self.body.close_block()
            scope = self.names.pop()
            self.body.conds.pop()
        return tuple(body), scope

    def join_branches(self, a: dict[str, Val], b: dict[str, Val], then: tuple, orelse: tuple, s: ast.If):
        """Names an ``if`` binds stay bound after it (Python scoping). A value both arms agree on
        stays as is; an integer the arms compute differently (``valid = CAP`` / ``valid =
        pl.min(n, CAP)``) becomes a local each arm assigns, whose bound the validity analysis
        joins across the arms. Returns the arms' statements with those assignments."""
        then, orelse = list(then), list(orelse)
        for name in dict.fromkeys([*a, *b]):
            if self.names.is_local(name) and not any(name in sc for sc in (a, b)):
                continue
            outer = self.names.find(name)
            x, y = a.get(name, outer), b.get(name, outer)
            if x is None or y is None:
                self.names.bind(name, x if x is not None else y)  # bound on one path only
            elif x == y:
                self.names.bind(name, x)
            elif isinstance(x, IntVal) and isinstance(y, IntVal):
                local = IntVal(Sym(name, DYNAMIC))
                for arm, v in ((then, x), (orelse, y)):
                    if v != local:
                        arm.append(ir_body.LetS(name, ir_body.IntV(v.expr), self.k.span(s)))
                self.names.bind(name, local)
            elif isinstance(x, TileVal) and isinstance(x.value, ir_body.LocalV) and x.value.name == name:
                self.names.bind(name, x)
            elif isinstance(y, TileVal) and isinstance(y.value, ir_body.LocalV) and y.value.name == name:
                self.names.bind(name, y)
        return tuple(then), tuple(orelse)

    def with_stmt(self, s: ast.With) -> None:
        for item in s.items:
            ctx = item.context_expr
            func = self.k.eval(ctx.func) if isinstance(ctx, ast.Call) else self.k.eval(ctx)
            path = func.path if isinstance(func, PlRef) else ""
            if path in ("pl.at", "pl.spmd", "pl.cluster"):
                self.k.notes.not_modelled(
                    line_span(self.k.file, s),
                    f"a {path} scope nested inside task {self.k.task}",
                    "its body is read as part of the enclosing task, not as a task of its own",
                )
            elif path not in ("pl.scope", "pl.manual_scope", "pl.split_aiv"):
                self.k.notes.not_modelled(
                    line_span(self.k.file, s),
                    f"the context manager '{ast.unparse(ctx)}' inside a kernel",
                    "its body is read as is",
                )
        self.statements(s.body)


def s_int(v: Val | None) -> bool:
    """A symbolic integer bound to a local of the kernel (an int assigned more than once)."""
    return isinstance(v, IntVal) and isinstance(v.expr, Sym) and v.expr.kind == DYNAMIC
