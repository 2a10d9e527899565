"""The reader on real pypto-lib code (issue 10): skipped when the corpus is not there.

``DSLC_CORPUS`` names the pypto-lib snapshot (``.ci/run`` points it at ``../shared``). The
files are the ones that hold the FP32 split-K atomics docs/runtime-semantics.md §17.6 lists; every
one of those sites must be an N201, and no file may end in a reader failure (P004, which carries the
traceback) -- nor, on the two smaller files, any rule.
The whole tree is measured by ``bench/bench_corpus.py``, not here (it takes minutes).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

CORPUS = Path(
    os.environ.get("DSLC_CORPUS", Path(__file__).resolve().parents[2] / "../shared/corpus/pypto-lib")
)
MODELS = CORPUS / "models"

pytestmark = pytest.mark.skipif(not MODELS.is_dir(), reason="the pypto-lib corpus is not available")

# file -> number of distinct N201 sites (docs/runtime-semantics.md §17.6)
SPLIT_K_SITES = {
    "deepseek_v4_flash_mtp/qkv_proj_rope.py": 2,
    "deepseek_v4_flash_mtp/hc_head.py": 1,
    "qwen3_14b/decode_fwd.py": 10,
    "qwen3_14b/prefill_fwd.py": 1,
}


def read(rel: str):
    path = MODELS / rel
    result = read_pypto(path)
    assert [d.message for d in result.diagnostics if d.code == "P004"] == []
    return path, result


def in_file(path: Path, found) -> list:
    return [d for d in found if Path(d.span.file).resolve() == path.resolve()]


@pytest.mark.parametrize("rel", sorted(SPLIT_K_SITES))
def test_split_k_atomic_sites_are_n201(rel):
    path, result = read(rel)
    found = []
    for g in result.graphs:
        found += run_rules_safely(g, CheckContext(g), {"N201"})
    found = in_file(path, found)
    assert [d.message for d in found if d.code == "P004"] == []
    sites = {(d.span.line, d.span.col) for d in found if d.code == "N201"}
    assert len(sites) == SPLIT_K_SITES[rel], sorted(sites)
    # a site where exactly two adds land on an exact zero is N201's note (issue 12): it says why
    # the order cannot show today and what would make it show
    assert all(
        "with an atomic add" in d.message or "exactly two unordered f32 atomic adds" in d.message
        for d in found
    )


# every rule on the smaller files (the large ones are bench/bench_corpus.py's)
@pytest.mark.parametrize(
    "rel", ["deepseek_v4_flash_mtp/hc_head.py", "deepseek_v4_flash_mtp/qkv_proj_rope.py"]
)
def test_no_rule_fails_on_the_graph(rel):
    path, result = read(rel)
    for g in result.graphs:
        failed = [d for d in run_rules_safely(g, CheckContext(g), set(all_rules())) if d.code == "P004"]
        assert failed == [], failed[0].data
