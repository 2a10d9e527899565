# hc_pre linear, deterministic and folded: the consumer phase sums the partials in
# ascending split order itself, so there is no separate reduce launch.
layer hc_linear_folded(T = 512, HC_DIM = 16384, MIX = 32, SPLITS = 4, K_CHUNK = 256) {
  input   x: f32[T, HC_DIM]
  input   w: f32[MIX, HC_DIM]
  output  post: f32[T, MIX]
  scratch partials: f32[SPLITS * T, MIX]

  task linear spmd(T / 16 * SPLITS) on aic early_resolve {
    let t0 = block / SPLITS * 16
    let s = block % SPLITS
    let acc = zeros(f32, [16, MIX])
    for kb in range(HC_DIM / SPLITS / K_CHUNK) {
      let k0 = s * (HC_DIM / SPLITS) + kb * K_CHUNK
      acc = matmul_acc(acc, x[t0 : t0 + 16, k0 : k0 + K_CHUNK], w[:, k0 : k0 + K_CHUNK], b_trans)
    }
    partials[s * T + t0 : s * T + t0 + 16, :] = acc
  }
  task pre_post spmd(T / 16) on aiv {
    let t0 = block * 16
    let total = partials[t0 : t0 + 16, :]
    for s in range(1, SPLITS) { total = total + partials[s * T + t0 : s * T + t0 + 16, :] }
    post[t0 : t0 + 16, :] = sigmoid(total)
  }
}
