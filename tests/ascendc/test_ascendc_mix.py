"""Golden text of the MIX kernels a ``mix`` task becomes (lowering/codegen/ascendc/mix.py).

One kernel per task, ``KERNEL_TYPE_MIX_AIC_1_1``: the cube statements under
``if ASCEND_IS_AIC``, the vector ones under ``if ASCEND_IS_AIV``, values crossing between
them through per-block workspace slots, ordered by ``CrossCoreSetFlag``/``CrossCoreWaitFlag``
(flag 0 AIC -> AIV, flag 1 AIV -> AIC) where one core's statement conflicts with the other's.
"""

from __future__ import annotations

import re

from ascutil import emit, filecheck, host, kernels

HANDOFFS = """
layer mx(R = 32) {
  input  a: bf16[R, 64]
  input  w: bf16[32, 64]
  input  v: bf16[64, 32]
  output y: f32[R, 32]
  output z: f32[R, 64]
  scratch h: bf16[R, 32]
  task t spmd(R / 16) on mix {
    let r0 = block * 16
    let p = matmul(a[r0 : r0 + 16, :], w[:, :], b_trans)
    y[r0 : r0 + 16, :] = exp(p)
    for i in range(2) {
      h[r0 : r0 + 16, :] = cast(p * 0.5, bf16)
      let q = matmul(h[r0 : r0 + 16, :], v[:, :], b_trans)
      z[r0 : r0 + 16, :] = q + 1.0
    }
    let s = matmul(cast(exp(p), bf16), v[:, :], b_trans)
    z[r0 : r0 + 16, :] = s
  }
}
"""

# phase A: cube and vector work on disjoint tensors; a barrier; the vector reads the cube's
# result (hc_pre_fused's shape)
PHASES = """
layer ph(R = 32) {
  input  x: f32[R, 64]
  input  w: f32[16, 64]
  output part: f32[R, 16]
  output sq: f32[R, 1]
  output out: f32[R, 16]
  task t spmd(2) on mix {
    part[block * 16 : block * 16 + 16, :] = matmul(x[block * 16 : block * 16 + 16, :], w[:, :], b_trans)
    sq[block * 16 : block * 16 + 16, :] = row_sum(x[block * 16 : block * 16 + 16, :])
    barrier
    out[block * 16 : block * 16 + 16, :] = exp(part[block * 16 : block * 16 + 16, :])
  }
}
"""

# flash attention's rescale: the vector core reassigns a product (`big_o = big_o * 0.5 + ...`)
RESCALE = """
layer fa(R = 16) {
  input  q: bf16[R, 64]
  input  k: bf16[64, 64]
  output o: f32[R, 64]
  task t on mix {
    let big_o = matmul(q[:, :], k[:, :], b_trans)
    for b in range(2) {
      big_o = big_o * 0.5 + matmul(q[:, :], k[:, :], b_trans)
    }
    o[:, :] = big_o
  }
}
"""

WS = "t_zx000024tzdws"  # `$t.ws<k>`: the workspace tensors of task t, encoded


def _side(text: str, test: str) -> str:
    """The program of one core: the lines under ``if ASCEND_IS_AIC/AIV {`` (to its closing brace)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == f"    if {test} {{")
    end = next(i for i in range(start, len(lines)) if lines[i] == "    }")
    return "\n".join(lines[start : end + 1])


def test_a_mix_task_is_one_mix_kernel_with_an_aic_program_and_an_aiv_program():
    filecheck(
        kernels(emit(HANDOFFS)),
        """
        CHECK: // task t: mix, grid 2, MIX AIC:AIV 1:1, 7 cross-core flag pairs, workspace 14336 B
        CHECK: extern "C" __global__ __aicore__ void mxzk0_t(GM_ADDR p_a, GM_ADDR p_w, GM_ADDR p_v, GM_ADDR p_y, GM_ADDR p_zz, GM_ADDR p_h, GM_ADDR p_zx000024tzdws0, GM_ADDR p_zx000024tzdws1, GM_ADDR p_zx000024tzdws2)
        CHECK-NEXT: {
        CHECK-NEXT: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
        CHECK-NEXT: if ASCEND_IS_AIC {
        CHECK-NEXT: AscendC::TPipe pipe;
        CHECK-NEXT: AscendC::TBuf<AscendC::TPosition::A1> l1aBuf;
        CHECK-NOT: inQueue
        CHECK: for (int64_t block = AscendC::GetBlockIdx(); block < 2; block += AscendC::GetBlockNum()) {
        CHECK-NOT: inQueue
        CHECK: if ASCEND_IS_AIV {
        CHECK-NEXT: AscendC::TPipe pipe;
        CHECK-NEXT: AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueue;
        CHECK-NOT: l0cBuf
        CHECK: for (int64_t block = AscendC::GetBlockIdx() / AscendC::GetTaskRatio(); block < 2; block += AscendC::GetBlockNum()) {
        CHECK-NOT: Mmad
        CHECK: }
        """,
    )


def test_a_product_the_vector_core_reads_goes_through_its_workspace_slot_after_flag_0():
    text = kernels(emit(HANDOFFS))
    filecheck(
        _side(text, "ASCEND_IS_AIC"),
        f"""
        CHECK: AscendC::Mmad(acc1, a25, b26, AscendC::MmadParams{{16, 32, 64, 0, false, true}});
        CHECK: AscendC::Fixpipe({WS}0[((block * 16) * 32)], acc1, AscendC::FixpipeParamsV220{{32, 16, 16, 32, false}});
        CHECK-NEXT: AscendC::PipeBarrier<PIPE_ALL>();  // every access before the hand-off has completed
        CHECK-NEXT: AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);
        """,
    )
    filecheck(
        _side(text, "ASCEND_IS_AIV"),
        f"""
        CHECK: for (int64_t block
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(0);
        CHECK: AscendC::DataCopy(in2, {WS}0[((block * 16) * 32)], 512);
        CHECK: AscendC::Exp(out3, in2, 512);
        CHECK: AscendC::DataCopy(t_y[((block * 16) * 32)], out3, 512);
        """,
    )


def test_a_vector_value_a_matmul_reads_goes_through_its_workspace_slot_after_flag_1():
    text = kernels(emit(HANDOFFS))
    filecheck(
        _side(text, "ASCEND_IS_AIV"),
        f"""
        CHECK: AscendC::Exp(ub10, in2, 512);
        CHECK: AscendC::DataCopy({WS}2[((block * 16) * 32)], out11, 512);
        CHECK: AscendC::PipeBarrier<PIPE_ALL>();  // every access before the hand-off has completed
        CHECK-NEXT: AscendC::CrossCoreSetFlag<0x2, PIPE_MTE3>(1);
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(0);
        CHECK-NEXT: inQueue.FreeTensor(in2);
        CHECK-NEXT: }}
        """,
    )
    filecheck(
        _side(text, "ASCEND_IS_AIC"),
        f"""
        CHECK: for (int64_t v_i = 0; v_i < 2; ++v_i) {{
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(1);
        CHECK-NEXT: }}
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(1);
        CHECK: AscendC::DataCopy(l115, {WS}2[((block * 16) * 32)], AscendC::Nd2NzParams{{1, 16, 32, 0, 32, 16, 1, 0}});
        CHECK: AscendC::Fixpipe(t_zz[((block * 16) * 64)], acc13, AscendC::FixpipeParamsV220{{64, 16, 16, 64, false}});
        CHECK-NEXT: AscendC::PipeBarrier<PIPE_ALL>();
        CHECK-NEXT: AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);
        CHECK-NEXT: }}
        """,
    )


def test_a_loop_both_cores_run_settles_them_at_entry_and_after_every_iteration():
    text = kernels(emit(HANDOFFS))
    filecheck(
        _side(text, "ASCEND_IS_AIC"),
        """
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(1);
        CHECK-NEXT: for (int64_t v_i = 0; v_i < 2; ++v_i) {
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(1);
        CHECK: AscendC::DataCopy(l19, t_h[((block * 16) * 32)], AscendC::Nd2NzParams{1, 16, 32, 0, 32, 16, 1, 0});
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_FIX>(0);
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(1);
        CHECK-NEXT: }
        """,
    )
    filecheck(
        _side(text, "ASCEND_IS_AIV"),
        """
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_MTE3>(1);
        CHECK-NEXT: for (int64_t v_i = 0; v_i < 2; ++v_i) {
        CHECK: AscendC::DataCopy(t_h[((block * 16) * 32)], out4, 512);
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_MTE3>(1);
        CHECK-NEXT: AscendC::CrossCoreWaitFlag<0x2, PIPE_S>(0);
        CHECK: AscendC::DataCopy(t_zz[((block * 16) * 64)], out8, 1024);
        CHECK: AscendC::CrossCoreSetFlag<0x2, PIPE_MTE3>(1);
        CHECK-NEXT: inQueue.FreeTensor(in7);
        CHECK-NEXT: }
        """,
    )


def _flag_ops(program: str) -> list[str]:
    return re.findall(r"CrossCore(Set|Wait)Flag(?:<[^>]*>)?\((\d)\)", program)  # type: ignore[return-value]


def test_every_wait_has_a_set_of_the_other_core_in_the_same_loop():
    """Straight-line and per loop body, the AIC's sets of flag 0 are the AIV's waits of flag 0
    and the AIV's sets of flag 1 the AIC's waits of flag 1: no core waits for a set that never comes."""
    text = kernels(emit(HANDOFFS))
    aic, aiv = _side(text, "ASCEND_IS_AIC"), _side(text, "ASCEND_IS_AIV")
    for part in (0, 1):  # outside and inside the v_i loop
        a = [op for chunk in _split_loop(aic)[part] for op in _flag_ops(chunk)]
        v = [op for chunk in _split_loop(aiv)[part] for op in _flag_ops(chunk)]
        assert (
            [f for op, f in a if op == "Set"]
            == [f for op, f in v if op == "Wait"]
            == ["0"] * len([1 for op, f in a if op == "Set"])
        )
        assert [f for op, f in v if op == "Set"] == [f for op, f in a if op == "Wait"]


def _split_loop(program: str) -> tuple[list[str], list[str]]:
    inside = re.search(r"for \(int64_t v_i = 0;.*?\n( {12})\}\n", program, re.S)
    assert inside is not None
    return [program[: inside.start()], program[inside.end() :]], [inside.group(0)]


def test_independent_cube_and_vector_work_runs_concurrently_up_to_the_barrier():
    text = kernels(emit(PHASES))
    filecheck(
        text,
        """
        CHECK: // task t: mix, grid 2, hard barrier (launched with its whole grid), MIX AIC:AIV 1:1, 0 cross-core flag pairs
        CHECK: if ASCEND_IS_AIC {
        CHECK: const int64_t block = AscendC::GetBlockIdx();
        CHECK: AscendC::Fixpipe(t_part[((block * 16) * 16)], acc1, AscendC::FixpipeParamsV220{16, 16, 16, 16, false});
        CHECK-NEXT: AscendC::SyncAll<false>();
        CHECK-NEXT: }
        CHECK: if ASCEND_IS_AIV {
        CHECK: const int64_t block = AscendC::GetBlockIdx() / AscendC::GetTaskRatio();
        CHECK: AscendC::ReduceSum(
        CHECK: AscendC::SyncAll<false>();
        CHECK: AscendC::DataCopy(in{{\\d+}}, t_part[((block * 16) * 16)], 256);
        CHECK: AscendC::Exp(
        """,
    )
    assert "CrossCore" not in text


def test_the_host_allocates_the_workspaces_and_launches_one_block_per_cluster():
    filecheck(
        host(emit(HANDOFFS)),
        """
        CHECK: uint8_t* p_zx000024tzdws0 = nullptr;  // scratch f32[32, 32]
        CHECK-NEXT: uint8_t* p_zx000024tzdws1 = nullptr;  // scratch f32[32, 64]
        CHECK-NEXT: uint8_t* p_zx000024tzdws2 = nullptr;  // scratch bf16[32, 32]
        CHECK: {"$t.ws0", "zx000024tzdws0.bin", 4096, false, false, &Buffers::p_zx000024tzdws0},
        CHECK: mxzk0_t<<<dslc_host::Blocks(2, DSLC_AIC_CORES), nullptr, stream>>>(b.p_a, b.p_w, b.p_v, b.p_y, b.p_zz, b.p_h, b.p_zx000024tzdws0, b.p_zx000024tzdws1, b.p_zx000024tzdws2);  // t
        """,
    )


def test_a_product_the_vector_core_rescales_reaches_it_through_a_local_of_its_own():
    """`let big_o = matmul(...)` then `big_o = big_o * 0.5 + matmul(...)`: each product is a
    cube local handed over in a slot; big_o itself lives in the AIV's calc buffer."""
    text = kernels(emit(RESCALE))
    filecheck(
        _side(text, "ASCEND_IS_AIC"),
        f"""
        CHECK: AscendC::Fixpipe({WS}0[((block * 16) * 64)], acc1,
        CHECK: for (int64_t v_b = 0; v_b < 2; ++v_b) {{
        CHECK: AscendC::Fixpipe({WS}1[((block * 16) * 64)], acc7,
        CHECK-NOT: t_o
        CHECK: }}
        """,
    )
    filecheck(
        _side(text, "ASCEND_IS_AIV"),
        f"""
        CHECK: AscendC::DataCopy(in2, {WS}0[((block * 16) * 64)], 1024);
        CHECK: AscendC::Copy(ub3, in2, 64, 16, AscendC::CopyRepeatParams{{1, 1, 8, 8}});
        CHECK: for (int64_t v_b = 0; v_b < 2; ++v_b) {{
        CHECK: AscendC::DataCopy(in5, {WS}1[((block * 16) * 64)], 1024);
        CHECK: AscendC::Muls(ub6, ub3, 0.5f, 1024);
        CHECK-NEXT: AscendC::Add(ub3, ub6, in5, 1024);
        CHECK: AscendC::DataCopy(t_o, out7, 1024);
        """,
    )
