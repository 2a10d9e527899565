"""S301 / S302: sort32 + mrgsort chains against the finite candidates, at every admissible point."""

from lintutil import FIXTURES, lint, triples

RULES = FIXTURES / "rules"


def test_s301_bad_flags_short_runs_wide_reads_and_narrow_rows():
    diags = lint(RULES / "S301" / "bad.dsl", codes={"S301"})
    assert triples(diags) == [("S301", 13, 5), ("S301", 19, 5), ("S301", 23, 5)]
    short, wide, narrow = sorted(diags, key=lambda d: d.span.line)
    # (b) the true threshold and the failing parameter values, not only the default point
    assert "up to CAP=640 finite candidates (at T=1280)" in short.message
    assert "sort32+mrgsort(64, 256) yields sorted runs of 512 records" in short.message
    assert "candidates 512..639 are never compared" in short.message
    assert "wrong for T in 1280..4096; correct for T in 256..1024" in short.message
    assert short.hint == "add mrgsort(block_len=1024) after mrgsort(block_len=256) (runs of 2048 records)"
    # (c) a read past run 0
    assert "reads columns [0, 512)" in wide.message and "runs of 128 records (256 columns)" in wide.message
    # (d) more finite candidates than the row holds, at the sort32
    assert "the sorted row holds 128 records but up to CAP=256 candidates" in narrow.message
    assert "Wrong for T in 512..4096" in narrow.message


def test_s302_bad_flags_isa_and_order_violations():
    diags = lint(RULES / "S302" / "bad.dsl", codes={"S302"})
    assert triples(diags) == [("S302", 10, 5), ("S302", 16, 5), ("S302", 23, 5)]
    odd, skipped, short_row = sorted(diags, key=lambda d: d.span.line)
    assert "block_len 96 is not a multiple of 64" in odd.message
    assert odd.hint == "use block_len=64: the current runs of 32 records, in columns"
    assert "follows sort32, whose sorted runs are 32 records = 64 columns" in skipped.message
    assert "the lists it merges are not sorted" in skipped.message
    assert skipped.hint == "use mrgsort(block_len=64)"
    assert "512 columns are not a multiple of 4*block_len = 1024" in short_row.message


def test_broken_chain_is_reported_once_by_s302_not_again_by_s301():
    diags = lint(RULES / "S302" / "bad.dsl")
    assert {d.code for d in diags} == {"S302"}


def test_s302_follows_merge_stages_through_a_body_loop():
    (d,) = lint(RULES / "S302" / "bad_loop.dsl")
    assert (d.code, d.span.line, d.span.col) == ("S302", 11, 26)
    assert "mrgsort(block_len=64) follows sort32+mrgsort(64), whose sorted runs are 128 records" in d.message
    assert d.hint == "use mrgsort(block_len=256)"
    assert lint(RULES / "S302" / "good_loop.dsl") == []
