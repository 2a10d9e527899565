"""Numerics shared by the DeepSeek-V4-Flash goldens (upstream `utils.py`).

The goldens deliberately do **not** use `runtime.tileops` for rounding or quantisation: a
golden that shares the implementation it checks cannot catch that implementation's bugs.
`bf16` here rounds by scaling in float64 (`np.rint` on the significand), not by the bit trick
`runtime.tileops.to_bf16` uses; a test checks the two agree on every class of input.

Conventions: "fp32 matmul" means a float32 GEMM of unspecified order (upstream's convention); the
goldens compute it in float64 and round once to fp32, the most accurate choice, which also
makes a row's result independent of the batch it is computed in. INT32 GEMMs are computed
exactly in float64 (the sums stay far below 2^53).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FP32_NEG_INF = float(np.finfo(np.float32).min)
INT8_SCALE_MAX = 127.0
INT8_AMAX_EPS = 1e-4
_BF16_MIN_QUANTUM = 2.0**-133  # spacing of bf16 subnormals
_F32 = np.float32


def f32(x: Any) -> np.ndarray:
    """Round to float32 (one rounding point)."""
    return np.asarray(x, dtype=np.float32)


def bf16(x: np.ndarray) -> np.ndarray:
    """Round fp32 values to bfloat16 (nearest, ties to even); return float32 holding them.

    The input is rounded to fp32 first (the reference casts fp32 -> bf16). 8 significant
    bits: scale each value so its quantum is 1, `np.rint` (half to even), scale back; all
    exact in float64. Overflow gives inf, NaN stays NaN.
    """
    v = np.asarray(x, dtype=np.float32).astype(np.float64)
    finite = np.isfinite(v) & (v != 0)
    _, e = np.frexp(np.where(finite, v, 1.0))
    quantum = np.maximum(np.ldexp(1.0, e - 8), _BF16_MIN_QUANTUM)
    r = np.where(finite, np.rint(v / quantum) * quantum, v)
    with np.errstate(over="ignore"):
        return r.astype(np.float32)


def mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp32 matmul of fp32 operands: float64 accumulate, one rounding to fp32."""
    return (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.float32)


def imm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact INT8 x INT8 -> INT32 matmul (float64 is exact below 2^53)."""
    out = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    return out.astype(np.int64).astype(np.int32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """fp32 logistic function."""
    x = f32(x)
    with np.errstate(over="ignore"):
        return (_F32(1) / (_F32(1) + np.exp(-x))).astype(np.float32)


def rsqrt(x: np.ndarray) -> np.ndarray:
    """fp32 1/sqrt."""
    return (_F32(1) / np.sqrt(f32(x))).astype(np.float32)


def int8_quant(v: np.ndarray, axis: int = -1, clamp: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric INT8 quantisation along `axis` (upstream `utils.int8_quant_per_row`).

    amax = max(max|v|, 1e-4); sq = 127/amax; q = round-half-even(v*sq) (the fp16 hop of the
    reference never changes |q| <= 127); returns (q int8, dequant scale 1/sq fp32, keepdims).
    `clamp` clips to +-127 first, as `_quant_w_per_output_channel_local` does.
    """
    v = f32(v)
    amax = np.maximum(np.max(np.abs(v), axis=axis, keepdims=True), _F32(INT8_AMAX_EPS))
    sq = (_F32(INT8_SCALE_MAX) / amax).astype(np.float32)
    q = np.rint((v * sq).astype(np.float32))
    if clamp:
        q = np.clip(q, -INT8_SCALE_MAX, INT8_SCALE_MAX)
    return q.astype(np.int8), (_F32(1) / sq).astype(np.float32)


def rmsnorm(x: np.ndarray, weight: np.ndarray | None, eps: float = 1e-6) -> np.ndarray:
    """fp32 x * rsqrt(mean(x^2) + eps) * weight over the last axis."""
    x = f32(x)
    ms = np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True).astype(np.float32)
    out = (x * rsqrt(ms + _F32(eps))).astype(np.float32)
    return out if weight is None else (out * f32(weight)).astype(np.float32)


def random_int8_weight(
    rng: np.random.Generator, shape: tuple[int, ...], std: float, channel_axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Plain random INT8 weights with positive per-output-channel scales
    (upstream's INT8 weights, reduced form).

    int8 values ~ N(0, 42^2) clipped to +-127 (amax near 3 sigma); scales std/42 with a 10%
    log-normal spread, so the dequantised weight has roughly the requested std.
    """
    w = np.clip(np.rint(rng.standard_normal(shape) * 42.0), -127, 127).astype(np.int8)
    scale = (std / 42.0) * np.exp(0.1 * rng.standard_normal(shape[channel_axis]))
    return w, scale.astype(np.float32)


# ----------------------------------------------------------------- RoPE (upstream `utils.py`)

ROPE_DIM = 64


def rope_inv_freq(compress_ratio: int, dim: int = ROPE_DIM) -> np.ndarray:
    """Inverse frequencies [dim/2] fp32: plain for ratio 0, YaRN (base 160000) for 4 or 128."""
    if compress_ratio == 0:
        base, orig_len = 10000.0, 0
    else:
        base, orig_len = 160000.0, 65536
    i = np.arange(dim // 2, dtype=np.float32)
    inv = (_F32(1) / np.power(_F32(base), (2 * i / _F32(dim)).astype(np.float32))).astype(np.float32)
    if orig_len:
        factor, beta_fast, beta_slow = 16.0, 32.0, 1.0
        low, high = yarn_bounds(base, orig_len, dim, beta_fast, beta_slow)
        if low == high:
            high += 0.001
        ramp = np.clip((i - low) / (high - low), 0, 1).astype(np.float32)
        smooth = _F32(1) - ramp
        inv = (inv / _F32(factor) * (_F32(1) - smooth) + inv * smooth).astype(np.float32)
    return inv


def yarn_bounds(base: float, orig_len: int, dim: int, beta_fast: float, beta_slow: float) -> tuple[int, int]:
    """YaRN correction range [low, high] over rotary dims."""

    def cd(r: float) -> float:
        return dim * math.log(orig_len / (2 * math.pi * r)) / (2 * math.log(base))

    return max(math.floor(cd(beta_fast)), 0), min(math.ceil(cd(beta_slow)), dim - 1)


def rope_tables(
    compress_ratio: int, positions: np.ndarray, dim: int = ROPE_DIM
) -> tuple[np.ndarray, np.ndarray]:
    """bf16 freqs_cos/sin [len(positions), dim]: cat(cos, cos) of position * inv_freq."""
    angle = (f32(np.asarray(positions))[:, None] * rope_inv_freq(compress_ratio, dim)[None, :]).astype(
        np.float32
    )
    cos = bf16(np.cos(angle))
    sin = bf16(np.sin(angle))
    return np.concatenate([cos, cos], axis=-1), np.concatenate([sin, sin], axis=-1)


def rope_rotate(v: np.ndarray, cos: np.ndarray, sin: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Rotate (even, odd) pairs of the last axis of v by cos/sin [..., dim/2] in fp32.

    cos/sin broadcast against v[..., ::2]. Forward: e' = e c - o s, o' = e s + o c;
    inverse: e' = e c + o s, o' = o c - e s.
    """
    v = f32(v)
    e, o = v[..., 0::2], v[..., 1::2]
    c, s = f32(cos), f32(sin)
    if inverse:
        e2, o2 = e * c + o * s, o * c - e * s
    else:
        e2, o2 = e * c - o * s, e * s + o * c
    out = np.empty_like(v)
    out[..., 0::2] = e2
    out[..., 1::2] = o2
    return out


def hadamard(n: int) -> np.ndarray:
    """Sylvester Hadamard matrix [n, n] times n^-0.5, rounded to bf16 (the indexer's)."""
    h = np.ones((1, 1), dtype=np.float64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    if h.shape[0] != n:
        raise ValueError(f"hadamard size {n} is not a power of two")
    return bf16(f32(h * n**-0.5))


# ----------------------------------------------- prefill chunks (indexer, sparse attention)


class PrefillChunk:
    """Sizes of one prefill chunk that the indexer and the CSA configs share (a mixin of their
    frozen dataclasses, which hold `T`, `compress_ratio`, `idx_topk` and `num_tokens`)."""

    @property
    def n_active(self) -> int:
        """The tokens of the chunk that are real (`num_tokens`, all `T` when None)."""
        return self.T if self.num_tokens is None else self.num_tokens

    @property
    def score_cap(self) -> int:
        """INDEXER_SCORE_CAP = 2 * T / COMPRESS_RATIO: the current chunk plus one chunk of history."""
        return 2 * max(1, self.T // self.compress_ratio)

    @property
    def topk_cap(self) -> int:
        """INDEXER_TOPK_CAP: the top-k columns the indexer can emit."""
        return min(self.idx_topk, self.score_cap)


def paged_row(index: np.ndarray, table: np.ndarray, page: int) -> np.ndarray:
    """Flat row of logical index(es) through a paged block table: table[i // page] * page + i % page."""
    index = np.asarray(index, np.int64)
    return np.asarray(table, np.int64)[index // page] * page + index % page


# --------------------------------------------------------------------------- tolerances


@dataclass(frozen=True)
class Tolerance:
    """The comparator the reference applies to one output, with its parameters.

    `valid_rows_from` names a context value (e.g. "num_tokens") passed as `valid_rows`.
    Top-k comparators need `scores=` in the context (the kernel's own score output), or for
    `topk_pair_compare` `vals=`, the values already paired with the actual indices.
    """

    comparator: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    valid_rows_from: str | None = None
    note: str = ""

    def check(self, actual: np.ndarray, expected: np.ndarray, **context: Any):
        """Run the comparator; returns a `runtime.compare.Comparison`."""
        from runtime import compare

        fn = getattr(compare, self.comparator)
        kwargs = dict(self.kwargs)
        if self.valid_rows_from is not None:
            kwargs["valid_rows"] = int(context[self.valid_rows_from])
        if self.comparator == "topk_selection_compare":
            return fn(actual, context["scores"], expected, **kwargs)
        if self.comparator == "topk_pair_compare":
            vals = context.get("vals")
            if vals is None:
                vals = compare.paired_values(context["scores"], actual)
            return fn(actual, expected, vals, **kwargs)
        return fn(actual, expected, **kwargs)


def tolerance_specs(tolerances: Mapping[str, Tolerance]) -> dict[str, dict[str, Any]]:
    """The comparators as a layer's golden adapter states them: ``{"comparator": name, **kwargs}``."""
    return {name: {"comparator": tol.comparator, **tol.kwargs} for name, tol in tolerances.items()}
