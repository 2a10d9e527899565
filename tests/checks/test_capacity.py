"""C401 / C402 / C403: capacities, guards and bounds against what producers emit."""

from lintutil import FIXTURES, lint, triples

RULES = FIXTURES / "rules"


def test_c401_bad_error_warning_and_note():
    diags = lint(RULES / "C401" / "bad.dsl", codes={"C401"})
    assert triples(diags) == [("C401", 18, 36), ("C401", 26, 3), ("C401", 45, 3)]
    trunc, loose, dead = sorted(diags, key=lambda d: d.span.line)
    assert trunc.severity == "error"
    assert "pack keeps columns [0, 256) of sel but topk emits up to" in trunc.message
    assert "silently dropped" in trunc.message
    assert loose.severity == "warning"
    assert "guard `WIN + visible_max <= PAD` refuses requests that fit" in loose.message
    assert "(WIN + visible_max reaches 2176)" in loose.message
    assert "emits at most K=512 valid columns of sel" in loose.message
    assert "visible_max in 513..2048" in loose.message
    assert dead.severity == "note"
    assert "guard `WIN + min(visible_max, K) <= PAD` is dead" in dead.message
    assert "(line 44)" in dead.message


def test_c401_names_the_point_it_counted_at():
    bad = RULES / "C401" / "bad_point.dsl"
    (at_64,) = lint(bad, codes={"C401"})
    assert (at_64.code, at_64.span.line, at_64.span.col) == ("C401", 17, 36)
    assert "for 1891 admitted requests (e.g. start_pos=964, num_tokens=64) at T=64:" in at_64.message
    (at_128,) = lint(bad, overrides={"T": 128}, codes={"C401"})  # the compiled point first, counted there
    assert "for 7875 admitted requests (e.g. start_pos=900, num_tokens=128) at T=128:" in at_128.message
    assert lint(RULES / "C401" / "good_point.dsl") == []


def test_c401_a_capacity_that_grows_with_the_request():
    # the consumer's last tile ends at 16 * cdiv(num_tokens, 16); the producer emits num_tokens + 8
    (d,) = lint(RULES / "C401" / "bad_request_tiles.dsl")
    assert (d.code, d.span.line, d.span.col) == ("C401", 18, 57)
    assert (
        "pack keeps columns [0, 16) of sel but topk emits up to 17 valid columns per row for 24 admitted"
        in (d.message)
    )
    assert "(e.g. num_tokens=9)" in d.message


def test_c402_bad_flags_runtime_dependent_overflows():
    diags = lint(RULES / "C402" / "bad.dsl", codes={"C402"})
    assert triples(diags) == [("C402", 12, 7), ("C402", 23, 24)]
    write, read = sorted(diags, key=lambda d: d.span.line)
    assert (
        "this write of 'kv' dimension 0 (extent MAX_SEQ) reaches index 1024 of extent 1024" in write.message
    )
    assert "start_pos in 1009..1023; num_tokens in 2..16" in write.message
    assert "this read of 'x' dimension 0 (extent rows) reaches index 15 of extent 15" in read.message
    assert "rows in 1..15" in read.message


def test_c402_judges_each_point_where_what_the_read_depends_on_changes():
    # the tensor's extent (ROWS) and the scalar's range (LIMIT) change away from the defaults
    (rows,) = lint(RULES / "C402" / "bad_other_point.dsl", codes={"C402"})
    (limit,) = lint(RULES / "C402" / "bad_scalar_range.dsl", codes={"C402"})
    assert (rows.span.line, rows.span.col, limit.span.line, limit.span.col) == (7, 32, 7, 32)
    assert (
        "reaches index 64 of extent 64 for 32 admitted requests (start_pos in 1..32) at ROWS=64"
        in rows.message
    )
    assert "reaches index 128 of extent 128 for 36 admitted requests (start_pos in 65..100) at LIMIT=100" in (
        limit.message
    )


def test_c402_a_guard_on_block_and_loop_indices_against_a_runtime_extent():
    # `if block * 16 + r < num_tokens` over x[block * 16 + r] (extent num_tokens): proven in bounds
    assert lint(RULES / "C402" / "good_scalar_index.dsl") == []
    (d,) = lint(RULES / "C402" / "bad_scalar_index.dsl")
    assert (d.code, d.span.line, d.span.col) == ("C402", 11, 44)
    assert "reaches index 63 of extent 63 for 60 admitted requests" in d.message
    assert "(num_tokens in 1..15, 17..31, 33..47, 49..63) at T=64" in d.message


def test_c403_bad_flags_nested_pipeline_and_wide_vector_tile():
    diags = lint(RULES / "C403" / "bad.dsl", codes={"C403"})
    assert triples(diags) == [("C403", 10, 3), ("C403", 22, 3)]
    mat, vec = sorted(diags, key=lambda d: d.span.line)
    # the numbers of pypto-lib #621: Mat 786432 > 524288
    assert "on-chip Mat (L1) footprint is 786432 B, over the 524288 B" in mat.message
    assert "bt bf16[512, 128] x 4 pipeline copies = 524288 B" in mat.message
    assert "nested pipeline stages multiply to 4 copies" in mat.message
    assert len(mat.related) == 2
    assert "on-chip Vec (UB) footprint is 524288 B, over the 196608 B" in vec.message


def test_capacity_and_sort_rules_are_quiet_on_the_shared_layers():
    for path in sorted((FIXTURES / "layers").glob("*.dsl")):
        assert lint(path, codes={"S301", "S302", "C401", "C402", "C403"}) == [], path.name
