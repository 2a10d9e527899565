from lintutil import FIXTURES, lint, triples

from lowering.checks import all_rules

RULES = FIXTURES / "rules"
MINE = {c for c, r in all_rules().items() if r.family in ("handshake", "speculation", "occupancy")}


def mine(path):
    """Findings of the handshake/speculation/occupancy rules only (bad fixtures may trip others)."""
    return lint(path, codes=MINE)


def test_d101_flags_waiter_without_notifier_edge():
    diags = mine(FIXTURES / "rules" / "D101" / "bad.dsl")  # the protocol family adds its own notes
    assert triples(diags) == [("D101", 24, 3)]
    (d,) = diags
    assert "local notifier push" in d.message
    assert d.hint == "add `after push` to task wait"


def test_a_retire_on_the_own_rank_after_the_wait_is_no_notifier_peers_need():
    assert lint(RULES / "D101" / "good_retire.dsl") == []
    # retiring the peer's cell instead: D101 stays quiet, D103 sees the credits undone (verify: deadlock)
    (d,) = lint(RULES / "D103" / "bad_retire.dsl")
    assert (d.code, d.span.line, d.span.col) == ("D103", 19, 45)
    assert "the notifiers deposit 0 per epoch into that cell" in d.message


def test_d101_exempts_a_sync_start_cohort_that_notifies_before_it_waits():
    # without sync_start a block can be parked behind a spinning sibling (verify: deadlock)
    (d,) = lint(RULES / "D101" / "bad_cohort.dsl")
    assert (d.code, d.span.line, d.span.col) == ("D101", 17, 45)
    assert "both notifies and waits on arrived" in d.message
    # the cohort is placed on idle cores at once: no sibling is parked (verify: complete)
    assert lint(RULES / "D101" / "good_cohort.dsl") == []


# ---------------------------------------------------------------- D106-D109
def test_d106_names_the_missing_notifier():
    (d,) = mine(RULES / "D106" / "bad.dsl")
    assert "no task of layer scatter_rows notifies ready" in d.message
    assert d.severity == "warning"
    assert d.hint == "notify ready from the task that publishes what arrive waits for"


def test_d106_cell_level_names_rank_cell_and_points():
    (d,) = mine(RULES / "D106" / "bad_2.dsl")
    assert "ever reaches ready[0] on rank 1" in d.message
    assert "8 more of the 12 (rank, cell) pairs it waits on at EP=4" in d.message
    assert "for every admissible EP in {2, 4, 8, 16}" in d.message


def test_d106_single_rank_has_nothing_to_wait_for():
    # EP=2 is still admissible: rank 1 waits on ready[0], which only rank 0 could notify
    (d,) = lint(RULES / "D106" / "bad_2.dsl", overrides={"EP": 2}, codes={"D106"})
    assert "ready[0] on rank 1" in d.message


def test_d107_suggests_the_anchor():
    (d,) = mine(RULES / "D107" / "bad.dsl")
    assert "has no incoming edge" in d.message
    assert d.hint.startswith("add `after push` to task handshake")


def test_d107_stays_silent_where_d101_already_reports():
    # the D101 bad waiter has no incoming edge either: D101's fix anchors it, so no D107
    assert triples(mine(RULES / "D101" / "bad.dsl")) == [("D101", 24, 3)]


def test_d108_points_at_the_anchor_and_names_the_join():
    d = next(d for d in mine(RULES / "D108" / "bad.dsl") if d.code == "D108")
    assert (
        "only after push[0] (1 of the 2 notifier instances push[0..1]); push[1] stays unordered" in d.message
    )
    assert d.hint == "replace the anchor read by `after push` on task wait"


def test_d109_names_both_spinners_and_the_fix():
    (d,) = mine(RULES / "D109" / "bad.dsl")
    assert "wait and meta are unordered blocking waiters on AIV cores" in d.message
    assert "needs push, which can be staged into the pending slot of a core on which meta spins" in d.message
    assert d.hint.startswith("add `after meta` to task wait")


def test_d117_a_waiter_of_a_later_round_overtaking_its_own_earlier_instance():
    (d,) = lint(RULES / "D117" / "bad.dsl")
    assert (d.code, d.span.line, d.span.col) == ("D117", 13, 3)
    assert d.message.startswith("meta of round r + 1 can start before its own instance of round r has run")
    assert "the threshold `epoch` counts every round's notifies on done" in d.message
    assert d.hint.startswith("add `after prev(meta)` to task meta")
    assert lint(RULES / "D117" / "good.dsl") == []
    # the notifier is another task, with a producer of its own
    (d2,) = lint(RULES / "D117" / "bad_2.dsl")
    assert (d2.code, d2.span.line, d2.span.col) == ("D117", 15, 3)
    assert d2.message.startswith("wait of round r + 1 can start before push of round r has run")
    assert d2.hint.startswith("add `after prev(push)` to task wait")
    assert lint(RULES / "D117" / "good_2.dsl") == []
