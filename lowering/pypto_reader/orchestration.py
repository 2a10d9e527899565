"""Orchestration code: the statements of ``@pl.jit`` / inline functions between the tasks.

``OrchestrationReader`` interprets an orchestration function statement by statement: names
and frames (inline helpers are spliced in, with their arguments bound and their return
values -- tensors, task ids, tuples -- flowing back), loops (unrolled when their bounds are
static; a sequential loop sets R-seq for the tasks in it), ``if``s on static values and
``pl.manual_scope``. The ``pl.*`` calls (``pl.create_tensor`` / ``pl.reshape`` / slice views,
task-id arrays, ``pl.submit``, host-side reads) are ``orchestration_calls``; the task scopes
themselves are built by ``lowering.pypto_reader.scopes.OrchReader``, which extends it. What
cannot be modelled becomes a P001 note; no task is dropped silently.
"""

from __future__ import annotations

import ast

from lowering.pypto_reader.directions import annotation_direction, tensor_param
from lowering.pypto_reader.exprs import Evaluator, dotted
from lowering.pypto_reader.modules import ModuleEval, ModuleInfo, function_val
from lowering.pypto_reader.notes import line_span, span_of
from lowering.pypto_reader.orchestration_calls import OrchestrationCalls
from lowering.pypto_reader.program import Frame, Program, frame_for
from lowering.pypto_reader.tensors import TensorInfo
from lowering.pypto_reader.values import (
    UNKNOWN,
    ClassVal,
    DtypeVal,
    FuncVal,
    IntVal,
    PlRef,
    PyVal,
    SelfVal,
    SeqVal,
    TaskArrayVal,
    TaskIdVal,
    TensorVal,
    Unknown,
    Val,
    unpacked,
)
from lowering.symbolic import DYNAMIC, Const, Sym

MAX_TASKS = 20000
MAX_DEPTH = 48
SEQUENTIAL = {"pl.range": True, "range": True, "pl.unroll": True, "pl.parallel": False, "pl.pipeline": True}
PRESET_CORES = {"available_aiv_count": 48, "available_cluster_count": 24}  # a2a3


class _Return(Exception):
    def __init__(self, value: Val):
        self.value = value


class OrchestrationReader(OrchestrationCalls, Evaluator):
    """Interprets orchestration functions; ``OrchReader`` adds the tasks."""

    def __init__(self, prog: Program, module: ModuleInfo):
        super().__init__(module.file, prog.notes, prog.params.env)
        self.prog = prog
        self.frames: list[Frame] = [Frame(module)]
        self.loops: list[tuple[str, object]] = []  # (var, value) of enclosing orchestration loops
        self.sequential = 0
        self.manual = 0
        self.depth = 0
        self.pending_name: str | None = None  # the name a value is being assigned to

    def loop_indices(self) -> list[object]:
        """The values of the enclosing orchestration loops' variables, as ints where known."""
        return [
            v.expr.value if isinstance(v, IntVal) and isinstance(v.expr, Const) else v for _, v in self.loops
        ]

    # ---------------------------------------------------------------- frames and names
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def use_module(self, module: ModuleInfo) -> None:
        self.file = module.file

    def lookup(self, name: str, node: ast.AST) -> Val:
        f = self.frame
        if name in f.locals:
            return f.locals[name]
        if name == "self" and f.self_val is not None:
            return f.self_val
        if name in f.module.globals:
            return f.module.globals[name]
        return Unknown(f"unknown name '{name}'")

    def argv_default(self, attr: str, node: ast.AST) -> Val:
        opt = self.frame.module.argv.get(attr)
        if opt is None or opt.default is None:
            return Unknown(f"argv option '{attr}'")
        return self.eval(opt.default)

    def attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        if isinstance(base, SelfVal):
            m = base.cls.method(attr)
            return m if m is not None else Unknown(f"self.{attr}")
        if isinstance(base, ClassVal):
            m = base.method(attr)
            return m if m is not None else Unknown(f"{base.node.name}.{attr}")
        return super().attribute(base, attr, node)

    def tensor_shape(self, t: TensorVal) -> Val:
        shape = t.shape if t.shape is not None else getattr(self.prog.tensors.get(t.root), "shape", None)
        return SeqVal(tuple(IntVal(d) for d in shape)) if shape is not None else UNKNOWN

    # ---------------------------------------------------------------- running functions
    def run_entry(self, func: FuncVal, rank_params: frozenset[str]) -> None:
        """Bind the entry's parameters to program tensors and scalars, then run its body."""
        self.use_module(func.module)
        frame = frame_for(func)
        self.frames = [frame]
        args = func.node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if func.owner is not None and params and params[0].arg == "self":
            params = params[1:]
        for p in params:
            frame.locals[p.arg] = self.entry_param(p, rank_params)
        try:
            self.body(func.node.body)
        except _Return:
            pass

    def entry_param(self, p: ast.arg, rank_params: frozenset[str]) -> Val:
        span = span_of(self.file, p)
        ann = p.annotation
        kind, inner = annotation_direction(self, ann)
        tp = tensor_param(self, inner)
        if tp is not None:
            dtype, shape, distributed = tp
            tkind = {"in": "input", "out": "output", "inout": "inout"}[kind]
            info = self.prog.tensors.add(
                TensorInfo(
                    p.arg,
                    dtype,
                    shape,
                    "window" if distributed else tkind,
                    False,
                    span,
                    distributed,
                    kind == "inout",
                )
            )
            if shape is None:
                self.notes.not_modelled(
                    span,
                    f"the shape of parameter '{p.arg}' (a bare pl.Tensor)",
                    "its accesses are compared conservatively: any two may overlap",
                )
            return TensorVal(info.name)
        scalar = _scalar_dtype(self, inner)
        if scalar == "task_id":
            return TaskIdVal(())
        if p.arg in rank_params:
            return IntVal(Sym("rank", "rank"))
        if scalar is not None or ann is None:
            self.prog.scalars.setdefault(p.arg, (scalar or "i32", span))
            return IntVal(Sym(p.arg, "scalar"))
        return Unknown(f"parameter '{p.arg}'")

    def body(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            try:
                self.statement(s)
            except (_Return, RecursionError):
                raise
            except Exception as err:  # noqa: BLE001 - one statement must not stop the program
                self.notes.add(
                    "P004",
                    span_of(self.file, s),
                    f"the reader failed on this statement ({type(err).__name__}: {err})",
                )

    def call_function(self, func: FuncVal, node: ast.Call) -> Val:
        """Splice an inline (or plain helper) function: bind arguments, run, return its value."""
        if self.depth >= MAX_DEPTH:
            self.notes.not_modelled(
                span_of(self.file, node), f"a call chain deeper than {MAX_DEPTH}", "the call is skipped"
            )
            return UNKNOWN
        frame = frame_for(func)
        self.bind_args(frame, func, node, skip_self=func.owner is not None)
        saved_file = self.file
        self.frames.append(frame)
        self.use_module(func.module)
        self.depth += 1
        try:
            self.body(func.node.body)
            return PyVal(None)
        except _Return as ret:
            return ret.value
        finally:
            self.depth -= 1
            self.frames.pop()
            self.file = saved_file

    def bind_args(self, frame: Frame, func: FuncVal, node: ast.Call, skip_self: bool) -> dict[str, ast.expr]:
        args = func.node.args
        params = [*args.posonlyargs, *args.args]
        if skip_self and params and params[0].arg == "self":
            params = params[1:]
        names = [p.arg for p in params]
        bound_nodes: dict[str, ast.expr] = {}
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        for name, a in zip(names, positional, strict=False):
            bound_nodes[name] = a
        for kw in node.keywords:
            if kw.arg is not None:
                bound_nodes[kw.arg] = kw.value
        defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults, strict=False))
        for kwarg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
            names.append(kwarg.arg)
            if default is not None:
                defaults[kwarg.arg] = default
        for name in names:
            if name in bound_nodes:
                frame.locals[name] = self.eval(_unwrap_no_dep(bound_nodes[name]))
            elif name in defaults:
                saved = self.frames
                self.frames = [Frame(func.module)]
                try:
                    frame.locals[name] = self.eval(defaults[name])
                finally:
                    self.frames = saved
            else:
                frame.locals[name] = Unknown(f"unbound parameter '{name}'")
        return bound_nodes

    # ---------------------------------------------------------------- statements
    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Constant):
                self.eval(s.value)
        elif isinstance(s, ast.Assign):
            value = (
                self.eval_assign_value(s.targets[0], s.value) if len(s.targets) == 1 else self.eval(s.value)
            )
            for t in s.targets:
                self.assign(t, value, s)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.eval(s.value), s)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            old = self.lookup(s.target.id, s)
            self.assign(s.target, self.binary(s.op, old, self.eval(s.value), s), s)
        elif isinstance(s, ast.Return):
            raise _Return(self.eval(s.value) if s.value is not None else PyVal(None))
        elif isinstance(s, ast.With):
            self.with_stmt(s)
        elif isinstance(s, ast.For):
            self.for_stmt(s)
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.While):
            self.notes.not_modelled(
                line_span(self.file, s),
                "a while loop in orchestration (its task count depends on runtime values)",
                "its body was read once: the tasks in it stand for an unknown number of tasks",
            )
            self.sequential += 1
            self.loops.append(("*", "*"))
            try:
                self.body(s.body)
            finally:
                self.loops.pop()
                self.sequential -= 1
        elif isinstance(s, ast.Pass | ast.Assert | ast.Import | ast.ImportFrom | ast.Global | ast.Nonlocal):
            return
        elif isinstance(s, ast.FunctionDef):
            ev = ModuleEval(self.frame.module, self.notes, self.prog.params)
            self.frame.locals[s.name] = function_val(s, self.frame.module, ev)
        else:
            self.notes.not_modelled(
                line_span(self.file, s),
                f"a {type(s).__name__} statement in orchestration",
                "it is skipped; tasks in it are not modelled",
            )

    def assign(self, target: ast.expr, value: Val, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            self.frame.locals[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            for t, item in zip(target.elts, unpacked(value, len(target.elts)), strict=True):
                self.assign(t, item, stmt)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, TaskArrayVal):
                self.array_store(base, target.slice, value)
            elif isinstance(base, TensorVal):
                self.notes.not_modelled(
                    span_of(self.file, target),
                    "a tensor write outside any kernel scope",
                    "PyPTO rejects it (misplaced tensor op); it is not a task here",
                )

    # ---------------------------------------------------------------- loops and branches
    def for_stmt(self, s: ast.For) -> None:
        it = s.iter
        path = self.callee_path(it)
        if path == "pl.spmd":
            self.spmd_for(s)
            return
        values = self.iteration_values(it, path)
        sequential = SEQUENTIAL.get(path or "", True)
        if values is None:
            self.notes.not_modelled(
                line_span(self.file, s),
                "an orchestration loop whose trip count the reader cannot evaluate (a dynamic task count)",
                "its body was read once: each task in it stands for an unknown number of tasks, so counts "
                "and cones that depend on it are not checked",
            )
            values = ["*"]
        self.sequential += int(sequential)
        try:
            for v in values:
                if len(self.prog.tasks) >= MAX_TASKS:
                    self.notes.not_modelled(
                        line_span(self.file, s),
                        f"more than {MAX_TASKS} tasks",
                        "the remaining iterations were not read; their tasks are missing from the graph",
                    )
                    break
                self.bind_target(s.target, v)
                self.loops.append((ast.unparse(s.target), v))
                try:
                    self.body(s.body)
                finally:
                    self.loops.pop()
        finally:
            self.sequential -= int(sequential)

    def bind_target(self, target: ast.expr, v: object) -> None:
        if isinstance(target, ast.Name):
            if isinstance(v, Val):
                self.frame.locals[target.id] = v
            elif isinstance(v, int):
                self.frame.locals[target.id] = IntVal(Const(v))
            else:
                self.frame.locals[target.id] = IntVal(Sym(target.id, DYNAMIC))
        elif isinstance(target, ast.Tuple | ast.List):
            items = v.items if isinstance(v, SeqVal) else None
            for i, t in enumerate(target.elts):
                self.bind_target(t, items[i] if items and i < len(items) else "*")

    def callee_path(self, node: ast.expr) -> str | None:
        """What ``node`` calls, when it is a call: a canonical ``pl`` path, or the dotted name."""
        if not isinstance(node, ast.Call):
            return None
        func = self.eval(node.func)
        return func.path if isinstance(func, PlRef) else dotted(node.func)

    def iteration_values(self, it: ast.expr, path: str | None) -> list | None:
        if isinstance(it, ast.Call) and path in SEQUENTIAL:
            bounds = [self.static(self.eval(a)) for a in it.args if not isinstance(a, ast.Starred)]
            if not bounds or not all(isinstance(b, int) for b in bounds) or len(bounds) > 3:
                return None
            return list(range(*bounds))  # type: ignore[arg-type]
        v = self.eval(it)
        if isinstance(v, SeqVal):
            return list(v.items)
        s = self.static(v)
        if isinstance(s, tuple):
            return [IntVal(Const(x)) if isinstance(x, int) else PyVal(x) for x in s]
        return None

    def if_stmt(self, s: ast.If) -> None:
        truth = self.truth(self.eval(s.test))
        if truth is not None:
            self.body(s.body if truth else s.orelse)
            return
        self.notes.not_modelled(
            span_of(self.file, s.test),
            "an orchestration branch on a value known only at run time",
            "the tasks of both branches are in the graph, unconditionally",
        )
        self.body(s.body)
        self.body(s.orelse)

    # ---------------------------------------------------------------- scopes
    def with_stmt(self, s: ast.With) -> None:
        if len(s.items) != 1:
            self.notes.not_modelled(
                line_span(self.file, s), "a with statement of several items", "its body is read as is"
            )
            self.body(s.body)
            return
        item = s.items[0]
        ctx = item.context_expr
        func = self.eval(ctx.func) if isinstance(ctx, ast.Call) else self.eval(ctx)
        path = func.path if isinstance(func, PlRef) else None
        if path == "pl.at" and isinstance(ctx, ast.Call):
            level = self.kw(ctx, "level", 0)
            lv = self.eval(level) if level is not None else None
            if isinstance(lv, PlRef) and lv.path.endswith("CORE_GROUP"):
                self.scope_task(s, ctx, None, item.optional_vars, s.body)
            else:
                self.body(s.body)  # a hierarchy scope (HOST/CHIP level): orchestration inside
            return
        if path == "pl.spmd" and isinstance(ctx, ast.Call):
            self.scope_task(s, ctx, ctx, item.optional_vars, s.body)
            return
        if path == "pl.manual_scope" or (path == "pl.scope" and self.manual_mode(ctx)):
            self.manual += 1
            try:
                self.body(s.body)
            finally:
                self.manual -= 1
            return
        if path in ("pl.scope", "pl.cluster"):
            self.body(s.body)
            return
        self.notes.not_modelled(
            line_span(self.file, s),
            f"the context manager '{ast.unparse(ctx)}' in orchestration",
            "its body is read as plain orchestration code",
        )
        self.body(s.body)

    def manual_mode(self, ctx: ast.expr) -> bool:
        if not isinstance(ctx, ast.Call):
            return False
        mode = self.kw(ctx, "mode", 0)
        v = self.eval(mode) if mode is not None else None
        return isinstance(v, PlRef) and v.path.endswith("MANUAL")

    def kw(self, call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
        for k in call.keywords:
            if k.arg == name:
                return k.value
        if position is not None and position < len(call.args):
            return call.args[position]
        return None

    def flag(self, call: ast.Call | None, name: str) -> bool:
        if call is None:
            return False
        node = self.kw(call, name)
        if node is None:
            return False
        truth = self.truth(self.eval(node))
        if truth is None:
            self.notes.not_modelled(
                span_of(self.file, node),
                f"{name}= with a value the reader cannot evaluate",
                f"{name} is assumed True, the conservative reading for the rules",
            )
            return True
        return truth

    # ---------------------------------------------------------------- task creation (scopes.py)
    def scope_task(self, stmt, at_call, spmd_call, as_name, body, block_var=None) -> None:
        raise NotImplementedError

    def spmd_for(self, s: ast.For) -> None:
        raise NotImplementedError

    def kernel_task(
        self,
        call,
        callee,
        grid,
        scope_calls,
        as_name,
        stmt,
        flags_call=None,
    ) -> str:
        raise NotImplementedError

    def task_name(self, hint: str) -> tuple[str, str, int | None]:
        raise NotImplementedError

    def deps_of(self, calls) -> list:
        raise NotImplementedError

    def add_task(self, *args, **kwargs) -> None:
        raise NotImplementedError


# ---------------------------------------------------------------- helpers


def _unwrap_no_dep(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("no_dep") and node.args:
        return node.args[0]
    return node


def _scalar_dtype(ev: Evaluator, node: ast.expr | None) -> str | None:
    if not isinstance(node, ast.Subscript):
        v = ev.eval(node) if node is not None else None
        if isinstance(v, PlRef) and v.path in ("pl.TaskId",):
            return "task_id"
        return None
    base = ev.eval(node.value)
    if isinstance(base, PlRef) and base.path == "pl.Scalar":
        d = ev.eval(node.slice)
        if isinstance(d, DtypeVal):
            return "task_id" if d.name == "TASK_ID" else (d.dtype or "i32")
    return None
