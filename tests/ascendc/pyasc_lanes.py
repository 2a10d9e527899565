"""pyasc reference kernels of the mask, lane and [K, N] cube ops (see ``pyasc_kernels.py``)."""

from __future__ import annotations

import asc
import asc.language as asl
from pyasc_common import F32, I32, gm, load, store, vector_buffers


@asc.jit
def logic(x: asl.GlobalAddress, y: asl.GlobalAddress, z: asl.GlobalAddress):
    """select(x < y and not (x == 0), x, 0.0): Compare and CompareScalar into bit masks, Not
    and And on the masks as uint16 words, Select with a scalar."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 256, 256, in_slots=2, calc_bytes=352)
    xg = gm(x)
    yg = gm(y)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    a = load(qin, xg, 64)
    b = load(qin, yg, 64)
    lt = calc.get_with_offset(32, 0, asl.uint8)
    asl.compare(lt, a, b, asl.CMPMODE.LT, 64)
    qin.free_tensor(a)
    qin.free_tensor(b)
    c = load(qin, xg, 64)
    eq = calc.get_with_offset(32, 32, asl.uint8)
    asl.compare_scalar(eq, c, 0.0, asl.CMPMODE.EQ, 64)
    qin.free_tensor(c)
    ne = calc.get_with_offset(32, 64, asl.uint8)
    eq16 = eq.reinterpret_cast(asl.uint16)
    ne16 = ne.reinterpret_cast(asl.uint16)
    asl.bitwise_not(ne16, eq16, 8)
    both = calc.get_with_offset(32, 32, asl.uint8)
    lt16 = lt.reinterpret_cast(asl.uint16)
    both16 = both.reinterpret_cast(asl.uint16)
    asl.bitwise_and(both16, lt16, ne16, 8)
    d = load(qin, xg, 64)
    asl.select(out, both, d, 0.0, asl.SelMode.VSEL_TENSOR_SCALAR_MODE, 64)
    qin.free_tensor(d)
    store(qout, out, zg, 64)


@asc.jit
def int_ops(c: asl.GlobalAddress, z: asl.GlobalAddress):
    """select(c >= 0, c // 16 + c % 16, -1) on i32: the compare through an f32 cast,
    ShiftRight, And of 16-bit lanes with 15, Select of the i32 bits as f32."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 256, 256, calc_bytes=1056)
    cg = gm(c)
    zg = gm(z)
    out = qout.alloc_tensor(I32)
    c1 = load(qin, cg, 64, dtype=I32)
    as_f32 = calc.get_with_offset(64, 0, F32)
    asl.cast(dst=as_f32, src=c1, round_mode=asl.RoundMode.CAST_RINT, count=64)
    ge = calc.get_with_offset(32, 256, asl.uint8)
    asl.compare_scalar(ge, as_f32, 0.0, asl.CMPMODE.GE, 64)
    qin.free_tensor(c1)
    c2 = load(qin, cg, 64, dtype=I32)
    quot = calc.get_with_offset(64, 0, I32)
    asl.shift_right(quot, c2, 4, 64)
    qin.free_tensor(c2)
    c3 = load(qin, cg, 64, dtype=I32)
    rem = calc.get_with_offset(64, 288, I32)
    low = calc.get_with_offset(64, 544, I32)
    asl.duplicate(low, 15, 64)
    rem16 = rem.reinterpret_cast(asl.int16)
    c16 = c3.reinterpret_cast(asl.int16)
    low16 = low.reinterpret_cast(asl.int16)
    asl.bitwise_and(rem16, c16, low16, 128)
    qin.free_tensor(c3)
    total = calc.get_with_offset(64, 544, I32)
    asl.add(dst=total, src0=quot, src1=rem, count=64)
    minus = calc.get_with_offset(64, 0, I32)
    asl.duplicate(minus, -1, 64)
    total_f = total.reinterpret_cast(F32)
    out_f = out.reinterpret_cast(F32)
    minus_f = minus.reinterpret_cast(F32)
    asl.select(out_f, ge, total_f, minus_f, asl.SelMode.VSEL_TENSOR_TENSOR_MODE, 64)
    store(qout, out, zg, 64, dtype=I32)


@asc.jit
def strided(x: asl.GlobalAddress, y: asl.GlobalAddress):
    """y[:, 1::2] = cast(x[:, 0::2], f16) over [8, 64]: GatherMask (pattern 1, one repeat per
    row), Cast, Brcb of each lane into a block, one strided DataCopyPad per row."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 2048, 8192, calc_bytes=1792)
    xg = gm(x)
    yg = gm(y)
    value = calc.get_with_offset(256, 0, asl.float16)
    inp = load(qin, xg, 512)
    even = calc.get_with_offset(256, 512, F32)
    params = asl.GatherMaskParams(
        src0_block_stride=1, repeat_times=8, src0_repeat_stride=8, src1_repeat_stride=0
    )
    asl.gather_mask(dst=even, src0=inp, src1_pattern=1, reduce_mode=False, mask=0, params=params)
    qin.free_tensor(inp)
    asl.cast(dst=value, src=even, round_mode=asl.RoundMode.CAST_RINT, count=256)
    out = qout.alloc_tensor(asl.float16)
    asl.brcb(out, value, 32, asl.BrcbRepeatParams(1, 8))
    qout.enque(out)
    out = qout.deque(asl.float16)
    for r in asl.static_range(8):  # unrolled, as the normal form unrolls dslc's row loop
        asl.data_copy_pad(
            dst=yg[1 + r * 64], src=out[r * 512], data_copy_params=asl.DataCopyExtParams(32, 2, 0, 2, 0)
        )
    qout.free_tensor(out)


def stage_i8(buffer, src, n: int, d: int, c0_stride: int, size: int):
    """GM [n, d] int8 -> an Nz tile of L1 (``Nd2Nz``), each side of its MTE2 events."""
    tile = buffer.get_with_offset(size, 0, asl.int8)
    asl.set_flag(asl.HardEvent.MTE1_MTE2, 0)
    asl.wait_flag(asl.HardEvent.MTE1_MTE2, 0)
    nd2nz = asl.Nd2NzParams(
        nd_num=1, n_value=n, d_value=d, src_nd_matrix_stride=0, src_d_value=d,
        dst_nz_c0_stride=c0_stride, dst_nz_n_stride=1, dst_nz_matrix_stride=0,
    )  # fmt: skip
    asl.data_copy(dst=tile, src=src, intri_params=nd2nz)
    asl.set_flag(asl.HardEvent.MTE2_MTE1, 0)
    asl.wait_flag(asl.HardEvent.MTE2_MTE1, 0)
    return tile


@asc.jit
def matmul_kn(x: asl.GlobalAddress, w: asl.GlobalAddress, y: asl.GlobalAddress):
    """An int8 [16, 64] x [64, 32] matmul with B given as [K, N] (no b_trans): B's Nz image in
    L1 has K along the rows of each 32-lane column block, so each 32x32 square goes to L0B
    through LoadDataWithTranspose (two 16x32 fractals), one call per 32 rows of K."""
    pipe = asl.TPipe()
    xg = gm(x)
    wg = gm(w)
    yg = gm(y)
    l1a = asl.TBuf(asl.TPosition.A1)
    l1b = asl.TBuf(asl.TPosition.B1)
    l0a = asl.TBuf(asl.TPosition.A2)
    l0b = asl.TBuf(asl.TPosition.B2)
    l0c = asl.TBuf(asl.TPosition.CO1)
    pipe.init_buffer(l1a, 1024)
    pipe.init_buffer(l1b, 2048)
    pipe.init_buffer(l0a, 1024)
    pipe.init_buffer(l0b, 2048)
    pipe.init_buffer(l0c, 2048)
    acc = l0c.get_with_offset(512, 0, I32)
    l1 = [stage_i8(l1a, xg, 16, 64, 16, 1024), stage_i8(l1b, wg, 64, 32, 64, 2048)]
    a2 = l0a.get_with_offset(1024, 0, asl.int8)
    b2 = l0b.get_with_offset(2048, 0, asl.int8)
    asl.set_flag(asl.HardEvent.M_MTE1, 0)
    asl.wait_flag(asl.HardEvent.M_MTE1, 0)
    load2d = asl.LoadData2DParams(
        start_index=0, repeat_times=2, src_stride=1, sid=0, dst_gap=0, if_transpose=False, addr_mode=0
    )
    asl.load_data(dst=a2, src=l1[0], params=load2d)
    square = asl.LoadData2dTransposeParams(
        start_index=0, repeat_times=1, src_stride=2, dst_gap=1, dst_frac_gap=0, addr_mode=0
    )
    asl.load_data_with_transpose(b2, l1[1], square)
    asl.load_data_with_transpose(b2[1024], l1[1][1024], square)
    asl.set_flag(asl.HardEvent.MTE1_M, 0)
    asl.wait_flag(asl.HardEvent.MTE1_M, 0)
    asl.set_flag(asl.HardEvent.FIX_M, 0)
    asl.wait_flag(asl.HardEvent.FIX_M, 0)
    mm = asl.MmadParams(m=16, n=32, k=64, unit_flag=0, cmatrix_source=False, cmatrix_init_val=True)
    asl.mmad(dst=acc, fm=a2, filter=b2, params=mm)
    asl.set_flag(asl.HardEvent.M_FIX, 0)
    asl.wait_flag(asl.HardEvent.M_FIX, 0)
    asl.fixpipe(
        dst=yg, src=acc, params=asl.FixpipeParamsV220(n_size=32, m_size=16, src_stride=16, dst_stride=32)
    )
