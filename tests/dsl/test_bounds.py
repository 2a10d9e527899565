"""Slice bounds (E305) for every admissible parameter value, and how parameter domains,
overrides and asserts define which values are admissible (E204, E205)."""

from __future__ import annotations

import pytest

from dsl.frontend import compile_text
from lowering.source import CompileError


def diagnostics(source: str, overrides: dict[str, int] | None = None) -> list[tuple[str, int, int, str]]:
    try:
        compile_text(source, "b.dsl", overrides)
    except CompileError as err:
        return [(d.code, d.span.line, d.span.col, d.message) for d in err.diagnostics]
    return []


WINDOW = """layer window(T = 512 in 128..8192 step 128) {{
  {assert_line}
  input  x: f32[4096, 64]
  output y: f32[128, 64]
  task tail on aiv {{ y[:, :] = x[T - 128 : T, :] }}
}}
"""


def test_overflow_at_some_admissible_value_only_is_reported_with_that_value():
    # Fine at the default T=512; the first admissible T past 4096 is 4224.
    assert diagnostics(WINDOW.format(assert_line="")) == [
        (
            "E305",
            5,
            32,
            "'x' dimension 0 has extent 4096 but this region reaches index 4223 (at T=4224)",
        )
    ]


def test_an_extent_that_shrinks_with_a_parameter_the_region_does_not_read():
    # the region is the same at every N; the tensor's extent is what changes (each access is
    # judged once per value of what it reads, and that includes its tensor's extents)
    source = """layer rows(N = 256 in 64..512 step 64, F = 0 in 0..3) {
  input  x: f32[576 - N, 64]
  output y: f32[128, 64]
  task head on aiv { y[:, :] = x[0 : 128, :] }
}
"""
    assert diagnostics(source) == [
        ("E305", 4, 32, "'x' dimension 0 has extent 64 but this region reaches index 127 (at N=512, F=0)")
    ]


def test_a_region_on_the_rank_is_judged_at_every_rank_count():
    # the region reads the rank count only through `rank`; EP is not named in the region
    source = """layer per_rank(EP = 2 in {2, 4}) {
  ranks EP
  input  x: f32[2, 16]
  output y: f32[1, 16]
  task pick on aiv { y[:, :] = x[rank : rank + 1, :] }
}
"""
    assert diagnostics(source) == [
        ("E305", 5, 32, "'x' dimension 0 has extent 2 but this region reaches index 3 (at EP=4)")
    ]


def test_an_assert_narrows_the_admissible_values():
    assert diagnostics(WINDOW.format(assert_line='assert T <= 4096, "x holds 4096 rows"')) == []


def test_an_assert_that_fails_at_the_compiled_point_is_e205():
    source = WINDOW.format(assert_line='assert T <= 4096, "x holds 4096 rows"')
    assert diagnostics(source, {"T": 8192}) == [
        ("E205", 2, 3, "assertion failed: x holds 4096 rows (at T=8192)")
    ]


def test_an_assert_narrows_a_set_domain_too():
    source = """layer l(EP = 4 in {2, 4, 8, 16}) {
  ASSERT
  input  x: f32[32, 8]
  output y: f32[8, 8]
  task t { y[:, :] = x[EP * 4 - 8 : EP * 4, :] }
}
"""
    assert diagnostics(source.replace("ASSERT", "")) == [
        ("E305", 5, 22, "'x' dimension 0 has extent 32 but this region reaches index 63 (at EP=16)")
    ]
    assert diagnostics(source.replace("ASSERT", "assert EP <= 8")) == []


def test_large_domains_are_thinned_but_keep_their_extremes():
    source = """layer l(T = 64 in 1..10000) {
  input  x: f32[9999, 8]
  output y: f32[1, 8]
  task t { y[:, :] = x[T - 1 : T, :] }
}
"""
    assert diagnostics(source) == [
        ("E305", 4, 22, "'x' dimension 0 has extent 9999 but this region reaches index 9999 (at T=10000)")
    ]


def test_regions_are_bounded_over_every_block():
    source = """layer l(N = 4) {
  input  x: f32[15, 8]
  output y: f32[16, 8]
  task t spmd(N) { y[block * 4 : block * 4 + 4, :] = x[block * 4 : block * 4 + 4, :] }
}
"""
    assert diagnostics(source) == [
        (
            "E305",
            4,
            54,
            "'x' dimension 0 has extent 15 but this region reaches index 15 (at the current parameters)",
        )
    ]


def test_a_negative_start_is_reported():
    source = """layer l(N = 4) {
  input  x: f32[16, 8]
  output y: f32[16, 8]
  task t spmd(N) { y[block, :] = x[block - 1, :] }
}
"""
    assert diagnostics(source) == [
        (
            "E305",
            4,
            34,
            "'x' dimension 0 has extent 16 but this region starts at -1 (at the current parameters)",
        )
    ]


def test_regions_are_bounded_over_every_loop_iteration():
    source = """layer l() {
  input  x: f32[16, 8]
  output y: f32[16, 8]
  task t { for k in range(1, 17) { y[k - 1, :] = x[k, :] } }
}
"""
    assert [d[:3] for d in diagnostics(source)] == [("E305", 4, 50)]


def test_a_strided_slice_within_bounds_is_fine():
    source = """layer l() {
  input  x: f32[16, 8]
  output y: f32[8, 8]
  task t { y[:, :] = x[0 : 16 : 2, :] }
}
"""
    assert diagnostics(source) == []


def test_overrides_are_checked_against_the_domain():
    source = "layer l(T = 512 in 128..8192 step 128) { }\n"
    assert diagnostics(source, {"T": 1000}) == [
        ("E204", 1, 9, "T = 1000 (--set) is outside its range 128..8192 step 128")
    ]
    assert diagnostics(source, {"T": 1024}) == []


def test_unknown_override_is_e203():
    assert [d[0] for d in diagnostics("layer l(T = 1) { }\n", {"Q": 2})] == ["E203"]


def test_the_default_must_lie_in_the_domain():
    assert diagnostics("layer l(T = 100 in 128..8192 step 128) { }\n") == [
        ("E204", 1, 9, "T = 100 (default) is outside its range 128..8192 step 128")
    ]


@pytest.mark.parametrize("domain", ["in 9..1", "in 1..9 step 0"])
def test_empty_domains_are_e207(domain: str):
    assert [d[0] for d in diagnostics(f"layer l(T = 4 {domain}) {{ }}\n")] == ["E207"]


def test_a_huge_domain_is_sampled_not_enumerated():
    # 10^11 admissible values: checked at its extremes and a spread, in well under a second,
    # without materialising the range.
    source = """layer l(T = 1 in 1..100000000000) {
  scalar n: i64 in 0..1000000000000
  input  x: f32[99999999999, 2]
  output y: f32[1, 2]
  task t { y[:, :] = x[T - 1 : T, :] }
}
"""
    assert diagnostics(source) == [
        (
            "E305",
            5,
            22,
            "'x' dimension 0 has extent 99999999999 but this region reaches index 99999999999 (at T=100000000000)",
        )
    ]


def test_layer_loops_are_capped():
    source = "layer l() {\n  for i in range(1000) {\n    for j in range(10000) { task t[i * 10000 + j] { } }\n  }\n}\n"
    assert diagnostics(source) == [
        ("E404", 3, 5, "layer loops expand to 10,000,000 iterations; at most 1,000,000")
    ]


def test_a_layer_loop_past_2_to_63_trips_is_capped_not_a_crash():
    source = "layer l() {\n  for i in range(100000000000000000000000000000) { task t[i] { } }\n}\n"
    (d,) = diagnostics(source)
    assert d[:3] == ("E404", 2, 3)
    assert d[3].startswith("layer loops expand to 100,000,000,000,000,000,000,000,000,000 iterations")


def test_an_integer_literal_past_pythons_digit_limit_is_a_syntax_error_at_the_literal():
    source = "layer l(N = " + "9" * 5000 + ") {\n}\n"
    assert diagnostics(source) == [("E101", 1, 13, "integer literal of 5000 digits is too large")]
