"""Golden adapter of ``prefill_csa.dsl`` over ``models.deepseek_v4_flash.golden.prefill_csa``.

The layer keeps tensors 2-D (q [T, H, HD] -> [T * H, HD], the paged KV pools as rows,
wo_a [G, O_LORA, GROUP_IN] -> [G * O_LORA, GROUP_IN], tables and scales as rows or columns)
and takes ``start_pos`` and ``num_tokens`` as runtime scalars.

The golden computes the attention on its compacted row lists (valid window rows, then valid
compressed rows, cut into tiles of WIN), the kernel on its fixed blocks (block 0 the window,
blocks 1.. the compressed slots, invalid rows masked); the two differ only by the per-tile
bf16 rounding of P (models/deepseek_v4_flash/README.md, 'Prefill CSA'), which the reference
comparator absorbs: ``attn_out`` ratio_allclose(atol=1e-4, rtol=1/128) over the active rows, and the
rows past num_tokens exactly zero (``zero_tail``).

The golden's configuration is the layer's: its packed capacity PREFILL_SPARSE_PAD is derived
from what the indexer emits (WIN + INDEXER_TOPK_CAP rounded up to whole tiles, 384 at the
real size as upstream), not from dspark's PREFILL_MAX_COMPRESSED sizing input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from models.deepseek_v4_flash.golden import prefill_csa as _golden
from runtime import compare


@dataclass(frozen=True)
class LayerCsaConfig(_golden.CsaConfig):
    """The golden's sizes with the layer's packed capacity."""

    @property
    def sparse_pad(self) -> int:
        return self.win + -(-self.topk_cap // self.attn_tile) * self.attn_tile

    @property
    def attn_blocks(self) -> int:
        return self.sparse_pad // self.attn_tile


def config(params: Mapping[str, int], start_pos: int = 0, num_tokens: int | None = None) -> LayerCsaConfig:
    return LayerCsaConfig(
        T=params["T"],
        D=params["D"],
        n_heads=params["H"],
        head_dim=params["HD"],
        win=params["WIN"],
        idx_topk=params["IDX_TOPK"],
        attn_tile=params["WIN"],
        o_groups=params["O_GROUPS"],
        o_lora=params["O_LORA"],
        max_pos=params["MAX_POS"],
        ori_block_num=params["ORI_BLOCK_NUM"],
        cmp_block_num=params["CMP_BLOCK_NUM"],
        start_pos=int(start_pos),
        num_tokens=None if num_tokens is None else int(num_tokens),
    )


def make_inputs(
    params: Mapping[str, int],
    seed: int,
    ranks: int = 1,
    start_pos: int = 0,
    num_tokens: int | None = None,
    cmp_indices: np.ndarray | None = None,
) -> dict:
    """Upstream's standalone test fixture (cmp_indices[t] = arange(cc_t), then -1) in the layer's
    layout.

    Pass the indexer's top-k (``topk_full``) as ``cmp_indices`` to chain the two layers.
    """
    cfg = config(params, start_pos, num_tokens)
    raw = _golden.make_inputs(cfg, seed, cmp_indices)
    t, h, hd = cfg.T, cfg.n_heads, cfg.head_dim
    return {
        "q": np.ascontiguousarray(raw["q"].reshape(t * h, hd)),
        "ori_kv": np.ascontiguousarray(raw["ori_kv"].reshape(-1, hd)),
        "cmp_kv": np.ascontiguousarray(raw["cmp_kv"].reshape(-1, hd)),
        "cmp_block_table": raw["cmp_block_table"].reshape(1, -1),
        "swa_indices": raw["swa_indices"],
        "cmp_indices": raw["cmp_indices"],
        "attn_sink": raw["attn_sink"].reshape(h, 1),
        "freqs_cos": raw["freqs_cos"],
        "freqs_sin": raw["freqs_sin"],
        "wo_a": np.ascontiguousarray(raw["wo_a"].reshape(-1, raw["wo_a"].shape[-1])),
        "wo_b": raw["wo_b"],
        "wo_b_scale": raw["wo_b_scale"].reshape(1, -1),
        "start_pos": cfg.start_pos,
        "num_tokens": cfg.n_active,
    }


def reference(inp: Mapping, params: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The golden's attn_out on the layer's inputs."""
    cfg = config(params, inp["start_pos"], inp["num_tokens"])
    t, h, hd, bs = cfg.T, cfg.n_heads, cfg.head_dim, cfg.block_size
    g = {
        "q": np.asarray(inp["q"]).reshape(t, h, hd),
        "ori_kv": np.asarray(inp["ori_kv"]).reshape(-1, bs, 1, hd),
        "cmp_kv": np.asarray(inp["cmp_kv"]).reshape(-1, bs, 1, hd),
        "cmp_block_table": np.asarray(inp["cmp_block_table"]).reshape(-1),
        "swa_indices": inp["swa_indices"],
        "cmp_indices": inp["cmp_indices"],
        "attn_sink": np.asarray(inp["attn_sink"]).reshape(-1),
        "freqs_cos": inp["freqs_cos"],
        "freqs_sin": inp["freqs_sin"],
        "wo_a": np.asarray(inp["wo_a"]).reshape(cfg.o_groups, cfg.o_lora, -1),
        "wo_b": inp["wo_b"],
        "wo_b_scale": np.asarray(inp["wo_b_scale"]).reshape(-1),
        "num_tokens": cfg.n_active,
    }
    return {"attn_out": _golden.sparse_attn_golden(g, cfg)["attn_out"]}


def golden(inputs: list[dict], params: Mapping[str, int]) -> dict[str, np.ndarray]:
    return reference(inputs[0], params)


def _attn_out(actual, expected, ctx) -> compare.Comparison:
    n = int(ctx["inputs"]["num_tokens"])
    return compare.ratio_allclose(actual, expected, atol=1e-4, rtol=1 / 128, valid_rows=n, zero_tail=True)


TOLERANCES = {"attn_out": _attn_out}

#: Read by rule N203: the wo_b GEMM is summed over the O_GROUPS groups in ascending order, fp32.
REDUCTION_TREES = {"proj": {"splits": "O_GROUPS", "order": "ascending", "dtype": "f32"}}
