# hc_pre linear, post-fix: reduce_sum -> disjoint partials + an ascending reduce task.
layer hc_linear_ordered(T = 512, HC_DIM = 16384, MIX = 32, SPLITS = 4, K_CHUNK = 256) {
  input  x: f32[T, HC_DIM]
  input  w: f32[MIX, HC_DIM]
  output post: f32[T, MIX]
  scratch mixes: f32[T, MIX]

  task linear spmd(T / 16) on aic early_resolve {
    let t0 = block * 16
    mixes[t0 : t0 + 16, :] = reduce_sum s in range(SPLITS) {
      let acc = zeros(f32, [16, MIX])
      for kb in range(HC_DIM / SPLITS / K_CHUNK) {
        let k0 = s * (HC_DIM / SPLITS) + kb * K_CHUNK
        acc = matmul_acc(acc, x[t0 : t0 + 16, k0 : k0 + K_CHUNK], w[:, k0 : k0 + K_CHUNK], b_trans)
      }
      return acc
    }
  }
  task pre_post spmd(T / 16) on aiv {
    let t0 = block * 16
    post[t0 : t0 + 16, :] = sigmoid(mixes[t0 : t0 + 16, :])
  }
}
