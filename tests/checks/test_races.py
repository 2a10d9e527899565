"""Race rules (R501-R506): what each finding says, and the cases beyond the fixtures (every
finding on the rule fixtures is asserted by tests/checks/test_rule_fixtures.py)."""

from __future__ import annotations

import dataclasses

import pytest
from lintutil import FIXTURES, lint, triples

from dsl.frontend import compile_file
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext

RULES = FIXTURES / "rules"
RACE_CODES = {"R501", "R502", "R503", "R504", "R505"}


def test_r501_flags_war_between_gather_and_writeback():
    diags = lint(RULES / "R501" / "bad.dsl")
    assert triples(diags) == [("R501", 12, 7)]
    (d,) = diags
    assert d.message.startswith("WAR race on `kv`: writeback[0] writes kv[0:16, 0:32] that gather[0] reads")
    assert "never adds a write-after-read edge" in d.message
    assert "10 pairs of task instances" in d.message
    assert d.hint.startswith("add `after gather[i]` to task writeback[i]")


def test_r501_respects_transitive_order(tmp_path):
    # writeback is ordered after gather only through `mid`: no finding
    src = tmp_path / "chain.dsl"
    src.write_text(
        "layer chain(T = 16, D = 8) {\n"
        "  input x: f32[T, D]\n  inout kv: f32[T, D]\n  output a: f32[T, D]\n  output b: f32[T, D]\n"
        "  task gather on aiv { a[:, :] = kv[:, :] }\n"
        "  task mid on aiv after gather { b[:, :] = x[:, :] }\n"
        "  task writeback on aiv after mid { kv[:, :] = x[:, :] }\n"
        "}\n"
    )
    assert lint(src, codes=RACE_CODES) == []


@pytest.mark.parametrize(
    ("rows", "shown"),
    [("0 : T", True), ("0 : 16", False)],  # the reader covers every row the scatter can reach, or not
)
def test_r501_says_when_an_overlap_rests_on_a_region_widened_over_data(tmp_path, rows, shown):
    src = tmp_path / "scatter.dsl"
    src.write_text(
        "layer scatter(T = 64, D = 32) {\n"
        "  input idx: i32[1, 1]\n  input x: f32[T, D]\n  inout y: f32[T, D]\n  output out: f32[T, D]\n"
        f"  task gather on aiv {{ out[{rows}, :] = y[{rows}, :] }}\n"
        "  task scatter on aiv {\n    let r = read(idx[0, 0])\n    y[r : r + 1, :] = x[0:1, :]\n  }\n"
        "}\n"
    )
    (d,) = lint(src, codes={"R501"})
    assert (d.code, d.span.line, d.span.col) == ("R501", 9, 5)
    assert d.message.startswith("WAR race on `y`: scatter writes y[0:")
    possible = "(possible, not shown: a region here depends on data or on a loop bound the analysis cannot"
    assert (possible in d.message) is not shown


def test_r501_is_a_note_naming_the_tables_when_both_regions_are_chosen_by_data(tmp_path):
    """A ring-cache commit at a slot from `slot_mapping` against a gather of the rows of
    `block_table`: nothing but the data can make them meet, so the lint states the assumption
    (note) instead of reporting an error; with the gather's rows exact it stays an error."""
    src = tmp_path / "ring.dsl"
    src.write_text(
        "layer ring(T = 64, D = 32) {\n"
        "  input slot_mapping: i32[1, 1]\n  input block_table: i32[1, 1]\n  input x: f32[T, D]\n"
        "  inout cache: f32[T, D]\n  output out: f32[16, D]\n"
        "  task gather on aiv {\n    let p = read(block_table[0, 0])\n"
        "    out[:, :] = cache[p : p + 16, :]\n  }\n"
        "  task commit on aiv {\n    let s = read(slot_mapping[0, 0])\n    cache[s : s + 1, :] = x[0:1, :]\n  }\n"
        "}\n"
    )
    (d,) = lint(src, codes={"R501"})
    assert (d.code, d.severity.value, d.span.line, d.span.col) == ("R501", "note", 13, 5)
    assert d.message.startswith("WAR race on `cache`: commit writes cache[0:")
    assert (
        "(not shown: both regions are chosen by `block_table` and `slot_mapping` and taken over their whole "
        "extent; the lint assumes the data keeps them apart" in d.message
    )
    src.write_text(src.read_text(encoding="utf-8").replace("cache[p : p + 16, :]", "cache[0:16, :]"))
    (d,) = lint(src, codes={"R501"})
    assert (d.code, d.severity.value) == ("R501", "error")
    assert "(possible, not shown:" in d.message


def test_r501_names_manual_tasks(tmp_path):
    src = tmp_path / "manual.dsl"
    src.write_text(
        "layer m(T = 16, D = 8) {\n"
        "  input x: f32[T, D]\n  scratch s: f32[T, D]\n  output y: f32[T, D]\n"
        "  task produce on aiv { s[:, :] = x[:, :] }\n"
        "  task consume on aiv manual { y[:, :] = s[:, :] }\n"
        "}\n"
    )
    diags = lint(src, codes=RACE_CODES)
    assert triples(diags) == [("R501", 6, 42)]
    assert "consume is `manual`, so only its `after` edges exist" in diags[0].message
    assert diags[0].hint == "add `after produce` to task consume"


def _as_views(path):
    (graph,) = compile_file(path)
    graph.tensors["kv_flat"] = dataclasses.replace(graph.tensors["kv_flat"], view_of="kv", view_offset=0)
    return graph


def test_r502_flags_war_through_two_views_of_one_buffer():
    graph = _as_views(RULES / "R502" / "two_names.dsl")
    diags = run_rules(graph, CheckContext(graph))
    assert triples(diags) == [("R502", 15, 5)]
    (d,) = diags
    assert d.message.startswith("WAR through two views of buffer `kv`: writeback writes `kv_flat`")
    assert "share bytes 0:2048 of `kv`" in d.message
    assert d.hint == "access `kv` through one name, or add `after gather` to task writeback"


def test_r502_good_fixture_is_clean_and_the_language_cannot_alias():
    graph = _as_views(RULES / "R502" / "two_names_ordered.dsl")
    assert run_rules(graph, CheckContext(graph)) == []
    (plain,) = compile_file(RULES / "R502" / "two_names.dsl")  # without the view: two buffers
    assert run_rules(plain, CheckContext(plain), {"R502"}) == []


def test_r502_flags_a_call_that_binds_one_tensor_twice_and_r501_leaves_it():
    (d,) = lint(RULES / "R502" / "bad_call.dsl")
    assert (d.code, d.span.line, d.span.col) == ("R502", 10, 22)
    assert d.message.startswith(
        "WAR through two names of buffer `buf`: the call on line 16 binds it as `c.src`"
    )
    assert "c.high writes buf[32:64, 0:16] and c.low reads it" in d.message
    assert d.hint == "bind distinct tensors in the call, or add `after c.low` to task c.high"
    assert lint(RULES / "R502" / "good_call.dsl") == []


def test_r503_flags_pure_out_read_back_and_unchained_manual_dep_read():
    diags = lint(RULES / "R503" / "bad.dsl")
    assert triples(diags) == [("R503", 12, 27), ("R503", 18, 20)]
    out, dep = diags
    assert "pack[1] writes buf[16:20, 0:32] as a pure Out (OUTPUT_EXISTING) after pack[0]" in out.message
    assert "use reads whichever write lands last" in out.message
    assert out.hint.startswith("declare `buf` inout")
    assert "manual_dep `offsets` that cumsum writes" in dep.message
    assert dep.hint == "add `after cumsum` to task gather"


def test_r504_flags_tile_store_and_scalar_write_into_one_tensor():
    diags = lint(RULES / "R504" / "bad.dsl")
    assert triples(diags) == [("R504", 8, 5)]
    assert diags[0].severity == "warning"
    assert "stores tiles into it at line 7" in diags[0].message


def test_r505_flags_blocks_of_one_grid_writing_the_same_elements():
    diags = lint(RULES / "R505" / "bad.dsl")
    assert triples(diags) == [("R505", 9, 5), ("R505", 12, 5)]
    rmw, waw = diags
    assert "blocks 0 and 1 both do a non-atomic `+=` on total[0:1, 0:32]" in rmw.message
    assert "blocks 0 and 1 both write flag[0:1, 0:32]" in waw.message


def test_r505_ignores_disjoint_strided_blocks(tmp_path):
    # block b writes columns b, b + 4, b + 8, ...: the hulls overlap, the elements do not
    src = tmp_path / "strided.dsl"
    src.write_text(
        "layer s(T = 8, D = 32) {\n  input x: f32[T, D]\n  output y: f32[T, D]\n"
        "  task t spmd(4) on aiv { y[:, block : D : 4] = x[:, block : D : 4] }\n}\n"
    )
    assert lint(src, codes=RACE_CODES) == []


def test_r506_names_the_table_the_rows_come_from_and_the_assumption():
    (d,) = lint(RULES / "R506" / "bad.dsl")
    assert (d.code, d.span.line, d.span.col, d.severity.value) == ("R506", 12, 7, "note")
    assert d.message == (
        "update (spmd 4, AIV): the rows of state written here come from `page_table`; R505 cannot check "
        "rows chosen by data and assumes the blocks write distinct rows: rows from `page_table` must be distinct"
    )
    assert d.hint.startswith("make `page_table` map each block to its own rows (an injective table)")


def test_r506_assumption_is_what_keeps_the_schedules_apart(tmp_path, monkeypatch):
    """The note is about a real hazard: with a folded table the blocks of bad.dsl race (the
    state depends on the schedule), with an injective one every schedule gives one result."""
    import numpy as np

    from dsl.driver.api import compile_layer

    monkeypatch.setenv("DSLC_CACHE_DIR", str(tmp_path / "cache"))
    layer = compile_layer(RULES / "R506" / "bad.dsl")
    rows = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)

    def states(table):
        inputs = {
            "rows": rows,
            "page_table": table.reshape(1, 64).astype(np.int32),
            "state": np.zeros((64, 32), np.float32),
        }
        return {layer.run(inputs, policy="random", seed=s).outputs[0]["state"].tobytes() for s in range(6)}

    assert len(states((np.arange(64) * 5 + 3) % 64)) == 1  # 5 is coprime with 64: injective
    assert len(states((np.arange(64) * 16 + 3) % 64)) > 1  # 64 rows onto 4


def test_r505_block_box_prefilter_never_hides_an_overlap_between_blocks():
    """The per-block bounding boxes R505 compares first are a necessary condition: whenever two
    blocks' executions share an element, their boxes meet (random 2-D progressions)."""
    import random

    from lowering.checks.access_instances import Hit, first_overlap
    from lowering.checks.races.overlapping_block_writes import _block_hulls_meet

    rng = random.Random(7)
    seen_overlap = seen_apart = 0
    for _ in range(400):
        found = []
        for block in range(rng.randint(2, 4)):
            for _ in range(rng.randint(1, 4)):
                region = []
                for _dim in range(2):
                    lo = rng.randint(0, 24)
                    step = rng.choice((1, 1, 2, 3))
                    region.append((lo, lo + rng.randint(1, 6) * step, step))
                found.append(Hit("t", None, 0, 0, block, 0, tuple(region), True, False))  # type: ignore[arg-type]
        pair = first_overlap(found, found, accept=lambda a, b: a.block != b.block)
        if pair is not None:
            seen_overlap += 1
            assert _block_hulls_meet(found, found)
        elif not _block_hulls_meet(found, found):
            seen_apart += 1
    assert seen_overlap > 50 and seen_apart > 10  # both outcomes were exercised
