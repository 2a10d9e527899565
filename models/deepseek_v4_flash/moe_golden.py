"""Golden contract of `moe.dsl`: a thin adapter over `golden/moe.py` (upstream `moe.py`).

The layer starts at hc_pre's output x_mixed and ends at ffn_out (hc_post's input), so the
reference is `golden.moe.moe_ffn_golden`, the part of `moe_golden` between hc_pre and hc_post.
Inputs come from `golden.moe.make_inputs`, upstream's fixture (distinct experts per token, plain
random INT8 weights with the reference's stds), with x_mixed = hc_pre(x_hc) per rank as in
the MoE test; this module only renames and reshapes between the golden's stacked
`[EP, ...]` arrays and the layer's per-rank tensors.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from models.deepseek_v4_flash.golden import hc_pre as hc_pre_mod
from models.deepseek_v4_flash.golden import moe

_WEIGHTS = ("w1", "w3", "w2")

# The tree golden/moe.py sums ffn_out with (read by `dslc check`, rule N203): fp32, starting
# from sh, then y_0 .. y_5 in order: ((sh + y0) + y1) + ... + y5, one term per split.
REDUCTION_TREES = {
    "ffn_acc": {"splits": "TOPK + 1", "chunks_per_split": 1, "order": "ascending", "dtype": "f32"}
}

TOLERANCES = {
    # the MoE test's comparator (it applies it to x_next; this layer's output is ffn_out)
    "ffn_out": {"comparator": "ratio_reldiff", "diff_thd": 3e-3, "pct_thd": 0.05},
    "sh": {"comparator": "ratio_reldiff", "diff_thd": 2e-3, "pct_thd": 0.01},
    "x_norm_i8": {"comparator": "ratio_allclose", "atol": 1, "rtol": 0, "max_error_ratio": 0.001},
    "x_norm_scale": {"comparator": "allclose", "rtol": 1e-3, "atol": 1e-3},
    "weights": {"comparator": "allclose", "rtol": 1e-3, "atol": 1e-3},
    "indices": {"comparator": "allclose", "rtol": 0.0, "atol": 0.0},  # distinct scores: exact
}


def config(params: dict) -> moe.MoeConfig:
    """The golden's MoeConfig at the layer's parameter point."""
    d = params["D"]
    return replace(
        moe.CONFIG,
        ep=params["EP"],
        T=params["T"],
        D=d,
        I=params["I"],
        n_local=params["N_LOCAL"],
        topk=params["TOPK"],
        vocab=params["VOCAB"],
        layer_id=params["LAYER_ID"],
        rms_chunk=512 if (4 * d) % 512 == 0 else 128,
    )


def make_inputs(params: dict, seed: int, ranks: int) -> list[dict[str, np.ndarray]]:
    cfg = config(params)
    if ranks != cfg.ep:
        raise ValueError(f"the MoE layer runs on EP={cfg.ep} ranks, not {ranks}")
    g = moe.make_inputs(cfg, seed)
    x_mixed = [
        hc_pre_mod.hc_pre_golden(
            g["x_hc"][r], g["hc_ffn_fn"], g["hc_ffn_scale"], g["hc_ffn_base"], rms_chunk=cfg.rms_chunk
        ).x_mixed
        for r in range(cfg.ep)
    ]
    shared = {
        "norm_w": g["norm_w"].reshape(1, -1),
        "gate_w": g["gate_w"],
        "gate_bias": g["gate_bias"].reshape(1, -1),
        "tid2eid": g["tid2eid"],
        "num_tokens": np.full((1, 1), g["num_tokens"], np.int32),
    }
    for w in _WEIGHTS:
        shared[f"shared_{w}"] = g[f"shared_{w}"]
        shared[f"shared_{w}_scale"] = g[f"shared_{w}_scale"].reshape(1, -1)
    out = []
    for r in range(cfg.ep):
        per = dict(shared, x_mixed=x_mixed[r], input_ids=g["input_ids"][r].astype(np.int32).reshape(-1, 1))
        for w in _WEIGHTS:
            stacked = g[f"routed_{w}"][r]  # [NL, out, in]
            per[f"routed_{w}"] = stacked.reshape(-1, stacked.shape[-1])
            per[f"routed_{w}_scale"] = g[f"routed_{w}_scale"][r]
        out.append(per)
    return out


def golden(inputs: list[dict], params: dict) -> list[dict[str, np.ndarray]]:
    cfg = config(params)
    first = inputs[0]
    nl = cfg.n_local
    g: dict = {
        "norm_w": first["norm_w"].reshape(-1),
        "gate_w": first["gate_w"],
        "gate_bias": first["gate_bias"].reshape(-1),
        "tid2eid": first["tid2eid"],
        "input_ids": np.stack([np.asarray(p["input_ids"]).reshape(-1) for p in inputs]),
        "layer_id": cfg.layer_id,
        "num_tokens": int(np.asarray(first["num_tokens"]).reshape(-1)[0]),
    }
    for w in _WEIGHTS:
        g[f"shared_{w}"] = first[f"shared_{w}"]
        g[f"shared_{w}_scale"] = first[f"shared_{w}_scale"].reshape(-1)
        # one [NL, out, in] view per rank (a list indexes like the stacked array, without
        # copying 16 ranks' weights: 6 GB at the real configuration)
        per = [np.asarray(p[f"routed_{w}"]) for p in inputs]
        g[f"routed_{w}"] = [x.reshape(nl, -1, x.shape[-1]) for x in per]
        g[f"routed_{w}_scale"] = [np.asarray(p[f"routed_{w}_scale"]) for p in inputs]
    out = moe.moe_ffn_golden(np.stack([p["x_mixed"] for p in inputs]), g, cfg, keep_recv=False)
    return [{name: out[name][r] for name in TOLERANCES} for r in range(cfg.ep)]
