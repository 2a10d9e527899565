"""The proof that offsets per block keep the blocks of a grid apart (``lowering.checks.
block_stride``), which lets R505 skip listing the executions of large grids.

The proof must never say "apart" where two blocks meet: on small layers it is compared with
the brute-force answer (every pair of blocks, every element), and R505 must report the same
on every fixture and model with the proof on and off.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lintutil import FIXTURES, lint

import lowering.checks.races.data_indexed_rows_assumed_distinct as r506
import lowering.checks.races.overlapping_block_writes as r505
from dsl.frontend import compile_text
from lowering.checks.access_instances import hits
from lowering.checks.block_stride import blocks_apart

ROOT = Path(__file__).resolve().parents[2]

LAYER = """layer tiles(G = 8, S = 4, T = 64, TILE = 16) {{
  input  x: f32[1024, 64]
  output y: f32[1024, 64]
  task write spmd(G) on aiv {{
    {body}
  }}
}}
"""

CASES = {  # region -> whether every two blocks are apart (each one the proof decides)
    # one tile per block: apart
    "y[block * 16 : block * 16 + 16, :] = x[0:16, :]": True,
    # a tile and one row more: block b's last row is block b + 1's first
    "y[block * 16 : block * 16 + 17, :] = x[0:17, :]": False,
    # a loop inside each block's tile: apart
    "for i in range(2) { y[block * 32 + i * 16 : block * 32 + i * 16 + 16, :] = x[0:16, :] }": True,
    # the loop walks past the block's stride
    "for i in range(3) { y[block * 32 + i * 16 : block * 32 + i * 16 + 16, :] = x[0:16, :] }": False,
    # split-K partials: (block % S) * T + (block // S) * TILE, two tiles per split, in T = 64
    "y[(block % S) * T + (block // S) * TILE : (block % S) * T + (block // S) * TILE + TILE, :] = x[0:TILE, :]": True,
    # a 2-D tiling by digits: rows by block // 2, columns by block % 2
    "y[(block // 2) * 16 : (block // 2) * 16 + 16, (block % 2) * 32 : (block % 2) * 32 + 32] = x[0:16, 0:32]": True,
    # rows by block // 2 overlap by one: blocks 1 and 2 share row 16 (columns differ only
    # between blocks 0 and 1)
    "y[(block // 2) * 16 : (block // 2) * 16 + 17, (block % 2) * 32 : (block % 2) * 32 + 32] = x[0:17, 0:32]": False,
    # a digit that repeats: blocks 0 and 4 write the same tile
    "y[(block % 4) * 16 : (block % 4) * 16 + 16, :] = x[0:16, :]": False,
    # digits that do not tell the blocks apart: columns only by block % 2, rows not by block
    "y[0:16, (block % 2) * 32 : (block % 2) * 32 + 32] = x[0:16, 0:32]": False,
    # a loop that deals its iterations out to the blocks (a step of the grid): apart
    "for j in range(block, 32, G) { y[j * 16 : j * 16 + 16, :] = x[0:16, :] }": True,
    # a step below the grid: blocks 0 and 4 both take j = 4
    "for j in range(block, 32, 4) { y[j * 16 : j * 16 + 16, :] = x[0:16, :] }": False,
    # dealt out, but the tile repeats every 4 iterations
    "for j in range(block, 32, G) { y[(j % 4) * 16 : (j % 4) * 16 + 16, :] = x[0:16, :] }": False,
    # the start moves with an outer loop: block 0 at o = 1 and block 1 at o = 0 both take j = 1
    "for o in range(2) { for j in range(block + o, 32, G) { y[j * 16 : j * 16 + 16, :] = x[0:16, :] } }": False,
    # the offset moves with a loop: left to the enumeration
    "for i in range(2) { y[block * i * 16 : block * i * 16 + 16, :] = x[0:16, :] }": False,
}


def _brute_force(graph, task, acc) -> bool:
    found = hits(graph, task, acc)
    cells: dict[tuple, int] = {}
    for h in found:
        ranges = [range(lo, hi, step) for lo, hi, step in h.region]
        rows, cols = ranges
        for r in rows:
            for c in cols:
                owner = cells.setdefault((r, c), h.block)
                if owner != h.block:
                    return False
    return True


@pytest.mark.parametrize("body", list(CASES), ids=range(len(CASES)))
def test_the_proof_agrees_with_every_pair_of_blocks(body):
    (graph,) = compile_text(LAYER.format(body=body), "tiles.dsl")
    task = graph.task("write")
    (acc,) = [a for a in task.accesses if a.tensor == "y"]
    truth = _brute_force(graph, task, acc)
    assert truth == CASES[body]  # the cases say what every pair of blocks shows
    assert blocks_apart(graph, acc, acc, task.blocks) == truth


# the race fixtures, the seed layers and the models: the grids the proof is for
_GRIDS = re.compile(r"spmd\(")
LAYERS = sorted(
    p
    for p in [
        *(FIXTURES / "rules").glob("R50*/*.dsl"),
        *(FIXTURES / "seed").glob("*.dsl"),
        *(ROOT / "models").rglob("*.dsl"),
    ]
    if _GRIDS.search(p.read_text(encoding="utf-8"))
)


@pytest.mark.parametrize("path", LAYERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_race_rules_report_the_same_with_and_without_the_proof(path, monkeypatch):
    with_proof = lint(path, codes={"R505", "R506"})
    monkeypatch.setattr(r505, "blocks_apart", lambda *a: False)
    monkeypatch.setattr(r506, "blocks_apart", lambda *a: False)
    without = lint(path, codes={"R505", "R506"})
    assert sorted((d.code, d.span.line, d.span.col, d.message) for d in with_proof) == sorted(
        (d.code, d.span.line, d.span.col, d.message) for d in without
    )
