# hc_pre linear, pre-fix (docs/runtime-semantics.md §17.1 "Separate"): zero seed + FP32 atomic split-K.
layer hc_linear_atomic(T = 512, HC_DIM = 16384, MIX = 32, SPLITS = 4, K_CHUNK = 256) {
  input  x: f32[T, HC_DIM]
  input  w: f32[MIX, HC_DIM]
  output post: f32[T, MIX]
  scratch mixes: f32[T, MIX]

  task seed on aiv after prev(linear) { mixes[:, :] = zeros(f32, [T, MIX]) }
  task linear spmd(T / 16 * SPLITS) on aic early_resolve after seed {  # dslc: ignore[N201] the pre-fix form, measured on purpose
    let t0 = block / SPLITS * 16
    let s = block % SPLITS
    let acc = zeros(f32, [16, MIX])
    for kb in range(HC_DIM / SPLITS / K_CHUNK) {
      let k0 = s * (HC_DIM / SPLITS) + kb * K_CHUNK
      acc = matmul_acc(acc, x[t0 : t0 + 16, k0 : k0 + K_CHUNK], w[:, k0 : k0 + K_CHUNK], b_trans)
    }
    mixes[t0 : t0 + 16, :] += acc atomic
  }
  task pre_post spmd(T / 16) on aiv {
    let t0 = block * 16
    post[t0 : t0 + 16, :] = sigmoid(mixes[t0 : t0 + 16, :])
  }
}
