"""A graph the reader cut short at its task cap, and a task read once from a loop whose trip
count depends on data: no signal count is judged as if the missing tasks did not exist."""

import pytest
from pyptoutil import PYPTO_FIXTURES

import lowering.pypto_reader.orchestration as orchestration
from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "task_cap" / "model.py"


def findings(graph):
    return [
        (d.code, d.severity.value, d.span.line)
        for d in run_rules_safely(graph, CheckContext(graph), set(all_rules()))
    ]


def test_the_whole_loop_is_read_and_its_count_is_right():
    result = read_pypto(MODEL)
    (graph,) = result.graphs
    assert [t.name for t in graph.tasks] == [f"push[{c}]" for c in range(8)] + ["drain"]
    assert graph.incomplete == ""
    assert findings(graph) == []


def test_a_graph_cut_at_the_task_cap_has_no_count_judged(monkeypatch):
    monkeypatch.setattr(orchestration, "MAX_TASKS", 4)
    result = read_pypto(MODEL)
    (graph,) = result.graphs
    assert [t.name for t in graph.tasks] == [f"push[{c}]" for c in range(4)] + ["drain"]
    assert graph.incomplete == "the reader stopped at 4 tasks"
    (note,) = [d for d in result.diagnostics if d.code == "P001"]
    assert (note.span.line, note.span.col) == (30, 5)
    assert (
        "their tasks are missing from the graph, so no signal count of the graph is checked" in note.message
    )
    assert findings(graph) == []
    graph.incomplete = ""  # judged as if whole, the four missing credits make a false hang
    assert findings(graph) == [("D103", "error", 46)]


def test_a_task_read_once_from_a_data_sized_loop_is_not_counted_as_one(tmp_path):
    text = MODEL.read_text(encoding="utf-8")
    old = "    for c in pl.range(CHUNKS):\n"
    assert old in text
    path = tmp_path / "model.py"
    path.write_text(
        text.replace(old, "    for c in pl.range(pl.tensor.read(chunks, [0])):\n"), encoding="utf-8"
    )
    (graph,) = read_pypto(path).graphs
    assert [(t.name, t.repeated) for t in graph.tasks] == [("push[*]", (1,)), ("drain", ())]
    (d,) = run_rules_safely(graph, CheckContext(graph), {"D103"})
    assert (d.severity.value, d.span.line, d.span.col) == ("error", 46, 17)
    assert "cannot be counted: task push[*] stands for an unknown number of tasks" in d.message


@pytest.mark.parametrize("cap", [1, 8, 9])
def test_the_cap_counts_tasks_not_iterations(monkeypatch, cap):
    monkeypatch.setattr(orchestration, "MAX_TASKS", cap)
    (graph,) = read_pypto(MODEL).graphs
    assert len(graph.tasks) == min(cap, 8) + 1
    assert bool(graph.incomplete) == (cap < 8)


def test_a_wait_whose_only_notifier_was_cut_off_is_not_reported_unnotified(tmp_path, monkeypatch):
    text = MODEL.read_text(encoding="utf-8")
    old = "                    pld.system.notify("
    assert text.count(old) == 1 and "expected=epoch * CHUNKS" in text
    text = text.replace(
        old, "                    if c == CHUNKS - 1:\n                        pld.system.notify("
    )
    path = tmp_path / "model.py"
    path.write_text(text.replace("expected=epoch * CHUNKS", "expected=epoch"), encoding="utf-8")
    assert findings(read_pypto(path).graphs[0]) == []
    monkeypatch.setattr(orchestration, "MAX_TASKS", 4)
    (graph,) = read_pypto(path).graphs
    assert findings(graph) == []
    graph.incomplete = ""
    assert findings(graph) == [("D106", "warning", 47)]


def test_a_read_stopped_by_the_statement_budget_has_no_count_judged(monkeypatch):
    import lowering.pypto_reader.modules as modules
    from lowering.pypto_reader.interp_control import Budget

    monkeypatch.setattr(modules, "Budget", lambda: Budget(limit=12))
    result = read_pypto(MODEL)
    (graph,) = result.graphs
    assert [t.name for t in graph.tasks] == ["push[0]", "push[1]", "push[2]"]
    assert graph.incomplete == "the reader stopped at 12 interpreted statements"
    (note,) = [d for d in result.diagnostics if d.code == "P001"]
    assert "orchestration past 12 interpreted statements" in note.message
    assert findings(graph) == []
