"""Builtins and the standard library, as the reader's interpreters see them: pure and bounded.

Model files compute their configuration at import time with ordinary Python -- ``len``,
``range``, ``min``, comprehensions, ``dataclasses.replace``, an ``argparse`` parser read for its
defaults, ``os.environ.get(NAME, default)``, ``sys.argv`` scanned for a flag. Each such name
is implemented here on abstract values, without side effects: nothing is opened, printed,
spawned or imported. The process the reader pretends to be is the file run as a script
with no arguments and an empty environment, so every argv and environment lookup takes its
default (``docs/pypto.md``, "Module-level code").

Calls to the pypto-lib golden harness's ``TensorSpec``/``ScalarSpec`` are recorded (name,
shape, dtype, output flag) when the harness itself is not in the model tree: they bind the
dynamic axes of the entry's tensors.
"""

from __future__ import annotations

import ast
import itertools
import math
import posixpath
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DictVal,
    ExternVal,
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

MAX_LEN = 1 << 16


class StaticError(Exception):
    """A builtin cannot decide its result here; the call is Unknown (the message says why)."""


class PyRaise(Exception):  # noqa: N818 - it is Python's ``raise``, not an error of the reader
    """A Python exception raised by the code being read (``raise``, ``sys.exit``, a failed
    ``assert``): it unwinds the interpreted frames to a matching ``except``."""

    def __init__(self, value: Val):
        super().__init__(exception_name(value) or "exception")
        self.value = value


class EnvironVal(Val):
    """``os.environ``: empty, except what the file itself sets (``setdefault``, item stores)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[str, Val] = {}


@dataclass
class HostState:
    """What one read of a file shares across its modules: the process the file believes it is."""

    argv: SeqVal
    environ: EnvironVal = field(default_factory=EnvironVal)
    path: SeqVal = field(default_factory=lambda: SeqVal([], "list"))
    records: list[ObjVal] = field(default_factory=list)  # harness TensorSpec/ScalarSpec calls
    programs: list[Val] = field(
        default_factory=list
    )  # ``@pl.program`` classes and ``@pl.jit`` functions defined anywhere


_HOST: ContextVar[HostState | None] = ContextVar("dslc_pypto_host", default=None)


def host() -> HostState:
    state = _HOST.get()
    if state is None:
        state = HostState(SeqVal([PyVal("model.py")], "list"))
        _HOST.set(state)
    return state


def begin_read(script: str) -> object:
    """A fresh host state for reading ``script``; returns the token for :func:`end_read`."""
    return _HOST.set(HostState(SeqVal([PyVal(script)], "list")))


def end_read(token: object) -> None:
    _HOST.reset(token)  # type: ignore[arg-type]


# ---------------------------------------------------------------- helpers

Fn = Callable[["Evaluator", list[Val], dict[str, Val], ast.AST], Val]


def _static(ev: Evaluator, v: Val) -> object:
    s = ev.static(v)
    if s is UNKNOWN:
        raise StaticError("an argument the reader cannot evaluate")
    return s


def _args(args: list[Val], lo: int, hi: int, name: str) -> None:
    if not lo <= len(args) <= hi:
        raise StaticError(f"{name}() with {len(args)} arguments")


def _items(ev: Evaluator, v: Val) -> list[Val]:
    items = ev.iterate(v)
    if items is None:
        raise StaticError("an iterable the reader cannot enumerate")
    return items


def _seq(items: list[Val], kind: str = "list") -> SeqVal:
    if len(items) > MAX_LEN:
        raise StaticError("a sequence too long to build")
    return SeqVal(items, kind)


def builtin(name: str) -> Callable[[Fn], Fn]:
    def register(fn: Fn) -> Fn:
        BUILTINS[name] = BuiltinVal(name, fn)
        return fn

    return register


BUILTINS: dict[str, BuiltinVal] = {}


# ---------------------------------------------------------------- builtins


@builtin("len")
def _len(ev, args, kwargs, node):
    _args(args, 1, 1, "len")
    v = args[0]
    if isinstance(v, SeqVal | DictVal):
        return IntVal(Const(len(v.items)))
    if isinstance(v, RangeVal):
        return IntVal(Const(len(v)))
    s = _static(ev, v)
    return ev.from_static(len(s))  # type: ignore[arg-type]


@builtin("range")
def _range(ev, args, kwargs, node):
    _args(args, 1, 3, "range")
    bounds = [_static(ev, a) for a in args]
    if not all(isinstance(b, int) for b in bounds):
        raise StaticError("range() of non-integers")
    r = range(*bounds)  # type: ignore[arg-type]
    return RangeVal(r.start, r.stop, r.step)


@builtin("enumerate")
def _enumerate(ev, args, kwargs, node):
    _args(args, 1, 2, "enumerate")
    start = _static(ev, args[1]) if len(args) == 2 else _static(ev, kwargs.get("start", IntVal(Const(0))))
    items = _items(ev, args[0])
    return _seq([SeqVal((IntVal(Const(start + i)), v)) for i, v in enumerate(items)], "tuple")  # type: ignore[operator]


@builtin("zip")
def _zip(ev, args, kwargs, node):
    lists = [_items(ev, a) for a in args]
    return _seq([SeqVal(t) for t in zip(*lists, strict=False)], "tuple")


@builtin("reversed")
def _reversed(ev, args, kwargs, node):
    _args(args, 1, 1, "reversed")
    return _seq(list(reversed(_items(ev, args[0]))), "tuple")


@builtin("sorted")
def _sorted(ev, args, kwargs, node):
    _args(args, 1, 1, "sorted")
    if "key" in kwargs and not (isinstance(kwargs["key"], PyVal) and kwargs["key"].value is None):
        items = _items(ev, args[0])
        keyed = [
            (_static(ev, ev.call_value(kwargs["key"], [v], {}, node)), i, v) for i, v in enumerate(items)
        ]
        out = [v for _, _, v in sorted(keyed, key=lambda t: (t[0], t[1]))]
    else:
        out = [ev.from_static(x) for x in sorted(_static(ev, args[0]))]  # type: ignore[call-overload]
    if "reverse" in kwargs and _static(ev, kwargs["reverse"]):
        out.reverse()
    return _seq(out)


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
    _args(args, 1, 2, "sum")
    items = _items(ev, args[0])
    total: Val = args[1] if len(args) == 2 else IntVal(Const(0))
    for item in items:
        total = ev.binary(ast.Add(), total, item, node)
    return total


@builtin("abs")
def _abs(ev, args, kwargs, node):
    _args(args, 1, 1, "abs")
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(binop("max", i, binop("-", Const(0), i)))
    return ev.from_static(abs(_static(ev, args[0])))  # type: ignore[arg-type]


@builtin("int")
def _int(ev, args, kwargs, node):
    if not args:
        return IntVal(Const(0))
    i = ev.int_expr(args[0])
    if i is not None and len(args) == 1:
        return IntVal(i)
    s = _static(ev, args[0])
    try:
        return ev.from_static(int(s, *[_static(ev, a) for a in args[1:]]))  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError) as err:
        raise StaticError(f"int(): {err}") from None


def _convert(name: str, fn: Callable) -> Fn:
    def convert(ev, args, kwargs, node):
        if not args:
            return ev.from_static(fn())
        s = _static(ev, args[0])
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
        return _seq(_items(ev, args[0]), kind)

    return make


BUILTINS["list"] = BuiltinVal("list", _container("list"))
BUILTINS["tuple"] = BuiltinVal("tuple", _container("tuple"))
BUILTINS["set"] = BuiltinVal("set", _container("set"))
BUILTINS["frozenset"] = BuiltinVal("frozenset", _container("set"))


@builtin("dict")
def _dict(ev, args, kwargs, node):
    out = DictVal()
    if args:
        src = args[0]
        if isinstance(src, DictVal):
            out.items.update(src.items)
        else:
            for pair in _items(ev, src):
                if not (isinstance(pair, SeqVal) and len(pair.items) == 2):
                    raise StaticError("dict() of items that are not pairs")
                out.items[_static(ev, pair.items[0])] = pair.items[1]  # type: ignore[index]
    out.items.update(kwargs)
    return out


@builtin("any")
def _any(ev, args, kwargs, node):
    _args(args, 1, 1, "any")
    truths = [ev.truth(v) for v in _items(ev, args[0])]
    if any(t is True for t in truths):
        return PyVal(True)
    if any(t is None for t in truths):
        raise StaticError("any() of undecidable items")
    return PyVal(False)


@builtin("all")
def _all(ev, args, kwargs, node):
    _args(args, 1, 1, "all")
    truths = [ev.truth(v) for v in _items(ev, args[0])]
    if any(t is False for t in truths):
        return PyVal(False)
    if any(t is None for t in truths):
        raise StaticError("all() of undecidable items")
    return PyVal(True)


@builtin("round")
def _round(ev, args, kwargs, node):
    _args(args, 1, 2, "round")
    return ev.from_static(round(*[_static(ev, a) for a in args]))  # type: ignore[call-overload]


@builtin("divmod")
def _divmod(ev, args, kwargs, node):
    _args(args, 2, 2, "divmod")
    a, b = (ev.int_expr(x) for x in args)
    if a is not None and b is not None:
        return SeqVal((IntVal(binop("//", a, b)), IntVal(binop("%", a, b))))
    q, r = divmod(_static(ev, args[0]), _static(ev, args[1]))  # type: ignore[operator]
    return SeqVal((ev.from_static(q), ev.from_static(r)))


@builtin("pow")
def _pow(ev, args, kwargs, node):
    _args(args, 2, 3, "pow")
    xs = [_static(ev, a) for a in args]
    if isinstance(xs[1], int) and xs[1] > 4096:
        raise StaticError("pow() too large")
    return ev.from_static(pow(*xs))  # type: ignore[call-overload]


@builtin("isinstance")
def _isinstance(ev, args, kwargs, node):
    _args(args, 2, 2, "isinstance")
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
    _args(args, 1, 1, "callable")
    v = args[0]
    if isinstance(v, FuncVal | BuiltinVal | BoundMethod | ClassVal):
        return PyVal(True)
    if ev.static(v) is not UNKNOWN:
        return PyVal(False)
    raise StaticError("callable() of an unknown value")


@builtin("getattr")
def _getattr(ev, args, kwargs, node):
    _args(args, 2, 3, "getattr")
    name = _static(ev, args[1])
    if not isinstance(name, str):
        raise StaticError("getattr() with a non-string name")
    v = ev.attribute(args[0], name, node)
    if isinstance(v, Unknown) and len(args) == 3:
        return args[2]
    return v


@builtin("hasattr")
def _hasattr(ev, args, kwargs, node):
    _args(args, 2, 2, "hasattr")
    name = _static(ev, args[1])
    v = ev.attribute(args[0], name, node) if isinstance(name, str) else UNKNOWN
    if isinstance(v, Unknown):
        raise StaticError("hasattr() undecidable")
    return PyVal(True)


@builtin("setattr")
def _setattr(ev, args, kwargs, node):
    _args(args, 3, 3, "setattr")
    name = _static(ev, args[1])
    if isinstance(args[0], ObjVal) and isinstance(name, str):
        args[0].attrs[name] = args[2]
        return PyVal(None)
    raise StaticError("setattr() on something the reader does not model")


@builtin("map")
def _map(ev, args, kwargs, node):
    if len(args) < 2:
        raise StaticError("map() needs an iterable")
    lists = [_items(ev, a) for a in args[1:]]
    return _seq([ev.call_value(args[0], list(t), {}, node) for t in zip(*lists, strict=False)], "tuple")


@builtin("filter")
def _filter(ev, args, kwargs, node):
    _args(args, 2, 2, "filter")
    out = []
    for v in _items(ev, args[1]):
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
    return _seq(out, "tuple")


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
# name (and by the names of their bases, for classes of the file).
EXCEPTIONS = (
    "BaseException Exception ArithmeticError LookupError ValueError TypeError KeyError IndexError "
    "RuntimeError AssertionError NotImplementedError SystemExit ImportError ModuleNotFoundError "
    "AttributeError ZeroDivisionError OSError FileNotFoundError StopIteration KeyboardInterrupt "
    "OverflowError NameError UnicodeDecodeError RecursionError"
).split()


def _exception(name: str) -> Fn:
    def make(ev, args, kwargs, node):
        return ObjVal(None, {"__exception__": PyVal(name), "args": SeqVal(args)})

    return make


for _name in EXCEPTIONS:
    BUILTINS[_name] = BuiltinVal(_name, _exception(_name))


def exception_name(v: Val) -> str | None:
    """The class name of a raised value (an exception object, or a class raised bare)."""
    if isinstance(v, ObjVal):
        tag = v.attrs.get("__exception__")
        if isinstance(tag, PyVal):
            return str(tag.value)
        if v.cls is not None:
            return v.cls.name
    if isinstance(v, BuiltinVal) and v.name in EXCEPTIONS:
        return v.name
    if isinstance(v, ClassVal):
        return v.name
    return None


def exception_matches(raised: Val, handler: Val | None) -> bool:
    """Does an ``except handler:`` clause catch ``raised``? Unknown handlers catch all."""
    if handler is None:
        return True
    if isinstance(handler, SeqVal):
        return any(exception_matches(raised, h) for h in handler.items)
    name = exception_name(raised)
    hname = handler.name if isinstance(handler, BuiltinVal | ClassVal) else None
    if hname is None or name is None:
        return True
    if hname == name or hname == "BaseException":
        return True
    if hname == "Exception":
        return name not in ("SystemExit", "KeyboardInterrupt")
    if isinstance(raised, ObjVal) and raised.cls is not None:
        stack = list(raised.cls.bases)
        while stack:
            base = stack.pop()
            if base.name == hname:
                return True
            stack.extend(base.bases)
    return {"LookupError": ("KeyError", "IndexError"), "ArithmeticError": ("ZeroDivisionError", "OverflowError"),
            "ImportError": ("ModuleNotFoundError",), "OSError": ("FileNotFoundError",)}.get(hname, ()) .__contains__(name)  # fmt: skip


# ---------------------------------------------------------------- methods of builtin values


def method_of(base: Val, attr: str) -> BuiltinVal | None:
    """``base.attr`` for a method of a str, list, tuple, dict, environ or argparse object."""
    table = None
    if isinstance(base, PyVal) and isinstance(base.value, str):
        table = _STR_METHODS
    elif isinstance(base, SeqVal):
        table = _LIST_METHODS if base.kind == "list" else _SEQ_METHODS
    elif isinstance(base, DictVal):
        table = _DICT_METHODS
    elif isinstance(base, EnvironVal):
        table = _ENVIRON_METHODS
    elif isinstance(base, ObjVal) and "__argparse__" in base.attrs:
        table = _PARSER_METHODS
    if table is None or attr not in table:
        return None
    return BuiltinVal(attr, table[attr], base)


def _str_method(name: str) -> Fn:
    def call(ev, args, kwargs, node):
        s = _static(ev, args[0])
        rest = [_static(ev, a) for a in args[1:]]
        kw = {k: _static(ev, v) for k, v in kwargs.items()}
        if name == "join":
            parts = _static(ev, args[1]) if len(args) == 2 else ()
            return PyVal(s.join(parts))  # type: ignore[attr-defined]
        try:
            out = getattr(s, name)(*rest, **kw)
        except (TypeError, ValueError, IndexError, KeyError) as err:
            raise StaticError(f"str.{name}(): {err}") from None
        if isinstance(out, str) and len(out) > MAX_LEN:
            raise StaticError("a string too long to build")
        return ev.from_static(out)

    return call


_STR_METHODS: dict[str, Fn] = {
    n: _str_method(n)
    for n in (
        "split rsplit strip lstrip rstrip lower upper startswith endswith replace join format isdigit "
        "isalpha isalnum isupper islower partition rpartition count find rfind index zfill title "
        "capitalize splitlines removeprefix removesuffix casefold center ljust rjust"
    ).split()
}


def _append(ev, args, kwargs, node):
    seq = args[0]
    seq.items = (*seq.items, args[1])  # type: ignore[attr-defined]
    return PyVal(None)


def _extend(ev, args, kwargs, node):
    seq = args[0]
    seq.items = (*seq.items, *_items(ev, args[1]))  # type: ignore[attr-defined]
    return PyVal(None)


def _insert(ev, args, kwargs, node):
    seq, i = args[0], _static(ev, args[1])
    items = list(seq.items)  # type: ignore[attr-defined]
    items.insert(i, args[2])  # type: ignore[arg-type]
    seq.items = tuple(items)  # type: ignore[attr-defined]
    return PyVal(None)


def _pop(ev, args, kwargs, node):
    seq = args[0]
    items = list(seq.items)  # type: ignore[attr-defined]
    i = _static(ev, args[1]) if len(args) > 1 else -1
    try:
        out = items.pop(i)  # type: ignore[arg-type]
    except (IndexError, TypeError) as err:
        raise StaticError(f"pop(): {err}") from None
    seq.items = tuple(items)  # type: ignore[attr-defined]
    return out


def _remove(ev, args, kwargs, node):
    seq, needle = args[0], _static(ev, args[1])
    items = list(seq.items)  # type: ignore[attr-defined]
    for i, v in enumerate(items):
        if ev.static(v) == needle:
            del items[i]
            seq.items = tuple(items)  # type: ignore[attr-defined]
            return PyVal(None)
    raise StaticError("remove(): not found")


def _index(ev, args, kwargs, node):
    needle = _static(ev, args[1])
    for i, v in enumerate(args[0].items):  # type: ignore[attr-defined]
        if ev.static(v) == needle:
            return IntVal(Const(i))
    raise StaticError("index(): not found")


def _count(ev, args, kwargs, node):
    needle = _static(ev, args[1])
    return IntVal(Const(sum(1 for v in args[0].items if ev.static(v) == needle)))  # type: ignore[attr-defined]


def _copy(ev, args, kwargs, node):
    v = args[0]
    if isinstance(v, SeqVal):
        return SeqVal(v.items, v.kind)
    if isinstance(v, DictVal | EnvironVal):
        return DictVal(v.items)
    if isinstance(v, ObjVal):
        return ObjVal(v.cls, v.attrs)
    return v


def _sort(ev, args, kwargs, node):
    out = _sorted(ev, [args[0]], kwargs, node)
    args[0].items = out.items  # type: ignore[attr-defined]
    return PyVal(None)


def _reverse(ev, args, kwargs, node):
    args[0].items = tuple(reversed(args[0].items))  # type: ignore[attr-defined]
    return PyVal(None)


def _clear(ev, args, kwargs, node):
    if isinstance(args[0], SeqVal):
        args[0].items = ()
    else:
        args[0].items.clear()  # type: ignore[attr-defined]
    return PyVal(None)


_SEQ_METHODS: dict[str, Fn] = {"index": _index, "count": _count}
_LIST_METHODS: dict[str, Fn] = {
    **_SEQ_METHODS,
    "append": _append,
    "extend": _extend,
    "insert": _insert,
    "pop": _pop,
    "remove": _remove,
    "copy": _copy,
    "sort": _sort,
    "reverse": _reverse,
    "clear": _clear,
}


def _key(ev: Evaluator, v: Val) -> object:
    k = _static(ev, v)
    try:
        hash(k)
    except TypeError:
        raise StaticError("an unhashable key") from None
    return k


def _dget(ev, args, kwargs, node):
    d, k = args[0], _key(ev, args[1])
    default = args[2] if len(args) > 2 else PyVal(None)
    return d.items.get(k, default)  # type: ignore[attr-defined]


def _ditems(ev, args, kwargs, node):
    return _seq([SeqVal((ev.from_static(k), v)) for k, v in args[0].items.items()], "tuple")  # type: ignore[attr-defined]


def _dkeys(ev, args, kwargs, node):
    return _seq([ev.from_static(k) for k in args[0].items], "tuple")  # type: ignore[attr-defined]


def _dvalues(ev, args, kwargs, node):
    return _seq(list(args[0].items.values()), "tuple")  # type: ignore[attr-defined]


def _dupdate(ev, args, kwargs, node):
    d = args[0]
    if len(args) > 1:
        other = args[1]
        if isinstance(other, DictVal):
            d.items.update(other.items)  # type: ignore[attr-defined]
        else:
            d.items.update(_dict(ev, [other], {}, node).items)  # type: ignore[attr-defined]
    d.items.update(kwargs)  # type: ignore[attr-defined]
    return PyVal(None)


def _dsetdefault(ev, args, kwargs, node):
    d, k = args[0], _key(ev, args[1])
    default = args[2] if len(args) > 2 else PyVal(None)
    return d.items.setdefault(k, default)  # type: ignore[attr-defined]


def _dpop(ev, args, kwargs, node):
    d, k = args[0], _key(ev, args[1])
    if k in d.items:  # type: ignore[attr-defined]
        return d.items.pop(k)  # type: ignore[attr-defined]
    if len(args) > 2:
        return args[2]
    raise StaticError(f"pop(): missing key {k!r}")


_DICT_METHODS: dict[str, Fn] = {
    "get": _dget,
    "items": _ditems,
    "keys": _dkeys,
    "values": _dvalues,
    "update": _dupdate,
    "setdefault": _dsetdefault,
    "pop": _dpop,
    "copy": _copy,
    "clear": _clear,
}
_ENVIRON_METHODS: dict[str, Fn] = {
    "get": _dget,
    "setdefault": _dsetdefault,
    "copy": _copy,
    "pop": _dpop,
    "keys": _dkeys,
    "items": _ditems,
}


# ---------------------------------------------------------------- argparse


def _parser(ev, args, kwargs, node):
    return ObjVal(
        None, {"__argparse__": PyVal(True), "__options__": SeqVal([], "list"), "__defaults__": DictVal()}
    )


def _add_argument(ev, args, kwargs, node):
    parser = args[0]
    flags = [ev.static(a) for a in args[1:]]
    dest = kwargs.get("dest")
    name = ev.static(dest) if dest is not None else None
    if not isinstance(name, str):
        longs = [f for f in flags if isinstance(f, str) and f.startswith("--")]
        plain = [f for f in flags if isinstance(f, str)]
        first = (longs or plain or [""])[0]
        name = first.lstrip("-").replace("-", "_")
    if not name:
        raise StaticError("an argparse option without a name")
    action = ev.static(kwargs.get("action", PyVal(None)))
    if "default" in kwargs:
        default = kwargs["default"]
    elif action == "store_true":
        default = PyVal(False)
    elif action == "store_false":
        default = PyVal(True)
    else:
        default = PyVal(None)
    kind = kwargs.get("type")
    if isinstance(kind, BuiltinVal) and isinstance(default, PyVal) and isinstance(default.value, str):
        default = ev.call_value(kind, [default], {}, node)  # argparse converts string defaults
    options = parser.attrs["__options__"]  # type: ignore[attr-defined]
    options.items = (*options.items, SeqVal((PyVal(name), default)))
    return PyVal(None)


def _parse_args(ev, args, kwargs, node):
    parser = args[0]
    ns = ObjVal(None)
    for opt in parser.attrs["__options__"].items:  # type: ignore[attr-defined]
        ns.attrs[opt.items[0].value] = opt.items[1]
    for k, v in parser.attrs["__defaults__"].items.items():  # type: ignore[attr-defined]
        ns.attrs[k] = v
    return ns


def _parse_known_args(ev, args, kwargs, node):
    return SeqVal((_parse_args(ev, args, kwargs, node), SeqVal([], "list")))


def _set_defaults(ev, args, kwargs, node):
    args[0].attrs["__defaults__"].items.update(kwargs)  # type: ignore[attr-defined]
    return PyVal(None)


def _same_parser(ev, args, kwargs, node):
    return args[0]  # argument groups add their options to the parser itself


_PARSER_METHODS: dict[str, Fn] = {
    "add_argument": _add_argument,
    "parse_args": _parse_args,
    "parse_known_args": _parse_known_args,
    "set_defaults": _set_defaults,
    "add_argument_group": _same_parser,
    "add_mutually_exclusive_group": _same_parser,
}


# ---------------------------------------------------------------- dataclasses, functools, ...


def _dataclass(ev, args, kwargs, node):
    if not args:  # @dataclass(frozen=True): a decorator
        return BuiltinVal("dataclasses.dataclass", lambda ev2, a, k, n: _dataclass(ev2, a, kwargs, n))
    cls = args[0]
    if not isinstance(cls, ClassVal):
        raise StaticError("dataclass() of something that is not a class")
    cls.dataclass = True
    cls.frozen = bool(ev.static(kwargs.get("frozen", PyVal(False))))
    cls.fields = []
    for stmt in cls.node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            cls.fields.append((stmt.target.id, stmt.value))
            cls.attrs.pop(stmt.target.id, None)  # a default lives on instances, not the class
    return cls


def _field(ev, args, kwargs, node):
    return ObjVal(None, {"__field__": PyVal(True), **kwargs})


def field_marker(v: Val) -> ObjVal | None:
    return v if isinstance(v, ObjVal) and "__field__" in v.attrs else None


def _replace(ev, args, kwargs, node):
    _args(args, 1, 1, "dataclasses.replace")
    obj = args[0]
    if not isinstance(obj, ObjVal):
        raise StaticError("dataclasses.replace() of something that is not an instance")
    new = ObjVal(obj.cls, obj.attrs)
    new.attrs.update(kwargs)
    return new


def _asdict(ev, args, kwargs, node):
    obj = args[0]
    if not isinstance(obj, ObjVal):
        raise StaticError("asdict() of something that is not an instance")
    return DictVal(obj.attrs)


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
    _args(args, 2, 3, "reduce")
    items = _items(ev, args[1])
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
        lists = [_items(ev, a) for a in args]
        kw = {k: _static(ev, v) for k, v in kwargs.items()}
        out = []
        for t in itertools.islice(fn(*lists, **kw), MAX_LEN + 1):
            out.append(SeqVal(t) if isinstance(t, tuple) else t)
        return _seq(out, "tuple")

    return call


def _chain(ev, args, kwargs, node):
    return _seq([v for a in args for v in _items(ev, a)], "tuple")


def _repeat(ev, args, kwargs, node):
    _args(args, 2, 2, "repeat")
    n = _static(ev, args[1])
    if not isinstance(n, int):
        raise StaticError("repeat() without a count")
    return _seq([args[0]] * n, "tuple")


def _math(fn: Callable) -> Fn:
    def call(ev, args, kwargs, node):
        xs = [_static(ev, a) for a in args]
        try:
            return ev.from_static(fn(*xs))
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as err:
            raise StaticError(f"math: {err}") from None

    return call


def _ceil(ev, args, kwargs, node):
    _args(args, 1, 1, "ceil")
    call = node if isinstance(node, ast.Call) else None
    arg = call.args[0] if call is not None and call.args else None
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Div):
        a, b = ev.int_expr(ev.eval(arg.left)), ev.int_expr(ev.eval(arg.right))
        if a is not None and b is not None:
            return IntVal(binop("cdiv", a, b))  # ceil(a / b) of integers stays symbolic
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(i)
    return ev.from_static(math.ceil(_static(ev, args[0])))  # type: ignore[arg-type]


def _floor(ev, args, kwargs, node):
    _args(args, 1, 1, "floor")
    i = ev.int_expr(args[0])
    if i is not None:
        return IntVal(i)
    return ev.from_static(math.floor(_static(ev, args[0])))  # type: ignore[arg-type]


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
        xs = [_static(ev, a) for a in args]
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
        "getenv": lambda: _b("os.getenv", lambda ev, a, k, n: _dget(ev, [host().environ, *a], k, n)),
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
    "dataclasses": {
        "dataclass": lambda: _b("dataclasses.dataclass", _dataclass),
        "field": lambda: _b("dataclasses.field", _field),
        "replace": lambda: _b("dataclasses.replace", _replace),
        "asdict": lambda: _b("dataclasses.asdict", _asdict),
    },
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
    "copy": {"copy": lambda: _b("copy.copy", _copy), "deepcopy": lambda: _b("copy.deepcopy", _deepcopy)},
    "argparse": {"ArgumentParser": lambda: _b("argparse.ArgumentParser", _parser)},
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
