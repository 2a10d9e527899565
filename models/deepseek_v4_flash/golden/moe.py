"""Golden for the decode MoE layer across EP ranks (upstream `moe.py`).

Per rank: hc_pre -> gate (hash or biased-score top-6, W8A8 INT8 of x) -> shared expert ->
dispatch of every active route (t, k) to the rank owning its expert -> routed experts ->
combine back under r_route = t*TOPK + k -> ffn_out = bf16(((sh + y0) + y1) + ... + y5) ->
hc_post. Each routed output is rounded to bf16 before the fp32 sum (the double rounding is
part of the reference).

`dispatch_golden` builds one destination rank's receive window ([expert, source, slot]) and
the compact source-major layout the gather produces, so dispatch kernels can be checked
directly. `moe_golden` walks destination ranks one at a time through dispatch, routed
experts and the combine scatter (bounded memory at EP16); `via_buffers=False` evaluates each
route directly instead, which must give the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import hc_pre as hc_pre_mod
from ._common import Tolerance, bf16, f32, random_int8_weight
from .hc_post import hc_post_golden
from .moe_experts import gate_golden, routed_expert_golden, swiglu_expert

HC_FFN_SCALE = (0.11334, 0.035901, 0.058183)
HC_FFN_BASE = (2.4153, -2.0252, -2.0019, -2.1947, -1.5430, -3.0228, -6.8248, 0.5894, 2.1916, -7.2132,
               -3.0938, -2.1119, -3.0161, 3.3293, -3.2224, -4.0226, -2.0428, -3.3478, 3.0893, -3.4166,
               -1.8144, -3.8147, -3.1307, 1.7862)  # fmt: skip
AUX_PAD = 8  # recv_aux / recv_route row width


@dataclass(frozen=True)
class MoeConfig:
    """The moe.py test at its defaults: EP2, T=128 per rank, hash layer 0, all tokens active."""

    ep: int = 2
    T: int = 128
    D: int = 4096
    I: int = 2048  # noqa: E741 - moe_intermediate_size, named as in the reference
    n_local: int = 16
    topk: int = 6
    vocab: int = 129280
    layer_id: int = 0
    num_tokens: int | None = None  # None: T
    num_hash_layers: int = 3
    routed_scaling: float = 1.5
    swiglu_limit: float = 10.0
    balanced_routing: bool = False
    rms_chunk: int = 512  # hc_pre's RMS chunk
    weight_std: dict[str, float] = field(
        default_factory=lambda: {
            "routed_w1": 1.08e-2,
            "routed_w3": 1.10e-2,
            "routed_w2": 2.54e-2,
            "shared_w1": 7.65e-3,
            "shared_w3": 7.39e-3,
            "shared_w2": 2.39e-2,
        }
    )

    @property
    def n_experts(self) -> int:
        return self.n_local * self.ep

    @property
    def recv_max(self) -> int:
        return self.ep * self.max_per_src

    @property
    def max_per_src(self) -> int:
        return self.T

    @property
    def n_active(self) -> int:
        return self.T if self.num_tokens is None else min(max(self.num_tokens, 0), self.T)

    @property
    def hc(self) -> hc_pre_mod.HcPreConfig:
        return hc_pre_mod.HcPreConfig(T=self.T, D=self.D, rms_chunk=self.rms_chunk)

    def validate(self) -> None:
        """The sub-kernels' shape asserts (as upstream's files) and the dispatch bound."""
        e = self.n_experts
        if e % 16 or e > 256:
            raise ValueError(f"gate: E % 16 == 0 and E <= 256 violated (E={e})")
        if not (self.T <= 16 or self.T % 16 == 0):
            raise ValueError(f"expert_shared: T <= 16 or T % 16 == 0 violated (T={self.T})")
        if self.recv_max % 16:
            raise ValueError(f"expert_routed: RECV_MAX % 16 == 0 violated (RECV_MAX={self.recv_max})")
        if self.balanced_routing and (
            self.layer_id >= self.num_hash_layers or (self.ep * self.n_active * self.topk) % e
        ):
            raise ValueError("balanced routing needs a hash layer and EP*n*TOPK divisible by E")
        self.hc.validate()


CONFIG = MoeConfig()
REDUCED = MoeConfig(T=16, D=256, I=128, vocab=512, rms_chunk=128)


def gate_valid_rows(cfg: MoeConfig) -> int:
    """Rows of x_norm_i8 the kernel writes: n rounded up to 16, capped at T."""
    return min(cfg.T, -(-cfg.n_active // 16) * 16)


TOLERANCES = {
    "x_next": Tolerance("ratio_reldiff", {"diff_thd": 3e-3, "pct_thd": 0.05}),
    "x_norm_i8": Tolerance(  # outputs carry the rank axis first, so rows are axis 1
        "ratio_allclose",
        {"atol": 1, "rtol": 0, "max_error_ratio": 0.001, "valid_axis": 1},
        valid_rows_from="gate_rows",
    ),
    "x_norm_scale": Tolerance("allclose", {"rtol": 1e-3, "atol": 1e-3}),
    "weights": Tolerance("allclose", {"rtol": 1e-3, "atol": 1e-3}),
    "indices": Tolerance("topk_pair_compare", note="vals= the kernel's weights"),
    "sh": Tolerance("ratio_reldiff", {"diff_thd": 2e-3, "pct_thd": 0.01}),
    "recv_y": Tolerance("ratio_reldiff", {"diff_thd": 2e-3, "pct_thd": 0.01}),
}


def make_inputs(cfg: MoeConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray | int]:
    """The fixture of upstream `moe.py`'s test with a leading rank axis; plain random INT8 weights
    (see `_common`).

    The weight stds (and hc_ffn_fn's) are the reference's, scaled by sqrt(full fan-in /
    fan-in) so reduced sizes keep the activation magnitudes of the full layer.
    """
    cfg.validate()
    rng = np.random.default_rng(seed)
    ep, t, d, i, nl, e = cfg.ep, cfg.T, cfg.D, cfg.I, cfg.n_local, cfg.n_experts
    hc_scale = np.sqrt(16384 / cfg.hc.hc_dim)
    std = {k: v * np.sqrt((4096 / d) if k[-1] in "13" else (2048 / i)) for k, v in cfg.weight_std.items()}
    if cfg.balanced_routing:
        tid2eid = (np.arange(cfg.vocab)[:, None] * cfg.topk + np.arange(cfg.topk)[None, :]) % e
        input_ids = np.arange(ep)[:, None] * cfg.n_active + np.arange(t)[None, :]
    else:
        tid2eid = np.argsort(rng.random((cfg.vocab, e)), axis=-1)[:, : cfg.topk]
        input_ids = rng.integers(0, cfg.vocab, size=(ep, t))
    inputs: dict[str, np.ndarray | int] = {
        "x_hc": f32(rng.standard_normal((ep, t, 4, d))),
        "hc_ffn_fn": f32(rng.standard_normal((cfg.hc.mix, cfg.hc.hc_dim)) * (0.0635 * hc_scale)),
        "hc_ffn_scale": f32(HC_FFN_SCALE),
        "hc_ffn_base": f32(HC_FFN_BASE),
        "norm_w": np.ones(d, np.float32),
        "gate_w": f32(rng.standard_normal((e, d)) / np.sqrt(d)),
        "gate_bias": np.zeros(e, np.float32),
        "tid2eid": tid2eid.astype(np.int32),
        "input_ids": input_ids.astype(np.int64),
        "layer_id": cfg.layer_id,
        "num_tokens": cfg.n_active,
    }
    for name, shape in (("w1", (i, d)), ("w3", (i, d)), ("w2", (d, i))):
        per = [random_int8_weight(rng, shape, std[f"routed_{name}"]) for _ in range(ep * nl)]
        inputs[f"routed_{name}"] = np.stack([w for w, _ in per]).reshape(ep, nl, *shape)
        inputs[f"routed_{name}_scale"] = np.stack([s for _, s in per]).reshape(ep, nl, shape[0])
        inputs[f"shared_{name}"], inputs[f"shared_{name}_scale"] = random_int8_weight(
            rng, shape, std[f"shared_{name}"]
        )
    return inputs


@dataclass(frozen=True)
class DispatchOut:
    """One destination rank's receive side (upstream `moe.dispatch`)."""

    recv_meta: np.ndarray  # [EP(src), NL] int32 counts from each source per local expert
    window_x: np.ndarray  # [NL*RECV_MAX, D] int8, row le*RECV_MAX + src*MAX_PER_SRC + slot
    window_aux: np.ndarray  # [NL*RECV_MAX, 8] fp32: col 0 x scale, col 1 routing weight
    window_route: np.ndarray  # [NL*RECV_MAX, 8] int32: col 0 r_route = t*TOPK + k
    recv_x: np.ndarray  # [NL, RECV_MAX, D] int8, compact source-major
    recv_scale: np.ndarray  # [NL, RECV_MAX] fp32
    recv_w: np.ndarray  # [NL, RECV_MAX] fp32
    recv_r_route: np.ndarray  # [NL, RECV_MAX] int32
    recv_src: np.ndarray  # [NL, RECV_MAX] int32 source rank of each compact row, -1 unused
    recv_count: np.ndarray  # [NL] int32


def routes(indices: np.ndarray, n: int, n_local: int) -> tuple[np.ndarray, ...]:
    """Active routes of one source in t-major, k-minor order: (t, k, dst, le, slot).

    slot counts the earlier routes from this source to the same (dst, le).
    """
    t_idx, k_idx = np.meshgrid(np.arange(n), np.arange(indices.shape[1]), indexing="ij")
    t_idx, k_idx = t_idx.reshape(-1), k_idx.reshape(-1)
    eid = np.asarray(indices)[:n].reshape(-1).astype(np.int64)
    order = np.argsort(eid, kind="stable")
    first = np.searchsorted(eid[order], eid[order], side="left")
    slot = np.empty_like(eid)
    slot[order] = np.arange(eid.size) - first
    return t_idx, k_idx, eid // n_local, eid % n_local, slot


def dispatch_golden(
    x_i8: np.ndarray,
    x_scale: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    n: int,
    cfg: MoeConfig,
    dst: int,
) -> DispatchOut:
    """Receive window and compact layout on rank `dst`; inputs carry a leading source axis."""
    ep, nl, rm, mps = cfg.ep, cfg.n_local, cfg.recv_max, cfg.max_per_src
    d = x_i8.shape[-1]
    meta = np.zeros((ep, nl), np.int32)
    win_x = np.zeros((nl * rm, d), np.int8)
    win_aux = np.zeros((nl * rm, AUX_PAD), np.float32)
    win_route = np.zeros((nl * rm, AUX_PAD), np.int32)
    for src in range(ep):
        t, k, to, le, slot = routes(indices[src], n, nl)
        mine = to == dst
        t, k, le, slot = t[mine], k[mine], le[mine], slot[mine]
        if slot.size and slot.max() >= mps:
            raise ValueError(f"source {src} sends more than MAX_PER_SRC={mps} rows to one expert")
        rows = le * rm + src * mps + slot
        win_x[rows] = x_i8[src, t]
        win_aux[rows, 0] = np.asarray(x_scale[src]).reshape(-1)[t]
        win_aux[rows, 1] = weights[src, t, k]
        win_route[rows, 0] = t * cfg.topk + k
        np.add.at(meta[src], le, 1)
    recv_x = np.zeros((nl, rm, d), np.int8)
    recv_scale = np.zeros((nl, rm), np.float32)
    recv_w = np.zeros((nl, rm), np.float32)
    recv_r = np.zeros((nl, rm), np.int32)
    recv_src = np.full((nl, rm), -1, np.int32)
    for e in range(nl):
        col = 0
        for src in range(ep):
            c = int(meta[src, e])
            lane = slice(e * rm + src * mps, e * rm + src * mps + c)
            recv_x[e, col : col + c] = win_x[lane]
            recv_scale[e, col : col + c] = win_aux[lane, 0]
            recv_w[e, col : col + c] = win_aux[lane, 1]
            recv_r[e, col : col + c] = win_route[lane, 0]
            recv_src[e, col : col + c] = src
            col += c
    count = meta.sum(axis=0).astype(np.int32)
    return DispatchOut(meta, win_x, win_aux, win_route, recv_x, recv_scale, recv_w, recv_r, recv_src, count)


def _expert_weights(inputs: dict, rank: int, le: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    return tuple(
        (inputs[f"routed_{w}"][rank, le], inputs[f"routed_{w}_scale"][rank, le]) for w in ("w1", "w3", "w2")
    )


def moe_golden(inputs: dict, cfg: MoeConfig = CONFIG, via_buffers: bool = True) -> dict[str, np.ndarray]:
    """All ranks of the MoE layer; returns x_next [EP, T, 4, D] and the intermediates."""
    hc = [
        hc_pre_mod.hc_pre_golden(
            inputs["x_hc"][r],
            inputs["hc_ffn_fn"],
            inputs["hc_ffn_scale"],
            inputs["hc_ffn_base"],
            rms_chunk=cfg.rms_chunk,
        )
        for r in range(cfg.ep)
    ]
    out = moe_ffn_golden(np.stack([h.x_mixed for h in hc]), inputs, cfg, via_buffers)
    out["x_next"] = np.stack(
        [hc_post_golden(out["ffn_out"][r], inputs["x_hc"][r], hc[r].post, hc[r].comb) for r in range(cfg.ep)]
    )
    return out


def moe_ffn_golden(
    x_mixed: np.ndarray,
    inputs: dict,
    cfg: MoeConfig = CONFIG,
    via_buffers: bool = True,
    keep_recv: bool = True,
) -> dict[str, np.ndarray]:
    """The MoE between hc_pre and hc_post, all ranks: x_mixed [EP, T, D] (bf16) -> ffn_out.

    gate -> shared expert -> dispatch -> routed experts -> combine -> ordered reduce; returns
    ffn_out [EP, T, D] and the intermediates (`moe_golden` adds hc_pre and hc_post around it).
    `keep_recv=False` leaves out recv_y/recv_count, [EP, NL, RECV_MAX, D] at EP16 (8.6 GB).
    """
    ep, t, tk = cfg.ep, cfg.T, cfg.topk
    n = min(max(int(inputs["num_tokens"]), 0), t)
    gates = [
        gate_golden(
            x_mixed[r],
            inputs["norm_w"],
            inputs["gate_w"],
            inputs["gate_bias"],
            int(inputs["layer_id"]),
            n,
            inputs["tid2eid"],
            inputs["input_ids"][r],
            topk=tk,
            num_hash_layers=cfg.num_hash_layers,
            routed_scaling=cfg.routed_scaling,
        )
        for r in range(ep)
    ]
    shared = tuple((inputs[f"shared_{w}"], inputs[f"shared_{w}_scale"]) for w in ("w1", "w3", "w2"))
    sh = np.stack([swiglu_expert(g.x_norm_i8, g.x_norm_scale, *shared, cfg.swiglu_limit) for g in gates])
    x_i8 = np.stack([g.x_norm_i8 for g in gates])
    x_scale = np.stack([g.x_norm_scale for g in gates])
    indices = np.stack([g.indices for g in gates])
    weights = np.stack([g.weights for g in gates])
    routed_y = np.zeros((ep, t * tk, cfg.D), np.float32)
    recv_y_all, recv_count_all = [], []
    if via_buffers:
        for dst in range(ep):
            disp = dispatch_golden(x_i8, x_scale, indices, weights, n, cfg, dst)
            w1, w3, w2 = (
                (inputs[f"routed_{w}"][dst], inputs[f"routed_{w}_scale"][dst]) for w in ("w1", "w3", "w2")
            )
            recv_y = routed_expert_golden(
                disp.recv_x, disp.recv_scale, disp.recv_w, disp.recv_count, w1, w3, w2, cfg.swiglu_limit
            )
            for le in range(cfg.n_local):  # combine: back to the source under r_route
                c = int(disp.recv_count[le])
                routed_y[disp.recv_src[le, :c], disp.recv_r_route[le, :c]] = recv_y[le, :c]
            recv_y_all.append(recv_y)
            recv_count_all.append(disp.recv_count)
    else:
        for src in range(ep):
            tt, kk, dst, le, _ = routes(indices[src], n, cfg.n_local)
            for eid in np.unique(dst * cfg.n_local + le):
                sel = dst * cfg.n_local + le == eid
                r, e = divmod(int(eid), cfg.n_local)
                routed_y[src, tt[sel] * tk + kk[sel]] = swiglu_expert(
                    x_i8[src, tt[sel]],
                    x_scale[src, tt[sel]],
                    *_expert_weights(inputs, r, e),
                    cfg.swiglu_limit,
                    row_weight=weights[src, tt[sel], kk[sel]],
                )
    acc = sh.copy()
    y = routed_y.reshape(ep, t, tk, cfg.D)
    for k in range(tk):
        acc[:, :n] = (acc[:, :n] + y[:, :n, k]).astype(np.float32)
    ffn_out = bf16(acc)
    out = {
        "ffn_out": ffn_out,
        "sh": sh,
        "routed_y": routed_y,
        "x_mixed": np.asarray(x_mixed),
        "x_norm_i8": x_i8,
        "x_norm_scale": x_scale,
        "indices": indices,
        "weights": weights,
    }
    if via_buffers and keep_recv:
        out["recv_y"] = np.stack(recv_y_all)
        out["recv_count"] = np.stack(recv_count_all)
    return out


def golden(inputs: dict, cfg: MoeConfig = CONFIG) -> dict[str, np.ndarray]:
    """Outputs named as in TOLERANCES (and more intermediates)."""
    return moe_golden(inputs, cfg)
