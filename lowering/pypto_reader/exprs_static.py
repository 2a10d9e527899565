"""What an abstract value is as plain Python: its static value, its truth, the items it iterates.

Every kind of expression folds through these: an operator, a comparison, a subscript or a
builtin computes on plain Python values when its operands are fully known (``static``), turns
the result back into an abstract value (``python_value``), and an ``if``, a ``while`` or a
comprehension filter needs a value's truth.  ``MAX_STATIC_LEN`` and ``hashable`` keep such
folding within what the reader can afford and what Python accepts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lowering.pypto_reader.values import (
    UNKNOWN,
    BoundMethod,
    BuiltinVal,
    ClassVal,
    DictVal,
    DtypeVal,
    FuncVal,
    IntVal,
    ModuleVal,
    ObjVal,
    PlRef,
    PyVal,
    RangeVal,
    SeqVal,
    Unknown,
    Val,
)
from lowering.symbolic import Const, Expr

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator

MAX_STATIC_LEN = 1 << 16  # longest sequence built by folding (``[0] * n``, ``range`` to a list)


def static(ev: Evaluator, v: Val) -> object:
    """A plain Python value for ``v`` when it is fully known, else the UNKNOWN sentinel."""
    if isinstance(v, PyVal):
        return v.value
    if isinstance(v, IntVal):
        value = ev.value_of(v.expr)
        return UNKNOWN if value is None else value
    if isinstance(v, SeqVal):
        items = [ev.static(i) for i in v.items]
        if any(i is UNKNOWN for i in items):
            return UNKNOWN
        if v.kind == "list":
            return items
        if v.kind == "set":
            try:
                return frozenset(items)
            except TypeError:
                return UNKNOWN
        return tuple(items)
    if isinstance(v, DictVal):
        out = {}
        for k, item in v.items.items():
            s = ev.static(item)
            if s is UNKNOWN:
                return UNKNOWN
            out[k] = s
        return out
    if isinstance(v, RangeVal):
        return range(v.start, v.stop, v.step)
    return UNKNOWN


def truth(ev: Evaluator, v: Val) -> bool | None:
    """Python truthiness, None when it cannot be known here."""
    if isinstance(v, IntVal | PyVal):
        s = ev.static(v)
        return None if s is UNKNOWN else bool(s)
    if isinstance(v, SeqVal):
        return bool(v.items)
    if isinstance(v, DictVal):
        return bool(v.items)
    if isinstance(v, RangeVal):
        return len(v) > 0
    if isinstance(v, FuncVal | ClassVal | ModuleVal | BoundMethod | BuiltinVal | PlRef | DtypeVal):
        return True
    if isinstance(v, ObjVal):
        return True
    return None


def iterate(ev: Evaluator, v: Val) -> list[Val] | None:
    """The items a ``for`` over ``v`` visits, when they are known (at most MAX_STATIC_LEN)."""
    if isinstance(v, SeqVal):
        return list(v.items)
    if isinstance(v, RangeVal):
        if len(v) > MAX_STATIC_LEN:
            return None
        return [IntVal(Const(i)) for i in range(v.start, v.stop, v.step)]
    if isinstance(v, DictVal):
        return [ev.from_static(k) for k in v.items]
    if isinstance(v, PyVal) and isinstance(v.value, str):
        return [PyVal(c) for c in v.value]
    return None


def int_items(ev: Evaluator, v: Val) -> tuple[Expr, ...] | None:
    """The items of a sequence value as integers, when all of them are."""
    if isinstance(v, RangeVal):
        v = ev.from_static(list(range(v.start, v.stop, v.step)))
    if not isinstance(v, SeqVal):
        return None
    out = [ev.int_expr(i) for i in v.items]
    return tuple(out) if all(o is not None for o in out) else None  # type: ignore[arg-type]


def python_value(value: object) -> Val:
    """The abstract value of a plain Python value (the inverse of ``static``)."""
    if isinstance(value, bool) or value is None:
        return PyVal(value)
    if isinstance(value, int):
        return IntVal(Const(value))
    if isinstance(value, list):
        return SeqVal([python_value(v) for v in value], "list")
    if isinstance(value, tuple):
        return SeqVal([python_value(v) for v in value], "tuple")
    if isinstance(value, set | frozenset):
        return SeqVal([python_value(v) for v in value], "set")
    if isinstance(value, dict):
        return DictVal({k: python_value(v) for k, v in value.items()})
    if isinstance(value, range):
        return RangeVal(value.start, value.stop, value.step)
    if isinstance(value, str | float | bytes | complex | slice):
        return PyVal(value)
    return Unknown(f"a {type(value).__name__}")


def hashable(value: object) -> bool:
    """Whether ``value`` can be a dict key or a set member (static folding needs it)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True
