"""The lint: rule discovery and running the rules on an IR graph.

Rules are found by walking this package: every module that defines ``CODE`` and
``check`` is a rule (one rule per module, grouped in one subpackage per family).
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from functools import cache

from lowering.checks.rule import CheckContext, Rule
from lowering.ir import Graph
from lowering.perf import paused_gc
from lowering.source import Diagnostic


@cache
def all_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        module = importlib.import_module(info.name)
        if hasattr(module, "CODE") and hasattr(module, "check"):
            rule = Rule.from_module(module)
            if rule.code in rules:
                raise ValueError(f"rule code {rule.code} is defined twice")
            rules[rule.code] = rule
    return dict(sorted(rules.items()))


def run_rules(
    graph: Graph,
    ctx: CheckContext,
    codes: set[str] | None = None,
    timings: dict[str, float] | None = None,
) -> list[Diagnostic]:
    """Every finding of the selected rules (all rules when ``codes`` is None).

    ``timings``, when given, receives the CPU seconds each rule took (``time.process_time``;
    analyses shared through ``ctx.cache`` are charged to the first rule that needs them).
    """
    out: list[Diagnostic] = []
    with paused_gc():
        for code, rule in all_rules().items():
            if (codes is not None and code not in codes) or not rule.applies_to(graph):
                continue
            start = time.process_time()
            out.extend(rule.check(graph, ctx))
            if timings is not None:
                timings[code] = time.process_time() - start
    seen = set()
    unique = []
    for d in out:
        key = (d.code, d.span, d.message)
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return sorted(unique, key=Diagnostic.sort_key)
