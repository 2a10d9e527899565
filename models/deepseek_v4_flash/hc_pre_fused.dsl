# hc_pre, the "syncall" (fused) implementation after pypto-lib #982 (docs/runtime-semantics.md
# §17.1, after the fix; math in upstream hc_pre.py). One sync_start grid of NUM_CORES MIX
# blocks, one per cluster of the device (a2a3: 24), with two hard barriers:
#
#   A  cube: lin_n = (T/16) * LINEAR_OK split-K tasks, each an ascending chain of cube
#      matmuls (k_group = 4), stored plainly into its own rows of mixes_partials;
#      vector: rms_n = (T/8) * RMS_OK tasks, each the sum of squares of RMS_CHUNKS_PER_SPLIT
#      consecutive chunks, stored into its own rows of sq_partials
#   -- barrier: every partial is published --
#   B  vector: reduce_n = T/16 + T/8 tasks; a linear row block is p0 + p1 + p2 + p3, an RMS
#      tile q0 + q1 + ... + q15, both in ascending split order
#   -- barrier: every total is published --
#   D  vector: gates, softmax + Sinkhorn and x_mixed per 8-row tile
#
# Work items are strided over the blocks (`for i in range(block, n, NUM_CORES)`). A reduce_sum
# cannot cross a barrier inside one task, so the partials and the ascending reduce are written
# out by hand; the golden folds the RMS with the same two-level tree (`rms_splits=RMS_OK`).
#
# Configurations (models/deepseek_v4_flash/README.md):
#   real (default)  T=128 (decode; the prefill test uses T=512), HC_DIM=16384, NUM_CORES=24,
#                   LINEAR_K_CHUNK=256, RMS_K_CHUNK=512 (16 RMS splits of 2 chunks)
#   reduced (tests) T=16, HC_DIM=1024, LINEAR_K_CHUNK=64, RMS_K_CHUNK=32 (16 splits of 2 chunks)
# Run it on a device with NUM_CORES clusters: `dslc run ... --cores a2a3`.
layer hc_pre_fused(T = 128 in 16..512 step 16, HC_DIM = 16384, NUM_CORES = 24, LINEAR_OK = 4,
                   LINEAR_K_CHUNK = 256, RMS_OK = 16, RMS_K_CHUNK = 512, SINKHORN_ITERS = 20) {
  const D = HC_DIM / 4                          # hc_mult = 4 streams of D (the layer is unrolled for 4)
  const MIX_HC = 24                             # (2 + hc_mult) * hc_mult: pre 0..3, post 4..7, comb 8..23
  const T_TILE = 8
  const LINEAR_T_TILE = 16
  const K_PER_SPLIT = HC_DIM / LINEAR_OK
  const RMS_K_PER_SPLIT = HC_DIM / RMS_OK
  const RMS_CHUNKS_PER_SPLIT = RMS_K_PER_SPLIT / RMS_K_CHUNK
  const LIN_N = T / LINEAR_T_TILE * LINEAR_OK   # phase A cube work items
  const RMS_N = T / T_TILE * RMS_OK             # phase A vector work items
  const MIX_D_CHUNK = min(512, D)
  assert T % LINEAR_T_TILE == 0, "rows come in 16-row linear tiles (the kernel pads T to 16)"
  assert HC_DIM % 4 == 0
  assert K_PER_SPLIT % LINEAR_K_CHUNK == 0, "each linear split is a whole number of K chunks"
  assert LINEAR_K_CHUNK % 4 == 0, "the cube accumulates groups of 4 k"
  assert RMS_K_PER_SPLIT % RMS_K_CHUNK == 0, "each RMS split is a whole number of chunks"
  assert SINKHORN_ITERS >= 1
  assert D % MIX_D_CHUNK == 0
  golden "hc_pre_fused_golden.py"

  input   x: f32[T, HC_DIM]                     # x[t, h * D + d]: the hc residual stream
  input   hc_fn: f32[MIX_HC, HC_DIM]            # (out, in)
  input   hc_scale: f32[1, 3]
  input   hc_base: f32[1, MIX_HC]
  output  x_mixed: bf16[T, D]
  output  post: f32[T, 4]
  output  comb: f32[T, 16]                      # comb[t, 4i + j] = C[i, j]
  scratch mixes_partials: f32[LINEAR_OK * T, MIX_HC]
  scratch sq_partials: f32[RMS_OK * T, 1]
  scratch mixes_raw: f32[T, MIX_HC]
  scratch sq_sum: f32[T, 1]
  reduction mixes_raw: splits LINEAR_OK                   # the trees of phases A + B (rule N203)
  reduction sq_sum: splits RMS_OK, chunks RMS_CHUNKS_PER_SPLIT

  task hc_pre_fused spmd(NUM_CORES) on mix sync_start early_resolve {
    # ---- phase A: disjoint split partials, plain stores
    for i in range(block, LIN_N, NUM_CORES) {
      let t0 = i / LINEAR_OK * LINEAR_T_TILE
      let s = i % LINEAR_OK
      let acc = zeros(f32, [LINEAR_T_TILE, MIX_HC])
      for kb in range(K_PER_SPLIT / LINEAR_K_CHUNK) {
        let k0 = s * K_PER_SPLIT + kb * LINEAR_K_CHUNK
        acc = matmul_acc(acc, x[t0 : t0 + LINEAR_T_TILE, k0 : k0 + LINEAR_K_CHUNK],
                         hc_fn[:, k0 : k0 + LINEAR_K_CHUNK], b_trans, k_group = 4)
      }
      mixes_partials[s * T + t0 : s * T + t0 + LINEAR_T_TILE, :] = acc
    }
    for j in range(block, RMS_N, NUM_CORES) {
      let t0 = j / RMS_OK * T_TILE
      let s = j % RMS_OK
      let x0 = x[t0 : t0 + T_TILE, s * RMS_K_PER_SPLIT : s * RMS_K_PER_SPLIT + RMS_K_CHUNK]
      let q = row_sum(x0 * x0)
      for c in range(1, RMS_CHUNKS_PER_SPLIT) {
        let k0 = s * RMS_K_PER_SPLIT + c * RMS_K_CHUNK
        let xc = x[t0 : t0 + T_TILE, k0 : k0 + RMS_K_CHUNK]
        q = q + row_sum(xc * xc)
      }
      sq_partials[s * T + t0 : s * T + t0 + T_TILE, :] = q
    }
    barrier
    # ---- phase B: ascending reduce of the partials
    for i in range(block, T / LINEAR_T_TILE, NUM_CORES) {
      let t0 = i * LINEAR_T_TILE
      let total = mixes_partials[t0 : t0 + LINEAR_T_TILE, :]
      for s in range(1, LINEAR_OK) {
        total = total + mixes_partials[s * T + t0 : s * T + t0 + LINEAR_T_TILE, :]
      }
      mixes_raw[t0 : t0 + LINEAR_T_TILE, :] = total
    }
    for j in range(block, T / T_TILE, NUM_CORES) {
      let t0 = j * T_TILE
      let total = sq_partials[t0 : t0 + T_TILE, :]
      for s in range(1, RMS_OK) {
        total = total + sq_partials[s * T + t0 : s * T + t0 + T_TILE, :]
      }
      sq_sum[t0 : t0 + T_TILE, :] = total
    }
    barrier
    # ---- phase D: gates, comb (softmax + Sinkhorn) and x_mixed per 8-row tile
    for j in range(block, T / T_TILE, NUM_CORES) {
      let t0 = j * T_TILE
      let r = rsqrt(sq_sum[t0 : t0 + T_TILE, :] * (1.0 / HC_DIM) + 0.000001)
      let mixes = row_expand_mul(mixes_raw[t0 : t0 + T_TILE, :], r)
      let p = sigmoid(col_expand_add(mixes[:, 0 : 4] * read(hc_scale[0, 0]), hc_base[0 : 1, 0 : 4])) + 0.000001
      post[t0 : t0 + T_TILE, :] = sigmoid(col_expand_add(mixes[:, 4 : 8] * read(hc_scale[0, 1]), hc_base[0 : 1, 4 : 8])) * 2.0
      let z = col_expand_add(mixes[:, 8 : 24] * read(hc_scale[0, 2]), hc_base[0 : 1, 8 : 24])
      let e0 = exp(row_expand_sub(z[:, 0 : 4], row_max(z[:, 0 : 4])))
      let e1 = exp(row_expand_sub(z[:, 4 : 8], row_max(z[:, 4 : 8])))
      let e2 = exp(row_expand_sub(z[:, 8 : 12], row_max(z[:, 8 : 12])))
      let e3 = exp(row_expand_sub(z[:, 12 : 16], row_max(z[:, 12 : 16])))
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
}
