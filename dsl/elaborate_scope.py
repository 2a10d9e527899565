"""What the pieces of layer elaboration share: names in scope, diagnostics, the graph so far.

:class:`dsl.elaborate.Elaborator` composes three pieces - itself (layer statements),
:class:`dsl.elaborate_ints.HostInts` (compile-time and host integers) and
:class:`dsl.elaborate_tasks.TaskElaborator` (task definitions and references to them) - and
they work on the records here: the :class:`Scope` of one layer instance, one
:class:`Diagnostics` sink, and the :class:`LayerGraph` being built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsl import ast
from dsl.codes import diag
from lowering import ir, parameters
from lowering.checks.capacity.derived import PendingConst
from lowering.source import Diagnostic, Span
from lowering.symbolic import Expr


class Abort(Exception):
    """The statement being elaborated is abandoned; its diagnostic is already reported."""


@dataclass
class Scope:
    """Names visible in one layer instance."""

    prefix: str
    layer: ast.Layer
    ints: dict[str, Expr] = field(default_factory=dict)
    tensors: dict[str, ir.Tensor] = field(default_factory=dict)
    tasks: dict[str, dict[str, None]] = field(default_factory=dict)  # name -> instances (ordered set)
    calls: dict[str, Scope] = field(default_factory=dict)
    loop_kinds: list[str] = field(default_factory=list)
    call: ast.LayerCall | None = None  # the call that instantiated this scope (None at the root)
    trips: int = 1  # iterations of the enclosing layer loops (of the caller too)


class Diagnostics:
    """The diagnostics of one elaboration, each reported once."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []
        self._reported: set[tuple] = set()  # (code, span, message) already in items

    def report(self, d: Diagnostic) -> None:
        # A task array repeats its body per element: report each mistake once, not N times.
        key = (d.code, d.span, d.message)
        if key not in self._reported:
            self._reported.add(key)
            self.items.append(d)

    def error(self, code: str, span: Span, message: str, hint: str | None = None) -> Abort:
        """Report an error; the caller raises the returned :class:`Abort`."""
        self.report(diag(code, span, message, hint=hint))
        return Abort()

    def mark(self) -> int:
        return len(self.items)

    def drop_since(self, mark: int) -> None:
        """Forget the diagnostics reported since ``mark`` (a tentative evaluation that failed)."""
        for d in self.items[mark:]:
            self._reported.discard((d.code, d.span, d.message))
        del self.items[mark:]


@dataclass
class LayerGraph:
    """The graph of the layer being elaborated, as the statements so far have built it."""

    params: dict[str, parameters.Param] = field(default_factory=dict)
    consts: dict[str, parameters.Const] = field(default_factory=dict)
    assertions: list[parameters.Assertion] = field(default_factory=list)
    scalars: dict[str, parameters.Scalar] = field(default_factory=dict)
    derived: dict[str, parameters.Scalar] = field(
        default_factory=dict
    )  # scalar n = expr (host values over runtime scalars)
    guards: list[parameters.Guard] = field(default_factory=list)
    pending: dict[str, PendingConst] = field(default_factory=dict)  # consts that need the tasks: derived(...)
    emitted: dict[str, tuple[Scope, str, Span]] = field(default_factory=dict)  # emitted(T) placeholder -> use
    tensors: dict[str, ir.Tensor] = field(default_factory=dict)
    tasks: list[ir.Task] = field(default_factory=list)
    task_names: set[str] = field(default_factory=set)
    env: dict[str, int] = field(default_factory=dict)  # parameter and const values at this point
    ranks: Expr | None = None
    golden: str | None = None
    golden_span: Span | None = None
    reductions: list[ir.Reduction] = field(default_factory=list)
    structure: dict[Expr, int] = field(
        default_factory=dict
    )  # layer if conditions and loop bounds -> value here
    aliases: list[ir.Alias] = field(default_factory=list)
    previous_refs: list[tuple[str, ast.TaskRef, Scope]] = field(
        default_factory=list
    )  # after prev(t), per task
