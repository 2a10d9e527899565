"""Golden for the prefill indexer (upstream `prefill_indexer.py`).

Three parts, in the reference's order:

1. The inner compressor (upstream `prefill_indexer_compressor.py`) turns every 4 positions
   into one compressed index key: softmax pooling over an 8-slot window (the previous 4
   positions and the current 4, read from the compress state for positions before this
   chunk), RMSNorm, RoPE at cmp_pos = pos - 3, Hadamard, bf16, then INT8 quant-on-write into
   the paged index-KV cache.
2. The query path: INT8 q projection, RoPE, Hadamard, per-head INT8, head weights.
3. The score: score[t, c] = sum_h relu(q_i8 . kv_i8 * scales) * weight[t, h] for the
   compressed columns c < visible[t] = min((pos + 1) // 4, INDEXER_SCORE_CAP), FP32_NEG_INF
   elsewhere; and the top-k: the min(TOPK_CAP, visible) best columns, descending,
   padded with -1. Ties go to the lower column (the reference leaves tie order open).

INDEXER_SCORE_CAP = 2 * T / COMPRESS_RATIO: the current chunk plus one chunk of history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._common import (
    FP32_NEG_INF,
    PrefillChunk,
    Tolerance,
    bf16,
    f32,
    hadamard,
    imm,
    int8_quant,
    mm,
    paged_row,
    random_int8_weight,
    rmsnorm,
    rope_rotate,
    rope_tables,
)

_F32 = np.float32


@dataclass(frozen=True)
class IndexerConfig(PrefillChunk):
    """Prefill indexer sizes (dspark, T = PREFILL_SEQ = 512) and the test's start/num_tokens."""

    T: int = 512
    D: int = 4096
    n_heads: int = 64
    head_dim: int = 128
    rope_dim: int = 64
    q_lora: int = 1024
    compress_ratio: int = 4
    coff: int = 2  # overlap: previous + current window
    idx_topk: int = 512
    block_size: int = 32  # index-KV cache page
    state_page: int = 2  # compress-state page (C4A)
    max_pos: int = 16384
    start_pos: int = 0
    num_tokens: int | None = None  # None: T
    norm_eps: float = 1e-6

    @property
    def max_cmp_writes(self) -> int:
        return max(1, self.T // self.compress_ratio)

    @property
    def inner_out_dim(self) -> int:
        return self.coff * self.head_dim

    @property
    def state_len(self) -> int:
        return self.coff * self.compress_ratio

    @property
    def state_block_num(self) -> int:
        return (self.T + self.state_len) // self.state_page

    @property
    def state_max_blocks(self) -> int:
        return self.max_pos // self.state_page

    @property
    def idx_cache_blocks(self) -> int:
        return 2 * (self.max_pos // self.compress_ratio // self.block_size)

    @property
    def weights_scale(self) -> float:
        return self.head_dim**-0.5 * self.n_heads**-0.5

    def validate(self) -> None:
        """The upstream test's guards, derived from the formulas rather than the numbers."""
        n, sp, r = self.n_active, self.start_pos, self.compress_ratio
        if r != 4 or self.coff != 2:
            raise ValueError("the indexer exists only on ratio-4 layers with overlap 2")
        if not 1 <= n <= self.T:
            raise ValueError(f"1 <= num_tokens <= T violated (num_tokens={n}, T={self.T})")
        if not 0 <= sp <= self.max_pos - self.T:
            raise ValueError(f"0 <= start_pos <= MAX_POS - T violated (start_pos={sp})")
        if (sp + n) // r > self.score_cap:
            raise ValueError(f"(start_pos + num_tokens) // 4 <= INDEXER_SCORE_CAP={self.score_cap} violated")
        writes = sum(1 for p in range(sp, sp + n) if (p + 1) % r == 0)
        if writes > self.max_cmp_writes:
            raise ValueError(f"compressed writes {writes} > MAX_CMP_WRITES={self.max_cmp_writes}")
        if (sp + n) // r > self.idx_cache_blocks * self.block_size:
            raise ValueError("compressed slots exceed the index-KV cache capacity")


CONFIG = IndexerConfig()
REDUCED = IndexerConfig(T=64, D=256, n_heads=8, q_lora=128, idx_topk=64, max_pos=1024)

TOLERANCES = {
    "score": Tolerance("ratio_allclose", {"atol": 1e-4, "rtol": 1 / 128}, valid_rows_from="num_tokens"),
    "topk_idxs": Tolerance(
        "topk_selection_compare",
        note="reference: topk_prefix_contract + topk_pair_compare on the kernel's scores; "
        "topk_selection_compare adds the selected-multiset check (docs/runtime-semantics.md §20.3)",
    ),
    "idx_kv_cache": Tolerance("ratio_allclose", {"atol": 1, "rtol": 0, "max_error_ratio": 0.01}),
    "idx_kv_scale": Tolerance("ratio_allclose", {"atol": 1e-4, "rtol": 1 / 128, "max_error_ratio": 0.01}),
}


state_row = paged_row  # compress-state row of absolute position(s), pages of STATE_PAGE
cache_row = paged_row  # index-KV cache row of compressed slot(s), pages of BLOCK_SIZE


def page_table(logical_blocks: int, pages: int, stride: int = 17, offset: int = 3) -> np.ndarray:
    """Block table ``(b * stride + offset) % pages`` with ``stride`` raised to the first value
    coprime with ``pages``: the reference's ``(b*17 + 3) mod 260`` at its configuration.

    A real page table never maps two live logical blocks onto one page. With a stride coprime
    with ``pages`` the table is a bijection on every window of ``pages`` consecutive logical
    blocks, so the ``pages * page_size`` consecutive positions a chunk touches (its history and
    its own tokens) get distinct rows. A stride sharing a factor with ``pages`` (17 at T = 128,
    where pages = 68 = 4 * 17) folds the table onto a few pages, and the blocks of
    ``idx_state_update`` then race on the same state rows.
    """
    while math.gcd(stride, pages) != 1:
        stride += 1
    return ((np.arange(logical_blocks) * stride + offset) % pages).astype(np.int32)


def make_inputs(cfg: IndexerConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray | int]:
    """Upstream's test fixture (plain random INT8 wq_b; weights' std scaled by sqrt(full/actual fan-in))."""
    cfg.validate()
    rng = np.random.default_rng(seed)
    t, d, h, hd, sp, n = cfg.T, cfg.D, cfg.n_heads, cfg.head_dim, cfg.start_pos, cfg.n_active
    fan = np.sqrt(4096 / d)
    pos = np.arange(sp, sp + t)
    freqs_cos, freqs_sin = rope_tables(cfg.compress_ratio, np.arange(cfg.max_pos), cfg.rope_dim)
    qr_i8, qr_scale = int8_quant(f32(rng.random((t, cfg.q_lora))))
    wq_b, wq_b_scale = random_int8_weight(rng, (h * hd, cfg.q_lora), 0.108 * np.sqrt(1024 / cfg.q_lora))
    nb, page, width = cfg.state_block_num, cfg.state_page, 2 * cfg.inner_out_dim
    state_table = page_table(cfg.state_max_blocks, nb)
    state = np.zeros((nb * page, width), np.float32)
    hist = np.arange(max(0, sp - cfg.state_len), sp)
    state[state_row(hist, state_table, page)] = f32((rng.random((hist.size, width)) - 0.5) * 0.05)
    idx_table = np.arange(cfg.idx_cache_blocks, dtype=np.int32)
    rows = cfg.idx_cache_blocks * cfg.block_size
    cache = np.zeros((rows, hd), np.int8)
    cache_scale = np.zeros((rows,), np.float32)
    hist_slots = np.arange(sp // cfg.compress_ratio)
    q, s = int8_quant(bf16(f32((rng.random((hist_slots.size, hd)) - 0.5) * 0.05)))
    cache[cache_row(hist_slots, idx_table, cfg.block_size)] = q
    cache_scale[cache_row(hist_slots, idx_table, cfg.block_size)] = s[:, 0]
    active = np.arange(t) < n
    emits = active & ((pos + 1) % cfg.compress_ratio == 0)
    slot = (pos + 1) // cfg.compress_ratio - 1
    idx_slot_mapping = np.where(emits, cache_row(np.maximum(slot, 0), idx_table, cfg.block_size), -1)
    state_slot_mapping = np.where(active, state_row(pos, state_table, page), -1)
    bs = cfg.block_size
    return {
        "x": bf16(f32((rng.random((t, d)) - 0.5) * 0.1)),
        "qr": qr_i8,
        "qr_scale": qr_scale,
        "wq_b": np.ascontiguousarray(wq_b.T),  # [Q_LORA, H*HEAD_DIM] (in, out)
        "wq_b_scale": wq_b_scale,
        "weights_proj": bf16(f32(rng.standard_normal((d, h)) * 0.2218)),
        "cos": freqs_cos[pos, : cfg.rope_dim // 2],
        "sin": freqs_sin[pos, : cfg.rope_dim // 2],
        "freqs_cos": freqs_cos,
        "freqs_sin": freqs_sin,
        "hadamard": hadamard(hd),
        "inner_compress_state": state.reshape(nb, page, width),
        "inner_compress_state_block_table": state_table,
        "inner_wkv": bf16(f32(rng.standard_normal((cfg.inner_out_dim, d)) * (0.0270 * fan))),
        "inner_wgate": bf16(f32(rng.standard_normal((cfg.inner_out_dim, d)) * (0.0513 * fan))),
        "inner_ape": f32(rng.standard_normal((cfg.compress_ratio, cfg.inner_out_dim)) * 0.1524),
        "inner_norm_w": bf16(f32(0.6903 + 0.2663 * rng.standard_normal(hd))),
        "idx_kv_cache": cache.reshape(cfg.idx_cache_blocks, bs, 1, hd),
        "idx_kv_scale": cache_scale.reshape(cfg.idx_cache_blocks, bs, 1, 1),
        "idx_block_table": idx_table,
        "position_ids": pos.astype(np.int32),
        "idx_slot_mapping": idx_slot_mapping.astype(np.int64),
        "inner_state_slot_mapping": state_slot_mapping.astype(np.int64),
        "num_tokens": n,
    }


def compress_golden(inputs: dict, cfg: IndexerConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inner compressor (upstream `golden_prefill_indexer_compressor`).

    Returns updated (idx_kv_cache, idx_kv_scale, compress_state) copies.
    """
    hd, r, sp, page = cfg.head_dim, cfg.compress_ratio, cfg.start_pos, cfg.state_page
    x = f32(inputs["x"])
    kv_proj = mm(x, f32(inputs["inner_wkv"]).T)
    score_proj = mm(x, f32(inputs["inner_wgate"]).T)
    ape = f32(inputs["inner_ape"])
    pos_all = np.asarray(inputs["position_ids"], np.int64)
    state = f32(inputs["inner_compress_state"]).copy()
    state_flat = state.reshape(-1, state.shape[-1])
    table = inputs["inner_compress_state_block_table"]
    cache = np.array(inputs["idx_kv_cache"]).reshape(-1, hd)
    cache_scale = f32(inputs["idx_kv_scale"]).copy().reshape(-1)
    dst = np.asarray(inputs["idx_slot_mapping"], np.int64)
    emit = np.flatnonzero(dst >= 0)
    if emit.size:
        pos = pos_all[emit]
        slot_pos = np.concatenate([pos[:, None] - 7 + np.arange(4), pos[:, None] - 3 + np.arange(4)], axis=1)
        half = np.repeat([0, 1], 4)[None, :]  # slots 0-3 use column half 0, slots 4-7 half 1
        cols = half[..., None] * hd + np.arange(hd)  # [1, 8, hd]
        from_hist = slot_pos < sp
        p_safe = np.maximum(slot_pos, 0)
        h_rows = state_row(np.where(from_hist, p_safe, 0), table, page)
        t_rows = np.clip(slot_pos - sp, 0, x.shape[0] - 1)
        kv = np.where(
            from_hist[..., None], state_flat[h_rows[..., None], cols], kv_proj[t_rows[..., None], cols]
        )
        chunk_score = score_proj[t_rows[..., None], cols] + ape[(p_safe % r)[..., None], cols]
        hist_score = state_flat[h_rows[..., None], cols + 2 * hd]
        score = np.where(from_hist[..., None], hist_score, chunk_score).astype(np.float32)
        has_prev = pos >= 7
        m, lsum, o = score[:, 7], np.ones_like(score[:, 7]), kv[:, 7]
        for s in range(7):
            visit = (has_prev | (s >= 4))[:, None]
            m_new = np.maximum(m, score[:, s])
            alpha = np.exp(m - m_new)
            beta = np.exp(score[:, s] - m_new)
            lsum = np.where(visit, alpha * lsum + beta, lsum).astype(np.float32)
            o = np.where(visit, alpha * o + beta * kv[:, s], o).astype(np.float32)
            m = np.where(visit, m_new, m)
        normed = rmsnorm((o / lsum).astype(np.float32), inputs["inner_norm_w"], cfg.norm_eps)
        half_rope = cfg.rope_dim // 2
        cmp_pos = pos - 3
        cos = f32(inputs["freqs_cos"])[cmp_pos, :half_rope]
        sin = f32(inputs["freqs_sin"])[cmp_pos, :half_rope]
        nope = hd - cfg.rope_dim
        rows = np.concatenate([bf16(normed[:, :nope]), bf16(rope_rotate(normed[:, nope:], cos, sin))], axis=1)
        final = bf16(mm(rows, f32(inputs["hadamard"])))
        q, sd = int8_quant(final)
        cache[dst[emit]] = q
        cache_scale[dst[emit]] = sd[:, 0]
    upd = np.flatnonzero(np.asarray(inputs["inner_state_slot_mapping"]) >= 0)
    rows_st = np.asarray(inputs["inner_state_slot_mapping"], np.int64)[upd]
    state_flat[rows_st, : 2 * hd] = kv_proj[upd]
    state_flat[rows_st, 2 * hd :] = score_proj[upd] + ape[pos_all[upd] % r]
    return (
        cache.reshape(np.shape(inputs["idx_kv_cache"])),
        cache_scale.reshape(np.shape(inputs["idx_kv_scale"])),
        state,
    )


def query_golden(inputs: dict, cfg: IndexerConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query path and head weights: (q_i8 [T,H,hd], q_scale [T,H,1], weights [T,H])."""
    t, h, hd = cfg.T, cfg.n_heads, cfg.head_dim
    q = (f32(imm(inputs["qr"], inputs["wq_b"])) * f32(inputs["qr_scale"])).astype(np.float32)
    q = (q * f32(inputs["wq_b_scale"])[None, :]).astype(np.float32).reshape(t, h, hd)
    nope = hd - cfg.rope_dim
    rope = rope_rotate(q[..., nope:], f32(inputs["cos"])[:, None, :], f32(inputs["sin"])[:, None, :])
    q = np.concatenate([bf16(q[..., :nope]), bf16(rope)], axis=-1)
    qh = mm(q, f32(inputs["hadamard"]))
    q_i8, q_scale = int8_quant(qh)
    weights = (mm(f32(inputs["x"]), f32(inputs["weights_proj"])) * _F32(cfg.weights_scale)).astype(np.float32)
    return q_i8, q_scale, weights


def visible_counts(position_ids: np.ndarray, cfg: IndexerConfig) -> np.ndarray:
    """visible[t] = min((pos + 1) // ratio, INDEXER_SCORE_CAP): the causal bound."""
    return np.minimum((np.asarray(position_ids, np.int64) + 1) // cfg.compress_ratio, cfg.score_cap)


def topk_golden(score: np.ndarray, visible: np.ndarray, n: int, cfg: IndexerConfig) -> np.ndarray:
    """[T, IDX_TOPK] int32: the min(TOPK_CAP, visible) best columns of active rows, then -1."""
    t = score.shape[0]
    out = np.full((t, cfg.idx_topk), -1, np.int32)
    order = np.argsort(-score.astype(np.float64), axis=-1, kind="stable")
    k = np.where(np.arange(t) < n, np.minimum(cfg.topk_cap, visible), 0)
    width = min(cfg.idx_topk, order.shape[1])
    keep = np.arange(width)[None, :] < k[:, None]
    out[:, :width] = np.where(keep, order[:, :width], -1)
    return out


def indexer_golden(inputs: dict, cfg: IndexerConfig = CONFIG) -> dict[str, np.ndarray]:
    """The whole prefill indexer: compressor, query, score, top-k."""
    t, hd = cfg.T, cfg.head_dim
    n = int(inputs["num_tokens"])
    cache, cache_scale, state = compress_golden(inputs, cfg)
    q_i8, q_scale, weights = query_golden(inputs, cfg)
    visible = visible_counts(inputs["position_ids"], cfg)
    mv = int(visible[:n].max()) if n else 0
    score = np.full((t, cfg.score_cap), FP32_NEG_INF, np.float32)
    if mv:
        rows = cache_row(np.arange(mv), inputs["idx_block_table"], cfg.block_size)
        kv_i8 = cache.reshape(-1, hd)[rows]
        kv_sc = cache_scale.reshape(-1)[rows]
        raw = imm(q_i8.reshape(-1, hd), kv_i8.T).reshape(t, cfg.n_heads, mv)
        s = ((f32(raw) * q_scale).astype(np.float32) * kv_sc[None, None, :]).astype(np.float32)
        contrib = (np.maximum(s, _F32(0)) * weights[:, :, None]).astype(np.float32)
        sc = contrib.astype(np.float64).sum(axis=1).astype(np.float32)
        sc[np.arange(mv)[None, :] >= visible[:, None]] = FP32_NEG_INF
        score[:, :mv] = sc
    topk_full = topk_golden(score[:, :mv], visible, n, cfg)
    return {
        "score": score,
        "topk_idxs": topk_full[:, : cfg.topk_cap],
        "topk_full": topk_full,
        "idx_kv_cache": cache,
        "idx_kv_scale": cache_scale,
        "inner_compress_state": state,
        "visible": visible.astype(np.int32),
        "q_i8": q_i8,
        "q_scale": q_scale,
        "weights": weights,
    }


def golden(inputs: dict, cfg: IndexerConfig = CONFIG) -> dict[str, np.ndarray]:
    """Outputs named as in TOLERANCES (and more intermediates)."""
    return indexer_golden(inputs, cfg)
