from lintutil import FIXTURES, lint

from lowering.checks import all_rules

RULES = FIXTURES / "rules"
MINE = {c for c, r in all_rules().items() if r.family in ("handshake", "speculation", "occupancy")}


def mine(path, **kw):
    return lint(path, codes=MINE, **kw)


def test_d102_counts_the_cone_at_every_admissible_point():
    (d,) = mine(RULES / "D102" / "bad.dsl")
    assert "reduce (spmd T, AIV) can be pre-staged while cross-rank waiter arrive" in d.message
    assert "64 gated AIV blocks exceed the 48 AIV cores of a2a3, at T=64 (any EP)" in d.message
    assert d.hint == "remove early_resolve from task arrive"


def test_d102_fits_on_a_larger_device_and_not_on_the_simulator():
    assert mine(RULES / "D102" / "bad.dsl", preset="a5") == []  # 64 <= 72 AIV
    (d,) = mine(RULES / "D102" / "good.dsl", preset="sim") or [None]
    assert d is None  # no flag next to the waiter: nothing is gated, whatever the device


def test_d102_flags_a_gated_spinner_in_the_cone():
    (d,) = mine(RULES / "D102" / "bad_2.dsl")
    assert "the cone contains wait2, which spins on round2 itself" in d.message
    assert d.hint == "remove early_resolve from task push2"


def test_d110_names_the_failing_parameter_value():
    (d,) = mine(RULES / "D110" / "bad.dsl")
    assert "publishes 256 early-dispatch candidate AIV blocks" in d.message
    assert "(at EP=32)" in d.message
    assert "more than the 128 candidates one flagged producer is known to publish" in d.message
    assert d.hint.startswith("remove early_resolve from task w2_mm")


def test_d110_capacity_comes_from_the_context():
    from dsl.frontend import compile_file
    from lowering.checks import run_rules
    from lowering.checks.rule import CheckContext

    (g,) = compile_file(RULES / "D110" / "bad.dsl")
    assert run_rules(g, CheckContext(g, early_queue_capacity=256), {"D110"}) == []
    (old,) = run_rules(g, CheckContext(g, early_queue_capacity=64), {"D110"})
    # the older runtime's 64 overflow from EP=16 (128 blocks); the message names that runtime
    assert "(at EP in {16, 32})" in old.message, old.message
    assert "early queue of simpler before #1812" in old.message
