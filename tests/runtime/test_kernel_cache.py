"""The kernel cache (``runtime.loader``): entries are sealed, and a damaged one is detected and
rendered again instead of being imported (or trusted) forever."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import dsl
from runtime import loader

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "tests" / "fixtures" / "run" / "splitk_reduce.dsl"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_an_entry_ends_with_its_seal_and_has_an_ordinary_mode(cache):
    layer = dsl.load(LAYER)
    text = layer.module_path.read_text()
    assert layer.module_path.parent == cache
    assert text.splitlines()[-1].startswith(loader.CACHE_SEAL)
    assert stat.S_IMODE(layer.module_path.stat().st_mode) & 0o044  # not the 0600 of a temporary


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t[: len(t) // 2],  # truncated
        lambda t: t.replace("PROGRAM = Program(", "PROGRAM = None  # (", 1),  # edited
        lambda t: "garbage\x00\x01",  # overwritten
        lambda t: t.replace(loader.CACHE_SEAL, "# no seal "),  # seal lost
    ],
    ids=["truncated", "edited", "garbage", "unsealed"],
)
def test_a_damaged_entry_is_rendered_again(cache, damage):
    first = dsl.load(LAYER)
    good = first.module_path.read_text()
    first.module_path.write_text(damage(good))
    again = dsl.load(LAYER)
    assert again.module_path == first.module_path
    assert again.module_path.read_text() == good
    out = again.run(again.make_inputs(0))
    assert again.validate(again.make_inputs(0), out).passed


def test_a_cache_directory_that_cannot_be_written_is_e107(tmp_path, monkeypatch, capsys):
    from dsl.driver.cli import main

    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "file" / "cache"))
    assert main(["run", str(LAYER)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'file' / 'cache'}: E107 {tmp_path / 'file'} is a file, not a directory" in err
    assert "internal error" not in err
