"""Tensors whose leading dim is a ranged runtime scalar, and valid() rows on the cube."""

from __future__ import annotations

from ascutil import emit, filecheck, host, kernels, refusal

RUNTIME_ROWS = """
layer head(D = 256) {
  const T = 16
  scalar n: i32 in 1..T
  input  x: f32[n, D]
  input  w: f32[32, D]
  output y: f32[T, 32]
  output z: f32[n, D]
  task lin on aic {
    let xt = valid(x[0 : 16, :], min(16, n), D)
    y[:, :] = matmul(xt, w[:, :], b_trans)
  }
  task cp on aiv {
    z[0 : 1, :] = x[0 : 1, :] * 2.0
  }
}
"""


def test_valid_rows_on_the_cube_are_a_runtime_nd2nz_row_count_clamped_to_the_slice():
    filecheck(
        kernels(emit(RUNTIME_ROWS)),
        """
        CHECK: t_x.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(p_x), 4096);
        CHECK: AscendC::DataCopy(l11, t_x, AscendC::Nd2NzParams{1, static_cast<uint16_t>(dslc::Max(0, dslc::Min(16, dslc::Min(16, s_n)))), 256, 0, 256, 16, 1, 0});
        CHECK: AscendC::DataCopy(l14, t_w, AscendC::Nd2NzParams{1, 32, 256, 0, 256, 32, 1, 0});
        CHECK: t_zz.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(p_zz), 4096);
        """,
    )


def test_the_host_allocates_a_runtime_dim_at_its_range_and_moves_the_rows_the_scalar_gives():
    filecheck(
        host(emit(RUNTIME_ROWS)),
        """
        CHECK: {"x", "x.bin", 16384, true, false, &Buffers::p_x},
        CHECK-NEXT: {"w", "w.bin", 32768, true, false, &Buffers::p_w},
        CHECK: if (s_n < 1 || s_n > 16) {
        CHECK: const size_t fileBytes[] = {
        CHECK-NEXT: static_cast<size_t>(s_n) * 1024,
        CHECK-NEXT: 32768,
        CHECK-NEXT: 2048,
        CHECK-NEXT: static_cast<size_t>(s_n) * 1024,
        CHECK-NEXT: };
        CHECK: ok = ok && dslc_host::Check(aclrtMemset(buffer, t.bytes, 0, t.bytes), t.name);
        CHECK: ok = dslc_host::ReadInput(dir + "/" + t.file, buffer, fileBytes[i]);
        CHECK: ok = ok && dslc_host::WriteOutput(dir + "/" + t.file, ranks[r].*t.buffer, fileBytes[i]);
        """,
    )


def test_a_runtime_dim_without_a_range_is_refused_where_the_tensor_is_used():
    err = refusal(RUNTIME_ROWS.replace("scalar n: i32 in 1..T", "scalar n: i32"))
    d = err.diagnostics[0]
    assert (d.code, d.span.line, d.span.col) == ("A704", 10, 5)
    assert "a runtime leading dim needs scalars with a range" in d.message
