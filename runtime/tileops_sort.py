"""`sort32`, `mrgsort`, lane gathers and top-k extraction, with the ISA's semantics.

The ISA (docs/runtime-semantics.md §11.2-§11.3) fixes the layout and the limits:

- A sorted row is **interleaved (value, index) records**: even columns hold the fp32 value,
  odd columns hold the uint32 index payload. We store the payload **as its raw bits** in the
  float32 lane (it is *not* converted to a float value), exactly as the hardware does; read it
  back with `gather_lanes(pairs, "P1010", INT32)`, which reinterprets the bits. Never do
  arithmetic on a pairs row.
- `sort32` sorts every run of 32 records descending.
- `mrgsort(pairs, block_len)` counts `block_len` in **columns** (two per record). Each repeat
  merges 4 consecutive lists of block_len columns into one; it needs block_len % 64 == 0,
  valid columns % (4 * block_len) == 0, 1..255 repeats, and a single row.

The merge is emulated as the hardware performs it, **not** as a sort: it takes the largest
head of the 4 lists at each step. On sorted lists the two agree; on lists that are not sorted
(a chain that skips a stage) a real merge yields a row that is not sorted, and so does this
emulation. Vectorised with an exact characterisation of the k-way merge: an element leaves
right after the nearest earlier element of its list that is <= it, so the output is the lists
stably sorted (descending) by each element's running prefix minimum, ties going to the lower
list, then to the earlier position.

Ties: equal values keep their input order, in `sort32` and (lower list first) in `mrgsort`.
With the usual ramp payload (`arange`) that is "lower index first". The hardware's tie order
is not documented upstream; this is our decision. -0.0 and +0.0 compare equal. NaN
ordering is unspecified (do not sort NaN).
"""

from __future__ import annotations

import numpy as np

from runtime.tileops_cast import INT32, DTypeLike, resolve_dtype

__all__ = ["sort32", "mrgsort", "gather_lanes", "topk_from_sorted", "MAX_MRGSORT_REPEATS"]

MAX_MRGSORT_REPEATS = 255
_SIGN = np.uint32(0x80000000)


def _descending_key(values: np.ndarray) -> np.ndarray:
    """Map float32 values to uint32 keys whose ascending order is the values' descending order."""
    v = np.ascontiguousarray(values, dtype=np.float32) + np.float32(0.0)  # -0.0 -> +0.0
    u = v.view(np.uint32)
    ascending = np.where(u & _SIGN, ~u, u | _SIGN)
    return ~ascending


def sort32(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Sort each run of 32 records of every row descending; return interleaved pairs [M, 2N].

    `values` is float32 [M, N] with N % 32 == 0; `indices` is a uint32/int32 payload of the
    same shape (usually `arange(0, (1, N), UINT32)`), stored as raw bits in the odd lanes.
    """
    if values.dtype != np.float32:
        raise TypeError(f"sort32: values must be float32, got {values.dtype}")
    if indices.dtype not in (np.uint32, np.int32):
        raise TypeError(f"sort32: indices must be uint32 or int32, got {indices.dtype}")
    if values.ndim != 2 or values.shape != indices.shape:
        raise ValueError(
            f"sort32: need 2-D values and indices of one shape, got {values.shape}, {indices.shape}"
        )
    m, n = values.shape
    if n % 32:
        raise ValueError(f"sort32: the row length {n} is not a multiple of 32")
    runs = (m, n // 32, 32)
    order = np.argsort(_descending_key(values).reshape(runs), axis=-1, kind="stable")
    out = np.empty((m, n, 2), dtype=np.uint32)
    for lane, src in enumerate((values, indices)):
        words = np.ascontiguousarray(src).view(np.uint32).reshape(runs)
        out[:, :, lane] = np.take_along_axis(words, order, axis=-1).reshape(m, n)
    return out.reshape(m, 2 * n).view(np.float32)


def mrgsort(pairs: np.ndarray, block_len: int, valid_cols: int | None = None) -> np.ndarray:
    """Merge every 4 consecutive sorted lists of `block_len` columns into one (format 1).

    `pairs` is one interleaved row [1, C] float32. Only the first `valid_cols` columns (all by
    default) take part; the rest is copied through. Raises ValueError naming the violated ISA
    constraint.
    """
    if pairs.dtype != np.float32:
        raise TypeError(f"mrgsort: pairs must be float32, got {pairs.dtype}")
    if pairs.ndim != 2 or pairs.shape[0] != 1:
        raise ValueError(f"mrgsort: needs exactly one row, got shape {pairs.shape}")
    cols = pairs.shape[1]
    valid = cols if valid_cols is None else int(valid_cols)
    if not 0 < valid <= cols:
        raise ValueError(f"mrgsort: valid_cols={valid} outside (0, {cols}]")
    if block_len <= 0 or block_len % 64:
        raise ValueError(f"mrgsort: constraint block_len % 64 == 0 violated (block_len={block_len})")
    if valid % (4 * block_len):
        raise ValueError(
            f"mrgsort: constraint valid columns % (4*block_len) == 0 violated "
            f"(valid columns={valid}, 4*block_len={4 * block_len})"
        )
    repeats = valid // (4 * block_len)
    if repeats > MAX_MRGSORT_REPEATS:
        raise ValueError(
            f"mrgsort: constraint repeats <= {MAX_MRGSORT_REPEATS} violated "
            f"(valid columns / (4*block_len) = {repeats})"
        )
    rec = block_len // 2  # records per list
    words = np.ascontiguousarray(pairs[0, :valid]).view(np.uint32).reshape(repeats, 4 * rec, 2)
    key = _descending_key(words[:, :, 0].view(np.float32)).reshape(repeats, 4, rec)
    run_key = np.maximum.accumulate(key, axis=-1).reshape(repeats, 4 * rec)  # prefix min of values
    order = np.argsort(run_key, axis=-1, kind="stable")
    merged = np.take_along_axis(words, order[:, :, None], axis=1)
    out = pairs.copy()
    out[0, :valid] = merged.reshape(valid).view(np.float32)
    return out


def gather_lanes(x: np.ndarray, pattern: str, output_dtype: DTypeLike | None = None) -> np.ndarray:
    """De-interleave lanes: "P0101" keeps the even lanes (values), "P1010" the odd (payloads).

    With `output_dtype` of the same width the bits are reinterpreted, not converted, so
    `gather_lanes(pairs, "P1010", INT32)` returns the index payloads.
    """
    if pattern == "P0101":
        lanes = x[..., 0::2]
    elif pattern == "P1010":
        lanes = x[..., 1::2]
    else:
        raise ValueError(f"gather_lanes: unknown mask pattern {pattern!r}; expected 'P0101' or 'P1010'")
    lanes = np.ascontiguousarray(lanes)
    if output_dtype is None:
        return lanes
    target, _ = resolve_dtype(output_dtype)
    if target.itemsize != lanes.dtype.itemsize:
        raise TypeError(f"gather_lanes: cannot reinterpret {lanes.dtype} lanes as {target}")
    return lanes.view(target)


def topk_from_sorted(pairs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Read the first k records of a sorted pairs row: (values float32 [M,k], indices int32 [M,k]).

    Correct only when the first sorted run is at least k records long *and* covers every
    finite candidate; that is the caller's proof obligation (rule S301), not checked here.
    """
    if not 0 < 2 * k <= pairs.shape[-1]:
        raise ValueError(f"topk_from_sorted: k={k} needs 2k columns, row has {pairs.shape[-1]}")
    head = pairs[..., : 2 * k]
    return gather_lanes(head, "P0101"), gather_lanes(head, "P1010", INT32)
