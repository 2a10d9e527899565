"""Arithmetic on abstract values: the unary and binary operators of an expression.

Integers stay symbolic: ``+ - * // %`` build ``lowering.symbolic`` expressions so that grids and
regions remain functions of the parameters, and ``-(-a // b)`` is ``cdiv``.  Sequences
concatenate and repeat, dicts merge, torch tensors combine through
:mod:`~lowering.pypto_reader.host_tensors`, and other fully known operands fold as in Python;
what is left goes to the evaluator's ``negate``/``binary_other`` (a kernel's tile arithmetic).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from lowering.pypto_reader import host_tensors
from lowering.pypto_reader.exprs_static import MAX_STATIC_LEN
from lowering.pypto_reader.values import UNKNOWN, DictVal, HostTensorVal, IntVal, PyVal, SeqVal, Val
from lowering.symbolic import Const, binop

if TYPE_CHECKING:
    from lowering.pypto_reader.exprs import Evaluator

_ARITH = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Div: "//",  # integer code in PyPTO files divides exactly; the DSL reads `/` the same way
    ast.Mod: "%",
}
_PY_BIN: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}


def binary_operation(ev: Evaluator, node: ast.BinOp) -> Val:
    a, b = ev.eval(node.left), ev.eval(node.right)
    return ev.binary(node.op, a, b, node)


def unary_operation(ev: Evaluator, node: ast.UnaryOp) -> Val:
    """``-x``, ``+x``, ``not x`` and ``~x``; ``-(-a // b)`` is ``cdiv``."""
    v = ev.eval(node.operand)
    i = ev.int_expr(v)
    if isinstance(node.op, ast.USub):
        # -(-a // b) is the ceiling division idiom
        if (
            isinstance(node.operand, ast.BinOp)
            and isinstance(node.operand.op, ast.FloorDiv)
            and isinstance(node.operand.left, ast.UnaryOp)
            and isinstance(node.operand.left.op, ast.USub)
        ):
            a = ev.int_expr(ev.eval(node.operand.left.operand))
            b = ev.int_expr(ev.eval(node.operand.right))
            if a is not None and b is not None:
                return IntVal(binop("cdiv", a, b))
        if i is not None:
            return IntVal(binop("-", Const(0), i))
        if isinstance(v, PyVal) and isinstance(v.value, int | float):
            return PyVal(-v.value)
        return ev.negate(v, node)
    if isinstance(node.op, ast.UAdd):
        return v
    if isinstance(node.op, ast.Not):
        if i is not None:
            return IntVal(binop("==", i, Const(0)))
        t = ev.truth(v)
        return UNKNOWN if t is None else PyVal(not t)
    s = ev.static(v)
    if isinstance(node.op, ast.Invert) and isinstance(s, int):
        return IntVal(Const(~s))
    return UNKNOWN


def binary(ev: Evaluator, op: ast.operator, a: Val, b: Val, node: ast.AST) -> Val:
    """``a op b`` on evaluated operands: symbolic on integers, folded on known values."""
    ia, ib = ev.int_expr(a), ev.int_expr(b)
    if ia is not None and ib is not None and type(op) in _ARITH:
        if isinstance(op, ast.Div):
            va, vb = ev.value_of(ia), ev.value_of(ib)
            if va is not None and vb and va % vb:
                return PyVal(va / vb)  # a true quotient in host code (``1.0 / HC_DIM``)
        return IntVal(binop(_ARITH[type(op)], ia, ib))
    if ia is not None and ib is not None and isinstance(ia, Const) and isinstance(ib, Const):
        fn = _PY_BIN.get(type(op))
        if fn is not None:
            try:
                return ev.from_static(fn(ia.value, ib.value))
            except (ArithmeticError, ValueError, OverflowError):
                return UNKNOWN
    if isinstance(op, ast.Add) and isinstance(a, SeqVal) and isinstance(b, SeqVal) and a.kind == b.kind:
        return SeqVal(a.items + b.items, a.kind)
    if isinstance(op, ast.Mult) and isinstance(a, SeqVal | IntVal) and isinstance(b, SeqVal | IntVal):
        seq, count = (a, b) if isinstance(a, SeqVal) else (b, a)
        n = ev.static(count)
        if isinstance(seq, SeqVal) and isinstance(n, int) and len(seq.items) * max(n, 0) <= MAX_STATIC_LEN:
            return SeqVal(seq.items * max(n, 0), seq.kind)
    if isinstance(op, ast.BitOr) and isinstance(a, DictVal) and isinstance(b, DictVal):
        return DictVal({**a.items, **b.items})
    if isinstance(a, HostTensorVal) or isinstance(b, HostTensorVal):
        return host_tensors.binary(ev, a, b)
    sa, sb = ev.static(a), ev.static(b)
    if sa is not UNKNOWN and sb is not UNKNOWN:
        fn = _PY_BIN.get(type(op))
        try:
            if fn is not None and _small(sa) and _small(sb):
                return ev.from_static(fn(sa, sb))
        except Exception:  # noqa: BLE001 - a static fold that Python itself rejects
            return UNKNOWN
    return ev.binary_other(op, a, b, node)


def _small(value: object) -> bool:
    """Guards static folding against blow-ups (``"x" * 10**9``, ``2 ** 10**9``)."""
    if isinstance(value, int):
        return value.bit_length() <= 4096
    if isinstance(value, str | bytes | tuple | list):
        return len(value) <= MAX_STATIC_LEN
    return True
