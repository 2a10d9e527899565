"""Tests for runtime.compare, including the top-k blind spot of docs/runtime-semantics.md §20.3."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runtime import compare as C
from runtime import tileops as T


def test_allclose_is_all_or_nothing() -> None:
    e = np.linspace(-1, 1, 100).astype(np.float32)
    assert C.allclose(e + 5e-4, e, rtol=0, atol=1e-3).passed
    a = e.copy()
    a[7] += 0.01
    res = C.allclose(a, e, rtol=1e-3, atol=1e-3)
    assert not res and res.frac_out_of_tol == pytest.approx(0.01)
    assert res.max_abs_err == pytest.approx(0.01, rel=1e-4)
    assert not C.allclose(np.array([np.nan]), np.array([np.nan]))
    assert C.allclose(np.array([np.inf]), np.array([np.inf]))
    assert not C.allclose(np.zeros(3), np.zeros(4))


@pytest.mark.parametrize(
    "check",
    [
        lambda a, e, rtol: C.allclose(a, e, rtol=rtol, atol=0.0),
        lambda a, e, rtol: C.ratio_allclose(a, e, atol=0.0, rtol=rtol, max_error_ratio=0.0),
    ],
    ids=["allclose", "ratio_allclose"],
)
def test_rtol_bounds_the_error_relative_to_the_expected_value_exactly(check) -> None:
    """|a - e| <= rtol * |e| at atol = 0: within at 0.9x the bound, outside at 1.1x, and
    relative to e (the same absolute error passes for a large e and fails for a small one)."""
    e = np.array([100.0, -100.0, 1e-3])
    rtol = 1e-3
    assert check(e + 0.9 * rtol * np.abs(e), e, rtol).passed
    assert check(e - 0.9 * rtol * np.abs(e), e, rtol).passed
    for i in range(3):
        a = e.copy()
        a[i] += 1.1 * rtol * abs(e[i])
        assert not check(a, e, rtol).passed, i
    assert check(np.array([100.05]), np.array([100.0]), rtol).passed
    assert not check(np.array([1.05]), np.array([1.0]), rtol).passed


def test_ratio_allclose_counts_bad_points_against_a_rounded_budget() -> None:
    e = np.ones(1000, np.float32)
    a = e.copy()
    a[:5] = 2.0  # round(0.005 * 1000) = 5 bad points allowed
    assert C.ratio_allclose(a, e, atol=1e-4, rtol=1 / 128).passed
    a[5] = 2.0
    res = C.ratio_allclose(a, e, atol=1e-4, rtol=1 / 128)
    assert not res.passed and res.frac_out_of_tol == pytest.approx(0.006)
    # round() is half-to-even: 0.005 * 500 = 2.5 allows 2.
    assert not C.ratio_allclose(a[:500], e[:500], atol=1e-4, rtol=1 / 128).passed
    assert C.ratio_allclose(np.r_[a[:2], e[2:500]], e[:500], atol=1e-4, rtol=1 / 128).passed


def test_ratio_allclose_rejects_nan_and_inf() -> None:
    e = np.ones(1000, np.float32)
    a = e.copy()
    a[0] = np.inf
    assert not C.ratio_allclose(a, e, atol=1, rtol=1)
    assert "NaN/Inf" in C.ratio_allclose(e, np.r_[np.nan, e[1:]], atol=1, rtol=1).message


def test_ratio_allclose_valid_rows_and_zero_tail() -> None:
    e = np.ones((8, 4), np.float32)
    a = e.copy()
    a[6:] = 123.0  # garbage past the valid rows is ignored ...
    assert C.ratio_allclose(a, e, atol=0, rtol=0, valid_rows=6).passed
    res = C.ratio_allclose(a, e, atol=0, rtol=0, valid_rows=6, zero_tail=True)  # ... unless it must be 0
    assert not res.passed and "tail" in res.message
    a[6:] = 0.0
    assert C.ratio_allclose(a, e, atol=0, rtol=0, valid_rows=6, zero_tail=True).passed
    assert C.ratio_allclose(a.T, e.T, atol=0, rtol=0, valid_rows=6, zero_tail=True, valid_axis=1).passed


def test_ratio_reldiff_switches_from_absolute_to_relative_error() -> None:
    thd = 3e-3
    e = np.array([1e-4, 10.0, 100.0, 0.0], np.float32)
    # Below diff_thd the absolute error counts; above it, the error relative to max(|a|, |e|).
    a = np.array([1e-4 + 2.9e-3, 10.02, 100.2, 0.0], np.float32)  # rdiff ~ 2.9e-3, 2e-3, 2e-3
    res = C.ratio_reldiff(a, e, diff_thd=thd, pct_thd=0.0)
    assert res.passed, res.message
    a[1] = 10.05  # rdiff = 0.05/10.05 > thd
    assert not C.ratio_reldiff(a, e, diff_thd=thd, pct_thd=0.0).passed
    assert C.ratio_reldiff(a, e, diff_thd=thd, pct_thd=0.25).passed  # 1 of 4 allowed
    assert not C.ratio_reldiff(a, e, diff_thd=thd, pct_thd=0.25, max_diff_hd=1e-3).passed


def test_ratio_reldiff_floor_of_the_relative_denominator() -> None:
    thd = 5e-3
    floor = 2.0**-14 / thd  # about 0.0122: tiny values are compared against this, not themselves
    e = np.array([0.0], np.float32)
    a = np.array([0.006], np.float32)  # abs 6e-3 > thd; rdiff = 6e-3 / (floor + 1e-9) ~ 0.49
    res = C.ratio_reldiff(a, e, diff_thd=thd, pct_thd=0.0)
    assert not res.passed
    assert res.max_rel_err == pytest.approx(0.006 / (floor + 1e-9), rel=1e-5)
    assert not math.isinf(res.max_rel_err)


def test_topk_pair_compare_forgives_tie_swaps_only() -> None:
    exp = np.array([[4, 2, 7, 1]])
    vals = np.array([[9.0, 5.0, 5.0, 1.0]])
    assert C.topk_pair_compare(np.array([[4, 7, 2, 1]]), exp, vals).passed  # tie swap
    res = C.topk_pair_compare(np.array([[4, 7, 2, 1]]), exp, np.array([[9.0, 5.0, 6.0, 1.0]]))
    assert not res.passed


def seed_bug_row(cap: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    row = np.full((1, 2048), T.FP32_NEG_INF, np.float32)
    row[0, :cap] = rng.standard_normal(cap).astype(np.float32)
    return row


def two_stage_topk(row: np.ndarray, k: int) -> np.ndarray:
    pairs = T.sort32(row, T.arange(0, (1, row.shape[1]), T.UINT32))
    pairs = T.mrgsort(T.mrgsort(pairs, 64), 256)
    return T.topk_from_sorted(pairs, k)[1]


@pytest.mark.parametrize("cap", [1024, 2048])
def test_pair_compare_misses_a_wrong_selection_that_selection_compare_catches(cap: int) -> None:
    """docs/runtime-semantics.md §20.3: the pre-fix top-k is well sorted and valid, but wrong."""
    scores = seed_bug_row(cap)
    k = 512
    expected = np.argsort(-scores[0], kind="stable")[:k][None, :].astype(np.int32)
    actual = two_stage_topk(scores, k)  # best 512 of the first 512 candidates only
    assert set(actual[0].tolist()) != set(expected[0].tolist())
    visible = np.array([cap])
    assert C.topk_prefix_contract(actual, visible, topk_cap=k).passed  # contract holds ...
    assert C.topk_pair_compare(actual, expected, C.paired_values(scores, actual)).passed  # ... blind
    res = C.topk_selection_compare(actual, scores, expected)
    assert not res.passed
    assert "different score multiset" in res.message


def test_selection_compare_accepts_the_right_selection_and_tie_swaps() -> None:
    scores = np.array([[3.0, 1.0, 3.0, 2.0, 0.5]], np.float32)
    expected = np.array([[0, 2, 3, -1]])
    assert C.topk_selection_compare(np.array([[2, 0, 3, -1]]), scores, expected).passed
    scores_ok = seed_bug_row(512)
    want = np.argsort(-scores_ok[0], kind="stable")[:512][None, :]
    assert C.topk_selection_compare(two_stage_topk(scores_ok, 512), scores_ok, want).passed


def test_selection_compare_rejects_the_right_selection_in_the_wrong_order() -> None:
    """Same entries, same count, no repeat: only the order is wrong (ascending), and the
    order is part of the top-k contract."""
    scores = np.array([[0.5, 4.0, 2.0, 3.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0]], np.float32)
    expected = np.array([[1, 3, 2, -1], [4, 3, 2, 1]])
    assert C.topk_selection_compare(expected, scores, expected).passed
    ascending = np.array([[2, 3, 1, -1], [4, 3, 1, 2]])  # row 0 reversed, row 1 a non-tie swap
    res = C.topk_selection_compare(ascending, scores, expected)
    assert not res.passed and res.message.startswith("topk_selection_compare: 2 rows fail topk_pair_compare")
    pair = C.topk_pair_compare(ascending, expected, C.paired_values(scores, ascending))
    assert not pair.passed and pair.frac_out_of_tol == 4 / 8


def test_selection_compare_catches_duplicates_and_count_mismatch() -> None:
    scores = np.array([[3.0, 3.0, 1.0]], np.float32)
    res = C.topk_selection_compare(np.array([[0, 0]]), scores, np.array([[0, 1]]))
    assert not res.passed and "repeat an index" in res.message  # same scores, duplicate index
    res = C.topk_selection_compare(np.array([[0, -1]]), scores, np.array([[0, 1]]))
    assert not res.passed and "number of entries" in res.message


def test_topk_prefix_contract() -> None:
    visible = np.array([3, 0, 5, 5])
    good = np.array([[2, 0, 1, -1], [-1, -1, -1, -1], [4, 1, 0, 3], [-1, -1, -1, -1]])
    assert C.topk_prefix_contract(good, visible, num_active=3).passed
    for bad in (
        [[2, 0, 3, -1]],  # out of [0, visible)
        [[2, 2, 1, -1]],  # repeated
        [[2, 0, -1, -1]],  # short prefix
        [[2, 0, 1, 0]],  # garbage after the prefix
    ):
        rows = good.copy()
        rows[0] = bad[0]
        assert not C.topk_prefix_contract(rows, visible, num_active=3).passed
    rows = good.copy()
    rows[3] = [0, 1, 2, 3]  # inactive rows must be all -1
    assert not C.topk_prefix_contract(rows, visible, num_active=3).passed
