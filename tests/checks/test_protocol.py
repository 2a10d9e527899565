"""Protocol rules (D103-D105, D111-D116): what each finding says, and the cases beyond the
fixtures. Every finding on the rule fixtures is asserted by tests/checks/test_rule_fixtures.py.
"""

from pathlib import Path

from lintutil import FIXTURES, lint, triples

from lowering.checks import all_rules

RULES = FIXTURES / "rules"
SEED = FIXTURES / "seed"
PROTOCOL = {c for c, r in all_rules().items() if r.family == "protocol"}


def protocol(path: Path, **kw):
    return lint(path, codes=PROTOCOL, **kw)


def test_family_has_the_catalogue_codes():
    assert PROTOCOL == {"D103", "D104", "D105", "D111", "D112", "D113", "D114", "D115", "D116"}
    for code in PROTOCOL:
        rule = all_rules()[code]
        assert rule.severity == ("note" if code == "D105" else "error")


# ---------------------------------------------------------------- messages


def test_d103_counts_the_grid_and_suggests_its_symbol():
    (d,) = protocol(RULES / "D103" / "bad.dsl")
    assert "push (spmd 4, AIV): 4 notifies from 4 blocks" in d.message
    assert "releases before every notify" in d.message
    assert d.hint == "expect `epoch * N_LOCAL` in this wait"


def test_d103_data_dependent_count_is_an_error():
    (d,) = protocol(RULES / "D103" / "bad_2.dsl")
    assert d.severity == "error"
    assert "cannot be counted: the condition on line 16 depends on data (push, line 18)" in d.message


def test_d103_checks_every_admissible_point():
    (d,) = protocol(RULES / "D103" / "bad_3.dsl")
    assert "(at EP=2, N_LOCAL=8)" in d.message
    assert "push (spmd 8, AIV)" in d.message
    assert "epoch * 4" in d.message  # right at the default N_LOCAL = 4 only


def test_d103_a_threshold_only_the_waiter_reads():
    # N_LOCAL reaches the wait's threshold and nothing the notifiers do: its points must not be
    # taken for one another
    (d,) = protocol(RULES / "D103" / "bad_waiter_param.dsl")
    assert (d.code, d.span.line, d.span.col) == ("D103", 20, 45)
    assert "(= 8 at epoch 1), but the notifiers deposit 4 per epoch" in d.message
    assert "(at N_LOCAL=8)" in d.message


def test_d103_too_high_is_a_deadlock(tmp_path):
    text = (
        (RULES / "D103" / "good.dsl")
        .read_text()
        .replace("wait data_arrived[src] >= epoch * N_LOCAL", "wait data_arrived[src] >= epoch * N_LOCAL + 1")
    )
    path = tmp_path / "too_high.dsl"
    path.write_text(text)
    (d,) = protocol(path)
    assert d.code == "D103"
    assert "never reached and rank 0 deadlocks" in d.message


def test_d103_accepts_a_threshold_written_as_the_round_count_plus_offset(tmp_path):
    text = (
        (RULES / "D103" / "good.dsl")
        .read_text()
        .replace(
            "wait data_arrived[src] >= epoch * N_LOCAL",
            "wait data_arrived[src] >= (epoch - 1) * N_LOCAL + N_LOCAL",
        )
    )
    path = tmp_path / "same.dsl"
    path.write_text(text)
    assert protocol(path) == []


def test_d104_points_at_ge():
    (d,) = protocol(RULES / "D104" / "bad.dsl")
    assert "only AtomicAdd notifies write (push)" in d.message
    assert d.hint == "use `>=`: wait data_arrived[...] >= epoch * N_LOCAL"


def test_d105_is_a_note_naming_the_grid():
    (d,) = protocol(RULES / "D105" / "bad.dsl")
    assert d.severity == "note"
    assert "tied to the grid size of `combine`" in d.message
    assert "prefer one notify per peer after the grid (expected = epoch)" in d.message


def test_d105_quiet_once_the_waiter_joins_the_grid():
    # the post-#893 dispatch form: folded notify, waiter after the grid (moe_dispatch.dsl)
    assert protocol(FIXTURES / "layers" / "moe_dispatch.dsl") == []


def test_d111_names_both_ops():
    (d,) = protocol(RULES / "D111" / "bad.dsl")
    assert "meta sets cell ready[0] on rank 1 to epoch (Set) while push adds to it" in d.message
    assert d.related and d.related[0][1] == "the AtomicAdd notify"


def test_d112_inferred_mix():
    (d,) = protocol(RULES / "D112" / "bad.dsl")
    assert "runs on mix (inferred from its cube and vector ops)" in d.message
    assert d.hint == "move the notify into an `on aiv` task `after expert`"


def test_d113_messages():
    (reuse,) = protocol(RULES / "D113" / "bad.dsl")
    assert "persists across rounds (4 deposited per round" in reuse.message
    assert reuse.hint.startswith("expect `epoch * N_LOCAL`")
    (clear,) = protocol(RULES / "D113" / "bad_2.dsl")
    assert (
        "receives 4 credits per round but no wait ordered before the clear observes all of them"
        in clear.message
    )
    (window,) = protocol(RULES / "D113" / "bad_3.dsl")
    assert "zero-writes window recv_x, which peers fill with remote_store (push)" in window.message


def test_d113_clearing_a_peer_cell_is_unsafe(tmp_path):
    text = (
        (RULES / "D113" / "good_clear.dsl")
        .read_text()
        .replace("notify data_arrived[src] @ rank = 0", "notify data_arrived[rank] @ src = 0")
    )
    path = tmp_path / "remote_clear.dsl"
    path.write_text(text)
    (d,) = protocol(path)
    assert d.code == "D113"
    assert "which only rank 1 can observe" in d.message


def test_d114_kinds():
    (tile,) = protocol(RULES / "D114" / "bad.dsl")
    assert "does not drain before the notify (PTOAS#872)" in tile.message
    assert tile.hint == "notify arrived from a task `after scatter` (a grid join) instead of from scatter"
    (unordered,) = protocol(RULES / "D114" / "bad_2.dsl")
    assert "(handshake) is not ordered after push" in unordered.message
    (uncovered,) = protocol(RULES / "D114" / "bad_3.dsl")
    assert "block 1 of scatter remote-stores into routed but never runs the notify" in uncovered.message


def test_d115_messages():
    (wait,) = protocol(RULES / "D115" / "bad.dsl")
    assert "never on ranks 1..3, 3 times on rank 0" in wait.message
    (blocks,) = protocol(RULES / "D115" / "bad_2.dsl")
    assert "blocks 0..3 of phases reach this barrier but blocks 4..7 do not" in blocks.message
    (ranks,) = protocol(RULES / "D115" / "bad_3.dsl")
    assert "never on ranks 1..3, once on rank 0" in ranks.message


def test_d116_message():
    (d,) = protocol(RULES / "D116" / "bad.dsl")
    assert "one of 4 per-chunk tasks `exchange[...]`" in d.message
    assert d.hint == "replace the chunk tasks by one `spmd(4) sync_start` grid (block = chunk)"


# ---------------------------------------------------------------- seed fixtures
# (docs/runtime-semantics.md §21.1)


def test_seed_epoch_restart_960():
    (d,) = protocol(SEED / "epoch_restart_pre.dsl")
    assert (d.code, d.span.line, d.span.col) == ("D113", 29, 45)
    assert d.hint.startswith("expect `dispatch * N_LOCAL`")
    assert lint(SEED / "epoch_restart_post.dsl") == []


def test_seed_rowcount_handshake_975():
    diags = protocol(SEED / "rowcount_handshake_pre.dsl")
    assert triples(diags) == [("D113", 32, 45), ("D114", 23, 24)]
    codes = {d.code for d in lint(SEED / "rowcount_handshake_pre.dsl")}
    assert {"D101", "D108"} <= codes  # the anchor that is not a join (R10), other family
    assert lint(SEED / "rowcount_handshake_post.dsl") == []
