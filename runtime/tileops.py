"""NumPy implementations of the tile ops that generated kernels call.

The semantics follow the NPU as docs/runtime-semantics.md §11 describes it, because the
simulator is only useful if a kernel computes here what it computes on the device:

- **No implicit promotion.** Array operands of one op must share a dtype, or the op raises
  TypeError; the result has that dtype. A Python int/float operand is the op's *scalar form*
  and is converted to the array's dtype first. Convert with `cast`.
- **bf16** tiles are float32 arrays holding bf16 values (see `runtime.tileops_cast`). Ops
  cannot tell them from fp32 tiles: arithmetic on them is fp32 arithmetic, and a kernel must
  `cast(..., BF16)` where the device rounds.
- **matmul** accumulates float inputs in fp32 and int8 inputs exactly in int32; its
  summation order and the bit-exact `k_group` emulation are in `runtime.tileops_matmul`.
- Row reductions keep dims (`row_sum` gives [M, 1]); column reductions give [1, N].
- Ops return new arrays and never write their inputs: tiles have value semantics.

Everything is vectorised; per-call overhead is a few dtype checks, since generated kernels
call these in their innermost loops.

This module is the one namespace generated kernels call ops through (`from runtime import
tileops as _op`; the verifier's footprints take every `_op.` call as pure), so it also imports
the ops defined beside it by concept: dtypes and casts (`runtime.tileops_cast`), the cube's
matmul (`runtime.tileops_matmul`) and sorting (`runtime.tileops_sort`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime.tileops_cast import (
    BF16,
    FP16,
    FP32,
    INT8,
    INT32,
    INT64,
    ROUND_MODES,
    UINT32,
    DTypeLike,
    bf16_round_half_away,
    cast,
    is_bf16_representable,
    resolve_dtype,
    to_bf16,
)
from runtime.tileops_matmul import matmul, matmul_acc
from runtime.tileops_sort import gather_lanes, mrgsort, sort32, topk_from_sorted

__all__ = [
    "BF16", "FP16", "FP32", "INT8", "INT32", "INT64", "UINT32", "ROUND_MODES", "FP32_NEG_INF",
    "resolve_dtype", "to_bf16", "bf16_round_half_away", "is_bf16_representable", "cast",
    "matmul", "matmul_acc",
    "add", "sub", "mul", "div", "maximum", "minimum",
    "neg", "abs", "exp", "sqrt", "rsqrt", "recip", "sigmoid", "silu", "relu",
    "row_sum", "row_max", "row_min", "col_sum", "col_max",
    "row_expand_mul", "row_expand_div", "row_expand_sub", "row_expand_add", "col_expand_mul",
    "col_expand",
    "full", "zeros", "arange", "gather", "gather_rows",
    "quant_int8_rows", "dequant_rows", "INT8_SCALE_MAX", "INT8_AMAX_EPS",
    "sort32", "mrgsort", "gather_lanes", "topk_from_sorted",
]  # fmt: skip

#: The most negative finite fp32; the reference's "-inf" for masks and pads.
FP32_NEG_INF = float(np.finfo(np.float32).min)
INT8_SCALE_MAX = 127.0
INT8_AMAX_EPS = 1e-4

Operand = np.ndarray | int | float


# --------------------------------------------------------------------------- dtype discipline


def _is_tile(v: object) -> bool:
    """Arrays and typed NumPy scalars carry a dtype; Python and NumPy int/float are scalars."""
    if isinstance(v, np.ndarray):
        return True
    return isinstance(v, np.generic) and not isinstance(v, (float, np.integer))


def _pair(a: Operand, b: Operand, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Check two operands for one dtype, turning a scalar operand into the other's dtype."""
    a_tile, b_tile = _is_tile(a), _is_tile(b)
    if a_tile and b_tile:
        if a.dtype != b.dtype:
            raise TypeError(f"{op}: operand dtypes differ ({a.dtype} vs {b.dtype}); no implicit promotion")
        return a, b
    if a_tile:
        return a, _scalar(b, a.dtype, op)
    if b_tile:
        return _scalar(a, b.dtype, op), b
    raise TypeError(f"{op}: at least one operand must be an array")


def _scalar(s: Operand, dtype: np.dtype, op: str) -> np.generic:
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, float, np.integer)):
        raise TypeError(f"{op}: unsupported scalar operand {s!r}")
    if dtype.kind in "iu" and isinstance(s, float) and not float(s).is_integer():
        raise TypeError(f"{op}: non-integral scalar {s!r} for an {dtype} tile")
    return dtype.type(s)


def _need_float(x: np.ndarray, op: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: expected an array, got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: needs a floating-point tile, got {x.dtype}")
    return x


def _need_2d(x: np.ndarray, op: str) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.ndim != 2:
        raise ValueError(f"{op}: needs a 2-D tile, got {getattr(x, 'shape', type(x).__name__)}")
    return x


# ---------------------------------------------------------------------------- elementwise


def add(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise a + b."""
    a, b = _pair(a, b, "add")
    return np.add(a, b)


def sub(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise a - b."""
    a, b = _pair(a, b, "sub")
    return np.subtract(a, b)


def mul(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise a * b."""
    a, b = _pair(a, b, "mul")
    return np.multiply(a, b)


def div(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise a / b (IEEE division; floating point only)."""
    a, b = _pair(a, b, "div")
    _need_float(np.asarray(a), "div")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


def maximum(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise max."""
    a, b = _pair(a, b, "maximum")
    return np.maximum(a, b)


def minimum(a: Operand, b: Operand) -> np.ndarray:
    """Elementwise min."""
    a, b = _pair(a, b, "minimum")
    return np.minimum(a, b)


def neg(x: np.ndarray) -> np.ndarray:
    """Elementwise -x."""
    return np.negative(x)


def abs(x: np.ndarray) -> np.ndarray:  # noqa: A001 - the op's name on the device
    """Elementwise |x|."""
    return np.absolute(x)


def exp(x: np.ndarray) -> np.ndarray:
    """Elementwise e^x (overflow gives inf, as on the device)."""
    with np.errstate(over="ignore"):
        return np.exp(_need_float(x, "exp"))


def sqrt(x: np.ndarray) -> np.ndarray:
    """Elementwise square root (NaN for negative inputs)."""
    with np.errstate(invalid="ignore"):
        return np.sqrt(_need_float(x, "sqrt"))


def rsqrt(x: np.ndarray) -> np.ndarray:
    """Elementwise 1/sqrt(x), as recip(sqrt(x)): two roundings, like the kernels' composition."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(np.sqrt(_need_float(x, "rsqrt")))


def recip(x: np.ndarray) -> np.ndarray:
    """Elementwise 1/x."""
    with np.errstate(divide="ignore"):
        return np.reciprocal(_need_float(x, "recip"))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """Elementwise 1 / (1 + e^-x), in the tile's dtype."""
    x = _need_float(x, "sigmoid")
    one = x.dtype.type(1)
    with np.errstate(over="ignore"):
        return one / (one + np.exp(-x))


def silu(x: np.ndarray) -> np.ndarray:
    """Elementwise x * sigmoid(x)."""
    return x * sigmoid(x)


def relu(x: np.ndarray) -> np.ndarray:
    """Elementwise max(x, 0)."""
    return np.maximum(x, x.dtype.type(0))


# ----------------------------------------------------------------------------- reductions


def row_sum(x: np.ndarray) -> np.ndarray:
    """Sum along the last axis into [M, 1], accumulating in the tile's dtype."""
    return np.add.reduce(_need_2d(x, "row_sum"), axis=1, keepdims=True, dtype=x.dtype)


def row_max(x: np.ndarray) -> np.ndarray:
    """Max along the last axis into [M, 1]."""
    return np.max(_need_2d(x, "row_max"), axis=1, keepdims=True)


def row_min(x: np.ndarray) -> np.ndarray:
    """Min along the last axis into [M, 1]."""
    return np.min(_need_2d(x, "row_min"), axis=1, keepdims=True)


def col_sum(x: np.ndarray) -> np.ndarray:
    """Sum along the first axis into [1, N]."""
    return np.add.reduce(_need_2d(x, "col_sum"), axis=0, keepdims=True, dtype=x.dtype)


def col_max(x: np.ndarray) -> np.ndarray:
    """Max along the first axis into [1, N]."""
    return np.max(_need_2d(x, "col_max"), axis=0, keepdims=True)


def _expand(x: np.ndarray, v: np.ndarray, op: str, row: bool) -> tuple[np.ndarray, np.ndarray]:
    x = _need_2d(x, op)
    want = (x.shape[0], 1) if row else (1, x.shape[1])
    if not isinstance(v, np.ndarray) or v.shape != want:
        raise ValueError(f"{op}: broadcast operand must have shape {want}, got {getattr(v, 'shape', v)}")
    if v.dtype != x.dtype:
        raise TypeError(f"{op}: operand dtypes differ ({x.dtype} vs {v.dtype}); no implicit promotion")
    return x, v


def row_expand_mul(x: np.ndarray, col: np.ndarray) -> np.ndarray:
    """x * col, broadcasting an [M, 1] column over the columns."""
    x, col = _expand(x, col, "row_expand_mul", row=True)
    return x * col


def row_expand_div(x: np.ndarray, col: np.ndarray) -> np.ndarray:
    """x / col, broadcasting an [M, 1] column (softmax normalisation)."""
    x, col = _expand(x, col, "row_expand_div", row=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return x / col


def row_expand_sub(x: np.ndarray, col: np.ndarray) -> np.ndarray:
    """x - col, broadcasting an [M, 1] column (softmax max subtraction)."""
    x, col = _expand(x, col, "row_expand_sub", row=True)
    return x - col


def row_expand_add(x: np.ndarray, col: np.ndarray) -> np.ndarray:
    """x + col, broadcasting an [M, 1] column."""
    x, col = _expand(x, col, "row_expand_add", row=True)
    return x + col


def col_expand_mul(x: np.ndarray, row: np.ndarray) -> np.ndarray:
    """x * row, broadcasting a [1, N] row over the rows."""
    x, row = _expand(x, row, "col_expand_mul", row=False)
    return x * row


def col_expand(row: np.ndarray, rows: int) -> np.ndarray:
    """Repeat a [1, N] row into [rows, N]."""
    if not isinstance(row, np.ndarray) or row.ndim != 2 or row.shape[0] != 1:
        raise ValueError(f"col_expand: needs a [1, N] row, got {getattr(row, 'shape', row)}")
    return np.repeat(row, rows, axis=0)


# ------------------------------------------------------------------ creation and gathers


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def full(shape: int | Sequence[int], value: float, dtype: DTypeLike = FP32) -> np.ndarray:
    """A tile filled with `value` converted to `dtype` (RNE for bf16/fp16)."""
    target, bf16 = resolve_dtype(dtype)
    if bf16:
        return np.full(_shape(shape), to_bf16(np.array(value, np.float64)), np.float32)
    if target.kind in "iu":
        return np.full(_shape(shape), _scalar(value, target, "full"), target)
    return np.full(_shape(shape), cast(np.array(value, np.float64), target), target)


def zeros(shape: int | Sequence[int], dtype: DTypeLike = FP32) -> np.ndarray:
    """A zero tile (accumulator initialisation)."""
    target, _ = resolve_dtype(dtype)
    return np.zeros(_shape(shape), target)


def arange(start: int, shape: int | Sequence[int], dtype: DTypeLike = INT32) -> np.ndarray:
    """Integer ramp start, start+1, ... laid out row-major over `shape` (`tensor.ci`).

    For the usual [1, N] sort index this is one ramp over the row.
    """
    target, bf16 = resolve_dtype(dtype)
    if bf16 or target.kind not in "iu":
        raise TypeError(f"arange: needs an integer dtype, got {dtype}")
    dims = _shape(shape)
    return np.arange(start, start + int(np.prod(dims)), dtype=np.int64).astype(target).reshape(dims)


def gather(x: np.ndarray, index: np.ndarray, dim: int = -1) -> np.ndarray:
    """Per-row index gather on the last axis: out[i, j] = x[i, index[i, j]] (2-D only).

    An [1, K] index is applied to every row. Out-of-range indices raise IndexError.
    """
    _need_2d(x, "gather")
    if dim not in (-1, 1):
        raise ValueError("gather: only the last axis (dim=-1) is supported, as on the device")
    if not isinstance(index, np.ndarray) or index.dtype.kind not in "iu" or index.ndim != 2:
        raise TypeError("gather: index must be a 2-D integer array")
    n = x.shape[1]
    if index.size and (index.min() < 0 or index.max() >= n):
        raise IndexError(f"gather: index out of range [0, {n})")
    index = np.broadcast_to(index, (x.shape[0], index.shape[1]))
    return np.take_along_axis(x, index.astype(np.intp, copy=False), axis=1)


def gather_rows(x: np.ndarray, rows: np.ndarray, fill: float | None = None) -> np.ndarray:
    """Gather whole rows: out[i] = x[rows[i]] (`gather_row`).

    With `fill`, a negative row index yields a row of `fill` (the kernels stage an invalid
    sparse slot as a zero row); without it, a negative or too-large index raises IndexError.
    """
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu" or rows.ndim != 1:
        raise TypeError("gather_rows: rows must be a 1-D integer array")
    n = x.shape[0]
    invalid = rows < 0
    if fill is None and invalid.any():
        raise IndexError("gather_rows: negative row index without a fill value")
    if rows.size and rows.max() >= n:
        raise IndexError(f"gather_rows: row index out of range [0, {n})")
    out = x[np.where(invalid, 0, rows)]
    if fill is not None and invalid.any():
        out[invalid] = fill
    return out


# ------------------------------------------------------------------------ W8A8 helpers


def quant_int8_rows(
    x: np.ndarray, amax_eps: float = INT8_AMAX_EPS, scale_form: str = "recip"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8 quantisation, as the W8A8 kernels do it.

    amax = max(row_max(|x|), eps); sq = 127 / amax; q = rint(x * sq) through int32, fp16
    and trunc to int8 (the fp16 hop never changes |q| <= 127); dequant scale = recip(sq)
    (`scale_form="recip"`) or amax * (1/127) (`"mul"`, the gate's form; can differ by 1 ulp).
    Returns (q int8 [M, N], dequant scale fp32 [M, 1]).
    """
    x = _need_float(_need_2d(x, "quant_int8_rows"), "quant_int8_rows").astype(np.float32, copy=False)
    amax = np.maximum(row_max(np.absolute(x)), np.float32(amax_eps))
    sq = np.float32(INT8_SCALE_MAX) / amax
    q32 = cast(x * sq, INT32, "rint")
    q = cast(cast(q32, FP16, "round"), INT8, "trunc")
    if scale_form == "recip":
        scale = np.reciprocal(sq)
    elif scale_form == "mul":
        scale = amax * np.float32(1.0 / INT8_SCALE_MAX)
    else:
        raise ValueError(f"quant_int8_rows: unknown scale_form {scale_form!r}")
    return q, scale


def dequant_rows(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """fp32(q) * scale, broadcasting an [M, 1] dequant scale."""
    return q.astype(np.float32) * scale.astype(np.float32, copy=False)
