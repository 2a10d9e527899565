"""Subscripts and slices in expressions: ``x[k]`` and ``x[a:b:c]`` on known values.

``x[k]`` on a sequence, dict, range or string indexes it as Python would, when the key is
known; a subscript of anything else (a tensor, a tile, a task-id array) is the evaluator's
``subscript``, which the kernel and orchestration readers give meaning to.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader.exprs_static import hashable
from lowering.pypto_reader.values import UNKNOWN, DictVal, IntVal, PyVal, RangeVal, SeqVal, Unknown, Val
from lowering.symbolic import Const

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator


def slice_value(ev: Evaluator, node: ast.Slice) -> Val:
    """``a:b:c`` as a Python slice, when its bounds are known."""
    parts = [ev.static(ev.eval(p)) if p is not None else None for p in (node.lower, node.upper, node.step)]
    if any(p is UNKNOWN for p in parts):
        return UNKNOWN
    return PyVal(slice(*parts))


def subscription(ev: Evaluator, node: ast.Subscript) -> Val:
    """``x[k]``: indexed here when ``x`` is a known container, else the evaluator's ``subscript``."""
    base = ev.eval(node.value)
    if isinstance(base, SeqVal | DictVal | RangeVal) or (
        isinstance(base, PyVal) and isinstance(base.value, str | bytes)
    ):
        return ev.index(base, ev.eval(node.slice))
    return ev.subscript(base, node)


def index(ev: Evaluator, base: Val, key: Val) -> Val:
    """``base[key]`` on a sequence, dict, range or string."""
    k = ev.static(key)
    if k is UNKNOWN:
        return UNKNOWN
    if isinstance(base, DictVal):
        return base.items.get(k, Unknown(f"key {k!r}")) if hashable(k) else UNKNOWN
    if isinstance(base, SeqVal):
        if isinstance(k, slice):
            return SeqVal(base.items[k], base.kind if base.kind != "set" else "tuple")
        if isinstance(k, int) and -len(base.items) <= k < len(base.items):
            return base.items[k]
        return UNKNOWN
    if isinstance(base, RangeVal):
        r = range(base.start, base.stop, base.step)
        try:
            out = r[k]  # type: ignore[index]
        except (IndexError, TypeError):
            return UNKNOWN
        return RangeVal(out.start, out.stop, out.step) if isinstance(out, range) else IntVal(Const(out))
    if isinstance(base, PyVal):
        try:
            return ev.from_static(base.value[k])  # type: ignore[index]
        except Exception:  # noqa: BLE001 - static indexing that fails in Python too
            return UNKNOWN
    return UNKNOWN
