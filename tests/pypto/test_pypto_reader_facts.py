"""Sort, seed and view facts the reader recovers from real-looking code (issue 10, items 4-5).

Fixtures under ``tests/fixtures/pypto/reader/``, written for dslc; each finding is asserted by
code, line and column, and each clean case would fail if the fact were lost.
"""

from __future__ import annotations

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

READER = PYPTO_FIXTURES / "reader"


def findings(name: str, **overrides: int):
    result = read_pypto(READER / name / "model.py", overrides=overrides or None)
    assert [d for d in result.diagnostics if d.code != "P001"] == []
    out = [*result.diagnostics]
    for g in result.graphs:
        out += run_rules_safely(g, CheckContext(g), set(all_rules()))
    return sorted((d.code, d.span.line, d.span.col) for d in out), out


def test_seeds_init_value_and_on_core_seed_with_offsets_recomputed_per_loop():
    triples, out = findings("seeds")
    assert triples == [("N202", 29, 16)]  # only `lost`: counts is init_value=0, hist seeded on-core
    (d,) = out
    assert d.message.startswith("count adds atomically into lost[0:64, 0:1]")


def test_format_two_merge_and_valid_extent_assigned_in_if_else():
    triples, out = findings("sorting")
    assert triples == [("S302", 31, 9)]  # route_unsorted only
    assert "mrgsort of 2 operands (format 2) merges lists that are not sorted" in out[0].message


def test_the_bound_of_finite_candidates_is_the_cap_not_the_row_width():
    triples, out = findings("sorting", CAP=200)
    assert triples == [("S301", 45, 15), ("S302", 31, 9)]
    s301 = next(d for d in out if d.code == "S301")
    assert "up to 200 finite candidates" in s301.message  # the cap, not PAD=256
