"""Golden text of the AscendC emitter, one construct at a time (FileCheck-style checks)."""

from __future__ import annotations

from ascutil import emit, filecheck, host, kernels

ELEMENTWISE = """
layer ew(R = 16) {
  input  x: f32[R, 128]
  input  y: f32[R, 128]
  output z: f32[R, 64]
  output w: f32[R, 4]
  task t spmd(R / 8) on aiv {
    let r0 = block * 8
    z[r0 : r0 + 8, :] = exp(x[r0 : r0 + 8, 0 : 64] + y[r0 : r0 + 8, 0 : 64]) * 2.0
    w[r0 : r0 + 8, :] = x[r0 : r0 + 8, 4 : 8] / 3.0
  }
}
"""


def test_an_aiv_kernel_streams_gm_through_queues_and_computes_in_the_calc_buffer():
    filecheck(
        kernels(emit(ELEMENTWISE)),
        """
        CHECK: extern "C" __global__ __aicore__ void ewzk0_t(GM_ADDR p_x, GM_ADDR p_y, GM_ADDR p_zz, GM_ADDR p_w)
        CHECK-NEXT: {
        CHECK-NEXT: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
        CHECK-NEXT: AscendC::TPipe pipe;
        CHECK-NEXT: AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueue;
        CHECK-NEXT: AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueue;
        CHECK-NEXT: AscendC::TBuf<AscendC::TPosition::VECCALC> calcBuf;
        CHECK-NEXT: pipe.InitBuffer(inQueue, 2, 2048);
        CHECK-NEXT: pipe.InitBuffer(outQueue, 1, 2048);
        CHECK-NEXT: pipe.InitBuffer(calcBuf, 4096);
        CHECK: t_x.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(p_x), 2048);
        CHECK: for (int64_t block = AscendC::GetBlockIdx(); block < 2; block += AscendC::GetBlockNum()) {
        CHECK-NEXT: AscendC::LocalTensor<float> out1 = outQueue.AllocTensor<float>();
        CHECK-NEXT: AscendC::LocalTensor<float> in2 = inQueue.AllocTensor<float>();
        CHECK-NEXT: AscendC::DataCopy(in2, t_x[((block * 8) * 128)], AscendC::DataCopyParams{8, 8, 8, 0});
        CHECK-NEXT: inQueue.EnQue(in2);
        CHECK-NEXT: in2 = inQueue.DeQue<float>();
        CHECK: AscendC::Add(ub4, in2, in3, 512);
        CHECK-NEXT: inQueue.FreeTensor(in2);
        CHECK-NEXT: inQueue.FreeTensor(in3);
        CHECK: AscendC::Exp(ub5, ub4, 512);
        CHECK-NEXT: AscendC::Muls(out1, ub5, 2.0f, 512);
        CHECK-NEXT: outQueue.EnQue(out1);
        CHECK-NEXT: out1 = outQueue.DeQue<float>();
        CHECK-NEXT: AscendC::DataCopy(t_zz[((block * 8) * 64)], out1, 512);
        CHECK-NEXT: outQueue.FreeTensor(out1);
        """,
    )


def test_an_unaligned_gm_slice_moves_with_datacopypad_and_a_scalar_divides_for_real():
    filecheck(
        kernels(emit(ELEMENTWISE)),
        """
        CHECK: AscendC::DataCopyPad(in7, t_x[(((block * 8) * 128) + 4)], AscendC::DataCopyExtParams{8, 16, 496, 0, 0}, AscendC::DataCopyPadExtParams<float>{false, 0, 0, 0});
        CHECK: AscendC::Duplicate(ub8, 3.0f, 64);
        CHECK-NEXT: AscendC::Div(out6, in7, ub8, 64);
        CHECK-NOT: Muls
        CHECK: AscendC::DataCopyPad(t_w[((block * 8) * 4)], out6, AscendC::DataCopyExtParams{8, 16, 0, 0, 0});
        """,
    )


REDUCE = """
layer red(R = 16, C = 64) {
  input  x: f32[R, C]
  input  v: f32[R, 1]
  input  b: f32[1, C]
  output s: f32[R, 1]
  output y: bf16[R, C]
  output q: i8[R, C]
  output a: f32[R, C]
  task t spmd(R / 8) on aiv {
    let r0 = block * 8
    s[r0 : r0 + 8, :] = row_sum(x[r0 : r0 + 8, :]) + row_max(x[r0 : r0 + 8, :])
    y[r0 : r0 + 8, :] = cast(col_expand_add(row_expand_mul(x[r0 : r0 + 8, :], v[r0 : r0 + 8, :]), b[0 : 1, :]), bf16)
    q[r0 : r0 + 8, :] = cast(sigmoid(x[r0 : r0 + 8, :]), i8)
    a[0 : 8, :] += maximum(x[r0 : r0 + 8, :], 0.0) atomic
  }
}
"""


def test_row_reductions_are_one_reduce_per_row_into_a_block_per_row():
    filecheck(
        kernels(emit(REDUCE)),
        """
        CHECK: AscendC::LocalTensor<float> ub3 = calcBuf.GetWithOffset<float>(64, 0);
        CHECK: for (int32_t r5 = 0; r5 < 8; ++r5) {
        CHECK-NEXT: AscendC::ReduceSum(ub3[r5 * 8], in2[r5 * 64], ub4, 64);
        CHECK: AscendC::ReduceMax(ub7[r9 * 8], in6[r9 * 64], ub8, 64, false);
        CHECK: AscendC::Add(out1, ub3, ub7, 64);
        CHECK: AscendC::DataCopyPad(t_s[(block * 8)], out1, AscendC::DataCopyExtParams{8, 4, 0, 0, 0});
        """,
    )


def test_broadcasts_read_the_row_scalar_once_after_a_barrier_and_casts_round_to_nearest_even():
    filecheck(
        kernels(emit(REDUCE)),
        """
        CHECK: AscendC::PipeBarrier<PIPE_ALL>();
        CHECK-NEXT: for (int32_t r15 = 0; r15 < 8; ++r15) {
        CHECK-NEXT: const float s14 = in12.GetValue(r15 * 8);
        CHECK-NEXT: AscendC::Muls(ub13[r15 * 64], in11[r15 * 64], s14, 64);
        CHECK: AscendC::Add(ub17[r18 * 64], ub13[r18 * 64], in16, 64);
        CHECK: AscendC::Cast(out10, ub17, AscendC::RoundMode::CAST_RINT, 512);
        """,
    )


def test_sigmoid_is_the_simulators_formula_and_f32_to_i8_goes_through_exact_steps():
    filecheck(
        kernels(emit(REDUCE)),
        """
        CHECK: AscendC::Muls(ub21, in20, -1.0f, 512);
        CHECK-NEXT: AscendC::Exp(ub21, ub21, 512);
        CHECK-NEXT: AscendC::Adds(ub21, ub21, 1.0f, 512);
        CHECK-NEXT: AscendC::Duplicate(ub22, 1.0f, 512);
        CHECK-NEXT: AscendC::Div(ub21, ub22, ub21, 512);
        CHECK: AscendC::Cast(ub23, ub21, AscendC::RoundMode::CAST_RINT, 512);
        CHECK: AscendC::Cast(ub24, ub23, AscendC::RoundMode::CAST_NONE, 512);
        CHECK: AscendC::Cast(ub25, ub24, AscendC::RoundMode::CAST_NONE, 512);
        CHECK: AscendC::Cast(out19, ub25, AscendC::RoundMode::CAST_NONE, 512);
        """,
    )


def test_an_atomic_store_is_wrapped_in_set_atomic_add_and_none():
    filecheck(
        kernels(emit(REDUCE)),
        """
        CHECK: AscendC::Maxs(out26, in27, 0.0f, 512);
        CHECK: out26 = outQueue.DeQue<float>();
        CHECK-NEXT: AscendC::SetAtomicAdd<float>();
        CHECK-NEXT: AscendC::DataCopy(t_a, out26, 512);
        CHECK-NEXT: AscendC::SetAtomicNone();
        """,
    )


MATMUL = """
layer mm(T = 32, K = 1024, N = 16) {
  input  x: f32[T, K]
  input  w: f32[N, K]
  input  x2: f32[16, 2 * K]
  input  w2: f32[N, 2 * K]
  output y: f32[T, N]
  output z: f32[T, N]
  task linear spmd(T / 16) on aic {
    let t0 = block * 16
    let acc = zeros(f32, [16, N])
    for kb in range(K / 256) {
      acc = matmul_acc(acc, x[t0 : t0 + 16, kb * 256 : kb * 256 + 256], w[:, kb * 256 : kb * 256 + 256], b_trans)
    }
    y[t0 : t0 + 16, :] = acc
  }
  task partial on aic after linear {
    z[0 : 16, :] += matmul(x2[:, :], w2[:, :], b_trans) atomic
  }
}
"""


def test_a_matmul_acc_chain_keeps_one_l0c_accumulator_and_initialises_it_on_the_first_mmad():
    filecheck(
        kernels(emit(MATMUL)),
        """
        CHECK: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
        CHECK: AscendC::TBuf<AscendC::TPosition::A1> l1aBuf;
        CHECK: AscendC::TBuf<AscendC::TPosition::CO1> l0cBuf;
        CHECK: AscendC::LocalTensor<float> acc1 = l0cBuf.GetWithOffset<float>(256, 0);
        CHECK-NEXT: bool init2 = true;
        CHECK-NEXT: for (int64_t v_kb = 0; v_kb < 4; ++v_kb) {
        CHECK: AscendC::DataCopy(l13, t_x[(((block * 16) * 1024) + (v_kb * 256))], AscendC::Nd2NzParams{1, 16, 256, 0, 1024, 16, 1, 0});
        CHECK-NEXT: AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
        CHECK-NEXT: AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
        CHECK: AscendC::DataCopy(l14, t_w[(v_kb * 256)], AscendC::Nd2NzParams{1, 16, 256, 0, 1024, 16, 1, 0});
        CHECK: AscendC::LoadData(a25, l13, AscendC::LoadData2DParams{0, 32, 1, 0, 0, false, 0});
        CHECK-NEXT: AscendC::LoadData(b26, l14, AscendC::LoadData2DParams{0, 32, 1, 0, 0, false, 0});
        CHECK-NEXT: AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
        CHECK: AscendC::Mmad(acc1, a25, b26, AscendC::MmadParams{16, 16, 256, 0, false, init2});
        CHECK-NEXT: init2 = false;
        CHECK-NEXT: }
        CHECK-NEXT: AscendC::SetFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
        CHECK-NEXT: AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
        CHECK-NEXT: AscendC::Fixpipe(t_y[((block * 16) * 16)], acc1, AscendC::FixpipeParamsV220{16, 16, 16, 16, false});
        """,
    )


def test_a_long_k_is_split_into_chunks_that_fit_l0a_and_l0b_and_the_product_stored_atomically():
    # K = 2048 f32: [16, 2048] is 128 KiB, twice L0A (and L0B): two chunks of 1024
    filecheck(
        kernels(emit(MATMUL)),
        """
        CHECK: void mmzk1_partial(
        CHECK: AscendC::DataCopy({{l1[0-9]+}}, t_x2, AscendC::Nd2NzParams{1, 16, 1024, 0, 2048, 16, 1, 0});
        CHECK: AscendC::Mmad({{acc[0-9]+}}, {{a2[0-9]+}}, {{b2[0-9]+}}, AscendC::MmadParams{16, 16, 1024, 0, false, true});
        CHECK: AscendC::DataCopy({{l1[0-9]+}}, t_x2[1024], AscendC::Nd2NzParams{1, 16, 1024, 0, 2048, 16, 1, 0});
        CHECK: AscendC::Mmad({{acc[0-9]+}}, {{a2[0-9]+}}, {{b2[0-9]+}}, AscendC::MmadParams{16, 16, 1024, 0, false, false});
        CHECK: AscendC::SetAtomicAdd<float>();
        CHECK-NEXT: AscendC::Fixpipe(t_zz, {{acc[0-9]+}}, AscendC::FixpipeParamsV220{16, 16, 16, 16, false});
        CHECK-NEXT: AscendC::SetAtomicNone();
        """,
    )


TOPK = """
layer topk_row(T = 4, W = 256, K = 16) {
  input  score: f32[T, W]
  output idx: i32[T, K]
  output val: f32[T, K]
  task select spmd(T) on aiv {
    let best = topk(score[block : block + 1, :], K, valid = block + 100)
    val[block : block + 1, :] = even_lanes(best)
    idx[block : block + 1, :] = odd_lanes(best)
  }
}
"""


def test_topk_is_a_masked_sort32_and_mrgsort_chain_read_with_gathermask():
    filecheck(
        kernels(emit(TOPK)),
        """
        CHECK: AscendC::Duplicate({{ub[0-9]+}}, -__builtin_huge_valf(), 256);
        CHECK: AscendC::CreateVecIndex({{ub[0-9]+}}, static_cast<int32_t>(0), 256);
        CHECK: AscendC::CompareScalar({{ub[0-9]+}}, {{ub[0-9]+}}, static_cast<float>((block + 100)), AscendC::CMPMODE::LT, 256);
        CHECK: AscendC::Select({{ub[0-9]+}}, {{ub[0-9]+}}, {{ub[0-9]+}}, -__builtin_huge_valf(), AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, 256);
        CHECK: AscendC::Sort32({{ub[0-9]+}}, {{ub[0-9]+}}, {{as[0-9]+}}, 8);
        CHECK: AscendC::MrgSortSrcList<float> {{lists[0-9]+}}({{ub[0-9]+}}, {{ub[0-9]+}}[64], {{ub[0-9]+}}[128], {{ub[0-9]+}}[192]);
        CHECK-NEXT: uint16_t {{counts[0-9]+}}[4] = {32, 32, 32, 32};
        CHECK-NEXT: AscendC::MrgSort4Info {{info[0-9]+}}({{counts[0-9]+}}, false, 0b1111, 2);
        CHECK: AscendC::GatherMask({{ub[0-9]+}}, {{ub[0-9]+}}, static_cast<uint8_t>(1), false, static_cast<uint32_t>(0), AscendC::GatherMaskParams{1, 1, 8, 0}, {{kept[0-9]+}});
        CHECK: AscendC::GatherMask({{ub[0-9]+}}, {{ub[0-9]+}}, static_cast<uint8_t>(2), false,
        CHECK: .ReinterpretCast<int32_t>();
        """,
    )


COMM = """
layer comm(EP = 2, N = 4, D = 16) {
  ranks EP
  scalar epoch: i32
  input   x: f32[N, D]
  input   count: i32[1, 1]
  window  recv: f32[EP * N, D]
  signal  arrived: i32[EP]
  output  out: f32[EP * N, D]
  task push spmd(N) on aiv {
    for dst in range(EP) { remote_store recv[rank * N + block : rank * N + block + 1, :] @ dst = x[block : block + 1, :] }
  }
  task signal on aiv after push {
    for dst in range(EP) { if dst != rank { notify arrived[rank] @ dst += 1 } }
  }
  task wait on aiv after signal {
    for src in range(EP) { if src != rank { wait arrived[src] >= epoch } }
  }
  task gather on aiv after wait when count[0, 0] > 0 {
    let c = read(count[0, 0])
    out[0 : c, :] = recv[0 : c, :]
  }
  task sync spmd(4) on aiv after gather {
    barrier
  }
}
"""


def test_windows_arrive_as_peer_tables_and_remote_stores_aim_at_the_peer():
    filecheck(
        kernels(emit(COMM)),
        """
        CHECK: void commzk0_push(GM_ADDR p_x, GM_ADDR p_recv, int32_t dslcRank)
        CHECK: AscendC::GlobalTensor<uint64_t> w_recv;
        CHECK-NEXT: w_recv.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t*>(p_recv), 2);
        CHECK-NEXT: t_recv.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(w_recv.GetValue(dslcRank)), 128);
        CHECK: remote1.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(w_recv.GetValue(v_dst)));
        CHECK: AscendC::DataCopyPad(remote1[(((dslcRank * 4) + block) * 16)], in2,
        """,
    )


def test_notify_drains_mte3_then_adds_atomically_and_wait_spins_on_a_refetched_cache_line():
    filecheck(
        kernels(emit(COMM)),
        """
        CHECK: void commzk1_signal(GM_ADDR p_arrived, int32_t dslcRank)
        CHECK: AscendC::PipeBarrier<PIPE_MTE3>();
        CHECK-NEXT: AscendC::Duplicate(out2, static_cast<int32_t>(1), 8);
        CHECK: AscendC::SetAtomicAdd<int32_t>();
        CHECK-NEXT: AscendC::DataCopyPad(remote1[dslcRank], out2, AscendC::DataCopyExtParams{1, 4, 0, 0, 0});
        CHECK-NEXT: AscendC::SetAtomicNone();
        CHECK: void commzk2_wait(GM_ADDR p_arrived, int32_t dslcRank, int32_t s_epoch)
        CHECK: while (true) {
        CHECK-NEXT: AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE, AscendC::DcciDst::CACHELINE_OUT>(t_arrived[v_src]);
        CHECK-NEXT: if (t_arrived.GetValue(v_src) >= s_epoch) {
        CHECK-NEXT: break;
        """,
    )


def test_a_predicate_returns_early_and_a_runtime_row_count_copies_in_chunks():
    filecheck(
        kernels(emit(COMM)),
        """
        CHECK: void commzk3_gather(
        CHECK: if (!(static_cast<int64_t>(t_count.GetValue(0)) > 0)) {
        CHECK-NEXT: return;
        CHECK: const int64_t v_c = static_cast<int64_t>(t_count.GetValue(0));
        CHECK-NEXT: for (int64_t r1 = 0; r1 < v_c; r1 += 512) {
        CHECK-NEXT: const int64_t rows2 = dslc::Min(512, v_c - r1);
        CHECK: AscendC::DataCopyPad(in3, t_recv[r1 * 16], AscendC::DataCopyExtParams{static_cast<uint16_t>(rows2), 64, 0, 0, 0}
        CHECK-NEXT: event_t event4 = static_cast<event_t>(pipe.FetchEventID(AscendC::HardEvent::MTE2_MTE3));
        CHECK: AscendC::DataCopyPad(t_out[r1 * 16], in3,
        """,
    )


def test_a_barrier_task_runs_its_body_once_per_resident_block_and_syncs_all():
    text = kernels(emit(COMM))
    filecheck(
        text,
        """
        CHECK: // task sync: aiv, grid 4, hard barrier (launched with its whole grid)
        CHECK: void commzk4_sync()
        CHECK: const int64_t block = AscendC::GetBlockIdx();
        CHECK-NEXT: AscendC::SyncAll<true>();
        CHECK-NEXT: }
        """,
    )
    filecheck(
        host(emit(COMM)),
        """
        CHECK: commzk4_sync<<<4, nullptr, stream>>>();
        CHECK: if (4 > DSLC_AIV_CORES) {
        """,
    )


def test_the_host_launches_every_task_in_stream_order_with_capped_blocks():
    filecheck(
        host(emit(COMM)),
        """
        CHECK: constexpr int32_t kRanks = 2;
        CHECK: uint8_t* w_recv = nullptr;
        CHECK: inline void Launch(aclrtStream stream, const Buffers& b, int32_t dslcRank, int32_t s_epoch)
        CHECK: commzk0_push<<<dslc_host::Blocks(4, DSLC_AIV_CORES), nullptr, stream>>>(b.p_x, b.w_recv, dslcRank);
        CHECK-NEXT: commzk1_signal<<<dslc_host::Blocks(1, DSLC_AIV_CORES), nullptr, stream>>>(b.w_arrived, dslcRank);
        CHECK-NEXT: commzk2_wait<<<dslc_host::Blocks(1, DSLC_AIV_CORES), nullptr, stream>>>(b.w_arrived, dslcRank, s_epoch);
        CHECK-NEXT: commzk3_gather<<<
        CHECK: table[r] = reinterpret_cast<uint64_t>(ranks[r].p_recv);
        CHECK: dslc_host::Launch(streams[r], ranks[r], r, round + 1);
        """,
    )


def test_the_launch_order_puts_a_local_notifier_before_an_unordered_waiter():
    text = """
    layer hs(EP = 2) {
      ranks EP
      signal arrived: i32[EP]
      task waiter on aiv { for s in range(EP) { if s != rank { wait arrived[s] >= 1 } } }
      task notifier on aiv { for d in range(EP) { if d != rank { notify arrived[rank] @ d += 1 } } }
    }
    """
    filecheck(
        host(emit(text)),
        """
        CHECK: hszk1_notifier<<<
        CHECK-NEXT: hszk0_waiter<<<
        """,
    )


def test_guards_and_scalar_ranges_refuse_requests_on_the_host():
    text = """
    layer g(T = 64) {
      scalar n: i32 in 1..T
      guard n * 2 <= T, "two rows per token"
      input x: f32[T, 8]
      output y: f32[T, 8]
      task t on aiv { y[:, :] = x[:, :] }
    }
    """
    filecheck(
        host(emit(text)),
        """
        CHECK: int64_t s_n = 1;
        CHECK: } else if (flag == "--n") {
        CHECK: if (s_n < 1 || s_n > 64) {
        CHECK: if (!(((s_n * 2) <= 64))) {
        CHECK-NEXT: std::fprintf(stderr, "refused: %s\\n", "guard `n * 2 <= T` (line 4): two rows per token");
        """,
    )


def test_the_cmake_project_is_the_asc_language_form():
    files = emit(ELEMENTWISE)
    filecheck(
        files["CMakeLists.txt"],
        """
        CHECK: cmake_minimum_required(VERSION 3.16)
        CHECK: set(CMAKE_ASC_ARCHITECTURES "dav-2201"
        CHECK: find_package(ASC REQUIRED)
        CHECK: project(ew LANGUAGES ASC CXX)
        CHECK: add_executable(ew
        CHECK-NEXT: ew.asc
        CHECK: $<$<COMPILE_LANGUAGE:ASC>:--npu-arch=${CMAKE_ASC_ARCHITECTURES}>
        """,
    )
    assert sorted(files) == ["CMakeLists.txt", "README.md", "ew.asc", "ew_kernels.h"]


def test_filecheck_itself_fails_on_a_missing_line_and_a_forbidden_one():
    import pytest

    with pytest.raises(AssertionError):
        filecheck("a\nb\n", "CHECK: a\nCHECK-NEXT: c")
    with pytest.raises(AssertionError):
        filecheck("a\nx\nb\n", "CHECK: a\nCHECK-NOT: x\nCHECK: b")
    filecheck("a\nb\n", "CHECK: a\nCHECK-NEXT: b\nCHECK-NOT: a")


def test_a_branch_decided_by_the_parameters_is_emitted_alone():
    text = """
    layer pick(MODE = 0 in {0, 1}) {
      input x: f32[8, 8]
      output y: f32[8, 8]
      task t on aiv {
        if MODE == 1 { y[:, :] = exp(x[:, :]) } else { y[:, :] = sqrt(x[:, :]) }
      }
    }
    """
    code = kernels(emit(text))
    filecheck(code, "CHECK: AscendC::Sqrt(\nCHECK-NOT: if (")
    assert "Exp(" not in code
    assert "AscendC::Exp(" in kernels(emit(text, MODE=1))
