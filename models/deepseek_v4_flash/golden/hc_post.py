"""Golden for hc_post, the hyper-connection post-mix (upstream `hc_post.py`).

y[t, o] = post[t, o] * x[t] + sum_i comb[t, 4i + o] * residual[t, i], all fp32, accumulated in
the reference's order: start from post * x, then add i = 0, 1, 2, 3. The stream stays fp32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import Tolerance, bf16, f32, sigmoid


@dataclass(frozen=True)
class HcPostConfig:
    """hc_post sizes; the default is the reference's decode test (T=128)."""

    T: int = 128
    D: int = 4096
    hc_mult: int = 4

    def validate(self) -> None:
        if self.hc_mult != 4:
            raise ValueError("hc_post is hard-wired to hc_mult = 4")
        if self.T % 4:
            raise ValueError(f"T % 4 == 0 violated (T={self.T})")


CONFIG = HcPostConfig()
REDUCED = HcPostConfig(T=16, D=256)

TOLERANCES = {"y": Tolerance("allclose", {"rtol": 1e-3, "atol": 1e-3})}


def make_inputs(cfg: HcPostConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray]:
    """Upstream's test fixture: x = bf16(N*0.05), residual = N*0.05, post = 2 sigmoid(N), comb rows sum to 1."""
    cfg.validate()
    rng = np.random.default_rng(seed)
    t, h, d = cfg.T, cfg.hc_mult, cfg.D
    comb = rng.random((t, h, h)) + 0.1
    comb = comb / comb.sum(axis=-1, keepdims=True)
    return {
        "x": bf16(f32(rng.standard_normal((t, d)) * 0.05)),
        "residual": f32(rng.standard_normal((t, h, d)) * 0.05),
        "post": (2.0 * sigmoid(f32(rng.standard_normal((t, h))))).astype(np.float32),
        "comb": f32(comb.reshape(t, h * h)),
    }


def hc_post_golden(
    x: np.ndarray,
    residual: np.ndarray,
    post: np.ndarray,
    comb: np.ndarray,
    num_tokens: int | None = None,
) -> np.ndarray:
    """y [T, 4, D] fp32. With `num_tokens` (the prefill variant), rows past it are zero."""
    t, h, d = residual.shape
    xs, res, c = f32(x), f32(residual), f32(comb).reshape(t, h, h)
    y = (xs[:, None, :] * f32(post)[:, :, None]).astype(np.float32)
    for i in range(h):
        y = (y + res[:, i : i + 1, :] * c[:, i, :, None]).astype(np.float32)
    if num_tokens is not None:
        n = min(max(int(num_tokens), 0), t)
        y[n:] = 0.0
    return y


def golden(inputs: dict[str, np.ndarray], cfg: HcPostConfig = CONFIG) -> dict[str, np.ndarray]:
    """Outputs named as in TOLERANCES."""
    num_tokens = inputs.get("num_tokens")
    y = hc_post_golden(inputs["x"], inputs["residual"], inputs["post"], inputs["comb"], num_tokens)
    return {"y": y}
