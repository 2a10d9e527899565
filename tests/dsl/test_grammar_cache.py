"""lark's analysis of the grammar is kept in the dslc cache directory between runs
(``dsl.parser._grammar_cache``); a damaged or foreign file there must never break parsing."""

from __future__ import annotations

import pytest

from dsl import parser

SOURCE = "layer tiny(D = 8) {\n  input x: f32[1, D]\n  output y: f32[1, D]\n  task t on aiv { y[:, :] = x[:, :] }\n}\n"


@pytest.fixture
def fresh_parser(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    parser._parser.cache_clear()
    yield tmp_path / "cache" / "dsl-grammar.lark-cache"
    parser._parser.cache_clear()


def test_the_analysis_is_written_once_and_read_back(fresh_parser):
    parser.parse(SOURCE, "tiny.dsl")
    written = fresh_parser.read_bytes()
    assert written.split(b"\n", 1)[0].isalnum()  # lark's hash of the grammar and its options
    parser._parser.cache_clear()
    assert parser.parse(SOURCE, "tiny.dsl").layers[0].name == "tiny"
    assert fresh_parser.read_bytes() == written  # read, not rebuilt


@pytest.mark.parametrize("damage", ["foreign", "truncated"])
def test_a_damaged_file_is_rebuilt(fresh_parser, damage):
    parser.parse(SOURCE, "tiny.dsl")
    good = fresh_parser.read_bytes()
    head = good.split(b"\n", 1)[0]
    damaged = b"not a hash\ngarbage" if damage == "foreign" else good[: len(head) + 40]
    fresh_parser.write_bytes(damaged)
    parser._parser.cache_clear()
    assert parser.parse(SOURCE, "tiny.dsl").layers[0].name == "tiny"
    rebuilt = fresh_parser.read_bytes()
    assert rebuilt != damaged and rebuilt.split(b"\n", 1)[0] == head
    parser._parser.cache_clear()
    parser.parse(SOURCE, "tiny.dsl")
    assert fresh_parser.read_bytes() == rebuilt  # whole again: read back, not rebuilt


def test_no_cache_where_the_directory_cannot_be_made(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DSLC_CACHE_DIR", str(blocker / "cache"))
    parser._parser.cache_clear()
    try:
        assert parser._grammar_cache() is False
        assert parser.parse(SOURCE, "tiny.dsl").layers[0].name == "tiny"
    finally:
        parser._parser.cache_clear()
