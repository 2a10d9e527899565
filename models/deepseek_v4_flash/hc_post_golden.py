"""Golden adapter of ``hc_post.dsl`` over ``models.deepseek_v4_flash.golden.hc_post``.

The layer keeps the streams flat (residual and y [T, 4, D] -> [T, HC_DIM]); the comparator
is the reference's plain allclose(rtol = atol = 1e-3) (upstream `hc_post.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.deepseek_v4_flash.golden import hc_post as _golden
from models.deepseek_v4_flash.golden._common import tolerance_specs

HC_MULT = 4

TOLERANCES = tolerance_specs(_golden.TOLERANCES)


def config(params: Mapping[str, int]) -> _golden.HcPostConfig:
    return _golden.HcPostConfig(T=params["T"], D=params["HC_DIM"] // HC_MULT, hc_mult=HC_MULT)


def make_inputs(params: Mapping[str, int], seed: int, ranks: int = 1) -> dict[str, np.ndarray]:
    """The reference fixture: x = bf16(N*0.05), residual = N*0.05, post = 2 sigmoid(N), comb rows sum to 1."""
    cfg = config(params)
    raw = _golden.make_inputs(cfg, seed)
    return {
        "x": raw["x"],
        "residual": np.ascontiguousarray(raw["residual"].reshape(cfg.T, HC_MULT * cfg.D)),
        "post": raw["post"],
        "comb": raw["comb"],
    }


def golden(inputs: list[dict], params: Mapping[str, int]) -> dict[str, np.ndarray]:
    cfg = config(params)
    inp = inputs[0]
    residual = np.asarray(inp["residual"]).reshape(cfg.T, HC_MULT, cfg.D)
    y = _golden.hc_post_golden(inp["x"], residual, inp["post"], inp["comb"])
    return {"y": y.reshape(cfg.T, HC_MULT * cfg.D)}
