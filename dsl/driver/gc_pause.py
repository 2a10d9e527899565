"""Checking a file with Python's cyclic garbage collector paused.

A check builds a large graph that lives until the file is done (43,016 tasks and their
accesses for the largest real PyPTO program) and then allocates millions of short-lived
objects over it. Each collection of the oldest generation walks every live object, so with
the collector on, a quarter to a third of a check's CPU goes to walks that find next to
nothing (measured: `bench/README.md`, "Garbage collection"): the analysis makes few reference
cycles. So the collector is paused for one file and run once when the file is done, which
frees whatever cycles there were before the next file starts.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collection_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off; restore it and collect once after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()
