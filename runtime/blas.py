"""One BLAS thread while the simulator runs kernels.

A simulated layer does thousands of small GEMMs one after another; OpenBLAS's worker threads
only add contention there (10-30x slower on a loaded 2-core machine). The thread count is set
for the duration of a run and restored afterwards, through OpenBLAS's own API, so importing
dslc changes nothing in the caller's process (no environment variable is set). Where NumPy's
BLAS is not the OpenBLAS of its wheel, this does nothing: it changes speed, never results.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np


@cache
def _openblas() -> tuple[Callable[[], int], Callable[[ctypes.c_int], None]] | None:
    """(get, set) of the thread count of the OpenBLAS bundled with NumPy, or None."""
    pattern = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "libscipy_openblas*.so*")
    for path in sorted(glob.glob(pattern)):
        try:
            lib = ctypes.CDLL(path)
            return lib.scipy_openblas_get_num_threads64_, lib.scipy_openblas_set_num_threads64_
        except (OSError, AttributeError):
            continue
    return None


def blas_threads() -> int | None:
    """The current OpenBLAS thread count (None when it cannot be read)."""
    fns = _openblas()
    return int(fns[0]()) if fns is not None else None


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    fns = _openblas()
    if fns is None:
        yield
        return
    get, put = fns
    previous = int(get())
    put(ctypes.c_int(1))
    try:
        yield
    finally:
        put(ctypes.c_int(previous))
