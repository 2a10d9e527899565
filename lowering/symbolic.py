"""Symbolic integer expressions: grid sizes, regions, trip counts, signal thresholds.

The IR keeps every integer that a check may need to reason about *symbolically*, in terms
of compile-time parameters (``T``, ``EP``), the block index, loop indices, the rank and
runtime scalars (``epoch``). Checks evaluate them at one parameter point (``evaluate``) or
bound them over ranges of the free symbols (``bounds``), which is how a rule holds for
every admissible parameter value and not only the defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# Kinds of free symbols. "param" values are known at compile time; the others vary per
# block, per iteration, per rank or per run.
PARAM, BLOCK, LOOP, RANK, NRANKS, SCALAR, DYNAMIC = (
    "param",
    "block",
    "loop",
    "rank",
    "nranks",
    "scalar",
    "dynamic",
)

COMPARE = ("==", "!=", "<", "<=", ">", ">=")
LOGIC = ("and", "or")


class EvalError(Exception):
    """An expression could not be evaluated (unbound symbol, division by zero)."""


class Expr:
    """Base of the expression tree. Instances are immutable and hashable."""

    __slots__ = ()

    def __add__(self, other: Expr | int) -> Expr:
        return binop("+", self, lift(other))

    def __sub__(self, other: Expr | int) -> Expr:
        return binop("-", self, lift(other))

    def __mul__(self, other: Expr | int) -> Expr:
        return binop("*", self, lift(other))

    def __floordiv__(self, other: Expr | int) -> Expr:
        return binop("//", self, lift(other))

    def __mod__(self, other: Expr | int) -> Expr:
        return binop("%", self, lift(other))


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Sym(Expr):
    name: str
    kind: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Bin(Expr):
    op: str
    a: Expr
    b: Expr
    # Kept once computed: trees are keys of many caches, and hashing one walks it whole.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = hash((self.op, self.a, self.b)) or 1
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):
        return Bin, (self.op, self.a, self.b)  # a hash is per process: never carried over

    def __str__(self) -> str:
        if self.op in ("min", "max", "cdiv"):
            return f"{self.op}({self.a}, {self.b})"
        return f"({self.a} {self.op} {self.b})"


def lift(value: Expr | int | bool) -> Expr:
    if isinstance(value, Expr):
        return value
    return Const(int(value))


def _apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("//", "%", "cdiv"):
        if b == 0:
            raise EvalError("division by zero")
        if op == "//":
            return a // b
        if op == "%":
            return a % b
        return -((-a) // b)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "==":
        return int(a == b)
    if op == "!=":
        return int(a != b)
    if op == "<":
        return int(a < b)
    if op == "<=":
        return int(a <= b)
    if op == ">":
        return int(a > b)
    if op == ">=":
        return int(a >= b)
    if op == "and":
        return int(bool(a) and bool(b))
    if op == "or":
        return int(bool(a) or bool(b))
    raise EvalError(f"unknown operator {op!r}")


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """Build ``a op b``, folding constants and the identities that keep regions readable."""
    if isinstance(a, Const) and isinstance(b, Const):
        try:
            return Const(_apply(op, a.value, b.value))
        except EvalError:
            return Bin(op, a, b)
    if op == "+":
        if isinstance(a, Const) and a.value == 0:
            return b
        if isinstance(b, Const) and b.value == 0:
            return a
    elif op == "-":
        if isinstance(b, Const) and b.value == 0:
            return a
        if a == b:
            return Const(0)
    elif op == "*":
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Const):
                if x.value == 0:
                    return Const(0)
                if x.value == 1:
                    return y
    elif op in ("//", "cdiv") and isinstance(b, Const) and b.value == 1:
        return a
    return Bin(op, a, b)


def evaluate(expr: Expr, env: Mapping[str, int]) -> int:
    """Evaluate with every free symbol bound in ``env``."""
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Sym):
        try:
            return env[expr.name]
        except KeyError:
            raise EvalError(f"'{expr.name}' is not known here") from None
    if isinstance(expr, Bin):
        if expr.op == "and":
            return int(bool(evaluate(expr.a, env)) and bool(evaluate(expr.b, env)))
        if expr.op == "or":
            return int(bool(evaluate(expr.a, env)) or bool(evaluate(expr.b, env)))
        return _apply(expr.op, evaluate(expr.a, env), evaluate(expr.b, env))
    raise EvalError(f"cannot evaluate {expr!r}")


def substitute(expr: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace free symbols by expressions (and refold constants)."""
    if isinstance(expr, Sym):
        return mapping.get(expr.name, expr)
    if isinstance(expr, Bin):
        a, b = substitute(expr.a, mapping), substitute(expr.b, mapping)
        if a is expr.a and b is expr.b:
            return expr
        return binop(expr.op, a, b)
    return expr


def free_symbols(expr: Expr) -> set[Sym]:
    out: set[Sym] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Sym):
            out.add(e)
        elif isinstance(e, Bin):
            stack.extend((e.a, e.b))
    return out


Interval = tuple[int, int]


def bounds(expr: Expr, env: Mapping[str, int | Interval]) -> Interval:
    """A sound inclusive interval of ``expr`` when each symbol ranges over ``env``.

    Exact for the monotone forms that regions are made of (sums, products with constants,
    floor division by positive constants); conservative for ``%`` and products of ranges.
    Raises EvalError for unbound symbols or a divisor whose range contains zero.
    """
    if isinstance(expr, Const):
        return expr.value, expr.value
    if isinstance(expr, Sym):
        try:
            v = env[expr.name]
        except KeyError:
            raise EvalError(f"'{expr.name}' is not known here") from None
        return (v, v) if isinstance(v, int) else v
    assert isinstance(expr, Bin)
    alo, ahi = bounds(expr.a, env)
    blo, bhi = bounds(expr.b, env)
    op = expr.op
    if op == "+":  # the usual case, without a call
        return alo + blo, ahi + bhi
    return combine_bounds(op, alo, ahi, blo, bhi)


def combine_bounds(op: str, alo: int, ahi: int, blo: int, bhi: int) -> Interval:
    """``bounds`` of ``a op b`` from the bounds of ``a`` and ``b``."""
    if op == "+":
        return alo + blo, ahi + bhi
    if op == "-":
        return alo - bhi, ahi - blo
    if op == "*":
        c = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
        return min(c), max(c)
    if op in ("//", "cdiv"):
        if blo <= 0 <= bhi:
            raise EvalError("divisor may be zero")
        c = [_apply(op, x, y) for x in (alo, ahi) for y in (blo, bhi)]
        return min(c), max(c)
    if op == "%":
        if blo <= 0 <= bhi:
            raise EvalError("divisor may be zero")
        if alo == ahi and blo == bhi:  # a point: its value, whatever the signs
            v = alo % blo
            return v, v
        if blo == bhi and blo > 0:
            if alo >= 0 and ahi - alo < blo and alo % blo <= ahi % blo:
                return alo % blo, ahi % blo
            if alo >= 0:
                return 0, min(blo - 1, ahi)
            return 0, blo - 1
        m = max(abs(blo), abs(bhi)) - 1
        return (0, m) if alo >= 0 and blo > 0 else (-m, m)
    if op == "min":
        return min(alo, blo), min(ahi, bhi)
    if op == "max":
        return max(alo, blo), max(ahi, bhi)
    if op in COMPARE or op in LOGIC:
        if alo == ahi and blo == bhi:
            v = _apply(op, alo, blo)
            return v, v
        return 0, 1
    raise EvalError(f"unknown operator {op!r}")


def render(expr: Expr, name_of: Callable[[Sym], str] = str, *, python: bool = False) -> str:
    """Render as source text; ``python=True`` gives valid Python for code generators."""
    if isinstance(expr, Const):
        return str(expr.value)
    if isinstance(expr, Sym):
        return name_of(expr)
    assert isinstance(expr, Bin)
    a = render(expr.a, name_of, python=python)
    b = render(expr.b, name_of, python=python)
    if expr.op in ("min", "max"):
        return f"{expr.op}({a}, {b})"
    if expr.op == "cdiv":
        return f"(-((-{a}) // {b}))" if python else f"cdiv({a}, {b})"
    return f"({a} {expr.op} {b})"


Monomial = tuple[Expr, ...]  # sorted atoms; () is the constant term
_MAX_TERMS = 64


def poly(expr: Expr) -> dict[Monomial, int] | None:
    """``expr`` as a polynomial over atoms (symbols and non-polynomial subexpressions).

    ``(block + 1) * T - block * T`` becomes ``{(T,): 1}``. Returns None when the expansion
    would grow past a few dozen terms.
    """
    if isinstance(expr, Const):
        return {(): expr.value} if expr.value else {}
    if isinstance(expr, Bin) and expr.op in ("+", "-"):
        a, b = poly(expr.a), poly(expr.b)
        if a is None or b is None:
            return None
        sign = 1 if expr.op == "+" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return {k: v for k, v in out.items() if v}
    if isinstance(expr, Bin) and expr.op == "*":
        a, b = poly(expr.a), poly(expr.b)
        if a is None or b is None or len(a) * len(b) > _MAX_TERMS:
            return None
        out: dict[Monomial, int] = {}
        for ka, va in a.items():
            for kb, vb in b.items():
                key = tuple(sorted(ka + kb, key=str))
                out[key] = out.get(key, 0) + va * vb
        return {k: v for k, v in out.items() if v}
    if isinstance(expr, Bin) and expr.op == "//" and isinstance(expr.b, Const) and expr.b.value > 0:
        num = poly(expr.a)  # an exact multiple divides term by term: (2 * K) // 2 -> K
        if num is not None and all(v % expr.b.value == 0 for v in num.values()):
            return {k: v // expr.b.value for k, v in num.items()}
    return {(expr,): 1}


def from_poly(form: dict[Monomial, int]) -> Expr:
    terms = sorted(form.items(), key=lambda kv: (len(kv[0]), [str(a) for a in kv[0]]))
    out: Expr | None = None
    for mono, coeff in terms:
        term: Expr = Const(coeff) if not mono else None  # type: ignore[assignment]
        if mono:
            for atom in mono:
                term = atom if term is None else Bin("*", term, atom)
            if coeff != 1:
                term = Bin("*", Const(coeff), term)
        out = term if out is None else binop("+", out, term)
    return out if out is not None else Const(0)


def simplify(expr: Expr) -> Expr:
    """Normalise polynomial sums and products (``(t0 + 16) - t0`` -> ``16``)."""
    if not isinstance(expr, Bin):
        return expr  # constants and symbols are already normal (fast path for task arrays)
    form = poly(expr)
    return expr if form is None else from_poly(form)


def difference(stop: Expr, start: Expr) -> Expr:
    """``stop - start``, simplified; ``(a + n) - a`` (how regions are written) takes no algebra."""
    if isinstance(stop, Const) and isinstance(start, Const):
        return Const(stop.value - start.value)
    if isinstance(stop, Bin) and stop.op == "+":
        if stop.a == start:
            return stop.b
        if stop.b == start:
            return stop.a
    return simplify(binop("-", stop, start))
