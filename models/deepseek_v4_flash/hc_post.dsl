# hc_post, the hyper-connection post-mix of DeepSeek-V4-Flash (upstream hc_post.py): the
# sublayer output x (bf16) goes back into the 4 fp32 residual streams,
#
#   y[t, o, :] = post[t, o] * x[t] + sum_i comb[t, 4i + o] * residual[t, i, :]
#
# in fp32 and in this order: start from post * x, then add i = 0, 1, 2, 3 (comb is C[i, o]
# of hc_pre's Sinkhorn). The stream stays fp32. The reference describes no fused form.
#
# Configurations (models/deepseek_v4_flash/README.md):
#   real (default)  T=128 (decode; --mode all adds T=512), HC_DIM=16384 (D=4096)
#   reduced (tests) T=16, HC_DIM=1024 (D=256) (hc_mult 4 kept)
layer hc_post(T = 128 in 16..512 step 16, HC_DIM = 16384) {
  const D = HC_DIM / 4                          # hc_mult = 4 streams of D
  const T_TILE = 8
  const D_CHUNK = min(512, D)                   # columns per UB tile
  assert T % T_TILE == 0, "8-row tiles (the reference kernel needs T % 4 == 0)"
  assert HC_DIM % 4 == 0
  assert D % D_CHUNK == 0
  golden "hc_post_golden.py"

  input  x: bf16[T, D]                          # the sublayer output
  input  residual: f32[T, HC_DIM]               # residual[t, i * D + d]: the stream fed to hc_pre
  input  post: f32[T, 4]
  input  comb: f32[T, 16]                       # comb[t, 4i + o] = C[i, o]
  output y: f32[T, HC_DIM]                      # y[t, o * D + d]

  task hc_post spmd(T / T_TILE) on aiv {
    let t0 = block * T_TILE
    for dc in range(D / D_CHUNK) {
      let d0 = dc * D_CHUNK
      let xf = cast(x[t0 : t0 + T_TILE, d0 : d0 + D_CHUNK], f32)
      for o in range(4) {
        let acc = row_expand_mul(xf, post[t0 : t0 + T_TILE, o : o + 1])
        for i in range(4) {
          acc = acc + row_expand_mul(residual[t0 : t0 + T_TILE, i * D + d0 : i * D + d0 + D_CHUNK],
                                     comb[t0 : t0 + T_TILE, 4 * i + o : 4 * i + o + 1])
        }
        y[t0 : t0 + T_TILE, o * D + d0 : o * D + d0 + D_CHUNK] = acc
      }
    }
  }
}
