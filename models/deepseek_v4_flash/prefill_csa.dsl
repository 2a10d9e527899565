# DeepSeek-V4-Flash prefill CSA sparse attention (upstream prefill_sparse_attn.py; dspark after
# pypto-lib #982): the sparse row packing and the attention with sinks, for one chunk of T
# tokens at positions start_pos .. start_pos + T - 1 (the first num_tokens active).
#
# Sparse rows of token t (the kernel's fixed packing):
#   block 0             the WIN sliding-window rows (swa_indices, physical ori-KV rows, oldest
#                       first, -1 padded);
#   blocks 1 .. N - 1   the indexer's selected compressed slots (its top-k, descending score,
#                       -1 padded), mapped through the compressed block table to cmp_kv rows.
# The capacity is derived from what the indexer emits: it emits min(visible, INDEXER_TOPK_CAP)
# slots per token (`fillpad(...)` below: the indexer's set_validshape), so the packing keeps
# CMP_COLS = INDEXER_TOPK_CAP rounded up to whole attention tiles, and PREFILL_SPARSE_PAD =
# WIN + CMP_COLS (384 at T = 512, as dspark; 640 at T = 1024). Rule C401 proves, for every
# admissible T and request, that no emitted slot is dropped -- no host guard on the packed
# row count is needed (docs/runtime-semantics.md §19).
#
# Attention per token and head: s = q K^T * HD^-0.5 (-inf bias on invalid rows),
# p = exp(s - rowmax), o = bf16(p) @ V per 128-row block, merged online; blocks without a valid
# row are skipped; the sink adds exp(sink[h] - M) to the denominator. Then inverse RoPE on the
# last 64 dims (bf16), the grouped wo_a projection, per-(token, group) INT8, and the INT8 wo_b
# GEMM summed over the groups in ascending order (a reduce_sum), scaled per column, bf16.
# Tokens past num_tokens give 0.
#
# Configurations (models/deepseek_v4_flash/README.md):
#   real (default)  T=512, D=4096, H=64, HD=512, WIN=128, IDX_TOPK=512, O_GROUPS=8,
#                   O_LORA=1024, MAX_POS=16384, ORI_BLOCK_NUM=512, CMP_BLOCK_NUM=256
#   reduced (tests) T=128, D=256, H=8, HD=128, WIN=16, IDX_TOPK=64, O_GROUPS=2, O_LORA=64,
#                   MAX_POS=1024, ORI_BLOCK_NUM=32, CMP_BLOCK_NUM=16
#                   (rope 64, compress ratio 4, attention tile = WIN kept)
layer prefill_csa(T = 512 in 128..8192 step 128, D = 4096, H = 64, HD = 512, WIN = 128,
                  IDX_TOPK = 512, O_GROUPS = 8, O_LORA = 1024, MAX_POS = 16384,
                  ORI_BLOCK_NUM = 512, CMP_BLOCK_NUM = 256) {
  const COMPRESS_RATIO = 4
  const ROPE = 64
  const NOPE = HD - ROPE
  const HALF_ROPE = ROPE / 2
  const BLOCK_SIZE = 32                         # KV cache page
  const ATTN_TILE = WIN                         # rows per sparse block (the kernel asserts WIN == tile)
  const INDEXER_SCORE_CAP = 2 * max(1, T / COMPRESS_RATIO)
  const INDEXER_TOPK_CAP = min(IDX_TOPK, INDEXER_SCORE_CAP)      # what the indexer emits at most
  const CMP_COLS = cdiv(INDEXER_TOPK_CAP, ATTN_TILE) * ATTN_TILE   # derived from the producer
  const PREFILL_SPARSE_PAD = WIN + CMP_COLS
  const ATTN_BLOCKS = PREFILL_SPARSE_PAD / ATTN_TILE
  const CMP_MAX_BLOCKS = MAX_POS / COMPRESS_RATIO / BLOCK_SIZE
  const HPG = H / O_GROUPS                      # heads per output group
  const GROUP_IN = HPG * HD
  const HG = min(16, H)                         # heads per attention step (UB)
  const KC = min(128, HD)                       # K per cube step of the wo_a projection
  const P_TILE = 32                             # tokens per projection block (L0C: [32, O_LORA] f32)
  const D_TILE = min(256, D)                    # output columns per wo_b block
  assert HD > ROPE and HD % 2 == 0
  assert H % O_GROUPS == 0 and H % HG == 0 and HD % KC == 0 and D % D_TILE == 0
  assert T % P_TILE == 0
  assert INDEXER_TOPK_CAP <= CMP_MAX_BLOCKS * BLOCK_SIZE, "every emitted slot has a compressed cache row"
  golden "prefill_csa_golden.py"

  scalar start_pos: i32 in 0..MAX_POS - T
  scalar num_tokens: i32 in 1..T
  guard num_tokens <= T, "0 < num_tokens <= T"
  guard start_pos + T <= MAX_POS, "the largest position is below MAX_POS"
  # (start_pos + num_tokens) / 4 <= INDEXER_SCORE_CAP is the indexer's guard (its score row,
  # prefill_indexer.dsl): nothing here is sized by it, and C401 rightly calls it a guard that
  # refuses requests this layer would serve.

  input   q: bf16[T * H, HD]                    # q[t * H + h]
  input   ori_kv: bf16[ORI_BLOCK_NUM * BLOCK_SIZE, HD]
  input   cmp_kv: bf16[CMP_BLOCK_NUM * BLOCK_SIZE, HD]
  input   cmp_block_table: i32[1, CMP_MAX_BLOCKS]
  input   swa_indices: i32[T, WIN]              # physical ori rows of the window, -1 padded
  input   cmp_indices: i32[T, IDX_TOPK]         # the indexer's top-k slots, -1 padded
  input   attn_sink: f32[H, 1]
  input   freqs_cos: bf16[T, ROPE]              # the token tables at the chunk's positions
  input   freqs_sin: bf16[T, ROPE]
  input   wo_a: bf16[O_GROUPS * O_LORA, GROUP_IN]  # wo_a[g * O_LORA + j, :]: group g, (out, in)
  input   wo_b: i8[D, O_GROUPS * O_LORA]
  input   wo_b_scale: f32[1, D]
  output  attn_out: bf16[T, D]
  scratch cmp_sel: i32[T, IDX_TOPK]             # the indexer's emission, valid prefix then -1
  scratch cmp_rows: i32[T, CMP_COLS]            # physical cmp_kv rows of blocks 1.., -1 = none
  scratch o_rows: bf16[T * H, HD]               # attention output (after inverse RoPE)
  scratch o_i8: i8[T, O_GROUPS * O_LORA]
  scratch o_sd: f32[T, O_GROUPS]
  scratch proj: f32[T, D]

  # the indexer's output contract: min(visible, INDEXER_TOPK_CAP) valid slots, then -1
  task csa_cmp_select spmd(T / 16) on aiv {
    for i in range(16) {
      let t = block * 16 + i
      if t < num_tokens {
        let visible = min((start_pos + t + 1) / COMPRESS_RATIO, INDEXER_SCORE_CAP)
        cmp_sel[t : t + 1, :] = fillpad(cmp_indices[t : t + 1, :], min(visible, INDEXER_TOPK_CAP), -1)
      } else {
        cmp_sel[t : t + 1, :] = full(i32, [1, IDX_TOPK], -1)
      }
    }
  }

  # packing: the first CMP_COLS selected slots -> physical cmp_kv rows through the block table
  task csa_pack spmd(T / 16) on aiv {
    for i in range(16) {
      let t = block * 16 + i
      let c = cmp_sel[t : t + 1, 0 : CMP_COLS]
      let ok = (c >= 0) and (c < CMP_MAX_BLOCKS * BLOCK_SIZE)
      let blk = gather(cmp_block_table[0 : 1, :], select(ok, c / BLOCK_SIZE, zeros(i32, [1, CMP_COLS])))
      cmp_rows[t : t + 1, :] = select(ok and (blk >= 0), blk * BLOCK_SIZE + c % BLOCK_SIZE,
                                      full(i32, [1, CMP_COLS], -1))
    }
  }

  # sparse attention with sinks, HG heads at a time, then inverse RoPE
  task csa_attn spmd(T) on mix {
    let t = block
    if t < num_tokens {
      let scale = rsqrt(full(f32, [1, 1], HD))  # SOFTMAX_SCALE = HD^-0.5
      let rw = swa_indices[t : t + 1, :]
      let bias0 = select(rw >= 0, zeros(f32, [1, WIN]), full(f32, [1, WIN], -3.4028234663852886e38))
      let c = cast(freqs_cos[t : t + 1, 0 : HALF_ROPE], f32)
      let sn = cast(freqs_sin[t : t + 1, 0 : HALF_ROPE], f32)
      for hg in range(H / HG) {
        let r0 = t * H + hg * HG
        let qh = q[r0 : r0 + HG, :]
        let kw = gather_rows(ori_kv[:, :], rw)
        let s0 = col_expand_add(matmul(qh, kw, b_trans) * read(scale[0, 0]), bias0)
        let big_m = row_max(s0)
        let p0 = exp(row_expand_sub(s0, big_m))
        let big_l = row_sum(p0)
        let big_o = matmul(cast(p0, bf16), kw)
        for b in range(1, ATTN_BLOCKS) {
          let rc = cmp_rows[t : t + 1, (b - 1) * ATTN_TILE : b * ATTN_TILE]
          let top = row_max(rc)
          if read(top[0, 0]) >= 0 {             # valid_block_mask: the block holds a valid row
            let kc = gather_rows(cmp_kv[:, :], rc)
            let bias = select(rc >= 0, zeros(f32, [1, ATTN_TILE]), full(f32, [1, ATTN_TILE], -3.4028234663852886e38))
            let s = col_expand_add(matmul(qh, kc, b_trans) * read(scale[0, 0]), bias)
            let m = row_max(s)
            let p = exp(row_expand_sub(s, m))
            let m_new = maximum(big_m, m)
            let alpha = exp(big_m - m_new)
            let beta = exp(m - m_new)
            big_l = alpha * big_l + beta * row_sum(p)
            big_o = row_expand_mul(big_o, alpha) + row_expand_mul(matmul(cast(p, bf16), kc), beta)
            big_m = m_new
          }
        }
        let out = row_expand_div(big_o, big_l + exp(attn_sink[hg * HG : hg * HG + HG, :] - big_m))
        let ev = out[:, NOPE : HD : 2]
        let od = out[:, NOPE + 1 : HD : 2]
        o_rows[r0 : r0 + HG, 0 : NOPE] = cast(out[:, 0 : NOPE], bf16)
        o_rows[r0 : r0 + HG, NOPE : HD : 2] = cast(col_expand_mul(ev, c) + col_expand_mul(od, sn), bf16)
        o_rows[r0 : r0 + HG, NOPE + 1 : HD : 2] = cast(col_expand_mul(od, c) - col_expand_mul(ev, sn), bf16)
      }
    } else {
      for hg in range(H / HG) {
        o_rows[t * H + hg * HG : t * H + hg * HG + HG, :] = zeros(bf16, [HG, HD])
      }
    }
  }

  # o_r[t, g] = o[t, heads of g] @ wo_a[g]^T, then per-(t, g) INT8
  task csa_o_lora spmd(T / P_TILE * O_GROUPS) on mix {
    let t0 = block / O_GROUPS * P_TILE
    let g = block % O_GROUPS
    let acc = zeros(f32, [P_TILE, O_LORA])
    for hl in range(HPG) {
      let h = g * HPG + hl
      for kc in range(HD / KC) {
        acc = matmul_acc(acc, o_rows[t0 * H + h : (t0 + P_TILE - 1) * H + h + 1 : H, kc * KC : (kc + 1) * KC],
                         wo_a[g * O_LORA : (g + 1) * O_LORA, hl * HD + kc * KC : hl * HD + (kc + 1) * KC], b_trans)
      }
    }
    let sq = 127.0 / maximum(row_max(abs(acc)), 0.0001)
    o_i8[t0 : t0 + P_TILE, g * O_LORA : (g + 1) * O_LORA] = cast(row_expand_mul(acc, sq), i8)
    o_sd[t0 : t0 + P_TILE, g : g + 1] = recip(sq)
  }

  # out = sum over groups, ascending, of fp32(o_i8 . wo_b) * sd_g
  task csa_o_proj spmd(T / P_TILE * (D / D_TILE)) on mix {
    let t0 = block / (D / D_TILE) * P_TILE
    let d0 = block % (D / D_TILE) * D_TILE
    proj[t0 : t0 + P_TILE, d0 : d0 + D_TILE] = reduce_sum g in range(O_GROUPS) {
      let pg = matmul(o_i8[t0 : t0 + P_TILE, g * O_LORA : (g + 1) * O_LORA],
                      wo_b[d0 : d0 + D_TILE, g * O_LORA : (g + 1) * O_LORA], b_trans)
      return row_expand_mul(cast(pg, f32), o_sd[t0 : t0 + P_TILE, g : g + 1])
    }
  }

  task csa_out spmd(T / P_TILE) on aiv {
    let t0 = block * P_TILE
    for dc in range(D / D_TILE) {
      let d0 = dc * D_TILE
      attn_out[t0 : t0 + P_TILE, d0 : d0 + D_TILE] =
        cast(col_expand_mul(proj[t0 : t0 + P_TILE, d0 : d0 + D_TILE], wo_b_scale[0 : 1, d0 : d0 + D_TILE]), bf16)
    }
  }
}
