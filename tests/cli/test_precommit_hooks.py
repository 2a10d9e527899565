""".pre-commit-hooks.yaml at the repository root: the hooks pre-commit would install.

PyYAML is not a dependency, so the file is read with a small parser for the subset it uses
(a list of flat mappings of scalars and flow lists); with PyYAML present, both readings must
agree."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from lintcli import ROOT, copy_fixture, pin_rules, run, workspace

HOOKS = ROOT / ".pre-commit-hooks.yaml"


@pytest.fixture(autouse=True)
def _only_d101(monkeypatch):
    pin_rules(monkeypatch)


def parse_hooks(text: str) -> list[dict]:
    hooks: list[dict] = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        m = re.fullmatch(r"(- |  )([a-z_]+):\s*(.*)", line)
        assert m, f"unexpected line in .pre-commit-hooks.yaml: {raw!r}"
        if m.group(1) == "- ":
            hooks.append({})
        value: object = m.group(3)
        if value.startswith("[") and value.endswith("]"):
            value = [v.strip() for v in value[1:-1].split(",") if v.strip()]
        elif value in ("true", "false"):
            value = value == "true"
        hooks[-1][m.group(2)] = value
    return hooks


@pytest.fixture(scope="module")
def hooks() -> dict[str, dict]:
    parsed = parse_hooks(HOOKS.read_text(encoding="utf-8"))
    return {h["id"]: h for h in parsed}


def test_hooks_file_defines_dslc_check_for_dsl_files(hooks):
    hook = hooks["dslc-check"]
    assert hook["entry"] == "dslc check"
    assert hook["language"] == "python"
    assert hook["files"] == r"\.dsl$"
    assert hook["name"] and hook["description"]
    files = re.compile(hook["files"])
    assert files.search("models/moe/dispatch.dsl")
    assert not files.search("models/moe/dispatch.py")
    assert not files.search("notes.dsl.md")


def test_pypto_hook_is_declared_and_documented_as_needing_the_reader(hooks):
    hook = hooks["dslc-check-pypto"]
    assert hook["entry"] == "dslc check"
    assert hook["language"] == "python"
    assert hook["types"] == ["python"]
    assert "PyPTO reader" in hook["description"]
    files = re.compile(hook["files"])
    assert files.search("models/deepseek/hc_pre.py")
    assert not files.search("tests/test_x.py")
    assert set(hooks) == {"dslc-check", "dslc-check-pypto"}


def test_every_hook_has_the_keys_pre_commit_requires(hooks):
    for hook in hooks.values():
        assert {"id", "name", "entry", "language"} <= set(hook)


def test_yaml_reading_agrees_when_pyyaml_is_present():
    yaml = pytest.importorskip("yaml")
    text = HOOKS.read_text(encoding="utf-8")
    assert yaml.safe_load(text) == parse_hooks(text)


def test_the_entry_runs_on_staged_files_like_pre_commit(hooks, tmp_path, monkeypatch, capsys):
    workspace(tmp_path, monkeypatch)
    good = copy_fixture("good.dsl", Path("good.dsl"))
    bad = copy_fixture("bad.dsl", Path("bad.dsl"))
    program, *args = shlex.split(hooks["dslc-check"]["entry"])
    assert program == "dslc"
    assert run(capsys, *args, good).rc == 0
    assert run(capsys, *args, good, bad).rc == 1
