"""A view of a runtime-allocated output waits for the task that allocated its bytes."""

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "view_of_output" / "model.py"


def test_the_reader_of_a_reshaped_output_waits_for_its_creator():
    (graph,) = read_pypto(MODEL).graphs
    assert graph.tensors["flat"].view_of == "scale.w"
    assert [(e.src, e.dst, e.kind, e.tensor) for e in graph.edges] == [
        ("produce", "scale", "raw", "w"),
        ("scale", "consume", "creator", "flat"),
    ]
    assert run_rules_safely(graph, CheckContext(graph), set(all_rules())) == []
