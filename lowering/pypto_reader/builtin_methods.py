"""Methods of builtin values -- ``str.split``, ``list.append``, ``dict.get``,
``os.environ.get``, an argparse parser's -- looked up by :func:`method_of` for ``value.attr``.

A mutating method mutates the reader's value in place, as Python's does, so configuration
code that edits its lists and dicts (``sys.argv.pop(1)``, ``defaults.update(...)``) reads as
it would run.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader.argparse_parser import PARSER_METHODS, is_parser
from lowering.pypto_reader.builtin_calls import (
    MAX_LEN,
    Fn,
    StaticError,
    bounded_seq,
    iterable_items,
    static_arg,
)
from lowering.pypto_reader.builtin_functions import builtin_dict, builtin_sorted
from lowering.pypto_reader.read_context import EnvironVal
from lowering.pypto_reader.values import BuiltinVal, DictVal, IntVal, ObjVal, PyVal, SeqVal, Val
from lowering.symbolic import Const

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator


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
    elif is_parser(base):
        table = PARSER_METHODS
    if table is None or attr not in table:
        return None
    return BuiltinVal(attr, table[attr], base)


def _str_method(name: str) -> Fn:
    def call(ev, args, kwargs, node):
        s = static_arg(ev, args[0])
        rest = [static_arg(ev, a) for a in args[1:]]
        kw = {k: static_arg(ev, v) for k, v in kwargs.items()}
        if name == "join":
            parts = static_arg(ev, args[1]) if len(args) == 2 else ()
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
    seq.items = (*seq.items, *iterable_items(ev, args[1]))  # type: ignore[attr-defined]
    return PyVal(None)


def _insert(ev, args, kwargs, node):
    seq, i = args[0], static_arg(ev, args[1])
    items = list(seq.items)  # type: ignore[attr-defined]
    items.insert(i, args[2])  # type: ignore[arg-type]
    seq.items = tuple(items)  # type: ignore[attr-defined]
    return PyVal(None)


def _pop(ev, args, kwargs, node):
    seq = args[0]
    items = list(seq.items)  # type: ignore[attr-defined]
    i = static_arg(ev, args[1]) if len(args) > 1 else -1
    try:
        out = items.pop(i)  # type: ignore[arg-type]
    except (IndexError, TypeError) as err:
        raise StaticError(f"pop(): {err}") from None
    seq.items = tuple(items)  # type: ignore[attr-defined]
    return out


def _remove(ev, args, kwargs, node):
    seq, needle = args[0], static_arg(ev, args[1])
    items = list(seq.items)  # type: ignore[attr-defined]
    for i, v in enumerate(items):
        if ev.static(v) == needle:
            del items[i]
            seq.items = tuple(items)  # type: ignore[attr-defined]
            return PyVal(None)
    raise StaticError("remove(): not found")


def _index(ev, args, kwargs, node):
    needle = static_arg(ev, args[1])
    for i, v in enumerate(args[0].items):  # type: ignore[attr-defined]
        if ev.static(v) == needle:
            return IntVal(Const(i))
    raise StaticError("index(): not found")


def _count(ev, args, kwargs, node):
    needle = static_arg(ev, args[1])
    return IntVal(Const(sum(1 for v in args[0].items if ev.static(v) == needle)))  # type: ignore[attr-defined]


def shallow_copy(ev: Evaluator, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    v = args[0]
    if isinstance(v, SeqVal):
        return SeqVal(v.items, v.kind)
    if isinstance(v, DictVal | EnvironVal):
        return DictVal(v.items)
    if isinstance(v, ObjVal):
        return ObjVal(v.cls, v.attrs)
    return v


def _sort(ev, args, kwargs, node):
    out = builtin_sorted(ev, [args[0]], kwargs, node)
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
    "copy": shallow_copy,
    "sort": _sort,
    "reverse": _reverse,
    "clear": _clear,
}


def _key(ev: Evaluator, v: Val) -> object:
    k = static_arg(ev, v)
    try:
        hash(k)
    except TypeError:
        raise StaticError("an unhashable key") from None
    return k


def dict_get(ev: Evaluator, args: list[Val], kwargs: dict[str, Val], node: ast.AST) -> Val:
    d, k = args[0], _key(ev, args[1])
    default = args[2] if len(args) > 2 else PyVal(None)
    return d.items.get(k, default)  # type: ignore[attr-defined]


def _ditems(ev, args, kwargs, node):
    return bounded_seq([SeqVal((ev.from_static(k), v)) for k, v in args[0].items.items()], "tuple")  # type: ignore[attr-defined]


def _dkeys(ev, args, kwargs, node):
    return bounded_seq([ev.from_static(k) for k in args[0].items], "tuple")  # type: ignore[attr-defined]


def _dvalues(ev, args, kwargs, node):
    return bounded_seq(list(args[0].items.values()), "tuple")  # type: ignore[attr-defined]


def _dupdate(ev, args, kwargs, node):
    d = args[0]
    if len(args) > 1:
        other = args[1]
        if isinstance(other, DictVal):
            d.items.update(other.items)  # type: ignore[attr-defined]
        else:
            d.items.update(builtin_dict(ev, [other], {}, node).items)  # type: ignore[attr-defined]
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
    "get": dict_get,
    "items": _ditems,
    "keys": _dkeys,
    "values": _dvalues,
    "update": _dupdate,
    "setdefault": _dsetdefault,
    "pop": _dpop,
    "copy": shallow_copy,
    "clear": _clear,
}
_ENVIRON_METHODS: dict[str, Fn] = {
    "get": dict_get,
    "setdefault": _dsetdefault,
    "copy": shallow_copy,
    "pop": _dpop,
    "keys": _dkeys,
    "items": _ditems,
}
