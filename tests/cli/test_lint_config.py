"""`[tool.dslc]` in pyproject.toml: select, ignore, per-path-ignores, preset, fail-on, format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lintcli import copy_fixture, pin_rules, run, workspace

import dsl.driver.coverage
from dsl.driver.config import LintConfig, load_config
from lowering.source import Severity

RULES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"

STALE = "  # dslc: ignore[D101] stale"  # on good.dsl: an unused suppression, L001 (a warning)


@pytest.fixture(autouse=True)
def _only_d101(monkeypatch):
    pin_rules(monkeypatch)


def codes(capsys, *argv) -> tuple[int, list[str]]:
    r = run(capsys, "check", *argv, "--format", "json")
    assert r.rc in (0, 1), r.both
    return r.rc, [f["code"] for f in json.loads(r.out)]


def project(tmp_path, monkeypatch, config: str) -> Path:
    """A workspace with bad.dsl (D101) and good.dsl (L001) and this pyproject.toml."""
    workspace(tmp_path, monkeypatch, config)
    copy_fixture("bad.dsl", Path("bad.dsl"))
    copy_fixture("good.dsl", Path("good.dsl"), edit={24: STALE})
    return tmp_path


def test_no_dslc_table_means_defaults(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[project]\nname = "x"\n')
    assert codes(capsys, "bad.dsl", "good.dsl") == (1, ["D101", "L001"])
    cfg = load_config()
    assert cfg == LintConfig(source=tmp_path / "pyproject.toml")
    assert (cfg.preset, cfg.fail_on, cfg.format) == ("a2a3", Severity.ERROR, "text")


def test_select_from_config(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\nselect = ["L"]\n')
    assert codes(capsys, "bad.dsl", "good.dsl") == (0, ["L001"])
    assert codes(capsys, "bad.dsl", "good.dsl", "--select", "D") == (1, ["D101"])  # the CLI wins


def test_ignore_from_config_adds_to_the_command_line(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\nignore = ["d1"]\n')
    assert codes(capsys, "bad.dsl", "good.dsl") == (0, ["L001"])
    assert codes(capsys, "bad.dsl", "good.dsl", "--ignore", "L001") == (0, [])


def test_per_path_ignores_match_paths_relative_to_the_config(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc.per-path-ignores]\n"fixtures/**" = ["D101"]\n')
    copy_fixture("bad.dsl", Path("fixtures/rules/bad.dsl"))
    rc, got = codes(capsys, "bad.dsl", "fixtures")
    assert (rc, got) == (1, ["D101"])
    r = run(capsys, "check", ".", "--format", "json")
    assert [(f["location"]["file"], f["code"]) for f in json.loads(r.out)] == [
        ("bad.dsl", "D101"),
        ("good.dsl", "L001"),
    ]
    # from a subdirectory, the same pyproject.toml (found above) applies to the same files
    monkeypatch.chdir(tmp_path / "fixtures")
    assert codes(capsys, "rules/bad.dsl") == (0, [])


def test_per_path_ignores_without_a_slash_match_the_file_name(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc.per-path-ignores]\n"b*.dsl" = ["D"]\n"good.dsl" = ["L001"]\n')
    copy_fixture("bad.dsl", Path("deep/er/bad.dsl"))
    assert codes(capsys, "bad.dsl", "good.dsl", "deep") == (0, [])


def test_preset_from_config_and_command_line(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\npreset = "sim"\n')
    seen = []
    real = dsl.driver.coverage.run_rules

    def spy(graph, ctx, codes=None):
        seen.append((ctx.preset, ctx.cores["aiv"]))
        return real(graph, ctx, codes)

    monkeypatch.setattr(dsl.driver.coverage, "run_rules", spy)
    codes(capsys, "good.dsl")
    assert seen and set(seen) == {("sim", 16)}  # once per parameter point the lint visits
    seen.clear()
    codes(capsys, "good.dsl", "--preset", "a5")
    assert seen and set(seen) == {("a5", 72)}


def test_fail_on_from_config(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\nfail-on = "warning"\n')
    assert run(capsys, "check", "good.dsl").rc == 1  # L001 is a warning
    assert run(capsys, "check", "good.dsl", "--fail-on", "error").rc == 0  # the CLI wins


def test_format_and_underscore_keys_from_config(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\nformat = "json"\nfail_on = "note"\n')
    r = run(capsys, "check", "good.dsl")
    assert (r.rc, [f["code"] for f in json.loads(r.out)]) == (1, ["L001"])
    assert run(capsys, "check", "good.dsl", "--format", "github").out.startswith("::warning file=good.dsl,")


def test_explicit_config_file_or_directory(tmp_path, monkeypatch, capsys):
    project(tmp_path, monkeypatch, '[tool.dslc]\nselect = ["L"]\n')
    Path("ci").mkdir()
    Path("ci/lint.toml").write_text('[tool.dslc]\nselect = ["D"]\n', encoding="utf-8")
    Path("ci/pyproject.toml").write_text('[tool.dslc]\nignore = ["D", "L"]\n', encoding="utf-8")
    assert codes(capsys, "bad.dsl", "good.dsl") == (0, ["L001"])  # ./pyproject.toml
    assert codes(capsys, "bad.dsl", "good.dsl", "--config", "ci/lint.toml") == (1, ["D101"])
    assert codes(capsys, "bad.dsl", "good.dsl", "--config", "ci") == (0, [])


def config_error(capsys, tmp_path, monkeypatch, text: bytes | str, *argv) -> str:
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("bad.dsl"))
    data = text.encode() if isinstance(text, str) else text
    (tmp_path / "pyproject.toml").write_bytes(data)
    r = run(capsys, "check", "bad.dsl", *argv)
    assert r.rc == 2
    assert "bad.dsl:" not in r.both  # nothing is linted with a broken configuration
    (line,) = [ln for ln in r.both.splitlines() if " E106 " in ln]
    return line


def test_malformed_toml_is_e106_at_its_position(tmp_path, monkeypatch, capsys):
    line = config_error(capsys, tmp_path, monkeypatch, '[tool.dslc]\nselect = ["D"\nignore = []\n')
    assert line.startswith(f"{tmp_path / 'pyproject.toml'}:3:1: E106 not valid TOML: ")


def test_unterminated_toml_is_e106(tmp_path, monkeypatch, capsys):
    line = config_error(capsys, tmp_path, monkeypatch, "[tool.dslc]\nselect = [\n")
    assert " E106 not valid TOML: " in line


def test_unreadable_config_is_e106(tmp_path, monkeypatch, capsys):
    line = config_error(capsys, tmp_path, monkeypatch, b"[tool.dslc]\nselect = ['\xff']\n")
    assert f"{tmp_path / 'pyproject.toml'}: E106 [tool.dslc]: cannot read " in line


@pytest.mark.parametrize(
    "text, where, message",
    [
        ('[tool.dslc]\npreset = "a9"\n', "2:1", "preset 'a9' is not one of a2a3, a5, sim"),
        ('[tool.dslc]\nselect = ["D"]\nfrobs = 1\n', "3:1", "unknown key(s) frobs; known: "),
        ('[tool.dslc]\nfail-on = "fatal"\n', "2:1", "fail-on 'fatal' is not error, warning or note"),
        ('[tool.dslc]\nformat = "xml"\n', "2:1", "format 'xml' is not one of text, json, sarif, github"),
        ("[tool.dslc]\nearly-queue = 0\n", "2:1", "early-queue 0 is not a positive integer"),
        ('[tool.dslc]\nearly_queue = "64"\n', "2:1", "early-queue '64' is not a positive integer"),
        ('[tool.dslc]\n\nselect = "D"\n', "3:1", "'select' must be a list of codes or code prefixes"),
        ('[tool.dslc]\nignore = ["ZZ9"]\n', "2:1", "'ignore': 'ZZ9' matches no dslc code"),
        ('[tool.dslc]\nper-path-ignores = ["D"]\n', "2:1", "'per-path-ignores' must be a table"),
        (
            '[tool.dslc.per-path-ignores]\n  "a/*" = "D101"\n',
            "2:4",
            "'per-path-ignores.a/*' must be a list of codes",
        ),
        ("[tool]\ndslc = 3\n", "2:1", "must be a table"),
    ],
)
def test_bad_values_are_e106_at_the_key(tmp_path, monkeypatch, capsys, text, where, message):
    line = config_error(capsys, tmp_path, monkeypatch, text)
    assert line.startswith(f"{tmp_path / 'pyproject.toml'}:{where}: E106 [tool.dslc]: {message}")


def test_early_queue_from_config_reaches_d110_and_the_command_line_wins(tmp_path, monkeypatch, capsys):
    """D110's bad fixture overflows 64 from EP=16 and the default 128 only at EP=32."""
    monkeypatch.undo()  # the autouse pin to D101
    pin_rules(monkeypatch, frozenset({"D110"}))
    workspace(tmp_path, monkeypatch, "[tool.dslc]\nearly-queue = 64\n")
    Path("bad.dsl").write_text((RULES / "D110" / "bad.dsl").read_text(encoding="utf-8"), encoding="utf-8")
    assert load_config().early_queue == 64

    def message(*argv) -> str:
        r = run(capsys, "check", "bad.dsl", "--format", "json", "--select", "D110", *argv)
        (finding,) = json.loads(r.out)
        return finding["message"]

    assert "early queue of simpler before #1812" in message()
    assert "(at EP in {16, 32})" in message()
    assert "known to publish on simpler after #1812" in message("--early-queue", "128")
    assert "more than the 200 entries of the AIV early queue (--early-queue 200)" in message(
        "--early-queue", "200"
    )


def test_bad_config_named_with_config_is_e106_too(tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    copy_fixture("bad.dsl", Path("bad.dsl"))
    Path("lint.toml").write_text('[tool.dslc]\npreset = "a9"\n', encoding="utf-8")
    r = run(capsys, "check", "bad.dsl", "--config", "lint.toml")
    assert r.rc == 2
    assert "lint.toml:2:1: E106 [tool.dslc]: preset 'a9'" in r.both
    assert "   = hint: see `dslc explain E106`" in r.both


def test_explain_knows_the_config_and_suppression_codes(capsys):
    for code in ("E106", "L001", "L002", "L003"):
        r = run(capsys, "explain", code.lower())
        assert r.rc == 0
        assert r.out.startswith(f"{code}: ")
