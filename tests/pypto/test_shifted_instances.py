"""Instances of one kernel at constant offsets share R505's verdict only when their accesses
keep the same offsets relative to each other and nothing is clipped."""

import dataclasses

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.access_instances import distinct_hits
from lowering.checks.races import aliasing_views
from lowering.checks.races.overlapping_block_writes import local_tensor
from lowering.checks.rule import CheckContext
from lowering.checks.translation import shift_key
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "shifted_instances" / "model.py"


def _key(graph, name):
    task = graph.task(name)
    accs = [
        a
        for a in task.accesses
        if a.mode != "anchor" and not a.opaque and local_tensor(graph.tensors[a.tensor])
    ]
    return shift_key(graph, task, accs)


def test_only_the_instance_that_writes_below_its_reads_is_reported():
    (graph,) = read_pypto(MODEL).graphs
    found = run_rules_safely(graph, CheckContext(graph), set(all_rules()))
    assert [(d.code, d.span.line, d.span.col) for d in found] == [("R505", 28, 15)]
    assert found[0].message.startswith(
        "scale#3 (spmd 4, AIV): block 1 reads buf[144:160, 0:8] that block 0 writes"
    )


def test_instances_at_other_offsets_share_a_key_and_a_moved_write_does_not():
    (graph,) = read_pypto(MODEL).graphs
    first, second, third = (_key(graph, n) for n in ("scale", "scale#2", "scale#3"))
    assert first is not None and first == second
    assert third is not None and third != first


def test_an_instance_that_may_be_clipped_has_no_key():
    (graph,) = read_pypto(MODEL).graphs
    buf = graph.tensors["buf"]
    graph.tensors["buf"] = dataclasses.replace(buf, dims=(buf.dims[0] - 8, buf.dims[1]))
    assert _key(graph, "scale#2") is not None
    assert _key(graph, "scale#3") is None  # its last write reaches past the shortened buffer


def test_byte_spans_moved_from_another_instance_are_the_spans_listed_for_it():
    (graph,) = read_pypto(MODEL).graphs
    buf = graph.tensors["buf"]
    for name in ("scale", "scale#2", "scale#3"):
        task = graph.task(name)
        for access in task.accesses:
            for exact in (False, True):
                listed = sorted(
                    aliasing_views._bytes(h, buf, 64)
                    for h in distinct_hits(graph, task, access)
                    if h.exact or not exact
                )
                assert aliasing_views._spans(graph, task, access, 64, exact) == listed, (name, access.mode)
    # one listing per access and kind stood for all three instances
    assert len(graph.__dict__["_view_spans_shifted"]) == 2 * len(graph.task("scale").accesses)
