"""Helpers for rule tests: lint a fixture and get (code, line, col) triples.

Test files sit in folders without __init__.py (pytest prepend import mode), so their
basenames must be unique across tests/."""

from __future__ import annotations

from pathlib import Path

from dsl.driver.coverage import lint_source
from dsl.frontend import compile_file
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def lint(path: Path, preset: str = "a2a3", overrides: dict[str, int] | None = None, codes=None):
    """Findings as ``dslc check`` reports them: at the compiled point and every point it covers."""
    findings, _graphs = lint_source(
        Path(path).read_text(encoding="utf-8"), str(path), overrides, None, codes, preset
    )
    return findings


def lint_at_point(path: Path, preset: str = "a2a3", overrides: dict[str, int] | None = None, codes=None):
    """Findings of the rules on the compiled graph alone (no other structure class, no probe)."""
    graphs = compile_file(path, overrides)
    out = []
    for g in graphs:
        out.extend(run_rules(g, CheckContext(g, preset=preset), codes))
    return out


def triples(diags) -> list[tuple[str, int, int]]:
    return sorted((d.code, d.span.line, d.span.col) for d in diags)


def lint_suppressed(path: Path, preset: str = "a2a3", overrides: dict[str, int] | None = None, codes=None):
    """Like ``lint``, with the file's ``# dslc: ignore[...]`` comments applied as ``dslc check`` does."""
    from lowering.checks.suppressions import apply_suppressions

    text = Path(path).read_text(encoding="utf-8")
    findings, graphs = lint_source(text, str(path), overrides, None, codes, preset)
    return apply_suppressions(findings, graphs, str(path), text)
