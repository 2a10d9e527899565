# hc_pre, the hyper-connection pre-mix of DeepSeek-V4-Flash (upstream hc_pre.py), in the
# "separate" implementation, the upstream default, after the pypto-lib #982 fix
# (docs/runtime-semantics.md §17.1). The two reductions are ordered:
#
#   - RMS: sum of x^2 over HC_DIM in RMS_K_CHUNK chunks, one partial per chunk, folded in
#     ascending chunk order (golden `rms_splits=1`: one accumulator over the chunks);
#   - linear: mixes = x @ hc_fn^T split-K into LINEAR_OK disjoint partials (each an ascending
#     chain of LINEAR_K_CHUNK cube matmuls with the A2/A3 accumulation order, k_group = 4),
#     folded in ascending split order. No FP32 atomics and no zero seed: one bit pattern on
#     every schedule (the pre-fix atomic form is tests/fixtures/seed/hc_pre_pre.dsl).
#
# Then the gates (pre, post), the 4x4 comb matrix by softmax + Sinkhorn (20 column and 19
# explicit row normalisations, column sums paired (r0+r1)+(r2+r3) as the kernel does) and
# x_mixed = bf16((x0 pre0 + x1 pre1) + (x2 pre2 + x3 pre3)).
#
# Configurations (models/deepseek_v4_flash/README.md):
#   real (default)  T=128 (decode; the prefill test uses T=512), HC_DIM=16384 (D=4096),
#                   LINEAR_K_CHUNK=256, RMS_K_CHUNK=512
#   reduced (tests) T=16, HC_DIM=1024 (D=256), LINEAR_K_CHUNK=64, RMS_K_CHUNK=32
#                   (hc_mult 4, 4 linear splits and 32 RMS chunks kept)
layer hc_pre(T = 128 in 16..512 step 16, HC_DIM = 16384, LINEAR_OK = 4, LINEAR_K_CHUNK = 256,
             RMS_K_CHUNK = 512, SINKHORN_ITERS = 20) {
  const D = HC_DIM / 4                          # hc_mult = 4 streams of D (the layer is unrolled for 4)
  const MIX_HC = 24                             # (2 + hc_mult) * hc_mult: pre 0..3, post 4..7, comb 8..23
  const T_TILE = 8                              # vector row tile
  const LINEAR_T_TILE = 16                      # cube row tile
  const K_PER_SPLIT = HC_DIM / LINEAR_OK
  const RMS_CHUNKS = HC_DIM / RMS_K_CHUNK
  const MIX_D_CHUNK = min(512, D)               # x_mixed columns per UB tile
  assert T % LINEAR_T_TILE == 0, "rows come in 16-row linear tiles (the kernel pads T to 16)"
  assert HC_DIM % 4 == 0
  assert K_PER_SPLIT % LINEAR_K_CHUNK == 0, "each split is a whole number of K chunks"
  assert LINEAR_K_CHUNK % 4 == 0, "the cube accumulates groups of 4 k"
  assert HC_DIM % RMS_K_CHUNK == 0, "the RMS runs over whole chunks"
  assert SINKHORN_ITERS >= 1
  assert D % MIX_D_CHUNK == 0
  golden "hc_pre_golden.py"

  input   x: f32[T, HC_DIM]                     # x[t, h * D + d]: the hc residual stream
  input   hc_fn: f32[MIX_HC, HC_DIM]            # (out, in)
  input   hc_scale: f32[1, 3]                   # s0 pre, s1 post, s2 comb
  input   hc_base: f32[1, MIX_HC]
  output  x_mixed: bf16[T, D]
  output  post: f32[T, 4]
  output  comb: f32[T, 16]       # comb[t, 4i + j] = C[i, j]
  scratch sq_sum: f32[T, 1]
  scratch mixes_raw: f32[T, MIX_HC]
  scratch pre: f32[T, 4]
  scratch comb_logits: f32[T, 16]

  # sum of squares per row: one partial per chunk, ascending fold
  task hc_pre_rms spmd(T / T_TILE) on aiv early_resolve {
    let t0 = block * T_TILE
    sq_sum[t0 : t0 + T_TILE, :] = reduce_sum c in range(RMS_CHUNKS) {
      let xc = x[t0 : t0 + T_TILE, c * RMS_K_CHUNK : (c + 1) * RMS_K_CHUNK]
      return row_sum(xc * xc)
    }
  }

  # mixes_raw = x @ hc_fn^T, split-K: LINEAR_OK disjoint partials, ascending fold
  task hc_pre_linear spmd(T / LINEAR_T_TILE) on aic early_resolve {
    let t0 = block * LINEAR_T_TILE
    mixes_raw[t0 : t0 + LINEAR_T_TILE, :] = reduce_sum s in range(LINEAR_OK) {
      let acc = zeros(f32, [LINEAR_T_TILE, MIX_HC])
      for kb in range(K_PER_SPLIT / LINEAR_K_CHUNK) {
        let k0 = s * K_PER_SPLIT + kb * LINEAR_K_CHUNK
        acc = matmul_acc(acc, x[t0 : t0 + LINEAR_T_TILE, k0 : k0 + LINEAR_K_CHUNK],
                         hc_fn[:, k0 : k0 + LINEAR_K_CHUNK], b_trans, k_group = 4)
      }
      return acc
    }
  }

  # mixes = mixes_raw / rms; pre and post gates; the comb logits
  task hc_pre_split_pre_post spmd(T / T_TILE) on aiv {
    let t0 = block * T_TILE
    let r = rsqrt(sq_sum[t0 : t0 + T_TILE, :] * (1.0 / HC_DIM) + 0.000001)
    let mixes = row_expand_mul(mixes_raw[t0 : t0 + T_TILE, :], r)
    pre[t0 : t0 + T_TILE, :] = sigmoid(col_expand_add(mixes[:, 0 : 4] * read(hc_scale[0, 0]), hc_base[0 : 1, 0 : 4])) + 0.000001
    post[t0 : t0 + T_TILE, :] = sigmoid(col_expand_add(mixes[:, 4 : 8] * read(hc_scale[0, 1]), hc_base[0 : 1, 4 : 8])) * 2.0
    comb_logits[t0 : t0 + T_TILE, :] = col_expand_add(mixes[:, 8 : 24] * read(hc_scale[0, 2]), hc_base[0 : 1, 8 : 24])
  }

  # C = softmax over each row i, + eps; then columns, then (rows, columns) x (ITERS - 1).
  # ci is row i of C for T_TILE tokens: [T_TILE, 4]; column sums are (c0 + c1) + (c2 + c3).
  task hc_pre_comb_sinkhorn spmd(T / T_TILE) on aiv {
    let t0 = block * T_TILE
    let z0 = comb_logits[t0 : t0 + T_TILE, 0 : 4]
    let z1 = comb_logits[t0 : t0 + T_TILE, 4 : 8]
    let z2 = comb_logits[t0 : t0 + T_TILE, 8 : 12]
    let z3 = comb_logits[t0 : t0 + T_TILE, 12 : 16]
    let e0 = exp(row_expand_sub(z0, row_max(z0)))
    let e1 = exp(row_expand_sub(z1, row_max(z1)))
    let e2 = exp(row_expand_sub(z2, row_max(z2)))
    let e3 = exp(row_expand_sub(z3, row_max(z3)))
    let c0 = row_expand_div(e0, row_sum(e0)) + 0.000001
    let c1 = row_expand_div(e1, row_sum(e1)) + 0.000001
    let c2 = row_expand_div(e2, row_sum(e2)) + 0.000001
    let c3 = row_expand_div(e3, row_sum(e3)) + 0.000001
    let cs = ((c0 + c1) + (c2 + c3)) + 0.000001
    c0 = c0 / cs
    c1 = c1 / cs
    c2 = c2 / cs
    c3 = c3 / cs
    for it in range(SINKHORN_ITERS - 1) {
      c0 = row_expand_div(c0, row_sum(c0) + 0.000001)
      c1 = row_expand_div(c1, row_sum(c1) + 0.000001)
      c2 = row_expand_div(c2, row_sum(c2) + 0.000001)
      c3 = row_expand_div(c3, row_sum(c3) + 0.000001)
      cs = ((c0 + c1) + (c2 + c3)) + 0.000001
      c0 = c0 / cs
      c1 = c1 / cs
      c2 = c2 / cs
      c3 = c3 / cs
    }
    comb[t0 : t0 + T_TILE, 0 : 4] = c0
    comb[t0 : t0 + T_TILE, 4 : 8] = c1
    comb[t0 : t0 + T_TILE, 8 : 12] = c2
    comb[t0 : t0 + T_TILE, 12 : 16] = c3
  }

  # x_mixed = bf16((x0 * pre0 + x1 * pre1) + (x2 * pre2 + x3 * pre3)), D in UB-sized chunks
  task hc_pre_mix_x spmd(T / T_TILE) on aiv {
    let t0 = block * T_TILE
    let p = pre[t0 : t0 + T_TILE, :]
    for dc in range(D / MIX_D_CHUNK) {
      let d0 = dc * MIX_D_CHUNK
      let y01 = row_expand_mul(x[t0 : t0 + T_TILE, d0 : d0 + MIX_D_CHUNK], p[:, 0 : 1])
                + row_expand_mul(x[t0 : t0 + T_TILE, D + d0 : D + d0 + MIX_D_CHUNK], p[:, 1 : 2])
      let y23 = row_expand_mul(x[t0 : t0 + T_TILE, 2 * D + d0 : 2 * D + d0 + MIX_D_CHUNK], p[:, 2 : 3])
                + row_expand_mul(x[t0 : t0 + T_TILE, 3 * D + d0 : 3 * D + d0 + MIX_D_CHUNK], p[:, 3 : 4])
      x_mixed[t0 : t0 + T_TILE, d0 : d0 + MIX_D_CHUNK] = cast(y01 + y23, bf16)
    }
  }
}
