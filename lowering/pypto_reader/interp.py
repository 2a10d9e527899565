"""A static interpreter of Python statements: the reader's model of import time and host code.

Module-level code of a model file computes its configuration: dataclass configs and their
``dataclasses.replace``, attributes of imported modules reassigned, argv parsed for its
defaults, a factory that defines and returns the kernel the file uses. :class:`PyInterpreter`
runs such code over abstract values (``lowering.pypto_reader.values``) with Python's own
semantics, frame by frame, without importing or executing anything: calls of the file's
functions and classes are interpreted, builtins come from ``builtin_functions`` and
``std_modules``, everything outside the model tree is opaque. Work is bounded (``MAX_STEPS``
statements per read, ``MAX_DEPTH`` calls deep); what exceeds a bound or cannot be decided
becomes ``Unknown``, and the interpreters built on this one (module level, orchestration)
note it where it matters.

Where a condition cannot be decided, both branches run and the names they bind differently
become unknown (a loop over an unknown iterable makes its names unknown); an exception that
nothing catches ends the function it was raised in, as in Python.
"""

from __future__ import annotations

import ast
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering.pypto_reader import builtin_functions, dataclass_support, harness, read_context, std_modules
from lowering.pypto_reader.exprs import Evaluator
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.py_exceptions import PyRaise, exception_matches
from lowering.pypto_reader.values import (
    UNKNOWN,
    BuiltinVal,
    ClassVal,
    DictVal,
    FuncVal,
    IntVal,
    ModuleVal,
    ObjVal,
    PlRef,
    PyVal,
    SeqVal,
    Unknown,
    Val,
)
from lowering.symbolic import Const

if TYPE_CHECKING:
    from lowering.pypto_reader.modules import Loader, ModuleInfo

MAX_STEPS = 400_000  # statements interpreted per read of a file
MAX_DEPTH = 48  # nested calls
HOST_LOOP_STEPS = 20_000  # statements one loop of host code may take before it is abandoned

# Decorator path -> function kind.
DECORATORS = {
    "pl.jit": "jit",
    "pl.jit.host": "host",
    "pl.jit.inline": "inline",
    "pl.jit.incore": "incore",
    "pl.jit.opaque": "opaque",
    "pl.jit.extern": "extern",
    "pl.inline": "inline",
    "pl.function": "function",
}
FUNCTION_TYPES = {
    "Orchestration": "jit",
    "Opaque": "jit",
    "InCore": "incore",
    "AIC": "incore",
    "AIV": "incore",
    "Group": "incore",
    "Spmd": "incore",
    "Inline": "inline",
}


class BudgetExceeded(BaseException):  # noqa: N818 - a bound, not an error; BaseException so no handler eats it
    """The read has interpreted ``MAX_STEPS`` statements."""


class Return(Exception):  # noqa: N818 - control flow
    def __init__(self, value: Val):
        self.value = value


class Break(Exception):  # noqa: N818 - control flow
    pass


class Continue(Exception):  # noqa: N818 - control flow
    pass


@dataclass
class Frame:
    """One activation: its locals (the module's globals at module level), the enclosing
    functions' locals for a nested ``def``, and ``self`` in a ``@pl.program`` method."""

    module: ModuleInfo
    locals: dict[str, Val] = field(default_factory=dict)
    closure: tuple[dict[str, Val], ...] = ()
    self_val: Val | None = None
    kind: str = "function"  # module | class | function
    declared_global: set[str] = field(default_factory=set)


@dataclass
class Budget:
    """Statements interpreted so far in this read (shared by every interpreter of the read)."""

    steps: int = 0
    limit: int = MAX_STEPS
    hit_at: ast.AST | None = None


class PyInterpreter(Evaluator):
    """Interprets Python statements over abstract values; subclasses add what ``pl`` means."""

    loop_limit: int | None = None  # host code sets HOST_LOOP_STEPS; orchestration loops make tasks

    def __init__(self, module: ModuleInfo, notes: Notes, env, loader: Loader | None, budget: Budget):
        super().__init__(module.file, notes, env)
        self.loader = loader
        self.budget = budget
        self.frames: list[Frame] = [Frame(module, module.globals, kind="module")]
        self.depth = 0

    # ---------------------------------------------------------------- frames and names
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def lookup(self, name: str, node: ast.AST) -> Val:
        f = self.frame
        if name in f.locals:
            return f.locals[name]
        if name == "self" and f.self_val is not None:
            return f.self_val
        for scope in f.closure:
            if name in scope:
                return scope[name]
        g = f.module.globals
        if name in g:
            return g[name]
        if name == "__name__":
            return PyVal(self.module_name(f.module))
        if name == "__file__":
            return PyVal(f.module.file)
        return Unknown(f"unknown name '{name}'")

    def module_name(self, module: ModuleInfo) -> str:
        return module.name

    def bind_name(self, name: str, value: Val, node: ast.AST) -> None:
        f = self.frame
        if f.kind == "module" or name in f.declared_global:
            self.bind_global(f.module, name, value, node)
        else:
            f.locals[name] = value

    def bind_global(self, module: ModuleInfo, name: str, value: Val, node: ast.AST) -> None:
        """A module-level name bound (the module interpreter makes integers parameters)."""
        module.globals[name] = value

    def push_scope(self) -> object:
        """A comprehension's own scope: its targets do not leak (Python 3)."""
        f = self.frame
        closure = f.closure if f.kind in ("module", "class") else (f.locals, *f.closure)
        self.frames.append(Frame(f.module, {}, closure, f.self_val))
        return len(self.frames)

    def pop_scope(self, token: object) -> None:
        del self.frames[int(token) - 1 :]  # type: ignore[call-overload]

    def bind_target(self, target: ast.expr, value: Val) -> bool:
        """Bind an assignment, loop or comprehension target (a comprehension's stays local)."""
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value, target)
            return True
        if isinstance(target, ast.Tuple | ast.List):
            return self.unpack(target.elts, value, target)
        if isinstance(target, ast.Starred):
            return self.bind_target(target.value, value)
        if isinstance(target, ast.Attribute):
            self.store_attribute(self.eval(target.value), target.attr, value, target)
            return True
        if isinstance(target, ast.Subscript):
            self.store_subscript(target, value)
            return True
        return False

    def unpack(self, elts: list[ast.expr], value: Val, node: ast.AST) -> bool:
        items = self.iterate(value)
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if items is None or (not starred and len(items) != len(elts)) or len(items) < len(elts) - 1:
            for e in elts:
                self.bind_target(e, Unknown("an unpacked value"))
            return True
        if starred:
            s = starred[0]
            tail = len(elts) - s - 1
            middle = items[s : len(items) - tail]
            items = [*items[:s], SeqVal(middle, "list"), *items[len(items) - tail :]]
        for e, v in zip(elts, items, strict=True):
            self.bind_target(e, v)
        return True

    def store_attribute(self, base: Val, attr: str, value: Val, node: ast.AST) -> None:
        if isinstance(base, ObjVal):
            base.attrs[attr] = value
        elif isinstance(base, ModuleVal):
            base.module.globals[attr] = self.on_store_attribute(base, attr, value, node)
        elif isinstance(base, ClassVal):
            base.attrs[attr] = value

    def store_subscript(self, target: ast.Subscript, value: Val) -> None:
        base = self.eval(target.value)
        key = self.eval(target.slice)
        if isinstance(base, DictVal | read_context.EnvironVal):
            k = self.static(key)
            if k is not UNKNOWN:
                try:
                    base.items[k] = value  # type: ignore[index]
                except TypeError:
                    pass
            return
        if isinstance(base, SeqVal) and base.kind == "list":
            k = self.static(key)
            items = list(base.items)
            try:
                if isinstance(k, slice):
                    new = self.iterate(value)
                    if new is not None:
                        items[k] = new
                elif isinstance(k, int):
                    items[k] = value
                else:
                    return
            except (IndexError, ValueError):
                return
            base.items = tuple(items)
            return
        self.store_other(base, target, value)

    def store_other(self, base: Val, target: ast.Subscript, value: Val) -> None:
        """``base[...] = value`` on anything but a list or dict (tensors, task-id arrays)."""
        return None

    # ---------------------------------------------------------------- running code
    def tick(self, node: ast.AST) -> None:
        b = self.budget
        b.steps += 1
        if b.steps > b.limit:
            if b.hit_at is None:
                b.hit_at = node
            raise BudgetExceeded()

    def exec_block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.tick(s)
            try:
                self.exec_stmt(s)
            except (Return, Break, Continue, PyRaise, BudgetExceeded, RecursionError):
                raise
            except Exception as err:  # noqa: BLE001 - one statement must not stop the file
                self.reader_failure(s, err)

    def reader_failure(self, node: ast.AST, err: Exception) -> None:
        """A bug of the reader on one statement: P004 with the traceback for ``--debug``."""
        self.notes.add(
            "P004",
            span_of(self.file, node),
            f"the reader failed on this statement ({type(err).__name__}: {err})",
            trace="".join(traceback.format_exception(err)),
        )

    def exec_stmt(self, s: ast.stmt) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            self.unsupported_statement(s)
            return
        method(s)

    def unsupported_statement(self, s: ast.stmt) -> None:
        """A statement kind the interpreter does not run (``match``, ``async``): its names are unknown."""
        self.havoc(s)

    def havoc(self, *stmts: ast.stmt) -> None:
        """Names bound in ``stmts`` become unknown (their values depend on what was not run)."""
        for name in _assigned_names(stmts):
            self.bind_name(name, Unknown("a value computed where the reader cannot follow"), stmts[0])

    def s_Expr(self, s: ast.Expr) -> None:
        if not isinstance(s.value, ast.Constant):
            self.eval(s.value)

    def s_Assign(self, s: ast.Assign) -> None:
        value = self.eval(s.value)
        for t in s.targets:
            self.bind_target(t, value)

    def s_AnnAssign(self, s: ast.AnnAssign) -> None:
        if s.value is not None:
            self.bind_target(s.target, self.eval(s.value))

    def s_AugAssign(self, s: ast.AugAssign) -> None:
        target = s.target
        if isinstance(target, ast.Name):
            old = self.lookup(target.id, target)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            old = self.eval(target)
        else:
            return
        new = self.augment(s.op, old, self.eval(s.value), s)
        self.bind_target(target, new)

    def augment(self, op: ast.operator, old: Val, value: Val, node: ast.AST) -> Val:
        """``old op= value``: lists and dicts extend in place, as in Python."""
        if isinstance(op, ast.Add) and isinstance(old, SeqVal) and old.kind == "list":
            items = self.iterate(value)
            if items is not None:
                old.items = (*old.items, *items)
                return old
        if isinstance(op, ast.BitOr) and isinstance(old, DictVal) and isinstance(value, DictVal):
            old.items.update(value.items)
            return old
        return self.binary(op, old, value, node)

    def s_Delete(self, s: ast.Delete) -> None:
        for t in s.targets:
            if isinstance(t, ast.Name):
                self.frame.locals.pop(t.id, None)
            elif isinstance(t, ast.Subscript):
                base = self.eval(t.value)
                if isinstance(base, DictVal):
                    k = self.static(self.eval(t.slice))
                    if k is not UNKNOWN:
                        base.items.pop(k, None)  # type: ignore[arg-type]

    def s_Pass(self, s: ast.Pass) -> None:
        return None

    def s_Global(self, s: ast.Global) -> None:
        self.frame.declared_global.update(s.names)

    def s_Nonlocal(self, s: ast.Nonlocal) -> None:
        return None  # closures are shared dicts: a nonlocal store lands in the enclosing scope

    def s_Return(self, s: ast.Return) -> None:
        raise Return(self.eval(s.value) if s.value is not None else PyVal(None))

    def s_Break(self, s: ast.Break) -> None:
        raise Break()

    def s_Continue(self, s: ast.Continue) -> None:
        raise Continue()

    def s_Raise(self, s: ast.Raise) -> None:
        if s.exc is None:
            raise PyRaise(ObjVal(None, {"__exception__": PyVal("RuntimeError")}))
        v = self.eval(s.exc)
        if isinstance(v, BuiltinVal | ClassVal):
            v = self.call_value(v, [], {}, s)
        raise PyRaise(v)

    def s_Assert(self, s: ast.Assert) -> None:
        if self.truth(self.eval(s.test)) is False:
            raise PyRaise(ObjVal(None, {"__exception__": PyVal("AssertionError")}))

    def s_If(self, s: ast.If) -> None:
        truth = self.truth(self.eval(s.test))
        if truth is None:
            self.undecided_if(s)
        else:
            self.exec_block(s.body if truth else s.orelse)

    def undecided_if(self, s: ast.If) -> None:
        """Both branches; names they bind differently become unknown. A branch that raises
        (a guard that refuses bad values) is taken not to run."""
        frame = self.frame
        start = dict(frame.locals)
        outcomes = []
        for branch in (s.body, s.orelse):
            frame.locals.clear()
            frame.locals.update(start)
            try:
                self.exec_block(branch)
                outcomes.append(("ok", dict(frame.locals)))
            except PyRaise:
                outcomes.append(("raise", None))
            except Return as ret:
                outcomes.append(("return", ret.value))
            except (Break, Continue) as jump:
                outcomes.append((type(jump).__name__, dict(frame.locals)))
        kinds = [k for k, _ in outcomes]
        frame.locals.clear()
        frame.locals.update(start)
        ran = [(k, v) for k, v in outcomes if k != "raise"]
        if not ran:
            raise PyRaise(ObjVal(None, {"__exception__": PyVal("RuntimeError")}))
        if len(ran) == 1:
            kind, v = ran[0]
            if kind == "return":
                raise Return(v)  # type: ignore[arg-type]
            frame.locals.update(v)  # type: ignore[arg-type]
            if kind in ("Break", "Continue"):
                raise Break() if kind == "Break" else Continue()
            return
        if kinds[0] == kinds[1] == "return":
            a, b = outcomes[0][1], outcomes[1][1]
            raise Return(
                a if self.same(a, b) else Unknown("a value returned on a branch the reader cannot decide")
            )  # type: ignore[arg-type]
        if "return" in kinds:
            raise Return(Unknown("a value returned on a branch the reader cannot decide"))
        merged = _join(outcomes[0][1], outcomes[1][1], self.same)  # type: ignore[arg-type]
        frame.locals.update(merged)
        if kinds[0] == kinds[1] and kinds[0] in ("Break", "Continue"):
            raise Break() if kinds[0] == "Break" else Continue()

    def same(self, a: Val, b: Val) -> bool:
        if a is b or a == b:
            return True
        sa, sb = self.static(a), self.static(b)
        return sa is not UNKNOWN and sa == sb and type(sa) is type(sb)

    def s_For(self, s: ast.For) -> None:
        items = self.iterate(self.eval(s.iter))
        if items is None:
            self.undecided_loop(s)
            return
        self.run_loop(s, items)

    def run_loop(self, s: ast.For, items: list[Val]) -> None:
        start = self.budget.steps
        for item in items:
            if self.loop_too_long(s, start):
                return
            self.bind_target(s.target, item)
            try:
                self.exec_block(s.body)
            except Break:
                return
            except Continue:
                continue
        self.exec_block(s.orelse)

    def undecided_loop(self, s: ast.For | ast.While) -> None:
        self.havoc(s)

    def loop_too_long(self, s: ast.For | ast.While, start: int) -> bool:
        """Past ``loop_limit`` statements, a host-code loop is abandoned: what it binds or fills
        becomes unknown and reading goes on after it (a metadata table built element by element
        is data the lint does not need, and must not eat the budget of the whole read)."""
        if self.loop_limit is None or self.budget.steps - start <= self.loop_limit:
            return False
        self.notes.not_modelled(
            span_of(self.file, s),
            f"a host-code loop past {self.loop_limit} interpreted statements",
            "it is abandoned there: the names it binds or fills are unknown after it",
        )
        self.havoc(s)
        for name in _filled_names(s):
            self.bind_name(name, Unknown("filled by a loop the reader abandoned"), s)
        return True

    def s_While(self, s: ast.While) -> None:
        start = self.budget.steps
        while True:
            if self.loop_too_long(s, start):
                return
            truth = self.truth(self.eval(s.test))
            if truth is None:
                self.undecided_loop(s)
                return
            if not truth:
                self.exec_block(s.orelse)
                return
            try:
                self.exec_block(s.body)
            except Break:
                return
            except Continue:
                continue

    def s_With(self, s: ast.With) -> None:
        for item in s.items:
            self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.bind_target(item.optional_vars, Unknown("a context manager's value"))
        self.exec_block(s.body)

    def s_Try(self, s: ast.Try) -> None:
        try:
            try:
                self.exec_block(s.body)
            except PyRaise as exc:
                for h in s.handlers:
                    kind = self.eval(h.type) if h.type is not None else None
                    if exception_matches(exc.value, kind):
                        if h.name:
                            self.bind_name(h.name, exc.value, h)
                        self.exec_block(h.body)
                        break
                else:
                    raise
            else:
                self.exec_block(s.orelse)
        finally:
            self.exec_block(s.finalbody)

    s_TryStar = s_Try

    def s_Import(self, s: ast.Import) -> None:
        for alias in s.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.bind_name(bound, self.import_module(alias.name, alias.asname is not None, s), s)

    def s_ImportFrom(self, s: ast.ImportFrom) -> None:
        for alias in s.names:
            values = self.import_from(s.module or "", s.level, alias.name, s)
            if alias.name == "*":
                for k, v in values.items():
                    self.bind_name(k, v, s)
            else:
                self.bind_name(alias.asname or alias.name, values.get(alias.name, UNKNOWN), s)

    def import_module(self, name: str, as_alias: bool, node: ast.AST) -> Val:
        if self.loader is None:
            return std_modules.import_extern(name)
        return self.loader.import_module(self.frame.module, name, as_alias, node)

    def import_from(self, module: str, level: int, name: str, node: ast.AST) -> dict[str, Val]:
        if self.loader is None:
            return {name: std_modules.module_attribute(module, name)}
        return self.loader.import_from(self.frame.module, module, level, name, node)

    def s_FunctionDef(self, s: ast.FunctionDef) -> None:
        self.bind_name(s.name, self.define_function(s), s)

    s_AsyncFunctionDef = s_FunctionDef

    def make_function(self, node: ast.FunctionDef | ast.Lambda) -> Val:
        return self.define_function(node)

    def define_function(self, node: ast.FunctionDef | ast.Lambda, owner: str | None = None) -> Val:
        f = self.frame
        closure = () if f.kind == "module" else (f.closure if f.kind == "class" else (f.locals, *f.closure))
        args = node.args
        defaults = tuple(self.eval(d) for d in args.defaults)
        kw_defaults = tuple(
            (a.arg, self.eval(d))
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is not None
        )
        if f.kind == "class":
            owner = owner or self._class_name
        func = FuncVal(f.module, node, "plain", None, owner, closure, None, defaults, kw_defaults)
        if isinstance(node, ast.Lambda):
            return func
        value: Val = func
        for deco in reversed(node.decorator_list):
            value = self.decorate(value, deco)
        return value

    _class_name: str | None = None

    def decorate(self, value: Val, deco: ast.expr) -> Val:
        """Apply one decorator: a ``pl`` decorator sets the function's kind; ``property`` and
        friends its wrapper; other known decorators run; unknown ones leave it as it is."""
        target = deco.func if isinstance(deco, ast.Call) else deco
        d = self.eval(target)
        if isinstance(d, PlRef) and isinstance(value, FuncVal):
            kind = DECORATORS.get(d.path)
            if kind is None:
                return value
            out = _with(value, kind=self.function_kind(kind, deco), decorator=deco)
            if out.kind == "jit":
                read_context.host().programs.append(out)  # an entry, even when a factory defines it
            return out
        if isinstance(d, PlRef) and isinstance(value, ClassVal):
            if d.path == "pl.program":
                read_context.host().programs.append(
                    value
                )  # often built inside a function and passed to the harness
            return value
        if isinstance(d, BuiltinVal) and isinstance(value, FuncVal) and d.name in builtin_functions.WRAPPERS:
            return _with(value, wrapper=d.name)
        if isinstance(d, BuiltinVal | FuncVal):
            fn = d
            if isinstance(deco, ast.Call):
                evaluated = self.eval_args(deco)
                if evaluated is None:
                    return value
                fn = self.call_value(d, evaluated[0], evaluated[1], deco)
            out = self.call_value(fn, [value], {}, deco)
            return value if isinstance(out, Unknown) else out
        return value

    def function_kind(self, kind: str, deco: ast.expr) -> str:
        if kind == "function":
            kind = "jit"  # pl.function defaults to Opaque: control plane
            if isinstance(deco, ast.Call):
                for kw in deco.keywords:
                    if kw.arg == "type":
                        ftype = self.eval(kw.value)
                        if isinstance(ftype, PlRef):
                            kind = FUNCTION_TYPES.get(ftype.path.rsplit(".", 1)[-1], "jit")
        if (
            kind == "incore"
            and isinstance(deco, ast.Call)
            and any(k.arg == "external_source" for k in deco.keywords)
        ):
            kind = "extern"
        return kind

    def s_ClassDef(self, s: ast.ClassDef) -> None:
        bases = tuple(b for b in (self.eval(x) for x in s.bases) if isinstance(b, ClassVal))
        cls = ClassVal(self.frame.module, s, bases)
        # A class body sees what its definition site sees: the enclosing function's locals too
        # (a `@pl.program` class built inside a builder function reads the builder's arguments
        # from its methods); its own names are not a scope for the methods, as in Python.
        f = self.frame
        closure = () if f.kind == "module" else f.closure if f.kind == "class" else (f.locals, *f.closure)
        frame = Frame(f.module, {}, closure, kind="class")
        saved = self._class_name
        self.frames.append(frame)
        self._class_name = s.name
        try:
            self.exec_block(s.body)
        finally:
            self.frames.pop()
            self._class_name = saved
        cls.attrs.update(frame.locals)
        value: Val = cls
        for deco in reversed(s.decorator_list):
            value = self.decorate(value, deco)
        self.bind_name(s.name, value, s)

    # ---------------------------------------------------------------- calls
    def call_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        """Interpret a plain function of the file (a ``pl`` kernel is not run as host code)."""
        if func.kind != "plain":
            if func.kind == "jit":
                harness.launch_records(func, args, kwargs)
            return Unknown(f"a call of the {func.kind} function '{func.name}' outside orchestration")
        return self.run_function(func, args, kwargs, node)

    def run_function(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        if self.depth >= MAX_DEPTH:
            return Unknown(f"a call chain deeper than {MAX_DEPTH}")
        if _is_generator(func.node):
            return Unknown(f"the generator '{func.name}'")
        bound = self.bind_arguments(func, args, kwargs)
        if bound is None:
            return Unknown(f"the arguments of '{func.name}'")
        frame = Frame(func.module, bound, func.closure)
        self.frames.append(frame)
        self.depth += 1
        saved_file = self.file
        self.file = func.module.file
        try:
            if isinstance(func.node, ast.Lambda):
                return self.eval(func.node.body)
            self.exec_block(func.node.body)
            return PyVal(None)
        except Return as ret:
            return ret.value
        finally:
            self.file = saved_file
            self.depth -= 1
            self.frames.pop()

    def bind_arguments(self, func: FuncVal, args: list[Val], kwargs: dict[str, Val]) -> dict[str, Val] | None:
        """Python's binding of arguments to parameters, with the defaults evaluated at ``def``."""
        a = func.node.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        out: dict[str, Val] = {}
        for name, v in zip(positional, args, strict=False):
            out[name] = v
        extra = args[len(positional) :]
        if extra:
            if a.vararg is None:
                return None
            out[a.vararg.arg] = SeqVal(extra)
        elif a.vararg is not None:
            out[a.vararg.arg] = SeqVal(())
        rest = DictVal()
        for k, v in kwargs.items():
            if k in out:
                return None
            if k in positional or any(p.arg == k for p in a.kwonlyargs):
                out[k] = v
            elif a.kwarg is not None:
                rest.items[k] = v
            else:
                return None
        if a.kwarg is not None:
            out[a.kwarg.arg] = rest
        defaults = func.defaults if func.defaults is not None else tuple(UNKNOWN for _ in a.defaults)
        for name, d in zip(positional[len(positional) - len(defaults) :], defaults, strict=True):
            out.setdefault(name, d)
        for name, d in func.kw_defaults:
            out.setdefault(name, d)
        for name in [*positional, *(p.arg for p in a.kwonlyargs)]:
            if name not in out:
                out[name] = Unknown(f"parameter '{name}' not given")
        return out

    def index(self, base: Val, key: Val) -> Val:
        """``base[key]``; a key a dict lacks or an index past a list's end raises, as in Python."""
        out = super().index(base, key)
        if isinstance(out, Unknown) and isinstance(base, DictVal | SeqVal):
            k = self.static(key)
            if (
                isinstance(base, DictVal)
                and k is not UNKNOWN
                and not any(isinstance(v, Unknown) for v in base.items.values())
            ):
                raise PyRaise(ObjVal(None, {"__exception__": PyVal("KeyError"), "args": SeqVal((key,))}))
            if isinstance(base, SeqVal) and isinstance(k, int):
                raise PyRaise(ObjVal(None, {"__exception__": PyVal("IndexError"), "args": SeqVal((key,))}))
        return out

    def field_default(self, cls: ClassVal, default: ast.expr) -> Val:
        frame = Frame(cls.module, {}, kind="module")
        frame.locals = cls.module.globals
        self.frames.append(frame)
        try:
            v = self.eval(default)
        finally:
            self.frames.pop()
        marker = dataclass_support.field_marker(v)
        if marker is None:
            return v
        if "default" in marker.attrs:
            return marker.attrs["default"]
        factory = marker.attrs.get("default_factory")
        if factory is not None:
            return self.call_value(factory, [], {}, default)
        return Unknown("a field without a default")

    def instantiate(self, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
        obj = super().instantiate(cls, args, kwargs, node)
        if cls.name in harness.HARNESS_RECORDS and isinstance(obj, ObjVal):
            obj.attrs.setdefault("__harness__", PyVal(cls.name))
            read_context.host().records.append(obj)
        return obj


def _with(func: FuncVal, **changes) -> FuncVal:
    fields = dict(
        module=func.module,
        node=func.node,
        kind=func.kind,
        decorator=func.decorator,
        owner=func.owner,
        closure=func.closure,
        wrapper=func.wrapper,
        defaults=func.defaults,
        kw_defaults=func.kw_defaults,
    )
    fields.update(changes)
    return FuncVal(**fields)


def with_kind(func: FuncVal, kind: str) -> FuncVal:
    return _with(func, kind=kind)


def _join(a: dict[str, Val], b: dict[str, Val], same) -> dict[str, Val]:
    out = {}
    for name in set(a) | set(b):
        x, y = a.get(name), b.get(name)
        if x is not None and y is not None and same(x, y):
            out[name] = x
        else:
            out[name] = Unknown(f"'{name}' is bound differently on branches the reader cannot decide")
    return out


_FILLING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "sort"}
)


def _filled_names(loop: ast.stmt) -> list[str]:
    """Names whose value a loop fills in place: ``x[i] = v``, ``x.attr = v``, ``x.append(v)``."""
    out: dict[str, None] = {}
    for node in ast.walk(loop):
        base = None
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store):
            base = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _FILLING_METHODS:
                base = node.func.value
        while isinstance(base, ast.Subscript | ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name):
            out[base.id] = None
    return list(out)


def _assigned_names(stmts) -> list[str]:
    """Names a statement list binds (cached on its first statement: havoc runs often)."""
    key = "_dslc_assigned"
    if len(stmts) == 1 and hasattr(stmts[0], key):
        return getattr(stmts[0], key)
    out: dict[str, None] = {}

    def target(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            out[t.id] = None
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)

    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    target(t)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
                target(node.target)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                out[node.name] = None
    names = list(out)
    if len(stmts) == 1:
        setattr(stmts[0], key, names)
    return names


def _is_generator(node: ast.AST) -> bool:
    found = getattr(node, "_dslc_generator", None)
    if found is None:
        found = False
        stack = list(getattr(node, "body", []) if not isinstance(node, ast.Lambda) else [])
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Yield | ast.YieldFrom):
                found = True
                break
            if isinstance(n, ast.FunctionDef | ast.Lambda | ast.ClassDef | ast.AsyncFunctionDef):
                continue
            stack.extend(ast.iter_child_nodes(n))
        node._dslc_generator = found  # type: ignore[attr-defined]
    return found


def int_value(v: Val) -> int | None:
    if isinstance(v, IntVal) and isinstance(v.expr, Const):
        return v.expr.value
    return None
