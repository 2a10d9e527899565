"""Layer elaboration: parameters, constants, declarations, task arrays and layer calls -> IR.

A layer is elaborated at one parameter point (defaults plus ``--set`` overrides). Every
integer stays symbolic in the root layer's parameters and constants, so the checks can
re-evaluate grids, regions and thresholds at every admissible point. Called layers are
inlined: their tasks and private tensors get the call's alias as a prefix
(``dispatch.push``), their parameters become expressions of the caller's. Tasks and the
references to them are ``dsl.elaborate_tasks``; task bodies ``dsl.elaborate_body``.

The :class:`Elaborator` does the layer statements and composes the other pieces: the
integers of the layer are a :class:`dsl.elaborate_ints.HostInts`, its tasks a
:class:`dsl.elaborate_tasks.TaskElaborator`; all of them build one
:class:`dsl.elaborate_scope.LayerGraph` and report to one
:class:`dsl.elaborate_scope.Diagnostics`.
"""

from __future__ import annotations

from dsl import ast
from dsl.codes import diag
from dsl.elaborate_ints import CONST, HostInts
from dsl.elaborate_rounds import order_after_previous_round
from dsl.elaborate_scope import Abort, Diagnostics, LayerGraph, Scope
from dsl.elaborate_tasks import TaskElaborator, emitted_in
from dsl.limits import MAX_LAYER_ITERATIONS, LimitReached
from lowering import ir, parameters
from lowering.checks.capacity.derived import EMITTED, EmittedUse, PendingConst, derive_capacities
from lowering.perf import paused_gc
from lowering.source import CompileError, Diagnostic, Span
from lowering.symbolic import PARAM, SCALAR, Const, Expr, Sym, binop, free_symbols


class Elaborator:
    """Elaborates the layers of ``module`` (one :meth:`elaborate` per root layer)."""

    def __init__(self, module: ast.Module, file: str, overrides: dict[str, int] | None = None):
        self.module = module
        self.file = file
        self.overrides = dict(overrides or {})
        self.diags = Diagnostics()
        self.layers: dict[str, ast.Layer] = {}
        for layer in module.layers:
            if layer.name in self.layers:
                self.diags.report(diag("E202", layer.span, f"layer '{layer.name}' is defined twice"))
            else:
                self.layers[layer.name] = layer

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.diags.items

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
        self.graph = g = LayerGraph()
        self.ints = HostInts(g, self.diags)
        self.task_elab = TaskElaborator(g, self.ints, self.diags, self.file)
        scope = Scope("", layer)
        unknown = set(self.overrides) - {p.name for p in layer.params}
        for key in sorted(unknown):
            known = ", ".join(p.name for p in layer.params) or "none"
            self.diags.report(
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
        except Abort:
            pass
        self._order_rounds()
        ranks = g.ranks if g.ranks is not None else Const(1)
        graph = ir.Graph(
            name=layer.name,
            file=self.file,
            span=layer.span,
            params=g.params,
            consts=g.consts,
            assertions=g.assertions,
            scalars=g.scalars,
            tensors=g.tensors,
            tasks=g.tasks,
            ranks=ranks,
            nranks=self.ints.value(ranks, layer.span, "ranks"),
            golden=g.golden,
            golden_span=g.golden_span,
            reductions=g.reductions,
            guards=g.guards,
            derived=g.derived,
            structure=tuple(g.structure.items()),
            aliases=tuple(g.aliases),
        )
        if not self.diagnostics and (g.pending or g.emitted):
            uses = [
                EmittedUse(ph, sc.tensors[src].name if src in sc.tensors else None, src, span)
                for ph, (sc, src, span) in g.emitted.items()
            ]
            self.diagnostics.extend(derive_capacities(graph, list(g.pending.values()), uses))
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
        g = self.graph
        by_name = {t.name: t for t in g.tasks}
        pairs = []
        for consumer, ref, scope in g.previous_refs:
            try:
                producers = self.task_elab.resolve_ref(ref, scope)
            except Abort:
                continue
            for producer in producers:
                if consumer not in by_name or producer not in by_name:
                    continue  # a task whose elaboration failed: its own error is reported
                manual = next((n for n in (consumer, producer) if by_name[n].manual), None)
                if manual is not None:
                    self.diags.report(
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
            order_after_previous_round(g.tasks, g.tensors, pairs, g.ranks or Const(1), self.diags.report)

    # ------------------------------------------------------------ parameters
    def _root_params(self, layer: ast.Layer, scope: Scope) -> None:
        for p in layer.params:
            if p.name in scope.ints:
                self.diags.report(diag("E202", p.span, f"parameter '{p.name}' is declared twice"))
                continue
            default = self.ints.value(self.ints.const(p.default, scope), p.default.span, p.name)
            domain = self.ints.domain(p.domain, scope)
            value = self.overrides.get(p.name, default)
            if domain is not None and value not in domain:
                source = "--set" if p.name in self.overrides else "default"
                self.diags.report(
                    diag("E204", p.span, f"{p.name} = {value} ({source}) is outside its range {domain}")
                )
            self.graph.params[p.name] = parameters.Param(p.name, value, default, domain, p.span)
            self.graph.env[p.name] = value
            scope.ints[p.name] = Sym(p.name, PARAM)

    # ------------------------------------------------------------ layer statements
    def _layer_body(self, stmts, scope: Scope, stack: tuple[str, ...]) -> None:
        for s in stmts:
            try:
                getattr(self, "_l_" + type(s).__name__)(s, scope, stack)
            except Abort:
                continue

    def _define_int(self, name: str, span: Span, scope: Scope) -> None:
        if name in scope.ints or name in scope.tensors:
            raise self.diags.error("E202", span, f"'{name}' is already defined")

    def _l_ConstDef(self, s: ast.ConstDef, scope: Scope, stack) -> None:
        self._define_int(s.name, s.span, scope)
        full = scope.prefix + s.name
        if isinstance(s.value, ast.Call) and s.value.func == "derived":  # const PAD = derived(...)
            scope.ints[s.name] = self.ints.capacity_call(s.value, scope, False, name=full)
            return
        expr = self.ints.const(s.value, scope)
        if any(sym.name in self.graph.pending for sym in free_symbols(expr)):  # CMP_COLS = PAD - WIN
            self.graph.pending[full] = PendingConst(full, expr, s.span, False, len(self.graph.guards))
            scope.ints[s.name] = Sym(full, CONST)
            return
        value = self.ints.value(expr, s.value.span, s.name)
        self.graph.consts[full] = parameters.Const(full, expr, value, s.span)
        self.graph.env[full] = value
        scope.ints[s.name] = Sym(full, CONST)

    def _l_AssertStmt(self, s: ast.AssertStmt, scope: Scope, stack) -> None:
        cond = self.ints.const(s.cond, scope)
        self.graph.assertions.append(parameters.Assertion(cond, s.message, s.span))
        if not self.ints.value(cond, s.cond.span, "assert"):
            point = ", ".join(f"{n}={v}" for n, v in sorted(self.graph.env.items()) if n in self.graph.params)
            message = f"assertion failed: {s.message}" if s.message else "assertion failed"
            raise self.diags.error("E205", s.span, f"{message} (at {point})")

    def _l_ScalarDecl(self, s: ast.ScalarDecl, scope: Scope, stack) -> None:
        if s.dtype not in ir.INT_DTYPES:
            raise self.diags.error("E301", s.dtype_span, f"runtime scalars are integers; got '{s.dtype}'")
        existing = self.graph.scalars.get(s.name)
        if existing is not None and (existing.dtype != s.dtype or not scope.prefix):
            raise self.diags.error("E202", s.span, f"scalar '{s.name}' is already declared")
        if existing is None:
            domain = self.ints.domain(s.domain, scope)
            lo, hi = ir.INT_RANGES[s.dtype]
            if domain is not None and domain.size and not (lo <= domain.low and domain.high <= hi):
                raise self.diags.error(
                    "E311",
                    s.domain.span,
                    f"scalar '{s.name}': {s.dtype} holds {lo}..{hi}, but the range {domain} goes beyond it",
                    hint="narrow the range, or declare a wider dtype (i64)",
                )
            self.graph.scalars[s.name] = parameters.Scalar(
                s.name, s.dtype, domain, s.span, form=self.ints.domain_form(s.domain, scope)
            )

    def _l_ScalarDef(self, s: ast.ScalarDef, scope: Scope, stack) -> None:
        if (
            s.name in scope.ints
            or s.name in scope.tensors
            or s.name in self.graph.scalars
            or s.name in self.graph.derived
        ):
            raise self.diags.error("E202", s.span, f"'{s.name}' is already defined")
        value = self.ints.const(s.value, scope, allow_scalars=True)
        refs = tuple(
            dict.fromkeys(n for n in _names(s.value) if n in self.graph.scalars or n in self.graph.derived)
        )
        refs += emitted_in(value)
        self.graph.derived[s.name] = parameters.Scalar(s.name, "i32", None, s.span, value=value, refs=refs)

    def _l_GuardStmt(self, s: ast.GuardStmt, scope: Scope, stack) -> None:
        cond = self.ints.const(s.cond, scope, allow_scalars=True)
        if not any(sym.kind in (SCALAR, EMITTED) for sym in free_symbols(cond)):
            raise self.diags.error(
                "E206",
                s.cond.span,
                "a guard tests runtime scalars",
                hint="use assert for compile-time conditions",
            )
        names = tuple(
            dict.fromkeys(n for n in _names(s.cond) if n in self.graph.scalars or n in self.graph.derived)
        )
        names += tuple(n for n in emitted_in(cond) if n not in names)
        self.graph.guards.append(parameters.Guard(cond, s.message, ast.expr_text(s.cond), names, s.span))

    def _l_GoldenDecl(self, s: ast.GoldenDecl, scope: Scope, stack) -> None:
        if scope.prefix:
            return  # a called layer's golden does not describe the caller
        if not s.path.endswith(".py") or "\x00" in s.path:
            raise self.diags.error("E102", s.span, f"golden must name a .py file, got {s.path!r}")
        self.graph.golden, self.graph.golden_span = s.path, s.span

    def _l_TaskIdDecl(self, s: ast.TaskIdDecl, scope: Scope, stack) -> None:
        self.task_elab.check_taskid(s, scope)

    def _l_TaskDef(self, s: ast.TaskDef, scope: Scope, stack) -> None:
        name = self.task_elab.define(s, scope)
        if s.reduction is not None:
            self._reduce_sum_tree(s.reduction, scope, name)

    def _l_ReductionDecl(self, s: ast.ReductionDecl, scope: Scope, stack) -> None:
        tensor = scope.tensors.get(s.tensor)
        if tensor is None:
            raise self.diags.error(
                "E201", s.tensor_span, f"unknown tensor '{s.tensor}'", hint="declare it above"
            )
        counts = []
        for what, e in (("splits", s.splits), ("chunks", s.chunks)):
            expr = self.ints.const(e, scope) if e is not None else None
            if expr is not None and self.ints.value(expr, e.span, what) < 1:
                raise self.diags.error("E207", e.span, f"{what} must be at least 1")
            counts.append(expr)
        self.graph.reductions.append(
            ir.Reduction(tensor.name, counts[0], counts[1], tensor.dtype, s.span, source="declared")
        )

    def _reduce_sum_tree(self, r: ast.ReductionDecl, scope: Scope, task: str) -> None:
        """Record the tree of the reduce_sum whose reducer ``task`` is (rule N203)."""
        tensor = scope.tensors.get(r.tensor)
        splits = self.ints.quiet_const(r.splits, scope)
        if tensor is None or splits is None:
            return  # the lowered tasks report the error
        chunks = self.ints.quiet_const(r.chunks, scope) if r.chunks is not None else None
        self.graph.reductions.append(
            ir.Reduction(tensor.name, splits, chunks, tensor.dtype, r.span, task=task)
        )

    def _l_RanksDecl(self, s: ast.RanksDecl, scope: Scope, stack) -> None:
        expr = self.ints.const(s.count, scope)
        value = self.ints.value(expr, s.count.span, "ranks")
        if value < 1:
            raise self.diags.error("E207", s.count.span, f"ranks must be at least 1, got {value}")
        if self.graph.ranks is None:
            self.graph.ranks = expr
        elif self.ints.value(self.graph.ranks, s.span, "ranks") != value:
            raise self.diags.error("E209", s.span, "a called layer declares a different number of ranks")

    def _l_TensorDecl(self, s: ast.TensorDecl, scope: Scope, stack) -> None:
        if s.dtype not in ir.DTYPES:
            raise self.diags.error(
                "E301", s.dtype_span, f"unknown dtype '{s.dtype}'", hint=f"one of {', '.join(ir.DTYPES)}"
            )
        if s.name in scope.tensors or s.name in scope.ints:
            if scope.prefix and s.name in scope.tensors:
                self._check_binding(s, scope.tensors[s.name])
                return
            raise self.diags.error("E202", s.span, f"'{s.name}' is already defined")
        if s.direction == "signal" and s.dtype != "i32":
            raise self.diags.error("E301", s.dtype_span, "signal cells are i32 counters")
        shape = tuple(self.ints.const(d, scope, allow_scalars=True) for d in s.shape)
        dims = []
        for d, e in zip(shape, s.shape, strict=True):
            if any(sym.kind == SCALAR or sym.name in self.graph.pending for sym in free_symbols(d)):
                dims.append(None)  # a runtime extent; or a derived capacity, set by derive_capacities
                continue
            v = self.ints.value(d, e.span, "extent")
            if v <= 0:
                raise self.diags.error("E207", e.span, f"extent must be positive, got {v}")
            dims.append(v)
        if scope.call is not None and s.direction in ("input", "output", "inout"):
            raise self.diags.error(
                "E209",
                scope.call.span,  # the call is what is wrong; the declaration is named
                f"call '{scope.call.alias}' does not bind {s.direction} '{s.name}' of layer "
                f"'{scope.layer.name}' (declared at line {s.span.line})",
                hint=f"call {scope.call.alias} = {scope.layer.name}(..., {s.name} = tensor)",
            )
        full = scope.prefix + s.name
        tensor = ir.Tensor(full, s.dtype, shape, tuple(dims), s.direction, s.manual_dep, s.span)
        self.graph.tensors[full] = tensor
        scope.tensors[s.name] = tensor

    def _check_binding(self, s: ast.TensorDecl, bound: ir.Tensor) -> None:
        if bound.dtype != s.dtype:
            raise self.diags.error(
                "E302", s.span, f"'{s.name}' is {s.dtype} but the call binds {bound.name}: {bound.dtype}"
            )
        if len(bound.shape) != len(s.shape):
            raise self.diags.error(
                "E303", s.span, f"'{s.name}' has {len(s.shape)} dims; {bound.name} has {len(bound.shape)}"
            )

    def _l_LayerFor(self, s: ast.LayerFor, scope: Scope, stack) -> None:
        if s.kind == "pipeline":
            raise self.diags.error("E404", s.span, "layer-level loops are range or parallel")
        if not 1 <= len(s.args) <= 3:
            raise self.diags.error("E404", s.span, "loop bounds take 1 to 3 arguments")
        vals = [self.ints.decision(self.ints.const(a, scope), a.span, "loop bound") for a in s.args]
        start, stop, step = (
            (0, vals[0], 1) if len(vals) == 1 else (vals[0], vals[1], vals[2] if len(vals) == 3 else 1)
        )
        if step <= 0:
            raise self.diags.error("E404", s.span, "loop step must be positive")
        trips = scope.trips * max(0, -(-(stop - start) // step))  # len(range()) overflows past 2^63
        if trips > MAX_LAYER_ITERATIONS:
            raise self.diags.error(
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

    def _l_LayerIf(self, s: ast.LayerIf, scope: Scope, stack) -> None:
        taken = binop("!=", self.ints.const(s.cond, scope), Const(0))  # the branch, not the value
        cond = self.ints.decision(taken, s.cond.span, "condition")
        self._layer_body(s.then if cond else s.orelse, scope, stack)

    def _l_LayerCall(self, s: ast.LayerCall, scope: Scope, stack) -> None:
        callee = self.layers.get(s.layer)
        if callee is None:
            raise self.diags.error("E208", s.layer_span, f"unknown layer '{s.layer}'")
        if s.layer in stack:
            raise self.diags.error(
                "E209", s.span, f"layer '{s.layer}' calls itself through {' -> '.join(stack)}"
            )
        if s.alias in scope.calls or s.alias in scope.tasks:
            raise self.diags.error("E202", s.span, f"'{s.alias}' is already defined")
        inner = Scope(scope.prefix + s.alias + ".", callee, call=s, trips=scope.trips)
        params = {p.name: p for p in callee.params}
        decls = {
            d.name: d for d in ast.layer_stmts(callee.body) if isinstance(d, ast.TensorDecl | ast.TaskIdDecl)
        }
        bound: dict[str, Expr] = {}
        for name, value, span in s.bindings:
            if name in params:
                bound[name] = self.ints.const(value, scope)
            elif isinstance(decls.get(name), ast.TensorDecl):
                if not isinstance(value, ast.Name) or value.id not in scope.tensors:
                    raise self.diags.error(
                        "E209", value.span, f"'{name}' must be bound to a tensor of this layer"
                    )
                inner.tensors[name] = scope.tensors[value.id]
            elif isinstance(decls.get(name), ast.TaskIdDecl):
                inner.tasks[name] = dict.fromkeys(
                    self.task_elab.resolve_ref(self.task_elab.as_ref(value), scope)
                )
            else:
                raise self.diags.error(
                    "E203", span, f"layer '{s.layer}' has no parameter, tensor or taskid '{name}'"
                )
        by_tensor: dict[str, list[str]] = {}
        for name, t in inner.tensors.items():
            by_tensor.setdefault(t.name, []).append(inner.prefix + name)
        for tensor, names in by_tensor.items():
            if len(names) > 1:
                self.graph.aliases.append(ir.Alias(tensor, tuple(names), s.span))
        for p in callee.params:
            expr = bound[p.name] if p.name in bound else self.ints.const(p.default, inner)
            value = self.ints.value(expr, p.span, p.name)
            domain = self.ints.domain(p.domain, inner)
            if domain is not None and value not in domain:
                raise self.diags.error(
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
