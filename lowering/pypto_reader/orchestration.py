"""Orchestration code: the statements of ``@pl.jit`` / inline functions between the tasks.

``OrchestrationReader`` is the Python interpreter (``interp.PyInterpreter``) with what
orchestration means added: inline helpers and plain functions are spliced in (their task
ids and tensors flow back through return values), orchestration loops (``pl.range`` /
``pl.parallel`` / ``range`` / any iterable the reader can enumerate) are unrolled -- a
sequential one sets R-seq for the tasks in it --, a branch on a value known only at run time
puts the tasks of both branches in the graph, and ``pl.manual_scope`` makes its tasks manual.
The ``pl.*`` calls (``pl.create_tensor`` / ``pl.reshape`` / slice views, task-id arrays,
``pl.submit``, host-side reads) are ``orchestration_calls.OrchestrationCalls``, the tasks of
scopes and kernel calls are made by ``scopes.TaskBuilder`` and their bodies read by
``task_bodies.TaskBodies``: three pieces the reader composes, each given the reader to evaluate
with. What cannot be modelled becomes a P001 note; no task is dropped silently.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from lowering.pypto_reader import interp_control_flow
from lowering.pypto_reader.directions import annotation_direction, tensor_param
from lowering.pypto_reader.exprs import dotted
from lowering.pypto_reader.interp import PyInterpreter
from lowering.pypto_reader.interp_control import Break, Budget, Continue, Return
from lowering.pypto_reader.interp_frames import Frame
from lowering.pypto_reader.modules import Loader, ModuleInfo
from lowering.pypto_reader.notes import line_span, span_of
from lowering.pypto_reader.orchestration_calls import OrchestrationCalls
from lowering.pypto_reader.program import Program
from lowering.pypto_reader.py_exceptions import raised
from lowering.pypto_reader.scopes import TaskBuilder
from lowering.pypto_reader.task_bodies import TaskBodies
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
)
from lowering.symbolic import DYNAMIC, Const, Sym

MAX_TASKS = 50000  # the largest corpus program (pro prefill_fwd) submits 43,016: 3 min, 1.8 GB to check
SEQUENTIAL = {"pl.range": True, "range": True, "pl.unroll": True, "pl.parallel": False, "pl.pipeline": True}
_SCALARS = (IntVal, PyVal, Unknown)  # what an undecided branch may leave unknown


class OrchestrationReader(PyInterpreter):
    """Interprets the orchestration functions of one program and creates its tasks."""

    def __init__(
        self, prog: Program, module: ModuleInfo, loader: Loader | None = None, budget: Budget | None = None
    ):
        super().__init__(module, prog.notes, prog.params.env, loader, budget or Budget())
        self.prog = prog
        self.loops: list[tuple[str, object]] = []  # (var, value) of enclosing orchestration loops
        self.sequential = 0
        self.manual = 0
        # the (branch instance, arm) stack of undecided orchestration ifs (Task.branch)
        self.branch: list[tuple[int, int]] = []
        self.branch_instances = 0
        self.calls = OrchestrationCalls(self)
        self.tasks = TaskBuilder(self)
        self.bodies = TaskBodies(self)

    def loop_indices(self) -> list[object]:
        """The values of the enclosing orchestration loops' variables, as ints where known."""
        return [
            v.expr.value if isinstance(v, IntVal) and isinstance(v.expr, Const) else v for _, v in self.loops
        ]

    def use_module(self, module: ModuleInfo) -> None:
        self.file = module.file

    # ---------------------------------------------------------------- evaluation hooks
    def call_pl(self, path: str, node: ast.Call) -> Val:
        return self.calls.call_pl(path, node)

    def call_other(self, func: Val, node: ast.Call) -> Val:
        out = self.calls.call_other(func, node)
        return super().call_other(func, node) if out is None else out

    def attribute(self, base: Val, attr: str, node: ast.AST) -> Val:
        out = self.calls.attribute(base, attr, node)
        return super().attribute(base, attr, node) if out is None else out

    def subscript(self, base: Val, node: ast.Subscript) -> Val:
        return self.calls.subscript(base, node)

    def tensor_shape(self, t: TensorVal) -> Val:
        shape = t.shape if t.shape is not None else getattr(self.prog.tensors.get(t.root), "shape", None)
        return SeqVal(tuple(IntVal(d) for d in shape)) if shape is not None else UNKNOWN

    # ---------------------------------------------------------------- running functions
    def run_entry(self, func: FuncVal, rank_params: frozenset[str]) -> None:
        """Bind the entry's parameters to program tensors and scalars, then run its body."""
        self.use_module(func.module)
        frame = Frame(func.module, {}, func.closure)
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
            self.exec_block(func.node.body)
        except Return:
            pass

    def entry_param(self, p: ast.arg, rank_params: frozenset[str]) -> Val:
        span = span_of(self.file, p)
        ann = p.annotation
        kind, inner = annotation_direction(self, ann)
        tp = tensor_param(self, inner)
        if tp is not None:
            dtype, shape, distributed = tp
            if shape is None:  # a bare pl.Tensor: the harness's shape and dtype
                shape = self.prog.spec_shapes.get(p.arg)
                dtype = self.prog.spec_dtypes.get(p.arg, dtype)
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

    def call_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """Splice an inline helper or a plain function: its scopes become tasks here."""
        if func.kind in ("host",):
            return Unknown(f"the host function '{func.name}'")
        if func.owner is not None:
            params = func.node.args.args
            if params and params[0].arg == "self" and not (args and isinstance(args[0], SelfVal)):
                cls = func.module.globals.get(func.owner)
                if isinstance(cls, ClassVal):
                    args = [SelfVal(cls), *args]
        saved = self.file
        self.use_module(func.module)
        try:
            self.refine_shapes(func, args, kwargs)
            return self.run_function(func, args, kwargs, node)
        finally:
            self.file = saved

    def refine_shapes(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val]) -> None:
        """A tensor of unknown shape (a bare ``pl.Tensor`` entry parameter) takes the shape the
        callee's annotation declares for it, as the compiler specialises it."""
        bound = self.bind_arguments(func, args, kwargs)
        if bound is None:
            return
        pending = []
        for p in [*func.node.args.posonlyargs, *func.node.args.args, *func.node.args.kwonlyargs]:
            v = bound.get(p.arg)
            if not isinstance(v, TensorVal) or v.offsets is not None or p.annotation is None:
                continue
            info = self.prog.tensors.get(v.root)
            if info is not None and info.shape is None and info.view_of is None:
                pending.append((info, p.annotation))
        if not pending:
            return
        self.frames.append(Frame(func.module, {}, func.closure))
        try:
            for info, ann in pending:
                _, inner = annotation_direction(self, ann)
                tp = tensor_param(self, inner)
                if tp is not None and tp[1] is not None:
                    info.shape = tp[1]
        finally:
            self.frames.pop()

    def bind_args(self, frame: Frame, func: FuncVal, node: ast.Call, skip_self: bool) -> dict[str, ast.expr]:
        """Bind a kernel call's arguments into ``frame`` (returns the ast nodes, for ``pl.no_dep``)."""
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
        defaults = dict(zip(names[len(names) - len(args.defaults) :], func.defaults or (), strict=False))
        defaults.update(dict(func.kw_defaults))
        names += [k.arg for k in args.kwonlyargs]
        for name in names:
            if name in bound_nodes:
                frame.locals[name] = self.eval(_unwrap_no_dep(bound_nodes[name]))
            elif name in defaults:
                frame.locals[name] = defaults[name]
            else:
                frame.locals[name] = Unknown(f"unbound parameter '{name}'")
        return bound_nodes

    # ---------------------------------------------------------------- statements
    def assignment(self, s: ast.Assign) -> None:
        if len(s.targets) == 1:
            value = self.calls.eval_assign_value(s.targets[0], s.value)
        else:
            value = self.eval(s.value)
        for t in s.targets:
            self.bind_target(t, value)

    def while_loop(self, s: ast.While) -> None:
        if self.truth(self.eval(s.test)) is not None:
            interp_control_flow.while_statement(self, s)
            return
        self.notes.not_modelled(
            line_span(self.file, s),
            "a while loop in orchestration (its task count depends on runtime values)",
            "its body was read once: the tasks in it stand for an unknown number of tasks",
        )
        self.sequential += 1
        self.loops.append(("*", self.prog.read_once()))
        try:
            self.exec_block(s.body)
        except (Break, Continue):
            pass
        finally:
            self.loops.pop()
            self.sequential -= 1

    def unsupported_statement(self, s: ast.stmt) -> None:
        self.notes.not_modelled(
            line_span(self.file, s),
            f"a {type(s).__name__} statement in orchestration",
            "it is skipped; tasks in it are not modelled",
        )

    def store_other(self, base: Val, target: ast.Subscript, value: Val) -> None:
        if isinstance(base, TaskArrayVal):
            self.calls.array_store(base, target.slice, value)
        elif isinstance(base, TensorVal):
            # `t[a:b, :] = v` is sugar for `t = pl.assemble(t, v, [a, 0])`
            # (docs/runtime-semantics.md §13.2)
            view = self.calls.subscript(base, target)  # `base` itself when it cannot evaluate it
            self.calls.fuse_buffer(None if view is base else view, value, target)

    # ---------------------------------------------------------------- loops and branches
    def for_loop(self, s: ast.For) -> None:
        it = s.iter
        path = self.callee_path(it)
        if path == "pl.spmd":
            self.tasks.spmd_for(s)
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
            values = [self.prog.read_once()]
        self.sequential += int(sequential)
        try:
            for v in values:
                if len(self.prog.tasks) >= MAX_TASKS:
                    self.notes.not_modelled(
                        line_span(self.file, s),
                        f"more than {MAX_TASKS} tasks",
                        "the remaining iterations were not read; their tasks are missing from the graph, "
                        "so no signal count of the graph is checked",
                    )
                    self.prog.incomplete = f"the reader stopped at {MAX_TASKS} tasks"
                    break
                self.bind_loop_target(s.target, v)
                self.loops.append((ast.unparse(s.target), v))
                try:
                    self.exec_block(s.body)
                except Break:
                    break
                except Continue:
                    continue
                finally:
                    self.loops.pop()
            else:
                self.exec_block(s.orelse)
        finally:
            self.sequential -= int(sequential)

    def bind_loop_target(self, target: ast.expr, v: object) -> None:
        if isinstance(v, Val):
            self.bind_target(target, v)
        elif isinstance(v, int):
            self.bind_target(target, IntVal(Const(v)))
        elif isinstance(target, ast.Name):
            self.bind_name(target.id, IntVal(Sym(target.id, DYNAMIC)), target)
        else:
            self.bind_target(target, UNKNOWN)

    def callee_path(self, node: ast.expr) -> str | None:
        """What ``node`` calls, when it is a call: a canonical ``pl`` path, or the dotted name."""
        if not isinstance(node, ast.Call):
            return None
        func = self.eval(node.func)
        return func.path if isinstance(func, PlRef) else dotted(node.func)

    def iteration_values(self, it: ast.expr, path: str | None) -> Sequence | None:
        if isinstance(it, ast.Call) and path in SEQUENTIAL and path != "range":
            evaluated = self.eval_args(it)
            if evaluated is None:
                return None
            bounds = [self.static(a) for a in evaluated[0]]
            if not bounds or not all(isinstance(b, int) for b in bounds) or len(bounds) > 3:
                return None
            if len(bounds) == 3 and bounds[2] == 0:
                raise raised("ValueError", span_of(self.file, it))  # Python's range() refuses step 0
            # lazily: a loop longer than the task cap stops at the cap (and says so), and the
            # interpreter's statement budget bounds one that submits nothing
            return range(*bounds)  # type: ignore[arg-type]
        return self.iterate(self.eval(it))

    def undecided_if(self, s: ast.If) -> None:
        self.notes.not_modelled(
            span_of(self.file, s.test),
            "an orchestration branch on a value known only at run time",
            "the tasks of both branches are in the graph; the rules never pair two tasks of different "
            "branches (one dispatch takes one)",
        )
        start = dict(self.frame.locals)
        self.branch_instances += 1
        instance = self.branch_instances
        self.exec_arm(instance, 0, s.body)
        after_body = dict(self.frame.locals)
        self.exec_arm(instance, 1, s.orelse)
        self.forget_undecided_scalars(start, after_body)

    def exec_arm(self, instance: int, arm: int, body: list[ast.stmt]) -> None:
        """One arm of an undecided branch: the tasks it submits carry (instance, arm)."""
        self.branch.append((instance, arm))
        try:
            self.exec_block(body)
        finally:
            self.branch.pop()

    def forget_undecided_scalars(self, start: dict[str, Val], after_body: dict[str, Val]) -> None:
        """A number or plain value the two branches leave different is unknown after the if:
        the branches ran one after the other, so the last assignment would otherwise win (a
        clamp ``if n < 0: n = 0`` made ``n`` 0 and dropped the tasks under ``if n > 0``).
        Tensors and task ids keep the sequential value: the tasks of both branches are in the
        graph and chain through them."""
        locals_ = self.frame.locals
        for name in set(after_body) | set(locals_):
            on_body = after_body.get(name)
            now = locals_.get(name)
            on_else = start.get(name) if now is on_body else now
            if all(v is None or isinstance(v, _SCALARS) for v in (on_body, on_else)) and not (
                on_body is not None and on_else is not None and self.same(on_body, on_else)
            ):
                locals_[name] = Unknown(f"'{name}' is bound differently on branches the reader cannot decide")

    # ---------------------------------------------------------------- scopes
    def with_scope(self, s: ast.With) -> None:
        if len(s.items) != 1:
            self.notes.not_modelled(
                line_span(self.file, s), "a with statement of several items", "its body is read as is"
            )
            self.exec_block(s.body)
            return
        item = s.items[0]
        ctx = item.context_expr
        func = self.eval(ctx.func) if isinstance(ctx, ast.Call) else self.eval(ctx)
        path = func.path if isinstance(func, PlRef) else None
        if path == "pl.at" and isinstance(ctx, ast.Call):
            level = self.kw(ctx, "level", 0)
            lv = self.eval(level) if level is not None else None
            if isinstance(lv, PlRef) and lv.path.endswith("CORE_GROUP"):
                self.tasks.scope_task(s, ctx, None, item.optional_vars, s.body)
            else:
                self.exec_block(s.body)  # a hierarchy scope (HOST/CHIP level): orchestration inside
            return
        if path == "pl.spmd" and isinstance(ctx, ast.Call):
            self.tasks.scope_task(s, ctx, ctx, item.optional_vars, s.body)
            return
        if path == "pl.manual_scope" or (path == "pl.scope" and self.manual_mode(ctx)):
            self.manual += 1
            try:
                self.exec_block(s.body)
            finally:
                self.manual -= 1
            return
        if path in ("pl.scope", "pl.cluster"):
            self.exec_block(s.body)
            return
        self.notes.not_modelled(
            line_span(self.file, s),
            f"the context manager '{ast.unparse(ctx)}' in orchestration",
            "its body is read as plain orchestration code",
        )
        self.exec_block(s.body)

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

    statements = {
        **PyInterpreter.statements,
        ast.Assign: assignment,
        ast.While: while_loop,
        ast.For: for_loop,
        ast.With: with_scope,
    }


# ---------------------------------------------------------------- helpers


def _unwrap_no_dep(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("no_dep") and node.args:
        return node.args[0]
    return node


def _scalar_dtype(ev: PyInterpreter, node: ast.expr | None) -> str | None:
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
