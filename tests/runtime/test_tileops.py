"""Tests for runtime.tileops: bit-exact bf16, casts, dtype discipline, matmul trees, sorting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import tileops as T


def bits(x: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(x, np.float32).view(np.uint32)]


def from_bits(*words: int) -> np.ndarray:
    return np.array(words, dtype=np.uint32).view(np.float32)


# ------------------------------------------------------------------------------ bf16


# (input word, RNE result, round-half-away result), worked out by hand on the 16 dropped bits.
BF16_CASES = [
    (0x3F808000, 0x3F800000, 0x3F810000),  # 1 + 2^-8: tie, LSB 0 stays (even) / away rounds up
    (0x3F818000, 0x3F820000, 0x3F820000),  # 1 + 3*2^-8: tie, LSB 1 -> up to even
    (0x3F808001, 0x3F810000, 0x3F810000),  # just above the tie
    (0x3F807FFF, 0x3F800000, 0x3F800000),  # just below the tie
    (0xBF808000, 0xBF800000, 0xBF810000),  # negative tie: magnitude rounds like the positive
    (0xBF818000, 0xBF820000, 0xBF820000),
    (0x3FFF8000, 0x40000000, 0x40000000),  # carry into the exponent: 1.99609375 -> 2
    (0x7F7F7FFF, 0x7F7F0000, 0x7F7F0000),  # below max bf16's half ulp
    (0x7F7F8000, 0x7F800000, 0x7F800000),  # tie above max bf16 (odd LSB) -> inf
    (0x7F7FFFFF, 0x7F800000, 0x7F800000),  # max fp32 -> inf
    (0x00008000, 0x00000000, 0x00010000),  # subnormal tie at the smallest bf16 subnormal
    (0x00018000, 0x00020000, 0x00020000),
    (0x80000000, 0x80000000, 0x80000000),  # -0 stays -0
    (0x7F800000, 0x7F800000, 0x7F800000),  # inf
    (0xFF800000, 0xFF800000, 0xFF800000),
]


@pytest.mark.parametrize(("word", "rne", "away"), BF16_CASES)
def test_bf16_hand_computed_bit_patterns(word: int, rne: int, away: int) -> None:
    x = from_bits(word)
    assert bits(T.to_bf16(x)) == [rne]
    assert bits(T.bf16_round_half_away(x)) == [away]
    assert bits(T.cast(x, T.BF16, "rint")) == [rne]
    assert bits(T.cast(x, T.BF16, "round")) == [away]


def test_bf16_ties_to_even_in_decimal() -> None:
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], np.float32)
    np.testing.assert_array_equal(T.to_bf16(x), np.array([1.0, 1 + 2**-6, -1.0], np.float32))
    np.testing.assert_array_equal(T.bf16_round_half_away(x), np.array([1 + 2**-7, 1 + 2**-6, -(1 + 2**-7)]))
    assert T.to_bf16(x).dtype == np.float32


def test_bf16_nan_stays_nan_even_with_a_low_payload() -> None:
    # 0x7F800001 would become inf if NaN were rounded like a number.
    out = T.to_bf16(from_bits(0x7F800001, 0xFFC00001, 0x7FC00000))
    assert np.isnan(out).all()
    assert bits(out)[1] >> 31 == 1  # sign kept
    assert T.is_bf16_representable(out)


def test_bf16_from_float64_avoids_double_rounding() -> None:
    # 1 + 2^-8 + 2^-40 rounds to the fp32 tie 1 + 2^-8 first; a second RNE would give 1.0.
    x = np.array([1 + 2**-8 + 2**-40, 1 + 2**-8 - 2**-40], np.float64)
    np.testing.assert_array_equal(T.to_bf16(x), np.array([1 + 2**-7, 1.0], np.float32))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64))
def test_bf16_rne_matches_nearest_even_definition(words: list[int]) -> None:
    x = from_bits(*words)
    finite = np.isfinite(x)
    out = T.to_bf16(x)
    assert T.is_bf16_representable(out)
    # Definition: the two bf16 neighbours by truncation; pick the nearer, ties to even LSB.
    u = x.view(np.uint32)
    with np.errstate(invalid="ignore", over="ignore"):  # signalling NaNs widen with a flag
        lo = (u & 0xFFFF0000).view(np.float32).astype(np.float64)
        hi = ((u & 0xFFFF0000) + 0x10000).astype(np.uint32).view(np.float32).astype(np.float64)
        xv = x.astype(np.float64)
        d_lo, d_hi = np.abs(xv - lo), np.abs(hi - xv)
        even_lo = ((u >> 16) & 1) == 0
        want = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(even_lo, lo, hi)))
    np.testing.assert_array_equal(out[finite].astype(np.float64), want[finite])
    assert np.isnan(out[np.isnan(x)]).all()


# ------------------------------------------------------------------------------ cast


def test_cast_float_to_int8_modes_and_saturation() -> None:
    x = np.array([2.5, -2.5, 1.7, -1.7, 0.5, 300.0, -300.0, np.nan], np.float32)
    want = {
        "rint": [2, -2, 2, -2, 0, 127, -128, 0],
        "round": [3, -3, 2, -2, 1, 127, -128, 0],
        "floor": [2, -3, 1, -2, 0, 127, -128, 0],
        "ceil": [3, -2, 2, -1, 1, 127, -128, 0],
        "trunc": [2, -2, 1, -1, 0, 127, -128, 0],
    }
    for mode, expected in want.items():
        out = T.cast(x, T.INT8, mode)
        assert out.dtype == np.int8
        assert out.tolist() == expected, mode


def test_cast_fp32_to_fp16_directed_rounding() -> None:
    tie = 1 + 2**-11  # halfway between 1 and 1 + 2^-10 in fp16
    x = np.array([tie, -tie, 1 + 3 * 2**-11], np.float32)
    up, down = 1 + 2**-10, 1.0
    want = {
        "rint": [down, -down, 1 + 2 * 2**-10],
        "round": [up, -up, 1 + 2 * 2**-10],
        "floor": [down, -up, up],
        "ceil": [up, -down, 1 + 2 * 2**-10],
        "trunc": [down, -down, up],
    }
    for mode, expected in want.items():
        out = T.cast(x, T.FP16, mode)
        assert out.dtype == np.float16
        assert out.astype(np.float64).tolist() == expected, mode


def test_cast_bf16_directed_modes() -> None:
    x = from_bits(0x3F80C000, 0xBF80C000)  # 1.0 + 0.75 ulp(bf16), and its negative
    assert bits(T.cast(x, T.BF16, "trunc")) == [0x3F800000, 0xBF800000]
    assert bits(T.cast(x, T.BF16, "floor")) == [0x3F800000, 0xBF810000]
    assert bits(T.cast(x, T.BF16, "ceil")) == [0x3F810000, 0xBF800000]


def test_cast_int_widening_and_narrowing() -> None:
    q = np.array([-200, -128, 5, 127, 70000], np.int32)
    assert T.cast(q, T.INT8).tolist() == [-128, -128, 5, 127, 127]
    assert T.cast(q, T.FP16, "round").dtype == np.float16
    assert T.cast(np.array([16777217], np.int32), T.FP32).tolist() == [16777216.0]
    with pytest.raises(ValueError, match="rounding mode"):
        T.cast(q, T.FP32, "nearest")


# ------------------------------------------------------------------ dtype discipline


def test_no_implicit_promotion() -> None:
    a32 = np.ones((2, 2), np.float32)
    a16 = np.ones((2, 2), np.float16)
    with pytest.raises(TypeError, match="no implicit promotion"):
        T.add(a32, a16)
    with pytest.raises(TypeError, match="no implicit promotion"):
        T.matmul(a32, a16)
    with pytest.raises(TypeError, match="non-integral"):
        T.add(np.ones(2, np.int8), 1.5)
    with pytest.raises(TypeError, match="floating-point"):
        T.exp(np.ones(2, np.int32))
    assert T.mul(a16, 0.1).dtype == np.float16  # scalar form takes the tile's dtype
    assert T.sub(1.0, a32).dtype == np.float32
    assert T.add(np.ones(2, np.int32), np.int64(3)).dtype == np.int32


def test_elementwise_values() -> None:
    x = np.array([[-100.0, -1.0, 0.0, 2.0, 100.0]], np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        s = T.sigmoid(x)  # e^100 overflows inside; the op must absorb it
    np.testing.assert_allclose(s, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=1e-30)
    np.testing.assert_array_equal(T.relu(x), np.maximum(x, 0))
    np.testing.assert_allclose(T.silu(x), x * s, rtol=1e-6)
    np.testing.assert_allclose(T.rsqrt(np.array([4.0, 16.0], np.float32)), [0.5, 0.25])
    np.testing.assert_array_equal(T.recip(np.array([4.0], np.float32)), [0.25])
    np.testing.assert_array_equal(T.abs(x), np.abs(x))
    np.testing.assert_array_equal(T.neg(x), -x)
    assert T.div(x, 2.0).dtype == np.float32
    np.testing.assert_array_equal(T.maximum(x, 1.0), np.maximum(x, 1.0))
    np.testing.assert_array_equal(T.minimum(x, 1.0), np.minimum(x, 1.0))


def test_reductions_keep_dims_and_expand_ops() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert T.row_sum(x).shape == (3, 1)
    assert T.row_max(x).tolist() == [[3.0], [7.0], [11.0]]
    assert T.row_min(x).tolist() == [[0.0], [4.0], [8.0]]
    assert T.col_sum(x).tolist() == [[12.0, 15.0, 18.0, 21.0]]
    assert T.col_max(x).shape == (1, 4)
    col = T.row_max(x)
    np.testing.assert_array_equal(T.row_expand_sub(x, col), x - col)
    np.testing.assert_array_equal(T.row_expand_div(x, col), x / col)
    np.testing.assert_array_equal(T.row_expand_mul(x, col), x * col)
    np.testing.assert_array_equal(T.row_expand_add(x, col), x + col)
    np.testing.assert_array_equal(T.col_expand_mul(x, T.col_sum(x)), x * x.sum(0))
    assert T.col_expand(T.col_sum(x), 5).shape == (5, 4)
    with pytest.raises(ValueError, match="shape"):
        T.row_expand_mul(x, T.col_sum(x))


def test_creation_ops() -> None:
    assert T.full((2, 3), 1 + 2**-8, T.BF16).tolist() == [[1.0] * 3] * 2
    assert T.full(4, 7, T.INT8).dtype == np.int8
    assert T.zeros((2, 2), T.INT32).dtype == np.int32
    np.testing.assert_array_equal(T.arange(5, (1, 4), T.UINT32), [[5, 6, 7, 8]])
    assert T.arange(0, (2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_gathers() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[3, 0], [1, 1], [0, 2]], np.int32)
    assert T.gather(x, idx).tolist() == [[3.0, 0.0], [5.0, 5.0], [8.0, 10.0]]
    assert T.gather(x, np.array([[1]], np.int32)).tolist() == [[1.0], [5.0], [9.0]]
    with pytest.raises(IndexError):
        T.gather(x, np.array([[4]], np.int32))
    out = T.gather_rows(x, np.array([2, -1, 0]), fill=0.0)
    assert out.tolist() == [[8, 9, 10, 11], [0, 0, 0, 0], [0, 1, 2, 3]]
    with pytest.raises(IndexError):
        T.gather_rows(x, np.array([-1]))


def test_quant_int8_rows() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    x[3] = 0.0
    q, s = T.quant_int8_rows(x)
    assert q.dtype == np.int8 and s.shape == (8, 1) and s.dtype == np.float32
    amax = np.abs(x).max(axis=1)
    assert (np.abs(q).max(axis=1)[amax > 0] == 127).all()
    assert (q[3] == 0).all() and s[3, 0] == np.float32(1) / (np.float32(127) / np.float32(1e-4))
    sq = np.float32(127) / np.maximum(amax, np.float32(1e-4)).astype(np.float32)
    np.testing.assert_array_equal(q, np.rint(x * sq[:, None]).astype(np.int8))
    np.testing.assert_allclose(T.dequant_rows(q, s), x, atol=float(amax.max()) / 127)
    _, s_mul = T.quant_int8_rows(x, scale_form="mul")
    np.testing.assert_allclose(s_mul, s, rtol=2e-7)


# ---------------------------------------------------------------------------- matmul


def test_int8_matmul_accumulates_exactly_in_int32() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (16, 4096)).astype(np.int8)
    b = rng.integers(-128, 128, (4096, 32)).astype(np.int8)
    a[0] = -128
    b[:, 0] = -128  # 4096 * 16384 = 2^26: exact, no fp32 rounding
    out = T.matmul(a, b)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    acc = T.matmul_acc(out, a, b)
    np.testing.assert_array_equal(acc, 2 * (a.astype(np.int64) @ b.astype(np.int64)))
    with pytest.raises(TypeError, match="accumulator"):
        T.matmul(a, b, out_dtype=T.FP32)


def test_int8_matmul_is_exact_past_fp32s_integers_and_wraps_like_int32() -> None:
    # 1024 products of -128 * -128 and one of 1 * 1: 2^24 + 1, which no fp32 holds. The
    # fp32 GEMM of the int8 path must split K at 1024 (one product more would round).
    a = np.full((2, 1025), -128, np.int8)
    a[:, -1] = 1
    b = np.ascontiguousarray(a.T)
    assert T.matmul(a, b).tolist() == [[2**24 + 1] * 2] * 2
    assert T.matmul(a, np.ascontiguousarray(a), b_trans=True).tolist() == [[2**24 + 1] * 2] * 2
    rng = np.random.default_rng(5)  # batched, odd K, both layouts of b
    a3 = rng.integers(-128, 128, (3, 4, 2500)).astype(np.int8)
    b3 = rng.integers(-128, 128, (3, 5, 2500)).astype(np.int8)
    want = np.einsum("bmk,bnk->bmn", a3.astype(np.int64), b3.astype(np.int64))
    np.testing.assert_array_equal(T.matmul(a3, b3, b_trans=True), want)
    np.testing.assert_array_equal(T.matmul(a3, np.swapaxes(b3, 1, 2).copy()), want)
    # 131073 * 16384 = 2^31 + 2^14: past int32, wrapped as the int32 register wraps.
    big = np.full((1, 131073), -128, np.int8)
    assert T.matmul(big, big.T).tolist() == [[-(2**31) + 2**14]]
    near = np.array([[2**31 - 2]], np.int32)  # and so does the accumulation of matmul_acc
    assert T.matmul_acc(near, big[:, :1], big[:, :1].T).tolist() == [[-(2**31) + 2**14 - 2]]
    assert T.matmul(np.zeros((2, 0), np.int8), np.zeros((0, 3), np.int8)).tolist() == [[0] * 3] * 2


def test_float_matmul_transposes_and_out_dtype() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((8, 32)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    ref = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(T.matmul(a, b, b_trans=True), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(T.matmul(a.T.copy(), b, a_trans=True, b_trans=True), ref, rtol=1e-5, atol=1e-5)
    out = T.matmul(a, b, b_trans=True, out_dtype=T.BF16)
    assert out.dtype == np.float32 and T.is_bf16_representable(out)
    with pytest.raises(TypeError, match="accumulator"):
        T.matmul_acc(np.zeros((8, 16), np.float16), a, b, b_trans=True)


def test_cube_emulation_is_the_explicit_group_fold() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = rng.standard_normal((64, 3)).astype(np.float32)
    got = T.matmul(a, b, k_group=4)
    for i in range(4):
        for j in range(3):
            acc = np.float32(0)
            for g in range(16):
                s = 0.0  # Python float is float64; each product of fp32 values is exact there
                for kk in range(4 * g, 4 * g + 4):
                    s += float(a[i, kk]) * float(b[kk, j])
                acc = np.float32(float(acc) + s)
            assert got[i, j] == acc
    # Chunked accumulation continues the same fold: matmul + matmul_acc == one matmul.
    first = T.matmul(a[:, :32], b[:32], k_group=4)
    assert np.array_equal(T.matmul_acc(first, a[:, 32:], b[32:], k_group=4), got)


# ---------------------------------------------------------------------------- sorting


def ramp(n: int) -> np.ndarray:
    return T.arange(0, (1, n), T.UINT32)


def unpack(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return T.gather_lanes(pairs, "P0101")[0], T.gather_lanes(pairs, "P1010", T.INT32)[0]


def test_sort32_sorts_runs_descending_with_ties_by_lower_index() -> None:
    rng = np.random.default_rng(4)
    v = rng.integers(0, 6, (1, 128)).astype(np.float32)  # many ties
    vals, idx = unpack(T.sort32(v, ramp(128)))
    for r in range(4):
        run = slice(32 * r, 32 * r + 32)
        want = 32 * r + np.argsort(-v[0, run], kind="stable")
        np.testing.assert_array_equal(idx[run], want)
        np.testing.assert_array_equal(vals[run], v[0, want])
    with pytest.raises(ValueError, match="multiple of 32"):
        T.sort32(v[:, :40], ramp(40))


def test_sort32_keeps_the_index_payload_as_raw_bits() -> None:
    v = np.array([[1.0] * 32], np.float32)
    idx = np.arange(32, dtype=np.uint32)[None, :] * 1000 + 7
    pairs = T.sort32(v, idx)
    assert pairs.dtype == np.float32 and pairs.shape == (1, 64)
    np.testing.assert_array_equal(pairs[:, 1::2].view(np.uint32), idx)  # bits, not float values
    np.testing.assert_array_equal(T.gather_lanes(pairs, "P1010", T.INT32), idx.astype(np.int32))


def python_merge(lists: list[list[tuple[float, int]]]) -> list[tuple[float, int]]:
    """The hardware merge, literally: emit the largest head; equal heads go to the lower list."""
    heads = [0] * len(lists)
    out = []
    while any(h < len(lst) for h, lst in zip(heads, lists, strict=True)):
        best = None
        for i, lst in enumerate(lists):
            if heads[i] < len(lst) and (best is None or lst[heads[i]][0] > lists[best][heads[best]][0]):
                best = i
        out.append(lists[best][heads[best]])
        heads[best] += 1
    return out


@pytest.mark.parametrize("presorted", [True, False])
def test_mrgsort_is_a_four_way_merge(presorted: bool) -> None:
    rng = np.random.default_rng(5 + presorted)
    n = 512
    v = rng.integers(0, 20, (1, n)).astype(np.float32)
    pairs = (
        T.sort32(v, ramp(n)) if presorted else np.stack([v, ramp(n).view(np.float32)], -1).reshape(1, 2 * n)
    )
    out_vals, out_idx = unpack(T.mrgsort(pairs, 64))
    in_vals, in_idx = unpack(pairs)
    for rep in range(n // 128):
        lists = [
            list(zip(in_vals[s : s + 32].tolist(), in_idx[s : s + 32].tolist(), strict=True))
            for s in range(128 * rep, 128 * rep + 128, 32)
        ]
        want = python_merge(lists)
        got = list(
            zip(
                out_vals[128 * rep : 128 * rep + 128].tolist(),
                out_idx[128 * rep : 128 * rep + 128].tolist(),
                strict=True,
            )
        )
        assert got == want


def test_mrgsort_enforces_the_isa_constraints() -> None:
    pairs = T.sort32(np.zeros((1, 512), np.float32), ramp(512))  # 1024 columns
    with pytest.raises(ValueError, match=r"block_len % 64 == 0"):
        T.mrgsort(pairs, 96)
    with pytest.raises(ValueError, match=r"valid columns % \(4\*block_len\) == 0"):
        T.mrgsort(pairs, 512)  # 1024 % 2048 != 0
    with pytest.raises(ValueError, match=r"valid columns % \(4\*block_len\) == 0"):
        T.mrgsort(pairs, 64, valid_cols=640)  # 640 % 256 != 0
    with pytest.raises(ValueError, match="exactly one row"):
        T.mrgsort(np.zeros((2, 256), np.float32), 64)
    with pytest.raises(ValueError, match="repeats <= 255"):
        T.mrgsort(np.zeros((1, 256 * 256), np.float32), 64)
    big = T.sort32(np.arange(256, dtype=np.float32)[None, :], ramp(256))
    out = T.mrgsort(big, 64, valid_cols=256)  # only the first 2 runs (4 lists of 64 cols)
    np.testing.assert_array_equal(out[:, 256:], big[:, 256:])


def topk_chain(scores: np.ndarray, stages: tuple[int, ...], k: int) -> np.ndarray:
    pairs = T.sort32(scores, ramp(scores.shape[1]))
    for block_len in stages:
        pairs = T.mrgsort(pairs, block_len)
    return T.topk_from_sorted(pairs, k)[1][0]


@pytest.mark.parametrize(
    ("cap", "two_stages_correct"), [(256, True), (512, True), (768, False), (1024, False), (2048, False)]
)
def test_topk_merge_stages_vs_candidate_cap_seed_bug(cap: int, two_stages_correct: bool) -> None:
    """docs/runtime-semantics.md §18.2: sort32 + mrgsort(64, 256) sorts runs of 512 records only."""
    rng = np.random.default_rng(cap)
    row = np.full((1, 2048), T.FP32_NEG_INF, np.float32)  # 4096 columns of pairs
    row[0, :cap] = rng.standard_normal(cap).astype(np.float32)
    k = min(512, cap)  # IDX_TOPK
    want = np.argsort(-row[0].astype(np.float64), kind="stable")[:k]
    two = topk_chain(row, (64, 256), k)
    assert np.array_equal(two, want) is two_stages_correct
    if not two_stages_correct:
        assert set(two.tolist()) != set(want.tolist())  # a wrong selection, not a reordering
        assert two.max() < 512  # candidates past the first run were never considered
    np.testing.assert_array_equal(topk_chain(row, (64, 256, 1024), k), want)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([128, 512, 2048]))
def test_full_chain_is_a_stable_descending_sort(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    v = np.round(rng.standard_normal((1, n)), 1).astype(np.float32)  # ties
    stages = {128: (64,), 512: (64, 256), 2048: (64, 256, 1024)}[n]
    np.testing.assert_array_equal(topk_chain(v, stages, n), np.argsort(-v[0], kind="stable"))


def test_gather_lanes_rejects_unknown_patterns() -> None:
    with pytest.raises(ValueError, match="mask pattern"):
        T.gather_lanes(np.zeros((1, 4), np.float32), "P1100")
