"""Compile-time and host integers in layer elaboration: AST expressions -> symbolic ``Expr``.

An integer of a layer (an extent, a grid, a loop bound, a const) stays symbolic in the root
layer's parameters and constants, so the checks can re-evaluate it at every admissible point;
its value at this point comes from the graph's ``env``. Host expressions (``scalar n = ...``,
guards, runtime extents) may also use runtime scalars, and ``emitted(T)`` / ``derived(...)``
capacities, which ``derive_capacities`` resolves once the tasks are elaborated.
"""

from __future__ import annotations

from dsl import ast
from dsl.elaborate_exprs import INT_OPS
from dsl.elaborate_scope import Abort, Diagnostics, LayerGraph, Scope
from lowering import parameters
from lowering.checks.capacity.derived import EMITTED, PendingConst, emitted_name
from lowering.source import Span
from lowering.symbolic import SCALAR, Const, EvalError, Expr, Sym, binop, evaluate, free_symbols

#: Sym kind of a layer constant (``lowering.checks.points`` reads it too).
CONST = "const"


class HostInts:
    """Evaluates the integers of the layer ``graph`` being built, reporting to ``diags``."""

    def __init__(self, graph: LayerGraph, diags: Diagnostics) -> None:
        self.graph = graph
        self.diags = diags

    def const(self, e, scope: Scope, allow_scalars: bool = False) -> Expr:
        """``e`` as a compile-time integer (a host integer over runtime scalars when
        ``allow_scalars``); raises :class:`Abort` after reporting what it is instead."""
        error = self.diags.error
        if isinstance(e, ast.IntLit):
            return Const(e.value)
        if isinstance(e, ast.BoolLit):
            return Const(int(e.value))
        if isinstance(e, ast.Name):
            g = self.graph
            if e.id in scope.ints:
                return scope.ints[e.id]
            if e.id in g.derived:
                if allow_scalars:
                    return g.derived[e.id].value
                raise error("E206", e.span, f"'{e.id}' depends on runtime scalars, not known at compile time")
            if e.id in g.scalars:
                if allow_scalars:
                    return Sym(e.id, SCALAR)
                raise error("E206", e.span, f"'{e.id}' is a runtime scalar, not known at compile time")
            if e.id in scope.tensors:
                raise error("E206", e.span, f"'{e.id}' is a tensor, not a compile-time integer")
            raise error("E201", e.span, f"unknown name '{e.id}'")
        if isinstance(e, ast.Unary):
            inner = self.const(e.operand, scope, allow_scalars)
            return binop("-", Const(0), inner) if e.op == "-" else binop("==", inner, Const(0))
        if isinstance(e, ast.Binary):
            a = self.const(e.left, scope, allow_scalars)
            b = self.const(e.right, scope, allow_scalars)
            return binop(INT_OPS.get(e.op, e.op), a, b)
        if isinstance(e, ast.Call) and e.func in ("emitted", "derived"):
            return self.capacity_call(e, scope, allow_scalars)
        if isinstance(e, ast.Call) and e.func in ("min", "max", "cdiv") and len(e.args) == 2 and not e.kwargs:
            return binop(
                e.func,
                self.const(e.args[0], scope, allow_scalars),
                self.const(e.args[1], scope, allow_scalars),
            )
        if isinstance(e, ast.FloatLit):
            raise error("E206", e.span, "expected an integer, got a floating-point number")
        raise error("E206", e.span, "expected a compile-time integer expression")

    def value(self, expr: Expr, span: Span, what: str) -> int:
        """The value of ``expr`` at this point; E206/E207 at ``span`` when it has none."""
        try:
            return evaluate(expr, self.graph.env)
        except EvalError as err:
            late = sorted(s.name for s in free_symbols(expr) if s.name in self.graph.pending)
            if late:
                raise self.diags.error(
                    "E206",
                    span,
                    f"{what}: '{late[0]}' is a derived capacity, known only once the tasks are elaborated",
                    hint="a derived capacity sizes tensors and appears in task bodies, guards and "
                    "consts; not in grids, loop bounds, asserts or domains",
                ) from None
            raise self.diags.error("E207" if "zero" in str(err) else "E206", span, f"{what}: {err}") from None

    def decision(self, expr: Expr, span: Span, what: str) -> int:
        """The value of a layer ``if`` condition or loop bound, recorded in the graph's structure."""
        value = self.value(expr, span, what)
        if not isinstance(expr, Const):
            self.graph.structure[expr] = value
        return value

    def capacity_call(self, e: ast.Call, scope: Scope, allow_scalars: bool, name: str | None = None) -> Expr:
        """``emitted(T)`` (a per-request placeholder) and ``derived(expr)`` (a pending const);
        both are resolved by ``derive_capacities`` once the tasks are elaborated."""
        error = self.diags.error
        g = self.graph
        if len(e.args) != 1 or e.kwargs:
            raise error("E206", e.span, f"{e.func}(...) takes one argument")
        if e.func == "emitted":
            arg = e.args[0]
            if not isinstance(arg, ast.Name):
                raise error("E206", arg.span, "emitted(...) names a tensor: emitted(cmp_indices)")
            if not allow_scalars:
                raise error(
                    "E206",
                    e.span,
                    f"emitted({arg.id}) is a value per request, not known at compile time",
                    hint=f"a capacity is derived(... emitted({arg.id}) ...): its maximum over the requests",
                )
            placeholder = emitted_name(scope.prefix + arg.id)
            g.emitted.setdefault(placeholder, (scope, arg.id, e.span))
            return Sym(placeholder, EMITTED)
        body = self.const(e.args[0], scope, allow_scalars=True)
        if name is None:  # anonymous, in an extent: named after its text
            name = f"{scope.prefix}{ast.expr_text(e)}"
            if name in g.pending and g.pending[name].guards_before != len(g.guards):
                name = f"{name}@{e.span.line}:{e.span.col}"
        if name not in g.pending:
            g.pending[name] = PendingConst(name, body, e.span, True, len(g.guards))
        return Sym(name, CONST)

    def quiet_const(self, e, scope: Scope) -> Expr | None:
        """``e`` as a compile-time integer, or None (without a diagnostic) when it is not one."""
        mark = self.diags.mark()
        try:
            expr = self.const(e, scope)
            evaluate(expr, self.graph.env)
            return expr
        except (Abort, EvalError):
            self.diags.drop_since(mark)
            return None

    def domain(self, d: ast.Domain | None, scope: Scope) -> parameters.Domain | None:
        """The range or set of values a parameter or scalar may take, evaluated here."""
        if d is None:
            return None
        if d.values is not None:
            return parameters.Domain(
                values=tuple(self.value(self.const(v, scope), v.span, "domain") for v in d.values)
            )
        lo = self.value(self.const(d.lo, scope), d.lo.span, "domain")
        hi = self.value(self.const(d.hi, scope), d.hi.span, "domain")
        step = self.value(self.const(d.step, scope), d.step.span, "domain") if d.step is not None else 1
        if step <= 0 or hi < lo:
            raise self.diags.error("E207", d.span, f"empty parameter range {lo}..{hi} step {step}")
        return parameters.Domain(lo, hi, step)

    def domain_form(self, d: ast.Domain | None, scope: Scope) -> parameters.DomainForm | None:
        """The same domain, symbolic (re-evaluated at other parameter points)."""
        if d is None:
            return None
        if d.values is not None:
            return parameters.DomainForm(
                Const(0), Const(0), Const(1), tuple(self.const(v, scope) for v in d.values)
            )
        step = self.const(d.step, scope) if d.step is not None else Const(1)
        return parameters.DomainForm(self.const(d.lo, scope), self.const(d.hi, scope), step)
