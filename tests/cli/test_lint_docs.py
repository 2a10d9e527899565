"""docs/lint.md lists exactly the codes dslc emits, so the page cannot go stale."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest
from lintcli import ROOT

from dsl.codes import CODES
from dsl.driver.diagnostics import DRIVER_CODES
from dsl.driver.report import all_codes, markdown_code_table
from lowering.checks import all_rules
from lowering.checks.suppressions import META_CODES
from lowering.codegen.ascendc.diagnostics import CODES as TARGET_CODES
from lowering.pypto_reader import READER_CODES

DOC = ROOT / "docs" / "lint.md"


def documented_codes() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- codes:begin -->\n(.*?)<!-- codes:end -->", text, re.S)
    assert m, "docs/lint.md lacks the <!-- codes:begin --> ... <!-- codes:end --> table"
    return [
        row.split("|")[1].strip() for row in m.group(1).splitlines() if re.match(r"\|\s*[A-Z]\d{3}\s*\|", row)
    ]


def update_table() -> None:
    """Rewrite the table in docs/lint.md from the code (DSLC_UPDATE_DOCS=1 pytest ...)."""
    text = DOC.read_text(encoding="utf-8")
    table = markdown_code_table()
    text = re.sub(
        r"(<!-- codes:begin -->\n).*?(<!-- codes:end -->)",
        lambda m: m.group(1) + table + m.group(2),
        text,
        flags=re.S,
    )
    DOC.write_text(text, encoding="utf-8")


# Rules were still being added while this test was written; the lead removes this marker once
# the table is regenerated (DSLC_UPDATE_DOCS=1) after the last rule lands.
def test_code_table_lists_every_rule_and_front_end_code():
    expected = sorted(
        set(all_rules())
        | set(CODES)
        | set(DRIVER_CODES)
        | set(META_CODES)
        | set(READER_CODES)
        | set(TARGET_CODES)
    )
    assert all_codes() == expected
    if os.environ.get("DSLC_UPDATE_DOCS"):
        update_table()
    documented = documented_codes()
    if sorted(documented) != expected:
        print("docs/lint.md is out of date: run `DSLC_UPDATE_DOCS=1 pytest tests/cli/test_lint_docs.py`")
        print("or replace the table between the codes markers with:\n")
        print(markdown_code_table())
    assert len(documented) == len(set(documented)), "a code is listed twice"
    assert sorted(documented) == expected


def test_every_part_declares_its_codes_with_the_one_code_type():
    """``lowering.codes.Code`` is the declaration type of every code (issue 15: the PyPTO reader
    had a ``ReaderCode`` of its own, re-packed by the registry); the registry holds the entries
    as declared, each family set."""
    from dsl.driver.codes import registry
    from lowering.codes import Code

    for part in (CODES, DRIVER_CODES, META_CODES, READER_CODES, TARGET_CODES):
        assert {c: type(v) for c, v in part.items() if type(v) is not Code} == {}
    reg = registry()
    assert all(reg[c] is READER_CODES[c] for c in READER_CODES)
    assert {c.family for c in READER_CODES.values()} == {"pypto reader"}
    assert all(c.family for c in reg.values())


def test_generated_table_has_a_row_per_code():
    rows = markdown_code_table().splitlines()
    assert rows[0] == "| code | name | family | severity | summary |"
    assert [r.split("|")[1].strip() for r in rows[2:]] == all_codes()


def test_the_configuration_example_in_the_docs_is_valid(tmp_path):
    from dsl.driver.config import load_config
    from lowering.source import Severity

    text = DOC.read_text(encoding="utf-8")
    (example,) = re.findall(r"```toml\n(.*?)```", text, re.S)
    (tmp_path / "pyproject.toml").write_text(example, encoding="utf-8")
    cfg = load_config(path=tmp_path / "pyproject.toml")
    assert cfg.select and cfg.ignore and cfg.per_path_ignores
    assert (cfg.preset, cfg.fail_on, cfg.format) == ("a2a3", Severity.ERROR, "text")


def test_every_registered_code_is_explained(capsys):
    from dsl.driver.cli import main

    for code in all_codes():
        assert main(["explain", code.lower()]) == 0, code
        assert capsys.readouterr().out.startswith(f"{code}"), code


def test_a_code_declared_twice_is_refused(monkeypatch):
    from dsl.driver import codes

    reused = replace(META_CODES["L001"], code="D101")  # a suppression code that takes a rule's code
    monkeypatch.setattr(codes, "META_CODES", {**META_CODES, "D101": reused})
    codes.registry.cache_clear()
    try:
        with pytest.raises(ValueError, match="D101 is declared twice"):
            codes.registry()
    finally:
        monkeypatch.undo()
        codes.registry.cache_clear()
