"""Layer elaboration: parameters, constants, declarations, task arrays and layer calls -> IR.

A layer is elaborated at one parameter point (defaults plus ``--set`` overrides). Every
integer stays symbolic in the root layer's parameters and constants, so the checks can
re-evaluate grids, regions and thresholds at every admissible point. Called layers are
inlined: their tasks and private tensors get the call's alias as a prefix
(``dispatch.push``), their parameters become expressions of the caller's. Tasks and the
references to them are ``dsl.elaborate_tasks``; task bodies ``dsl.elaborate_body``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsl import ast
from dsl.codes import diag
from dsl.elaborate_exprs import INT_OPS
from dsl.elaborate_rounds import order_after_previous_round
from dsl.elaborate_tasks import TaskElaboration, emitted_in
from dsl.limits import MAX_LAYER_ITERATIONS, LimitReached
from lowering import ir
from lowering.checks.capacity.derived import (
    EMITTED,
    EmittedUse,
    PendingConst,
    derive_capacities,
    emitted_name,
)
from lowering.perf import paused_gc
from lowering.source import CompileError, Diagnostic, Span
from lowering.symbolic import PARAM, SCALAR, Const, EvalError, Expr, Sym, binop, evaluate, free_symbols

CONST = "const"


class _Abort(Exception):
    pass


@dataclass
class _Scope:
    """Names visible in one layer instance."""

    prefix: str
    layer: ast.Layer
    ints: dict[str, Expr] = field(default_factory=dict)
    tensors: dict[str, ir.Tensor] = field(default_factory=dict)
    tasks: dict[str, dict[str, None]] = field(default_factory=dict)  # name -> instances (ordered set)
    calls: dict[str, _Scope] = field(default_factory=dict)
    loop_kinds: list[str] = field(default_factory=list)
    call: ast.LayerCall | None = None  # the call that instantiated this scope (None at the root)
    trips: int = 1  # iterations of the enclosing layer loops (of the caller too)


class Elaborator(TaskElaboration):
    def __init__(self, module: ast.Module, file: str, overrides: dict[str, int] | None = None):
        self.module = module
        self.file = file
        self.overrides = dict(overrides or {})
        self.diagnostics: list[Diagnostic] = []
        self._reported: set[tuple] = set()  # (code, span, message) already in diagnostics
        self.layers: dict[str, ast.Layer] = {}
        for layer in module.layers:
            if layer.name in self.layers:
                self.report(diag("E202", layer.span, f"layer '{layer.name}' is defined twice"))
            else:
                self.layers[layer.name] = layer

    def report(self, d: Diagnostic) -> None:
        # A task array repeats its body per element: report each mistake once, not N times.
        key = (d.code, d.span, d.message)
        if key not in self._reported:
            self._reported.add(key)
            self.diagnostics.append(d)

    def error(self, code: str, span: Span, message: str, hint: str | None = None) -> _Abort:
        self.report(diag(code, span, message, hint=hint))
        return _Abort()

    # ------------------------------------------------------------ roots
    def root_layers(self) -> list[str]:
        """Layers no other layer calls; when every layer is called (the calls form a cycle),
        all of them, so that elaborating them reports the recursion (E209)."""
        called = set()
        for layer in self.layers.values():
            called |= _called_layers(layer.body) - {layer.name}
        return [name for name in self.layers if name not in called] or list(self.layers)

    def elaborate(self, name: str) -> ir.Graph:
        with paused_gc():
            try:
                return self._elaborate(name)
            except LimitReached:
                raise CompileError(self.diagnostics) from None

    def _elaborate(self, name: str) -> ir.Graph:
        layer = self.layers[name]
        self.params: dict[str, ir.Param] = {}
        self.consts: dict[str, ir.Const] = {}
        self.assertions: list[ir.Assertion] = []
        self.scalars: dict[str, ir.Scalar] = {}
        self.derived: dict[str, ir.Scalar] = {}  # scalar n = expr (host values over runtime scalars)
        self.guards: list[ir.Guard] = []
        self.pending: dict[str, PendingConst] = {}  # consts that need the tasks: derived(...)
        self.emitted: dict[str, tuple[_Scope, str, Span]] = {}  # emitted(T) placeholder -> use
        self.tensors: dict[str, ir.Tensor] = {}
        self.tasks: list[ir.Task] = []
        self.task_names: set[str] = set()
        self.env: dict[str, int] = {}
        self.ranks: Expr | None = None
        self.golden: str | None = None
        self.golden_span: Span | None = None
        self.reductions: list[ir.Reduction] = []
        self.structure: dict[Expr, int] = {}  # layer if conditions and loop bounds -> value here
        self.aliases: list[ir.Alias] = []
        self.previous_refs: list[tuple[str, ast.TaskRef, _Scope]] = []  # after prev(t), per task
        scope = _Scope("", layer)
        unknown = set(self.overrides) - {p.name for p in layer.params}
        for key in sorted(unknown):
            known = ", ".join(p.name for p in layer.params) or "none"
            self.report(
                diag(
                    "E203",
                    layer.span,
                    f"--set {key}: layer '{name}' has no parameter '{key}'",
                    hint=f"parameters: {known}",
                )
            )
        try:
            self._root_params(layer, scope)
            self._layer_body(layer.body, scope, stack=(name,))
        except _Abort:
            pass
        self._order_rounds()
        ranks = self.ranks if self.ranks is not None else Const(1)
        graph = ir.Graph(
            name=layer.name,
            file=self.file,
            span=layer.span,
            params=self.params,
            consts=self.consts,
            assertions=self.assertions,
            scalars=self.scalars,
            tensors=self.tensors,
            tasks=self.tasks,
            ranks=ranks,
            nranks=self._value(ranks, layer.span, "ranks"),
            golden=self.golden,
            golden_span=self.golden_span,
            reductions=self.reductions,
            guards=self.guards,
            derived=self.derived,
            structure=tuple(self.structure.items()),
            aliases=tuple(self.aliases),
        )
        if not self.diagnostics and (self.pending or self.emitted):
            uses = [
                EmittedUse(ph, sc.tensors[src].name if src in sc.tensors else None, src, span)
                for ph, (sc, src, span) in self.emitted.items()
            ]
            self.diagnostics.extend(derive_capacities(graph, list(self.pending.values()), uses))
        if not self.diagnostics:
            from dsl.bounds import check_bounds

            self.diagnostics.extend(check_bounds(graph))
        if self.diagnostics:
            err = CompileError(self.diagnostics)
            err.structure = graph.structure  # the layer decisions taken before it failed
            raise err
        from lowering.edges import infer_edges

        graph.edges, graph.cross_round_edges = infer_edges(graph)
        return graph

    def _order_rounds(self) -> None:
        """Lower every ``after prev(t)`` once all tasks exist (``dsl.elaborate_rounds``)."""
        by_name = {t.name: t for t in self.tasks}
        pairs = []
        for consumer, ref, scope in self.previous_refs:
            try:
                producers = self._resolve_ref(ref, scope)
            except _Abort:
                continue
            for producer in producers:
                if consumer not in by_name or producer not in by_name:
                    continue  # a task whose elaboration failed: its own error is reported
                manual = next((n for n in (consumer, producer) if by_name[n].manual), None)
                if manual is not None:
                    self.report(
                        diag(
                            "E401",
                            ref.span,
                            f"prev(...) orders rounds through a token tensor, and task {manual} is `manual` "
                            f"(it takes no tensor edge)",
                            hint="drop `manual`, or order the rounds with a tensor both tasks touch",
                        )
                    )
                    continue
                pairs.append((consumer, producer, ref.span))
        if pairs:
            order_after_previous_round(self.tasks, self.tensors, pairs, self.ranks or Const(1), self.report)

    # ------------------------------------------------------------ compile-time integers
    def const(self, e, scope: _Scope, allow_scalars: bool = False) -> Expr:
        if isinstance(e, ast.IntLit):
            return Const(e.value)
        if isinstance(e, ast.BoolLit):
            return Const(int(e.value))
        if isinstance(e, ast.Name):
            if e.id in scope.ints:
                return scope.ints[e.id]
            if e.id in self.derived:
                if allow_scalars:
                    return self.derived[e.id].value
                raise self.error(
                    "E206", e.span, f"'{e.id}' depends on runtime scalars, not known at compile time"
                )
            if e.id in self.scalars:
                if allow_scalars:
                    return Sym(e.id, SCALAR)
                raise self.error("E206", e.span, f"'{e.id}' is a runtime scalar, not known at compile time")
            if e.id in scope.tensors:
                raise self.error("E206", e.span, f"'{e.id}' is a tensor, not a compile-time integer")
            raise self.error("E201", e.span, f"unknown name '{e.id}'")
        if isinstance(e, ast.Unary):
            inner = self.const(e.operand, scope, allow_scalars)
            return binop("-", Const(0), inner) if e.op == "-" else binop("==", inner, Const(0))
        if isinstance(e, ast.Binary):
            a = self.const(e.left, scope, allow_scalars)
            b = self.const(e.right, scope, allow_scalars)
            return binop(INT_OPS.get(e.op, e.op), a, b)
        if isinstance(e, ast.Call) and e.func in ("emitted", "derived"):
            return self._capacity_call(e, scope, allow_scalars)
        if isinstance(e, ast.Call) and e.func in ("min", "max", "cdiv") and len(e.args) == 2 and not e.kwargs:
            return binop(
                e.func,
                self.const(e.args[0], scope, allow_scalars),
                self.const(e.args[1], scope, allow_scalars),
            )
        if isinstance(e, ast.FloatLit):
            raise self.error("E206", e.span, "expected an integer, got a floating-point number")
        raise self.error("E206", e.span, "expected a compile-time integer expression")

    def _value(self, expr: Expr, span: Span, what: str) -> int:
        try:
            return evaluate(expr, self.env)
        except EvalError as err:
            late = sorted(s.name for s in free_symbols(expr) if s.name in self.pending)
            if late:
                raise self.error(
                    "E206",
                    span,
                    f"{what}: '{late[0]}' is a derived capacity, known only once the tasks are elaborated",
                    hint="a derived capacity sizes tensors and appears in task bodies, guards and "
                    "consts; not in grids, loop bounds, asserts or domains",
                ) from None
            raise self.error("E207" if "zero" in str(err) else "E206", span, f"{what}: {err}") from None

    def _decision(self, expr: Expr, span: Span, what: str) -> int:
        """The value of a layer ``if`` condition or loop bound, recorded in the graph's structure."""
        value = self._value(expr, span, what)
        if not isinstance(expr, Const):
            self.structure[expr] = value
        return value

    def _capacity_call(
        self, e: ast.Call, scope: _Scope, allow_scalars: bool, name: str | None = None
    ) -> Expr:
        """``emitted(T)`` (a per-request placeholder) and ``derived(expr)`` (a pending const);
        both are resolved by ``derive_capacities`` once the tasks are elaborated."""
        if len(e.args) != 1 or e.kwargs:
            raise self.error("E206", e.span, f"{e.func}(...) takes one argument")
        if e.func == "emitted":
            arg = e.args[0]
            if not isinstance(arg, ast.Name):
                raise self.error("E206", arg.span, "emitted(...) names a tensor: emitted(cmp_indices)")
            if not allow_scalars:
                raise self.error(
                    "E206",
                    e.span,
                    f"emitted({arg.id}) is a value per request, not known at compile time",
                    hint=f"a capacity is derived(... emitted({arg.id}) ...): its maximum over the requests",
                )
            placeholder = emitted_name(scope.prefix + arg.id)
            self.emitted.setdefault(placeholder, (scope, arg.id, e.span))
            return Sym(placeholder, EMITTED)
        body = self.const(e.args[0], scope, allow_scalars=True)
        if name is None:  # anonymous, in an extent: named after its text
            name = f"{scope.prefix}{ast.expr_text(e)}"
            if name in self.pending and self.pending[name].guards_before != len(self.guards):
                name = f"{name}@{e.span.line}:{e.span.col}"
        if name not in self.pending:
            self.pending[name] = PendingConst(name, body, e.span, True, len(self.guards))
        return Sym(name, CONST)

    # ------------------------------------------------------------ parameters
    def _domain(self, d: ast.Domain | None, scope: _Scope) -> ir.Domain | None:
        if d is None:
            return None
        if d.values is not None:
            return ir.Domain(
                values=tuple(self._value(self.const(v, scope), v.span, "domain") for v in d.values)
            )
        lo = self._value(self.const(d.lo, scope), d.lo.span, "domain")
        hi = self._value(self.const(d.hi, scope), d.hi.span, "domain")
        step = self._value(self.const(d.step, scope), d.step.span, "domain") if d.step is not None else 1
        if step <= 0 or hi < lo:
            raise self.error("E207", d.span, f"empty parameter range {lo}..{hi} step {step}")
        return ir.Domain(lo, hi, step)

    def _domain_form(self, d: ast.Domain | None, scope: _Scope) -> ir.DomainForm | None:
        if d is None:
            return None
        if d.values is not None:
            return ir.DomainForm(Const(0), Const(0), Const(1), tuple(self.const(v, scope) for v in d.values))
        step = self.const(d.step, scope) if d.step is not None else Const(1)
        return ir.DomainForm(self.const(d.lo, scope), self.const(d.hi, scope), step)

    def _root_params(self, layer: ast.Layer, scope: _Scope) -> None:
        for p in layer.params:
            if p.name in scope.ints:
                self.report(diag("E202", p.span, f"parameter '{p.name}' is declared twice"))
                continue
            default = self._value(self.const(p.default, scope), p.default.span, p.name)
            domain = self._domain(p.domain, scope)
            value = self.overrides.get(p.name, default)
            if domain is not None and value not in domain:
                source = "--set" if p.name in self.overrides else "default"
                self.report(
                    diag("E204", p.span, f"{p.name} = {value} ({source}) is outside its range {domain}")
                )
            self.params[p.name] = ir.Param(p.name, value, default, domain, p.span)
            self.env[p.name] = value
            scope.ints[p.name] = Sym(p.name, PARAM)

    # ------------------------------------------------------------ layer statements
    def _layer_body(self, stmts, scope: _Scope, stack: tuple[str, ...]) -> None:
        for s in stmts:
            try:
                getattr(self, "_l_" + type(s).__name__)(s, scope, stack)
            except _Abort:
                continue

    def _define_int(self, name: str, span: Span, scope: _Scope) -> None:
        if name in scope.ints or name in scope.tensors:
            raise self.error("E202", span, f"'{name}' is already defined")

    def _l_ConstDef(self, s: ast.ConstDef, scope: _Scope, stack) -> None:
        self._define_int(s.name, s.span, scope)
        full = scope.prefix + s.name
        if isinstance(s.value, ast.Call) and s.value.func == "derived":  # const PAD = derived(...)
            scope.ints[s.name] = self._capacity_call(s.value, scope, False, name=full)
            return
        expr = self.const(s.value, scope)
        if any(sym.name in self.pending for sym in free_symbols(expr)):  # CMP_COLS = PAD - WIN
            self.pending[full] = PendingConst(full, expr, s.span, False, len(self.guards))
            scope.ints[s.name] = Sym(full, CONST)
            return
        value = self._value(expr, s.value.span, s.name)
        self.consts[full] = ir.Const(full, expr, value, s.span)
        self.env[full] = value
        scope.ints[s.name] = Sym(full, CONST)

    def _l_AssertStmt(self, s: ast.AssertStmt, scope: _Scope, stack) -> None:
        cond = self.const(s.cond, scope)
        self.assertions.append(ir.Assertion(cond, s.message, s.span))
        if not self._value(cond, s.cond.span, "assert"):
            point = ", ".join(f"{n}={v}" for n, v in sorted(self.env.items()) if n in self.params)
            message = f"assertion failed: {s.message}" if s.message else "assertion failed"
            raise self.error("E205", s.span, f"{message} (at {point})")

    def _l_ScalarDecl(self, s: ast.ScalarDecl, scope: _Scope, stack) -> None:
        if s.dtype not in ir.INT_DTYPES:
            raise self.error("E301", s.dtype_span, f"runtime scalars are integers; got '{s.dtype}'")
        existing = self.scalars.get(s.name)
        if existing is not None and (existing.dtype != s.dtype or not scope.prefix):
            raise self.error("E202", s.span, f"scalar '{s.name}' is already declared")
        if existing is None:
            domain = self._domain(s.domain, scope)
            lo, hi = ir.INT_RANGES[s.dtype]
            if domain is not None and domain.size and not (lo <= domain.low and domain.high <= hi):
                raise self.error(
                    "E311",
                    s.domain.span,
                    f"scalar '{s.name}': {s.dtype} holds {lo}..{hi}, but the range {domain} goes beyond it",
                    hint="narrow the range, or declare a wider dtype (i64)",
                )
            self.scalars[s.name] = ir.Scalar(
                s.name, s.dtype, domain, s.span, form=self._domain_form(s.domain, scope)
            )

    def _l_ScalarDef(self, s: ast.ScalarDef, scope: _Scope, stack) -> None:
        if (
            s.name in scope.ints
            or s.name in scope.tensors
            or s.name in self.scalars
            or s.name in self.derived
        ):
            raise self.error("E202", s.span, f"'{s.name}' is already defined")
        value = self.const(s.value, scope, allow_scalars=True)
        refs = tuple(dict.fromkeys(n for n in _names(s.value) if n in self.scalars or n in self.derived))
        refs += emitted_in(value)
        self.derived[s.name] = ir.Scalar(s.name, "i32", None, s.span, value=value, refs=refs)

    def _l_GuardStmt(self, s: ast.GuardStmt, scope: _Scope, stack) -> None:
        cond = self.const(s.cond, scope, allow_scalars=True)
        if not any(sym.kind in (SCALAR, EMITTED) for sym in free_symbols(cond)):
            raise self.error(
                "E206",
                s.cond.span,
                "a guard tests runtime scalars",
                hint="use assert for compile-time conditions",
            )
        names = tuple(dict.fromkeys(n for n in _names(s.cond) if n in self.scalars or n in self.derived))
        names += tuple(n for n in emitted_in(cond) if n not in names)
        self.guards.append(ir.Guard(cond, s.message, ast.expr_text(s.cond), names, s.span))

    def _l_GoldenDecl(self, s: ast.GoldenDecl, scope: _Scope, stack) -> None:
        if scope.prefix:
            return  # a called layer's golden does not describe the caller
        if not s.path.endswith(".py") or "\x00" in s.path:
            raise self.error("E102", s.span, f"golden must name a .py file, got {s.path!r}")
        self.golden, self.golden_span = s.path, s.span

    def _l_ReductionDecl(self, s: ast.ReductionDecl, scope: _Scope, stack) -> None:
        tensor = scope.tensors.get(s.tensor)
        if tensor is None:
            raise self.error("E201", s.tensor_span, f"unknown tensor '{s.tensor}'", hint="declare it above")
        counts = []
        for what, e in (("splits", s.splits), ("chunks", s.chunks)):
            expr = self.const(e, scope) if e is not None else None
            if expr is not None and self._value(expr, e.span, what) < 1:
                raise self.error("E207", e.span, f"{what} must be at least 1")
            counts.append(expr)
        self.reductions.append(
            ir.Reduction(tensor.name, counts[0], counts[1], tensor.dtype, s.span, source="declared")
        )

    def _reduce_sum_tree(self, r: ast.ReductionDecl, scope: _Scope, task: str) -> None:
        """Record the tree of the reduce_sum whose reducer ``task`` is (rule N203)."""
        tensor = scope.tensors.get(r.tensor)
        splits = self._quiet_const(r.splits, scope)
        if tensor is None or splits is None:
            return  # the lowered tasks report the error
        chunks = self._quiet_const(r.chunks, scope) if r.chunks is not None else None
        self.reductions.append(ir.Reduction(tensor.name, splits, chunks, tensor.dtype, r.span, task=task))

    def _quiet_const(self, e, scope: _Scope) -> Expr | None:
        """``e`` as a compile-time integer, or None (without a diagnostic) when it is not one."""
        mark = len(self.diagnostics)
        try:
            expr = self.const(e, scope)
            evaluate(expr, self.env)
            return expr
        except (_Abort, EvalError):
            reported = getattr(self, "_reported", set())
            for d in self.diagnostics[mark:]:
                reported.discard((d.code, d.span, d.message))
            del self.diagnostics[mark:]
            return None

    def _l_RanksDecl(self, s: ast.RanksDecl, scope: _Scope, stack) -> None:
        expr = self.const(s.count, scope)
        value = self._value(expr, s.count.span, "ranks")
        if value < 1:
            raise self.error("E207", s.count.span, f"ranks must be at least 1, got {value}")
        if self.ranks is None:
            self.ranks = expr
        elif self._value(self.ranks, s.span, "ranks") != value:
            raise self.error("E209", s.span, "a called layer declares a different number of ranks")

    def _l_TensorDecl(self, s: ast.TensorDecl, scope: _Scope, stack) -> None:
        if s.dtype not in ir.DTYPES:
            raise self.error(
                "E301", s.dtype_span, f"unknown dtype '{s.dtype}'", hint=f"one of {', '.join(ir.DTYPES)}"
            )
        if s.name in scope.tensors or s.name in scope.ints:
            if scope.prefix and s.name in scope.tensors:
                self._check_binding(s, scope.tensors[s.name])
                return
            raise self.error("E202", s.span, f"'{s.name}' is already defined")
        if s.direction == "signal" and s.dtype != "i32":
            raise self.error("E301", s.dtype_span, "signal cells are i32 counters")
        shape = tuple(self.const(d, scope, allow_scalars=True) for d in s.shape)
        dims = []
        for d, e in zip(shape, s.shape, strict=True):
            if any(sym.kind == SCALAR or sym.name in self.pending for sym in free_symbols(d)):
                dims.append(None)  # a runtime extent; or a derived capacity, set by derive_capacities
                continue
            v = self._value(d, e.span, "extent")
            if v <= 0:
                raise self.error("E207", e.span, f"extent must be positive, got {v}")
            dims.append(v)
        if scope.call is not None and s.direction in ("input", "output", "inout"):
            raise self.error(
                "E209",
                scope.call.span,  # the call is what is wrong; the declaration is named
                f"call '{scope.call.alias}' does not bind {s.direction} '{s.name}' of layer "
                f"'{scope.layer.name}' (declared at line {s.span.line})",
                hint=f"call {scope.call.alias} = {scope.layer.name}(..., {s.name} = tensor)",
            )
        full = scope.prefix + s.name
        tensor = ir.Tensor(full, s.dtype, shape, tuple(dims), s.direction, s.manual_dep, s.span)
        self.tensors[full] = tensor
        scope.tensors[s.name] = tensor

    def _check_binding(self, s: ast.TensorDecl, bound: ir.Tensor) -> None:
        if bound.dtype != s.dtype:
            raise self.error(
                "E302", s.span, f"'{s.name}' is {s.dtype} but the call binds {bound.name}: {bound.dtype}"
            )
        if len(bound.shape) != len(s.shape):
            raise self.error(
                "E303", s.span, f"'{s.name}' has {len(s.shape)} dims; {bound.name} has {len(bound.shape)}"
            )

    def _l_LayerFor(self, s: ast.LayerFor, scope: _Scope, stack) -> None:
        if s.kind == "pipeline":
            raise self.error("E404", s.span, "layer-level loops are range or parallel")
        if not 1 <= len(s.args) <= 3:
            raise self.error("E404", s.span, "loop bounds take 1 to 3 arguments")
        vals = [self._decision(self.const(a, scope), a.span, "loop bound") for a in s.args]
        start, stop, step = (
            (0, vals[0], 1) if len(vals) == 1 else (vals[0], vals[1], vals[2] if len(vals) == 3 else 1)
        )
        if step <= 0:
            raise self.error("E404", s.span, "loop step must be positive")
        trips = scope.trips * len(range(start, stop, step))
        if trips > MAX_LAYER_ITERATIONS:
            raise self.error(
                "E404",
                s.span,
                f"layer loops expand to {trips:,} iterations; at most {MAX_LAYER_ITERATIONS:,}",
                hint="a task array is one task per iteration; use spmd(N) for N blocks of one task",
            )
        self._define_int(s.var, s.span, scope)
        scope.loop_kinds.append(s.kind)
        outer_trips, scope.trips = scope.trips, trips
        try:
            for v in range(start, stop, step):
                scope.ints[s.var] = Const(v)
                self._layer_body(s.body, scope, stack)
        finally:
            scope.ints.pop(s.var, None)
            scope.loop_kinds.pop()
            scope.trips = outer_trips

    def _l_LayerIf(self, s: ast.LayerIf, scope: _Scope, stack) -> None:
        taken = binop("!=", self.const(s.cond, scope), Const(0))  # the branch, not the value
        cond = self._decision(taken, s.cond.span, "condition")
        self._layer_body(s.then if cond else s.orelse, scope, stack)

    def _l_LayerCall(self, s: ast.LayerCall, scope: _Scope, stack) -> None:
        callee = self.layers.get(s.layer)
        if callee is None:
            raise self.error("E208", s.layer_span, f"unknown layer '{s.layer}'")
        if s.layer in stack:
            raise self.error("E209", s.span, f"layer '{s.layer}' calls itself through {' -> '.join(stack)}")
        if s.alias in scope.calls or s.alias in scope.tasks:
            raise self.error("E202", s.span, f"'{s.alias}' is already defined")
        inner = _Scope(scope.prefix + s.alias + ".", callee, call=s, trips=scope.trips)
        params = {p.name: p for p in callee.params}
        decls = {
            d.name: d for d in ast.layer_stmts(callee.body) if isinstance(d, ast.TensorDecl | ast.TaskIdDecl)
        }
        bound: dict[str, Expr] = {}
        for name, value, span in s.bindings:
            if name in params:
                bound[name] = self.const(value, scope)
            elif isinstance(decls.get(name), ast.TensorDecl):
                if not isinstance(value, ast.Name) or value.id not in scope.tensors:
                    raise self.error("E209", value.span, f"'{name}' must be bound to a tensor of this layer")
                inner.tensors[name] = scope.tensors[value.id]
            elif isinstance(decls.get(name), ast.TaskIdDecl):
                inner.tasks[name] = dict.fromkeys(self._resolve_ref(self._as_ref(value), scope))
            else:
                raise self.error(
                    "E203", span, f"layer '{s.layer}' has no parameter, tensor or taskid '{name}'"
                )
        by_tensor: dict[str, list[str]] = {}
        for name, t in inner.tensors.items():
            by_tensor.setdefault(t.name, []).append(inner.prefix + name)
        for tensor, names in by_tensor.items():
            if len(names) > 1:
                self.aliases.append(ir.Alias(tensor, tuple(names), s.span))
        for p in callee.params:
            expr = bound[p.name] if p.name in bound else self.const(p.default, inner)
            value = self._value(expr, p.span, p.name)
            domain = self._domain(p.domain, inner)
            if domain is not None and value not in domain:
                raise self.error(
                    "E204", s.span, f"{s.alias}: {p.name} = {value} is outside its range {domain}"
                )
            inner.ints[p.name] = expr
        self._layer_body(callee.body, inner, stack + (s.layer,))
        scope.calls[s.alias] = inner


def _names(e) -> list[str]:
    """Names an expression mentions, in source order."""
    if isinstance(e, ast.Name):
        return [e.id]
    if isinstance(e, ast.Unary):
        return _names(e.operand)
    if isinstance(e, ast.Binary):
        return _names(e.left) + _names(e.right)
    if isinstance(e, ast.Call):
        return [n for a in e.args for n in _names(a)]
    return []


def _called_layers(stmts) -> set[str]:
    return {s.layer for s in ast.layer_stmts(stmts) if isinstance(s, ast.LayerCall)}
