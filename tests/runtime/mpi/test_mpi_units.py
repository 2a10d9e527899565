"""Pieces of the MPI backend that need no MPI: the rank layout and lazy zeroing."""

from __future__ import annotations

import mmap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.mpi.layout import RankLayout
from runtime.mpi.windows import basic_region, zero_lazily


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


def _index(draw, shape):
    idx = []
    for n in shape[: draw(st.integers(0, len(shape)))]:
        if draw(st.booleans()):
            idx.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = draw(st.none() | st.integers(-3, 3).filter(bool))
            idx.append(slice(draw(bound), draw(bound), step))
    return tuple(idx)


@given(st.data())
def test_the_region_of_a_basic_index_is_the_view_numpy_makes(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    array = np.zeros(shape, np.float32)
    idx = _index(data.draw, shape)
    off, got_shape, strides = basic_region(idx, array.shape, array.strides)
    view = array[(*idx, Ellipsis)]
    assert got_shape == view.shape
    if view.size:
        assert off == view.ctypes.data - array.ctypes.data and strides == view.strides


def test_the_region_of_an_index_out_of_bounds_is_an_index_error_and_others_fall_back():
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        basic_region((0, 4), (3, 4), (16, 4))
    for odd in ((np.array([0, 1]),), (True,), (Ellipsis, 0), (None,)):
        assert basic_region(odd, (3, 4), (16, 4)) is None
