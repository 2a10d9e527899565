"""Seed bugs of the races and numerics families: each pre-fix layer is flagged exactly where
the bug is, and each post-fix layer is clean under every rule."""

from __future__ import annotations

import pytest
from lintutil import FIXTURES, lint, triples

SEED = FIXTURES / "seed"
MINE = {"R501", "R502", "R503", "R504", "R505", "N201", "N202", "N204"}


def test_hc_pre_split_k_atomics_are_flagged_at_the_atomic_store():
    diags = lint(SEED / "hc_pre_pre.dsl", codes=MINE)
    assert triples(diags) == [("N201", 36, 5)]
    (d,) = diags
    assert d.message == (
        "hc_pre_linear (spmd 32, AIC) accumulates f32 into mixes_raw[0:16, 0:32] with an atomic add; "
        "4 unordered writers (blocks 0..3) add into the same elements, so the sum order is "
        "task-completion order and results are not bit-reproducible"
    )
    assert d.hint == (
        "write per-split partials with plain stores (e.g. scratch mixes_raw_partials: f32[4 * T, MIX]) "
        "and sum splits 0..3 in ascending order in a reduce task `after hc_pre_linear`"
    )
    # the seed is ordered before the atomics by their read-modify-write (RAW edge): no N202
    assert ("N201", 36, 5) in triples(lint(SEED / "hc_pre_pre.dsl"))


@pytest.mark.parametrize("T", [128, 512])
def test_hc_pre_pre_is_flagged_at_every_size(T):
    diags = lint(SEED / "hc_pre_pre.dsl", overrides={"T": T}, codes=MINE)
    assert triples(diags) == [("N201", 36, 5)]
    assert f"(spmd {T // 16 * 4}, AIC)" in diags[0].message


@pytest.mark.parametrize("T", [128, 512])
def test_hc_pre_post_is_clean_under_all_rules(T):
    assert lint(SEED / "hc_pre_post.dsl", overrides={"T": T}) == []


def test_kv_writeback_war_is_flagged_at_the_writeback():
    diags = lint(SEED / "kv_writeback_war_pre.dsl")
    assert triples(diags) == [("R501", 17, 7)]
    (d,) = diags
    assert d.message.startswith(
        "WAR race on `kv_cache`: writeback[0] writes kv_cache[0:16, 0:32] that attend[0] reads"
    )
    assert d.hint.startswith("add `after attend[i]` to task writeback[i]")


def test_gm_roundtrip_out_is_flagged_at_the_padded_store():
    diags = lint(SEED / "gm_roundtrip_out_pre.dsl")
    assert triples(diags) == [("R503", 13, 7)]
    (d,) = diags
    assert "pack[1] writes packed[12:16, 0:64] as a pure Out (OUTPUT_EXISTING) after pack[0]" in d.message
    assert "consume reads whichever write lands last" in d.message
    assert d.hint.startswith("declare `packed` inout")


def test_mixed_store_paths_are_flagged_at_the_scalar_write():
    assert triples(lint(SEED / "mixed_store_paths_pre.dsl")) == [("R504", 11, 5)]


def test_meta_manual_dep_read_without_chain_is_flagged():
    diags = lint(SEED / "meta_manual_dep_pre.dsl")
    assert triples(diags) == [("R503", 12, 20)]
    assert diags[0].hint == "add `after meta` to task gather"


@pytest.mark.parametrize(
    "name", ["kv_writeback_war", "gm_roundtrip_out", "mixed_store_paths", "meta_manual_dep"]
)
def test_post_fix_layers_are_clean_under_all_rules(name):
    assert lint(SEED / f"{name}_post.dsl") == []
