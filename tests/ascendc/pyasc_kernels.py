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
from pyasc_common import (
    F32,
    I32,
    cube_matmul,
    gm,
    load,
    load_padded,
    row_reduce,
    store,
    ub_copy,
    vector_buffers,
)
from pyasc_lanes import int_ops, logic, matmul_kn, strided


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
