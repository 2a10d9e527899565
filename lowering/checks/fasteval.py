"""``symbolic.evaluate`` compiled to Python functions, for the rules that evaluate the same
few expressions (cells, peers, conditions, loop bounds) at every rank x block x iteration.

``compiled(expr)(env)`` returns what ``evaluate(expr, env)`` returns and raises the same
``EvalError`` (same message) where it does: operands are evaluated left to right, ``and`` /
``or`` short-circuit, division and modulo by zero and unknown symbols raise. Anything the
translation does not know is left to ``evaluate``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lowering.symbolic import (
    Bin,
    Const,
    EvalError,
    Expr,
    Interval,
    Sym,
    _apply,
    bounds,
    combine_bounds,
    evaluate,
)

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


def _cached(cache: dict[int, tuple[Expr, Callable]], expr: Expr, build: Callable[[Expr], Callable]):
    """``build(expr)``, kept in ``cache`` by identity (the entry holds ``expr`` so its id stays its own)."""
    hit = cache.get(id(expr))
    if hit is not None and hit[0] is expr:
        return hit[1]
    if len(cache) >= _MAX_CACHE:
        cache.clear()
    fn = build(expr)
    cache[id(expr)] = (expr, fn)
    return fn


def compiled(expr: Expr) -> Compiled:
    """A function of the environment equal to ``evaluate(expr, env)``."""
    return _cached(_CACHE, expr, _build)


# ---------------------------------------------------------------- bounds


_BOUNDS_CACHE: dict[int, tuple[Expr, Callable[[Mapping[str, int | Interval]], Interval]]] = {}


def _bounds_source(e: Expr, lines: list[str], count: list[int]) -> tuple[str, str]:
    """Statements computing ``symbolic.bounds(e, _env)`` into two locals, evaluating and raising
    in the order ``bounds`` does; what is not a sum or a difference calls ``combine_bounds``."""
    if isinstance(e, Const):
        return repr(e.value), repr(e.value)
    count[0] += 1
    lo, hi = f"_l{count[0]}", f"_h{count[0]}"
    if isinstance(e, Sym):
        lines += [
            "    try:",
            f"        _v = _env[{e.name!r}]",
            "    except KeyError:",
            f"        raise EvalError({_unknown(e.name)!r}) from None",
            f"    {lo}, {hi} = (_v, _v) if isinstance(_v, int) else _v",
        ]
        return lo, hi
    if not isinstance(e, Bin):
        raise _Unsupported
    alo, ahi = _bounds_source(e.a, lines, count)
    blo, bhi = _bounds_source(e.b, lines, count)
    if e.op == "+":
        lines.append(f"    {lo}, {hi} = {alo} + {blo}, {ahi} + {bhi}")
    elif e.op == "-":
        lines.append(f"    {lo}, {hi} = {alo} - {bhi}, {ahi} - {blo}")
    else:
        point = _point_source(e.op, alo, blo)
        if point is None:
            lines.append(f"    {lo}, {hi} = _combine({e.op!r}, {alo}, {ahi}, {blo}, {bhi})")
        else:
            # both operands one value (an exact instance): combine_bounds' result, without the call
            lines += [
                f"    if {alo} == {ahi} and {blo} == {bhi}:",
                *point,
                f"        {lo} = {hi} = _p",
                "    else:",
                f"        {lo}, {hi} = _combine({e.op!r}, {alo}, {ahi}, {blo}, {bhi})",
            ]
    return lo, hi


def _point_source(op: str, a: str, b: str) -> list[str] | None:
    """Statements setting ``_p`` to ``combine_bounds(op, a, a, b, b)[0]`` (raising as it does),
    or None for an operator left to ``combine_bounds``."""
    if op in ("//", "cdiv", "%"):
        value = {"//": f"{a} // {b}", "%": f"{a} % {b}", "cdiv": f"-((-{a}) // {b})"}[op]
        return [
            f"        if {b} == 0:",
            '            raise EvalError("divisor may be zero")',
            f"        _p = {value}",
        ]
    if op == "*":
        return [f"        _p = {a} * {b}"]
    if op in ("min", "max"):
        return [f"        _p = {op}({a}, {b})"]
    if op in _COMPARE:
        return [f"        _p = int({a} {_COMPARE[op]} {b})"]
    if op in ("and", "or"):
        return [f"        _p = int(bool({a}) {op} bool({b}))"]
    return None


def _unknown(name: str) -> str:
    return f"'{name}' is not known here"  # the message of symbolic.bounds


def _build_bounds(expr: Expr) -> Callable[[Mapping[str, int | Interval]], Interval]:
    try:
        lines: list[str] = []
        lo, hi = _bounds_source(expr, lines, [0])
        code = "def _compiled(_env):\n" + "\n".join(lines) + f"\n    return {lo}, {hi}\n"
        namespace = {"EvalError": EvalError, "_combine": combine_bounds}
        exec(code, namespace)  # noqa: S102 - generated from an Expr tree
        return namespace["_compiled"]
    except (_Unsupported, RecursionError, SyntaxError, MemoryError):
        return lambda env: bounds(expr, env)


def compiled_bounds(expr: Expr) -> Callable[[Mapping[str, int | Interval]], Interval]:
    """A function of the environment equal to ``bounds(expr, env)`` (same value, same EvalError):
    for the few expressions of an access that are bounded at every block and iteration."""
    return _cached(_BOUNDS_CACHE, expr, _build_bounds)
