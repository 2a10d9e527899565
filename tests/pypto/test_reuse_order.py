"""Signal-implied order (lowering.checks.protocol.implied_order): a credit a wait cannot pass
without is sent before the waiting task's successors start -- and only when that is certain."""

import pytest
from pyptoutil import PYPTO_FIXTURES

import lowering.checks.protocol.implied_order as implied_order
from dsl.driver.cli_pypto import run_rules_safely
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.pypto_reader import read_pypto

MODEL = PYPTO_FIXTURES / "reader" / "reuse_order" / "model.py"
KEPT = [("D101", 38, 9), ("D109", 38, 9), ("D116", 39, 13)]  # reuse[1] can spin early: true
IMPLIED_AWAY = [("D101", 45, 9), ("D116", 48, 21)]  # call 0's pull against call 1's push / pull


def read(path=MODEL):
    (graph,) = read_pypto(path).graphs
    return graph


def sites(graph):
    found = run_rules_safely(graph, CheckContext(graph), set(all_rules()))
    return sorted((d.code, d.span.line, d.span.col) for d in found if d.severity.value != "note")


def edited(tmp_path, *pairs):
    text = MODEL.read_text(encoding="utf-8")
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "model.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_reuse_wait_orders_the_next_call_after_the_consumer():
    graph = read()
    assert implied_order.implied_edges(graph, CheckContext(graph)) == [("consumed[0]", "push[1]")]
    assert sites(graph) == KEPT


def test_without_the_implied_order_the_calls_look_unordered(monkeypatch):
    monkeypatch.setattr(implied_order, "implied_edges", lambda graph, ctx: [])
    assert sites(read()) == sorted(KEPT + IMPLIED_AWAY)


@pytest.mark.parametrize(
    "why, pairs",
    [
        (
            "the consumer waits after its credit, so it can still spin when push[1] starts",
            [
                (
                    "value=1, op=pld.NotifyOp.AtomicAdd)\n    return",
                    "value=1, op=pld.NotifyOp.AtomicAdd)\n"
                    "            pld.system.wait(signal=done, offsets=[my_rank, 0], expected=base + k + 1, cmp=pld.WaitCmp.Ge)\n"
                    "    return",
                )
            ],
        ),
        (
            "every rank credits one shared cell: a peer's next dispatch can send its credit early",
            [
                (
                    "pld.system.wait(signal=done, offsets=[my_rank, 0], expected=base + k,",
                    "pld.system.wait(signal=done, offsets=[0, 0], expected=(base + k) * EP,",
                ),
                (
                    "pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 0], value=1,",
                    "for peer in pl.range(EP):\n"
                    "                pld.system.notify(target=done, peer=peer, offsets=[0, 0], value=1,",
                ),
            ],
        ),
        (
            "only block 0 of a two-block consumer credits: block 1 may not have started",
            [
                (
                    'with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumed", deps=[pull_tid]) as consumed_tid:\n'
                    "            pld.system.notify(",
                    'with pl.spmd(2, name_hint="consumed", deps=[pull_tid]) as consumed_tid:\n'
                    "            if pl.tile.get_block_idx() == 0:\n"
                    "                pld.system.notify(",
                )
            ],
        ),
        (
            "a constant threshold on a counter never reset: the next dispatch finds it met",
            [("expected=base + k, cmp", "expected=k, cmp")],
        ),
    ],
)
def test_no_order_is_implied_where_the_credit_is_not_certainly_needed(tmp_path, why, pairs):
    graph = read(edited(tmp_path, *pairs))
    assert implied_order.implied_edges(graph, CheckContext(graph)) == [], why
    assert ("D116", 48, 21) in sites(graph), why


def test_a_dsl_layer_gets_no_implied_order():
    """Its rounds overlap: a later round's credit can land before this round's wait passes."""
    graph = read()
    graph.file = str(MODEL.with_suffix(".dsl"))
    assert implied_order.implied_edges(graph, CheckContext(graph)) == []


def test_each_cell_of_a_wait_loop_is_held_to_its_own_threshold(tmp_path):
    """Two cells, two thresholds: call 1's reuse waits for 1 credit on one and 2 on the other,
    each exactly what call 0 sends it (a retire after the last call resets the counters)."""
    path = edited(
        tmp_path,
        ("done: pld.DistributedTensor[[EP, 1], pl.INT32]", "done: pld.DistributedTensor[[EP, 2], pl.INT32]"),
        (
            "            pld.system.wait(signal=done, offsets=[my_rank, 0], expected=base + k, cmp=pld.WaitCmp.Ge)",
            "            for j in pl.range(2):\n"
            "                pld.system.wait(signal=done, offsets=[my_rank, j], expected=(j + 1) * k, cmp=pld.WaitCmp.Ge)",
        ),
        (
            "            pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 0], value=1, op=pld.NotifyOp.AtomicAdd)\n",
            "            pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 0], value=1, op=pld.NotifyOp.AtomicAdd)\n"
            "            pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 1], value=2, op=pld.NotifyOp.AtomicAdd)\n"
            '    with pl.at(level=pl.Level.CORE_GROUP, name_hint="retire", deps=[consumed_tid]):\n'
            "        pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 0], value=-CALLS, op=pld.NotifyOp.AtomicAdd)\n"
            "        pld.system.notify(target=done, peer=my_rank, offsets=[my_rank, 1], value=-2 * CALLS, op=pld.NotifyOp.AtomicAdd)\n",
        ),
    )
    graph = read(path)
    assert implied_order.implied_edges(graph, CheckContext(graph)) == [("consumed[0]", "push[1]")]
