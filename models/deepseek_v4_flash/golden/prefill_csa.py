"""Golden for prefill CSA sparse attention: row packing and attention with sinks
(upstream `prefill_sparse_attn.py`).

Each token t attends to two kinds of sparse rows (upstream's packing):
- **window rows**: the positions [pos - w + 1, pos], w = min(WIN, pos + 1), oldest first, as
  physical rows of the original KV cache (the token itself included);
- **compressed rows**: the indexer's top-k slots (descending score, -1 padded), mapped through
  the compressed block table.

Two packings exist. The kernel's (`pack_kernel`) is fixed: block 0 holds the WIN window
columns, blocks 1.. hold compressed columns 0 .. PAD - WIN - 1, invalid slots are zero rows
masked by a FP32_NEG_INF bias, and a block with no valid row is skipped. The golden's
(`pack_golden`) compacts all valid rows (window first, then every valid compressed column)
and cuts them into tiles of ATTN_TILE; the two differ only by per-tile bf16 rounding of P.

Attention per tile: s = Q K^T * scale, p = exp(s - rowmax), o = bf16(p) @ V, merged online;
the sink adds exp(sink[h] - M) to the denominator. Then inverse RoPE, the grouped wo_a
projection, per-(token, group) INT8, the INT8 wo_b GEMM summed over groups in ascending order,
and bf16. Tokens past num_tokens (or with no valid row) give 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._common import (
    FP32_NEG_INF,
    PrefillChunk,
    Tolerance,
    bf16,
    f32,
    imm,
    int8_quant,
    mm,
    paged_row,
    rope_rotate,
    rope_tables,
)

_F32 = np.float32


@dataclass(frozen=True)
class CsaConfig(PrefillChunk):
    """Sparse-attention sizes (dspark, T = 512) and the standalone test's defaults."""

    T: int = 512
    D: int = 4096
    n_heads: int = 64
    head_dim: int = 512
    rope_dim: int = 64
    win: int = 128
    idx_topk: int = 512
    compress_ratio: int = 4
    attn_tile: int = 128
    o_groups: int = 8
    o_lora: int = 1024
    block_size: int = 32
    max_pos: int = 16384
    ori_block_num: int = 512
    cmp_block_num: int = 256
    start_pos: int = 0
    num_tokens: int | None = None  # None: T

    @property
    def nope_dim(self) -> int:
        return self.head_dim - self.rope_dim

    @property
    def softmax_scale(self) -> float:
        return self.head_dim**-0.5

    @property
    def max_compressed(self) -> int:  # PREFILL_MAX_COMPRESSED
        return max(1, min(self.idx_topk, self.win + self.win // 2))

    @property
    def sparse_topk(self) -> int:  # PREFILL_SPARSE_TOPK
        return min(self.win + self.idx_topk, min(self.win, self.T) + self.max_compressed)

    @property
    def attn_blocks(self) -> int:
        return -(-self.sparse_topk // self.attn_tile)

    @property
    def sparse_pad(self) -> int:  # PREFILL_SPARSE_PAD: packed rows per token
        return self.attn_blocks * self.attn_tile

    @property
    def valid_block_mask_cols(self) -> int:  # block count rounded up to 32 bytes of int32
        return -(-self.attn_blocks // 8) * 8

    @property
    def cmp_max_blocks(self) -> int:
        return self.max_pos // self.compress_ratio // self.block_size

    def max_sparse_rows(self) -> int:
        """Packed rows a token can need: WIN plus what the indexer *emits* (post-fix, rule C401)."""
        mvc = (self.start_pos + self.n_active) // self.compress_ratio
        return self.win + min(mvc, self.idx_topk)

    def validate(self) -> None:
        """Module asserts and the guards of upstream `prefill_csa.py`, derived from the formulas."""
        n, sp = self.n_active, self.start_pos
        if self.win != self.attn_tile:
            raise ValueError("the kernel asserts WIN == PREFILL_ATTN_TILE")
        if self.n_heads % self.o_groups:
            raise ValueError("heads must split evenly into o_groups")
        if self.attn_blocks > self.valid_block_mask_cols:
            raise ValueError("PREFILL_ATTN_BLOCKS <= VALID_BLOCK_MASK_COLS violated")
        if self.topk_cap > self.cmp_max_blocks * self.block_size:
            raise ValueError("INDEXER_TOPK_CAP <= compressed cache capacity violated")
        if not 0 < n <= self.T or sp < 0:
            raise ValueError(f"0 < num_tokens <= T and start_pos >= 0 required (n={n}, start_pos={sp})")
        if sp + self.T > self.max_pos or sp + self.T > self.ori_block_num * self.block_size:
            raise ValueError("the largest position must lie inside MAX_POS and the ori KV pool")
        mvc = (sp + n) // self.compress_ratio
        if mvc > self.score_cap:
            raise ValueError(f"max_visible_cmp={mvc} > INDEXER_SCORE_CAP={self.score_cap}")
        if self.max_sparse_rows() > self.sparse_pad:
            raise ValueError(
                f"WIN + min(max_visible_cmp, IDX_TOPK) <= PREFILL_SPARSE_PAD={self.sparse_pad} violated"
            )
        if mvc > self.cmp_max_blocks * self.block_size:
            raise ValueError("max_visible_cmp exceeds the compressed cache capacity")


CONFIG = CsaConfig()
REDUCED = CsaConfig(
    T=64, D=256, n_heads=8, head_dim=128, win=16, idx_topk=64, attn_tile=16, o_groups=2, o_lora=64,
    max_pos=1024, ori_block_num=32, cmp_block_num=16,
)  # fmt: skip

TOLERANCES = {
    "attn_out": Tolerance(
        "ratio_allclose", {"atol": 1e-4, "rtol": 1 / 128, "zero_tail": True}, valid_rows_from="num_tokens"
    ),
}


def window_indices(
    positions: np.ndarray, n: int, win: int, block_table: np.ndarray | None = None
) -> np.ndarray:
    """swa_indices [T, WIN] int32: each active token's window, oldest first, then -1.

    Positions map to physical rows through `block_table` (table[p // 32] * 32 + p % 32); with
    no table the rows are the raw positions (the standalone test's identity mapping).
    """
    pos = np.asarray(positions, np.int64)
    w = np.minimum(win, pos + 1)
    col = np.arange(win)[None, :]
    p = pos[:, None] - w[:, None] + 1 + col
    valid = (col < w[:, None]) & (np.arange(pos.size) < n)[:, None]
    if block_table is not None:
        p = paged_row(np.maximum(p, 0), block_table, 32)
    return np.where(valid, p, -1).astype(np.int32)


def cmp_physical_rows(cmp_indices: np.ndarray, cmp_block_table: np.ndarray, cfg: CsaConfig) -> np.ndarray:
    """Physical cmp_kv rows of compressed slots, -1 for -1 slots, slots past capacity, or block < 0."""
    c = np.asarray(cmp_indices, np.int64)
    table = np.asarray(cmp_block_table, np.int64)
    ok = (c >= 0) & (c < cfg.cmp_max_blocks * cfg.block_size)
    blk = table[np.where(ok, c, 0) // cfg.block_size]
    ok &= blk >= 0
    return np.where(ok, blk * cfg.block_size + c % cfg.block_size, -1)


@dataclass(frozen=True)
class KernelPacking:
    ori_rows: np.ndarray  # [T, WIN] physical ori rows of block 0, -1 = zero row
    cmp_rows: np.ndarray  # [T, PAD - WIN] physical cmp rows of blocks 1.., -1 = zero row
    bias: np.ndarray  # [T, PAD] 0 for a valid row, FP32_NEG_INF otherwise
    valid_block_mask: np.ndarray  # [T, VALID_BLOCK_MASK_COLS] int32, 1 if the block has a valid row


def pack_kernel(
    swa: np.ndarray, cmp_indices: np.ndarray, cmp_block_table: np.ndarray, cfg: CsaConfig
) -> KernelPacking:
    """The kernel's fixed packing: it reads only compressed columns 0 .. PAD - WIN - 1."""
    width = cfg.sparse_pad - cfg.win
    cmp = cmp_physical_rows(np.asarray(cmp_indices)[:, :width], cmp_block_table, cfg)
    if cmp.shape[1] < width:
        cmp = np.pad(cmp, ((0, 0), (0, width - cmp.shape[1])), constant_values=-1)
    ori = np.asarray(swa, np.int64)[:, : cfg.win]
    rows = np.concatenate([ori, cmp], axis=1)
    bias = np.where(rows >= 0, 0.0, FP32_NEG_INF).astype(np.float32)
    t = rows.shape[0]
    blocks = (rows.reshape(t, cfg.attn_blocks, cfg.attn_tile) >= 0).any(axis=-1)
    mask = np.zeros((t, cfg.valid_block_mask_cols), np.int32)
    mask[:, : cfg.attn_blocks] = blocks
    return KernelPacking(ori.astype(np.int32), cmp.astype(np.int32), bias, mask)


def pack_golden(swa: np.ndarray, cmp_indices: np.ndarray, cmp_block_table: np.ndarray, cfg: CsaConfig):
    """The golden's compaction: per token, (valid window rows, valid compressed rows) in column order."""
    cmp = cmp_physical_rows(cmp_indices, cmp_block_table, cfg)
    swa = np.asarray(swa, np.int64)
    return [(swa[t][swa[t] >= 0], cmp[t][cmp[t] >= 0]) for t in range(swa.shape[0])]


def attend(q: np.ndarray, kv: np.ndarray, sink: np.ndarray, tile: int, scale: float) -> np.ndarray:
    """One token's sparse attention with sinks: q [H, hd], kv [R, hd] (K = V) -> [H, hd] fp32."""
    if kv.shape[0] == 0:
        return np.zeros_like(q)
    big_m = big_l = big_o = None
    for r0 in range(0, kv.shape[0], tile):
        blk = kv[r0 : r0 + tile]
        s = (mm(q, blk.T) * _F32(scale)).astype(np.float32)
        m = np.max(s, axis=-1, keepdims=True)
        p = np.exp((s - m).astype(np.float32))
        lsum = p.astype(np.float64).sum(axis=-1, keepdims=True).astype(np.float32)
        o = mm(bf16(p), blk)
        if big_m is None:
            big_m, big_l, big_o = m, lsum, o
            continue
        m_new = np.maximum(big_m, m)
        alpha, beta = np.exp(big_m - m_new), np.exp(m - m_new)
        big_l = (alpha * big_l + beta * lsum).astype(np.float32)
        big_o = (alpha * big_o + beta * o).astype(np.float32)
        big_m = m_new
    denom = (big_l + np.exp(f32(sink)[:, None] - big_m)).astype(np.float32)
    return (big_o / denom).astype(np.float32)


def output_projection(
    o: np.ndarray, wo_a: np.ndarray, wo_b: np.ndarray, wo_b_scale: np.ndarray
) -> np.ndarray:
    """Grouped wo_a, per-(t, group) INT8, INT8 wo_b summed over groups ascending, bf16 (upstream steps 3-5)."""
    t = o.shape[0]
    g, o_lora, group_in = wo_a.shape
    og = f32(o).reshape(t, g, group_in)
    o_r = np.stack([mm(og[:, i], f32(wo_a[i]).T) for i in range(g)], axis=1)  # [T, G, O_LORA]
    o_i8, sd = int8_quant(o_r)
    out = np.zeros((t, wo_b.shape[0]), np.float32)
    for i in range(g):
        p = imm(o_i8[:, i], np.asarray(wo_b)[:, i * o_lora : (i + 1) * o_lora].T)
        out = (out + f32(p) * sd[:, i]).astype(np.float32)
    return bf16((out * f32(wo_b_scale)[None, :]).astype(np.float32))


def sparse_attn_golden(inputs: dict, cfg: CsaConfig = CONFIG) -> dict[str, np.ndarray]:
    """attn_out [T, D] bf16 (plus o, the bf16 attention output [T, H, hd] before projection)."""
    t, h, hd, nope = cfg.T, cfg.n_heads, cfg.head_dim, cfg.nope_dim
    n = int(inputs["num_tokens"])
    q = f32(inputs["q"])
    ori = f32(inputs["ori_kv"]).reshape(-1, hd)
    cmp = f32(inputs["cmp_kv"]).reshape(-1, hd)
    packed = pack_golden(inputs["swa_indices"], inputs["cmp_indices"], inputs["cmp_block_table"], cfg)
    out = np.zeros((t, h, hd), np.float32)
    for i in range(n):
        rows = np.concatenate([ori[packed[i][0]], cmp[packed[i][1]]], axis=0)
        out[i] = attend(q[i], rows, inputs["attn_sink"], cfg.attn_tile, cfg.softmax_scale)
    half = cfg.rope_dim // 2
    cos = f32(inputs["freqs_cos"])[:, None, :half]
    sin = f32(inputs["freqs_sin"])[:, None, :half]
    rope = bf16(rope_rotate(out[..., nope:], cos, sin, inverse=True))
    o = np.concatenate([bf16(out[..., :nope]), rope], axis=-1)
    attn_out = output_projection(o, inputs["wo_a"], inputs["wo_b"], inputs["wo_b_scale"])
    return {"attn_out": attn_out, "o": o}


def make_inputs(cfg: CsaConfig = CONFIG, seed: int = 0, cmp_indices: np.ndarray | None = None) -> dict:
    """The fixture of upstream `prefill_sparse_attn.py`'s test (ratio 4): cmp_indices[t] =
    arange(cc_t) then -1 unless given.

    Pass an indexer golden's `topk_full` as `cmp_indices` to chain the two layers.
    """
    cfg.validate()
    rng = np.random.default_rng(seed)
    t, h, hd, n, bs = cfg.T, cfg.n_heads, cfg.head_dim, cfg.n_active, cfg.block_size
    g = cfg.o_groups
    group_in = h // g * hd
    pos = np.arange(cfg.start_pos, cfg.start_pos + t)
    if cmp_indices is None:
        cmp_valid = min(cfg.idx_topk, t // cfg.compress_ratio, cfg.cmp_max_blocks * bs)
        cc = np.minimum(np.minimum(cmp_valid, (pos + 1) // cfg.compress_ratio), cfg.idx_topk)
        cc = np.where(np.arange(t) < n, cc, 0)
        col = np.arange(cfg.idx_topk)[None, :]
        cmp_indices = np.where(col < cc[:, None], col, -1).astype(np.int32)
    cos, sin = rope_tables(cfg.compress_ratio, pos, cfg.rope_dim)
    wo_b_f = bf16(f32((rng.random((cfg.D, g * cfg.o_lora)) - 0.5) * (g * cfg.o_lora) ** -0.5))
    wo_b, wo_b_scale = int8_quant(wo_b_f, axis=-1)

    def uniform_bf16(shape: tuple[int, ...], scale: float) -> np.ndarray:
        return bf16(f32((rng.random(shape) - 0.5) * scale))

    return {
        "q": uniform_bf16((t, h, hd), 0.05),
        "ori_kv": uniform_bf16((cfg.ori_block_num, bs, 1, hd), 0.05),
        "cmp_kv": uniform_bf16((cfg.cmp_block_num, bs, 1, hd), 0.05),
        "cmp_block_table": (np.arange(cfg.cmp_max_blocks) % cfg.cmp_block_num).astype(np.int32),
        "swa_indices": window_indices(pos, n, cfg.win),
        "cmp_indices": np.asarray(cmp_indices, np.int32),
        "attn_sink": np.zeros(h, np.float32),
        "freqs_cos": cos,
        "freqs_sin": sin,
        "wo_a": uniform_bf16((g, cfg.o_lora, group_in), group_in**-0.5),
        "wo_b": wo_b,
        "wo_b_scale": wo_b_scale[:, 0],
        "num_tokens": n,
    }


def golden(inputs: dict, cfg: CsaConfig = CONFIG) -> dict[str, np.ndarray]:
    """Outputs named as in TOLERANCES (and `o`)."""
    return sparse_attn_golden(inputs, cfg)
