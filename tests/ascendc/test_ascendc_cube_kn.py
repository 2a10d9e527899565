"""Golden text of matmuls whose B is given as [K, N] (no ``b_trans``): K chunks are row
chunks of B, 16-bit fractals are transposed by LoadData, int8 squares by
LoadDataWithTranspose; f32 and int8 shapes the cube cannot move that way are refused."""

from __future__ import annotations

from ascutil import emit, filecheck, kernels, refusal

#: K = 512 of bf16 does not fit L0A with M = 128: two K chunks, each 256 rows of B.
BF16_KN = """
layer mm(M = 128, K = 512, N = 64) {
  input a: bf16[M, K]
  input b: bf16[K, N]
  output y: f32[M, N]
  task t on aic { y[:, :] = matmul(a[:, :], b[:, :]) }
}
"""

I8_KN = """
layer mq(M = 128, K = 512, N = 64) {
  input a: i8[M, K]
  input b: i8[K, N]
  output y: i32[M, N]
  task t on aic { y[:, :] = matmul(a[:, :], b[:, :]) }
}
"""


def test_a_k_chunk_of_a_kn_operand_is_a_chunk_of_its_rows():
    filecheck(
        kernels(emit(BF16_KN)),
        """
        CHECK: AscendC::DataCopy(l13, t_a, AscendC::Nd2NzParams{1, 128, 256, 0, 512, 128, 1, 0});
        CHECK: AscendC::DataCopy(l14, t_b, AscendC::Nd2NzParams{1, 256, 64, 0, 64, 256, 1, 0});
        CHECK: AscendC::LoadData(b26, l14, AscendC::LoadData2DParams{0, 4, 16, 0, 0, true, 0});
        CHECK-NEXT: AscendC::LoadData(b26[1024], l14[256], AscendC::LoadData2DParams{0, 4, 16, 0, 0, true, 0});
        CHECK: AscendC::Mmad(acc1, a25, b26, AscendC::MmadParams{128, 64, 256, 0, false, true});
        CHECK: AscendC::DataCopy(l17, t_a[256], AscendC::Nd2NzParams{1, 128, 256, 0, 512, 128, 1, 0});
        CHECK: AscendC::DataCopy(l18, t_b[16384], AscendC::Nd2NzParams{1, 256, 64, 0, 64, 256, 1, 0});
        CHECK: AscendC::Mmad(acc1, a29, b210, AscendC::MmadParams{128, 64, 256, 0, false, false});
        """,
    )


def test_an_int8_kn_operand_goes_to_l0b_in_32x32_squares():
    filecheck(
        kernels(emit(I8_KN)),
        """
        CHECK: AscendC::LocalTensor<int8_t> l14 = l1bBuf.GetWithOffset<int8_t>(32768, 0);
        CHECK: AscendC::DataCopy(l14, t_b, AscendC::Nd2NzParams{1, 512, 64, 0, 64, 512, 1, 0});
        CHECK: AscendC::LocalTensor<int8_t> b26 = l0bBuf.GetWithOffset<int8_t>(32768, 0);
        CHECK: AscendC::LoadDataWithTranspose(b26, l14, AscendC::LoadData2dTransposeParams{0, 2, 16, 1, 0});
        CHECK-NEXT: AscendC::LoadDataWithTranspose(b26[2048], l14[1024], AscendC::LoadData2dTransposeParams{0, 2, 16, 1, 0});
        CHECK: AscendC::LoadDataWithTranspose(b26[30720], l14[15360], AscendC::LoadData2dTransposeParams{0, 2, 16, 1, 0});
        CHECK-NEXT: AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
        CHECK: AscendC::Mmad(acc1, a25, b26, AscendC::MmadParams{128, 64, 512, 0, false, true});
        """,
    )


def test_an_int8_kn_operand_with_a_partial_square_and_an_f32_one_are_refused():
    i8 = refusal(I8_KN.replace("N = 64", "N = 48"))
    f32 = refusal(BF16_KN.replace("bf16", "f32"))
    assert [(d.code, d.span.line, d.span.col) for d in i8.diagnostics] == [("A704", 6, 19)]
    assert "N must be a multiple of 32" in i8.diagnostics[0].message
    assert [(d.code, d.span.line, d.span.col) for d in f32.diagnostics] == [("A701", 6, 19)]
    assert "transposes 32-bit B on the way to L0B only through Load3Dv2" in f32.diagnostics[0].message
