"""Helpers of the pyasc reference kernels (``pyasc_kernels.py``, ``pyasc_lanes.py``): plain
Python the JIT front end calls while it traces a kernel, so each emits its API calls inline."""

from __future__ import annotations

import asc.language as asl

F32 = asl.float32
I32 = asl.int32


# Plain Python, not @asc.jit: the JIT front end calls these while it traces a kernel, so each
# emits its API calls inline, in place -- the translated C++ is what the kernel would give
# with the calls written out.
def gm(address):
    """A GlobalTensor over kernel argument ``address``."""
    tensor = asl.GlobalTensor()
    tensor.set_global_buffer(address)
    return tensor


def vector_buffers(pipe, in_bytes: int, out_bytes: int, in_slots: int = 1, calc_bytes: int = 0):
    """The VECIN and VECOUT queues (one buffer of ``in_slots`` slots each) and, when
    ``calc_bytes``, the VECCALC buffer dslc gives an aiv kernel."""
    qin = asl.TQue(asl.TPosition.VECIN, 1)
    qout = asl.TQue(asl.TPosition.VECOUT, 1)
    calc = asl.TBuf(asl.TPosition.VECCALC) if calc_bytes else None
    pipe.init_buffer(qin, in_slots, in_bytes)
    pipe.init_buffer(qout, 1, out_bytes)
    if calc_bytes:
        pipe.init_buffer(calc, calc_bytes)
    return qin, qout, calc


def load(qin, src, count: int, dtype=F32):
    """A VECIN tile of ``count`` elements copied in from GM ``src``, ready to compute on."""
    tile = qin.alloc_tensor(dtype)
    asl.data_copy(dst=tile, src=src, count=count)
    qin.enque(tile)
    return qin.deque(dtype)


def load_padded(qin, src, params, at: int = 0):
    """As ``load``, from ``src[at]`` with DataCopyPad (``params``: DataCopyExtParams), no padding.
    (The offset view is taken where dslc takes it, after the tile: the oracle numbers variables
    by first use.)"""
    tile = qin.alloc_tensor(F32)
    pad = asl.DataCopyPadExtParams(F32, is_pad=False, left_padding=0, right_padding=0, padding_value=0)
    asl.data_copy_pad(dst=tile, src=src[at] if at else src, data_copy_params=params, pad_params=pad)
    qin.enque(tile)
    return qin.deque(F32)


def store(qout, tile, dst, count: int = 0, params=None, dtype=F32, atomic: bool = False, at: int = 0):
    """VECOUT ``tile`` copied out to GM ``dst[at]`` (DataCopy of ``count`` elements, or DataCopyPad
    with ``params``), as an atomic add when ``atomic``; then freed."""
    qout.enque(tile)
    tile = qout.deque(dtype)
    if atomic:
        asl.set_atomic_add(dtype)
    if at:
        dst = dst[at]
    if params is None:
        asl.data_copy(dst=dst, src=tile, count=count)
    else:
        asl.data_copy_pad(dst=dst, src=tile, data_copy_params=params)
    if atomic:
        asl.set_atomic_none()
    qout.free_tensor(tile)


def ub_copy(dst, src, mask: int, repeats: int = 1):
    """A UB -> UB Copy of ``repeats`` contiguous 256-byte repeats, ``mask`` lanes each."""
    asl.copy(dst=dst, src=src, mask=mask, repeat_time=repeats, repeat_params=asl.CopyRepeatParams(1, 1, 8, 8))


def cube_matmul(pipe, xg, wg, dst):
    """The AIC program of a 16x64 by (64x16)^T f32 matmul into GM ``dst``: Nd2Nz both operands
    into L1, LoadData into L0A/L0B, one Mmad, Fixpipe out; each step behind its hardware event."""
    l1a = asl.TBuf(asl.TPosition.A1)
    l1b = asl.TBuf(asl.TPosition.B1)
    l0a = asl.TBuf(asl.TPosition.A2)
    l0b = asl.TBuf(asl.TPosition.B2)
    l0c = asl.TBuf(asl.TPosition.CO1)
    for buffer, nbytes in ((l1a, 4096), (l1b, 4096), (l0a, 4096), (l0b, 4096), (l0c, 1024)):
        pipe.init_buffer(buffer, nbytes)
    acc = l0c.get_with_offset(256, 0, F32)
    nd2nz = asl.Nd2NzParams(
        nd_num=1, n_value=16, d_value=64, src_nd_matrix_stride=0, src_d_value=64,
        dst_nz_c0_stride=16, dst_nz_n_stride=1, dst_nz_matrix_stride=0,
    )  # fmt: skip
    l1 = []
    for buffer, src in ((l1a, xg), (l1b, wg)):
        tile = buffer.get_with_offset(1024, 0, F32)
        asl.set_flag(asl.HardEvent.MTE1_MTE2, 0)
        asl.wait_flag(asl.HardEvent.MTE1_MTE2, 0)
        asl.data_copy(dst=tile, src=src, intri_params=nd2nz)
        asl.set_flag(asl.HardEvent.MTE2_MTE1, 0)
        asl.wait_flag(asl.HardEvent.MTE2_MTE1, 0)
        l1.append(tile)
    a2 = l0a.get_with_offset(1024, 0, F32)
    b2 = l0b.get_with_offset(1024, 0, F32)
    asl.set_flag(asl.HardEvent.M_MTE1, 0)
    asl.wait_flag(asl.HardEvent.M_MTE1, 0)
    load2d = asl.LoadData2DParams(
        start_index=0, repeat_times=8, src_stride=1, sid=0, dst_gap=0, if_transpose=False, addr_mode=0
    )
    asl.load_data(dst=a2, src=l1[0], params=load2d)
    asl.load_data(dst=b2, src=l1[1], params=load2d)
    asl.set_flag(asl.HardEvent.MTE1_M, 0)
    asl.wait_flag(asl.HardEvent.MTE1_M, 0)
    asl.set_flag(asl.HardEvent.FIX_M, 0)
    asl.wait_flag(asl.HardEvent.FIX_M, 0)
    mm = asl.MmadParams(m=16, n=16, k=64, unit_flag=0, cmatrix_source=False, cmatrix_init_val=True)
    asl.mmad(dst=acc, fm=a2, filter=b2, params=mm)
    asl.set_flag(asl.HardEvent.M_FIX, 0)
    asl.wait_flag(asl.HardEvent.M_FIX, 0)
    asl.fixpipe(
        dst=dst, src=acc, params=asl.FixpipeParamsV220(n_size=16, m_size=16, src_stride=16, dst_stride=16)
    )


def row_reduce(x, s, op: str):
    """A [1, 64] row reduced (``op``: ReduceSum or ReduceMax, with its work tile) into s[0, 0]."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 256, 32, calc_bytes=288)
    xg = gm(x)
    sg = gm(s)
    out = qout.alloc_tensor(F32)
    inp = load(qin, xg, 64)
    result = calc.get_with_offset(8, 0, F32)
    work = calc.get_with_offset(64, 32, F32)
    if op == "sum":
        asl.reduce_sum(dst=result, src=inp, shared_tmp_buffer=work, count=64)
    else:
        asl.reduce_max(dst=result, src=inp, shared_tmp_buffer=work, count=64, cal_index=False)
    qin.free_tensor(inp)
    ub_copy(out, result, 8)
    store(qout, out, sg, params=asl.DataCopyExtParams(1, 4, 0, 0, 0))
