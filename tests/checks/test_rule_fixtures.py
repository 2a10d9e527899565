"""The rule fixture harness: every rule, run on its own bad and good fixtures, as `dslc check`.

Each rule code has a folder ``tests/fixtures/rules/<CODE>/`` holding fixtures named ``bad*``
and ``good*`` (``.dsl`` layers, or ``.py`` PyPTO files read by the PyPTO reader) and an
``expected.txt`` beside them that lists every finding of every rule on each fixture, after
suppressions, as ``<fixture>:<line>:<col>: <CODE>`` (``<fixture>: clean`` when there is none).
The harness fails for a rule without a folder, without a bad fixture that reports its code,
without a good fixture that does not, for a fixture ``expected.txt`` does not list, and for any
difference between what the rules report and what is written down. Other files of the folder
(goldens, inputs of hand-built tests) are not fixtures of the harness.

``DSLC_UPDATE_FIXTURES=1 pytest tests/checks/test_rule_fixtures.py`` rewrites every
``expected.txt`` from what the rules report now (after adding fixtures, or merging a branch
that did); read the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lintutil import FIXTURES

from dsl.driver.cli import main
from lowering.checks import all_rules

RULES = FIXTURES / "rules"
EXPECTED = "expected.txt"
KINDS = ("bad", "good")
SUFFIXES = (".dsl", ".py")
CLEAN = "clean"


GOLDEN = "_golden.py"  # a layer's golden module beside it (N203), not a PyPTO fixture


def fixtures(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir()
        if p.suffix in SUFFIXES and p.name.startswith(KINDS) and not p.name.endswith(GOLDEN)
    )  # fmt: skip


def expectations(folder: Path) -> dict[str, list[tuple[int, int, str]]]:
    """``expected.txt``: fixture name -> sorted (line, col, code) findings."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    path = folder / EXPECTED
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition(":")
        rest = rest.strip()
        if rest == CLEAN:
            out.setdefault(name, [])
            continue
        where, _, code = rest.rpartition(":")
        row, _, col = where.partition(":")
        assert row.isdigit() and col.isdigit() and code.strip(), f"{path}:{n}: cannot read {raw!r}"
        out.setdefault(name, []).append((int(row), int(col), code.strip()))
    return {name: sorted(found) for name, found in out.items()}


def findings(path: Path, capsys) -> list[tuple[int, int, str]]:
    """What ``dslc check --format json`` reports on one file (every rule, suppressions applied)."""
    capsys.readouterr()
    code = main(["check", str(path), "--format", "json", "--fail-on", "note"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return sorted((d["location"]["line"], d["location"]["column"], d["code"]) for d in json.loads(out))


def write_expectations(folder: Path, capsys) -> None:
    lines = [
        f"# {folder.name}: every finding of every rule on the fixtures here, as `dslc check` reports them",
        "# (suppressions applied): <fixture>:<line>:<col>: <CODE>, or <fixture>: clean",
    ]
    for path in fixtures(folder):
        found = findings(path, capsys)
        lines += [f"{path.name}:{row}:{col}: {code}" for row, col, code in found] or [f"{path.name}: {CLEAN}"]
    (folder / EXPECTED).write_text("\n".join(lines) + "\n", encoding="utf-8")


CASES = [
    pytest.param(code, path, id=f"{code}/{path.name}")
    for code in all_rules()
    if (RULES / code).is_dir()
    for path in fixtures(RULES / code)
]


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_has_bad_and_good_fixtures_with_written_expectations(code, capsys):
    folder = RULES / code
    assert folder.is_dir(), f"rule {code} has no fixture folder {folder}"
    if os.environ.get("DSLC_UPDATE_FIXTURES"):
        write_expectations(folder, capsys)
    assert (folder / EXPECTED).is_file(), f"rule {code} has no {EXPECTED} beside its fixtures"
    names = [p.name for p in fixtures(folder)]
    expected = expectations(folder)
    assert sorted(expected) == names, f"{EXPECTED} must list exactly the fixtures {names}"
    bad = [n for n in names if n.startswith("bad")]
    good = [n for n in names if n.startswith("good")]
    assert bad and good, f"rule {code} needs a bad and a good fixture (has bad={bad}, good={good})"
    for name in bad:
        assert code in {c for _, _, c in expected[name]}, f"{name} must be reported by {code}"
    for name in good:
        assert code not in {c for _, _, c in expected[name]}, f"{name} must not be reported by {code}"


def test_every_fixture_folder_belongs_to_a_rule():
    assert sorted(p.name for p in RULES.iterdir() if p.is_dir()) == sorted(all_rules())


@pytest.mark.parametrize(("code", "path"), CASES)
def test_fixture_findings_are_exactly_the_written_ones(code, path, capsys):
    assert findings(path, capsys) == expectations(path.parent).get(path.name)


KNOWN_CORRECT = sorted((FIXTURES / "layers").glob("*.dsl")) + sorted((FIXTURES / "seed").glob("*_post.dsl"))


@pytest.mark.parametrize("path", KNOWN_CORRECT, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_known_correct_layers_are_clean_under_every_rule(path, capsys):
    """The fixed forms of the seed bugs and the reference layers: no rule may fire on them."""
    assert findings(path, capsys) == []
