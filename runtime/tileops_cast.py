"""Dtypes, bf16 rounding and `cast` for the NumPy tile ops.

NumPy has no bfloat16, so a bf16 tile is carried as a float32 array whose values are all
bf16-representable (the low 16 bits of every word are zero). `to_bf16` produces such values
with round-to-nearest-even, the rounding the NPU applies for `cast(..., mode="rint")` and that
torch applies for `.to(torch.bfloat16)`. `bf16_round_half_away` is the other rounding that
upstream code has confused with RNE (pypto-lib #844/#896); it exists so tests can show the two
differ.

Kept apart from `runtime.tileops` only to keep modules short; import everything from there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "BF16",
    "FP16",
    "FP32",
    "INT8",
    "INT32",
    "UINT32",
    "INT64",
    "ROUND_MODES",
    "DTypeLike",
    "resolve_dtype",
    "to_bf16",
    "bf16_round_half_away",
    "is_bf16_representable",
    "cast",
]

#: The bf16 dtype marker. Arrays "of dtype BF16" are float32 arrays holding bf16 values.
BF16 = "bf16"
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)
INT8 = np.dtype(np.int8)
INT32 = np.dtype(np.int32)
UINT32 = np.dtype(np.uint32)
INT64 = np.dtype(np.int64)

#: Rounding modes of `cast`, named as the PyPTO/AscendC cast modes:
#: rint = nearest, ties to even; round = nearest, ties away from zero;
#: floor = toward -inf; ceil = toward +inf; trunc = toward zero.
ROUND_MODES = ("rint", "round", "floor", "ceil", "trunc")

DTypeLike = Any  # a numpy dtype, a numpy scalar type, or a name such as "fp32" or "bf16"

_ALIASES = {
    "bf16": BF16,
    "bfloat16": BF16,
    "fp16": FP16,
    "f16": FP16,
    "half": FP16,
    "fp32": FP32,
    "f32": FP32,
    "fp64": np.dtype(np.float64),
    "f64": np.dtype(np.float64),
    "i8": INT8,
    "u8": np.dtype(np.uint8),
    "i16": np.dtype(np.int16),
    "i32": INT32,
    "u32": UINT32,
    "i64": INT64,
    "index": INT64,
}

_SIGN = np.uint32(0x80000000)
_ABS = np.uint32(0x7FFFFFFF)
_EXP_INF = np.uint32(0x7F800000)
_LOW16 = np.uint32(0xFFFF)
_HIGH16 = np.uint32(0xFFFF0000)
_QUIET = np.uint32(0x00400000)


def resolve_dtype(dtype: DTypeLike) -> tuple[np.dtype, bool]:
    """Return `(storage dtype, is_bf16)` for a dtype or a dtype name.

    bf16 resolves to float32 storage with the flag set, since that is how bf16 tiles live here.
    """
    if isinstance(dtype, str):
        key = dtype.lower()
        resolved = _ALIASES.get(key)
        if resolved is None:
            resolved = np.dtype(key)
        if resolved is BF16:
            return FP32, True
        return np.dtype(resolved), False
    return np.dtype(dtype), False


def _f64_to_f32_round_to_odd(x: np.ndarray) -> np.ndarray:
    """Narrow float64 to float32 with round-to-odd (sticky LSB).

    Rounding f64 -> f32 -> bf16 twice with RNE can be wrong (double rounding). Round-to-odd
    on the first step keeps "was inexact" in the LSB, and with 16 spare bits the second
    rounding, in any mode, is then the correctly rounded result.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(np.float32)
        wide = r.astype(np.float64)
        toward_zero = np.where(np.abs(wide) > np.abs(x), np.nextafter(r, np.float32(0)), r)
        inexact = toward_zero.astype(np.float64) != x
    bits = np.ascontiguousarray(toward_zero).view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32)


def _as_f32_bits(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.float64:
        x = _f64_to_f32_round_to_odd(x)
    elif x.dtype != np.float32:
        x = x.astype(np.float32)  # fp16 and small ints widen exactly
    return np.ascontiguousarray(x).view(np.uint32)


def _bf16_from_bits(u: np.ndarray, mode: str) -> np.ndarray:
    """Round float32 words `u` (uint32) to bf16 in `mode`, returning float32 values.

    float32 is sign-magnitude, so integer arithmetic on the magnitude bits rounds the
    magnitude; a carry out of the mantissa correctly bumps the exponent (and max finite
    rounds up to inf where IEEE says so).
    """
    low = u & _LOW16
    if mode == "rint":
        r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & _HIGH16
    elif mode == "round":
        r = (u + np.uint32(0x8000)) & _HIGH16
    elif mode == "trunc":
        r = u & _HIGH16
    elif mode in ("floor", "ceil"):
        negative = (u & _SIGN) != 0
        away = negative if mode == "floor" else ~negative
        bump = np.where(away & (low != 0), np.uint32(0x10000), np.uint32(0))
        r = (u & _HIGH16) + bump
    else:
        raise ValueError(f"unknown rounding mode {mode!r}; expected one of {ROUND_MODES}")
    nan = (u & _ABS) > _EXP_INF
    if nan.any():
        r = np.where(nan, (u | _QUIET) & _HIGH16, r)
    return r.astype(np.uint32, copy=False).view(np.float32)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 with round-to-nearest-even; return float32 holding the bf16 values.

    float64 input is rounded directly (no double rounding); NaN stays NaN (quietened, sign
    kept); overflow past the largest bf16 gives inf, as IEEE RNE does.
    """
    return _bf16_from_bits(_as_f32_bits(x), "rint")


def bf16_round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 to nearest with ties away from zero (for contrast with `to_bf16`)."""
    return _bf16_from_bits(_as_f32_bits(x), "round")


def is_bf16_representable(x: np.ndarray) -> bool:
    """True when every element of a float32 array is a bf16 value (low 16 bits zero)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    return bool(not np.any(x.view(np.uint32) & _LOW16))


def _round_float(x64: np.ndarray, target: np.dtype, mode: str) -> np.ndarray:
    """Round float64 values to float16/float32/float64 in `mode` (IEEE overflow to inf)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = x64.astype(target)
        if mode == "rint":
            return r
        wide = r.astype(np.float64)
        down = np.where(wide > x64, np.nextafter(r, target.type(-np.inf)), r)
        up = np.where(wide < x64, np.nextafter(r, target.type(np.inf)), r)
        if mode == "floor":
            return down
        if mode == "ceil":
            return up
        if mode == "trunc":
            return np.where(x64 >= 0, down, up)
        if mode == "round":
            mid = (down.astype(np.float64) + up.astype(np.float64)) * 0.5
            tie = (down != up) & (x64 == mid)
            return np.where(tie, np.where(x64 > 0, up, down), r)
    raise ValueError(f"unknown rounding mode {mode!r}; expected one of {ROUND_MODES}")


def _round_integral(x64: np.ndarray, mode: str) -> np.ndarray:
    if mode == "rint":
        return np.rint(x64)
    if mode == "floor":
        return np.floor(x64)
    if mode == "ceil":
        return np.ceil(x64)
    if mode == "trunc":
        return np.trunc(x64)
    if mode == "round":
        whole = np.trunc(x64)
        frac = x64 - whole  # exact for binary floating point
        return whole + np.where(np.abs(frac) >= 0.5, np.sign(x64), 0.0)
    raise ValueError(f"unknown rounding mode {mode!r}; expected one of {ROUND_MODES}")


def cast(x: np.ndarray, dtype: DTypeLike, mode: str = "rint") -> np.ndarray:
    """Convert `x` to `dtype`, rounding as `mode` says (see `ROUND_MODES`).

    - float -> bf16/fp16/fp32: correctly rounded in `mode`; overflow gives inf.
    - float -> int: rounded to an integer in `mode`, then **saturated** to the target range;
      NaN becomes 0. (The hardware converts with saturation; NumPy's `astype` is undefined
      there.)
    - int -> float: exact widening to float64, then rounded in `mode`.
    - int -> int: saturated.
    Always returns a new array: tiles have value semantics.
    """
    if mode not in ROUND_MODES:
        raise ValueError(f"unknown rounding mode {mode!r}; expected one of {ROUND_MODES}")
    x = np.asarray(x)
    target, bf16 = resolve_dtype(dtype)
    if bf16:
        if x.dtype.kind in "iub":
            x = x.astype(np.float64)
        return _bf16_from_bits(_as_f32_bits(x), mode)
    if x.dtype == target:
        return x.copy()
    if x.dtype.kind == "b":
        return x.astype(target)
    if target.kind == "f":
        if x.dtype.kind == "f" and x.dtype.itemsize < target.itemsize:
            return x.astype(target)  # widening is exact
        return _round_float(x.astype(np.float64), target, mode)
    if target.kind in "iu":
        info = np.iinfo(target)
        if x.dtype.kind in "iu":
            return np.clip(x.astype(np.int64), info.min, info.max).astype(target)
        hi = float(info.max) if info.bits < 64 else float(np.nextafter(2.0**63, 0.0))
        with np.errstate(invalid="ignore"):
            r = _round_integral(x.astype(np.float64), mode)
            r = np.nan_to_num(r, nan=0.0, posinf=hi, neginf=float(info.min))
            return np.clip(r, float(info.min), hi).astype(target)
    raise TypeError(f"cast to {target} is not supported")
