"""Sort, seed and view facts the reader recovers from real-looking code (issue 10, items 4-5).

Fixtures under ``tests/fixtures/pypto/reader/``, written for dslc; each finding is asserted by
code, line and column, and each clean case would fail if the fact were lost.
"""

from __future__ import annotations

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

READER = PYPTO_FIXTURES / "reader"


def findings(name: str, **overrides: int):
    result = read_pypto(READER / name / "model.py", overrides=overrides or None)
    assert [d for d in result.diagnostics if d.code != "P001"] == []
    out = [*result.diagnostics]
    for g in result.graphs:
        out += run_rules_safely(g, CheckContext(g), set(all_rules()))
    return sorted((d.code, d.span.line, d.span.col) for d in out), out


def test_seeds_init_value_and_on_core_seed_with_offsets_recomputed_per_loop():
    triples, out = findings("seeds")
    assert triples == [("N202", 29, 16)]  # only `lost`: counts is init_value=0, hist seeded on-core
    (d,) = out
    assert d.message.startswith("count adds atomically into lost[0:64, 0:1]")


def test_format_two_merge_and_valid_extent_assigned_in_if_else():
    triples, out = findings("sorting")
    assert triples == [("S302", 31, 9)]  # route_unsorted only
    assert "mrgsort of 2 operands (format 2) merges lists that are not sorted" in out[0].message


def test_the_bound_of_finite_candidates_is_the_cap_not_the_row_width():
    triples, out = findings("sorting", CAP=200)
    assert triples == [("S301", 45, 15), ("S302", 31, 9)]
    s301 = next(d for d in out if d.code == "S301")
    assert "up to 200 finite candidates" in s301.message  # the cap, not PAD=256


def test_tile_used_after_its_scope_is_a_buffer_its_task_allocates():
    triples, out = findings("scope_tiles")
    # only the manual hand-off: the runtime adds no creator edge inside a manual scope
    assert triples == [("R501", 35, 13)]
    assert out[0].message.startswith("RAW race on `mm_manual.part`: wr_manual reads")
    (g,) = read_pypto(READER / "scope_tiles" / "model.py").graphs
    acc = g.tensors["mm[64].acc"]
    assert (acc.created_by, acc.dims, acc.dtype) == ("mm[64]", (16, 64), "f32")
    creators = {(e.src, e.dst) for e in g.edges if e.kind == "creator"}
    assert creators == {(f"mm[{q}]", f"wr[{q}]") for q in range(0, 512, 64)}
    (write,) = [a for a in g.task("wr[64]").accesses if a.tensor == "y"]
    assert [str(r) for r in write.region] == ["0:B", "64:(64 + T)"]  # its own column tile only


def test_a_long_host_loop_is_abandoned_and_the_rest_of_the_read_goes_on():
    result = read_pypto(READER / "host_loop" / "model.py")
    notes = [(d.code, d.span.line, d.span.col) for d in result.diagnostics]
    assert notes == [("P001", 16, 5)]
    assert "a host-code loop past 20000 interpreted statements" in result.diagnostics[0].message
    (g,) = result.graphs
    assert g.env()["T_DYN"] == 64  # from the specs the harness builds after the loop
    assert [(t.name, t.blocks) for t in g.tasks] == [("scale", 4)]


def test_chunks_stored_whole_at_loop_offsets_are_not_packed_rows():
    triples, _ = findings("tiled_valid")
    assert triples == []


def test_extern_kernel_arguments_on_a_grid_are_opaque_per_block():
    triples, _ = findings("extern_grid")
    assert triples == [("P001", 24, 21)]  # the unseen body; no R505 from whole arguments
    (g,) = read_pypto(READER / "extern_grid" / "model.py").graphs
    update = g.task("update")
    assert update.blocks == 8 and all(a.opaque for a in update.accesses)
    assert [(e.src, e.dst, e.reason) for e in g.edges] == [("update", "copy", "RAW workspace[0:1024]")]


def test_bare_tensor_parameters_take_shape_and_dtype_from_the_specs():
    triples, _ = findings("bare_tensor")
    assert triples == []
    (g,) = read_pypto(READER / "bare_tensor" / "model.py").graphs
    assert {n: (t.dtype, t.dims) for n, t in g.tensors.items()} == {
        "w": ("bf16", (32, 256)),
        "out": ("f32", (32, 256)),
    }
    assert g.task("copy").blocks == 2
