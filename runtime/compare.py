"""Comparators for kernel outputs against goldens (docs/runtime-semantics.md §20.2).

Written from that description of pypto-lib's `golden/validation.py` (upstream):

- `allclose`: every element within atol + rtol*|expected| (torch.allclose; NaN fails).
- `ratio_allclose`: the same per-point test, but up to round(max_error_ratio * numel) points
  may fail; any NaN/Inf fails; `valid_rows` restricts the comparison to a leading slice and
  `zero_tail` then demands that the actual tail past it is all zero.
- `ratio_reldiff`: absolute error below diff_thd, relative error above it (the
  cann-recipes-infer `data_compare`), bad-point fraction <= pct_thd, worst bad < max_diff_hd.
- `topk_pair_compare`: index mismatches are forgiven where the *actual* paired scores stay
  non-increasing around the position (tie swaps). It never looks at expected scores, so a
  well-sorted but wrong selection passes (the blind spot of docs/runtime-semantics.md §20.3).
- `topk_selection_compare`: `topk_pair_compare` plus the fix: the multiset of selected scores
  must equal the golden's, and selections must not repeat an index.
- `topk_prefix_contract`: the indexer's contract on its own output (v distinct values in
  [0, v), then -1).

All comparisons are computed in float64, so |a - e| never overflows. Each returns a
`Comparison`; `ratio` rounding is Python's `round` (half to even), as upstream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Comparison",
    "allclose",
    "ratio_allclose",
    "ratio_reldiff",
    "topk_pair_compare",
    "topk_selection_compare",
    "topk_prefix_contract",
    "paired_values",
]


@dataclass(frozen=True)
class Comparison:
    """Outcome of one comparison.

    max_rel_err is max |a-e| / |e| over points with e != 0 (for `ratio_reldiff`, the largest
    rdiff); frac_out_of_tol is the fraction of compared points that failed their test.
    """

    passed: bool
    max_abs_err: float
    max_rel_err: float
    frac_out_of_tol: float
    message: str

    def __bool__(self) -> bool:
        return self.passed


def _fail(message: str) -> Comparison:
    return Comparison(False, math.inf, math.inf, 1.0, message)


def _errors(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, float, float]:
    diff = np.abs(a - e)
    max_abs = float(diff.max()) if diff.size else 0.0
    nz = e != 0
    max_rel = float((diff[nz] / np.abs(e[nz])).max()) if nz.any() else 0.0
    return diff, max_abs, max_rel


def _prepare(
    actual: np.ndarray,
    expected: np.ndarray,
    valid_rows: int | None,
    valid_axis: int,
    zero_tail: bool,
    name: str,
) -> tuple[np.ndarray, np.ndarray] | Comparison:
    """Shape check, valid-row slicing and the zero-tail check shared by the ratio comparators."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        return _fail(f"{name}: shape mismatch, actual {a.shape} vs expected {e.shape}")
    a = a.astype(np.float64)
    e = e.astype(np.float64)
    if valid_rows is not None:
        n = a.shape[valid_axis]
        if not 0 <= valid_rows <= n:
            return _fail(f"{name}: valid_rows={valid_rows} outside [0, {n}] on axis {valid_axis}")
        head = [slice(None)] * a.ndim
        head[valid_axis] = slice(0, valid_rows)
        if zero_tail:
            tail = [slice(None)] * a.ndim
            tail[valid_axis] = slice(valid_rows, None)
            nonzero = np.count_nonzero(a[tuple(tail)])
            if nonzero:
                return _fail(f"{name}: {nonzero} nonzero values in the tail past valid_rows={valid_rows}")
        a, e = a[tuple(head)], e[tuple(head)]
    elif zero_tail:
        return _fail(f"{name}: zero_tail needs valid_rows")
    bad_a, bad_e = ~np.isfinite(a), ~np.isfinite(e)
    if bad_a.any() or bad_e.any():
        return _fail(
            f"{name}: NaN/Inf present (actual {int(bad_a.sum())}, expected {int(bad_e.sum())} points)"
        )
    return a, e


def allclose(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-3, atol: float = 1e-3) -> Comparison:
    """Every point must satisfy |a - e| <= atol + rtol*|e| (torch.allclose, equal_nan=False)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape:
        return _fail(f"allclose: shape mismatch, actual {a.shape} vs expected {e.shape}")
    a = a.astype(np.float64)
    e = e.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
        ok = (a == e) | (diff <= atol + rtol * np.abs(e))
    finite = np.isfinite(diff)
    _, max_abs, max_rel = _errors(np.where(finite, a, 0.0), np.where(finite, e, 0.0))
    bad = int(ok.size - np.count_nonzero(ok))
    frac = bad / ok.size if ok.size else 0.0
    passed = bad == 0
    msg = (
        f"allclose(rtol={rtol}, atol={atol}): {bad}/{ok.size} points out of tolerance, "
        f"max |a-e| {max_abs:.3g}"
    )
    return Comparison(passed, max_abs, max_rel, frac, msg)


def ratio_allclose(
    actual: np.ndarray,
    expected: np.ndarray,
    atol: float,
    rtol: float,
    max_error_ratio: float = 0.005,
    valid_rows: int | None = None,
    zero_tail: bool = False,
    valid_axis: int = 0,
) -> Comparison:
    """Pass iff at most round(max_error_ratio * numel) points have |a - e| > atol + rtol*|e|."""
    prep = _prepare(actual, expected, valid_rows, valid_axis, zero_tail, "ratio_allclose")
    if isinstance(prep, Comparison):
        return prep
    a, e = prep
    diff, max_abs, max_rel = _errors(a, e)
    bad = int(np.count_nonzero(diff > atol + rtol * np.abs(e)))
    allowed = round(max_error_ratio * a.size)
    frac = bad / a.size if a.size else 0.0
    passed = bad <= allowed
    msg = (
        f"ratio_allclose(atol={atol}, rtol={rtol}): {bad}/{a.size} points out of tolerance "
        f"(allowed {allowed}), max |a-e| {max_abs:.3g}"
    )
    return Comparison(passed, max_abs, max_rel, frac, msg)


def ratio_reldiff(
    actual: np.ndarray,
    expected: np.ndarray,
    diff_thd: float,
    pct_thd: float,
    max_diff_hd: float = math.inf,
    valid_rows: int | None = None,
    zero_tail: bool = False,
    valid_axis: int = 0,
) -> Comparison:
    """Mixed absolute/relative test of cann-recipes-infer's `data_compare`.

    a = |act - exp|, b = max(|act|, |exp|, 2^-14/diff_thd) + 1e-9; rdiff = a below diff_thd,
    else a/b; bad when rdiff > diff_thd. Pass iff bad <= round(pct_thd * numel) and the
    largest bad rdiff < max_diff_hd.
    """
    prep = _prepare(actual, expected, valid_rows, valid_axis, zero_tail, "ratio_reldiff")
    if isinstance(prep, Comparison):
        return prep
    act, exp = prep
    a, max_abs, _ = _errors(act, exp)
    b = np.maximum(np.maximum(np.abs(act), np.abs(exp)), 2.0**-14 / diff_thd) + 1e-9
    rdiff = np.where(a < diff_thd, a, a / b)
    bad_mask = rdiff > diff_thd
    bad = int(np.count_nonzero(bad_mask))
    worst_bad = float(rdiff[bad_mask].max()) if bad else 0.0
    allowed = round(pct_thd * act.size)
    frac = bad / act.size if act.size else 0.0
    passed = bad <= allowed and (bad == 0 or worst_bad < max_diff_hd)
    max_rdiff = float(rdiff.max()) if rdiff.size else 0.0
    msg = (
        f"ratio_reldiff(diff_thd={diff_thd}, pct_thd={pct_thd}, max_diff_hd={max_diff_hd}): "
        f"{bad}/{act.size} bad points (allowed {allowed}), worst bad rdiff {worst_bad:.3g}"
    )
    return Comparison(passed, max_abs, max_rdiff, frac, msg)


def paired_values(scores: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """scores[r, idx[r, j]] as float64, with -inf where idx is -1 (the reference's pairing)."""
    scores = np.asarray(scores, dtype=np.float64)
    idx = np.asarray(idx).astype(np.int64)
    valid = idx >= 0
    if np.any(idx >= scores.shape[-1]):
        raise IndexError(f"paired_values: index past the {scores.shape[-1]} score columns")
    out = np.take_along_axis(scores, np.where(valid, idx, 0), axis=-1)
    return np.where(valid, out, -np.inf)


def _pair_failures(actual_idx: np.ndarray, expected_idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Mask of positions where indices differ and the actual values are not locally monotone."""
    mismatch = actual_idx != expected_idx
    ok_left = np.ones_like(mismatch)
    ok_right = np.ones_like(mismatch)
    ok_left[..., 1:] = vals[..., :-1] >= vals[..., 1:]
    ok_right[..., :-1] = vals[..., :-1] >= vals[..., 1:]
    return mismatch & ~(ok_left & ok_right)


def topk_pair_compare(
    actual_idx: np.ndarray, expected_idx: np.ndarray, actual_vals: np.ndarray
) -> Comparison:
    """The reference's top-k index check, blind spot included (do not rely on it alone).

    Along the last axis, where actual and expected indices differ at i, the actual paired
    values must satisfy vals[i-1] >= vals[i] >= vals[i+1] (exactly, no tolerance). Matching
    positions always pass. Expected values are never consulted.
    """
    a = np.asarray(actual_idx)
    e = np.asarray(expected_idx)
    v = np.asarray(actual_vals, dtype=np.float64)
    if a.shape != e.shape or a.shape != v.shape:
        return _fail(f"topk_pair_compare: shapes differ: {a.shape}, {e.shape}, {v.shape}")
    failures = _pair_failures(a, e, v)
    bad = int(np.count_nonzero(failures))
    mism = int(np.count_nonzero(a != e))
    frac = bad / a.size if a.size else 0.0
    msg = f"topk_pair_compare: {mism} index mismatches, {bad} not explained by a tie swap"
    return Comparison(bad == 0, 0.0, 0.0, frac, msg)


def topk_selection_compare(
    actual_idx: np.ndarray,
    scores: np.ndarray,
    expected_idx: np.ndarray,
    atol: float = 0.0,
    rtol: float = 0.0,
) -> Comparison:
    """`topk_pair_compare` plus a check of *what* was selected (docs/runtime-semantics.md §20.3).

    Per row, on `scores` (usually the kernel's own score output): the actual selection must
    not repeat an index, must select as many entries (non -1) as the golden, and its sorted
    selected scores must equal the golden selection's sorted scores within atol + rtol*|e|
    (exact by default: both are read from the same score tensor, so only tie choices differ).
    """
    a = np.asarray(actual_idx).astype(np.int64)
    e = np.asarray(expected_idx).astype(np.int64)
    if a.shape != e.shape or a.ndim != 2 or np.shape(scores)[0] != a.shape[0]:
        return _fail(
            f"topk_selection_compare: shapes differ: {a.shape}, {e.shape}, scores {np.shape(scores)}"
        )
    try:
        va = paired_values(scores, a)
        ve = paired_values(scores, e)
    except IndexError as err:
        return _fail(f"topk_selection_compare: {err}")
    pair_bad = _pair_failures(a, e, va).any(axis=-1)
    count_bad = (a >= 0).sum(axis=-1) != (e >= 0).sum(axis=-1)
    srt = np.sort(np.where(a >= 0, a, -1 - np.arange(a.shape[1])), axis=-1)
    dup_bad = (srt[:, 1:] == srt[:, :-1]).any(axis=-1)
    sa = -np.sort(-va, axis=-1)
    se = -np.sort(-ve, axis=-1)
    both = np.isfinite(sa) & np.isfinite(se)
    with np.errstate(invalid="ignore"):
        diff = np.where(both, np.abs(sa - se), np.where(sa == se, 0.0, np.inf))
    set_bad = (diff > atol + rtol * np.where(both, np.abs(se), 0.0)).any(axis=-1)
    row_bad = pair_bad | count_bad | dup_bad | set_bad
    finite = diff[np.isfinite(diff)]
    max_abs = float(finite.max()) if finite.size else (math.inf if diff.size else 0.0)
    if np.isinf(diff).any():
        max_abs = math.inf
    nbad = int(row_bad.sum())
    parts = [
        f"{int(k.sum())} rows {what}"
        for k, what in (
            (set_bad, "select a different score multiset than the golden"),
            (count_bad, "select a different number of entries"),
            (dup_bad, "repeat an index"),
            (pair_bad, "fail topk_pair_compare"),
        )
        if k.any()
    ]
    msg = "topk_selection_compare: " + ("; ".join(parts) if parts else f"{a.shape[0]} rows match")
    if nbad:
        msg += f" (first bad row {int(np.flatnonzero(row_bad)[0])})"
    return Comparison(nbad == 0, max_abs, 0.0, nbad / a.shape[0] if a.shape[0] else 0.0, msg)


def topk_prefix_contract(
    actual_idx: np.ndarray, visible: np.ndarray, num_active: int | None = None, topk_cap: int | None = None
) -> Comparison:
    """The indexer's output contract (docs/runtime-semantics.md §20.2, the prefix contract).

    Row t < num_active: its first v = min(visible[t], topk_cap) entries are v distinct values
    in [0, visible[t]) and the rest is -1. Rows t >= num_active are all -1.
    """
    a = np.asarray(actual_idx).astype(np.int64)
    vis = np.asarray(visible).astype(np.int64).reshape(-1)
    rows, width = a.shape
    if vis.shape[0] != rows:
        return _fail(f"topk_prefix_contract: {vis.shape[0]} visible counts for {rows} rows")
    n = rows if num_active is None else int(num_active)
    cap = width if topk_cap is None else min(int(topk_cap), width)
    v = np.where(np.arange(rows) < n, np.minimum(vis, cap), 0)
    col = np.arange(width)[None, :]
    in_prefix = col < v[:, None]
    prefix_ok = ~in_prefix | ((a >= 0) & (a < vis[:, None]))
    tail_ok = in_prefix | (a == -1)
    srt = np.sort(np.where(in_prefix, a, -1 - col), axis=-1)
    distinct = ~(srt[:, 1:] == srt[:, :-1]).any(axis=-1)
    row_ok = prefix_ok.all(axis=-1) & tail_ok.all(axis=-1) & distinct
    nbad = int((~row_ok).sum())
    msg = "topk_prefix_contract: " + (
        f"{nbad} rows break the contract (first {int(np.flatnonzero(~row_ok)[0])})" if nbad else "ok"
    )
    return Comparison(nbad == 0, 0.0, 0.0, nbad / rows if rows else 0.0, msg)
