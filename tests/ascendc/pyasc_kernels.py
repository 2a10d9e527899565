"""Reference kernels in pyasc (Huawei's Python binding of Ascend C), one per oracle case.

Run by ``test_pyasc_oracle`` with the interpreter of a separate environment that has pyasc
(it pins numpy<2): ``python pyasc_kernels.py`` prints a JSON object, case -> the AscendC C++
that pyasc's own translator (``translation.ir_to_ascendc``) makes of the kernel. Nothing
here runs on a device: the JIT front end, the MLIR passes and the translation work offline.

Each kernel states the same tile program dslc emits for the case, written against pyasc's
API with keyword arguments where the order matters, so the translator -- not this file --
decides the C++ argument order, template arguments and struct layouts the test compares.
"""

from __future__ import annotations

import json
import sys

import asc
import asc.language as asl
from asc.codegen.function_visitor import CodegenOptions
from asc.codegen.specialization import PointerArgType, Specialization
from asc.language.core.dtype import KnownTypes as KT
from asc.runtime.compiler import CompileOptions, Compiler

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


@asc.jit
def exp(x: asl.GlobalAddress, z: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, _ = vector_buffers(pipe, 2048, 2048)
    xg = gm(x)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    inp = load(qin, xg, 512)
    asl.exp(dst=out, src=inp, count=512)
    qin.free_tensor(inp)
    store(qout, out, zg, 512)


@asc.jit
def pad_div(x: asl.GlobalAddress, w: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 256, 256, calc_bytes=256)
    xg = gm(x)
    wg = gm(w)
    out = qout.alloc_tensor(F32)
    params = asl.DataCopyExtParams(block_count=8, block_len=16, src_stride=496, dst_stride=0, rsv=0)
    inp = load_padded(qin, xg, params, at=4)
    three = calc.get_with_offset(64, 0, F32)
    asl.duplicate(dst=three, scalar=3.0, count=64)
    asl.div(dst=out, src0=inp, src1=three, count=64)
    qin.free_tensor(inp)
    store(qout, out, wg, params=asl.DataCopyExtParams(8, 16, 0, 0, 0))


@asc.jit
def scalar_ops(x: asl.GlobalAddress, y: asl.GlobalAddress, z: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 2048, 2048, in_slots=2, calc_bytes=4096)
    xg = gm(x)
    yg = gm(y)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    a = load(qin, xg, 512)
    b = load(qin, yg, 512)
    s = calc.get_with_offset(512, 0, F32)
    asl.add(dst=s, src0=a, src1=b, count=512)
    qin.free_tensor(a)
    qin.free_tensor(b)
    m = calc.get_with_offset(512, 2048, F32)
    asl.maxs(dst=m, src=s, scalar=0.0, count=512)
    p = calc.get_with_offset(512, 0, F32)
    asl.muls(dst=p, src=m, scalar=2.0, count=512)
    asl.adds(dst=out, src=p, scalar=-1.0, count=512)
    store(qout, out, zg, 512)


@asc.jit
def row_sum(x: asl.GlobalAddress, s: asl.GlobalAddress):
    row_reduce(x, s, "sum")


@asc.jit
def row_max(x: asl.GlobalAddress, s: asl.GlobalAddress):
    row_reduce(x, s, "max")


@asc.jit
def row_expand(x: asl.GlobalAddress, v: asl.GlobalAddress, z: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, _ = vector_buffers(pipe, 256, 256, in_slots=2)
    xg = gm(x)
    vg = gm(v)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    a = load(qin, xg, 64)
    b = load_padded(qin, vg, asl.DataCopyExtParams(1, 4, 0, 0, 0))
    asl.pipe_barrier(asl.PipeID.PIPE_ALL)
    s = b.get_value(0)
    asl.muls(dst=out, src=a, scalar=s, count=64)
    qin.free_tensor(a)
    qin.free_tensor(b)
    store(qout, out, zg, 64)


@asc.jit
def cast(x: asl.GlobalAddress, y: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, _ = vector_buffers(pipe, 2048, 1024)
    xg = gm(x)
    yg = gm(y)
    out = qout.alloc_tensor(asl.float16)
    inp = load(qin, xg, 512)
    asl.cast(dst=out, src=inp, round_mode=asl.RoundMode.CAST_RINT, count=512)
    qin.free_tensor(inp)
    store(qout, out, yg, 512, dtype=asl.float16)


@asc.jit
def atomic_copy(x: asl.GlobalAddress, a: asl.GlobalAddress):
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 2048, 2048, calc_bytes=2048)
    xg = gm(x)
    ag = gm(a)
    e = calc.get_with_offset(512, 0, F32)
    inp = load(qin, xg, 512)
    asl.exp(dst=e, src=inp, count=512)
    qin.free_tensor(inp)
    out = qout.alloc_tensor(F32)
    ub_copy(out, e, 64, repeats=8)
    store(qout, out, ag, 512, atomic=True)


@asc.jit
def sort(score: asl.GlobalAddress, idx: asl.GlobalAddress, val: asl.GlobalAddress):
    """topk(row, 16, valid=200) over 256 columns: mask, Sort32, two MrgSort stages, GatherMask.
    CreateVecIndex has no pyasc binding: the test drops it on both sides."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 1024, 64, calc_bytes=8192)
    sg = gm(score)
    ig = gm(idx)
    vg = gm(val)
    best = calc.get_with_offset(32, 0, F32)
    row = load(qin, sg, 256)
    masked = calc.get_with_offset(512, 128, F32)
    asl.duplicate(masked, float("-inf"), 512)
    ub_copy(masked, row, 64, repeats=4)
    index = calc.get_with_offset(512, 2176, I32)
    lanes = calc.get_with_offset(512, 4224, F32)
    mask = calc.get_with_offset(64, 6272, asl.uint8)
    asl.cast(dst=lanes, src=index, round_mode=asl.RoundMode.CAST_NONE, count=512)
    asl.compare_scalar(dst=mask, src0=lanes, src1_scalar=200.0, cmp_mode=asl.CMPMODE.LT, count=512)
    asl.select(masked, mask, masked, float("-inf"), asl.SelMode.VSEL_TENSOR_SCALAR_MODE, 512)
    qin.free_tensor(row)
    payload = calc.get_with_offset(512, 2176, I32)
    records = calc.get_with_offset(1024, 4224, F32)
    asl.sort32(dst=records, src0=masked, src1=payload.reinterpret_cast(asl.uint32), repeat_time=16)
    merged = calc.get_with_offset(1024, 128, F32)
    runs = asl.MrgSortSrcList(F32, records, records[64], records[128], records[192])
    asl.mrg_sort(dst=merged, sort_list=runs, params=asl.MrgSort4Info([32, 32, 32, 32], False, 15, 4))
    final = calc.get_with_offset(1024, 4224, F32)
    runs2 = asl.MrgSortSrcList(F32, merged, merged[256], merged[512], merged[768])
    asl.mrg_sort(dst=final, sort_list=runs2, params=asl.MrgSort4Info([128, 128, 128, 128], False, 15, 1))
    ub_copy(best, final, 32)
    params = asl.GatherMaskParams(
        src0_block_stride=1, repeat_times=1, src0_repeat_stride=8, src1_repeat_stride=0
    )
    out = qout.alloc_tensor(F32)
    picked = calc.get_with_offset(32, 128, F32)
    asl.gather_mask(dst=picked, src0=best, src1_pattern=1, reduce_mode=False, mask=0, params=params)
    ub_copy(out, picked, 16)
    store(qout, out, vg, 16)
    out2 = qout.alloc_tensor(I32)
    picked2 = calc.get_with_offset(32, 128, F32)
    asl.gather_mask(dst=picked2, src0=best, src1_pattern=2, reduce_mode=False, mask=0, params=params)
    ub_copy(out2, picked2.reinterpret_cast(I32), 16)
    store(qout, out2, ig, 16, dtype=I32)


@asc.jit
def notify_wait(cell: asl.GlobalAddress, mine: asl.GlobalAddress):
    """The notify kernel (an atomic add into the peer's cell), then the wait kernel's
    cache-line refetch of the local cell (its spin loop's control flow is not compared)."""
    pipe = asl.TPipe()
    qout = asl.TQue(asl.TPosition.VECOUT, 1)
    pipe.init_buffer(qout, 1, 32)
    remote = gm(cell)
    local = gm(mine)
    out = qout.alloc_tensor(I32)
    asl.pipe_barrier(asl.PipeID.PIPE_MTE3)
    asl.duplicate(dst=out, scalar=1, count=8)
    store(qout, out, remote, params=asl.DataCopyExtParams(1, 4, 0, 0, 0), dtype=I32, atomic=True, at=1)
    asl.data_cache_clean_and_invalid(
        entire_type=asl.CacheLine.SINGLE_CACHE_LINE, dcci_dst=asl.DcciDst.CACHELINE_OUT, dst=local[0]
    )


@asc.jit
def matmul(x: asl.GlobalAddress, w: asl.GlobalAddress, y: asl.GlobalAddress):
    pipe = asl.TPipe()
    xg = gm(x)
    wg = gm(w)
    yg = gm(y)
    cube_matmul(pipe, xg, wg, yg)


@asc.jit
def unary(x: asl.GlobalAddress, z: asl.GlobalAddress):
    """relu(rsqrt(sqrt(abs(log(recip(x)))))): one count-mode call per op, ping-ponging two calc tiles."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 2048, 2048, calc_bytes=4096)
    xg = gm(x)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    inp = load(qin, xg, 512)
    a = calc.get_with_offset(512, 0, F32)
    asl.reciprocal(dst=a, src=inp, count=512)
    qin.free_tensor(inp)
    b = calc.get_with_offset(512, 2048, F32)
    asl.ln(dst=b, src=a, count=512)
    c = calc.get_with_offset(512, 0, F32)
    asl.abs(dst=c, src=b, count=512)
    d = calc.get_with_offset(512, 2048, F32)
    asl.sqrt(dst=d, src=c, count=512)
    e = calc.get_with_offset(512, 0, F32)
    asl.rsqrt(dst=e, src=d, count=512)
    asl.relu(dst=out, src=e, count=512)
    store(qout, out, zg, 512)


@asc.jit
def binary(x: asl.GlobalAddress, y: asl.GlobalAddress, z: asl.GlobalAddress):
    """minimum(maximum(x * y, x) - y, 2.0): Mul, Max, Sub, Mins; each GM operand loaded where used."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 2048, 2048, in_slots=2, calc_bytes=4096)
    xg = gm(x)
    yg = gm(y)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    x1 = load(qin, xg, 512)
    y1 = load(qin, yg, 512)
    prod = calc.get_with_offset(512, 0, F32)
    asl.mul(dst=prod, src0=x1, src1=y1, count=512)
    qin.free_tensor(x1)
    qin.free_tensor(y1)
    x2 = load(qin, xg, 512)
    big = calc.get_with_offset(512, 2048, F32)
    asl.max(dst=big, src0=prod, src1=x2, count=512)
    qin.free_tensor(x2)
    y2 = load(qin, yg, 512)
    diff = calc.get_with_offset(512, 0, F32)
    asl.sub(dst=diff, src0=big, src1=y2, count=512)
    qin.free_tensor(y2)
    asl.mins(dst=out, src=diff, scalar=2.0, count=512)
    store(qout, out, zg, 512)


@asc.jit
def gather(x: asl.GlobalAddress, i: asl.GlobalAddress, z: asl.GlobalAddress):
    """gather(x, idx) of one row: byte offsets (idx * 4 + the row's base), then Gather."""
    pipe = asl.TPipe()
    qin, qout, calc = vector_buffers(pipe, 256, 64, in_slots=2, calc_bytes=128)
    xg = gm(x)
    ig = gm(i)
    zg = gm(z)
    out = qout.alloc_tensor(F32)
    row = load(qin, xg, 64)
    idx = load(qin, ig, 16, dtype=I32)
    offsets = calc.get_with_offset(16, 0, I32)
    picked = calc.get_with_offset(16, 64, F32)
    for r in range(1):
        asl.muls(offsets[r * 16], idx[r * 16], 4, 16)
        asl.adds(offsets[r * 16], offsets[r * 16], r * 256, 16)
    as_u32 = offsets.reinterpret_cast(asl.uint32)
    for r in range(1):
        asl.gather(picked[r * 16], row, as_u32[r * 16], 0, 16)
    qin.free_tensor(row)
    qin.free_tensor(idx)
    ub_copy(out, picked, 16)
    store(qout, out, zg, 16)


@asc.jit
def mix(x: asl.GlobalAddress, w: asl.GlobalAddress, z: asl.GlobalAddress, ws: asl.GlobalAddress):
    """A MIX kernel: the AIC's matmul into a workspace slot, flag 0 to the AIV, which waits,
    loads the slot, computes exp and stores, then flag 1 back. (The two programs are one
    straight sequence here: the comparison skips the `if ASCEND_IS_AIC/AIV` lines.)"""
    pipe = asl.TPipe()
    qin, qout, _ = vector_buffers(pipe, 1024, 1024)
    xg = gm(x)
    wg = gm(w)
    zg = gm(z)
    wsg = gm(ws)
    # the AIC program
    cube_matmul(pipe, xg, wg, wsg)
    asl.pipe_barrier(asl.PipeID.PIPE_ALL)
    asl.cross_core_set_flag(0, 2, asl.PipeID.PIPE_FIX)
    asl.cross_core_wait_flag(1, 2, asl.PipeID.PIPE_S)
    # the AIV program
    asl.cross_core_wait_flag(0, 2, asl.PipeID.PIPE_S)
    event = pipe.fetch_event_id(asl.HardEvent.MTE3_MTE2)
    asl.set_flag(asl.HardEvent.MTE3_MTE2, event)
    asl.wait_flag(asl.HardEvent.MTE3_MTE2, event)
    slot = load(qin, wsg, 256)
    out = qout.alloc_tensor(F32)
    asl.exp(dst=out, src=slot, count=256)
    store(qout, out, zg, 256)
    asl.pipe_barrier(asl.PipeID.PIPE_ALL)
    asl.cross_core_set_flag(1, 2, asl.PipeID.PIPE_MTE3)
    qin.free_tensor(slot)


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


KERNELS = {
    k.fn.__name__: k
    for k in (exp, pad_div, scalar_ops, row_sum, row_max, row_expand, cast, atomic_copy, sort, notify_wait)
    + (matmul, unary, binary, mix, gather, logic, int_ops, strided, matmul_kn)
}


def translate(fn) -> str:
    code = fn.fn.__code__
    names = list(code.co_varnames[: code.co_argcount])
    ints = {"notify_wait": set(names), "gather": {"i"}, "int_ops": {"c", "z"}, "matmul_kn": {"y"}}.get(
        fn.fn.__name__, set()
    )
    halves = {"strided": {"y"}}.get(fn.fn.__name__, set())
    bytes_ = {"matmul_kn": {"x", "w"}}.get(fn.fn.__name__, set())

    def kind(n: str):
        return (
            KT.int8 if n in bytes_ else KT.int32 if n in ints else KT.float16 if n in halves else KT.float32
        )

    types = {n: PointerArgType(kind(n)) for n in names}
    module = fn._run_codegen(Specialization(types, {}), CodegenOptions())
    compiler = Compiler.__new__(Compiler)  # __init__ looks for bisheng; the passes do not need it
    compiler.options = CompileOptions()
    compiler.run_passes(module)
    return Compiler.run_translation(module)


if __name__ == "__main__":
    wanted = sys.argv[1:] or sorted(KERNELS)
    print(json.dumps({name: translate(KERNELS[name]) for name in wanted}, indent=1))
