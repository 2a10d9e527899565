"""Seed bugs of the sort and capacity families (docs/runtime-semantics.md §18, §19, §21.4): pre
flagged with the exact finding, post clean under every rule; and the merge-stage arithmetic the
rules rely on."""

import numpy as np
import pytest
from lintutil import FIXTURES, lint, triples

from lowering.checks.validity_facts import run_after, stages_for
from runtime.tileops_sort import mrgsort, sort32

SEED = FIXTURES / "seed"


def test_indexer_topk_pre_two_stages_flagged_with_true_threshold():
    diags = lint(SEED / "indexer_topk_pre.dsl")
    assert triples(diags) == [("S301", 39, 7)]
    (d,) = diags
    assert d.span.line == 39  # the top-k readout after mrgsort(256)
    assert "up to INDEXER_SCORE_CAP=576 finite candidates (at T=1152)" in d.message
    assert "sort32+mrgsort(64, 256) yields sorted runs of 512 records" in d.message
    assert "correct only while at most 512 candidates can be finite" in d.message
    assert "wrong for T in 1152..4096; correct for T in 128..1024" in d.message
    assert d.hint == "add mrgsort(block_len=1024) after mrgsort(block_len=256) (runs of 2048 records)"


def test_indexer_topk_post_clean_under_all_rules():
    assert lint(SEED / "indexer_topk_post.dsl") == []


def test_csa_guard_pre_refuses_requests_that_fit():
    diags = lint(SEED / "csa_guard_pre.dsl")
    assert triples(diags) == [("C401", 19, 3)]
    (d,) = diags
    assert d.severity == "warning"
    assert "guard `WIN + max_visible_cmp <= PREFILL_SPARSE_PAD` refuses requests that fit" in d.message
    assert "(WIN + max_visible_cmp reaches 2176)" in d.message
    assert "prefill_idx_topk emits at most INDEXER_TOPK_CAP=512 valid columns of cmp_indices" in d.message
    assert "max_visible_cmp in 513..2048; seq_len in 2052..8192" in d.message


def test_csa_guard_post_clean_under_all_rules():
    assert lint(SEED / "csa_guard_post.dsl") == []


def test_hc_head_oob_pre_reads_past_t_dim():
    diags = lint(SEED / "hc_head_oob_pre.dsl")
    assert triples(diags) == [("C402", 19, 29)]
    assert "this read of 'x' dimension 0 (extent t_dim)" in diags[0].message
    assert "t_dim in 1..15" in diags[0].message


def test_hc_head_oob_post_clean_under_all_rules():
    assert lint(SEED / "hc_head_oob_post.dsl") == []


# ---------------------------------------------------------------- run-length arithmetic


def test_run_length_after_stages():
    assert [run_after(m) for m in range(4)] == [32, 128, 512, 2048]
    assert [stages_for(c) for c in (32, 33, 128, 256, 512, 513, 2048)] == [0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("cap", [256, 512, 768, 1024, 2048])
def test_two_stages_cover_cap_only_up_to_512(cap):
    """The simulation of docs/runtime-semantics.md §18.2: two stages are right for cap 256 and 512
    and wrong for 768, 1024 and 2048; checked here on the ISA emulation of sort32/mrgsort, and the
    rule's arithmetic must agree."""
    rng = np.random.default_rng(cap)
    width, k = 2048, min(512, cap)
    two_stages_ok = stages_for(cap) <= 2
    for _ in range(5):
        values = np.full((1, width), -np.inf, dtype=np.float32)
        values[0, :cap] = rng.permutation(cap).astype(np.float32)  # distinct finite scores
        pairs = sort32(values, np.arange(width, dtype=np.uint32)[None, :])
        pairs = mrgsort(mrgsort(pairs, 64), 256)
        top = pairs[0, 0 : 2 * k : 2]
        assert np.array_equal(top, np.sort(values[0, :cap])[::-1][:k]) == two_stages_ok
    assert two_stages_ok == (cap in (256, 512))


def test_indexer_without_the_cap_assert_hits_the_second_latent_bug():
    """docs/runtime-semantics.md §18.2: without `INDEXER_SCORE_CAP <= SORT_LEN`, T > 4096 writes
    past the 2048-column row; that region is compile-time, so the front end rejects it (E305) at
    the first such T."""
    from dsl.frontend import compile_text
    from lowering.source import CompileError

    text = (SEED / "indexer_topk_pre.dsl").read_text()
    text = "\n".join(line for line in text.splitlines() if "INDEXER_SCORE_CAP <= SORT_LEN" not in line)
    with pytest.raises(CompileError) as err:
        compile_text(text, "indexer.dsl")
    diags = err.value.diagnostics
    assert {d.code for d in diags} == {"E305"}
    assert all("(at T=4224)" in d.message for d in diags)  # score_wide store and raw read
