"""How the reader's builtins are called and how they decline: the contract shared by every
builtin function, method of a builtin value and standard-library function it implements.

Each is an :data:`Fn` of the evaluator, the evaluated arguments and the call node. When it
cannot decide its result it raises :class:`StaticError` and the call is Unknown; the helpers
here raise it for the common cases -- an argument that is not static, a wrong arity, an
iterable the reader cannot enumerate, a sequence past :data:`MAX_LEN` -- which keeps every
builtin bounded.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering.pypto_reader.values import UNKNOWN, SeqVal, Val

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator

MAX_LEN = 1 << 16


class StaticError(Exception):
    """A builtin cannot decide its result here; the call is Unknown (the message says why)."""


Fn = Callable[["Evaluator", list[Val], dict[str, Val], ast.AST], Val]


def static_arg(ev: Evaluator, v: Val) -> object:
    """The static value of an argument."""
    s = ev.static(v)
    if s is UNKNOWN:
        raise StaticError("an argument the reader cannot evaluate")
    return s


def check_arity(args: list[Val], lo: int, hi: int, name: str) -> None:
    """Refuse a call of ``name`` with fewer than ``lo`` or more than ``hi`` arguments."""
    if not lo <= len(args) <= hi:
        raise StaticError(f"{name}() with {len(args)} arguments")


def iterable_items(ev: Evaluator, v: Val) -> list[Val]:
    """The items of an iterable argument."""
    items = ev.iterate(v)
    if items is None:
        raise StaticError("an iterable the reader cannot enumerate")
    return items


def bounded_seq(items: list[Val], kind: str = "list") -> SeqVal:
    """A sequence built by a builtin, refused past :data:`MAX_LEN` items."""
    if len(items) > MAX_LEN:
        raise StaticError("a sequence too long to build")
    return SeqVal(items, kind)
