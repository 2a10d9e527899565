"""``symbolic.evaluate`` compiled to Python functions, for the rules that evaluate the same
few expressions (cells, peers, conditions, loop bounds) at every rank x block x iteration.

``compiled(expr)(env)`` returns what ``evaluate(expr, env)`` returns and raises the same
``EvalError`` (same message) where it does: operands are evaluated left to right, ``and`` /
``or`` short-circuit, division and modulo by zero and unknown symbols raise. Anything the
translation does not know is left to ``evaluate``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lowering.symbolic import Bin, Const, EvalError, Expr, Sym, _apply, evaluate

Compiled = Callable[[Mapping[str, int]], int]

_CACHE: dict[int, tuple[Expr, Compiled]] = {}  # id(expr) -> (expr, function); expr kept alive
_MAX_CACHE = 200_000
_INFIX = {"+": "+", "-": "-", "*": "*"}
_COMPARE = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    return a % b


def _cdiv(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    return -((-a) // b)


_CALLS = {"//": "_floordiv", "%": "_mod", "cdiv": "_cdiv", "min": "min", "max": "max"}
_GLOBALS = {"_floordiv": _floordiv, "_mod": _mod, "_cdiv": _cdiv, "min": min, "max": max, "_apply": _apply}


class _Unsupported(Exception):
    pass


def _source(e: Expr) -> str:
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Sym):
        return f"_env[{e.name!r}]"
    if not isinstance(e, Bin):
        raise _Unsupported
    a, b = _source(e.a), _source(e.b)
    op = e.op
    if op in _INFIX:
        return f"({a} {_INFIX[op]} {b})"
    if op in _COMPARE:
        return f"int({a} {_COMPARE[op]} {b})"
    if op == "and":
        return f"int(bool({a}) and bool({b}))"
    if op == "or":
        return f"int(bool({a}) or bool({b}))"
    if op in _CALLS:
        return f"{_CALLS[op]}({a}, {b})"
    return f"_apply({op!r}, {a}, {b})"  # raises EvalError: unknown operator


_TEMPLATE = """
def _compiled(_env):
    try:
        return {code}
    except KeyError as err:
        raise EvalError(f"'{{err.args[0]}}' is not known here") from None
"""


def _build(expr: Expr) -> Compiled:
    try:
        namespace = dict(_GLOBALS, EvalError=EvalError)
        exec(_TEMPLATE.format(code=_source(expr)), namespace)  # noqa: S102 - generated from an Expr tree
        return namespace["_compiled"]
    except (_Unsupported, RecursionError, SyntaxError, MemoryError):
        return lambda env: evaluate(expr, env)


def compiled(expr: Expr) -> Compiled:
    """A function of the environment equal to ``evaluate(expr, env)``."""
    hit = _CACHE.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    if len(_CACHE) >= _MAX_CACHE:
        _CACHE.clear()
    fn = _build(expr)
    _CACHE[id(expr)] = (expr, fn)
    return fn
