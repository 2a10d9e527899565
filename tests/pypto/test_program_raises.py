"""A program that raises where the reader runs it -- a `raise` in the orchestration, `range`
with step 0 -- gets a located note, never "the reader failed" (P004), and the tasks it did not
reach make the graph incomplete."""

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "task_cap" / "model.py"
LOOP = "    for c in pl.range(CHUNKS):\n"


def read_edited(tmp_path, old: str, new: str):
    text = MODEL.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "model.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return read_pypto(path)


def codes(result) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in result.diagnostics]


def test_a_raise_in_the_orchestration_is_a_located_note_and_an_incomplete_graph(tmp_path):
    result = read_edited(tmp_path, LOOP, '    if CHUNKS > 4:\n        raise ValueError("too many")\n' + LOOP)
    assert codes(result) == [("P001", 31, 9)]
    assert "the orchestration raises ValueError" in result.diagnostics[0].message
    (graph,) = result.graphs
    assert graph.tasks == [] and graph.incomplete == "the orchestration raised"
    assert run_rules_safely(graph, CheckContext(graph), set(all_rules())) == []


def test_an_orchestration_range_with_step_zero_raises_as_python_does(tmp_path):
    result = read_edited(tmp_path, LOOP, "    for c in pl.range(0, CHUNKS, 0):\n")
    assert codes(result) == [("P001", 30, 14)]
    assert "the orchestration raises ValueError" in result.diagnostics[0].message


def test_a_module_level_range_with_step_zero_raises_as_python_does(tmp_path):
    result = read_edited(tmp_path, "CHUNKS = 8\n", "CHUNKS = len(range(0, 8, 0))\n")
    assert ("P001", 15, 1) in codes(result)
    assert not [d for d in result.diagnostics if d.code == "P004"]
    assert "module-level code raises ValueError" in result.diagnostics[0].message
