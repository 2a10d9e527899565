"""The seed bugs of docs/runtime-semantics.md §15-§19 as PyPTO model files: every pre-fix file is
flagged by the intended rule at the intended line, every post-fix file is clean (and read without a
"not modelled" note)."""

from __future__ import annotations

import pytest
from pyptoutil import PYPTO_FIXTURES

from lowering.checks import run_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

SEED = PYPTO_FIXTURES / "seed"

# file -> every finding (code, line, column) of the pre-fix form, sorted: the rule of the seed
# bug (named in the comment) and whatever else the same code trips
PRE = {
    "dispatch_pre.py": [("D101", 86, 5), ("D102", 97, 5), ("D105", 78, 17), ("D109", 86, 5), ("D110", 97, 5)],  # bug 1: D101, D102
    "combine_pre.py": [("D101", 61, 5), ("D102", 61, 5), ("D105", 49, 17)],  # bug 2: D101, D105
    "hc_pre_pre.py": [("N201", 49, 21)],  # bug 3: N201, FP32 atomic split-K
    "indexer_topk_pre.py": [("S301", 54, 24)],  # bug 4: S301, two merge stages for up to 4096 candidates
    "csa_guard_pre.py": [("C401", 63, 5)],  # bug 5: C401, guard on the raw candidate count
}  # fmt: skip
POST = ["dispatch_post.py", "combine_post.py", "hc_pre_post.py", "indexer_topk_post.py", "csa_guard_post.py"]


def lint(name: str):
    result = read_pypto(SEED / name)
    findings = []
    for g in result.graphs:
        findings.extend(run_rules(g, CheckContext(g)))
    return result, findings


@pytest.mark.parametrize("name", list(PRE))
def test_pre_fix_file_is_flagged_by_the_intended_rule_at_the_intended_line(name):
    result, findings = lint(name)
    assert result.diagnostics == []
    assert sorted((d.code, d.span.line, d.span.col) for d in findings) == PRE[name]
    assert all(d.span.file.endswith(name) for d in findings)


@pytest.mark.parametrize("name", POST)
def test_post_fix_file_is_clean(name):
    from lowering.checks.suppressions import apply_suppressions

    result, findings = lint(name)
    assert result.diagnostics == []
    kept = apply_suppressions(findings, result.graphs, str(SEED / name), result.text)
    assert kept == [], [f"{d.span}: {d.code} {d.message}" for d in kept]


def test_the_fixtures_come_in_pairs():
    pre = sorted(p.name for p in SEED.glob("*_pre.py"))
    post = sorted(p.name for p in SEED.glob("*_post.py"))
    assert [p.removesuffix("_pre.py") for p in pre] == [p.removesuffix("_post.py") for p in post]
    assert sorted(PRE) == pre
