"""Golden adapter of ``hc_pre.dsl`` (the golden contract of ``dsl.driver.api``).

A thin layer over the independent golden ``models.deepseek_v4_flash.golden.hc_pre``: it
builds the golden's configuration from the layer's parameters, reshapes the tensors to the
layer's 2-D layout (x [T, 4, D] -> [T, HC_DIM], hc_scale [3] -> [1, 3], hc_base [24] -> [1, 24])
and picks the golden's reduction tree to match the kernel's (rule R5,
docs/runtime-semantics.md §17.3):

- linear: LINEAR_OK ascending splits, each an A2/A3 cube chain (k_group = 4);
- RMS: one partial per RMS_K_CHUNK chunk folded ascending (``rms_splits=1``, the "separate"
  kernel); the fused kernel's adapter (``hc_pre_fused_golden``) passes ``rms_splits=RMS_OK``;
- Sinkhorn column sums paired (r0 + r1) + (r2 + r3), as the kernel adds them.

The comparators and tolerances are the reference's (docs/runtime-semantics.md §20.2).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.deepseek_v4_flash.golden import hc_pre as _golden
from models.deepseek_v4_flash.golden._common import tolerance_specs

HC_MULT = 4

TOLERANCES = tolerance_specs(_golden.TOLERANCES)

#: The trees ``reference`` sums with (rule N203 reads this literal): the linear partials are
#: cube folds (k_group = 4) added in ascending split order; the RMS is one fp32 fold over the
#: chunk sums in ascending order (a flat fold: one partial per chunk in the kernel).
REDUCTION_TREES = {
    "mixes_raw": {"splits": "LINEAR_OK", "order": "ascending", "dtype": "f32"},
    "sq_sum": {"splits": 1, "chunks_per_split": "HC_DIM / RMS_K_CHUNK", "order": "ascending", "dtype": "f32"},
}


def config(params: Mapping[str, int], rms_splits: int = 1) -> _golden.HcPreConfig:
    """The golden's configuration at the layer's parameter point."""
    return _golden.HcPreConfig(
        T=params["T"],
        D=params["HC_DIM"] // HC_MULT,
        hc_mult=HC_MULT,
        splits=params["LINEAR_OK"],
        k_chunk=params["LINEAR_K_CHUNK"],
        k_group=4,
        rms_chunk=params["RMS_K_CHUNK"],
        rms_splits=rms_splits,
        sinkhorn_iters=params["SINKHORN_ITERS"],
        colsum="paired",
    )


def make_inputs(params: Mapping[str, int], seed: int, ranks: int = 1) -> dict[str, np.ndarray]:
    """The reference fixture (x = N*0.05, hc_fn = N*0.0509, layer-8 scale/base), 2-D."""
    cfg = config(params)
    raw = _golden.make_inputs(cfg, seed)
    return {
        "x": np.ascontiguousarray(raw["x"].reshape(cfg.T, cfg.hc_dim)),
        "hc_fn": raw["hc_fn"],
        "hc_scale": raw["hc_scale"].reshape(1, 3),
        "hc_base": raw["hc_base"].reshape(1, cfg.mix),
    }


def reference(inputs: Mapping[str, np.ndarray], params: Mapping[str, int], rms_splits: int = 1) -> dict:
    """The golden's outputs at the layer's tree, named as the layer's outputs."""
    cfg = config(params, rms_splits)
    golden_inputs = {
        "x": np.asarray(inputs["x"]).reshape(cfg.T, HC_MULT, cfg.D),
        "hc_fn": inputs["hc_fn"],
        "hc_scale": np.asarray(inputs["hc_scale"]).reshape(-1),
        "hc_base": np.asarray(inputs["hc_base"]).reshape(-1),
    }
    return _golden.golden(golden_inputs, cfg)


def golden(inputs: list[dict], params: Mapping[str, int]) -> dict[str, np.ndarray]:
    return reference(inputs[0], params)
