"""The parameter points ``dslc check`` lints a layer at, and how its findings name them.

A check holds for every admissible parameter value (docs/lint.md, "Coverage"), not only for the
point being compiled (defaults and ``--set``). A graph is the layer elaborated at one point, so
the lint looks at three kinds of points:

* **the compiled point**: every rule; its findings carry no label;
* **other structure classes**: a layer ``if`` or a layer loop bound that takes another value at
  some admissible point gives other tasks there. The layer is elaborated again at the point of
  each such class closest to the compiled one (fewest parameters changed), and every rule runs
  on that graph, restricted to the points of its class (``Graph.structure``);
* **probe points**: a rule that judges a graph at its own point (``POINTS = "point"``: races,
  numerics, most handshake rules) runs again, on the same tasks moved to the points
  ``lowering.checks.points.probe_points`` picks in each class (``lowering.graph_at``).

A finding that holds only away from the compiled point says where: ``(at OVERLAP=1)`` names the
parameters whose values differ from the compiled point's. When a class has more pieces than the
probes visit, or the layer more structure classes than ``MAX_VARIANTS``, such findings add how
many admissible points were checked. A finding is reported once per code and site, at the first
point (in the order above) where it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from dsl.frontend import elaborate_layer, parse_module, root_names
from lowering.checks import all_rules, run_rules
from lowering.checks.points import closeness, probe_points
from lowering.checks.rule import EARLY_QUEUE_CAPACITY, CheckContext
from lowering.graph_at import graph_at
from lowering.ir import Graph, structure_holds
from lowering.source import CompileError, Diagnostic

MAX_VARIANTS = 16  # structure classes elaborated per root layer, the compiled one included


@dataclass
class Coverage:
    """What the lint of one root layer visited."""

    findings: list[Diagnostic]
    graphs: list[Graph]  # the compiled graph and one per other structure class
    points_checked: int
    points_admissible: int
    bounded: bool


def lint_everywhere(
    graph: Graph,
    elaborate: Callable[[dict[str, int]], Graph],
    codes: set[str] | None,
    preset: str,
    early_queue: int = EARLY_QUEUE_CAPACITY,
) -> Coverage:
    """Lint ``graph`` (the compiled point) and the other admissible points of its layer.

    ``elaborate(overrides)`` compiles the same layer at other parameter values (it raises
    CompileError when the layer does not compile there)."""
    own = {n: p.value for n, p in graph.params.items()}
    ranged = [p.name for p in graph.params.values() if p.domain is not None]
    variants, failed, skipped, admissible = _variants(graph, elaborate, ranged)
    point_codes = {c for c, r in all_rules().items() if r.points == "point" and (codes is None or c in codes)}
    checked = len(variants) + len(failed)
    bounded = skipped > 0
    runs: list[tuple[Graph, set[str] | None]] = []
    for variant in variants:
        runs.append((variant, codes))
        probes = probe_points(variant)
        bounded |= probes.bounded
        for env in probes.points:
            runs.append((graph_at(variant, env), point_codes))
    checked += len(runs) - len(variants)
    note = f"; {checked} of {admissible} admissible parameter points checked" if bounded else ""
    per_point: list[list[Diagnostic]] = []
    for g, selected in runs:
        label = _label(g, own, ranged, note)
        batch = run_rules(g, CheckContext(g, preset=preset, early_queue_capacity=early_queue), selected)
        per_point.append([_labelled(d, label) for d in batch])
    for env, diagnostics in failed:
        label = _label_env(env, own, ranged, note)
        per_point.append([_labelled(d, label) for d in diagnostics])
    out = _one_point_per_site(per_point)
    return Coverage(out, variants, checked, admissible, bounded)


def _one_point_per_site(per_point: list[list[Diagnostic]]) -> list[Diagnostic]:
    """Per code and site, the findings of the point where it is most severe (the earliest such
    point: the compiled one first)."""
    best: dict[tuple, tuple[int, int]] = {}  # (code, span) -> (-severity, point index)
    for i, batch in enumerate(per_point):
        for d in batch:
            rank = (-d.severity.rank, i)
            key = (d.code, d.span)
            if key not in best or rank < best[key]:
                best[key] = rank
    return [d for i, batch in enumerate(per_point) for d in batch if best[(d.code, d.span)][1] == i]


def _variants(graph: Graph, elaborate, ranged: list[str]):
    """One graph per structure class (the compiled graph first), the classes whose elaboration
    failed (point, diagnostics), how many admissible points were left unclassified (the cap),
    and how many points are admissible."""
    variants = [graph]
    failed: list[tuple[dict[str, int], list[Diagnostic], tuple]] = []
    skipped = 0
    points = list(graph.admissible_points(any_structure=True))
    own = graph.env()
    points.sort(key=closeness(graph, own))
    for env in points:
        if any(v.same_structure(env) for v in variants) or any(
            s and structure_holds(s, env) for _e, _d, s in failed
        ):
            continue
        if len(variants) + len(failed) >= MAX_VARIANTS:
            skipped += 1
            continue
        try:
            variants.append(elaborate({n: env[n] for n in ranged}))
        except CompileError as err:
            failed.append((env, err.diagnostics, getattr(err, "structure", ())))
    return variants, [(e, d) for e, d, _s in failed], skipped, max(len(points), 1)


def _label(g: Graph, own: dict[str, int], ranged: list[str], note: str) -> str:
    return _label_env({n: p.value for n, p in g.params.items()}, own, ranged, note)


def _label_env(env: dict[str, int], own: dict[str, int], ranged: list[str], note: str) -> str:
    diff = [f"{n}={env[n]}" for n in ranged if env.get(n) != own.get(n)]
    return f" (at {', '.join(diff)}{note})" if diff else ""


def _labelled(d: Diagnostic, label: str) -> Diagnostic:
    return replace(d, message=d.message + label) if label else d


def lint_source(
    text: str,
    file: str,
    overrides: dict[str, int] | None,
    layer: str | None,
    codes: set[str] | None,
    preset: str,
    early_queue: int = EARLY_QUEUE_CAPACITY,
) -> tuple[list[Diagnostic], list[Graph]]:
    """Every finding of every root layer of ``text`` at every point it covers, and the graphs
    it elaborated (for suppressions); raises CompileError when the compiled point does not
    compile."""
    module = parse_module(text, file)
    names = root_names(module, file, overrides, layer)
    graphs: dict[str, Graph] = {}
    errors: list[Diagnostic] = []
    for name in names:
        try:
            graphs[name] = elaborate_layer(module, file, name, overrides)
        except CompileError as err:
            errors.extend(err.diagnostics)
    if errors:
        raise CompileError(errors)
    findings: list[Diagnostic] = []
    elaborated: list[Graph] = []
    for name, graph in graphs.items():

        def elaborate(at: dict[str, int], name: str = name) -> Graph:
            return elaborate_layer(module, file, name, {**(overrides or {}), **at})

        cov = lint_everywhere(graph, elaborate, codes, preset, early_queue)
        findings.extend(cov.findings)
        elaborated.extend(cov.graphs)
    return findings, elaborated
