"""`# dslc: ignore[CODE, ...] reason` suppressions through `dslc check`, and --select/--ignore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lintcli import SELF_WAIT, SELF_WAIT_HEADER, SELF_WAIT_LINE, copy_fixture, pin_rules, run, workspace

from lowering.checks.suppressions import parse_suppressions

REASON = "  # dslc: ignore[D101] peers of this test never wait on us"


@pytest.fixture(autouse=True)
def _only_d101(monkeypatch):
    pin_rules(monkeypatch)


def findings(capsys, *argv) -> tuple[int, list[tuple[str, int, int, str]]]:
    r = run(capsys, "check", *argv, "--format", "json")
    return r.rc, [
        (f["code"], f["location"]["line"], f["location"]["column"], f["severity"]) for f in json.loads(r.out)
    ]


def self_wait(lines: dict[int, str] | None = None) -> Path:
    text = SELF_WAIT.splitlines()
    for lineno, comment in (lines or {}).items():
        text[lineno - 1] += comment
    path = Path("self.dsl")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Path:
    return workspace(tmp_path, monkeypatch)


def test_sources_have_the_expected_findings(ws, capsys):
    assert findings(capsys, copy_fixture("bad.dsl", Path("bad.dsl"))) == (1, [("D101", 24, 3, "error")])
    assert findings(capsys, self_wait()) == (1, [("D101", SELF_WAIT_LINE, 45, "error")])


def test_suppression_on_the_finding_line(ws, capsys):
    assert findings(capsys, self_wait({SELF_WAIT_LINE: REASON})) == (0, [])
    # the D101 of bad.dsl sits on the task header line
    assert findings(capsys, copy_fixture("bad.dsl", Path("bad.dsl"), edit={24: REASON})) == (0, [])


def test_suppression_on_the_task_header_covers_the_task_body(ws, capsys):
    assert findings(capsys, self_wait({SELF_WAIT_HEADER: REASON})) == (0, [])


def test_suppression_elsewhere_in_the_task_does_not_apply_and_is_unused(ws, capsys):
    rc, got = findings(capsys, self_wait({SELF_WAIT_LINE - 1: REASON}))
    assert rc == 1
    col = len(SELF_WAIT.splitlines()[SELF_WAIT_LINE - 2]) + 3  # the '#' after two spaces
    assert got == [("L001", SELF_WAIT_LINE - 1, col, "warning"), ("D101", SELF_WAIT_LINE, 45, "error")]


def test_suppression_of_another_code_leaves_the_finding_and_is_unused(ws, capsys):
    path = self_wait({SELF_WAIT_LINE: "  # dslc: ignore[D102] wrong code"})
    r = run(capsys, "check", path, "--format", "json")
    assert r.rc == 1
    out = json.loads(r.out)
    assert [(f["code"], f["location"]["line"]) for f in out] == [("D101", 7), ("L001", 7)]
    assert out[1]["message"] == "unused suppression of D102: no such finding here"
    assert out[1]["fix"] == "remove the comment or the code from it"


def test_suppression_with_several_codes_reports_only_the_unused_ones(ws, capsys):
    path = self_wait({SELF_WAIT_LINE: "  # dslc: ignore[d101, D102] two codes"})  # case-insensitive
    r = run(capsys, "check", path, "--format", "json")
    (f,) = json.loads(r.out)
    assert (r.rc, f["code"], f["message"]) == (0, "L001", "unused suppression of D102: no such finding here")


def test_missing_reason_is_l002_and_suppresses_nothing(ws, capsys):
    path = copy_fixture("bad.dsl", Path("bad.dsl"), edit={24: "  # dslc: ignore[D101]"})
    rc, got = findings(capsys, path)
    assert rc == 1
    assert got == [("D101", 24, 3, "error"), ("L002", 24, 37, "error")]
    r = run(capsys, "check", path)
    assert "bad.dsl:24:37: L002 suppression without a reason: say why the finding does not apply\n" in r.out
    assert "      = hint: write the reason after ]\n" in r.out


def test_missing_reason_on_an_unneeded_suppression_is_still_an_error(ws, capsys):
    path = copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101]   "})
    assert findings(capsys, path) == (1, [("L002", 24, 48, "error")])


def test_unused_suppression_is_l001_a_warning(ws, capsys):
    path = copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101] was needed once"})
    assert findings(capsys, path) == (0, [("L001", 24, 48, "warning")])
    r = run(capsys, "check", path)
    assert r.out == (
        "good.dsl:24:48: L001 warning: unused suppression of D101: no such finding here\n"
        "   24 |   task wait on aiv after push early_resolve {  # dslc: ignore[D101] was needed once\n"
        "      |                                                "
        + "^"
        * len("# dslc: ignore[D101] was needed once")
        + "\n"
        "      = hint: remove the comment or the code from it\n"
    )
    assert run(capsys, "check", path, "--fail-on", "warning").rc == 1
    assert findings(capsys, path, "--ignore", "L001") == (0, [])


@pytest.mark.parametrize(
    "comment",
    ["  # dslc: ignore D101 no brackets", "  # dslc: ignore[] empty", "  # dslc: ignroe[D101] typo"],
)
def test_malformed_dslc_comment_is_l003(ws, capsys, comment):
    path = copy_fixture("bad.dsl", Path("bad.dsl"), edit={24: comment})
    rc, got = findings(capsys, path)
    assert rc == 1
    assert got == [("D101", 24, 3, "error"), ("L003", 24, 37, "error")]


def test_ordinary_comments_are_not_suppressions():
    text = "# D101 is about waits\n  x = 1  # not dslc: ignore[D101]\n# dslc-ish ignore[D101] no\n"
    assert parse_suppressions("f.dsl", text) == {}


def test_suppressions_in_one_file_do_not_apply_to_another(ws, capsys):
    copy_fixture("bad.dsl", Path("a.dsl"), edit={24: REASON})
    copy_fixture("bad.dsl", Path("b.dsl"))
    assert findings(capsys, "a.dsl", "b.dsl") == (1, [("D101", 24, 3, "error")])


# ---------------------------------------------------------------- --select / --ignore


@pytest.mark.parametrize(
    "options, expected",
    [
        ([], ["D101", "L001"]),
        (["--select", "D"], ["D101"]),
        (["--select", "D1"], ["D101"]),
        (["--select", "d10"], ["D101"]),
        (["--select", "D101"], ["D101"]),
        (["--select", "L"], ["L001"]),
        (["--select", "L,D"], ["D101", "L001"]),
        (["--select", "L", "--select", "D"], ["D101", "L001"]),
        (["--ignore", "D"], ["L001"]),
        (["--ignore", "D1"], ["L001"]),
        (["--ignore", "D101,L001"], []),
        (["--select", "D", "--ignore", "D101"], []),
    ],
)
def test_select_and_ignore_take_codes_and_prefixes(ws, capsys, options, expected):
    copy_fixture("bad.dsl", Path("bad.dsl"))
    copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101] stale"})
    rc, got = findings(capsys, "bad.dsl", "good.dsl", *options)
    assert [code for code, *_ in got] == expected
    assert rc == (1 if "D101" in expected else 0)


def test_front_end_errors_are_never_deselected(ws, capsys):
    Path("broken.dsl").write_text("layer x( {\n", encoding="utf-8")
    rc, got = findings(capsys, "broken.dsl", "--select", "D", "--ignore", "E")
    assert rc == 2
    assert [code for code, *_ in got] == ["E101"]
