"""The reduction tree of a lowered ``reduce_sum``, for goldens that must match bit for bit.

A lowered reduction adds the per-split partials in ascending split order with the same
tile op the kernels use: ``((p0 + p1) + p2) + ...`` in the partials' dtype. A golden that
computes its partials the kernel's way and folds them with :func:`ascending_sum` therefore
equals the kernel exactly (docs/runtime-semantics.md §17.3: the golden must mirror the kernel's
tree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from runtime import tileops


def ascending_sum(parts: Sequence[np.ndarray]) -> np.ndarray:
    """((p0 + p1) + p2) + ... with the kernels' elementwise add; no zero seed."""
    if not parts:
        raise ValueError("ascending_sum needs at least one partial")
    acc = np.array(parts[0])
    for p in parts[1:]:
        acc = tileops.add(acc, p)
    return acc


def reduce_splits(split: Callable[[int], np.ndarray], count: int) -> np.ndarray:
    """Evaluate a lowered ``reduce_sum s in range(count) { return split(s) }`` with its tree."""
    return ascending_sum([split(s) for s in range(count)])
