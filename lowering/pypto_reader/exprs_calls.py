"""Calls in expressions: what a call calls, its arguments, and the calls every reader shares.

``f(...)`` is dispatched on what ``f`` evaluates to: a ``pl`` path (the evaluator's
``call_pl``), a builtin or standard-library function of :mod:`~lowering.pypto_reader.std_modules`,
a function of the file (``call_function``, which an interpreter of statements runs), a class
(a dataclass binds its fields, another class runs ``__init__``) or a module outside the model
tree, of which only harness records and torch tensors are modelled (nothing is ever run).
The scalar ``pl`` calls -- ``pl.min``/``pl.max``, ``pl.cast``/``pl.const`` of integers and
``pl.dynamic`` -- are evaluated here because module code, orchestration and kernels all use them.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader import builtin_calls, harness, host_tensors
from lowering.pypto_reader.exprs_displays import display_items
from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DictVal,
    DtypeVal,
    ExternVal,
    FuncVal,
    IntVal,
    ObjVal,
    PlRef,
    Unknown,
    Val,
)

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator


def call_other(ev: Evaluator, func: Val, node: ast.Call) -> Val:
    """The default of ``Evaluator.call_other``: the file's functions and classes are called, a
    module outside the model tree is modelled if it can be (``call_extern``)."""
    if isinstance(func, FuncVal | BoundMethod | ClassVal):
        evaluated = ev.eval_args(node)
        if evaluated is None:
            return Unknown(f"the arguments of '{ast.unparse(node.func)}'")
        return ev.call_value(func, evaluated[0], evaluated[1], node)
    evaluated = ev.eval_args(node)  # Python evaluates the arguments of any call
    if isinstance(func, ExternVal) and evaluated is not None:
        return ev.call_extern(func, *evaluated)
    return UNKNOWN


def call_extern(ev: Evaluator, func: ExternVal, args: list[Val], kwargs: dict[str, Val]) -> Val:
    """A call into a module outside the model tree: a harness record or a torch tensor
    the reader models; anything else is unknown (it is never run)."""
    if func.name.rsplit(".", 1)[-1] in harness.HARNESS_RECORDS:
        return harness.harness_record(func.name, args, kwargs)
    if host_tensors.is_constructor(func.name):
        return host_tensors.construct(ev, func.name, args, kwargs)
    return UNKNOWN


def lambda_expression(ev: Evaluator, node: ast.Lambda) -> Val:
    return ev.make_function(node)


def call_expression(ev: Evaluator, node: ast.Call) -> Val:
    """``f(...)``, dispatched on what ``f`` is."""
    func = ev.eval(node.func)
    if isinstance(func, PlRef):
        return ev.call_pl(func.path, node)
    if isinstance(func, BuiltinVal):
        evaluated = ev.eval_args(node)
        if evaluated is None:
            return Unknown(f"the arguments of '{func.name}'")
        return ev.call_value(func, evaluated[0], evaluated[1], node)
    return ev.call_other(func, node)


def eval_args(ev: Evaluator, node: ast.Call) -> tuple[list[Val], dict[str, Val]] | None:
    """Positional and keyword arguments of a call (``*xs`` and ``**kw`` expanded)."""
    args = display_items(ev, node.args)  # positional arguments expand `*xs` as a display does
    if args is None:
        return None
    kwargs: dict[str, Val] = {}
    for kw in node.keywords:
        if kw.arg is None:
            d = ev.eval(kw.value)
            if not isinstance(d, DictVal) or not all(isinstance(k, str) for k in d.items):
                return None
            kwargs.update(d.items)  # type: ignore[arg-type]
        else:
            kwargs[kw.arg] = ev.eval(kw.value)
    return args, kwargs


def call_value(ev: Evaluator, func: Val, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    """Call an evaluated callable on evaluated arguments."""
    if isinstance(func, BuiltinVal):
        if func.self_val is not None:
            args = [func.self_val, *args]
        try:
            return func.fn(ev, args, kwargs, node)
        except builtin_calls.StaticError as err:
            return Unknown(str(err))
    if isinstance(func, BoundMethod):
        return ev.call_value(func.func, [func.self_val, *args], kwargs, node)
    if isinstance(func, FuncVal):
        return ev.call_function(func, args, kwargs, node)
    if isinstance(func, ClassVal):
        return ev.instantiate(func, args, kwargs, node)
    if isinstance(func, ExternVal):
        out = ev.call_extern(func, args, kwargs)
        return out if out is not UNKNOWN else Unknown(f"a call of {func.name}")
    return Unknown(f"a call of {type(func).__name__}")


def instantiate(ev: Evaluator, cls: ClassVal, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    """``Cls(...)``: a dataclass binds its fields; a plain class runs its ``__init__``."""
    obj = ObjVal(cls)
    if cls.dataclass or any(b.dataclass for b in cls.bases):
        fields = cls.all_fields()
        names = [n for n, _ in fields]
        if len(args) > len(names):
            return Unknown(f"too many arguments for {cls.name}")
        bound = dict(zip(names, args, strict=False))
        for k, v in kwargs.items():
            if k not in names or k in bound:
                return Unknown(f"argument '{k}' of {cls.name}")
            bound[k] = v
        for name, default in fields:
            if name in bound:
                obj.attrs[name] = bound[name]
            elif default is not None:
                obj.attrs[name] = ev.field_default(cls, default)
            else:
                obj.attrs[name] = Unknown(f"field '{name}' of {cls.name} not given")
        post = cls.method("__post_init__")
        if post is not None:
            ev.call_value(post, [obj], {}, node)
        return obj
    init = cls.method("__init__")
    if init is not None:
        ev.call_value(init, [obj, *args], kwargs, node)
    return obj


def minmax(ev: Evaluator, name: str, args: list[Val]) -> Val:
    """``min``/``max`` of integers as one symbolic node, of other known values folded."""
    if len(args) == 1:
        items = ev.iterate(args[0])
        if items is None or not items:
            return UNKNOWN
        args = items
    folded = ev.fold_ints(name, args)
    if folded is not None:
        return folded
    statics = [ev.static(a) for a in args]
    if all(s is not UNKNOWN for s in statics):
        try:
            return ev.from_static(min(statics) if name == "min" else max(statics))  # type: ignore[type-var]
        except TypeError:
            return UNKNOWN
    return UNKNOWN


def scalar_pl(ev: Evaluator, path: str, node: ast.Call) -> Val:
    """``pl.min``/``pl.max`` on scalars and ``pl.dynamic``; other ``pl`` calls are unknown here."""
    short = path.rsplit(".", 1)[-1]
    if short in ("min", "max") and len(node.args) == 2:
        return ev.minmax(short, [ev.eval(a) for a in node.args])
    if path == "pl.dynamic":
        name = ev.static(ev.eval(node.args[0])) if node.args else None
        return ev.dynamic_axis(str(name or "dyn"), node)
    if short in ("cast", "const"):  # pl.cast(i, pl.INDEX), pl.const(1, pl.INT32)
        b = ev.arguments(node, ["input", "target_type"] if short == "cast" else ["value", "dtype"])
        value, dtype = b.get("input", b.get("value")), b.get("target_type", b.get("dtype"))
        if value is not None and dtype is not None:
            return ev.integer_cast(ev.eval(value), ev.eval(dtype)) or UNKNOWN
    return UNKNOWN


def integer_cast(ev: Evaluator, value: Val, dtype: Val) -> IntVal | None:
    """``pl.cast(i, pl.INDEX)`` of an integer to an integer dtype: the same integer (offsets
    and row counts pass through such casts); None for anything else."""
    v = ev.int_expr(value)
    if v is None or not isinstance(dtype, DtypeVal) or dtype.dtype is None or dtype.dtype[0] not in "iu":
        return None
    return IntVal(v)


def arguments(node: ast.Call, names: list[str]) -> dict[str, ast.expr]:
    """Bind a call's positional and keyword arguments to parameter ``names`` (ast nodes)."""
    out: dict[str, ast.expr] = {}
    for name, arg in zip(names, node.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        out[name] = arg
    for kw in node.keywords:
        if kw.arg is not None:
            out[kw.arg] = kw.value
    return out
