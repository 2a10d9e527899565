"""A static interpreter of Python statements: the reader's model of import time and host code.

Module-level code of a model file computes its configuration: dataclass configs and their
``dataclasses.replace``, attributes of imported modules reassigned, argv parsed for its
defaults, a factory that defines and returns the kernel the file uses. :class:`PyInterpreter`
runs such code over abstract values (``lowering.pypto_reader.values``) with Python's own
semantics, frame by frame, without importing or executing anything: calls of the file's
functions and classes are interpreted, builtins come from ``builtin_functions`` and ``std_modules``, everything outside the
model tree is opaque. Work is bounded (``MAX_STEPS`` statements per read, ``MAX_DEPTH``
calls deep); what exceeds a bound or cannot be decided becomes ``Unknown``, and the
interpreters built on this one (module level, orchestration) note it where it matters.

Where a condition cannot be decided, both branches run and the names they bind differently
become unknown (a loop over an unknown iterable makes its names unknown); an exception that
nothing catches ends the function it was raised in, as in Python.

:class:`PyInterpreter` is built in layers, each a base class in its own module, because the
interpreters built on it override methods of every layer: frames and the places a value is
bound to (``interp_frames``), straight-line statements within the read's budget
(``interp_statements``), branches, loops and exceptions (``interp_control_flow``), with the
bounds and control-flow signals in ``interp_control``. This module adds what a file defines and
calls: functions and their decorators (a ``pl`` decorator makes a kernel), classes, and the
interpretation of a call of one of the file's own functions.
"""

from __future__ import annotations

import ast

from lowering.pypto_reader import builtin_functions, dataclass_support, harness, read_context
from lowering.pypto_reader.interp_control import MAX_DEPTH, Return
from lowering.pypto_reader.interp_control_flow import ControlFlowRunner
from lowering.pypto_reader.interp_frames import Frame
from lowering.pypto_reader.values import (
    UNKNOWN,
    BuiltinVal,
    ClassVal,
    DictVal,
    FuncVal,
    ObjVal,
    PlRef,
    PyVal,
    SeqVal,
    Unknown,
    Val,
)

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


class PyInterpreter(ControlFlowRunner):
    """Interprets Python statements over abstract values; subclasses add what ``pl`` means."""

    # ---------------------------------------------------------------- definitions
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
