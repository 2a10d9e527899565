# The DeepSeek-V4-Flash prefill indexer (upstream prefill_indexer.py; dspark, after pypto-lib #982)
# for one chunk of T tokens at positions start_pos .. start_pos + T - 1 (the first num_tokens
# active):
#
#   1. compressed index keys: every 4 positions become one INT8 key of the paged
#      index-KV cache: softmax pooling over 8 slots (the previous 4 positions, read from the
#      compress state before the chunk, and the current 4), RMSNorm, RoPE at pos - 3,
#      Hadamard, bf16, INT8 quant-on-write; then the compress state takes the chunk's rows;
#   2. the query path: INT8 q projection, RoPE, Hadamard, per-head INT8, and the
#      head weights x @ weights_proj * (H * HD)^-0.5;
#   3. the ReLU-weighted INT8 score: score[t, c] = sum_h relu(q_i8 . kv_i8 * scales) *
#      weight[t, h] for the compressed columns c < visible[t] = min((pos + 1) // 4,
#      INDEXER_SCORE_CAP) -- the causal bound: a token at pos = 4c + 3 sees its own slot c --
#      and FP32_NEG_INF past it; INDEXER_SCORE_CAP = 2 * T / COMPRESS_RATIO (this chunk plus
#      one chunk of history);
#   4. the top-k: the min(INDEXER_TOPK_CAP, visible) best columns in descending order,
#      padded with -1. `topk(row, k, valid = visible)` is lowered to sort32 plus exactly the
#      merge stages the largest admissible `visible` needs: T ranges over 128..8192, so the
#      score row is SORT_LEN = 2 * 8192 / 4 = 4096 wide and the chain is sized for 4096
#      candidates at every T (seed bug 4, docs/runtime-semantics.md §18, cannot be written).
#
# Configurations (models/deepseek_v4_flash/README.md):
#   real (default)  T=512, D=4096, H=64, HD=128, Q_LORA=1024, IDX_TOPK=512, MAX_POS=16384
#                   (INDEXER_SCORE_CAP = INDEXER_TOPK_CAP = 256)
#   reduced (tests) T=128, D=256, H=8, Q_LORA=128, IDX_TOPK=64, MAX_POS=1024
#                   (HD 128 = the Hadamard size, rope 64, compress ratio 4 and overlap 2 kept;
#                   INDEXER_SCORE_CAP = INDEXER_TOPK_CAP = 64)
layer prefill_indexer(T = 512 in 128..8192 step 128, D = 4096, H = 64, HD = 128, Q_LORA = 1024,
                      IDX_TOPK = 512, MAX_POS = 16384) {
  const COMPRESS_RATIO = 4
  const ROPE = 64                               # the rope part is the last 64 of each head
  const NOPE = HD - ROPE
  const HALF_ROPE = ROPE / 2
  const INNER_OUT = 2 * HD                      # overlap 2: column half 0 (previous), 1 (current)
  const STATE_W = 2 * INNER_OUT                 # a state row: kv (INNER_OUT) | score (INNER_OUT)
  const STATE_PAGE = 2
  const STATE_ROWS = (T + 8) / STATE_PAGE * STATE_PAGE
  const STATE_MAX_BLOCKS = MAX_POS / STATE_PAGE
  const BLOCK_SIZE = 32                         # index-KV cache page
  const CACHE_BLOCKS = 2 * (MAX_POS / COMPRESS_RATIO / BLOCK_SIZE)
  const CACHE_ROWS = CACHE_BLOCKS * BLOCK_SIZE
  const INDEXER_SCORE_CAP = 2 * max(1, T / COMPRESS_RATIO)
  const INDEXER_TOPK_CAP = min(IDX_TOPK, INDEXER_SCORE_CAP)
  const SORT_LEN = 2 * 8192 / COMPRESS_RATIO    # INDEXER_SCORE_CAP at the largest admissible T
  const EMITS = T / COMPRESS_RATIO              # compressed rows a chunk can write
  const K_CHUNK = min(256, D)                   # K per cube step of the x projections
  const KV_T_TILE = 64                          # tokens per kv/score projection block (L0C: 2 x [64, 256] f32)
  const EMIT_TILE = 16                          # compressed rows per compress block
  const Q_TILE = 128                            # tokens per query block
  const S_TILE = 64                             # tokens per score block
  const C_TILE = min(256, INDEXER_SCORE_CAP)    # compressed columns per score step
  const TOPK_TILE = 4                           # tokens per top-k block
  assert HD == 128, "the Hadamard is 128 x 128 and the rope part is the last 64 of a head"
  assert D % K_CHUNK == 0
  assert EMITS % EMIT_TILE == 0
  assert T % Q_TILE == 0 and T % S_TILE == 0 and T % KV_T_TILE == 0 and T % 16 == 0
  assert INDEXER_SCORE_CAP % C_TILE == 0 and INDEXER_SCORE_CAP % BLOCK_SIZE == 0
  assert INDEXER_SCORE_CAP <= SORT_LEN, "the score row holds every candidate"
  assert INDEXER_SCORE_CAP <= CACHE_ROWS, "every visible compressed slot has a cache row"
  golden "prefill_indexer_golden.py"

  scalar start_pos: i32 in 0..MAX_POS - T
  scalar num_tokens: i32 in 1..T
  scalar max_visible_cmp = (start_pos + num_tokens) / COMPRESS_RATIO
  guard num_tokens <= T, "1 <= num_tokens <= T"
  guard start_pos + T <= MAX_POS, "0 <= start_pos <= MAX_POS - T: every position has a RoPE row"
  guard max_visible_cmp <= INDEXER_SCORE_CAP, "the score row holds every visible compressed row"

  input   x: bf16[T, D]
  input   qr: i8[T, Q_LORA]
  input   qr_scale: f32[T, 1]
  input   wq_b: i8[Q_LORA, H * HD]              # (in, out)
  input   wq_b_scale: f32[1, H * HD]
  input   weights_proj: bf16[D, H]
  input   cos: f32[T, HALF_ROPE]                # freqs_cos[pos, :32]
  input   sin: f32[T, HALF_ROPE]
  input   freqs_cos: bf16[MAX_POS, ROPE]
  input   freqs_sin: bf16[MAX_POS, ROPE]
  input   hadamard: bf16[HD, HD]
  input   inner_wkv: bf16[INNER_OUT, D]
  input   inner_wgate: bf16[INNER_OUT, D]
  input   inner_ape: f32[COMPRESS_RATIO, INNER_OUT]
  input   inner_norm_w: bf16[1, HD]
  input   inner_compress_state_block_table: i32[1, STATE_MAX_BLOCKS]
  input   idx_block_table: i32[1, CACHE_BLOCKS]
  input   idx_slot_mapping: i32[1, T]           # cache row of the key a token emits, else -1
  input   inner_state_slot_mapping: i32[1, T]   # state row of an active token, else -1
  inout   inner_compress_state: f32[STATE_ROWS, STATE_W]
  inout   idx_kv_cache: i8[CACHE_ROWS, HD]
  inout   idx_kv_scale: f32[CACHE_ROWS, 1]
  output  score: f32[T, INDEXER_SCORE_CAP]
  output  topk_idxs: i32[T, INDEXER_TOPK_CAP]
  scratch win: f32[8 + T, STATE_W]              # row i: position start_pos - 8 + i
  scratch key_rows: bf16[EMITS, HD]
  scratch q_rows: bf16[T, HD]
  scratch q_i8: i8[T, H * HD]
  scratch q_scale: f32[T, H]
  scratch head_w: f32[T, H]
  scratch kv_i8: i8[INDEXER_SCORE_CAP, HD]      # cache rows of slots 0 .. INDEXER_SCORE_CAP - 1
  scratch kv_scale: f32[1, INDEXER_SCORE_CAP]
  scratch score_wide: f32[T, SORT_LEN]

  # ---- 1. compressed index keys
  # kv | score + ape of every token of the chunk, into win[8 + t]
  task idx_kv_proj spmd(T / KV_T_TILE) on mix {
    let t0 = block * KV_T_TILE
    let kv = zeros(f32, [KV_T_TILE, INNER_OUT])
    let sc = zeros(f32, [KV_T_TILE, INNER_OUT])
    for kc in range(D / K_CHUNK) {
      kv = matmul_acc(kv, x[t0 : t0 + KV_T_TILE, kc * K_CHUNK : (kc + 1) * K_CHUNK],
                      inner_wkv[:, kc * K_CHUNK : (kc + 1) * K_CHUNK], b_trans)
      sc = matmul_acc(sc, x[t0 : t0 + KV_T_TILE, kc * K_CHUNK : (kc + 1) * K_CHUNK],
                      inner_wgate[:, kc * K_CHUNK : (kc + 1) * K_CHUNK], b_trans)
    }
    win[8 + t0 : 8 + t0 + KV_T_TILE, 0 : INNER_OUT] = kv
    for j in range(COMPRESS_RATIO) {            # rows j, j + 4, ... share pos % 4
      let a = (start_pos + t0 + j) % COMPRESS_RATIO
      win[8 + t0 + j : 8 + t0 + KV_T_TILE : COMPRESS_RATIO, INNER_OUT : STATE_W] =
        col_expand_add(sc[j : KV_T_TILE : COMPRESS_RATIO, :], inner_ape[a : a + 1, :])
    }
  }

  # the 8 positions before the chunk, from the compress state (kv 0 and score -inf before 0)
  task idx_history spmd(8) on aiv {
    let p = start_pos - 8 + block
    if p >= 0 {
      let r = read(inner_compress_state_block_table[0, p / STATE_PAGE]) * STATE_PAGE + p % STATE_PAGE
      win[block : block + 1, :] = inner_compress_state[r : r + 1, :]
    } else {
      win[block : block + 1, 0 : INNER_OUT] = zeros(f32, [1, INNER_OUT])
      win[block : block + 1, INNER_OUT : STATE_W] = full(f32, [1, INNER_OUT], -3.4028234663852886e38)
    }
  }

  # one key per 4 positions: token t = off + 4j (pos + 1 = 0 mod 4) pools win rows t + 1 .. t + 8
  task idx_compress spmd(EMITS / EMIT_TILE) on mix {
    let j0 = block * EMIT_TILE
    let off = 3 - start_pos % COMPRESS_RATIO    # the first token of the chunk that emits
    let base = off + COMPRESS_RATIO * j0 + 1    # win row of slot 0 of the tile's first key
    let last = base + COMPRESS_RATIO * (EMIT_TILE - 1) + 1   # tight stop of a strided slice
    # online softmax over the slots per dimension: slot 7 first, then 0 .. 6
    let m = win[base + 7 : last + 7 : COMPRESS_RATIO, INNER_OUT + HD : STATE_W]
    let l = full(f32, [EMIT_TILE, HD], 1.0)
    let o = win[base + 7 : last + 7 : COMPRESS_RATIO, HD : INNER_OUT]
    for s in range(7) {
      let col = s / 4 * HD                      # previous window: half 0, current: half 1
      let sc = win[base + s : last + s : COMPRESS_RATIO, INNER_OUT + col : INNER_OUT + col + HD]
      let m_new = maximum(m, sc)
      let alpha = exp(m - m_new)
      let beta = exp(sc - m_new)
      l = alpha * l + beta
      o = alpha * o + beta * win[base + s : last + s : COMPRESS_RATIO, col : col + HD]
      m = m_new
    }
    let pooled = o / l
    let normed = col_expand_mul(row_expand_mul(pooled, rsqrt(row_sum(pooled * pooled) * (1.0 / HD) + 0.000001)),
                                cast(inner_norm_w[0 : 1, :], f32))
    # RoPE at cmp_pos = pos - 3 on the last 64 (even, odd) pairs; nope and rope rounded to bf16
    let p0 = start_pos + base - 4               # cmp_pos = pos - 3 of the tile's first key
    let c = cast(freqs_cos[p0 : p0 + COMPRESS_RATIO * (EMIT_TILE - 1) + 1 : COMPRESS_RATIO, 0 : HALF_ROPE], f32)
    let sn = cast(freqs_sin[p0 : p0 + COMPRESS_RATIO * (EMIT_TILE - 1) + 1 : COMPRESS_RATIO, 0 : HALF_ROPE], f32)
    let ev = normed[:, NOPE : HD : 2]
    let od = normed[:, NOPE + 1 : HD : 2]
    key_rows[j0 : j0 + EMIT_TILE, 0 : NOPE] = cast(normed[:, 0 : NOPE], bf16)
    key_rows[j0 : j0 + EMIT_TILE, NOPE : HD : 2] = cast(ev * c - od * sn, bf16)
    key_rows[j0 : j0 + EMIT_TILE, NOPE + 1 : HD : 2] = cast(ev * sn + od * c, bf16)
    # Hadamard, bf16, INT8 quant-on-write into the cache rows the tokens map to
    let key = cast(cast(matmul(key_rows[j0 : j0 + EMIT_TILE, :], hadamard[:, :]), bf16), f32)
    let sq = 127.0 / maximum(row_max(abs(key)), 0.0001)
    let q = cast(row_expand_mul(key, sq), i8)
    let sd = recip(sq)
    for jj in range(EMIT_TILE) {
      let dst = read(idx_slot_mapping[0, off + COMPRESS_RATIO * (j0 + jj)])
      if dst >= 0 {
        idx_kv_cache[dst : dst + 1, :] = q[jj : jj + 1, :]  # dslc: ignore[R506] one cache row per compressed slot: the index-KV block table is injective
        idx_kv_scale[dst : dst + 1, :] = sd[jj : jj + 1, :]
      }
    }
  }

  # after the keys: the state takes the chunk's rows (history was read by idx_history: WAR)
  task idx_state_update spmd(T / 16) on aiv after idx_history {
    for i in range(16) {
      let t = block * 16 + i
      let r = read(inner_state_slot_mapping[0, t])
      if r >= 0 {
        inner_compress_state[r : r + 1, :] = win[8 + t : 9 + t, :]  # dslc: ignore[R506] one state row per position: the compress-state page table is injective
      }
    }
  }

  # ---- 2. the query path and the head weights
  task idx_query spmd(T / Q_TILE) on mix {
    let t0 = block * Q_TILE
    let c = cos[t0 : t0 + Q_TILE, :]
    let sn = sin[t0 : t0 + Q_TILE, :]
    for h in range(H) {
      let qf = col_expand_mul(row_expand_mul(cast(matmul(qr[t0 : t0 + Q_TILE, :], wq_b[:, h * HD : (h + 1) * HD]), f32),
                                             qr_scale[t0 : t0 + Q_TILE, :]),
                              wq_b_scale[0 : 1, h * HD : (h + 1) * HD])
      let ev = qf[:, NOPE : HD : 2]
      let od = qf[:, NOPE + 1 : HD : 2]
      q_rows[t0 : t0 + Q_TILE, 0 : NOPE] = cast(qf[:, 0 : NOPE], bf16)
      q_rows[t0 : t0 + Q_TILE, NOPE : HD : 2] = cast(ev * c - od * sn, bf16)
      q_rows[t0 : t0 + Q_TILE, NOPE + 1 : HD : 2] = cast(ev * sn + od * c, bf16)
      let qh = matmul(q_rows[t0 : t0 + Q_TILE, :], hadamard[:, :])
      let sq = 127.0 / maximum(row_max(abs(qh)), 0.0001)
      q_i8[t0 : t0 + Q_TILE, h * HD : (h + 1) * HD] = cast(row_expand_mul(qh, sq), i8)
      q_scale[t0 : t0 + Q_TILE, h : h + 1] = recip(sq)
    }
    let w = zeros(f32, [Q_TILE, H])
    for kc in range(D / K_CHUNK) {
      w = matmul_acc(w, x[t0 : t0 + Q_TILE, kc * K_CHUNK : (kc + 1) * K_CHUNK],
                     weights_proj[kc * K_CHUNK : (kc + 1) * K_CHUNK, :])
    }
    let scale = rsqrt(full(f32, [1, 1], H * HD))   # WEIGHTS_SCALE = HD^-0.5 * H^-0.5
    head_w[t0 : t0 + Q_TILE, :] = w * read(scale[0, 0])
  }

  # ---- 3. the score
  # the cache rows of compressed slots 0 .. INDEXER_SCORE_CAP - 1, through the block table
  task idx_kv_gather spmd(INDEXER_SCORE_CAP / BLOCK_SIZE) on aiv after idx_compress {
    let r = read(idx_block_table[0, block]) * BLOCK_SIZE
    kv_i8[block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE, :] = idx_kv_cache[r : r + BLOCK_SIZE, :]
    kv_scale[0 : 1, block * BLOCK_SIZE : (block + 1) * BLOCK_SIZE] = transpose(idx_kv_scale[r : r + BLOCK_SIZE, :])
  }

  # columns past INDEXER_SCORE_CAP stay -inf in the sort row (-3.4028234663852886e38 is
  # FP32_NEG_INF, the most negative finite fp32: the reference's "-inf" for masks and pads)
  task idx_score_init spmd(T / 16) on aiv {
    for i in range(16) {
      let t = block * 16 + i
      score_wide[t : t + 1, INDEXER_SCORE_CAP : SORT_LEN] = full(f32, [1, SORT_LEN - INDEXER_SCORE_CAP], -3.4028234663852886e38)
    }
  }

  # score[t, c] = sum_h relu(fp32(q_i8 . kv_i8) * q_scale * kv_scale) * w[t, h], heads in order
  task idx_score spmd(T / S_TILE) on mix {
    let t0 = block * S_TILE
    for ct in range(INDEXER_SCORE_CAP / C_TILE) {
      let c0 = ct * C_TILE
      let acc = zeros(f32, [S_TILE, C_TILE])
      for h in range(H) {
        let raw = matmul(q_i8[t0 : t0 + S_TILE, h * HD : (h + 1) * HD], kv_i8[c0 : c0 + C_TILE, :], b_trans)
        let s = col_expand_mul(row_expand_mul(cast(raw, f32), q_scale[t0 : t0 + S_TILE, h : h + 1]),
                               kv_scale[0 : 1, c0 : c0 + C_TILE])
        acc = acc + row_expand_mul(relu(s), head_w[t0 : t0 + S_TILE, h : h + 1])
      }
      score_wide[t0 : t0 + S_TILE, c0 : c0 + C_TILE] = acc
    }
  }

  # ---- 4. the causal mask and the top-k, -1 padded
  task idx_topk spmd(T / TOPK_TILE) on aiv {
    for i in range(TOPK_TILE) {
      let t = block * TOPK_TILE + i
      let visible = min((start_pos + t + 1) / COMPRESS_RATIO, INDEXER_SCORE_CAP)
      score[t : t + 1, :] = fillpad(score_wide[t : t + 1, 0 : INDEXER_SCORE_CAP], visible, -3.4028234663852886e38)
      if t < num_tokens {
        let best = topk(score_wide[t : t + 1, :], INDEXER_TOPK_CAP, valid = visible)
        topk_idxs[t : t + 1, :] = fillpad(odd_lanes(best), min(visible, INDEXER_TOPK_CAP), -1)
      } else {
        topk_idxs[t : t + 1, :] = full(i32, [1, INDEXER_TOPK_CAP], -1)
      }
    }
  }
}
