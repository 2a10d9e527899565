"""Goldens for the MoE gate and the W8A8 experts
(upstream `gate.py`, `expert_shared.py`, `expert_routed.py`).

Used by `moe.py`; kept apart only to keep modules short.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import bf16, f32, int8_quant, mm, rsqrt, sigmoid

_F32 = np.float32


@dataclass(frozen=True)
class GateOut:
    x_norm_i8: np.ndarray  # [T, D] int8 (inactive rows are quantised too, not zeroed)
    x_norm_scale: np.ndarray  # [T, 1] fp32, inv_rms * amax / 127; 0 for inactive rows
    indices: np.ndarray  # [T, TOPK] int32 global expert ids; 0 for inactive rows
    weights: np.ndarray  # [T, TOPK] fp32; 0 for inactive rows
    scores: np.ndarray  # [T, E] fp32 sqrt(softplus(logits)), unbiased


def softplus(x: np.ndarray) -> np.ndarray:
    """fp32 max(x, 0) + log1p(exp(-|x|)): the log1p form keeps the tail below about -16."""
    x = f32(x)
    return (np.maximum(x, _F32(0)) + np.log1p(np.exp(-np.abs(x)))).astype(np.float32)


def gate_golden(
    x_mixed: np.ndarray,
    norm_w: np.ndarray,
    gate_w: np.ndarray,
    gate_bias: np.ndarray,
    layer_id: int,
    num_tokens: int,
    tid2eid: np.ndarray,
    input_ids: np.ndarray,
    *,
    topk: int = 6,
    num_hash_layers: int = 3,
    routed_scaling: float = 1.5,
    eps: float = 1e-6,
) -> GateOut:
    """Deferred-RMSNorm gate, INT8 of x, sqrtsoftplus scores and top-k routing
    (upstream `golden_gate_core`).

    Hash layers (layer_id < num_hash_layers) route by tid2eid[input_ids]; the others take the
    first `topk` of a stable descending argsort of the biased scores (ties to the lower
    expert id). Weights come from the unbiased scores, normalised and scaled by 1.5.
    """
    xf = f32(x_mixed)
    t, d = xf.shape
    n = min(max(int(num_tokens), 0), t)
    sq_sum = np.sum(xf.astype(np.float64) ** 2, axis=-1, keepdims=True).astype(np.float32)
    inv_rms = rsqrt(sq_sum * _F32(1.0 / d) + _F32(eps))
    xg = (xf * f32(norm_w)[None, :]).astype(np.float32)
    x_i8, sd = int8_quant(xg)
    x_scale = (sd * inv_rms).astype(np.float32)
    logits = (inv_rms * mm(xg, f32(gate_w).T)).astype(np.float32)
    scores = np.sqrt(softplus(logits)).astype(np.float32)
    if layer_id < num_hash_layers:
        indices = np.asarray(tid2eid)[np.asarray(input_ids)].astype(np.int32)
    else:
        biased = (scores + f32(gate_bias)[None, :]).astype(np.float32)
        indices = np.argsort(-biased, axis=-1, kind="stable")[:, :topk].astype(np.int32)
    v = np.take_along_axis(scores, indices.astype(np.int64), axis=-1)
    total = np.zeros((t, 1), np.float32)
    for k in range(topk):
        total = (total + v[:, k : k + 1]).astype(np.float32)
    weights = (v / total * _F32(routed_scaling)).astype(np.float32)
    x_scale[n:] = 0.0
    indices[n:] = 0
    weights[n:] = 0.0
    return GateOut(x_i8, x_scale, indices, weights, scores)


def dequant_weight(w_i8: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """fp32(w_i8) * scale per output channel (rows of an [out, in] weight)."""
    return (f32(w_i8) * f32(scale)[:, None]).astype(np.float32)


def swiglu_expert(
    x_i8: np.ndarray,
    x_scale: np.ndarray,
    w1: tuple[np.ndarray, np.ndarray],
    w3: tuple[np.ndarray, np.ndarray],
    w2: tuple[np.ndarray, np.ndarray],
    swiglu_limit: float = 10.0,
    row_weight: np.ndarray | None = None,
) -> np.ndarray:
    """One W8A8 SwiGLU expert on rows x_i8 [R, D] with dequant scales [R] or [R, 1]
    (upstream `golden_expert_shared` / `_routed`).

    Each weight is (int8 [out, in], per-out-channel scale). gate <= limit (one-sided), up in
    [-limit, limit], h = silu(gate) * up, requantised per row to INT8; for a routed expert the
    routing weight is folded into the row dequant scale (h_sd * w first). Returns bf16 [R, D].
    """
    x = (f32(x_i8) * f32(x_scale).reshape(-1, 1)).astype(np.float32)
    gate = mm(x, dequant_weight(*w1).T)
    up = mm(x, dequant_weight(*w3).T)
    lim = _F32(swiglu_limit)
    if swiglu_limit > 0:
        gate = np.minimum(gate, lim)
        up = np.clip(up, -lim, lim)
    h = ((gate * sigmoid(gate)).astype(np.float32) * up).astype(np.float32)
    h_i8, h_sd = int8_quant(h)
    if row_weight is not None:
        h_sd = (h_sd * f32(row_weight).reshape(-1, 1)).astype(np.float32)
    h = (f32(h_i8) * h_sd).astype(np.float32)
    return bf16(mm(h, dequant_weight(*w2).T))


def routed_expert_golden(
    recv_x: np.ndarray,
    recv_scale: np.ndarray,
    recv_weights: np.ndarray,
    recv_count: np.ndarray,
    w1: tuple[np.ndarray, np.ndarray],
    w3: tuple[np.ndarray, np.ndarray],
    w2: tuple[np.ndarray, np.ndarray],
    swiglu_limit: float = 10.0,
) -> np.ndarray:
    """recv_y [NL, RM, D] bf16 for one rank's compact receive buffers (upstream `expert_routed.py`).

    w1/w3/w2 are (int8 [NL, out, in], scale [NL, out]). Rows c >= count[e] stay 0.
    """
    nl, rm, _ = recv_x.shape
    out = np.zeros((nl, rm, w2[0].shape[1]), np.float32)
    for e in range(nl):
        c = int(np.asarray(recv_count).reshape(-1)[e])
        if c == 0:
            continue
        out[e, :c] = swiglu_expert(
            recv_x[e, :c],
            recv_scale[e, :c],
            (w1[0][e], w1[1][e]),
            (w3[0][e], w3[1][e]),
            (w2[0][e], w2[1][e]),
            swiglu_limit,
            row_weight=recv_weights[e, :c],
        )
    return out
