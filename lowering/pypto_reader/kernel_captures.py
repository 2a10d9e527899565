"""Recording what a task body captures from outside itself, so its summary can be a template.

Each captured integer becomes a capture symbol (``@name``) whose value, when known, the read
still sees; each other looked-up name is kept as a fingerprint, equal for values the body
cannot tell apart. ``kernel_cache`` compares a later instance against these to decide whether
the template stands for it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from lowering.pypto_reader.values import (
    DtypeVal,
    IntVal,
    PlRef,
    PyVal,
    SeqVal,
    TensorVal,
    Unknown,
    Val,
)
from lowering.symbolic import EvalError, Expr, Sym, evaluate

CAPTURE_KIND = "const"  # evaluated from the environment, like a derived constant
ARG = "arg:"  # lookups of the body's bindings (an InCore kernel's parameters), not outer names


class Recorder:
    """Stands between a body being read and the names it captures: every integer it captures
    becomes a symbol whose value (when known) is in the environment of the read, and every
    tensor is compared by what the body can see of it (dtype, shape, kind), not its name."""

    def __init__(
        self,
        outer: Callable[[str, ast.AST], Val],
        base_env: Mapping[str, int],
        signature: Callable[[str], object],
    ):
        self.outer = outer
        self.base_env = base_env
        self.signature = signature
        self.lookups: dict[str, object] = {}
        self.roots: dict[str, str] = {}
        self.exprs: dict[str, Expr] = {}
        self.values: dict[str, int | None] = {}
        self.env = _RecordingEnv(base_env)

    def lookup(self, name: str, node: ast.AST) -> Val:
        return self.abstract(name, self.outer(name, node))

    def abstract(self, name: str, value: Val) -> Val:
        if isinstance(value, IntVal):
            self.lookups[name] = ("capture",)
            return IntVal(self._capture(name, value.expr))
        if isinstance(value, TensorVal):
            self.roots[name] = value.root
            if value.offsets is None or value.shape is None:
                self.lookups[name] = (
                    "tensor",
                    self.signature(value.root),
                    value.offsets,
                    value.shape,
                    value.dropped,
                )
                return value
            offsets = tuple(self._capture(f"{name}.o{i}", e) for i, e in enumerate(value.offsets))
            shape = tuple(self._capture(f"{name}.s{i}", e) for i, e in enumerate(value.shape))
            self.lookups[name] = ("view", self.signature(value.root), value.dropped, len(offsets), len(shape))
            return TensorVal(value.root, offsets, shape, value.dropped)
        self.lookups[name] = fingerprint(value)
        return value

    def _capture(self, name: str, expr: Expr) -> Expr:
        self.exprs[name] = expr
        self.values[name] = v = known_value(expr, self.base_env)
        if v is not None:
            self.env.captures["@" + name] = v
        return Sym("@" + name, CAPTURE_KIND)

    def mapping(self) -> dict[str, Expr]:
        return {"@" + k: e for k, e in self.exprs.items()}


class _RecordingEnv(dict):
    """The parameter environment plus the captured values; notes when a capture is read."""

    def __init__(self, base: Mapping[str, int]):
        super().__init__(base)
        self.captures: dict[str, int] = {}
        self.used = False

    def __getitem__(self, key: str) -> int:
        if key in self.captures:
            self.used = True
            return self.captures[key]
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        return key in self.captures or super().__contains__(key)

    def get(self, key, default=None):  # type: ignore[override]
        if key in self.captures:
            self.used = True
            return self.captures[key]
        return super().get(key, default)


def fingerprint(v: Val) -> object:
    """A hashable identity of a value, equal for values a body cannot tell apart."""
    if isinstance(v, IntVal | TensorVal | PlRef | DtypeVal):
        return v
    if isinstance(v, PyVal):
        try:
            hash(v.value)
        except TypeError:
            return ("id", id(v))
        return ("py", type(v.value).__name__, v.value)
    if isinstance(v, Unknown):
        return ("unknown", v.why)
    if isinstance(v, SeqVal):
        return ("seq", v.kind, tuple(fingerprint(i) for i in v.items))
    return ("id", id(v))


def known_value(expr: Expr, env: Mapping[str, int]) -> int | None:
    """The value of ``expr`` in ``env``, or None when ``env`` does not determine it."""
    try:
        return evaluate(expr, env)
    except EvalError:
        return None
