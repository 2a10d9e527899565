"""Golden text of the AscendC emitter for tile comparisons, logic, select, ``//`` / ``%``,
``gather_rows`` and column-strided views and stores (FileCheck-style checks)."""

from __future__ import annotations

from ascutil import emit, filecheck, kernels

#: prefill_csa's csa_pack, reduced: i32 index arithmetic under masks, a gather through them.
PACK = """
layer pack(T = 16, COLS = 64, BS = 32, NB = 64) {
  input  sel: i32[T, COLS]
  input  table: i32[1, NB]
  output rows: i32[T, COLS]
  task t spmd(T / 8) on aiv {
    for i in range(8) {
      let r = block * 8 + i
      let c = sel[r : r + 1, :]
      let ok = (c >= 0) and (c < NB * BS)
      let blk = gather(table[0 : 1, :], select(ok, c / BS, zeros(i32, [1, COLS])))
      rows[r : r + 1, :] = select(ok and not (blk < 0), blk * BS + c % BS, full(i32, [1, COLS], -1))
    }
  }
}
"""

COMPARE = """
layer cmp(R = 16) {
  input  x: f32[R, 64]
  input  y: f32[R, 64]
  input  h: f16[R, 64]
  input  k: i32[R, 64]
  output z: f32[R, 64]
  output w: f16[R, 64]
  output q: i32[R, 64]
  task t on aiv {
    z[:, :] = select(x[:, :] <= y[:, :] or x[:, :] != 2.0, x[:, :], y[:, :])
    w[:, :] = select(h[:, :] > 0.5, h[:, :], 1.0)
    q[:, :] = select(k[:, :] != k[:, :], k[:, :] / 1, -3)
  }
}
"""

#: the RoPE lanes of prefill_indexer / prefill_csa: even and odd columns read and written apart.
ROPE = """
layer rope(R = 16) {
  input  x: f32[R, 128]
  input  c: f32[1, 32]
  output y: bf16[R, 128]
  task t spmd(R / 8) on aiv {
    let r0 = block * 8
    let n = x[r0 : r0 + 8, :] * 2.0
    let ev = n[:, 64 : 128 : 2]
    let od = x[r0 : r0 + 8, 65 : 128 : 2]
    y[r0 : r0 + 8, 0 : 64] = cast(n[:, 0 : 64], bf16)
    y[r0 : r0 + 8, 64 : 128 : 2] = cast(col_expand_mul(ev, c[0 : 1, :]) - od, bf16)
    y[r0 : r0 + 8, 65 : 128 : 2] = cast(col_expand_mul(od, c[0 : 1, :]) + ev, bf16)
  }
}
"""

GATHER_ROWS = """
layer gr(N = 64) {
  input  kv: bf16[N, 128]
  input  idx: i32[1, 16]
  output g: bf16[16, 128]
  output h: f32[16, 128]
  task t on aiv {
    g[:, :] = gather_rows(kv[:, :], idx[:, :])
    let loc = cast(gather_rows(kv[:, :], idx[:, :]), f32)
    h[:, :] = gather_rows(loc, idx[:, :])
  }
}
"""


def test_an_i32_tile_is_compared_with_a_constant_through_an_exact_f32_cast_into_a_bit_mask():
    filecheck(
        kernels(emit(PACK)),
        """
        CHECK: AscendC::DataCopy(in1, t_sel[(((block * 8) + v_i) * 64)], 64);
        CHECK: AscendC::LocalTensor<float> ub2 = calcBuf.GetWithOffset<float>(64, 0);
        CHECK-NEXT: AscendC::Cast(ub2, in1, AscendC::RoundMode::CAST_RINT, 64);
        CHECK-NEXT: AscendC::LocalTensor<uint8_t> ub3 = calcBuf.GetWithOffset<uint8_t>(32, 256);
        CHECK-NEXT: AscendC::CompareScalar(ub3, ub2, 0.0f, AscendC::CMPMODE::GE, 64);
        CHECK: AscendC::CompareScalar(ub5, ub4, 2048.0f, AscendC::CMPMODE::LT, 64);
        CHECK: AscendC::LocalTensor<uint16_t> as7 = ub3.ReinterpretCast<uint16_t>();
        CHECK-NEXT: AscendC::LocalTensor<uint16_t> as8 = ub5.ReinterpretCast<uint16_t>();
        CHECK-NEXT: AscendC::LocalTensor<uint16_t> as9 = ub6.ReinterpretCast<uint16_t>();
        CHECK-NEXT: AscendC::And(as9, as7, as8, 8);
        """,
    )


def test_floor_division_by_a_power_of_two_is_an_arithmetic_shift_and_select_moves_i32_as_f32_bits():
    filecheck(
        kernels(emit(PACK)),
        """
        CHECK: AscendC::ShiftRight(ub12, in1, static_cast<int32_t>(5), 64);
        CHECK-NEXT: AscendC::LocalTensor<int32_t> ub13 = calcBuf.GetWithOffset<int32_t>(64, 544);
        CHECK-NEXT: AscendC::Duplicate(ub13, static_cast<int32_t>(0), 64);
        CHECK: AscendC::LocalTensor<float> as15 = ub12.ReinterpretCast<float>();
        CHECK-NEXT: AscendC::LocalTensor<float> as16 = ub14.ReinterpretCast<float>();
        CHECK-NEXT: AscendC::LocalTensor<float> as17 = ub13.ReinterpretCast<float>();
        CHECK-NEXT: AscendC::Select(as16, ub6, as15, as17, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
        CHECK: AscendC::Gather(ub19[r20 * 64], in11, as21[r20 * 64], static_cast<uint32_t>(0), 64);
        """,
    )


def test_not_is_a_not_of_the_mask_words_and_the_modulus_is_an_and_of_16_bit_lanes():
    filecheck(
        kernels(emit(PACK)),
        """
        CHECK: AscendC::CompareScalar(ub24, ub23, 0.0f, AscendC::CMPMODE::LT, 64);
        CHECK: AscendC::Not(as27, as26, 8);
        CHECK: AscendC::And(as31, as29, as30, 8);
        CHECK: AscendC::Duplicate(ub34, static_cast<int32_t>(31), 64);
        CHECK-NEXT: AscendC::LocalTensor<int16_t> as35 = ub33.ReinterpretCast<int16_t>();
        CHECK-NEXT: AscendC::LocalTensor<int16_t> as36 = in1.ReinterpretCast<int16_t>();
        CHECK-NEXT: AscendC::LocalTensor<int16_t> as37 = ub34.ReinterpretCast<int16_t>();
        CHECK-NEXT: AscendC::And(as35, as36, as37, 128);
        CHECK: AscendC::Duplicate(ub39, static_cast<int32_t>(-1), 64);
        CHECK: AscendC::Select(as41, ub28, as40, as42, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
        CHECK-NEXT: outQueue.EnQue(out22);
        """,
    )


def test_tile_compares_or_masks_and_select_takes_a_float_scalar_directly():
    filecheck(
        kernels(emit(COMPARE)),
        """
        CHECK: AscendC::LocalTensor<uint8_t> ub4 = calcBuf.GetWithOffset<uint8_t>(128, 0);
        CHECK-NEXT: AscendC::Compare(ub4, in2, in3, AscendC::CMPMODE::LE, 1024);
        CHECK: AscendC::CompareScalar(ub6, in5, 2.0f, AscendC::CMPMODE::NE, 1024);
        CHECK: AscendC::Or(as10, as8, as9, 64);
        CHECK: AscendC::Select(out1, ub7, in11, in12, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, 1024);
        CHECK: AscendC::CompareScalar(ub15, in14, static_cast<half>(0.5f), AscendC::CMPMODE::GT, 1024);
        CHECK: AscendC::Select(out13, ub15, in16, static_cast<half>(1.0f), AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, 1024);
        """,
    )


def test_int32_inequality_is_the_complement_of_equality():
    filecheck(
        kernels(emit(COMPARE)),
        """
        CHECK: AscendC::Compare(ub20, in18, in19, AscendC::CMPMODE::EQ, 1024);
        CHECK-NOT: CMPMODE::NE
        CHECK: AscendC::Not(as23, as22, 64);
        CHECK: AscendC::ShiftRight(ub25, in24, static_cast<int32_t>(0), 1024);
        CHECK: AscendC::Duplicate(ub26, static_cast<int32_t>(-3), 1024);
        CHECK: AscendC::Select(as28, ub21, as27, as29, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, 1024);
        """,
    )


def test_strided_views_are_gathermask_one_repeat_per_row():
    filecheck(
        kernels(emit(ROPE)),
        """
        CHECK: AscendC::Muls(ub1, in2, 2.0f, 1024);
        CHECK: uint64_t kept3 = 0;
        CHECK-NEXT: AscendC::LocalTensor<float> ub4 = calcBuf.GetWithOffset<float>(256, 4096);
        CHECK-NEXT: AscendC::GatherMask(ub4, ub1[64], static_cast<uint8_t>(1), false, static_cast<uint32_t>(0), AscendC::GatherMaskParams{1, 8, 16, 0}, kept3);
        CHECK-NEXT: AscendC::LocalTensor<float> in5 = inQueue.AllocTensor<float>();
        CHECK-NEXT: AscendC::DataCopy(in5, t_x[(((block * 8) * 128) + 64)], AscendC::DataCopyParams{8, 8, 8, 0});
        CHECK: AscendC::GatherMask(ub7, in5, static_cast<uint8_t>(2), false, static_cast<uint32_t>(0), AscendC::GatherMaskParams{1, 8, 8, 0}, kept6);
        CHECK-NEXT: inQueue.FreeTensor(in5);
        """,
    )


def test_a_strided_store_spreads_lanes_with_brcb_and_skips_gm_lanes_with_datacopypad():
    filecheck(
        kernels(emit(ROPE)),
        """
        CHECK: AscendC::Mul(ub12[r13 * 32], ub4[r13 * 32], in11, 32);
        CHECK: AscendC::Sub(ub14, ub12, ub7, 256);
        CHECK-NEXT: AscendC::Cast(ub10, ub14, AscendC::RoundMode::CAST_RINT, 256);
        CHECK-NEXT: AscendC::LocalTensor<bfloat16_t> out15 = outQueue.AllocTensor<bfloat16_t>();
        CHECK-NEXT: AscendC::Brcb(out15, ub10, 32, AscendC::BrcbRepeatParams{1, 8});
        CHECK-NEXT: outQueue.EnQue(out15);
        CHECK-NEXT: out15 = outQueue.DeQue<bfloat16_t>();
        CHECK-NEXT: for (int32_t r16 = 0; r16 < 8; ++r16) {
        CHECK-NEXT: AscendC::DataCopyPad(t_y[(((block * 8) * 128) + 64) + r16 * 128], out15[r16 * 512], AscendC::DataCopyExtParams{32, 2, 0, 2, 0});
        CHECK: AscendC::Add(ub21, ub19, ub4, 256);
        CHECK: AscendC::DataCopyPad(t_y[(((block * 8) * 128) + 65) + r23 * 128], out22[r23 * 512], AscendC::DataCopyExtParams{32, 2, 0, 2, 0});
        """,
    )


def test_gather_rows_from_gm_is_one_datacopy_per_valid_index_and_zeros_for_negative_ones():
    filecheck(
        kernels(emit(GATHER_ROWS)),
        """
        CHECK: AscendC::DataCopy(in2, t_idx, 16);
        CHECK: AscendC::LocalTensor<bfloat16_t> in3 = inQueue.AllocTensor<bfloat16_t>();
        CHECK-NEXT: AscendC::PipeBarrier<PIPE_ALL>();
        CHECK-NEXT: for (int32_t j4 = 0; j4 < 16; ++j4) {
        CHECK-NEXT: const int64_t row5 = static_cast<int64_t>(in2.GetValue(j4));
        CHECK-NEXT: if (row5 >= 0) {
        CHECK-NEXT: AscendC::DataCopy(in3[j4 * 128], t_kv[row5 * 128], 128);
        CHECK: inQueue.EnQue(in3);
        CHECK-NEXT: in3 = inQueue.DeQue<bfloat16_t>();
        CHECK-NEXT: for (int32_t j4 = 0; j4 < 16; ++j4) {
        CHECK-NEXT: if (in2.GetValue(j4) < 0) {
        CHECK-NEXT: AscendC::LocalTensor<int16_t> as6 = in3.ReinterpretCast<int16_t>();
        CHECK-NEXT: AscendC::Duplicate(as6[j4 * 128], static_cast<int16_t>(0), 128);
        """,
    )


def test_gather_rows_of_a_tile_copies_each_row_on_the_vector_pipe():
    filecheck(
        kernels(emit(GATHER_ROWS)),
        """
        CHECK: AscendC::Cast(ub7, in9, AscendC::RoundMode::CAST_NONE, 2048);
        CHECK: const int64_t row17 = static_cast<int64_t>(in14.GetValue(j16));
        CHECK-NEXT: if (row17 >= 0) {
        CHECK-NEXT: AscendC::Copy(ub15[j16 * 128], ub7[row17 * 128], 64, 2, AscendC::CopyRepeatParams{1, 1, 8, 8});
        CHECK-NEXT: } else {
        CHECK-NEXT: AscendC::LocalTensor<int32_t> as18 = ub15.ReinterpretCast<int32_t>();
        CHECK-NEXT: AscendC::Duplicate(as18[j16 * 128], static_cast<int32_t>(0), 128);
        """,
    )


def test_the_calc_buffer_keeps_one_repeat_of_slack_for_what_compare_reads_past_a_tile():
    text = kernels(emit(COMPARE))
    assert "// UB 20992 B" in text  # inQueue 2 x 4096 + outQueue 4096 + calc 8448 + 256 of slack
    assert "pipe.InitBuffer(calcBuf, 8704);" in text


def test_a_let_of_not_of_a_tile_is_a_mask_though_the_front_end_types_it_as_a_scalar():
    text = """layer n(R = 8) {
  input x: f32[R, 64]
  output z: f32[R, 64]
  task t on aiv {
    let m = not (x[:, :] > 0.0)
    z[:, :] = select(m, x[:, :], 0.0)
  }
}"""
    filecheck(
        kernels(emit(text)),
        """
        CHECK: AscendC::CompareScalar(ub2, in1, 0.0f, AscendC::CMPMODE::GT, 512);
        CHECK-NOT: GetValue
        CHECK: AscendC::Not(as5, as4, 32);
        CHECK: AscendC::Select(out6, ub3, in7, 0.0f, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, 512);
        """,
    )


LONG_ROWS = """
layer lanes() {
  const R = 4
  input  x: f32[R, 128]
  output y: f32[R, 50]
  output s: f32[8, 128]
  task t on aiv {
    let a = exp(x[:, :])
    y[:, :] = a[:, 1 : 100 : 2]
    s[0 : 4, :] = x[:, :] * 2.0
    s[4 : 8, :] = gather_rows(s[0 : 4, :], full(i32, [1, 4], 1))
  }
}
"""


def test_a_strided_view_of_a_long_row_is_a_gathermask_per_row_with_room_for_the_last_repeat():
    filecheck(
        kernels(emit(LONG_ROWS)),
        """
        CHECK: AscendC::Exp(ub1, in2, 512);
        CHECK: AscendC::LocalTensor<float> ub5 = calcBuf.GetWithOffset<float>(280, 2048);
        CHECK-NEXT: for (int32_t r6 = 0; r6 < 4; ++r6) {
        CHECK-NEXT: AscendC::GatherMask(ub5[r6 * 56], ub1[r6 * 128], static_cast<uint8_t>(2), false, static_cast<uint32_t>(0), AscendC::GatherMaskParams{1, 2, 8, 0}, kept4);
        CHECK: AscendC::DataCopyPad(t_y, out3, AscendC::DataCopyExtParams{4, 200, 0, 0, 0});
        """,
    )


def test_gather_rows_of_a_tensor_the_task_stored_to_waits_for_the_store():
    filecheck(
        kernels(emit(LONG_ROWS)),
        """
        CHECK: AscendC::DataCopy(t_s, out7, 512);
        CHECK: AscendC::Duplicate(ub10, static_cast<int32_t>(1), 8);
        CHECK-NEXT: event_t event11 = static_cast<event_t>(pipe.FetchEventID(AscendC::HardEvent::MTE3_MTE2));
        CHECK-NEXT: AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(event11);
        CHECK-NEXT: AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(event11);
        CHECK: AscendC::DataCopy(in12[j13 * 128], t_s[row14 * 128], 128);
        CHECK: AscendC::DataCopy(t_s[512], out9, 512);
        """,
    )
