"""Golden adapter of ``prefill_indexer.dsl`` over ``models.deepseek_v4_flash.golden.prefill_indexer``.

The layer keeps every tensor 2-D (the paged caches and the compress state flattened to rows,
1-D tables and scales as [1, N] rows, slot mappings as int32) and takes ``start_pos`` and
``num_tokens`` as runtime scalars; the golden is called on its own layout.

Comparators (upstream `prefill_indexer.py`'s test; docs/runtime-semantics.md §20.2-§20.3):

- ``score``: ratio_allclose(atol=1e-4, rtol=1/128) over the active rows (``valid_rows`` =
  num_tokens, no zero tail: inactive rows hold -inf);
- ``topk_idxs``: the indexer's prefix contract (v = min(visible, TOPK_CAP) distinct columns
  in [0, visible), then -1; inactive rows all -1) **and** ``topk_selection_compare`` on the
  kernel's own scores: the reference's tie-swap check plus the multiset of selected scores
  against the golden's top-k (the comparator blind spot of docs/runtime-semantics.md §20.3
  closed). The score multisets are compared within the score tolerance, since the kernel's
  and the golden's scores can order a near-tie differently;
- ``idx_kv_cache``: atol 1 (one INT8 LSB), 1 % of points; ``idx_kv_scale``: 1e-4, 1/128, 1 %;
- ``inner_compress_state``: ratio_allclose(1e-3, 1e-3), as CSA's compress states.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.deepseek_v4_flash.golden import prefill_indexer as _golden
from runtime import compare

SCORE_TOL = {"atol": 1e-4, "rtol": 1 / 128}


def config(params: Mapping[str, int], start_pos: int = 0, num_tokens: int | None = None):
    return _golden.IndexerConfig(
        T=params["T"],
        D=params["D"],
        n_heads=params["H"],
        head_dim=params["HD"],
        q_lora=params["Q_LORA"],
        idx_topk=params["IDX_TOPK"],
        max_pos=params["MAX_POS"],
        start_pos=int(start_pos),
        num_tokens=None if num_tokens is None else int(num_tokens),
    )


def _row(a: np.ndarray, dtype=None) -> np.ndarray:
    a = np.asarray(a) if dtype is None else np.asarray(a).astype(dtype)
    return np.ascontiguousarray(a.reshape(1, -1))


def make_inputs(
    params: Mapping[str, int], seed: int, ranks: int = 1, start_pos: int = 0, num_tokens: int | None = None
) -> dict:
    """Upstream's test fixture at the layer's sizes (reduced: plain random INT8 wq_b), in the layer's layout."""
    cfg = config(params, start_pos, num_tokens)
    raw = _golden.make_inputs(cfg, seed)
    hd = cfg.head_dim
    out = {
        name: raw[name]
        for name in (
            "x", "qr", "qr_scale", "wq_b", "weights_proj", "cos", "sin", "freqs_cos", "freqs_sin",
            "hadamard", "inner_wkv", "inner_wgate", "inner_ape",
        )
    }  # fmt: skip
    state = raw["inner_compress_state"]
    out.update(
        wq_b_scale=_row(raw["wq_b_scale"]),
        inner_norm_w=_row(raw["inner_norm_w"]),
        inner_compress_state_block_table=_row(raw["inner_compress_state_block_table"], np.int32),
        idx_block_table=_row(raw["idx_block_table"], np.int32),
        idx_slot_mapping=_row(raw["idx_slot_mapping"], np.int32),
        inner_state_slot_mapping=_row(raw["inner_state_slot_mapping"], np.int32),
        inner_compress_state=np.ascontiguousarray(state.reshape(-1, state.shape[-1])),
        idx_kv_cache=np.ascontiguousarray(raw["idx_kv_cache"].reshape(-1, hd)),
        idx_kv_scale=np.ascontiguousarray(raw["idx_kv_scale"].reshape(-1, 1)),
        start_pos=cfg.start_pos,
        num_tokens=cfg.n_active,
    )
    return out


def _golden_inputs(inp: Mapping, cfg) -> dict:
    """The layer's inputs in the golden's layout."""
    hd, bs = cfg.head_dim, cfg.block_size
    g = dict(inp)
    g["wq_b_scale"] = np.asarray(inp["wq_b_scale"]).reshape(-1)
    g["inner_norm_w"] = np.asarray(inp["inner_norm_w"]).reshape(-1)
    g["inner_compress_state_block_table"] = np.asarray(inp["inner_compress_state_block_table"]).reshape(-1)
    g["idx_block_table"] = np.asarray(inp["idx_block_table"]).reshape(-1)
    g["idx_slot_mapping"] = np.asarray(inp["idx_slot_mapping"]).reshape(-1).astype(np.int64)
    g["inner_state_slot_mapping"] = np.asarray(inp["inner_state_slot_mapping"]).reshape(-1).astype(np.int64)
    g["inner_compress_state"] = np.asarray(inp["inner_compress_state"]).reshape(-1, cfg.state_page, 4 * hd)
    g["idx_kv_cache"] = np.asarray(inp["idx_kv_cache"]).reshape(-1, bs, 1, hd)
    g["idx_kv_scale"] = np.asarray(inp["idx_kv_scale"]).reshape(-1, bs, 1, 1)
    g["position_ids"] = np.arange(cfg.start_pos, cfg.start_pos + cfg.T, dtype=np.int32)
    g["num_tokens"] = cfg.n_active
    return g


def reference(inp: Mapping, params: Mapping[str, int]) -> dict[str, np.ndarray]:
    """The golden's outputs, named and shaped as the layer's outputs."""
    cfg = config(params, inp["start_pos"], inp["num_tokens"])
    out = _golden.indexer_golden(_golden_inputs(inp, cfg), cfg)
    return {
        "score": out["score"],
        "topk_idxs": out["topk_idxs"],
        "idx_kv_cache": out["idx_kv_cache"].reshape(-1, cfg.head_dim),
        "idx_kv_scale": out["idx_kv_scale"].reshape(-1, 1),
        "inner_compress_state": out["inner_compress_state"].reshape(-1, 4 * cfg.head_dim),
    }


def golden(inputs: list[dict], params: Mapping[str, int]) -> dict[str, np.ndarray]:
    return reference(inputs[0], params)


def visible(inp: Mapping, params: Mapping[str, int]) -> np.ndarray:
    """visible[t] = min((pos + 1) // 4, INDEXER_SCORE_CAP): the causal bound."""
    cfg = config(params, inp["start_pos"], inp["num_tokens"])
    return _golden.visible_counts(np.arange(cfg.start_pos, cfg.start_pos + cfg.T), cfg)


def _score(actual, expected, ctx) -> compare.Comparison:
    return compare.ratio_allclose(actual, expected, **SCORE_TOL, valid_rows=int(ctx["inputs"]["num_tokens"]))


def _topk(actual, expected, ctx) -> compare.Comparison:
    """Prefix contract, then the selection (tie swaps forgiven, score multiset checked)."""
    params, inp = ctx["params"], ctx["inputs"]
    cfg = config(params, inp["start_pos"], inp["num_tokens"])
    contract = compare.topk_prefix_contract(actual, visible(inp, params), cfg.n_active, cfg.topk_cap)
    if not contract.passed:
        return contract
    return compare.topk_selection_compare(actual, ctx["outputs"]["score"], expected, **SCORE_TOL)


TOLERANCES = {
    "score": _score,
    "topk_idxs": _topk,
    "idx_kv_cache": {"comparator": "ratio_allclose", "atol": 1, "rtol": 0, "max_error_ratio": 0.01},
    "idx_kv_scale": {"comparator": "ratio_allclose", "atol": 1e-4, "rtol": 1 / 128, "max_error_ratio": 0.01},
    "inner_compress_state": {"comparator": "ratio_allclose", "atol": 1e-3, "rtol": 1e-3},
}
