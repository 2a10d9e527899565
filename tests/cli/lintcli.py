"""Helpers for the lint CLI tests: run ``dslc`` in-process in a scratch workspace.

Test folders have no __init__.py (pytest prepend import mode), so this basename is unique
across tests/."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from dsl.driver.cli import main
from dsl.frontend import compile_file
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext

ROOT = Path(__file__).resolve().parents[2]
D101 = ROOT / "tests" / "fixtures" / "rules" / "D101"
SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"

# A D101 source whose finding sits on a body line (the wait), not on the task header: the
# task both notifies and waits with several blocks.
SELF_WAIT = """\
layer selfwait(EP = 4, N = 4) {
  ranks EP
  scalar epoch: i32
  signal s: i32[EP]
  task both spmd(N) on aiv {
    for dst in range(EP) { if dst != rank { notify s[rank] @ dst += 1 } }
    for src in range(EP) { if src != rank { wait s[src] >= epoch * N } }
  }
}
"""
SELF_WAIT_HEADER, SELF_WAIT_LINE = 5, 7


@dataclass
class Result:
    rc: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err


def run(capsys, *argv, internal_ok: bool = False) -> Result:
    """``dslc ARGV`` in-process; asserts that no Python traceback (nor, unless ``internal_ok``,
    an internal error) escaped."""
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    captured = capsys.readouterr()
    result = Result(rc, captured.out, captured.err)
    assert "Traceback" not in result.both, result.both
    if not internal_ok:
        assert "internal error" not in result.both, result.both
    return result


def pin_rules(monkeypatch, codes: frozenset[str] = frozenset({"D101"})) -> None:
    """Run only these rules in ``dslc check``: the tests are about the CLI, and rules added
    later must not change their expected output. Selection, suppression and reporting still
    run as usual on what the rules find."""
    import dsl.driver.coverage

    real = dsl.driver.coverage.run_rules

    def pinned(graph, ctx, selected=None):
        chosen = set(codes) if selected is None else set(codes) & set(selected)
        return real(graph, ctx, chosen)

    monkeypatch.setattr(dsl.driver.coverage, "run_rules", pinned)


def workspace(tmp_path: Path, monkeypatch, pyproject: str = "") -> Path:
    """``tmp_path`` as the current directory, with a pyproject.toml of its own so that no
    configuration above it leaks in; returns the directory."""
    (tmp_path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def copy_fixture(name: str, dest: Path, *, edit: dict[int, str] | None = None, insert: int = 0) -> Path:
    """Copy ``D101/<name>`` to ``dest``; ``edit`` appends text to the given lines, ``insert``
    adds that many blank lines at the top (to move every line)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(D101 / name, dest)
    if edit or insert:
        lines = dest.read_text(encoding="utf-8").splitlines()
        for lineno, text in (edit or {}).items():
            lines[lineno - 1] += text
        dest.write_text("\n" * insert + "\n".join(lines) + "\n", encoding="utf-8")
    return dest


def expected_findings(path: Path):
    """D101's own findings for ``path`` (so tests need not repeat rule messages)."""
    out = []
    for g in compile_file(path):
        out.extend(run_rules(g, CheckContext(g), {"D101"}))
    return out
