"""Python's builtin functions, as the reader's interpreters see them: pure and bounded.

Model files compute their configuration at import time with ordinary Python -- ``len``,
``range``, ``min``, ``sorted``, ``isinstance``, ``getattr``, the conversions and the
containers. Each such name is implemented here on abstract values, without side effects
(``print`` prints nothing), keeping integers symbolic where Python's result is an integer
(``abs``, ``divmod``, ``int``); a name the file does not bind resolves to :data:`BUILTINS`.
Methods of builtin values are in :mod:`~lowering.pypto_reader.builtin_methods`, standard
modules in :mod:`~lowering.pypto_reader.std_modules`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering.pypto_reader.builtin_calls import (
    Fn,
    StaticError,
    bounded_seq,
    check_arity,
    iterable_items,
    static_arg,
)
from lowering.pypto_reader.py_exceptions import EXCEPTION_CLASSES, raised
from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DictVal,
    FuncVal,
    IntVal,
    ObjVal,
    PyVal,
    RangeVal,
    SeqVal,
    Unknown,
    Val,
)
from lowering.symbolic import Const, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator


def builtin(name: str) -> Callable[[Fn], Fn]:
    """Register the decorated function as the builtin ``name``."""

    def register(fn: Fn) -> Fn:
        BUILTINS[name] = BuiltinVal(name, fn)
        return fn

    return register


BUILTINS: dict[str, BuiltinVal] = {}


@builtin("len")
def _len(ev, args, kwargs, node):
    check_arity(args, 1, 1, "len")
    v = args[0]
    if isinstance(v, SeqVal | DictVal):
        return IntVal(Const(len(v.items)))
    if isinstance(v, RangeVal):
        return IntVal(Const(len(v)))
    s = static_arg(ev, v)
    return ev.from_static(len(s))  # type: ignore[arg-type]


@builtin("range")
def _range(ev, args, kwargs, node):
    check_arity(args, 1, 3, "range")
    bounds = [static_arg(ev, a) for a in args]
    if not all(isinstance(b, int) for b in bounds):
        raise StaticError("range() of non-integers")
    if len(bounds) == 3 and bounds[2] == 0:
        raise raised("ValueError")  # range() arg 3 must not be zero, as Python says
    r = range(*bounds)  # type: ignore[arg-type]
    return RangeVal(r.start, r.stop, r.step)


@builtin("enumerate")
def _enumerate(ev, args, kwargs, node):
    check_arity(args, 1, 2, "enumerate")
    start = (
        static_arg(ev, args[1]) if len(args) == 2 else static_arg(ev, kwargs.get("start", IntVal(Const(0))))
    )
    items = iterable_items(ev, args[0])
    return bounded_seq([SeqVal((IntVal(Const(start + i)), v)) for i, v in enumerate(items)], "tuple")  # type: ignore[operator]


@builtin("zip")
def _zip(ev, args, kwargs, node):
    lists = [iterable_items(ev, a) for a in args]
    return bounded_seq([SeqVal(t) for t in zip(*lists, strict=False)], "tuple")


@builtin("reversed")
def _reversed(ev, args, kwargs, node):
    check_arity(args, 1, 1, "reversed")
    return bounded_seq(list(reversed(iterable_items(ev, args[0]))), "tuple")


@builtin("sorted")
def builtin_sorted(ev: Evaluator, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    check_arity(args, 1, 1, "sorted")
    if "key" in kwargs and not (isinstance(kwargs["key"], PyVal) and kwargs["key"].value is None):
        items = iterable_items(ev, args[0])
        keyed = [
            (static_arg(ev, ev.call_value(kwargs["key"], [v], {}, node)), i, v) for i, v in enumerate(items)
        ]
        out = [v for _, _, v in sorted(keyed, key=lambda t: (t[0], t[1]))]
    else:
        out = [ev.from_static(x) for x in sorted(static_arg(ev, args[0]))]  # type: ignore[call-overload]
    if "reverse" in kwargs and static_arg(ev, kwargs["reverse"]):
        out.reverse()
    return bounded_seq(out)


@builtin("min")
def _min(ev, args, kwargs, node):
    if "key" in kwargs or "default" in kwargs:
        raise StaticError("min() with key or default")
    return ev.minmax("min", args)


@builtin("max")
def _max(ev, args, kwargs, node):
    if "key" in kwargs or "default" in kwargs:
        raise StaticError("max() with key or default")
    return ev.minmax("max", args)


@builtin("sum")
def _sum(ev, args, kwargs, node):
    check_arity(args, 1, 2, "sum")
    items = iterable_items(ev, args[0])
    total: Val = args[1] if len(args) == 2 else IntVal(Const(0))
    for item in items:
        total = ev.binary(ast.Add(), total, item, node)
    return total


@builtin("abs")
def _abs(ev, args, kwargs, node):
    check_arity(args, 1, 1, "abs")
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(binop("max", i, binop("-", Const(0), i)))
    return ev.from_static(abs(static_arg(ev, args[0])))  # type: ignore[arg-type]


@builtin("int")
def _int(ev, args, kwargs, node):
    if not args:
        return IntVal(Const(0))
    i = ev.int_expr(args[0])
    if i is not None and len(args) == 1:
        return IntVal(i)
    s = static_arg(ev, args[0])
    try:
        return ev.from_static(int(s, *[static_arg(ev, a) for a in args[1:]]))  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError) as err:
        raise StaticError(f"int(): {err}") from None


def _convert(name: str, fn: Callable) -> Fn:
    def convert(ev, args, kwargs, node):
        if not args:
            return ev.from_static(fn())
        s = static_arg(ev, args[0])
        try:
            return ev.from_static(fn(s))
        except (TypeError, ValueError, OverflowError) as err:
            raise StaticError(f"{name}(): {err}") from None

    return convert


for _name, _fn in (
    ("float", float),
    ("str", str),
    ("repr", repr),
    ("bool", bool),
    ("ord", ord),
    ("chr", chr),
):
    BUILTINS[_name] = BuiltinVal(_name, _convert(_name, _fn))


def _container(kind: str) -> Fn:
    def make(ev, args, kwargs, node):
        if not args:
            return SeqVal([], kind)
        return bounded_seq(iterable_items(ev, args[0]), kind)

    return make


BUILTINS["list"] = BuiltinVal("list", _container("list"))
BUILTINS["tuple"] = BuiltinVal("tuple", _container("tuple"))
BUILTINS["set"] = BuiltinVal("set", _container("set"))
BUILTINS["frozenset"] = BuiltinVal("frozenset", _container("set"))


@builtin("dict")
def builtin_dict(ev: Evaluator, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    out = DictVal()
    if args:
        src = args[0]
        if isinstance(src, DictVal):
            out.items.update(src.items)
        else:
            for pair in iterable_items(ev, src):
                if not (isinstance(pair, SeqVal) and len(pair.items) == 2):
                    raise StaticError("dict() of items that are not pairs")
                out.items[static_arg(ev, pair.items[0])] = pair.items[1]  # type: ignore[index]
    out.items.update(kwargs)
    return out


@builtin("any")
def _any(ev, args, kwargs, node):
    check_arity(args, 1, 1, "any")
    truths = [ev.truth(v) for v in iterable_items(ev, args[0])]
    if any(t is True for t in truths):
        return PyVal(True)
    if any(t is None for t in truths):
        raise StaticError("any() of undecidable items")
    return PyVal(False)


@builtin("all")
def _all(ev, args, kwargs, node):
    check_arity(args, 1, 1, "all")
    truths = [ev.truth(v) for v in iterable_items(ev, args[0])]
    if any(t is False for t in truths):
        return PyVal(False)
    if any(t is None for t in truths):
        raise StaticError("all() of undecidable items")
    return PyVal(True)


@builtin("round")
def _round(ev, args, kwargs, node):
    check_arity(args, 1, 2, "round")
    return ev.from_static(round(*[static_arg(ev, a) for a in args]))  # type: ignore[call-overload]


@builtin("divmod")
def _divmod(ev, args, kwargs, node):
    check_arity(args, 2, 2, "divmod")
    a, b = (ev.int_expr(x) for x in args)
    if a is not None and b is not None:
        return SeqVal((IntVal(binop("//", a, b)), IntVal(binop("%", a, b))))
    q, r = divmod(static_arg(ev, args[0]), static_arg(ev, args[1]))  # type: ignore[operator]
    return SeqVal((ev.from_static(q), ev.from_static(r)))


@builtin("pow")
def _pow(ev, args, kwargs, node):
    check_arity(args, 2, 3, "pow")
    xs = [static_arg(ev, a) for a in args]
    if isinstance(xs[1], int) and xs[1] > 4096:
        raise StaticError("pow() too large")
    return ev.from_static(pow(*xs))  # type: ignore[call-overload]


@builtin("isinstance")
def _isinstance(ev, args, kwargs, node):
    check_arity(args, 2, 2, "isinstance")
    value, kinds = args
    names = [
        k.name for k in (kinds.items if isinstance(kinds, SeqVal) else (kinds,)) if isinstance(k, BuiltinVal)
    ]
    if not names:
        if isinstance(kinds, ClassVal) and isinstance(value, ObjVal):
            return PyVal(value.cls is kinds or (value.cls is not None and kinds in value.cls.bases))
        raise StaticError("isinstance() of a class the reader does not know")
    s = ev.static(value)
    if s is UNKNOWN:
        if isinstance(value, SeqVal):
            return PyVal(any(n == value.kind for n in names))
        if isinstance(value, DictVal):
            return PyVal("dict" in names)
        raise StaticError("isinstance() of an unknown value")
    types = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple, "dict": dict}
    return PyVal(any(isinstance(s, types[n]) for n in names if n in types))


@builtin("callable")
def _callable(ev, args, kwargs, node):
    check_arity(args, 1, 1, "callable")
    v = args[0]
    if isinstance(v, FuncVal | BuiltinVal | BoundMethod | ClassVal):
        return PyVal(True)
    if ev.static(v) is not UNKNOWN:
        return PyVal(False)
    raise StaticError("callable() of an unknown value")


@builtin("getattr")
def _getattr(ev, args, kwargs, node):
    check_arity(args, 2, 3, "getattr")
    name = static_arg(ev, args[1])
    if not isinstance(name, str):
        raise StaticError("getattr() with a non-string name")
    v = ev.attribute(args[0], name, node)
    if isinstance(v, Unknown) and len(args) == 3:
        return args[2]
    return v


@builtin("hasattr")
def _hasattr(ev, args, kwargs, node):
    check_arity(args, 2, 2, "hasattr")
    name = static_arg(ev, args[1])
    v = ev.attribute(args[0], name, node) if isinstance(name, str) else UNKNOWN
    if isinstance(v, Unknown):
        raise StaticError("hasattr() undecidable")
    return PyVal(True)


@builtin("setattr")
def _setattr(ev, args, kwargs, node):
    check_arity(args, 3, 3, "setattr")
    name = static_arg(ev, args[1])
    if isinstance(args[0], ObjVal) and isinstance(name, str):
        args[0].attrs[name] = args[2]
        return PyVal(None)
    raise StaticError("setattr() on something the reader does not model")


@builtin("map")
def _map(ev, args, kwargs, node):
    if len(args) < 2:
        raise StaticError("map() needs an iterable")
    lists = [iterable_items(ev, a) for a in args[1:]]
    return bounded_seq(
        [ev.call_value(args[0], list(t), {}, node) for t in zip(*lists, strict=False)], "tuple"
    )


@builtin("filter")
def _filter(ev, args, kwargs, node):
    check_arity(args, 2, 2, "filter")
    out = []
    for v in iterable_items(ev, args[1]):
        keep = (
            v
            if isinstance(args[0], PyVal) and args[0].value is None
            else ev.call_value(args[0], [v], {}, node)
        )
        t = ev.truth(keep)
        if t is None:
            raise StaticError("filter() undecidable")
        if t:
            out.append(v)
    return bounded_seq(out, "tuple")


@builtin("print")
def _print(ev, args, kwargs, node):
    return PyVal(None)  # nothing is printed: the reader has no side effects


@builtin("super")
def _super(ev, args, kwargs, node):
    raise StaticError("super()")


@builtin("hash")
def _hash(ev, args, kwargs, node):
    raise StaticError("hash() differs between runs")


WRAPPERS = ("property", "staticmethod", "classmethod")
for _name in WRAPPERS:  # applied by the interpreter when it defines the decorated function
    BUILTINS[_name] = BuiltinVal(_name, lambda ev, a, k, n: a[0] if a else UNKNOWN)


@builtin("object")
def _object(ev, args, kwargs, node):
    return ObjVal(None)


# Exceptions: calling one makes an exception object; ``raise`` and ``except`` match them by
# name (``py_exceptions``).
BUILTINS.update(EXCEPTION_CLASSES)
