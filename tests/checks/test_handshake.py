from lintutil import FIXTURES, lint, triples


def test_d101_flags_waiter_without_notifier_edge():
    diags = lint(FIXTURES / "rules" / "D101" / "bad.dsl")
    assert triples(diags) == [("D101", 24, 3)]
    (d,) = diags
    assert "local notifier push" in d.message
    assert d.hint == "add `after push` to task wait"


def test_d101_good_fixture_is_clean():
    assert lint(FIXTURES / "rules" / "D101" / "good.dsl") == []
