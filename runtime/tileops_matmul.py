"""The cube's matmul for the NumPy tile ops: `matmul` and `matmul_acc`.

The accumulation follows the NPU (docs/runtime-semantics.md §11.1): float inputs
accumulate in fp32, int8 inputs exactly in int32. The fp32 summation order of the default path
is BLAS's (upstream goldens treat it as unspecified); `k_group=4` instead emulates the A2/A3 cube
order bit for bit: products in groups of 4 consecutive k, each group summed in float64, one
fp32 rounding per group, as upstream's hc_pre golden does (docs/runtime-semantics.md §17.3).
Operand dtypes must match (no implicit promotion), as for every tile op.

Its own module because the cube is a unit of its own -- operand checks, the bit-exact fold,
the exact int8 product and the store rounding serve only these two ops, and the hot path of
the simulator's large models lives here. Generated kernels reach both through
`runtime.tileops`, their one op namespace (`_op.matmul`).
"""

from __future__ import annotations

import numpy as np

from runtime.tileops_cast import FP16, FP32, INT32, DTypeLike, cast, resolve_dtype

__all__ = ["matmul", "matmul_acc"]


def _matmul_operands(a: np.ndarray, b: np.ndarray, a_trans: bool, b_trans: bool, op: str):
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        raise TypeError(f"{op}: operands must be arrays")
    if a.dtype != b.dtype:
        raise TypeError(f"{op}: operand dtypes differ ({a.dtype} vs {b.dtype}); no implicit promotion")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"{op}: operands must be at least 2-D, got {a.shape} and {b.shape}")
    if a_trans:
        a = np.swapaxes(a, -1, -2)
    if b_trans:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"{op}: inner dimensions differ: {a.shape} @ {b.shape}")
    if a.dtype == np.int8:
        acc = INT32
    elif a.dtype in (np.float32, np.float16):
        acc = FP32
    else:
        raise TypeError(f"{op}: unsupported operand dtype {a.dtype} (int8, fp16, fp32/bf16)")
    return a, b, acc


_FOLD_BLOCK = 64  # groups whose sums are materialised at once (bounds memory, not the result)


def _cube_fold(acc: np.ndarray, a: np.ndarray, b: np.ndarray, k_group: int) -> np.ndarray:
    """acc <- fp32(acc + group sum) for each group of `k_group` k, in ascending k (A2/A3 cube)."""
    k = a.shape[-1]
    if k % k_group:
        raise ValueError(f"matmul: K={k} is not a multiple of k_group={k_group}")
    groups = k // k_group
    a64 = a.astype(np.float64).reshape(*a.shape[:-1], groups, k_group)
    b64 = b.astype(np.float64).reshape(*b.shape[:-2], groups, k_group, b.shape[-1])
    a_g = np.moveaxis(a64, -2, -3)[..., :, :, None]  # [..., G, M, k, 1]
    b_g = b64[..., :, None, :, :]  # [..., G, 1, k, N]
    out = acc.astype(np.float32, copy=True)
    for g0 in range(0, groups, _FOLD_BLOCK):
        blk = slice(g0, min(g0 + _FOLD_BLOCK, groups))
        a_blk, b_blk = a_g[..., blk, :, :, :], b_g[..., blk, :, :, :]
        # sums[..., g, m, n] = ((p0 + p1) + p2) + p3; fp32 x fp32 products are exact in f64.
        sums = a_blk[..., 0, :] * b_blk[..., 0, :]
        for j in range(1, k_group):
            sums += a_blk[..., j, :] * b_blk[..., j, :]
        for g in range(sums.shape[-3]):
            out = (out.astype(np.float64) + sums[..., g, :, :]).astype(np.float32)
    return out


#: The longest K whose int8 dot products fp32 holds exactly: every partial sum, in any order
#: and with or without FMA, is an integer of magnitude <= K * 128 * 128 <= 2^24.
_INT8_EXACT_K_FP32 = 2**24 // (128 * 128)


def _product(a: np.ndarray, b: np.ndarray, acc: np.dtype) -> np.ndarray:
    if acc == INT32:
        return _int8_product(a, b)
    # Operands are copied to contiguous tiles first, as a TLOAD into L0 does; NumPy's GEMM on
    # strided views of a wide GM tensor is an order of magnitude slower than copy + GEMM.
    return np.matmul(_dense(a), _dense(b))


def _int8_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact int8 x int8 product, wrapped to int32 like the cube's int32 register.

    fp32 GEMM (half the work of float64 and no larger copies) over K chunks of at most
    ``_INT8_EXACT_K_FP32``, each exact (see there); chunks sum exactly in int64.
    """
    k, step = a.shape[-1], _INT8_EXACT_K_FP32
    if k <= step:
        return np.matmul(_dense(a), _dense(b)).astype(np.int32)  # |sum| <= 2^24: exact, no wrap
    chunks = (slice(k0, k0 + step) for k0 in range(0, k, step))
    total = sum(np.matmul(_dense(a[..., c]), _dense(b[..., c, :])).astype(np.int64) for c in chunks)
    return total.astype(np.int32)


def _dense(x: np.ndarray) -> np.ndarray:
    """A dense fp32 copy in the operand's stored order: a transposed view (``b_trans``) is
    copied as stored and handed back transposed, which BLAS takes without another copy."""
    transposed = x.ndim >= 2 and x.strides[-1] != x.itemsize and x.strides[-2] == x.itemsize
    stored = x.swapaxes(-1, -2) if transposed else x
    # The tile is copied as it is before it is widened: NumPy converts int8 to fp32 several
    # times faster from contiguous memory than from a tile of a wider tensor's rows.
    dense = np.ascontiguousarray(stored).astype(np.float32, copy=False)
    return dense.swapaxes(-1, -2) if transposed else dense


def _store(result: np.ndarray, acc: np.dtype, out_dtype: DTypeLike | None, op: str) -> np.ndarray:
    if out_dtype is None:
        return result
    target, bf16 = resolve_dtype(out_dtype)
    if acc == FP32 and (bf16 or target == FP16):
        return cast(result, out_dtype, "rint")
    if target != acc or bf16:
        raise TypeError(f"{op}: out_dtype {out_dtype} does not match the {acc} accumulator")
    return result


def matmul(
    a: np.ndarray,
    b: np.ndarray,
    a_trans: bool = False,
    b_trans: bool = False,
    out_dtype: DTypeLike | None = None,
    k_group: int | None = None,
) -> np.ndarray:
    """Cube matmul `a @ b` (optionally transposed) into the accumulator dtype.

    int8 x int8 accumulates exactly in int32; fp16/fp32/bf16 accumulate in fp32. `out_dtype`
    None means the accumulator dtype; fp16/bf16 round the fp32 result with RNE on store.
    `k_group` selects the bit-exact cube emulation (see the module docstring).
    """
    a, b, acc = _matmul_operands(a, b, a_trans, b_trans, "matmul")
    if k_group is not None and acc == FP32:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        result = _cube_fold(np.zeros(shape, np.float32), a, b, k_group)
    else:
        result = _product(a, b, acc)
    return _store(result, acc, out_dtype, "matmul")


def matmul_acc(
    acc: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    a_trans: bool = False,
    b_trans: bool = False,
    k_group: int | None = None,
) -> np.ndarray:
    """Return `acc + a @ b`; `acc` must be fp32 for float inputs and int32 for int8 inputs.

    Default path: one fp32 add of the fp32 product (product order unspecified). With
    `k_group`, the cube's sequential fold continues from `acc`, so chaining matmul_acc over K
    chunks equals one matmul over the whole K.
    """
    a, b, acc_dtype = _matmul_operands(a, b, a_trans, b_trans, "matmul_acc")
    if acc.dtype != acc_dtype:
        raise TypeError(f"matmul_acc: accumulator is {acc.dtype}, inputs {a.dtype} need {acc_dtype}")
    if k_group is not None and acc_dtype == FP32:
        return _cube_fold(acc, a, b, k_group)
    if acc_dtype == INT32:
        return (acc.astype(np.int64) + _product(a, b, INT32)).astype(np.int32)
    return acc + _product(a, b, FP32)
