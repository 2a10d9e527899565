"""The one registry of diagnostic codes: every code dslc emits, from every part that emits one.

Each part declares its codes beside the code that emits them (``lowering.codes`` says what a
code is); this module only collects them, once, and is what ``dslc explain``, the docs table,
SARIF rule metadata and the configuration's code selectors read. A code declared twice is an
error here, not a silent override.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from dsl.codes import CODES as FRONT_END_CODES
from dsl.driver.diagnostics import DRIVER_CODES
from lowering.checks import all_rules
from lowering.checks.rule import Rule
from lowering.checks.suppressions import META_CODES
from lowering.codegen.ascendc.diagnostics import CODES as TARGET_CODES
from lowering.codes import Code
from lowering.pypto_reader.notes import READER_CODES


def _section(docs: str, heading: str) -> str:
    """The first paragraph under ``heading`` in a rule's docs (empty if absent)."""
    _, found, rest = docs.partition(heading)
    if not found:
        return ""
    return rest.strip().split("\n\n")[0].replace("\n", " ").strip()


def _rule(r: Rule) -> Code:
    what = _section(r.docs, "## What it catches") or r.summary
    header = f"{r.code} {r.name} ({r.family}, {r.severity.value}): {r.summary}\n\n{r.docs}"
    return Code(r.code, r.summary, what, r.severity, r.family, r.name, header)


@cache
def registry() -> dict[str, Code]:
    """Code -> its entry, sorted by code."""
    parts: list[tuple[str, list[Code]]] = [
        ("front end", list(FRONT_END_CODES.values())),
        ("driver", list(DRIVER_CODES.values())),
        ("lint", [_rule(r) for r in all_rules().values()]),
        ("suppressions", list(META_CODES.values())),
        ("pypto reader", list(READER_CODES.values())),
        ("ascendc target", list(TARGET_CODES.values())),
    ]  # fmt: skip
    out: dict[str, Code] = {}
    for family, codes in parts:
        for c in codes:
            if c.code in out:
                raise ValueError(f"diagnostic code {c.code} is declared twice")
            out[c.code] = c if c.family else replace(c, family=family)
    return dict(sorted(out.items()))


def lookup(code: str) -> Code | None:
    return registry().get(code.upper())
