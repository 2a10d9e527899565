"""D103 on a threshold computed from data (an epoch the orchestrator reads from a table):
a note naming the assumption when what the wait observes is countable, an error when it is
not or when a retire can land before the wait."""

from pyptoutil import PYPTO_FIXTURES

from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "host_epoch" / "model.py"


def d103(path):
    (g,) = read_pypto(path).graphs
    return [d for d in run_rules_safely(g, CheckContext(g), set(all_rules())) if d.code == "D103"]


def edited(tmp_path, old: str, new: str):
    text = MODEL.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "model.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_a_threshold_read_from_data_is_a_note_naming_the_ordinal_it_assumes():
    (d,) = d103(MODEL)
    assert (d.severity.value, d.span.line, d.span.col) == ("note", 39, 17)
    assert "a threshold computed from data (the host's read at line 29)" in d.message
    assert "(1 into each waited cell: swap (1 block, AIV): 2 notifies from 2 blocks)" in d.message
    assert "the gap-free ordinal of the call" in d.message


def test_a_notify_count_read_from_data_stays_an_error(tmp_path):
    path = edited(
        tmp_path,
        "        for peer in pl.range(EP):\n",
        "        for peer in pl.range(pl.tensor.read(ordinals, [2])):\n",
    )
    (d,) = d103(path)
    assert (d.severity.value, d.span.line, d.span.col) == ("error", 39, 17)
    assert "cannot be counted: the trip count of loop 'peer' depends on data (swap, line 36)" in d.message


def test_a_retire_with_no_order_to_the_wait_is_an_error(tmp_path):
    path = edited(tmp_path, 'name_hint="retire", deps=[swap_tid]', 'name_hint="retire"')
    path.write_text(path.read_text(encoding="utf-8").replace("value=done", "value=-1"), encoding="utf-8")
    (d,) = d103(path)
    assert (d.severity.value, d.span.line, d.span.col) == ("error", 39, 17)
    assert "but retire lowers that cell by 1 (line 44) with nothing ordering it after the wait" in d.message


def test_a_retire_ordered_after_the_wait_is_not_what_it_observes(tmp_path):
    (d,) = d103(edited(tmp_path, "value=done", "value=-1"))
    assert (d.severity.value, d.span.line, d.span.col) == ("note", 39, 17)
