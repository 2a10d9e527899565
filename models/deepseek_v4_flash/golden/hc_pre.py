"""Golden for hc_pre, the hyper-connection pre-mix (upstream `hc_pre.py`).

The reduction trees are explicit parameters, because a golden must mirror the kernel's tree
(rule R5, docs/runtime-semantics.md §17.3-§17.4) and the kernels come in two forms:

- **Linear (split-K).** K = HC_DIM is cut into `splits` ascending splits. Inside a split the
  A2/A3 cube is emulated: groups of `k_group` consecutive k are summed in float64 (products of
  fp32 values are exact there) and added to an fp32 accumulator with one rounding per group,
  in ascending k. The split partials are then folded in fp32 from zero in ascending split
  order: ((0 + p0) + p1) + p2) + p3. This is what the fixed kernel's reduce computes; the
  pre-fix FP32 atomics summed in completion order instead.
- **RMS.** The squares (fp32) are summed per `rms_chunk` columns in float64 and rounded to
  fp32 once per chunk (NumPy cannot reproduce torch's fp32 order inside a chunk). The chunk
  sums are folded in ascending order: with `rms_splits=1` into one accumulator (the "separate"
  kernel and upstream golden), with 16 into 16 partials of consecutive chunks that are then
  folded ascending (the fused kernel).
- **Sinkhorn** column sums are sequential ((r0+r1)+r2)+r3 by default, or paired
  (r0+r1)+(r2+r3) as in the kernel (`colsum="paired"`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import Tolerance, bf16, f32, rsqrt, sigmoid

_F32 = np.float32

HC_SCALE = (0.075997, 0.032345, 0.226238)  # real layer 8
HC_BASE = (5.9169, -3.6226, -2.9309, -3.3122, -3.9082, -0.9381, -3.3257, -2.5300, 2.0703, -2.5724,
           0.1430, -3.9461, -3.8868, 3.4623, -3.3815, -2.6056, -2.7185, -2.4849, 2.0391, -0.4999,
           -3.5994, -2.7508, -3.3496, 3.1573)  # fmt: skip


@dataclass(frozen=True)
class HcPreConfig:
    """hc_pre sizes and reduction tree. Defaults are the reference's (T=128 decode)."""

    T: int = 128
    D: int = 4096
    hc_mult: int = 4
    splits: int = 4  # LINEAR_OK
    k_chunk: int = 256  # LINEAR_K_CHUNK of the kernel's matmul_acc loop (shape constraint only)
    k_group: int = 4  # cube accumulation granularity (cube_acc_k)
    rms_chunk: int = 512  # RMS_K_CHUNK
    rms_splits: int = 1  # 1: one accumulator (separate kernel); 16: the fused kernel's tree
    sinkhorn_iters: int = 20
    norm_eps: float = 1e-6
    hc_eps: float = 1e-6
    colsum: str = "sequential"

    @property
    def hc_dim(self) -> int:
        return self.hc_mult * self.D

    @property
    def mix(self) -> int:
        return (2 + self.hc_mult) * self.hc_mult

    def validate(self) -> None:
        """The kernel's shape asserts (upstream's test), plus what the trees need."""
        if self.hc_mult != 4:
            raise ValueError("hc_pre is hard-wired to hc_mult = 4")
        if self.T % 8:
            raise ValueError(f"T % 8 == 0 violated (T={self.T})")
        if self.hc_dim % (self.splits * self.k_chunk):
            raise ValueError("HC_DIM % (splits * k_chunk) == 0 violated")
        if self.k_chunk % self.k_group or self.hc_dim % self.rms_chunk:
            raise ValueError("k_chunk % k_group == 0 and HC_DIM % rms_chunk == 0 required")
        if (self.hc_dim // self.rms_chunk) % self.rms_splits:
            raise ValueError("the RMS chunk count must divide evenly into rms_splits")


CONFIG = HcPreConfig()
REDUCED = HcPreConfig(T=16, D=256, rms_chunk=128)

TOLERANCES = {
    "x_mixed": Tolerance("ratio_allclose", {"atol": 1e-4, "rtol": 1 / 128}),
    "post": Tolerance("ratio_allclose", {"atol": 2.5e-5, "rtol": 5e-3}),
    "comb": Tolerance("ratio_allclose", {"atol": 2.5e-5, "rtol": 5e-3}),
}


def make_inputs(cfg: HcPreConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray]:
    """The upstream test's fixture: x = N*0.05 [T,4,D], hc_fn = N*0.0509 [24, HC_DIM], layer-8
    scale/base.

    At reduced HC_DIM the hc_fn std grows by sqrt(16384/HC_DIM), so the mixes (and so post and
    comb) keep the magnitudes of the full layer.
    """
    cfg.validate()
    rng = np.random.default_rng(seed)
    fan_in_scale = np.sqrt(16384 / cfg.hc_dim)  # keeps |mixes| of the full size at reduced sizes
    return {
        "x": f32(rng.standard_normal((cfg.T, cfg.hc_mult, cfg.D)) * 0.05),
        "hc_fn": f32(rng.standard_normal((cfg.mix, cfg.hc_dim)) * (0.0509 * fan_in_scale)),
        "hc_scale": f32(HC_SCALE),
        "hc_base": f32(HC_BASE),
    }


def fold_ascending(parts: np.ndarray) -> np.ndarray:
    """fp32 fold from zero over axis 0 in ascending order: ((0 + p0) + p1) + ..."""
    total = np.zeros(parts.shape[1:], np.float32)
    for p in parts:
        total = (total + f32(p)).astype(np.float32)
    return total


def linear_partials(x_flat: np.ndarray, w: np.ndarray, splits: int, k_group: int) -> np.ndarray:
    """Per-split cube partials [splits, T, M] of x_flat [T, K] @ w[M, K]^T (see module doc)."""
    t, k = x_flat.shape
    m = w.shape[0]
    groups = k // splits // k_group
    xs = np.asarray(x_flat, np.float64).reshape(t, splits, groups, k_group).transpose(1, 2, 0, 3)
    ws = np.asarray(w, np.float64).reshape(m, splits, groups, k_group).transpose(1, 2, 0, 3)
    acc = np.zeros((splits, t, m), np.float32)
    block = max(1, (1 << 20) // (splits * t * m))
    for g0 in range(0, groups, block):
        xb = xs[:, g0 : g0 + block, :, None, :]  # [S, G, T, 1, k]
        wb = ws[:, g0 : g0 + block, None, :, :]  # [S, G, 1, M, k]
        sums = xb[..., 0] * wb[..., 0]  # ((p0 + p1) + p2) + p3, in float64
        for j in range(1, k_group):
            sums += xb[..., j] * wb[..., j]
        for g in range(sums.shape[1]):
            acc = (acc.astype(np.float64) + sums[:, g]).astype(np.float32)
    return acc


def rms_sum(x_flat: np.ndarray, rms_chunk: int, rms_splits: int = 1) -> np.ndarray:
    """Sum of squares per row [T] with the chunked tree of the module doc."""
    t, k = x_flat.shape
    sq = (f32(x_flat) * f32(x_flat)).astype(np.float32)
    chunks = sq.reshape(t, k // rms_chunk, rms_chunk).astype(np.float64).sum(axis=-1).astype(np.float32)
    per = chunks.shape[1] // rms_splits
    partials = np.stack([fold_ascending(chunks[:, s * per : (s + 1) * per].T) for s in range(rms_splits)])
    return fold_ascending(partials)


def _sum4(v: np.ndarray, axis: int, paired: bool = False) -> np.ndarray:
    """Sum of 4 along `axis` in fp32, sequential ((a+b)+c)+d or paired (a+b)+(c+d)."""
    a, b, c, d = (np.take(v, i, axis=axis) for i in range(4))
    if paired:
        return np.expand_dims(((a + b) + (c + d)).astype(np.float32), axis)
    return np.expand_dims((((a + b) + c) + d).astype(np.float32), axis)


def sinkhorn(logits: np.ndarray, iters: int, eps: float, colsum: str = "sequential") -> np.ndarray:
    """Row softmax + eps, then column normalisation, then (iters-1) x (rows, columns) [.., 4, 4]."""
    eps32 = _F32(eps)
    paired = colsum == "paired"
    z = f32(logits)
    e = np.exp((z - np.max(z, axis=-1, keepdims=True)).astype(np.float32))
    c = (e / _sum4(e, -1) + eps32).astype(np.float32)
    c = (c / (_sum4(c, -2, paired) + eps32)).astype(np.float32)
    for _ in range(iters - 1):
        c = (c / (_sum4(c, -1) + eps32)).astype(np.float32)
        c = (c / (_sum4(c, -2, paired) + eps32)).astype(np.float32)
    return c


@dataclass(frozen=True)
class HcPreOut:
    x_mixed: np.ndarray  # [T, D] bf16 values
    post: np.ndarray  # [T, 4]
    comb: np.ndarray  # [T, 16], comb[t, 4i+j] = C[i, j]
    mixes_raw: np.ndarray  # [T, 24] before the 1/rms scale: the split-K reduction's result
    sq_sum: np.ndarray  # [T] the RMS reduction's result


def hc_pre_golden(
    x: np.ndarray,
    hc_fn: np.ndarray,
    hc_scale: np.ndarray,
    hc_base: np.ndarray,
    *,
    splits: int = 4,
    k_group: int = 4,
    rms_chunk: int = 512,
    rms_splits: int = 1,
    sinkhorn_iters: int = 20,
    norm_eps: float = 1e-6,
    hc_eps: float = 1e-6,
    colsum: str = "sequential",
) -> HcPreOut:
    """hc_pre on x [T, 4, D] in upstream's order, with the reduction tree given by the keyword arguments."""
    t, h, d = x.shape
    if h != 4:
        raise ValueError("hc_pre is hard-wired to hc_mult = 4")
    x_flat = f32(x).reshape(t, h * d)
    mixes_raw = fold_ascending(linear_partials(x_flat, hc_fn, splits, k_group))
    sq_sum = rms_sum(x_flat, rms_chunk, rms_splits)
    r = rsqrt((sq_sum * _F32(1.0 / (h * d))).astype(np.float32) + _F32(norm_eps))
    mixes = (mixes_raw * r[:, None]).astype(np.float32)
    s = f32(hc_scale)
    base = f32(hc_base)
    pre = (sigmoid(mixes[:, 0:4] * s[0] + base[0:4]) + _F32(hc_eps)).astype(np.float32)
    post = (_F32(2) * sigmoid(mixes[:, 4:8] * s[1] + base[4:8])).astype(np.float32)
    logits = (mixes[:, 8:24] * s[2] + base[8:24]).astype(np.float32).reshape(t, 4, 4)
    comb = sinkhorn(logits, sinkhorn_iters, hc_eps, colsum).reshape(t, 16)
    xs = f32(x)
    p = [pre[:, i : i + 1] for i in range(4)]
    y = ((xs[:, 0] * p[0] + xs[:, 1] * p[1]) + (xs[:, 2] * p[2] + xs[:, 3] * p[3])).astype(np.float32)
    return HcPreOut(bf16(y), post, comb, mixes_raw, sq_sum)


def golden(inputs: dict[str, np.ndarray], cfg: HcPreConfig = CONFIG) -> dict[str, np.ndarray]:
    """Outputs named as in TOLERANCES, computed with the tree of `cfg`."""
    out = hc_pre_golden(
        inputs["x"],
        inputs["hc_fn"],
        inputs["hc_scale"],
        inputs["hc_base"],
        splits=cfg.splits,
        k_group=cfg.k_group,
        rms_chunk=cfg.rms_chunk,
        rms_splits=cfg.rms_splits,
        sinkhorn_iters=cfg.sinkhorn_iters,
        norm_eps=cfg.norm_eps,
        hc_eps=cfg.hc_eps,
        colsum=cfg.colsum,
    )
    return {"x_mixed": out.x_mixed, "post": out.post, "comb": out.comb}
