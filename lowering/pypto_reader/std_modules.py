"""The standard library, as the reader's interpreters see it: pure and bounded.

Model files compute their configuration at import time with the standard library --
``math.ceil``, ``itertools.product``, ``functools.partial``, ``os.environ.get(NAME,
default)``, ``sys.argv`` scanned for a flag, ``dataclasses.replace``, an ``argparse`` parser
read for its defaults. Each attribute the reader implements is in :data:`STD_MODULES`
(``dataclasses`` and ``argparse`` from their own modules), on abstract values and without side
effects: nothing is opened, printed, spawned or imported. ``os`` and ``sys`` answer for the
process of :mod:`~lowering.pypto_reader.read_context`; any other attribute of a module
outside the model tree is an opaque ``ExternVal``.
"""

from __future__ import annotations

import ast
import itertools
import math
import posixpath
from collections.abc import Callable

from lowering.pypto_reader.argparse_parser import ARGPARSE_ATTRIBUTES
from lowering.pypto_reader.builtin_calls import (
    MAX_LEN,
    Fn,
    StaticError,
    bounded_seq,
    check_arity,
    iterable_items,
    static_arg,
)
from lowering.pypto_reader.builtin_functions import BUILTINS
from lowering.pypto_reader.builtin_methods import dict_get, shallow_copy
from lowering.pypto_reader.dataclass_support import DATACLASSES_ATTRIBUTES
from lowering.pypto_reader.py_exceptions import PyRaise
from lowering.pypto_reader.read_context import host
from lowering.pypto_reader.values import (
    UNKNOWN,
    BuiltinVal,
    ClassVal,
    DictVal,
    ExternVal,
    FuncVal,
    IntVal,
    ObjVal,
    PyVal,
    SeqVal,
    Val,
)
from lowering.symbolic import Const, binop


def _identity_decorator(ev, args, kwargs, node):
    if len(args) == 1 and not kwargs and isinstance(args[0], FuncVal | ClassVal):
        return args[0]
    return BuiltinVal("decorator", lambda ev2, a, k, n: a[0] if a else UNKNOWN)


def _partial(ev, args, kwargs, node):
    if not args:
        raise StaticError("partial() without a function")
    func, bound, bound_kw = args[0], args[1:], kwargs

    def call(ev2, a, k, n):
        return ev2.call_value(func, [*bound, *a], {**bound_kw, **k}, n)

    return BuiltinVal("functools.partial", call)


def _reduce(ev, args, kwargs, node):
    check_arity(args, 2, 3, "reduce")
    items = iterable_items(ev, args[1])
    if len(args) == 3:
        acc = args[2]
    elif items:
        acc, items = items[0], items[1:]
    else:
        raise StaticError("reduce() of an empty sequence")
    for item in items:
        acc = ev.call_value(args[0], [acc, item], {}, node)
    return acc


def _itertool(fn: Callable) -> Fn:
    def call(ev, args, kwargs, node):
        lists = [iterable_items(ev, a) for a in args]
        kw = {k: static_arg(ev, v) for k, v in kwargs.items()}
        out = []
        for t in itertools.islice(fn(*lists, **kw), MAX_LEN + 1):
            out.append(SeqVal(t) if isinstance(t, tuple) else t)
        return bounded_seq(out, "tuple")

    return call


def _chain(ev, args, kwargs, node):
    return bounded_seq([v for a in args for v in iterable_items(ev, a)], "tuple")


def _repeat(ev, args, kwargs, node):
    check_arity(args, 2, 2, "repeat")
    n = static_arg(ev, args[1])
    if not isinstance(n, int):
        raise StaticError("repeat() without a count")
    return bounded_seq([args[0]] * n, "tuple")


def _math(fn: Callable) -> Fn:
    def call(ev, args, kwargs, node):
        xs = [static_arg(ev, a) for a in args]
        try:
            return ev.from_static(fn(*xs))
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as err:
            raise StaticError(f"math: {err}") from None

    return call


def _ceil(ev, args, kwargs, node):
    check_arity(args, 1, 1, "ceil")
    call = node if isinstance(node, ast.Call) else None
    arg = call.args[0] if call is not None and call.args else None
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Div):
        a, b = ev.int_expr(ev.eval(arg.left)), ev.int_expr(ev.eval(arg.right))
        if a is not None and b is not None:
            return IntVal(binop("cdiv", a, b))  # ceil(a / b) of integers stays symbolic
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(i)
    return ev.from_static(math.ceil(static_arg(ev, args[0])))  # type: ignore[arg-type]


def _floor(ev, args, kwargs, node):
    check_arity(args, 1, 1, "floor")
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(i)
    return ev.from_static(math.floor(static_arg(ev, args[0])))  # type: ignore[arg-type]


def _deepcopy(ev, args, kwargs, node):
    def copy(v: Val) -> Val:
        if isinstance(v, SeqVal):
            return SeqVal([copy(i) for i in v.items], v.kind)
        if isinstance(v, DictVal):
            return DictVal({k: copy(i) for k, i in v.items.items()})
        if isinstance(v, ObjVal):
            return ObjVal(v.cls, {k: copy(i) for k, i in v.attrs.items()})
        return v

    return copy(args[0])


def _sys_exit(ev, args, kwargs, node):
    raise PyRaise(ObjVal(None, {"__exception__": PyVal("SystemExit"), "args": SeqVal(args)}))


def _path_fn(fn: Callable) -> Fn:
    def call(ev, args, kwargs, node):
        xs = [static_arg(ev, a) for a in args]
        if not all(isinstance(x, str) for x in xs):
            raise StaticError("os.path of a non-string")
        return ev.from_static(fn(*xs))

    return call


def _noop(ev, args, kwargs, node):
    return PyVal(None)


def _b(name: str, fn: Fn) -> BuiltinVal:
    return BuiltinVal(name, fn)


# Attributes of standard modules that the reader implements; any other attribute of a
# module outside the model tree is an opaque ``ExternVal``.
STD_MODULES: dict[str, dict[str, Callable[[], Val]]] = {
    "os": {
        "environ": lambda: host().environ,
        "getenv": lambda: _b("os.getenv", lambda ev, a, k, n: dict_get(ev, [host().environ, *a], k, n)),
        "sep": lambda: PyVal("/"),
    },
    "os.path": {
        "join": lambda: _b("os.path.join", _path_fn(posixpath.join)),
        "dirname": lambda: _b("os.path.dirname", _path_fn(posixpath.dirname)),
        "basename": lambda: _b("os.path.basename", _path_fn(posixpath.basename)),
        "splitext": lambda: _b("os.path.splitext", _path_fn(posixpath.splitext)),
    },
    "sys": {
        "argv": lambda: host().argv,
        "path": lambda: host().path,
        "maxsize": lambda: IntVal(Const((1 << 63) - 1)),
        "exit": lambda: _b("sys.exit", _sys_exit),
    },
    "math": {
        "ceil": lambda: _b("math.ceil", _ceil),
        "floor": lambda: _b("math.floor", _floor),
        **{
            n: (lambda n=n: _b(f"math.{n}", _math(getattr(math, n))))
            for n in "sqrt log log2 log10 exp prod gcd lcm isqrt fabs isclose comb factorial trunc".split()
        },
        "inf": lambda: PyVal(math.inf),
        "pi": lambda: PyVal(math.pi),
        "e": lambda: PyVal(math.e),
    },
    "dataclasses": DATACLASSES_ATTRIBUTES,
    "functools": {
        "lru_cache": lambda: _b("functools.lru_cache", _identity_decorator),
        "cached_property": lambda: BUILTINS["property"],
        "cache": lambda: _b("functools.cache", _identity_decorator),
        "wraps": lambda: _b("functools.wraps", _identity_decorator),
        "partial": lambda: _b("functools.partial", _partial),
        "reduce": lambda: _b("functools.reduce", _reduce),
    },
    "itertools": {
        "product": lambda: _b("itertools.product", _itertool(itertools.product)),
        "combinations": lambda: _b("itertools.combinations", _itertool(itertools.combinations)),
        "permutations": lambda: _b("itertools.permutations", _itertool(itertools.permutations)),
        "pairwise": lambda: _b("itertools.pairwise", _itertool(itertools.pairwise)),
        "zip_longest": lambda: _b("itertools.zip_longest", _itertool(itertools.zip_longest)),
        "chain": lambda: _b("itertools.chain", _chain),
        "repeat": lambda: _b("itertools.repeat", _repeat),
    },
    "builtins": {n: (lambda n=n: BUILTINS[n]) for n in ("len", "range", "min", "max", "int", "str", "print")},
    "copy": {
        "copy": lambda: _b("copy.copy", shallow_copy),
        "deepcopy": lambda: _b("copy.deepcopy", _deepcopy),
    },
    "argparse": ARGPARSE_ATTRIBUTES,
    "collections": {
        "OrderedDict": lambda: BUILTINS["dict"],
        "defaultdict": lambda: _b("collections.defaultdict", lambda ev, a, k, n: DictVal()),
    },
    "warnings": {
        "warn": lambda: _b("warnings.warn", _noop),
        "filterwarnings": lambda: _b("warnings.filterwarnings", _noop),
    },
}


def module_attribute(module: str, attr: str) -> Val:
    """``module.attr`` for a module outside the model tree."""
    table = STD_MODULES.get(module)
    if table is not None and attr in table:
        return table[attr]()
    return ExternVal(f"{module}.{attr}")


def import_extern(name: str) -> Val:
    """The value ``import name`` binds for a module outside the model tree."""
    return ExternVal(name)
