"""What a lint rule is: one module, one code, its docs in the module docstring.

A rule module defines ``CODE``, ``NAME`` (what it catches, snake_case), ``FAMILY``,
``SEVERITY``, ``SUMMARY`` and ``check(graph, ctx)`` yielding diagnostics, and may set
``POINTS = "all"`` when ``check`` itself visits every admissible parameter point of the
graph's structure class (the default, ``"point"``: it judges the graph at its own point, and
the lint driver runs it again at the probe points, ``lowering.checks.points.probe_points``), and
``COUNTS = True`` when it judges how many notifies reach a cell: such a rule does not run on a
graph with missing tasks (``Graph.incomplete``), where the notifier, clear or retire a count needs
can be among them (the reader's note says the graph is incomplete). Its docstring is
the docs page ``dslc explain CODE`` prints, under fixed headings:

    ## What it catches / ## Why it breaks on the device / ## Example / ## Use instead /
    ## Parameter and round coverage (which admissible points and which rounds it judges)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType

from lowering.checks.reach import Ancestors, Reach, reach
from lowering.ir import Graph
from lowering.source import Diagnostic, Severity, Span
from runtime.device import EARLY_QUEUE_CAPACITY
from runtime.device import PRESETS as DEVICES

DOC_HEADINGS = (
    "## What it catches",
    "## Why it breaks on the device",
    "## Example",
    "## Use instead",
    "## Parameter and round coverage",
)

# Cores per rank of each device preset (AIC, AIV): the simulator's numbers (runtime.device).
PRESETS = {name: (d.aic, d.aiv) for name, d in DEVICES.items()}


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    family: str
    severity: Severity
    summary: str
    docs: str
    check: Callable[[Graph, CheckContext], Iterable[Diagnostic]]
    points: str = "point"  # "all": check visits every admissible point itself
    counts: bool = False  # judges signal counts: not run on an incomplete graph

    def applies_to(self, graph: Graph) -> bool:
        """Whether the rule can judge ``graph``: a counting rule needs every task."""
        return not (self.counts and graph.incomplete)

    @staticmethod
    def from_module(module: ModuleType) -> Rule:
        docs = (module.__doc__ or "").strip()
        missing = [h for h in DOC_HEADINGS if h not in docs]
        if missing:
            raise ValueError(f"rule module {module.__name__} lacks doc headings {missing}")
        return Rule(
            module.CODE,
            module.NAME,
            module.FAMILY,
            Severity(module.SEVERITY),
            module.SUMMARY,
            docs,
            module.check,
            getattr(module, "POINTS", "point"),
            getattr(module, "COUNTS", False),
        )


@dataclass
class CheckContext:
    """Device facts and shared analyses for one graph."""

    graph: Graph
    preset: str = "a2a3"
    early_queue_capacity: int = EARLY_QUEUE_CAPACITY
    cache: dict = field(default_factory=dict)

    @property
    def cores(self) -> dict[str, int]:
        aic, aiv = PRESETS[self.preset]
        return {"aic": aic, "aiv": aiv, "mix": aic}

    @property
    def reach(self) -> Reach:
        """Reachability between the graph's tasks (built once, shared by every rule)."""
        return reach(self.graph, self.cache)

    @cached_property
    def ancestors(self) -> Ancestors:
        """``ancestors[name]``: the transitive predecessors of each task, as a read-only set."""
        return Ancestors(self.reach)


def finding(
    code: str,
    severity: str,
    span: Span,
    message: str,
    fix: str | None = None,
    related: tuple[tuple[Span, str], ...] = (),
    data: tuple[tuple[str, str], ...] = (),
) -> Diagnostic:
    """A lint finding; ``fix`` is the one-line repair shown as the hint and in JSON/SARIF,
    ``data`` the facts ``dslc fix`` needs to apply it."""
    return Diagnostic(code, message, span, Severity(severity), fix, related, data)
