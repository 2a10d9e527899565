"""`dslc check` runs each file with the cyclic garbage collector paused (dsl/driver/gc_pause.py):
off while the file is checked, back on after, and the cycles a file left collected before the
next file starts."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from dsl.driver import cli
from dsl.driver.gc_pause import collection_paused

ROOT = Path(__file__).resolve().parents[2]
LAYERS = [
    ROOT / "tests" / "fixtures" / "layers" / "split_k.dsl",
    ROOT / "tests" / "fixtures" / "layers" / "moe_dispatch.dsl",
]


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_each_file_is_checked_with_the_collector_paused(monkeypatch, capsys):
    seen: list[bool] = []
    real = cli.lint_file

    def watched(session, path, cfg):
        seen.append(gc.isenabled())
        return real(session, path, cfg)

    monkeypatch.setattr(cli, "lint_file", watched)
    assert gc.isenabled()
    assert cli.main(["check", *map(str, LAYERS)]) in (0, 1)
    assert seen == [False, False] and gc.isenabled()


def test_the_cycles_a_file_left_are_freed_when_it_is_done():
    """Even a cycle that has aged into the oldest generation (which the collector, back on,
    would not walk again for a long time) is freed once the file is done."""
    with collection_paused():
        node = _Node()
        gc.collect()  # `node` survives: it is in the oldest generation now
        cycle = weakref.ref(node)
        del node
    assert cycle() is None


def test_the_collector_comes_back_when_the_check_raises():
    with pytest.raises(RuntimeError), collection_paused():
        assert not gc.isenabled()
        raise RuntimeError("a reader bug")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
