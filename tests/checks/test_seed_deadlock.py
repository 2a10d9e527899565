"""Seed bugs 1 and 2 (docs/runtime-semantics.md §15 dispatch, §16 combine): the pre-fix layers are
flagged at the intended lines by the intended rules, and the post-fix layers are clean under every
rule, as ``dslc check`` runs them (suppressions applied)."""

from lintutil import FIXTURES, lint, lint_suppressed, triples

from lowering.checks import all_rules

SEED = FIXTURES / "seed"
MINE = {c for c, r in all_rules().items() if r.family in ("handshake", "speculation", "occupancy")}


def test_dispatch_pre_is_flagged_at_the_wait_and_the_gather():
    diags = lint(SEED / "dispatch_pre.dsl", codes=MINE)
    # D117: nothing orders a round's dispatch_wait after the previous round's dispatch_push either
    assert triples(diags) == [
        ("D101", 68, 3), ("D102", 73, 3), ("D109", 68, 3), ("D110", 73, 3), ("D117", 68, 3)
    ]  # fmt: skip
    by_code = {d.code: d for d in diags}
    assert "local notifier dispatch_push (spmd 16, AIV) is not an ancestor" in by_code["D101"].message
    assert "only edge: anchor read of `indices` (from route_sort)" in by_code["D101"].message
    assert by_code["D101"].hint == "add `after dispatch_push` to task dispatch_wait"
    d102 = by_code["D102"]
    assert "dispatch_gather (spmd 16, AIV) is early_resolve and can itself be pre-staged" in d102.message
    assert "exp_up_mm[0..15] (16 tasks) on AIC" in d102.message
    assert "up to 256 gated AIC blocks (at EP=16) exceed the 24 AIC cores of a2a3" in d102.message
    assert "for every admissible EP in {2, 4, 8, 16}" in d102.message
    assert d102.hint == "remove early_resolve from task dispatch_gather"
    assert "(at EP=16)" in by_code["D110"].message


def test_combine_pre_is_flagged_at_the_wait_and_its_speculation():
    diags = lint(SEED / "combine_pre.dsl", codes=MINE)
    assert triples(diags) == [
        ("D101", 42, 3),
        ("D102", 42, 3),
        ("D117", 42, 3),
    ]
    by_code = {d.code: d for d in diags}
    assert "local notifier combine (spmd 16, AIV) is not an ancestor" in by_code["D101"].message
    assert "anchor read of `recv_y` (from exp_w2_act[0])" in by_code["D101"].message
    d102 = by_code["D102"]
    assert (
        "shared_routed (spmd 128, AIV) can be pre-staged while cross-rank waiter combine_wait" in d102.message
    )
    assert "128 gated AIV blocks exceed the 48 AIV cores of a2a3" in d102.message
    assert "combine_wait itself can be pre-staged behind its flagged producer exp_w2_act[0]" in d102.message
    assert d102.hint == "remove early_resolve from task combine_wait"


def test_post_fix_layers_are_clean_under_every_rule():
    for name in ("dispatch_post.dsl", "combine_post.dsl"):
        assert lint_suppressed(SEED / name) == [], name


def test_dispatch_post_keeps_only_the_residual_meta_risk():
    # #982 fixes the push -> wait edge and the gather flag; dispatch_meta still notifies and
    # spins in one task (pypto-lib #1208/#1213), which the file suppresses with its reason.
    assert triples(lint(SEED / "dispatch_post.dsl", codes=MINE)) == [("D109", 70, 3)]


def test_seed_findings_hold_at_every_admissible_ep():
    for ep in (2, 4, 8, 16):
        codes = {d.code for d in lint(SEED / "dispatch_pre.dsl", overrides={"EP": ep}, codes=MINE)}
        assert {"D101", "D102", "D109"} <= codes, ep
        assert lint_suppressed(SEED / "dispatch_post.dsl", overrides={"EP": ep}) == [], ep
