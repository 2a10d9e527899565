"""Orchestration code: the statements of ``@pl.jit`` / inline functions between the tasks.

``OrchestrationReader`` interprets an orchestration function statement by statement: names
and frames (inline helpers are spliced in, with their arguments bound and their return
values -- tensors, task ids, tuples -- flowing back), loops (unrolled when their bounds are
static; a sequential loop sets R-seq for the tasks in it), ``if``s on static values,
``pl.manual_scope``, ``pl.create_tensor`` / ``pl.reshape`` / slice views, task-id arrays,
``pl.submit`` and host-side reads. The task scopes themselves are built by
``lowering.pypto_reader.scopes.OrchReader``, which extends it. What cannot be modelled
becomes a P001 note; no task is dropped silently.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lowering.ir import Task
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.directions import annotation_direction, tensor_param
from lowering.pypto_reader.exprs import Evaluator, dotted
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import Notes, line_span, span_of
from lowering.pypto_reader.tensors import TensorInfo, TensorTable
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
)
from lowering.source import Span
from lowering.symbolic import DYNAMIC, Const, Expr, Sym, binop

MAX_TASKS = 20000
MAX_DEPTH = 48
SEQUENTIAL = {"pl.range": True, "range": True, "pl.unroll": True, "pl.parallel": False, "pl.pipeline": True}
PRESET_CORES = {"available_aiv_count": 48, "available_cluster_count": 24}  # a2a3


class _Return(Exception):
    def __init__(self, value: Val):
        self.value = value


@dataclass
class Frame:
    """Locals of one orchestration function activation."""

    module: ModuleInfo
    locals: dict[str, Val] = field(default_factory=dict)
    self_val: Val | None = None


@dataclass
class Program:
    """Everything read from one entry: tasks, tensors, scalars, ranks."""

    notes: Notes
    params: Params
    tensors: TensorTable = field(default_factory=TensorTable)
    tasks: list[Task] = field(default_factory=list)
    scalars: dict[str, tuple[str, Span]] = field(default_factory=dict)
    signal_tensors: set[str] = field(default_factory=set)
    window_tensors: set[str] = field(default_factory=set)
    task_names: set[str] = field(default_factory=set)
    bases: dict[tuple, str] = field(default_factory=dict)
    used_bases: set[str] = field(default_factory=set)
    ranks: Expr = Const(1)
    rank_params: frozenset[str] = frozenset()


class OrchestrationReader(Evaluator):
    """Interprets orchestration functions; ``OrchReader`` adds the tasks."""

    """Interprets orchestration functions, creating the tasks of one program."""

    def __init__(self, prog: Program, module: ModuleInfo):
        super().__init__(module.file, prog.notes, prog.params.env)
        self.prog = prog
        self.frames: list[Frame] = [Frame(module)]
        self.loops: list[tuple[str, object]] = []  # (var, value) of enclosing orchestration loops
        self.sequential = 0
        self.manual = 0
        self.depth = 0

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
        frame = Frame(func.module)
        if func.owner is not None:
            cls = func.module.globals.get(func.owner)
            if isinstance(cls, ClassVal):
                frame.self_val = SelfVal(cls)
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
        frame = Frame(func.module)
        if func.owner is not None:
            cls = func.module.globals.get(func.owner)
            if isinstance(cls, ClassVal):
                frame.self_val = SelfVal(cls)
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
            from lowering.pypto_reader.modules import ModuleEval, function_val

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
            items = (
                value.items if isinstance(value, SeqVal) and len(value.items) == len(target.elts) else None
            )
            for i, t in enumerate(target.elts):
                self.assign(t, items[i] if items else UNKNOWN, stmt)
        elif isinstance(target, ast.Subscript):
            base = self.eval(target.value)
            if isinstance(base, TaskArrayVal):
                self.array_store(base, target.slice, value, target)
            elif isinstance(base, TensorVal):
                self.notes.not_modelled(
                    span_of(self.file, target),
                    "a tensor write outside any kernel scope",
                    "PyPTO rejects it (misplaced tensor op); it is not a task here",
                )

    def array_store(self, arr: TaskArrayVal, index: ast.expr, value: Val, node: ast.AST) -> None:
        tasks = value.tasks if isinstance(value, TaskIdVal) else ()
        if isinstance(value, TaskArrayVal):
            tasks = value.all_tasks()
        i = self.static(self.eval(index))
        if isinstance(i, int):
            arr.cells[i] = tasks
        else:
            arr.unknown = (*arr.unknown, *tasks)

    # ---------------------------------------------------------------- loops and branches
    def for_stmt(self, s: ast.For) -> None:
        it = s.iter
        func = self.eval(it.func) if isinstance(it, ast.Call) else None
        path = (
            func.path if isinstance(func, PlRef) else (dotted(it.func) if isinstance(it, ast.Call) else None)
        )
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

    # ---------------------------------------------------------------- calls
    def call_other(self, func: Val, node: ast.Call) -> Val:
        if isinstance(func, FuncVal):
            if func.kind in ("incore", "extern"):
                name = self.kernel_task(node, func, Const(1), [], None, node)
                return TaskIdVal((name,))
            if func.kind == "host":
                return UNKNOWN
            return self.call_function(func, node)
        if isinstance(func, ClassVal):
            return PyVal(None)
        name = ast.unparse(node.func)
        if isinstance(func, Unknown) and name.split(".")[0] in (
            "torch",
            "golden",
            "np",
            "numpy",
            "print",
            "logging",
        ):
            return UNKNOWN
        if name in ("print", "isinstance", "len", "range", "list", "tuple", "dict", "zip", "enumerate"):
            return UNKNOWN
        self.notes.not_modelled(
            span_of(self.file, node),
            f"a call to '{name}', which the reader cannot resolve",
            "if it submits tasks, they are missing from the graph",
        )
        return UNKNOWN

    def call_pl(self, path: str, node: ast.Call) -> Val:
        if path in ("pl.create_tensor", "pl.tensor.create_tensor", "pl.tensor.create"):
            return self.create_tensor(node)
        if path in ("pl.array.create",):
            b = self.arguments(node, ["extent", "dtype"])
            d = self.eval(b["dtype"]) if "dtype" in b else None
            size = self.int_expr(self.eval(b["extent"])) if "extent" in b else None
            if isinstance(d, DtypeVal) and d.name == "TASK_ID":
                return TaskArrayVal(size)
            return UNKNOWN
        if path == "pl.array.update_element":
            b = self.arguments(node, ["array", "index", "value"])
            arr = self.eval(b["array"]) if "array" in b else None
            if isinstance(arr, TaskArrayVal) and "index" in b and "value" in b:
                self.array_store(arr, b["index"], self.eval(b["value"]), node)
            return arr or UNKNOWN
        if path == "pl.array.get_element":
            b = self.arguments(node, ["array", "index"])
            arr = self.eval(b["array"]) if "array" in b else None
            if isinstance(arr, TaskArrayVal):
                i = self.static(self.eval(b["index"])) if "index" in b else None
                return TaskIdVal(arr.cells.get(i, ()) if isinstance(i, int) else arr.all_tasks())
            return UNKNOWN
        if path == "pl.system.task_dummy":
            name, base, index = self.task_name("task_dummy", (self.file, node.lineno, node.col_offset))
            after = self.deps_of([node])
            self.add_task(name, base, index, Const(0), None, (), node, after, False, False, None, False, None)
            return TaskIdVal((name,))
        if path == "pl.system.task_invalid":
            return TaskIdVal(())
        if path in ("pl.submit", "pl.spmd_submit"):
            return self.submit(path, node)
        if path in ("pl.reshape", "pl.tensor.reshape", "pl.tensor.view", "pl.reinterpret_view"):
            return self.reshape(node)
        if path in ("pl.slice", "pl.tensor.slice"):
            return self.slice_view(node)
        if path in ("pl.read", "pl.tensor.read", "pl.write", "pl.tensor.write"):
            what = "read" if path.endswith("read") else "write"
            self.notes.not_modelled(
                span_of(self.file, node),
                f"a host-side pl.{what} in orchestration (the orchestrator blocks until the tensor's "
                + ("producer" if what == "read" else "producer and consumers")
                + " complete)",
                "this implicit ordering is not in the graph: findings it would rule out may be false positives",
            )
            return IntVal(Sym(f"host_{what}@{node.lineno}", DYNAMIC))
        if path in ("pl.tensor.dim", "pl.dim"):
            b = self.arguments(node, ["tensor", "axis"])
            t = self.eval(b["tensor"]) if "tensor" in b else None
            axis = self.static(self.eval(b["axis"])) if "axis" in b else None
            if isinstance(t, TensorVal) and isinstance(axis, int):
                shape = self.tensor_shape(t)
                if isinstance(shape, SeqVal) and -len(shape.items) <= axis < len(shape.items):
                    return shape.items[axis]
            return IntVal(Sym(f"dim@{node.lineno}", DYNAMIC))
        if path in ("pl.no_dep", "pl.tensor.no_dep"):
            return self.eval(node.args[0]) if node.args else UNKNOWN
        if path.startswith(("pld.system.", "pld.tensor.", "pld.tile.")) and path.endswith(
            ("notify", "wait", "put", "remote_store")
        ):
            self.notes.not_modelled(
                span_of(self.file, node),
                f"{path} outside any kernel scope",
                "PyPTO only allows it inside a kernel; it is not part of any task here",
            )
            return UNKNOWN
        return self.scalar_pl(path, node)

    def create_tensor(self, node: ast.Call) -> Val:
        b = self.arguments(node, ["shape", "dtype", "layout", "manual_dep", "init_value"])
        shape_v = self.eval(b["shape"]) if "shape" in b else UNKNOWN
        shape = None
        if isinstance(shape_v, SeqVal):
            dims = [self.int_expr(i) for i in shape_v.items]
            shape = tuple(dims) if all(d is not None for d in dims) else None  # type: ignore[arg-type]
        d = self.eval(b["dtype"]) if "dtype" in b else None
        dtype = d.dtype if isinstance(d, DtypeVal) and d.dtype else "f32"
        manual = "manual_dep" in b and self.truth(self.eval(b["manual_dep"])) is True
        name = self.pending_name or f"tensor_{node.lineno}"
        for _, v in self.loops:
            if isinstance(v, IntVal) and isinstance(v.expr, Const):
                v = v.expr.value
            name += f"[{v}]"
        info = self.prog.tensors.add(
            TensorInfo(name, dtype, shape, "scratch", manual, span_of(self.file, node))
        )
        return TensorVal(info.name)

    pending_name: str | None = None

    def eval_assign_value(self, target: ast.expr, value: ast.expr) -> Val:
        self.pending_name = target.id if isinstance(target, ast.Name) else None
        try:
            return self.eval(value)
        finally:
            self.pending_name = None

    def reshape(self, node: ast.Call) -> Val:
        b = self.arguments(node, ["input", "shape"])
        src = self.eval(b["input"]) if "input" in b else None
        if not isinstance(src, TensorVal):
            return UNKNOWN
        shape_v = self.eval(b["shape"]) if "shape" in b else UNKNOWN
        dims = [self.int_expr(i) for i in shape_v.items] if isinstance(shape_v, SeqVal) else []
        shape = tuple(dims) if dims and all(d is not None for d in dims) else None
        root = self.prog.tensors.get(src.root)
        if root is None:
            return UNKNOWN
        name = self.pending_name or f"{src.root}_view"
        info = self.prog.tensors.add(
            TensorInfo(
                name, root.dtype, shape, root.kind if root.kind != "output" else "output", root.manual_dep,
                span_of(self.file, node), root.distributed, root.declared_inout, view_of=src.root,
            )
        )  # fmt: skip
        return TensorVal(info.name)

    def slice_view(self, node: ast.Call) -> Val:
        b = self.arguments(node, ["input", "shape", "offset"])
        src = self.eval(b["input"]) if "input" in b else None
        if not isinstance(src, TensorVal):
            return UNKNOWN
        shape = _ints(self, b.get("shape"))
        offs = _ints(self, b.get("offset"))
        if shape is None or offs is None:
            return src
        return _view(src, offs, shape, ())

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        if isinstance(base, TaskArrayVal):
            i = self.static(self.eval(node.slice))
            return TaskIdVal(base.cells.get(i, ()) if isinstance(i, int) else base.all_tasks())
        if isinstance(base, TensorVal):
            shape_v = self.tensor_shape(base)
            shape = [self.int_expr(i) for i in shape_v.items] if isinstance(shape_v, SeqVal) else None
            elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if shape is None or len(elts) > len(shape):
                return base
            offs, ext, dropped = [], [], []
            for i, dim in enumerate(shape):
                e = elts[i] if i < len(elts) else None
                if e is None:
                    offs.append(Const(0))
                    ext.append(dim)
                elif isinstance(e, ast.Slice) and e.step is None:
                    lo = self.int_expr(self.eval(e.lower)) if e.lower is not None else Const(0)
                    hi = self.int_expr(self.eval(e.upper)) if e.upper is not None else dim
                    if lo is None or hi is None:
                        return base
                    offs.append(lo)
                    ext.append(binop("-", hi, lo))
                else:
                    idx = self.int_expr(self.eval(e)) if not isinstance(e, ast.Slice) else None
                    if idx is None:
                        return base
                    offs.append(idx)
                    ext.append(Const(1))
                    dropped.append(i)
            return _view(base, tuple(offs), tuple(ext), tuple(dropped))  # type: ignore[arg-type]
        return UNKNOWN

    def submit(self, path: str, node: ast.Call) -> Val:
        if not node.args:
            return UNKNOWN
        callee = self.eval(node.args[0])
        if not isinstance(callee, FuncVal):
            self.notes.not_modelled(
                span_of(self.file, node),
                f"{path} of a kernel the reader cannot resolve",
                "the task is missing",
            )
            return SeqVal((UNKNOWN, TaskIdVal(())))
        grid: Expr = Const(1)
        if path == "pl.spmd_submit":
            g = self.kw(node, "core_num")
            if g is not None:
                e = self.int_expr(self.eval(g))
                grid = e if e is not None else Const(1)
        call = ast.Call(func=node.args[0], args=list(node.args[1:]), keywords=[])
        ast.copy_location(call, node)
        name = self.kernel_task(call, callee, grid, [], None, node, flags_call=node)
        outs = tuple(v for v in self._last_outputs(callee, call))
        out_val: Val = outs[0] if len(outs) == 1 else SeqVal(outs)
        return SeqVal((out_val, TaskIdVal((name,))))

    def _last_outputs(self, callee: FuncVal, call: ast.Call) -> list[Val]:
        frame = Frame(callee.module)
        bound = self.bind_args(frame, callee, call, skip_self=callee.owner is not None)
        out = []
        for p in callee.node.args.args:
            d, _ = annotation_direction(self, p.annotation)
            if d in ("out", "inout") and p.arg in bound:
                out.append(frame.locals[p.arg])
        return out

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
        extra_deps=None,
        flags_call=None,
        skip_first=False,
    ) -> str:
        raise NotImplementedError

    def task_name(self, hint: str, site: tuple) -> tuple[str, str, int | None]:
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


def _ints(ev: Evaluator, node: ast.expr | None) -> tuple[Expr, ...] | None:
    if node is None:
        return None
    v = ev.eval(node)
    if not isinstance(v, SeqVal):
        return None
    out = [ev.int_expr(i) for i in v.items]
    return tuple(out) if all(o is not None for o in out) else None  # type: ignore[arg-type]


def _view(
    base: TensorVal, offs: tuple[Expr, ...], ext: tuple[Expr, ...], dropped: tuple[int, ...]
) -> TensorVal:
    """A slice view of ``base``, composed onto its root."""
    if base.offsets is not None:
        full, it = [], iter(zip(offs, ext, strict=True))
        new_off, new_ext = [], []
        for dim, off in enumerate(base.offsets):
            if dim in base.dropped:
                new_off.append(off)
                new_ext.append(Const(1))
                continue
            o, e = next(it, (Const(0), Const(1)))
            new_off.append(binop("+", off, o))
            new_ext.append(e)
            full.append(dim)
        kept = [d for d in range(len(base.offsets)) if d not in base.dropped]
        newly = tuple(kept[i] for i in dropped if i < len(kept))
        return TensorVal(base.root, tuple(new_off), tuple(new_ext), tuple(sorted(base.dropped + newly)))
    shape = tuple(e for i, e in enumerate(ext) if i not in dropped)
    return TensorVal(base.root, offs, shape, dropped)


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
