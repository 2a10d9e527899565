"""What a file defines and calls, for the static interpreter: functions, classes and calls of them.

A ``def`` makes a :class:`~lowering.pypto_reader.values.FuncVal` with its closure and the
defaults evaluated at definition; its decorators apply from the inside out -- a ``pl``
decorator sets the function's kind (``pl.jit`` makes an entry, recorded for the read), builtin
wrappers such as ``property`` wrap it, other known decorators run. A ``class`` body runs in a
frame of its own and becomes a :class:`~lowering.pypto_reader.values.ClassVal`. A call of a
plain function of the file is interpreted in a new frame, with Python's binding of arguments
to parameters, within ``MAX_DEPTH`` nested calls (a ``pl`` kernel is never run as host code);
dataclass field defaults and harness records are here too. The functions take the
:class:`~lowering.pypto_reader.interp.PyInterpreter` they run on.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader import builtin_functions, dataclass_support, exprs_calls, harness, read_context
from lowering.pypto_reader.interp_control import MAX_DEPTH, Return
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

if TYPE_CHECKING:
    from lowering.pypto_reader.interp import PyInterpreter

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


def define_function(it: PyInterpreter, node: ast.FunctionDef | ast.Lambda, owner: str | None = None) -> Val:
    f = it.frame
    closure = () if f.kind == "module" else (f.closure if f.kind == "class" else (f.locals, *f.closure))
    args = node.args
    defaults = tuple(it.eval(d) for d in args.defaults)
    kw_defaults = tuple(
        (a.arg, it.eval(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    )
    if f.kind == "class":
        owner = owner or it._class_name
    func = FuncVal(f.module, node, "plain", None, owner, closure, None, defaults, kw_defaults)
    if isinstance(node, ast.Lambda):
        return func
    value: Val = func
    for deco in reversed(node.decorator_list):
        value = decorate(it, value, deco)
    return value


def function_definition(it: PyInterpreter, s: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    it.bind_name(s.name, define_function(it, s), s)  # type: ignore[arg-type]


def decorate(it: PyInterpreter, value: Val, deco: ast.expr) -> Val:
    """Apply one decorator: a ``pl`` decorator sets the function's kind; ``property`` and
    friends its wrapper; other known decorators run; unknown ones leave it as it is."""
    target = deco.func if isinstance(deco, ast.Call) else deco
    d = it.eval(target)
    if isinstance(d, PlRef) and isinstance(value, FuncVal):
        kind = DECORATORS.get(d.path)
        if kind is None:
            return value
        out = _with(value, kind=function_kind(it, kind, deco), decorator=deco)
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
            evaluated = it.eval_args(deco)
            if evaluated is None:
                return value
            fn = it.call_value(d, evaluated[0], evaluated[1], deco)
        out = it.call_value(fn, [value], {}, deco)
        return value if isinstance(out, Unknown) else out
    return value


def function_kind(it: PyInterpreter, kind: str, deco: ast.expr) -> str:
    if kind == "function":
        kind = "jit"  # pl.function defaults to Opaque: control plane
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "type":
                    ftype = it.eval(kw.value)
                    if isinstance(ftype, PlRef):
                        kind = FUNCTION_TYPES.get(ftype.path.rsplit(".", 1)[-1], "jit")
    if (
        kind == "incore"
        and isinstance(deco, ast.Call)
        and any(k.arg == "external_source" for k in deco.keywords)
    ):
        kind = "extern"
    return kind


def class_definition(it: PyInterpreter, s: ast.ClassDef) -> None:
    bases = tuple(b for b in (it.eval(x) for x in s.bases) if isinstance(b, ClassVal))
    cls = ClassVal(it.frame.module, s, bases)
    # A class body sees what its definition site sees: the enclosing function's locals too
    # (a `@pl.program` class built inside a builder function reads the builder's arguments
    # from its methods); its own names are not a scope for the methods, as in Python.
    f = it.frame
    closure = () if f.kind == "module" else f.closure if f.kind == "class" else (f.locals, *f.closure)
    frame = Frame(f.module, {}, closure, kind="class")
    saved = it._class_name
    it.frames.append(frame)
    it._class_name = s.name
    try:
        it.exec_block(s.body)
    finally:
        it.frames.pop()
        it._class_name = saved
    cls.attrs.update(frame.locals)
    value: Val = cls
    for deco in reversed(s.decorator_list):
        value = decorate(it, value, deco)
    it.bind_name(s.name, value, s)


def call_function(
    it: PyInterpreter, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST
) -> Val:
    """Interpret a plain function of the file (a ``pl`` kernel is not run as host code)."""
    if func.kind != "plain":
        if func.kind == "jit":
            harness.launch_records(func, args, kwargs)
        return Unknown(f"a call of the {func.kind} function '{func.name}' outside orchestration")
    return it.run_function(func, args, kwargs, node)


def run_function(
    it: PyInterpreter, func: FuncVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST
) -> Val:
    if it.depth >= MAX_DEPTH:
        return Unknown(f"a call chain deeper than {MAX_DEPTH}")
    if _is_generator(func.node):
        return Unknown(f"the generator '{func.name}'")
    bound = it.bind_arguments(func, args, kwargs)
    if bound is None:
        return Unknown(f"the arguments of '{func.name}'")
    frame = Frame(func.module, bound, func.closure)
    it.frames.append(frame)
    it.depth += 1
    saved_file = it.file
    it.file = func.module.file
    try:
        if isinstance(func.node, ast.Lambda):
            return it.eval(func.node.body)
        it.exec_block(func.node.body)
        return PyVal(None)
    except Return as ret:
        return ret.value
    finally:
        it.file = saved_file
        it.depth -= 1
        it.frames.pop()


def bind_arguments(
    it: PyInterpreter, func: FuncVal, args: list[Val], kwargs: dict[str, Val]
) -> dict[str, Val] | None:
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


def field_default(it: PyInterpreter, cls: ClassVal, default: ast.expr) -> Val:
    frame = Frame(cls.module, {}, kind="module")
    frame.locals = cls.module.globals
    it.frames.append(frame)
    try:
        v = it.eval(default)
    finally:
        it.frames.pop()
    marker = dataclass_support.field_marker(v)
    if marker is None:
        return v
    if "default" in marker.attrs:
        return marker.attrs["default"]
    factory = marker.attrs.get("default_factory")
    if factory is not None:
        return it.call_value(factory, [], {}, default)
    return Unknown("a field without a default")


def instantiate(
    it: PyInterpreter, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST
) -> Val:
    obj = exprs_calls.instantiate(it, cls, args, kwargs, node)  # the evaluator's own ``instantiate``
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
