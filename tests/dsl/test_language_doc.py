"""docs/language.md is executable: every ```dsl block compiles (or fails with the code its
info string names, or produces exactly the edges it lists), and the page covers every
keyword of the grammar, every tile op of dsl/ops.py and every code of dsl/codes.py.

Info strings: ```` ```dsl ```` must compile cleanly; ```` ```dsl error=E305 ```` must fail
with exactly that code; ```` ```dsl edges=a>b:raw,b>c:explicit ```` (or ``edges=none``)
must compile with exactly those in-round edges.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dsl.codes import CODES
from dsl.frontend import compile_text
from dsl.ops import SIGNATURES
from dsl.parser import _parser
from lowering.source import CompileError

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCK = re.compile(r"^```dsl([^\n]*)\n(.*?)^```", re.S | re.M)
BLOCKS = [(TEXT[: m.start()].count("\n") + 1, m.group(1).strip(), m.group(2)) for m in BLOCK.finditer(TEXT)]


def test_the_page_has_examples():
    assert len(BLOCKS) >= 15


@pytest.mark.parametrize(("line", "info", "source"), BLOCKS, ids=[f"line{b[0]}" for b in BLOCKS])
def test_example(line: int, info: str, source: str):
    expected_error = re.search(r"error=(E\d+)", info)
    expected_edges = re.search(r"edges=(\S+)", info)
    file = f"docs/language.md:{line}"
    if expected_error:
        with pytest.raises(CompileError) as err:
            compile_text(source, file)
        assert sorted({d.code for d in err.value.diagnostics}) == [expected_error.group(1)]
        return
    graphs = compile_text(source, file)
    assert graphs, "a doc example defines at least one root layer"
    if expected_edges:
        want = [] if expected_edges.group(1) == "none" else expected_edges.group(1).split(",")
        got = [f"{e.src}>{e.dst}:{e.kind}" for e in graphs[-1].edges]
        assert sorted(got) == sorted(want)


def _dsl_text() -> str:
    return "\n".join(source for _, _, source in BLOCKS)


def test_every_keyword_of_the_grammar_is_shown_in_an_example():
    words: set[str] = set()
    for t in _parser().terminals:
        value = t.pattern.value
        if t.pattern.type == "str" and value.isidentifier():
            words.add(value)
        elif t.name in ("DIRECTION", "LOOP_KIND"):
            words.update(re.findall(r"[a-z_]+", value))
    words.discard("layer")  # every block has it
    code = re.sub(r"#[^\n]*", "", _dsl_text())
    missing = sorted(w for w in words if not re.search(rf"\b{w}\b", code))
    assert not missing, f"keywords without an example in docs/language.md: {missing}"


def test_every_tile_op_is_in_the_op_table():
    section = TEXT[TEXT.index("## Tile ops") : TEXT.index("## Integer semantics")]
    missing = sorted(op for op in SIGNATURES if f"`{op}" not in section and f" {op}`" not in section)
    assert not missing, f"ops of dsl/ops.py missing from the tile-op table: {missing}"


def test_the_code_table_matches_dsl_codes():
    rows = dict(re.findall(r"^\| (E\d{3}) \| ([^|]+) \|", TEXT, re.M))
    assert sorted(rows) == sorted(CODES)
    for code, entry in CODES.items():
        assert rows[code].strip() == entry.summary, code


def test_relative_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT):
        if "://" in target:
            continue
        assert (DOC.parent / target).exists(), target
