"""Pieces of the MPI backend that need no MPI: the rank layout and lazy zeroing."""

from __future__ import annotations

import mmap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.mpi.layout import RankLayout
from runtime.mpi.windows import zero_lazily


@given(st.integers(1, 70), st.integers(1, 70))
def test_the_layout_gives_every_rank_to_one_process_in_consecutive_even_blocks(nranks, nprocs):
    if nprocs > nranks:
        with pytest.raises(ValueError, match="every process must host at least one rank"):
            RankLayout(nranks, nprocs)
        return
    layout = RankLayout(nranks, nprocs)
    blocks = [layout.ranks_of(p) for p in range(nprocs)]
    assert [r for b in blocks for r in b] == list(range(nranks))
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1
    for p, b in enumerate(blocks):
        for i, r in enumerate(b):
            assert layout.owner(r) == p and layout.slot(r) == i


def test_the_layout_names_what_a_process_hosts():
    assert RankLayout(16, 4).describe(1) == "ranks 4-7"
    assert RankLayout(5, 2).describe(1) == "ranks 3-4"
    assert RankLayout(2, 2).describe(1) == "rank 1"


@pytest.mark.parametrize("kind", ["private", "shared"])
@pytest.mark.parametrize("start, size", [(0, 3 << 20), (5, (3 << 20) + 11), (1, 100)])
def test_zero_lazily_zeroes_private_and_shared_memory_at_any_alignment(kind, start, size):
    if kind == "private":
        raw = np.empty(start + size + 7, np.uint8)
    else:
        raw = np.frombuffer(mmap.mmap(-1, start + size + 7), np.uint8)
    raw[:] = 0xA5
    zero_lazily(raw[start : start + size])
    assert not raw[start : start + size].any()
    assert (raw[:start] == 0xA5).all() and (raw[start + size :] == 0xA5).all()  # nothing outside
