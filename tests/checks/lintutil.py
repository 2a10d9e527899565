"""Helpers for rule tests: lint a fixture and get (code, line, col) triples.

Test files sit in folders without __init__.py (pytest prepend import mode), so their
basenames must be unique across tests/."""

from __future__ import annotations

from pathlib import Path

from dsl.frontend import compile_file
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def lint(path: Path, preset: str = "a2a3", overrides: dict[str, int] | None = None, codes=None):
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

    graphs = compile_file(path, overrides)
    out = []
    for g in graphs:
        out.extend(run_rules(g, CheckContext(g, preset=preset), codes))
    return apply_suppressions(out, graphs, str(path), Path(path).read_text(encoding="utf-8"))
