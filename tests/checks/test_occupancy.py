from lintutil import FIXTURES, lint

from lowering.checks import all_rules

RULES = FIXTURES / "rules"
MINE = {c for c, r in all_rules().items() if r.family in ("handshake", "speculation", "occupancy")}


def mine(path, **kw):
    return lint(path, codes=MINE, **kw)


def test_o601_without_sync_start():
    (d,) = mine(RULES / "O601" / "bad.dsl")
    assert "has a hard barrier but is not sync_start" in d.message
    assert d.hint == "declare task hc_pre_fused `sync_start` with a grid of exactly 24, or use `barrier soft`"


def test_o601_partial_occupancy_names_the_points():
    d = next(d for d in mine(RULES / "O601" / "bad_2.dsl") if d.code == "O601")
    assert "is as small as 8 at T in {128, 256}, fewer than the 24 MIX clusters of a2a3" in d.message


def test_o601_depends_on_the_preset():
    (d,) = mine(RULES / "O601" / "good.dsl", preset="a5")
    assert d.code == "O601" and "fewer than the 36 MIX clusters of a5" in d.message


def test_o602_names_the_cohort_and_the_value():
    (d,) = mine(RULES / "O602" / "bad.dsl")
    assert "sync_start cohort of up to 36 MIX blocks at NUM_CORES=36 (any T)" in d.message
    assert "a2a3 has 24 MIX clusters" in d.message
    assert mine(RULES / "O602" / "bad.dsl", preset="a5") == []
