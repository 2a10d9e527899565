# DeepSeek-V4-Flash MoE layer, decode (upstream moe.py; the post-fix graph of pypto-lib
# 5791a8ee, docs/runtime-semantics.md §15.3 and §16.3), one rank of the EP all-to-all:
#
#   x_mixed --gate--> x_norm_i8, x_norm_scale, indices, weights   (deferred RMSNorm, W8A8 INT8)
#           --shared expert----------------------------------> sh
#           --dispatch (meta, push, wait, gather)--> compact received rows per local expert
#           --routed experts (W8A8 SwiGLU, routing weight folded in)--> recv_y
#           --combine (scatter, wait, shared_routed, ffn_round)--> ffn_out = bf16(sh + y0 + ... + y5)
#   clear_signals: the forward ends by retiring the signal credits it received.
#
# hc_pre (which produces x_mixed) and hc_post (which consumes ffn_out) are separate layers.
#
# Configurations (models/deepseek_v4_flash/README.md, section MoE):
#   real, the defaults: EP = 16 ranks, N_LOCAL = 16 experts per rank (E = 256), T = 128 tokens
#     per rank, D = 4096, I = 2048 (moe_intermediate_size), TOPK = 6, VOCAB = 129280.
#   reduced, the tests: EP = 2, T = 16, D = 256, I = 128, VOCAB = 512 with N_LOCAL = 16 and
#     TOPK = 6 kept (E = 32, RECV_MAX = 32): golden/moe.py's REDUCED configuration.
#   EP16 schedule runs: EP = 16, N_LOCAL = 16, T = 128, TOPK = 6; only D = 256, I = 128 shrink.
#   LAYER_ID < 3 routes by the token-id hash table (tid2eid); LAYER_ID >= 3 takes the top-6 of
#   the biased sqrtsoftplus scores.
#
# Signals, epochs and clearing (RETIRE). A signal cell is an INT32 counter that only notifies
# change; each is credited once per peer and forward. `--rounds R` runs the layer R times back to back on persistent memory with
# `epoch` = round number; every round is one forward (one decode step) and is ordered after
# the previous forward of its rank by `fwd_token` (the end of forward N produces what the
# first task of forward N + 1 reads, like the ordering token the host threads through comm
# dispatches). Peers are not ordered that way: a fast peer can be one forward ahead.
#   RETIRE = 1 (default): the forward ends with clear_signals, which returns every cell to zero
#     by a commutative atomic subtraction of exactly the credits this forward's waits observed
#     (docs/runtime-semantics.md §21.1 R9). A zero-write would not be safe: a peer already in
#     the next forward may have credited our cell before our clear runs, and a zero-write
#     would erase it (its wait then hangs); the subtraction keeps it. With the counters back at
#     zero after every forward, a wait expects the credits of one forward, 1 per peer (an
#     `epoch` multiple would hang from round 2 on).
#   RETIRE = 0: nothing is cleared inside the run: the counters are monotonic across rounds
#     and the waits are epoch-scaled (`>= epoch`), as upstream's moe_epoch; the host clears
#     the windows between programs (every simulate() starts from zero).
#   Both are safe for any number of rounds; `dslc check` checks both.
#
# Departures from the upstream graph, each on purpose:
#   - Both arrivals are published after a grid join: dispatch.wait notifies every peer once
#     after the whole push grid, then waits (pypto-lib #953's combine fix, applied to the
#     dispatch too). Upstream's push notifies from each of its 16 blocks right after
#     non-draining remote_stores (R11/D114); here the data is published by the task edge.
#   - dispatch.meta only publishes the per-expert counts (remote_store into recv_meta); it
#     neither notifies nor spins. Its stores precede dispatch.wait's notify through the
#     meta -> push -> wait edges, so data_arrived publishes them too, and the EP16 stall of a
#     notify-and-spin meta (pypto-lib #1208/#1213) cannot happen: the dispatch has one waiter.
#   - The routed-expert grids are sized in the graph (one task chain per local expert, a
#     `when` predicate that skips an expert with no rows, row tiles up to the received count)
#     rather than by a host read of recv_count_out.
#   - The source's routed_y_buf is k-major (row k * T + t for r_route = t * TOPK + k), so the
#     ordered reduce reads whole row tiles.
#   - Hidden sizes are processed in chunks that fit the a2a3 core buffers (UB 192 KiB,
#     L1 512 KiB, L0C 128 KiB): DC/IC columns for vector work, KC/NC blocks for the matmuls.

# ---------------------------------------------------------------------------------- gate

layer moe_gate(T = 128, D = 4096, E = 256, TOPK = 6, VOCAB = 129280, LAYER_ID = 0, NUM_HASH_LAYERS = 3) {
  const DC = min(D, 512)                      # columns of a vector chunk
  const GKC = min(D, 256)                     # K chunk of the gate matmul ([E, GKC] f32 in L1)
  assert D % DC == 0 and D % GKC == 0
  input  x_mixed: bf16[T, D]
  input  norm_w: bf16[1, D]
  input  gate_w: f32[E, D]
  input  gate_bias: f32[1, E]
  input  tid2eid: i32[VOCAB, TOPK]
  input  input_ids: i32[T, 1]
  input  num_tokens: i32[1, 1]
  input  fwd_token: i32[1, 1]
  output x_norm_i8: i8[T, D]
  output x_norm_scale: f32[T, 1]
  output token_mask: f32[T, 1]
  output indices: i32[T, TOPK]
  output weights: f32[T, TOPK]
  scratch xg: f32[T, D]
  scratch inv_rms: f32[T, 1]
  scratch logits: f32[T, E]
  scratch sort_row: f32[T, 256]

  # Deferred RMSNorm: 1/rms is never applied to x. xg = x * gamma (fp32) is quantised per row
  # (a positive per-token factor cancels out of symmetric quant); inv_rms folds into the
  # dequant scale. Inactive tokens (t >= num_tokens) get scale 0.
  task norm spmd(T / 16) on aiv {
    read(fwd_token[0, 0])                     # this forward starts after the previous one ended
    let n = max(min(read(num_tokens[0, 0]), T), 0)
    let t0 = block * 16
    let ss = zeros(f32, [16, 1])
    let amax = full(f32, [16, 1], 0.0001)
    for c in range(D / DC) {
      let xf = cast(x_mixed[t0 : t0 + 16, c * DC : (c + 1) * DC], f32)
      ss = ss + row_sum(xf * xf)
      let g = col_expand_mul(xf, cast(norm_w[0 : 1, c * DC : (c + 1) * DC], f32))
      xg[t0 : t0 + 16, c * DC : (c + 1) * DC] = g
      amax = maximum(amax, row_max(abs(g)))
    }
    let inv = rsqrt(ss * (1.0 / D) + 0.000001)
    inv_rms[t0 : t0 + 16, :] = inv
    let sq = 127.0 / amax
    for c in range(D / DC) {
      x_norm_i8[t0 : t0 + 16, c * DC : (c + 1) * DC] = cast(row_expand_mul(xg[t0 : t0 + 16, c * DC : (c + 1) * DC], sq), i8)
    }
    x_norm_scale[t0 : t0 + 16, :] = recip(sq) * inv
    token_mask[t0 : t0 + 16, :] = full(f32, [16, 1], 1.0)
    for i in range(16) {
      if t0 + i >= n {
        x_norm_scale[t0 + i : t0 + i + 1, :] = zeros(f32, [1, 1])
        token_mask[t0 + i : t0 + i + 1, :] = zeros(f32, [1, 1])
      }
    }
  }

  task logits_mm spmd(T / 16) on aic {
    let t0 = block * 16
    let acc = matmul(xg[t0 : t0 + 16, 0 : GKC], gate_w[:, 0 : GKC], b_trans)
    for c in range(1, D / GKC) {
      acc = matmul_acc(acc, xg[t0 : t0 + 16, c * GKC : (c + 1) * GKC], gate_w[:, c * GKC : (c + 1) * GKC], b_trans)
    }
    logits[t0 : t0 + 16, :] = acc
  }

  # scores = sqrt(softplus(inv_rms * logits)), softplus as the kernel computes it:
  # max(l, 0) + max(ln(1 + e^-|l|), m * e^min(l, 0)) with m = clamp(-l - 10, 0, 1).
  # Hash layers take tid2eid[input_ids[t]]; score layers the top-6 of scores + bias over the
  # kernel's 256 sorted columns (pads at -inf; ties go to the lower expert id). Weights come
  # from the unbiased scores, normalised, times routed_scaling_factor 1.5; 0 when inactive.
  task route spmd(T / 16) on aiv {
    let n = max(min(read(num_tokens[0, 0]), T), 0)
    let t0 = block * 16
    let l = row_expand_mul(logits[t0 : t0 + 16, :], inv_rms[t0 : t0 + 16, :])
    let m = minimum(maximum(neg(l) - 10.0, 0.0), 1.0)
    let sp = maximum(l, 0.0) + maximum(log(1.0 + exp(neg(abs(l)))), m * exp(minimum(l, 0.0)))
    let scores = sqrt(sp)
    for i in range(16) {
      let t = t0 + i
      if t < n {
        if LAYER_ID < NUM_HASH_LAYERS {
          let id = read(input_ids[t, 0])
          indices[t : t + 1, :] = tid2eid[id : id + 1, :]
        } else {
          sort_row[t : t + 1, :] = full(f32, [1, 256], -inf)
          sort_row[t : t + 1, 0 : E] = scores[i : i + 1, :] + gate_bias[0 : 1, :]
          indices[t : t + 1, :] = odd_lanes(topk(sort_row[t : t + 1, :], TOPK, valid = E))
        }
      } else {
        indices[t : t + 1, :] = zeros(i32, [1, TOPK])
      }
    }
    let v = gather(scores, indices[t0 : t0 + 16, :])
    weights[t0 : t0 + 16, :] = row_expand_mul(row_expand_div(v, row_sum(v)) * 1.5, token_mask[t0 : t0 + 16, :])
  }
}

# ------------------------------------------------------------------------- shared expert

# W8A8 SwiGLU on every token: INT8 x INT8 -> INT32 matmuls, dequantised by the row scale and
# then the output-channel scale; gate <= 10 and up in [-10, 10] (swiglu_limit);
# h = silu(gate) * up is requantised per row to INT8; y = bf16(h @ W2^T).
layer moe_shared_expert(T = 128, D = 4096, I = 2048) {
  const DC = min(D, 512)                      # vector chunk of D
  const IC = min(I, 256)                      # vector chunk of I
  const KC = min(D, 1024)                     # K chunk of gate/up ([NC, KC] i8 in L1)
  const NC = min(I, 256)                      # N chunk of gate/up ([16, NC] i32 in L0C)
  const KC2 = min(I, 512)                     # K chunk of w2
  const NC2 = min(D, 512)                     # N chunk of w2
  assert D % DC == 0 and I % IC == 0 and D % KC == 0 and I % NC == 0 and I % KC2 == 0 and D % NC2 == 0
  input  x_i8: i8[T, D]
  input  x_scale: f32[T, 1]
  input  w1: i8[I, D]
  input  w1_scale: f32[1, I]
  input  w3: i8[I, D]
  input  w3_scale: f32[1, I]
  input  w2: i8[D, I]
  input  w2_scale: f32[1, D]
  output y: bf16[T, D]
  scratch h_gate: i32[T, I]
  scratch h_up: i32[T, I]
  scratch h_f: f32[T, I]
  scratch h_q: i8[T, I]
  scratch h_sd: f32[T, 1]
  scratch y_acc: i32[T, D]

  task gate_up_mm spmd(T / 16) on aic {
    let t0 = block * 16
    for nb in range(I / NC) {
      let x0 = x_i8[t0 : t0 + 16, 0 : KC]
      let acc_g = matmul(x0, w1[nb * NC : (nb + 1) * NC, 0 : KC], b_trans)
      let acc_u = matmul(x0, w3[nb * NC : (nb + 1) * NC, 0 : KC], b_trans)
      for kb in range(1, D / KC) {
        let x = x_i8[t0 : t0 + 16, kb * KC : (kb + 1) * KC]
        acc_g = matmul_acc(acc_g, x, w1[nb * NC : (nb + 1) * NC, kb * KC : (kb + 1) * KC], b_trans)
        acc_u = matmul_acc(acc_u, x, w3[nb * NC : (nb + 1) * NC, kb * KC : (kb + 1) * KC], b_trans)
      }
      h_gate[t0 : t0 + 16, nb * NC : (nb + 1) * NC] = acc_g
      h_up[t0 : t0 + 16, nb * NC : (nb + 1) * NC] = acc_u
    }
  }

  task gate_up_act spmd(T / 16) on aiv {
    let t0 = block * 16
    let xs = x_scale[t0 : t0 + 16, :]
    let amax = full(f32, [16, 1], 0.0001)
    for c in range(I / IC) {
      let g = col_expand_mul(row_expand_mul(cast(h_gate[t0 : t0 + 16, c * IC : (c + 1) * IC], f32), xs), w1_scale[0 : 1, c * IC : (c + 1) * IC])
      let u = col_expand_mul(row_expand_mul(cast(h_up[t0 : t0 + 16, c * IC : (c + 1) * IC], f32), xs), w3_scale[0 : 1, c * IC : (c + 1) * IC])
      let h = silu(minimum(g, 10.0)) * maximum(minimum(u, 10.0), -10.0)
      h_f[t0 : t0 + 16, c * IC : (c + 1) * IC] = h
      amax = maximum(amax, row_max(abs(h)))
    }
    let sq = 127.0 / amax
    for c in range(I / IC) {
      h_q[t0 : t0 + 16, c * IC : (c + 1) * IC] = cast(row_expand_mul(h_f[t0 : t0 + 16, c * IC : (c + 1) * IC], sq), i8)
    }
    h_sd[t0 : t0 + 16, :] = recip(sq)
  }

  task w2_mm spmd(T / 16) on aic {
    let t0 = block * 16
    for nb in range(D / NC2) {
      let acc = matmul(h_q[t0 : t0 + 16, 0 : KC2], w2[nb * NC2 : (nb + 1) * NC2, 0 : KC2], b_trans)
      for kb in range(1, I / KC2) {
        acc = matmul_acc(acc, h_q[t0 : t0 + 16, kb * KC2 : (kb + 1) * KC2], w2[nb * NC2 : (nb + 1) * NC2, kb * KC2 : (kb + 1) * KC2], b_trans)
      }
      y_acc[t0 : t0 + 16, nb * NC2 : (nb + 1) * NC2] = acc
    }
  }

  task w2_act spmd(T / 16) on aiv {
    let t0 = block * 16
    for c in range(D / DC) {
      let acc = row_expand_mul(cast(y_acc[t0 : t0 + 16, c * DC : (c + 1) * DC], f32), h_sd[t0 : t0 + 16, :])
      y[t0 : t0 + 16, c * DC : (c + 1) * DC] = cast(col_expand_mul(acc, w2_scale[0 : 1, c * DC : (c + 1) * DC]), bf16)
    }
  }
}

# ------------------------------------------------------------------------------ dispatch

# Receive windows on every rank, laid out [expert, source, slot] (upstream moe.dispatch):
#   lane row = le * RECV_MAX + src * MAX_PER_SRC + slot, MAX_PER_SRC = T, RECV_MAX = EP * T;
#   recv_aux col 0 = x scale, col 1 = routing weight; recv_route col 0 = r_route = t * TOPK + k;
#   recv_meta[src, le] = the number of rows src sends to local expert le.
layer moe_dispatch(EP = 16 in {2, 4, 8, 16}, N_LOCAL = 16, T = 128, D = 4096, TOPK = 6, RETIRE = 1 in {0, 1}) {
  ranks EP
  const E = N_LOCAL * EP
  const RM = EP * T
  scalar epoch: i32
  input  num_tokens: i32[1, 1]
  input  indices: i32[T, TOPK]
  input  weights: f32[T, TOPK]
  input  x_norm_i8: i8[T, D]
  input  x_norm_scale: f32[T, 1]
  output recv_count: i32[N_LOCAL, 1]
  output g_x: i8[N_LOCAL * RM, D]
  output g_scale: f32[N_LOCAL * RM, 1]
  output g_weight: f32[N_LOCAL * RM, 1]
  output g_route: i32[N_LOCAL * RM, 1]
  output g_src: i32[N_LOCAL * RM, 1]
  window recv_meta: i32[EP, N_LOCAL]
  window recv_x: i8[N_LOCAL * RM, D]
  window recv_aux: f32[N_LOCAL * RM, 8]
  window recv_route: i32[N_LOCAL * RM, 8]
  signal data_arrived: i32[EP]
  scratch send_cnt: i32[1, E]
  scratch send_t: i32[E * T, 1]
  scratch send_aux: f32[E * T, 2]
  scratch send_route: i32[E * T, 1]

  # Routes (t, k) of active tokens, t-major then k-minor: the slot of a route is the number
  # of earlier routes from this rank to the same expert. Pack each route's token, scale,
  # weight and r_route at [expert, slot], then publish this rank's counts for dst's experts
  # into recv_meta[rank, :] on every dst.
  task meta on aiv {
    let n = max(min(read(num_tokens[0, 0]), T), 0)
    for eid in range(E) { send_cnt[0, eid] = 0 }
    for t in range(T) {
      if t < n {
        for k in range(TOPK) {
          let eid = read(indices[t, k])
          let slot = read(send_cnt[0, eid])
          let p = eid * T + slot
          send_t[p, 0] = t
          send_aux[p, 0] = read(x_norm_scale[t, 0])
          send_aux[p, 1] = read(weights[t, k])
          send_route[p, 0] = t * TOPK + k
          send_cnt[0, eid] = slot + 1
        }
      }
    }
    for dst in range(EP) {
      remote_store recv_meta[rank : rank + 1, :] @ dst = send_cnt[0 : 1, dst * N_LOCAL : (dst + 1) * N_LOCAL]
    }
  }

  # One block per local-expert slot le: put every row routed to (dst, le) into dst's lane.
  task push spmd(N_LOCAL) on aiv early_resolve {
    let le = block
    for dst in range(EP) {
      let eid = dst * N_LOCAL + le
      let c = read(send_cnt[0, eid])
      let lane = le * RM + rank * T
      for s0 in range(T / 16) {
        if s0 * 16 < c {
          for s in range(s0 * 16, s0 * 16 + 16) {
            if s < c {
              let t = read(send_t[eid * T + s, 0])
              remote_store recv_x[lane + s : lane + s + 1, :] @ dst = x_norm_i8[t : t + 1, :]
            }
          }
        }
      }
      if c > 0 {
        remote_store recv_aux[lane : lane + c, 0 : 2] @ dst = send_aux[eid * T : eid * T + c, :]
        remote_store recv_route[lane : lane + c, 0 : 1] @ dst = send_route[eid * T : eid * T + c, :]
      }
    }
  }

  # After the whole push grid (the fix of pypto-lib #893/#982): every local row has been put
  # before this block can hold a core spinning. One arrival per peer, then wait for each.
  task wait on aiv after push early_resolve {
    for peer in range(EP) { if peer != rank { notify data_arrived[rank] @ peer += 1 } }
    for src in range(EP) {
      if src != rank {
        if RETIRE == 1 { wait data_arrived[src] >= 1 } else { wait data_arrived[src] >= epoch }
      }
    }
  }

  # Compact each expert's lanes source-major: out_col = earlier sources' counts + slot, and
  # zero the rest of the last 16-row tile. Not early_resolve, so only these 16 blocks can be
  # staged behind the cross-rank wait, never the routed-expert tasks (pypto-lib #982).
  task gather spmd(N_LOCAL) on aiv after wait {
    let e = block
    let col = 0
    for src in range(EP) {
      let c = read(recv_meta[src, e])
      let lane = e * RM + src * T
      let out = e * RM + col
      g_x[out : out + c, :] = recv_x[lane : lane + c, :]  # dslc: ignore[R506] each source sends an expert at most T rows: expert e's rows stay in e * RM .. (e + 1) * RM
      g_scale[out : out + c, :] = recv_aux[lane : lane + c, 0 : 1]
      g_weight[out : out + c, :] = recv_aux[lane : lane + c, 1 : 2]
      g_route[out : out + c, :] = recv_route[lane : lane + c, 0 : 1]
      g_src[out : out + c, :] = src
      col = col + c
    }
    recv_count[e, 0] = col
    for i in range(16) {
      let r = e * RM + col + i
      if col + i < cdiv(col, 16) * 16 {
        g_x[r : r + 1, :] = zeros(i8, [1, D])
        g_scale[r : r + 1, :] = zeros(f32, [1, 1])
        g_weight[r : r + 1, :] = zeros(f32, [1, 1])
      }
    }
  }
}

# ------------------------------------------------------------------------ routed experts

# One task chain per local expert; an expert that received no row is skipped (`when`), the
# others run their 16-row tiles up to the received count. The routing weight is folded into
# the row dequant scale of h (h_sd * w first); recv_y = bf16(h @ W2[e]^T).
layer moe_routed_experts(EP = 16, N_LOCAL = 16, T = 128, D = 4096, I = 2048) {
  const RM = EP * T
  const DC = min(D, 512)
  const IC = min(I, 256)
  const KC = min(D, 1024)
  const NC = min(I, 256)
  const KC2 = min(I, 512)
  const NC2 = min(D, 512)
  assert D % DC == 0 and I % IC == 0 and D % KC == 0 and I % NC == 0 and I % KC2 == 0 and D % NC2 == 0
  input  x_i8: i8[N_LOCAL * RM, D]
  input  x_scale: f32[N_LOCAL * RM, 1]
  input  x_weight: f32[N_LOCAL * RM, 1]
  input  count: i32[N_LOCAL, 1]
  input  w1: i8[N_LOCAL * I, D]
  input  w1_scale: f32[N_LOCAL, I]
  input  w3: i8[N_LOCAL * I, D]
  input  w3_scale: f32[N_LOCAL, I]
  input  w2: i8[N_LOCAL * D, I]
  input  w2_scale: f32[N_LOCAL, D]
  output y: bf16[N_LOCAL * RM, D]
  scratch h_gate: i32[N_LOCAL * RM, I]
  scratch h_up: i32[N_LOCAL * RM, I]
  scratch h_f: f32[N_LOCAL * RM, I]
  scratch h_q: i8[N_LOCAL * RM, I]
  scratch h_sd: f32[N_LOCAL * RM, 1]
  scratch y_acc: i32[N_LOCAL * RM, D]

  for e in parallel(N_LOCAL) {
    task gate_up_mm[e] on aic when count[e, 0] > 0 {
      let c = read(count[e, 0])
      for tt in range(RM / 16) {
        if tt * 16 < c {
          let r0 = e * RM + tt * 16
          for nb in range(I / NC) {
            let w0 = e * I + nb * NC
            let x0 = x_i8[r0 : r0 + 16, 0 : KC]
            let acc_g = matmul(x0, w1[w0 : w0 + NC, 0 : KC], b_trans)
            let acc_u = matmul(x0, w3[w0 : w0 + NC, 0 : KC], b_trans)
            for kb in range(1, D / KC) {
              let x = x_i8[r0 : r0 + 16, kb * KC : (kb + 1) * KC]
              acc_g = matmul_acc(acc_g, x, w1[w0 : w0 + NC, kb * KC : (kb + 1) * KC], b_trans)
              acc_u = matmul_acc(acc_u, x, w3[w0 : w0 + NC, kb * KC : (kb + 1) * KC], b_trans)
            }
            h_gate[r0 : r0 + 16, nb * NC : (nb + 1) * NC] = acc_g
            h_up[r0 : r0 + 16, nb * NC : (nb + 1) * NC] = acc_u
          }
        }
      }
    }

    task gate_up_act[e] on aiv when count[e, 0] > 0 {
      let c = read(count[e, 0])
      for tt in range(RM / 16) {
        if tt * 16 < c {
          let r0 = e * RM + tt * 16
          let xs = x_scale[r0 : r0 + 16, :]
          let amax = full(f32, [16, 1], 0.0001)
          for cb in range(I / IC) {
            let g = col_expand_mul(row_expand_mul(cast(h_gate[r0 : r0 + 16, cb * IC : (cb + 1) * IC], f32), xs), w1_scale[e : e + 1, cb * IC : (cb + 1) * IC])
            let u = col_expand_mul(row_expand_mul(cast(h_up[r0 : r0 + 16, cb * IC : (cb + 1) * IC], f32), xs), w3_scale[e : e + 1, cb * IC : (cb + 1) * IC])
            let h = silu(minimum(g, 10.0)) * maximum(minimum(u, 10.0), -10.0)
            h_f[r0 : r0 + 16, cb * IC : (cb + 1) * IC] = h
            amax = maximum(amax, row_max(abs(h)))
          }
          let sq = 127.0 / amax
          for cb in range(I / IC) {
            h_q[r0 : r0 + 16, cb * IC : (cb + 1) * IC] = cast(row_expand_mul(h_f[r0 : r0 + 16, cb * IC : (cb + 1) * IC], sq), i8)
          }
          h_sd[r0 : r0 + 16, :] = recip(sq) * x_weight[r0 : r0 + 16, :]
        }
      }
    }

    task w2_mm[e] on aic early_resolve when count[e, 0] > 0 {
      let c = read(count[e, 0])
      for tt in range(RM / 16) {
        if tt * 16 < c {
          let r0 = e * RM + tt * 16
          for nb in range(D / NC2) {
            let w0 = e * D + nb * NC2
            let acc = matmul(h_q[r0 : r0 + 16, 0 : KC2], w2[w0 : w0 + NC2, 0 : KC2], b_trans)
            for kb in range(1, I / KC2) {
              acc = matmul_acc(acc, h_q[r0 : r0 + 16, kb * KC2 : (kb + 1) * KC2], w2[w0 : w0 + NC2, kb * KC2 : (kb + 1) * KC2], b_trans)
            }
            y_acc[r0 : r0 + 16, nb * NC2 : (nb + 1) * NC2] = acc
          }
        }
      }
    }

    task w2_act[e] on aiv early_resolve when count[e, 0] > 0 {
      let c = read(count[e, 0])
      for tt in range(RM / 16) {
        if tt * 16 < c {
          let r0 = e * RM + tt * 16
          for cb in range(D / DC) {
            let acc = row_expand_mul(cast(y_acc[r0 : r0 + 16, cb * DC : (cb + 1) * DC], f32), h_sd[r0 : r0 + 16, :])
            y[r0 : r0 + 16, cb * DC : (cb + 1) * DC] = cast(col_expand_mul(acc, w2_scale[e : e + 1, cb * DC : (cb + 1) * DC]), bf16)
          }
        }
      }
    }
  }
}

# ------------------------------------------------------------------------------- combine

layer moe_combine(EP = 16 in {2, 4, 8, 16}, N_LOCAL = 16, T = 128, D = 4096, TOPK = 6, RETIRE = 1 in {0, 1}) {
  ranks EP
  const RM = EP * T
  const DC = min(D, 512)
  assert D % DC == 0
  scalar epoch: i32
  taskid dispatched                            # the dispatch's arrival task, threaded through the call
  input  y: bf16[N_LOCAL * RM, D]
  input  y_route: i32[N_LOCAL * RM, 1]
  input  y_src: i32[N_LOCAL * RM, 1]
  input  count: i32[N_LOCAL, 1]
  input  sh: bf16[T, D]
  input  token_mask: f32[T, 1]
  output ffn_acc: f32[T, D]
  output ffn_out: bf16[T, D]
  window routed_y_buf: bf16[T * TOPK, D]
  signal combine_arrived: i32[EP]

  # Put each received row back to its origin rank under its key r_route = t * TOPK + k; the
  # origin's routed_y_buf is k-major (row k * T + t). No notify here and no early_resolve
  # (pypto-lib #953): the arrival is published after the grid join.
  task scatter spmd(N_LOCAL) on aiv {
    let e = block
    let c = read(count[e, 0])
    for j0 in range(RM / 16) {
      if j0 * 16 < c {
        for j in range(j0 * 16, j0 * 16 + 16) {
          if j < c {
            let row = e * RM + j
            let src = read(y_src[row, 0])
            let r = read(y_route[row, 0])
            let slot = (r % TOPK) * T + r / TOPK
            remote_store routed_y_buf[slot : slot + 1, :] @ src = y[row : row + 1, :]
          }
        }
      }
    }
  }

  # One arrival per peer after the whole scatter grid (and after this rank's dispatch arrival,
  # even when no expert here received a row), then wait for every peer's.
  task wait on aiv after scatter, dispatched {
    for peer in range(EP) { if peer != rank { notify combine_arrived[rank] @ peer += 1 } }
    for src in range(EP) {
      if src != rank {
        if RETIRE == 1 { wait combine_arrived[src] >= 1 } else { wait combine_arrived[src] >= epoch }
      }
    }
  }

  # ffn_out = bf16(((sh + y0) + y1) + ... + y5): summed in fp32 with k in order, then one
  # rint to bf16 (the reference's order and casts). Partial 0 is sh, partial k + 1 the routed
  # row of (t, k), zero for an inactive token; reduce_sum folds them in ascending order.
  task shared_routed spmd(T / 16 * (D / DC)) on aiv after wait {
    let t0 = block / (D / DC) * 16
    let c0 = block % (D / DC) * DC
    ffn_acc[t0 : t0 + 16, c0 : c0 + DC] = reduce_sum j in range(TOPK + 1) {
      let k = max(j - 1, 0)
      let part = cast(sh[t0 : t0 + 16, c0 : c0 + DC], f32)
      if j > 0 {
        part = row_expand_mul(cast(routed_y_buf[k * T + t0 : k * T + t0 + 16, c0 : c0 + DC], f32), token_mask[t0 : t0 + 16, :])
      }
      return part
    }
  }

  task ffn_round spmd(T / 16 * (D / DC)) on aiv after shared_routed {
    let t0 = block / (D / DC) * 16
    let c0 = block % (D / DC) * DC
    ffn_out[t0 : t0 + 16, c0 : c0 + DC] = cast(ffn_acc[t0 : t0 + 16, c0 : c0 + DC], bf16)
  }
}

# ---------------------------------------------------------------------------- the layer

layer moe(EP = 16 in {2, 4, 8, 16}, N_LOCAL = 16, T = 128, D = 4096, I = 2048, TOPK = 6,
          VOCAB = 129280, LAYER_ID = 0 in 0..42, RETIRE = 1 in {0, 1}) {
  ranks EP
  golden "moe_golden.py"
  const E = N_LOCAL * EP
  const RM = EP * T                            # RECV_MAX = EP * MAX_PER_SRC, MAX_PER_SRC = T
  assert E % 16 == 0 and E <= 256, "the gate sorts E = N_LOCAL * EP experts in 256 columns"
  assert T % 16 == 0, "16-token row tiles"
  scalar epoch: i32

  input  x_mixed: bf16[T, D]                   # hc_pre's output
  input  norm_w: bf16[1, D]
  input  gate_w: f32[E, D]
  input  gate_bias: f32[1, E]
  input  tid2eid: i32[VOCAB, TOPK]
  input  input_ids: i32[T, 1]
  input  num_tokens: i32[1, 1]                 # active tokens n; tokens t >= n are not routed
  input  shared_w1: i8[I, D]
  input  shared_w1_scale: f32[1, I]
  input  shared_w3: i8[I, D]
  input  shared_w3_scale: f32[1, I]
  input  shared_w2: i8[D, I]
  input  shared_w2_scale: f32[1, D]
  input  routed_w1: i8[N_LOCAL * I, D]         # this rank's experts, stacked
  input  routed_w1_scale: f32[N_LOCAL, I]
  input  routed_w3: i8[N_LOCAL * I, D]
  input  routed_w3_scale: f32[N_LOCAL, I]
  input  routed_w2: i8[N_LOCAL * D, I]
  input  routed_w2_scale: f32[N_LOCAL, D]

  output x_norm_i8: i8[T, D]
  output x_norm_scale: f32[T, 1]
  output indices: i32[T, TOPK]
  output weights: f32[T, TOPK]
  output sh: bf16[T, D]
  output ffn_out: bf16[T, D]                   # hc_post's input

  scratch token_mask: f32[T, 1]
  scratch fwd_token: i32[1, 1]
  scratch recv_count: i32[N_LOCAL, 1]
  scratch g_x: i8[N_LOCAL * RM, D]
  scratch g_scale: f32[N_LOCAL * RM, 1]
  scratch g_weight: f32[N_LOCAL * RM, 1]
  scratch g_route: i32[N_LOCAL * RM, 1]
  scratch g_src: i32[N_LOCAL * RM, 1]
  scratch recv_y: bf16[N_LOCAL * RM, D]
  scratch ffn_acc: f32[T, D]                   # the fp32 sum before the rint to bf16
  signal data_arrived: i32[EP]
  signal combine_arrived: i32[EP]

  call gate = moe_gate(T = T, D = D, E = E, TOPK = TOPK, VOCAB = VOCAB, LAYER_ID = LAYER_ID,
                       x_mixed = x_mixed, norm_w = norm_w, gate_w = gate_w, gate_bias = gate_bias,
                       tid2eid = tid2eid, input_ids = input_ids, num_tokens = num_tokens,
                       fwd_token = fwd_token, x_norm_i8 = x_norm_i8, x_norm_scale = x_norm_scale,
                       token_mask = token_mask, indices = indices, weights = weights)

  call shared = moe_shared_expert(T = T, D = D, I = I, x_i8 = x_norm_i8, x_scale = x_norm_scale,
                                  w1 = shared_w1, w1_scale = shared_w1_scale,
                                  w3 = shared_w3, w3_scale = shared_w3_scale,
                                  w2 = shared_w2, w2_scale = shared_w2_scale, y = sh)

  call dispatch = moe_dispatch(EP = EP, N_LOCAL = N_LOCAL, T = T, D = D, TOPK = TOPK, RETIRE = RETIRE,
                               num_tokens = num_tokens, indices = indices, weights = weights,
                               x_norm_i8 = x_norm_i8, x_norm_scale = x_norm_scale,
                               recv_count = recv_count, g_x = g_x, g_scale = g_scale,
                               g_weight = g_weight, g_route = g_route, g_src = g_src,
                               data_arrived = data_arrived)

  call experts = moe_routed_experts(EP = EP, N_LOCAL = N_LOCAL, T = T, D = D, I = I,
                                    x_i8 = g_x, x_scale = g_scale, x_weight = g_weight, count = recv_count,
                                    w1 = routed_w1, w1_scale = routed_w1_scale,
                                    w3 = routed_w3, w3_scale = routed_w3_scale,
                                    w2 = routed_w2, w2_scale = routed_w2_scale, y = recv_y)

  call combine = moe_combine(EP = EP, N_LOCAL = N_LOCAL, T = T, D = D, TOPK = TOPK, RETIRE = RETIRE,
                             dispatched = dispatch.wait, y = recv_y, y_route = g_route, y_src = g_src,
                             count = recv_count, sh = sh, token_mask = token_mask, ffn_acc = ffn_acc, ffn_out = ffn_out,
                             combine_arrived = combine_arrived)

  # The end of the forward, after its final output: retire the one credit per peer and signal
  # that this forward's waits observed (RETIRE = 1; see the header), and hand the ordering
  # token to the next forward.
  task clear_signals on aiv after combine.ffn_round {
    if RETIRE == 1 {
      for src in range(EP) {
        if src != rank {
          notify data_arrived[src] @ rank += -1
          notify combine_arrived[src] @ rank += -1
        }
      }
    }
    fwd_token[0, 0] = epoch
  }
}
