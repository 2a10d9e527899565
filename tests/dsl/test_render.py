"""How a diagnostic is printed: location, code, the source line with a caret under the span,
the hint; tabs, control characters and very long lines."""

from __future__ import annotations

from dsl.codes import diag
from dsl.driver.render import SourceCache, render
from lowering.source import Span


def shown(text: str, span: Span, hint: str | None = None) -> list[str]:
    sources = SourceCache()
    sources.add(span.file, text)
    return render(diag("E201", span, "unknown name 'zz'", hint=hint), sources).splitlines()


def test_caret_under_the_span_and_the_hint():
    assert shown("layer a() {\n  let v = zz + 1\n}\n", Span("f.dsl", 2, 11, 2, 13), hint="define it") == [
        "f.dsl:2:11: E201 unknown name 'zz'",
        "    2 |   let v = zz + 1",
        "      |           ^^",
        "      = hint: define it",
    ]


def test_tabs_are_expanded_consistently():
    assert shown("\tlet v = zz\n", Span("f.dsl", 1, 10, 1, 12))[1:] == [
        "    1 |     let v = zz",
        "      |             ^^",
    ]


def test_control_characters_are_masked():
    line = shown("x = \x1b[2Jzz\n", Span("f.dsl", 1, 10, 1, 12))[1]
    assert line == "    1 | x = ?[2Jzz"


def test_a_very_long_line_is_shown_around_the_error():
    text = "a + " * 200 + "zz" + " + b" * 200
    col = len("a + " * 200) + 1
    head, line, caret = shown(text, Span("f.dsl", 1, col, 1, col + 2))
    assert head == f"f.dsl:1:{col}: E201 unknown name 'zz'"
    assert line.startswith("    1 | ...") and line.endswith("...")
    assert len(line) < 200
    position = caret.index("^")
    assert caret.endswith("^^")
    assert line[position : position + 2] == "zz"


def test_a_missing_source_prints_the_location_only(tmp_path):
    out = render(diag("E102", Span(str(tmp_path / "gone.dsl"), 1, 1), "no such file"), SourceCache())
    assert out == f"{tmp_path / 'gone.dsl'}:1:1: E102 no such file"
