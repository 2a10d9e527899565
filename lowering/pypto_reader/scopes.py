"""Orchestration code -> tasks: ``pl.at``/``pl.spmd`` scopes, kernel calls, deps and task ids.

The orchestration function of the entry (``@pl.jit``, or an Orchestration/Opaque method of a
``@pl.program``) is interpreted statement by statement:

- ``with pl.at(level=pl.Level.CORE_GROUP, ...) [as tid]`` is one task of one block; ``with
  pl.spmd(N, ...) [as tid]`` and ``for b in pl.spmd(N, ...)`` one task of N blocks (a single
  ``pl.at`` inside an spmd is its carrier, not a second task); a call to a ``@pl.jit.incore``
  or ``@pl.jit.extern`` kernel is a task whose directions come from the kernel's parameter
  annotations; ``pl.submit``/``pl.spmd_submit`` likewise; ``pl.system.task_dummy`` is a
  zero-block join task;
- ``deps=[...]`` entries are task ids, task-id arrays (``pl.array.create(n, pl.TASK_ID)``,
  ``tids[i] = tid``), elements of them, or ``None``;
- ``@pl.jit.inline`` helpers are spliced in, with their task ids and tensors returned across
  the call;
- orchestration loops with static bounds are unrolled (their tasks are ``name[i]``; a
  sequential loop sets R-seq), ``if``s on static values take one branch, ``pl.manual_scope``
  makes its tasks manual, ``pl.create_tensor`` allocates a scratch tensor (``manual_dep``).

What cannot be modelled (a dynamic task count, an unknown helper, a branch on runtime data)
becomes a P001 note; no task is dropped silently.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lowering import body as ir
from lowering.ir import DepRef, Predicate, Task
from lowering.pypto_reader.constants import Params
from lowering.pypto_reader.directions import annotation_direction, call_tags, tensor_param
from lowering.pypto_reader.exprs import Evaluator, dotted
from lowering.pypto_reader.kernel import KernelReader
from lowering.pypto_reader.modules import ModuleInfo
from lowering.pypto_reader.notes import Notes, line_span, span_of
from lowering.pypto_reader.tensors import TensorInfo, TensorTable
from lowering.pypto_reader.values import (
    UNKNOWN,
    ArgsVal,
    ClassVal,
    DtypeVal,
    FuncVal,
    IntVal,
    ModuleVal,
    PlRef,
    PyVal,
    SelfVal,
    SeqVal,
    TaskArrayVal,
    TaskIdVal,
    TensorVal,
    TileVal,
    Unknown,
    Val,
)
from lowering.source import Span
from lowering.symbolic import DYNAMIC, Const, EvalError, Expr, Sym, binop, evaluate

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


class OrchReader(Evaluator):
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
        self.body(func.node.body)

    def entry_param(self, p: ast.arg, rank_params: frozenset[str]) -> Val:
        span = span_of(self.file, p)
        ann = p.annotation
        kind, inner = annotation_direction(self, ann)
        tp = tensor_param(self, inner)
        if tp is not None:
            dtype, shape, distributed = tp
            tkind = {"in": "input", "out": "output", "inout": "inout"}[kind]
            info = self.prog.tensors.add(
                TensorInfo(p.arg, dtype, shape, "window" if distributed else tkind, False, span, distributed, kind == "inout")
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
            value = self.eval_assign_value(s.targets[0], s.value) if len(s.targets) == 1 else self.eval(s.value)
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
            items = value.items if isinstance(value, SeqVal) and len(value.items) == len(target.elts) else None
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
        path = func.path if isinstance(func, PlRef) else (dotted(it.func) if isinstance(it, ast.Call) else None)
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
            self.notes.not_modelled(line_span(self.file, s), "a with statement of several items", "its body is read as is")
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

    def spmd_for(self, s: ast.For) -> None:
        it = s.iter
        assert isinstance(it, ast.Call)
        var = s.target.id if isinstance(s.target, ast.Name) else None
        self.scope_task(s, it, it, None, s.body, block_var=var)

    def grid_of(self, call: ast.Call) -> Expr:
        node = self.kw(call, "core_num", 0)
        if node is None:
            return Const(1)
        if isinstance(node, ast.Call):
            name = (dotted(node.func) or "").rsplit(".", 1)[-1]
            if name in PRESET_CORES:
                self.notes.not_modelled(
                    span_of(self.file, node),
                    f"{name}() (the core count of the device, known at run time)",
                    f"the grid is taken as the a2a3 count, {PRESET_CORES[name]} blocks",
                )
                return Const(PRESET_CORES[name])
        v = self.eval(node)
        e = self.int_expr(v)
        if e is None or self.value_of(e) is None:
            self.notes.not_modelled(
                span_of(self.file, node),
                "a grid size the reader cannot evaluate (a data-dependent block count)",
                "the task is modelled with 1 block: occupancy and speculation counts are not checked for it",
            )
            return Const(1)
        return e

    def task_name(self, hint: str, site: tuple) -> tuple[str, str, int | None]:
        base = self.prog.bases.get(site)
        if base is None:
            base, k = hint, 2
            while base in self.prog.used_bases:
                base = f"{hint}#{k}"
                k += 1
            self.prog.bases[site] = base
            self.prog.used_bases.add(base)
        index: int | None = None
        suffix = ""
        for _, v in self.loops:
            if isinstance(v, IntVal) and isinstance(v.expr, Const):
                v = v.expr.value
            suffix += f"[{v}]" if isinstance(v, int) else "[*]"
            if isinstance(v, int):
                index = v
        name, k = base + suffix, 2
        while name in self.prog.task_names:
            name = f"{base}{suffix}#{k}"
            k += 1
        self.prog.task_names.add(name)
        return name, base, index

    def hint_of(self, calls: list[ast.Call | None], as_name: ast.expr | None, default: str) -> str:
        for call in calls:
            if call is None:
                continue
            node = self.kw(call, "name_hint")
            if node is not None:
                v = self.static(self.eval(node))
                if isinstance(v, str) and v:
                    return v
        if isinstance(as_name, ast.Name):
            name = as_name.id.lstrip("_")
            return name[:-4] if name.endswith("_tid") and len(name) > 4 else name
        return default

    def deps_of(self, calls: list[ast.Call | None]) -> list[DepRef]:
        out: list[DepRef] = []
        for call in calls:
            node = self.kw(call, "deps") if call is not None else None
            if node is None:
                continue
            for task, span in self.dep_entries(node):
                if task not in [d.target for d in out]:
                    out.append(DepRef(task, span))
        return out

    def dep_entries(self, node: ast.expr) -> list[tuple[str, Span]]:
        span = span_of(self.file, node)
        if isinstance(node, ast.List | ast.Tuple):
            out = []
            for e in node.elts:
                out.extend(self.dep_entries(e.value if isinstance(e, ast.Starred) else e))
            return out
        if isinstance(node, ast.ListComp):
            v = self.comprehension(node)
            if v is not None:
                return [(t, span) for t in v]
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value)
            if isinstance(base, TaskArrayVal):
                i = self.static(self.eval(node.slice))
                if isinstance(i, int):
                    return [(t, span) for t in base.cells.get(i, ())]
                self.notes.not_modelled(
                    span, "an element of a task-id array at an index the reader cannot evaluate",
                    "the dependency is taken on every task stored in the array",
                )
                return [(t, span) for t in base.all_tasks()]
        v = self.eval(node)
        if isinstance(v, TaskIdVal):
            return [(t, span) for t in v.tasks]
        if isinstance(v, TaskArrayVal):
            return [(t, span) for t in v.all_tasks()]
        if isinstance(v, SeqVal):
            out = []
            for item in v.items:
                if isinstance(item, TaskIdVal):
                    out.extend((t, span) for t in item.tasks)
                elif isinstance(item, TaskArrayVal):
                    out.extend((t, span) for t in item.all_tasks())
            return out
        if isinstance(v, PyVal) and v.value is None:
            return []
        self.notes.not_modelled(
            span,
            f"a deps= entry the reader cannot resolve ('{ast.unparse(node)}')",
            "the explicit edge it adds is missing: ordering findings on this task may be false positives",
        )
        return []

    def comprehension(self, node: ast.ListComp) -> list[str] | None:
        if len(node.generators) != 1 or node.generators[0].ifs:
            return None
        gen = node.generators[0]
        func = self.eval(gen.iter.func) if isinstance(gen.iter, ast.Call) else None
        path = func.path if isinstance(func, PlRef) else (dotted(gen.iter.func) if isinstance(gen.iter, ast.Call) else None)
        values = self.iteration_values(gen.iter, path)
        if values is None:
            return None
        out: list[str] = []
        saved = dict(self.frame.locals)
        try:
            for v in values:
                self.bind_target(gen.target, v)
                out.extend(t for t, _ in self.dep_entries(node.elt))
        finally:
            self.frame.locals = saved
        return out

    def predicate_of(self, call: ast.Call | None) -> Predicate | None:
        node = self.kw(call, "predicate") if call is not None else None
        if node is None:
            return None
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.left, ast.Subscript)
        ):
            base = self.eval(node.left.value)
            idx_node = node.left.slice
            idx_items = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
            idx = [self.int_expr(self.eval(i)) for i in idx_items]
            value = self.int_expr(self.eval(node.comparators[0]))
            cmp = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}.get(
                type(node.ops[0])
            )
            if isinstance(base, TensorVal) and value is not None and cmp and all(i is not None for i in idx):
                return Predicate(base.root, tuple(idx), cmp, value, span_of(self.file, node))  # type: ignore[arg-type]
        self.notes.not_modelled(
            span_of(self.file, node),
            "a predicate= the reader cannot evaluate",
            "the task is modelled as always running",
        )
        return None

    def scope_task(
        self,
        stmt: ast.stmt,
        at_call: ast.Call,
        spmd_call: ast.Call | None,
        as_name: ast.expr | None,
        body: list[ast.stmt],
        block_var: str | None = None,
    ) -> None:
        """One task from a pl.at / pl.spmd scope (``at_call`` is the pl.at, or the pl.spmd)."""
        calls: list[ast.Call | None] = [at_call] if spmd_call is None else [spmd_call]
        grid: Expr = Const(1) if spmd_call is None else self.grid_of(spmd_call)
        inner = body
        if spmd_call is not None and len(body) == 1 and isinstance(body[0], ast.With) and len(body[0].items) == 1:
            ctx = body[0].items[0].context_expr
            if isinstance(ctx, ast.Call) and isinstance(self.eval(ctx.func), PlRef):
                if self.eval(ctx.func).path == "pl.at":  # type: ignore[union-attr]
                    calls.append(ctx)  # the carrier of the spmd body
                    inner = body[0].body
        kernel_call = _single_call(inner)
        if spmd_call is not None and kernel_call is not None:
            callee = self.eval(kernel_call.func)
            if isinstance(callee, FuncVal) and callee.kind in ("incore", "extern"):
                self.kernel_task(kernel_call, callee, grid, calls, as_name, stmt)
                return
        default = f"task_{stmt.lineno}"
        hint = self.hint_of(calls, as_name, default)
        name, base, index = self.task_name(hint, (self.file, stmt.lineno, stmt.col_offset))
        after = self.deps_of(calls)
        early = any(self.flag(c, "allow_early_resolve") for c in calls)
        sync = any(self.flag(c, "sync_start") for c in calls)
        predicate = self.predicate_of(spmd_call)
        dual = any(self.split_opt(c) for c in calls)
        nodeps = set()
        for c in calls:
            node = self.kw(c, "no_dep_args") if c is not None else None
            if node is not None:
                v = self.eval(node)
                for item in v.items if isinstance(v, SeqVal) else (v,):
                    if isinstance(item, TensorVal):
                        nodeps.add(item.root)
        reader = self.kernel_reader(name, grid)
        bindings = {block_var: IntVal(Sym("block", "block"))} if block_var else None
        body_ir = reader.read(inner, bindings)
        self.add_task(
            name, base, index, grid, reader, body_ir, stmt, after, early, sync, predicate,
            dual or reader.dual_lanes, {t: "nodep" for t in nodeps} or None,
        )  # fmt: skip
        if isinstance(as_name, ast.Name):
            self.frame.locals[as_name.id] = TaskIdVal((name,))

    def split_opt(self, call: ast.Call | None) -> bool:
        node = self.kw(call, "optimizations") if call is not None else None
        if not isinstance(node, ast.List | ast.Tuple):
            return False
        for e in node.elts:
            if isinstance(e, ast.Call) and isinstance(self.eval(e.func), PlRef):
                if self.eval(e.func).path == "pl.split" and e.args:  # type: ignore[union-attr]
                    mode = self.eval(e.args[0])
                    if isinstance(mode, PlRef) and not mode.path.endswith("NONE"):
                        return True
        return False

    def kernel_reader(self, name: str, grid: Expr, module: ModuleInfo | None = None) -> KernelReader:
        if module is None:
            outer = self.lookup
        else:
            def outer(n: str, node: ast.AST, _m: ModuleInfo = module) -> Val:
                return _m.globals.get(n, Unknown(f"unknown name '{n}'"))

        return KernelReader(
            self.file, self.notes, self.prog.params.env, outer, self.prog.tensors, name, grid, self.kernel_call
        )

    def kernel_call(self, k: KernelReader, func: FuncVal, node: ast.Call) -> Val:
        """A helper called inside a kernel body: spliced into it (its statements become the task's)."""
        if func.kind in ("incore", "extern", "jit", "host"):
            return k.opaque_op(func.node.name, node, f"a call to the {func.kind} function '{func.node.name}' inside a kernel")
        args = func.node.args
        names = [p.arg for p in [*args.posonlyargs, *args.args]]
        bound: dict[str, Val] = {}
        for name, a in zip(names, node.args, strict=False):
            bound[name] = k.eval(a)
        for kw in node.keywords:
            if kw.arg:
                bound[kw.arg] = k.eval(kw.value)
        saved_outer, saved_file, saved_assigned = k.outer, k.file, k.assigned
        module = func.module

        def outer(n: str, node_: ast.AST) -> Val:
            return module.globals.get(n, Unknown(f"unknown name '{n}'"))

        k.outer, k.file = outer, module.file
        k.scopes.append(bound)
        k.depth += 1
        from lowering.pypto_reader.kernel import _assigned

        k.assigned = saved_assigned + _assigned(func.node.body)
        k.returned = None
        try:
            k.statements(func.node.body)
            return k.returned if k.returned is not None else PyVal(None)
        finally:
            k.depth -= 1
            k.scopes.pop()
            k.outer, k.file, k.assigned = saved_outer, saved_file, saved_assigned

    def add_task(
        self,
        name: str,
        base: str,
        index: int | None,
        grid: Expr,
        reader: KernelReader | None,
        body_ir: tuple[ir.Stmt, ...],
        stmt: ast.AST,
        after: list[DepRef],
        early: bool,
        sync: bool,
        predicate: Predicate | None,
        dual: bool,
        arg_tags: dict[str, str] | None,
        core: str | None = None,
        accesses: tuple = (),
    ) -> None:
        try:
            blocks = evaluate(grid, self.prog.params.env())
        except EvalError:
            blocks = 1
        if reader is not None:
            units = reader.units
            self.prog.signal_tensors |= reader.signal_tensors
            self.prog.window_tensors |= reader.window_tensors
        else:
            units = set()
        if core is None:
            if dual or units == {"cube", "vector"}:
                core = "mix"
            elif units == {"cube"}:
                core = "aic"
            else:
                core = "aiv"
        span = span_of(self.file, stmt)
        header = line_span(self.file, stmt, 4 if isinstance(stmt, ast.With) else 0)
        if isinstance(stmt, ast.For):
            header = line_span(self.file, stmt, 3)
        task = Task(
            name=name, base=base, index=index, grid=grid, blocks=blocks, core=core, core_explicit=False,
            early_resolve=early, sync_start=sync, manual=self.manual > 0, in_sequential_loop=self.sequential > 0,
            predicate=predicate, after=tuple(after),
            accesses=tuple(reader.accesses) if reader is not None else tuple(accesses),
            signals=tuple(reader.signals) if reader is not None else (),
            barriers=tuple(reader.barriers) if reader is not None else (),
            ops=frozenset(reader.ops) if reader is not None else frozenset(), body=body_ir, span=span,
            header_span=header, order=len(self.prog.tasks),
        )  # fmt: skip
        if arg_tags:
            task.arg_tags = arg_tags
        self.prog.tasks.append(task)

    def kernel_task(
        self,
        call: ast.Call,
        callee: FuncVal,
        grid: Expr,
        scope_calls: list[ast.Call | None],
        as_name: ast.expr | None,
        stmt: ast.AST,
        extra_deps: list[DepRef] | None = None,
        flags_call: ast.Call | None = None,
        skip_first: bool = False,
    ) -> str:
        """A call to an InCore/extern kernel from orchestration: one task, directions from annotations."""
        hint = self.hint_of([*scope_calls, flags_call], as_name, callee.node.name)
        name, base, index = self.task_name(hint, (self.file, getattr(stmt, "lineno", 0), getattr(stmt, "col_offset", 0)))
        all_calls = [*scope_calls, flags_call]
        after = self.deps_of(all_calls) + list(extra_deps or [])
        early = any(self.flag(c, "allow_early_resolve") for c in all_calls)
        sync = any(self.flag(c, "sync_start") for c in all_calls)
        predicate = self.predicate_of(flags_call or next((c for c in scope_calls if c is not None), None))
        frame = Frame(callee.module)
        bound_nodes = self.bind_args(frame, callee, call if not skip_first else _drop_first(call), skip_self=callee.owner is not None)
        tags = call_tags(self, callee, frame, bound_nodes)
        for root, tag in list(tags.items()):
            info = self.prog.tensors.get(root)
            if tag == "out" and info is not None and info.declared_inout and info.kind == "window":
                tags[root] = "inout"  # R-enclosing on a window the entry declares InOut
        if callee.kind == "extern":
            core = _extern_core(self, callee)
            accesses = []
            reader = self.kernel_reader(name, grid, callee.module)
            for pname, v in frame.locals.items():
                if isinstance(v, TensorVal):
                    region = reader.region_at(v, None, None, None)
                    d = tags.get(v.root, "in")
                    if d in ("in", "inout"):
                        reader.record(v, region, "read", call)
                    if d in ("out", "inout"):
                        reader.record(v, region, "write", call)
            accesses = reader.accesses
            self.notes.not_modelled(
                span_of(self.file, call),
                f"the body of extern kernel '{callee.node.name}' (hand-written C++)",
                "its accesses are taken as whole arguments in their declared directions, and any signals "
                "or atomics inside it are not seen",
            )
            self.add_task(
                name, base, index, grid, None, (), stmt, after, early, sync, predicate, False, tags or None,
                core=core, accesses=tuple(accesses),
            )  # fmt: skip
        else:
            reader = self.kernel_reader(name, grid, callee.module)
            reader.file = callee.module.file
            body_ir = reader.read(callee.node.body, dict(frame.locals))
            self.add_task(
                name, base, index, grid, reader, body_ir, stmt, after, early, sync, predicate, reader.dual_lanes,
                tags or None, core=_incore_core(self, callee, reader),
            )  # fmt: skip
        if isinstance(as_name, ast.Name):
            self.frame.locals[as_name.id] = TaskIdVal((name,))
        return name

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
        if isinstance(func, Unknown) and name.split(".")[0] in ("torch", "golden", "np", "numpy", "print", "logging"):
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
        if path.startswith(("pld.system.", "pld.tensor.", "pld.tile.")) and path.endswith(("notify", "wait", "put", "remote_store")):
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
        info = self.prog.tensors.add(TensorInfo(name, dtype, shape, "scratch", manual, span_of(self.file, node)))
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
                span_of(self.file, node), f"{path} of a kernel the reader cannot resolve", "the task is missing"
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


# ---------------------------------------------------------------- helpers


def _single_call(stmts: list[ast.stmt]) -> ast.Call | None:
    body = [s for s in stmts if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1:
        return None
    s = body[0]
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return s.value
    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call):
        return s.value
    return None


def _drop_first(call: ast.Call) -> ast.Call:
    new = ast.Call(func=call.func, args=list(call.args[1:]), keywords=call.keywords)
    return ast.copy_location(new, call)


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


def _view(base: TensorVal, offs: tuple[Expr, ...], ext: tuple[Expr, ...], dropped: tuple[int, ...]) -> TensorVal:
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


def _extern_core(ev: OrchReader, func: FuncVal) -> str:
    d = func.decorator
    if isinstance(d, ast.Call):
        for kw in d.keywords:
            if kw.arg == "core_type":
                v = ev.static(ev.eval(kw.value))
                return {"aic": "aic", "aiv": "aiv", "mixed": "mix", "mix": "mix"}.get(str(v), "aiv")
            if kw.arg == "dual_aiv_dispatch" and ev.truth(ev.eval(kw.value)):
                return "mix"
    return "aiv"


def _incore_core(ev: OrchReader, func: FuncVal, reader: KernelReader) -> str | None:
    d = func.decorator
    if isinstance(d, ast.Call):
        for kw in d.keywords:
            if kw.arg in ("level", "type"):
                v = ev.eval(kw.value)
                if isinstance(v, PlRef):
                    last = v.path.rsplit(".", 1)[-1]
                    if last in ("AIC", "AIV"):
                        return last.lower()
                    if last in ("Group",):
                        return "mix"
    return None


_ = (ArgsVal, ModuleVal, TileVal)
