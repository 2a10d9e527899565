"""What a layer is parameterised by: the values it is elaborated at and where they may range.

Compile-time parameters and the constants derived from them, the layer ``assert`` statements
that narrow them, the runtime scalars a request passes and the host guards that refuse
requests, and the :class:`Domain` of admissible values each may take. This is the layer's
parameter space, kept apart from the task-graph types in :mod:`lowering.ir`: a
:class:`~lowering.ir.Graph` holds these declarations so that rules can re-evaluate its
symbolic forms at other admissible points (``Graph.admissible_points``,
``Scalar.domain_at``), and the domain arithmetic does not need any task type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lowering.source import Span
from lowering.symbolic import EvalError, Expr, evaluate


@dataclass(frozen=True)
class Domain:
    """Admissible values of a parameter: an arithmetic range or an explicit set."""

    lo: int = 0
    hi: int = 0
    step: int = 1
    values: tuple[int, ...] | None = None

    def __iter__(self) -> Iterator[int]:
        if self.values is not None:
            return iter(self.values)
        return iter(range(self.lo, self.hi + 1, self.step))

    def __len__(self) -> int:
        return self.size

    @property
    def size(self) -> int:
        """How many values (also past ``sys.maxsize``, where ``len()`` cannot answer)."""
        if self.values is not None:
            return len(self.values)
        return max(0, (self.hi - self.lo) // self.step + 1)

    def __contains__(self, v: object) -> bool:
        if self.values is not None:
            return v in self.values
        return isinstance(v, int) and self.lo <= v <= self.hi and (v - self.lo) % self.step == 0

    @property
    def low(self) -> int:
        return min(self.values) if self.values is not None else self.lo

    @property
    def high(self) -> int:
        """The largest admissible value (not ``hi`` when the step does not land on it)."""
        if self.values is not None:
            return max(self.values)
        return self.lo + (self.size - 1) * self.step

    def spread(self, n: int) -> list[int]:
        """The values, or when there are more than ``n``, ``n`` of them from the smallest to
        the largest, evenly spaced by index (computed, never materialised: a range may hold
        billions of values)."""
        size = self.size
        if size <= n:
            return list(self)
        idx = sorted({round(i * (size - 1) / (n - 1)) for i in range(n)})
        if self.values is not None:
            return [self.values[i] for i in idx]
        return [self.lo + i * self.step for i in idx]

    def __str__(self) -> str:
        if self.values is not None:
            return "{" + ", ".join(map(str, self.values)) + "}"
        step = f" step {self.step}" if self.step != 1 else ""
        return f"{self.lo}..{self.hi}{step}"


@dataclass(frozen=True)
class DomainForm:
    """A domain whose ends are expressions of the parameters (``scalar num_tokens: i32 in 1..T``):
    at another parameter point the runtime scalar has another range."""

    lo: Expr
    hi: Expr
    step: Expr
    values: tuple[Expr, ...] | None = None

    def at(self, env: dict[str, int]) -> Domain:
        if self.values is not None:
            return Domain(values=tuple(evaluate(v, env) for v in self.values))
        step = evaluate(self.step, env)
        if step <= 0:  # E207 at the compiled point; elsewhere no range, like any EvalError
            raise EvalError(f"a range step of {step}")
        return Domain(evaluate(self.lo, env), evaluate(self.hi, env), step)


@dataclass(frozen=True)
class Param:
    name: str
    value: int
    default: int
    domain: Domain | None
    span: Span


@dataclass(frozen=True)
class Const:
    name: str
    expr: Expr  # in terms of parameters
    value: int
    span: Span


@dataclass(frozen=True)
class Assertion:
    cond: Expr
    message: str | None
    span: Span


@dataclass(frozen=True)
class Scalar:
    """A runtime scalar argument (``epoch``, ``num_tokens``), optionally with a range."""

    name: str
    dtype: str
    domain: Domain | None
    span: Span
    value: Expr | None = None  # derived (``scalar n = expr``): the definition over base scalars
    refs: tuple[str, ...] = ()  # derived: the scalars its definition names directly
    form: DomainForm | None = None  # ``domain`` as written, for other parameter points

    def domain_at(self, env: dict[str, int]) -> Domain | None:
        """The range at the parameter point ``env`` (``domain`` is the one at the graph's point)."""
        if self.form is None:
            return self.domain
        try:
            return self.form.at(env)
        except EvalError:
            return self.domain


@dataclass(frozen=True)
class Guard:
    """``guard cond, "message"``: the host refuses requests (runtime scalar values) where
    ``cond`` is false. ``cond`` has derived scalars inlined; ``text`` is the source form."""

    cond: Expr
    message: str | None
    text: str
    scalars: tuple[str, ...]  # scalars (base or derived) the source condition names
    span: Span
