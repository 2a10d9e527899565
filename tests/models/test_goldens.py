"""Invariants of the DeepSeek-V4-Flash goldens at their REDUCED configurations.

Every assertion here is exact or has a bound derived in the comment next to it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.deepseek_v4_flash.golden import hc_post, hc_pre, moe, prefill_csa, prefill_indexer
from models.deepseek_v4_flash.golden._common import FP32_NEG_INF, bf16
from runtime import compare
from runtime import tileops as T

# ----------------------------------------------------------------------------- common


def test_golden_bf16_agrees_with_tileops_bit_trick() -> None:
    """Two independent RNE implementations (float64 scaling vs integer bit trick) agree."""
    rng = np.random.default_rng(0)
    words = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    words[:4] = [0x3F808000, 0x3F818000, 0x00008000, 0x7F7F8000]
    x = words.view(np.float32)
    finite = np.isfinite(x)
    np.testing.assert_array_equal(bf16(x[finite]).view(np.uint32), T.to_bf16(x[finite]).view(np.uint32))


def _off_by_more_than_any_tolerance(name: str, tol, out: dict, ctx: dict) -> tuple[np.ndarray, dict]:
    """An output no comparator of the reference may accept, and its context: every value moved
    by |x| + 2 (so past atol, rtol and any bad-point budget), or a top-k selection in reverse
    order (with the paired values reversed too, so that they are no longer descending)."""
    if tol.comparator.startswith("topk"):
        bad_ctx = dict(ctx)
        if ctx.get("vals") is not None:
            bad_ctx["vals"] = np.ascontiguousarray(ctx["vals"][..., ::-1])
        return np.ascontiguousarray(out[name][..., ::-1]), bad_ctx
    x = np.asarray(out[name], np.float64)
    return x + np.abs(x) + 2.0, ctx


@pytest.mark.parametrize("mod", [hc_pre, hc_post, moe, prefill_indexer, prefill_csa])
def test_every_tolerance_accepts_the_golden_and_rejects_a_wrong_output(mod) -> None:
    inputs = mod.make_inputs(mod.REDUCED, seed=1)
    out = mod.golden(inputs, mod.REDUCED)
    again = mod.golden(mod.make_inputs(mod.REDUCED, seed=1), mod.REDUCED)
    context = {"num_tokens": inputs.get("num_tokens", 0), "gate_rows": moe.gate_valid_rows(moe.REDUCED)}
    for name, tol in mod.TOLERANCES.items():
        assert name in out, name
        np.testing.assert_array_equal(out[name], again[name])  # seeded: reproducible bit for bit
        ctx = dict(context, scores=out.get("score"), vals=out.get("weights"))
        assert tol.check(out[name], again[name], **ctx).passed, name
        wrong, wrong_ctx = _off_by_more_than_any_tolerance(name, tol, out, ctx)
        assert not tol.check(wrong, again[name], **wrong_ctx).passed, name


# ----------------------------------------------------------------------------- hc_pre


@pytest.fixture(scope="module")
def hc() -> tuple[dict, hc_pre.HcPreOut]:
    cfg = hc_pre.REDUCED
    inputs = hc_pre.make_inputs(cfg, seed=0)
    out = hc_pre.hc_pre_golden(
        inputs["x"], inputs["hc_fn"], inputs["hc_scale"], inputs["hc_base"], rms_chunk=cfg.rms_chunk
    )
    return inputs, out


def test_hc_pre_linear_is_the_explicit_ascending_fold(hc) -> None:
    """Cube groups of 4 summed in float64, one fp32 rounding per group, splits folded 0..3."""
    inputs, out = hc
    cfg = hc_pre.REDUCED
    x = inputs["x"].reshape(cfg.T, cfg.hc_dim)
    w = inputs["hc_fn"]
    per_split = cfg.hc_dim // cfg.splits
    for t, m in [(0, 0), (3, 7), (9, 12), (15, 23)]:
        partials = []
        for s in range(cfg.splits):
            acc = np.float32(0.0)
            for g in range(per_split // 4):
                group = 0.0  # a Python float is a float64
                for k in range(s * per_split + 4 * g, s * per_split + 4 * g + 4):
                    group += float(x[t, k]) * float(w[m, k])
                acc = np.float32(float(acc) + group)
            partials.append(acc)
        total = np.float32(0.0)
        for p in partials:  # ascending split order, from zero
            total = np.float32(total + p)
        assert out.mixes_raw[t, m] == total


def test_hc_pre_linear_tree_is_what_a_split_k_kernel_computes(hc) -> None:
    """Kernel form: per split, matmul + matmul_acc over K chunks (cube emulation), then an
    ascending reduce of disjoint partials: equal to the golden bit for bit."""
    inputs, out = hc
    cfg = hc_pre.REDUCED
    x = inputs["x"].reshape(cfg.T, cfg.hc_dim)
    w = inputs["hc_fn"]
    per_split = cfg.hc_dim // cfg.splits
    partials = []
    for s in range(cfg.splits):
        acc = None
        for k0 in range(s * per_split, (s + 1) * per_split, cfg.k_chunk):
            xa, wb = x[:, k0 : k0 + cfg.k_chunk], w[:, k0 : k0 + cfg.k_chunk]
            acc = (
                T.matmul(xa, wb, b_trans=True, k_group=4)
                if acc is None
                else T.matmul_acc(acc, xa, wb, b_trans=True, k_group=4)
            )
        partials.append(acc)
    total = partials[0]
    for p in partials[1:]:
        total = T.add(total, p)
    np.testing.assert_array_equal(total, out.mixes_raw)
    # Completion-order atomics (pre-fix) fold the same partials in another order: other bits.
    shuffled = ((partials[2] + partials[0]) + partials[3]) + partials[1]
    assert not np.array_equal(shuffled, out.mixes_raw)
    np.testing.assert_allclose(shuffled, out.mixes_raw, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rms_splits", [1, 4])
def test_hc_pre_rms_chunk_tree(hc, rms_splits: int) -> None:
    inputs, _ = hc
    cfg = hc_pre.REDUCED
    x = inputs["x"].reshape(cfg.T, cfg.hc_dim)
    got = hc_pre.rms_sum(x, cfg.rms_chunk, rms_splits)
    n_chunks = cfg.hc_dim // cfg.rms_chunk
    per = n_chunks // rms_splits
    for t in (0, 5, 15):
        sq = (x[t] * x[t]).astype(np.float32)
        chunks = [
            np.float32(sq[c * cfg.rms_chunk : (c + 1) * cfg.rms_chunk].astype(np.float64).sum())
            for c in range(n_chunks)
        ]
        total = np.float32(0.0)
        for s in range(rms_splits):
            q = np.float32(0.0)
            for c in chunks[s * per : (s + 1) * per]:
                q = np.float32(q + c)
            total = np.float32(total + q)
        assert got[t] == total


def test_hc_pre_sinkhorn_is_doubly_stochastic(hc) -> None:
    _, out = hc
    c = out.comb.reshape(-1, 4, 4).astype(np.float64)
    assert (c > 0).all()
    # The last step divides columns by (sum + 1e-6): column sums are 1 - 1e-6/sum, plus a few
    # fp32 roundings (< 2^-22 each).
    assert np.abs(c.sum(axis=-2) - 1).max() <= 1e-6 + 2**-20
    # Rows are only as converged as 20 iterations make them on these skewed logits; with many
    # iterations they reach the same 1e-6 bound.
    logits = np.random.default_rng(0).standard_normal((8, 4, 4)).astype(np.float32) * 3
    c = hc_pre.sinkhorn(logits, 2000, 1e-6).astype(np.float64)
    assert np.abs(c.sum(axis=-1) - 1).max() <= 1e-6 + 2**-20
    assert np.abs(c.sum(axis=-2) - 1).max() <= 1e-6 + 2**-20
    paired = hc_pre.sinkhorn(logits, 20, 1e-6, colsum="paired").astype(np.float64)
    assert np.abs(paired.sum(axis=-2) - 1).max() <= 1e-6 + 2**-20


def test_hc_pre_outputs(hc) -> None:
    inputs, out = hc
    assert T.is_bf16_representable(out.x_mixed)
    assert ((out.post > 0) & (out.post < 2)).all()
    pre = np.float32(1e-6) + 1 / (
        1
        + np.exp(
            -(
                out.mixes_raw[:, :4] / np.sqrt(out.sq_sum / 1024 + 1e-6)[:, None] * inputs["hc_scale"][0]
                + inputs["hc_base"][:4]
            )
        )
    )
    y = np.einsum("thd,th->td", inputs["x"].astype(np.float64), pre)
    np.testing.assert_allclose(out.x_mixed, y, rtol=2**-8, atol=1e-6)


# ---------------------------------------------------------------------------- hc_post


def test_hc_post_formula_and_zero_tail() -> None:
    cfg = hc_post.REDUCED
    inputs = hc_post.make_inputs(cfg, seed=0)
    y = hc_post.hc_post_golden(inputs["x"], inputs["residual"], inputs["post"], inputs["comb"])
    c = inputs["comb"].reshape(-1, 4, 4).astype(np.float64)
    want = inputs["post"][:, :, None] * inputs["x"][:, None, :].astype(np.float64)
    want += np.einsum("tid,tio->tod", inputs["residual"].astype(np.float64), c)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-7)
    tail = hc_post.hc_post_golden(
        inputs["x"], inputs["residual"], inputs["post"], inputs["comb"], num_tokens=5
    )
    np.testing.assert_array_equal(tail[:5], y[:5])
    assert not tail[5:].any()


# -------------------------------------------------------------------------------- moe


@pytest.fixture(scope="module", params=[0, 10], ids=["hash_layer", "score_layer"])
def moe_run(request) -> tuple[moe.MoeConfig, dict, dict]:
    cfg = replace(moe.REDUCED, layer_id=request.param, num_tokens=13)
    inputs = moe.make_inputs(cfg, seed=2)
    return cfg, inputs, moe.moe_golden(inputs, cfg)


def test_moe_routing_picks_topk_distinct_experts(moe_run) -> None:
    cfg, inputs, out = moe_run
    n = cfg.n_active
    idx = out["indices"][:, :n]
    assert idx.shape[-1] == cfg.topk == 6
    assert ((idx >= 0) & (idx < cfg.n_experts)).all()
    srt = np.sort(idx, axis=-1)
    assert (srt[..., 1:] != srt[..., :-1]).all()  # distinct within every token
    w = out["weights"][:, :n].astype(np.float64)
    np.testing.assert_allclose(w.sum(-1), cfg.routed_scaling, rtol=1e-6)
    assert not out["indices"][:, n:].any() and not out["weights"][:, n:].any()
    assert not out["x_norm_scale"][:, n:].any()
    if cfg.layer_id >= cfg.num_hash_layers:  # the biased-score top-6 (bias is zero here)
        for r in range(cfg.ep):
            x_mixed = out["x_mixed"][r]
            g = moe.gate_golden(
                x_mixed,
                inputs["norm_w"],
                inputs["gate_w"],
                inputs["gate_bias"],
                10,
                n,
                inputs["tid2eid"],
                inputs["input_ids"][r],
            )
            chosen = np.take_along_axis(g.scores, g.indices.astype(np.int64), -1)[:n]
            rest = g.scores[:n].copy()
            np.put_along_axis(rest, g.indices[:n].astype(np.int64), -np.inf, -1)
            assert (chosen.min(-1) >= rest.max(-1)).all()
    else:
        np.testing.assert_array_equal(idx, inputs["tid2eid"][inputs["input_ids"][:, :n]])


def test_moe_dispatch_layout(moe_run) -> None:
    cfg, _, out = moe_run
    n, nl, rm, mps = cfg.n_active, cfg.n_local, cfg.recv_max, cfg.max_per_src
    assert out["recv_count"].sum() == cfg.ep * n * cfg.topk
    for dst in range(cfg.ep):
        d = moe.dispatch_golden(
            out["x_norm_i8"], out["x_norm_scale"], out["indices"], out["weights"], n, cfg, dst
        )
        np.testing.assert_array_equal(d.recv_count, d.recv_meta.sum(0))
        for le in range(nl):
            col = 0
            for src in range(cfg.ep):
                t, k = np.nonzero(out["indices"][src, :n] == dst * nl + le)  # t-major, k-minor
                c = t.size
                assert d.recv_meta[src, le] == c
                lane = le * rm + src * mps + np.arange(c)
                np.testing.assert_array_equal(d.window_route[lane, 0], t * cfg.topk + k)
                np.testing.assert_array_equal(d.window_x[lane], out["x_norm_i8"][src, t])
                np.testing.assert_array_equal(
                    d.recv_r_route[le, col : col + c], t * cfg.topk + k
                )  # source-major
                np.testing.assert_array_equal(d.recv_w[le, col : col + c], out["weights"][src, t, k])
                col += c
            assert not d.recv_x[le, col:].any() and (d.recv_src[le, col:] == -1).all()


def test_moe_buffers_equal_per_route_shortcut_and_combine_order(moe_run) -> None:
    cfg, inputs, out = moe_run
    direct = moe.moe_golden(inputs, cfg, via_buffers=False)
    np.testing.assert_array_equal(direct["routed_y"], out["routed_y"])
    np.testing.assert_array_equal(direct["x_next"], out["x_next"])
    n = cfg.n_active
    acc = out["sh"][:, :n].copy()
    for k in range(cfg.topk):  # fp32 from sh, k ascending, each y already bf16
        acc = (acc + out["routed_y"].reshape(cfg.ep, cfg.T, cfg.topk, -1)[:, :n, k]).astype(np.float32)
    np.testing.assert_array_equal(out["ffn_out"][:, :n], T.to_bf16(acc))
    assert T.is_bf16_representable(out["routed_y"]) and T.is_bf16_representable(out["sh"])
    assert not out["ffn_out"][:, n:].any() and not out["sh"][:, n:].any()  # inactive: scale 0


def test_moe_balanced_routing_fills_every_expert_equally() -> None:
    cfg = replace(moe.REDUCED, balanced_routing=True)
    inputs = moe.make_inputs(cfg, seed=0)
    out = moe.moe_golden(inputs, cfg)
    per_expert = cfg.ep * cfg.T * cfg.topk // cfg.n_experts
    assert (out["recv_count"] == per_expert).all()


# -------------------------------------------------------------------- prefill indexer


@pytest.fixture(scope="module", params=[(0, None), (21, 37)], ids=["start0", "start21_n37"])
def idx_run(request) -> tuple[prefill_indexer.IndexerConfig, dict, dict]:
    start, n = request.param
    cfg = replace(prefill_indexer.REDUCED, start_pos=start, num_tokens=n)
    inputs = prefill_indexer.make_inputs(cfg, seed=3)
    return cfg, inputs, prefill_indexer.golden(inputs, cfg)


def test_indexer_topk_contract(idx_run) -> None:
    cfg, inputs, out = idx_run
    n = cfg.n_active
    pos = inputs["position_ids"].astype(np.int64)
    visible = np.minimum((pos + 1) // 4, cfg.score_cap)  # the causal bound (pos+1)//4
    np.testing.assert_array_equal(out["visible"], visible)
    assert cfg.score_cap == 2 * cfg.T // cfg.compress_ratio
    top = out["topk_idxs"]
    assert top.shape == (cfg.T, cfg.topk_cap)
    assert compare.topk_prefix_contract(top, visible, num_active=n, topk_cap=cfg.topk_cap).passed
    assert (top < np.maximum(visible, 1)[:, None]).all()  # every index below the visible bound
    k = np.where(np.arange(cfg.T) < n, np.minimum(cfg.topk_cap, visible), 0)
    assert ((top == -1) == (np.arange(cfg.topk_cap)[None, :] >= k[:, None])).all()  # -1 padded
    assert (out["topk_full"][:, cfg.topk_cap :] == -1).all()


def test_indexer_topk_selects_the_largest_scores(idx_run) -> None:
    cfg, _, out = idx_run
    score, top = out["score"], out["topk_idxs"]
    for t in range(cfg.n_active):
        v = int(out["visible"][t])
        assert np.isfinite(score[t, :v]).all() and (score[t, v:] == FP32_NEG_INF).all()
        chosen = sorted(score[t, top[t][top[t] >= 0]].tolist(), reverse=True)
        assert chosen == sorted(score[t, :v].tolist(), reverse=True)[: len(chosen)]
        assert list(top[t][top[t] >= 0]) == sorted(top[t][top[t] >= 0], key=lambda c: (-score[t, c], c))
    assert (out["topk_idxs"][cfg.n_active :] == -1).all()


def test_indexer_cache_writes_and_state_update(idx_run) -> None:
    cfg, inputs, out = idx_run
    hd = cfg.head_dim
    before = inputs["idx_kv_cache"].reshape(-1, hd)
    after = out["idx_kv_cache"].reshape(-1, hd)
    written = inputs["idx_slot_mapping"][inputs["idx_slot_mapping"] >= 0]
    pos = inputs["position_ids"][: cfg.n_active].astype(np.int64)
    assert written.size == np.count_nonzero((pos + 1) % 4 == 0)
    untouched = np.setdiff1d(np.arange(before.shape[0]), written)
    np.testing.assert_array_equal(after[untouched], before[untouched])  # history preserved
    assert (np.abs(after[written]).max(axis=-1) == 127).all()  # each row hits the int8 range
    scale = out["idx_kv_scale"].reshape(-1)[written]
    assert (scale > 0).all()
    rows = inputs["inner_state_slot_mapping"][: cfg.n_active]
    state = out["inner_compress_state"].reshape(-1, 4 * hd)
    x = inputs["x"][: cfg.n_active].astype(np.float64)
    np.testing.assert_allclose(
        state[rows, : 2 * hd], x @ inputs["inner_wkv"].T.astype(np.float64), rtol=1e-5, atol=1e-6
    )


def test_indexer_page_table_is_the_references_at_its_configuration() -> None:
    cfg = prefill_indexer.CONFIG  # T = 512: 260 pages, 17 is coprime with 260
    table = prefill_indexer.page_table(cfg.state_max_blocks, cfg.state_block_num)
    np.testing.assert_array_equal(table, (np.arange(8192) * 17 + 3) % 260)


@settings(max_examples=60, deadline=None)
@given(t=st.integers(1, 2048).map(lambda k: 4 * k), data=st.data())
def test_indexer_state_rows_of_one_request_are_distinct(t, data) -> None:
    """Every position a request touches (the 8 history positions it reads and the T it writes)
    has its own state row, at every admissible T and start_pos: a real page table is
    injective. (17 * b + 3) % nb is not when 17 divides nb, e.g. T = 128: nb = 68.)"""
    cfg = replace(prefill_indexer.CONFIG, T=t, max_pos=max(16384, 2 * t))
    sp = data.draw(st.integers(0, cfg.max_pos - t), label="start_pos")
    table = prefill_indexer.page_table(cfg.state_max_blocks, cfg.state_block_num)
    positions = np.arange(max(0, sp - cfg.state_len), sp + t)
    rows = prefill_indexer.state_row(positions, table, cfg.state_page)
    assert np.unique(rows).size == positions.size
    assert rows.max() < cfg.state_block_num * cfg.state_page


def test_indexer_with_nothing_visible_and_guards() -> None:
    cfg = replace(prefill_indexer.REDUCED, num_tokens=3)  # positions 0..2: (pos+1)//4 == 0
    out = prefill_indexer.golden(prefill_indexer.make_inputs(cfg, seed=0), cfg)
    assert (out["topk_full"] == -1).all() and (out["score"] == FP32_NEG_INF).all()
    with pytest.raises(ValueError, match="INDEXER_SCORE_CAP"):
        replace(prefill_indexer.REDUCED, start_pos=72).validate()


# --------------------------------------------------------------------------- prefill CSA


def test_csa_window_rows() -> None:
    pos = np.array([0, 5, 40])
    swa = prefill_csa.window_indices(pos, n=2, win=16)
    assert swa[0].tolist() == [0] + [-1] * 15
    assert swa[1].tolist() == list(range(6)) + [-1] * 10
    assert (swa[2] == -1).all()  # inactive token
    table = np.arange(8)[::-1] + 100  # logical block b -> physical 107 - b
    mapped = prefill_csa.window_indices(np.array([40]), n=1, win=16, block_table=table)
    assert mapped[0].tolist() == [(107 - p // 32) * 32 + p % 32 for p in range(25, 41)]


def test_csa_kernel_and_golden_packing() -> None:
    cfg = replace(prefill_csa.REDUCED, num_tokens=50)
    inputs = prefill_csa.make_inputs(cfg, seed=0)
    kp = prefill_csa.pack_kernel(inputs["swa_indices"], inputs["cmp_indices"], inputs["cmp_block_table"], cfg)
    gp = prefill_csa.pack_golden(inputs["swa_indices"], inputs["cmp_indices"], inputs["cmp_block_table"], cfg)
    rows = np.concatenate([kp.ori_rows, kp.cmp_rows], axis=1)
    assert rows.shape[1] == cfg.sparse_pad == 48
    np.testing.assert_array_equal(kp.bias == 0, rows >= 0)
    assert (kp.bias[rows < 0] == FP32_NEG_INF).all()
    for t in range(cfg.T):
        cc = min((t + 1) // 4, cfg.T // 4) if t < 50 else 0
        w = min(cfg.win, t + 1) if t < 50 else 0
        assert gp[t][0].tolist() == list(range(t - w + 1, t + 1))
        assert gp[t][1].tolist() == [(c // 32 % cfg.cmp_block_num) * 32 + c % 32 for c in range(cc)]
        want_mask = [int(w > 0)] + [int(cc > (b - 1) * cfg.attn_tile) for b in range(1, cfg.attn_blocks)]
        assert kp.valid_block_mask[t, : cfg.attn_blocks].tolist() == want_mask
        assert np.count_nonzero(rows[t] >= 0) == len(gp[t][0]) + len(gp[t][1])  # nothing truncated


def test_csa_attention_with_sinks() -> None:
    rng = np.random.default_rng(0)
    q = bf16(rng.standard_normal((4, 32)).astype(np.float32))
    kv = bf16(rng.standard_normal((40, 32)).astype(np.float32))
    sink = np.array([0.0, 1.0, -2.0, 30.0], np.float32)
    scale = 32**-0.5
    one = prefill_csa.attend(q, kv[:1], sink, tile=16, scale=scale)
    s = (q.astype(np.float64) @ kv[0].astype(np.float64)) * scale
    np.testing.assert_allclose(one, kv[:1] / (1 + np.exp(sink - s))[:, None], rtol=1e-6, atol=1e-9)
    out = prefill_csa.attend(q, kv, sink, tile=16, scale=scale)  # 3 tiles, merged online
    logits = (q.astype(np.float64) @ kv.T.astype(np.float64)) * scale
    m = np.maximum(logits.max(-1, keepdims=True), sink[:, None])
    p = np.exp(logits - m)
    denom = p.sum(-1, keepdims=True) + np.exp(sink[:, None] - m)
    want = (p @ kv) / denom
    # bf16(P) before PV: each p carries a relative error <= 2^-9, so the error of an output is
    # at most 2^-9 * sum_r p_r |v_r| / denom (doubled for the fp32 steps).
    bound = 2**-8 * (p @ np.abs(kv)) / denom + 1e-7
    assert (np.abs(out - want) <= bound).all()
    assert np.abs(out - want).max() > 100 * 2**-24  # ... and P really is rounded (not fp32 noise)
    assert not prefill_csa.attend(q, kv[:0], sink, 16, scale).any()


def test_csa_zero_tail_and_guards() -> None:
    cfg = replace(prefill_csa.REDUCED, num_tokens=40)
    inputs = prefill_csa.make_inputs(cfg, seed=0)
    out = prefill_csa.golden(inputs, cfg)
    assert out["attn_out"].shape == (cfg.T, cfg.D)
    assert T.is_bf16_representable(out["attn_out"])
    assert out["attn_out"][:40].any() and not out["attn_out"][40:].any()
    res = prefill_csa.TOLERANCES["attn_out"].check(out["attn_out"], out["attn_out"], num_tokens=40)
    assert res.passed
    # Rule C401: the bound counts what the indexer emits, min(visible, IDX_TOPK), not visible.
    small = replace(prefill_csa.REDUCED, idx_topk=8)
    small.validate()
    assert small.max_sparse_rows() == small.win + 8 < small.win + small.T // 4
    with pytest.raises(ValueError, match="INDEXER_SCORE_CAP"):
        replace(prefill_csa.REDUCED, start_pos=100).validate()


def test_indexer_topk_feeds_csa_without_truncation() -> None:
    icfg = prefill_indexer.REDUCED
    top = prefill_indexer.golden(prefill_indexer.make_inputs(icfg, seed=4), icfg)["topk_full"]
    cfg = prefill_csa.REDUCED
    assert icfg.topk_cap <= cfg.sparse_pad - cfg.win  # the kernel reads every emitted column
    inputs = prefill_csa.make_inputs(cfg, seed=4, cmp_indices=top)
    out = prefill_csa.golden(inputs, cfg)
    kp = prefill_csa.pack_kernel(inputs["swa_indices"], top, inputs["cmp_block_table"], cfg)
    assert (np.count_nonzero(kp.cmp_rows >= 0, axis=1) == np.count_nonzero(top >= 0, axis=1)).all()
    assert np.isfinite(out["attn_out"]).all()
