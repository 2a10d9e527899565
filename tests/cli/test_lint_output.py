"""`dslc check` output formats (text, json, sarif, github) and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lintcli import SARIF_SCHEMA, copy_fixture, expected_findings, pin_rules, run, workspace

from dsl.driver.render import SourceCache
from dsl.driver.report import FORMATS, format_findings, to_sarif
from lowering.checks import all_rules
from lowering.source import Diagnostic, Severity, Span

FIX = "add `after push` to task wait"


@pytest.fixture(autouse=True)
def _only_d101(monkeypatch):
    pin_rules(monkeypatch)


@pytest.fixture
def bad(tmp_path, monkeypatch) -> Path:
    workspace(tmp_path, monkeypatch)
    return copy_fixture("bad.dsl", Path("bad.dsl"))


@pytest.fixture
def good(tmp_path, monkeypatch) -> Path:
    workspace(tmp_path, monkeypatch)
    return copy_fixture("good.dsl", Path("good.dsl"))


def the_finding(path: Path) -> Diagnostic:
    (d,) = expected_findings(path)
    assert (d.code, d.span.line, d.span.col, d.hint) == ("D101", 24, 3, FIX)
    return d


# ---------------------------------------------------------------- text


def test_text_format_is_path_line_col_code_message_snippet_caret(bad, capsys):
    d = the_finding(bad)
    r = run(capsys, "check", bad)
    assert r.rc == 1
    assert r.out == (
        f"bad.dsl:24:3: D101 {d.message}\n"
        "   24 |   task wait on aiv early_resolve {\n"
        "      |   ^^^^^^^^^\n"
        f"      = hint: {FIX}\n"
        "      = note: bad.dsl:26:45: the blocking wait\n"
        "      = note: bad.dsl:11:3: the notifier\n"
    )
    assert r.err == "1 file(s) checked: 1 error(s), 0 warning(s), 0 note(s)\n"


def test_text_format_is_the_default_and_never_coloured_when_captured(bad, capsys):
    assert run(capsys, "check", bad).out == run(capsys, "check", bad, "--format", "text").out
    assert "\x1b[" not in run(capsys, "check", bad).out


def test_clean_file_prints_nothing_on_stdout_and_exits_0(good, capsys):
    r = run(capsys, "check", good)
    assert (r.rc, r.out) == (0, "")
    assert r.err == "1 file(s) checked: 0 error(s), 0 warning(s), 0 note(s)\n"
    for fmt, empty in (("json", "[]\n"), ("github", "")):
        assert run(capsys, "check", good, "--format", fmt).out == empty


# ---------------------------------------------------------------- json


def test_json_has_one_object_per_finding_with_exact_fields(bad, capsys):
    d = the_finding(bad)
    r = run(capsys, "check", bad, "--format", "json")
    assert r.rc == 1
    assert json.loads(r.out) == [
        {
            "code": "D101",
            "severity": "error",
            "message": d.message,
            "fix": FIX,
            "location": {"file": "bad.dsl", "line": 24, "column": 3, "end_line": 24, "end_column": 12},
            "related": [
                {"file": "bad.dsl", "line": 26, "column": 45, "message": "the blocking wait"},
                {"file": "bad.dsl", "line": 11, "column": 3, "message": "the notifier"},
            ],
        }
    ]


def test_json_lists_findings_of_every_file_sorted(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("b.dsl"))
    copy_fixture("bad.dsl", Path("a.dsl"))
    copy_fixture("good.dsl", Path("c.dsl"))
    r = run(capsys, "check", ".", "--format", "json")
    assert r.rc == 1
    assert [(f["location"]["file"], f["code"]) for f in json.loads(r.out)] == [
        ("a.dsl", "D101"),
        ("b.dsl", "D101"),
    ]
    assert r.err.startswith("3 file(s) checked: 2 error(s)")


def test_json_reports_front_end_errors_with_exit_2(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    Path("broken.dsl").write_text("layer x( {\n", encoding="utf-8")
    r = run(capsys, "check", "broken.dsl", "--format", "json")
    assert r.rc == 2
    (f,) = json.loads(r.out)
    assert (f["code"], f["severity"], f["location"]["file"]) == ("E101", "error", "broken.dsl")


# ---------------------------------------------------------------- sarif


def sarif(capsys, *argv) -> dict:
    r = run(capsys, "check", *argv, "--format", "sarif")
    assert r.rc in (0, 1), r.both
    return json.loads(r.out)


def test_sarif_structure(bad, capsys):
    d = the_finding(bad)
    log = sarif(capsys, bad)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = log["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "dslc"
    (result,) = run_["results"]
    assert result["ruleId"] == "D101"
    assert result["level"] == "error"
    assert result["message"]["text"] == f"{d.message} Fix: {FIX}"
    (loc,) = result["locations"]
    assert loc["physicalLocation"] == {
        "artifactLocation": {"uri": "bad.dsl"},
        "region": {"startLine": 24, "startColumn": 3, "endLine": 24, "endColumn": 12},
    }
    assert [r["physicalLocation"]["region"]["startLine"] for r in result["relatedLocations"]] == [26, 11]
    assert set(result["partialFingerprints"]) == {"primaryLocationLineHash"}


def test_sarif_declares_every_rule_with_help_and_each_result_points_at_its_rule(
    tmp_path, monkeypatch, capsys
):
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("bad.dsl"))
    copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101] stale"})
    Path("broken.dsl").write_text("layer x( {\n", encoding="utf-8")
    r = run(capsys, "check", ".", "--format", "sarif")
    assert r.rc == 2  # a front-end error
    log = json.loads(r.out)
    (run_,) = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted(set(ids))
    assert set(all_rules()) <= set(ids)  # every rule, so code scanning can show its help
    for rule in rules:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert {res["ruleId"] for res in run_["results"]} == {"D101", "L001", "E101"}
    for res in run_["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
    d101 = rules[ids.index("D101")]
    assert d101["name"] == "wait_before_local_notifier"
    assert "## Use instead" in d101["help"]["markdown"]
    assert rules[ids.index("L001")]["defaultConfiguration"]["level"] == "warning"


def test_sarif_validates_against_the_sarif_2_1_0_schema(tmp_path, monkeypatch, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("sub dir/bad.dsl"))
    copy_fixture("bad.dsl", Path("no_reason.dsl"), edit={24: "  # dslc: ignore[D101]"})
    copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101] stale"})
    Path("broken.dsl").write_text("layer x( {\n", encoding="utf-8")
    for argv in (["good.dsl"], ["."], [str(tmp_path.resolve())]):  # clean, findings, absolute paths
        log = json.loads(run(capsys, "check", *argv, "--format", "sarif").out)
        errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # an empty log of a clean run still declares the rules
    assert json.loads(run(capsys, "check", "good.dsl", "--format", "sarif", "--ignore", "L").out)["runs"][0][
        "tool"
    ]["driver"]["rules"]


def test_sarif_uris_are_relative_and_percent_encoded_or_file_uris(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("sub dir/bad.dsl"))
    (res,) = sarif(capsys, "sub dir/bad.dsl")["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "sub%20dir/bad.dsl"
    absolute = (tmp_path / "sub dir" / "bad.dsl").resolve()
    (res,) = sarif(capsys, absolute)["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == absolute.as_uri()


def fingerprints(log: dict) -> list[str]:
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]]


def test_sarif_partial_fingerprints_are_stable_across_runs_and_line_moves(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("bad.dsl"))
    first, second = sarif(capsys, "bad.dsl"), sarif(capsys, "bad.dsl")
    assert fingerprints(first) == fingerprints(second)
    assert first == second  # the whole log is byte-for-byte reproducible
    copy_fixture("bad.dsl", Path("bad.dsl"), insert=3)  # the finding moves three lines down
    moved = sarif(capsys, "bad.dsl")
    assert moved["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 27
    assert fingerprints(moved) == fingerprints(first)
    copy_fixture("bad.dsl", Path("other.dsl"))
    (fp_other,) = fingerprints(sarif(capsys, "other.dsl"))
    assert fp_other != fingerprints(first)[0]  # another file is another finding


def test_sarif_fingerprints_differ_for_repeated_findings_on_one_line():
    span = Span("x.dsl", 3, 1, 3, 5)
    same = [Diagnostic("D101", "one", span), Diagnostic("D101", "two", span)]
    log = to_sarif(same, SourceCache())
    (a, b) = fingerprints(log)
    assert a != b and a.split(":")[0] == b.split(":")[0]


# ---------------------------------------------------------------- github


def test_github_format_lines_exactly(bad, capsys):
    d = the_finding(bad)
    r = run(capsys, "check", bad, "--format", "github")
    assert r.rc == 1
    assert r.out == f"::error file=bad.dsl,line=24,col=3,title=D101::{d.message} Fix: {FIX}\n"


def test_github_format_escapes_properties_and_data_and_maps_severities():
    diags = [
        Diagnostic("L001", "50% done\nnext", Span("a,b:c.dsl", 2, 4), Severity.WARNING, "drop it"),
        Diagnostic("X001", "fyi", Span("n.dsl", 1, 1), Severity.NOTE),
    ]
    out = format_findings("github", diags, SourceCache())
    assert out == (
        "::warning file=a%2Cb%3Ac.dsl,line=2,col=4,title=L001::50%25 done%0Anext Fix: drop it\n"
        "::notice file=n.dsl,line=1,col=1,title=X001::fyi\n"
    )


def test_every_format_renders_an_empty_list():
    for fmt in FORMATS:
        format_findings(fmt, [], SourceCache())
    with pytest.raises(ValueError):
        format_findings("xml", [], SourceCache())


# ---------------------------------------------------------------- exit codes


def test_exit_0_clean_1_findings_2_front_end_error(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("good.dsl", Path("good.dsl"))
    copy_fixture("bad.dsl", Path("bad.dsl"))
    Path("broken.dsl").write_text("layer x( {\n", encoding="utf-8")
    assert run(capsys, "check", "good.dsl").rc == 0
    assert run(capsys, "check", "bad.dsl").rc == 1
    assert run(capsys, "check", "broken.dsl").rc == 2
    assert run(capsys, "check", "bad.dsl", "broken.dsl").rc == 2  # an error beats findings
    assert run(capsys, "check", "missing.dsl").rc == 2  # E102


def test_fail_on_warning_and_note(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("good.dsl", Path("good.dsl"), edit={24: "  # dslc: ignore[D101] stale"})  # L001 warning
    assert run(capsys, "check", "good.dsl").rc == 0  # default: --fail-on error
    assert run(capsys, "check", "good.dsl", "--fail-on", "error").rc == 0
    assert run(capsys, "check", "good.dsl", "--fail-on", "warning").rc == 1
    assert run(capsys, "check", "good.dsl", "--fail-on", "note").rc == 1


def test_fail_on_note_counts_notes(good, monkeypatch, capsys):
    import dsl.driver.coverage

    note = Diagnostic("D101", "just so you know", Span(str(good), 24, 3), Severity.NOTE)
    monkeypatch.setattr(dsl.driver.coverage, "run_rules", lambda graph, ctx, codes=None: [note])
    assert run(capsys, "check", good).rc == 0
    assert run(capsys, "check", good, "--fail-on", "warning").rc == 0
    r = run(capsys, "check", good, "--fail-on", "note")
    assert r.rc == 1
    assert r.out.startswith("good.dsl:24:3: D101 note: just so you know\n")
    assert r.err == "1 file(s) checked: 0 error(s), 0 warning(s), 1 note(s)\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["check", "bad.dsl", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
        (["check", "bad.dsl", "--fail-on", "fatal"], "argument --fail-on: invalid choice: 'fatal'"),
        (["check", "bad.dsl", "--preset", "a9"], "argument --preset: invalid choice: 'a9'"),
        (["check", "bad.dsl", "--select", "ZZ9"], "--select ZZ9: matches no dslc code"),
        (["check", "bad.dsl", "--ignore", ","], "--ignore expects a comma-separated list"),
        (["check", "bad.dsl", "--config", "nope.toml"], "--config nope.toml: no such file"),
        (["check", "bad.dsl", "--set", "EP"], "--set expects NAME=VALUE"),
        (["check"], "the following arguments are required: PATH"),
        (["check", "empty_dir"], "files found under the given paths"),
        (["check", "bad.dsl", "--bogus"], "unrecognized arguments: --bogus"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_exit_2_with_e104_and_no_traceback(bad, capsys, argv, message):
    Path("empty_dir").mkdir()
    r = run(capsys, *argv)
    assert r.rc == 2
    assert r.out == ""
    assert r.err.startswith("<command line>: E104 ")
    assert message in r.err


def test_internal_error_in_a_rule_exits_2_without_traceback(good, monkeypatch, capsys):
    import dsl.driver.coverage

    def boom(graph, ctx, codes=None):
        raise RuntimeError("rule exploded")

    monkeypatch.setattr(dsl.driver.coverage, "run_rules", boom)
    r = run(capsys, "check", good, internal_ok=True)
    assert r.rc == 2
    assert r.err == (
        "dslc: internal error: RuntimeError: rule exploded\n"
        "This is a bug in dslc, not a mistake in your input. Please report it to the dslc maintainers "
        "with the command line, the input files and the output of the same command with --debug.\n"
    )
