"""Comparisons and truth in expressions: ``==``/``<``/``in``/``is``, ``and``/``or``, ``a if c else b``.

Integer comparisons stay symbolic, so a guard on a parameter remains a condition on it (a
chain ``a < b < c`` is the ``and`` of its links); membership and identity are decided when the
values are known enough, and ``and``/``or`` follow Python's short circuit.  What this cannot
decide goes to the evaluator's ``compare_other`` (a kernel's tile comparisons).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering.pypto_reader import host_tensors, read_context
from lowering.pypto_reader.exprs_static import hashable
from lowering.pypto_reader.values import (
    UNKNOWN,
    ClassVal,
    DictVal,
    ExternVal,
    FuncVal,
    IntVal,
    ModuleVal,
    ObjVal,
    PyVal,
    RangeVal,
    SeqVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.symbolic import binop

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator

_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_PY_CMP: dict[type, Callable] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def boolean_operation(ev: Evaluator, node: ast.BoolOp) -> Val:
    """``a and b``/``a or b``: symbolic on integers, else the operand that decides."""
    vals = [ev.eval(v) for v in node.values]
    name = "and" if isinstance(node.op, ast.And) else "or"
    folded = ev.fold_ints(name, vals)
    if folded is not None:
        return folded
    for i, v in enumerate(vals):  # Python's short circuit: the deciding operand is the value
        t = ev.truth(v)
        if t is None:
            return UNKNOWN
        if i == len(vals) - 1 or (t if name == "or" else not t):
            return v
    return UNKNOWN


def comparison(ev: Evaluator, node: ast.Compare) -> Val:
    """A comparison chain, the ``and`` of its links."""
    left = ev.eval(node.left)
    out: Val | None = None
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = ev.eval(right_node)
        one = compare(ev, op, left, right, node)
        if out is None:
            out = one
        else:
            ia, ib = ev.int_expr(out), ev.int_expr(one)
            if ia is not None and ib is not None:
                out = IntVal(binop("and", ia, ib))
            else:
                ta, tb = ev.truth(out), ev.truth(one)
                out = UNKNOWN if None in (ta, tb) else PyVal(bool(ta and tb))
        left = right
    return out if out is not None else UNKNOWN


def compare(ev: Evaluator, op: ast.cmpop, a: Val, b: Val, node: ast.AST) -> Val:
    """One link ``a op b`` of a comparison, on evaluated operands."""
    ia, ib = ev.int_expr(a), ev.int_expr(b)
    if ia is not None and ib is not None and type(op) in _CMP:
        return IntVal(binop(_CMP[type(op)], ia, ib))
    if isinstance(op, ast.In | ast.NotIn):
        found = contains(ev, b, a)
        if found is not None:
            return PyVal(found if isinstance(op, ast.In) else not found)
    if isinstance(op, ast.Is | ast.IsNot):
        same = identical(a, b)
        if same is not None:
            return PyVal(same if isinstance(op, ast.Is) else not same)
    if isinstance(op, ast.Eq | ast.NotEq):
        same = host_tensors.same_dtype(a, b)
        if same is not None:
            return PyVal(same if isinstance(op, ast.Eq) else not same)
    sa, sb = ev.static(a), ev.static(b)
    if sa is not UNKNOWN and sb is not UNKNOWN:
        try:
            return PyVal(bool(_PY_CMP[type(op)](sa, sb)))
        except Exception:  # noqa: BLE001 - e.g. comparing str with int
            return UNKNOWN
    return ev.compare_other(op, a, b, node)


def contains(ev: Evaluator, container: Val, item: Val) -> bool | None:
    """``item in container`` when it can be decided."""
    if isinstance(container, DictVal):
        key = ev.static(item)
        return None if key is UNKNOWN or not hashable(key) else key in container.items
    if isinstance(container, SeqVal):
        needle = ev.static(item)
        if needle is UNKNOWN:
            return None
        unknown = False
        for x in container.items:
            s = ev.static(x)
            if s is UNKNOWN:
                unknown = True
            elif s == needle:
                return True
        return None if unknown else False
    if isinstance(container, RangeVal):
        n = ev.static(item)
        return n in range(container.start, container.stop, container.step) if isinstance(n, int) else None
    if isinstance(container, PyVal) and isinstance(container.value, str):
        s = ev.static(item)
        return s in container.value if isinstance(s, str) else None
    if isinstance(container, read_context.EnvironVal):
        return False  # the reader runs with an empty environment: defaults apply
    return None


def identical(a: Val, b: Val) -> bool | None:
    """``a is b`` (None and singletons by value, the file's objects by identity)."""
    for x, y in ((a, b), (b, a)):
        if isinstance(y, PyVal) and y.value is None:
            if isinstance(x, PyVal):
                return x.value is None
            if isinstance(x, Unknown | TensorVal | ExternVal):
                return None
            return False
    if isinstance(a, PyVal) and isinstance(b, PyVal):
        return a.value is b.value or (type(a.value) is type(b.value) and a.value == b.value)
    if isinstance(a, ObjVal | ClassVal | FuncVal | SeqVal | DictVal | ModuleVal):
        return a is b
    return None


def conditional_expression(ev: Evaluator, node: ast.IfExp) -> Val:
    """``a if c else b``; with ``c`` unknown, known only when both arms are the same integer."""
    cond = ev.eval(node.test)
    truth = ev.truth(cond)
    if truth is None:
        a, b = ev.eval(node.body), ev.eval(node.orelse)
        ia, ib, ic = ev.int_expr(a), ev.int_expr(b), ev.int_expr(cond)
        if ia is not None and ib is not None and ic is not None and ia == ib:
            return a
        return UNKNOWN
    return ev.eval(node.body if truth else node.orelse)
