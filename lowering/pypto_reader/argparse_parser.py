"""``argparse`` as the script the reader pretends to run sees it: given no arguments, a
parser's ``parse_args()`` is the namespace of its defaults.

Model files build a parser at import time and read their configuration from it. A parser
here records each ``add_argument``'s destination and default -- a string default converted
by ``type=``, as argparse converts it -- and ``set_defaults``; nothing is ever parsed.
"""

from __future__ import annotations

from collections.abc import Callable

from lowering.pypto_reader.builtin_calls import Fn, StaticError
from lowering.pypto_reader.values import BuiltinVal, DictVal, ObjVal, PyVal, SeqVal, Val


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


PARSER_METHODS: dict[str, Fn] = {
    "add_argument": _add_argument,
    "parse_args": _parse_args,
    "parse_known_args": _parse_known_args,
    "set_defaults": _set_defaults,
    "add_argument_group": _same_parser,
    "add_mutually_exclusive_group": _same_parser,
}


def is_parser(v: Val) -> bool:
    """Is ``v`` a parser made by ``argparse.ArgumentParser``?"""
    return isinstance(v, ObjVal) and "__argparse__" in v.attrs


#: The attributes of ``argparse`` the reader implements.
ARGPARSE_ATTRIBUTES: dict[str, Callable[[], Val]] = {
    "ArgumentParser": lambda: BuiltinVal("argparse.ArgumentParser", _parser),
}
