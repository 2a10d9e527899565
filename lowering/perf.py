"""Keeping the garbage collector out of passes that build large acyclic structures
(the front end's IR, the PyPTO reader's graph, the lint's analysis caches).

Measured on real PyPTO code (bench/README.md, "Garbage collection"): with the collector on,
a quarter to a third of reading a model file and running the rules on it went to full
collections that walk the whole graph and find next to nothing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Suspend the cyclic garbage collector while a large acyclic structure is built.

    Parsing and elaboration allocate millions of small immutable nodes that all stay alive;
    every full collection rescans all of them, which made a 50k-task layer quadratic.
    Reference counting still frees everything that is not cyclic; cyclic garbage made
    meanwhile waits for the next full collection. Nesting is harmless: the collector is
    re-enabled only by the outermost pause that disabled it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Move everything allocated meanwhile straight to the oldest generation
            # (freeze + unfreeze is two list splices): otherwise the next young
            # collection would traverse the whole new IR once more.
            gc.freeze()
            gc.unfreeze()
            gc.enable()
