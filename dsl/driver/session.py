"""One dslc invocation: its options, sources and diagnostics, and the lint of one file.

Shared by the commands of ``dsl.driver.cli`` (``check``), ``cli_run`` (``run`` lints first)
and ``cli_fix``; it imports no command module, so none of them imports another.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dsl.driver.cli_pypto import PY_SUFFIX, compile_pypto, lint_pypto_file
from dsl.driver.config import LintConfig, load_config, unknown_selectors
from dsl.driver.coverage import lint_source
from dsl.driver.diagnostics import diag
from dsl.driver.render import SourceCache, render
from dsl.driver.report import FORMATS
from dsl.frontend import compile_text, read_source
from lowering.checks import all_rules
from lowering.checks.suppressions import apply_suppressions
from lowering.ir import Graph
from lowering.source import CompileError, Diagnostic, Severity, Span
from runtime.files import WriteError


class UsageError(Exception):
    pass


def write_error(err: WriteError) -> Diagnostic:
    """E107 for a file that could not be written, at that file."""
    return diag("E107", Span.whole_file(err.path), err.reason)


def _set_option(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"--set expects NAME=VALUE, got {text!r}")
    try:
        return name.strip(), int(value.strip(), 0)
    except ValueError:
        raise UsageError(f"--set {name.strip()}: {value.strip()!r} is not an integer") from None


class Session:
    """One invocation: options, the source cache and the diagnostic printer."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.sources = SourceCache()
        self.colour = (
            not getattr(args, "no_color", True) and sys.stdout.isatty() and "NO_COLOR" not in os.environ
        )
        self.overrides = dict(_set_option(s) for s in getattr(args, "set", []) or [])

    def emit(self, diagnostics: list[Diagnostic]) -> None:
        for d in sorted(diagnostics, key=Diagnostic.sort_key):
            print(render(d, self.sources, self.colour))

    def compile(self, path: Path) -> list[Graph]:
        if path.suffix == PY_SUFFIX:
            return compile_pypto(self, path)
        text = read_source(path)
        self.sources.add(str(path), text)
        return compile_text(text, str(path), self.overrides, self.args.layer)


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values or [] for c in v.split(",") if c.strip())


def _selectors(option: str, values: list[str]) -> tuple[str, ...]:
    codes = _codes(values)
    if not codes:
        raise UsageError(f"{option} expects a comma-separated list of codes or code prefixes")
    bad = unknown_selectors(codes)
    if bad:
        raise UsageError(f"{option} {', '.join(bad)}: matches no dslc code (dslc explain CODE lists them)")
    return codes


def lint_config(args: argparse.Namespace) -> LintConfig:
    explicit = None
    if args.config:
        explicit = Path(args.config)
        if explicit.is_dir():
            explicit = explicit / "pyproject.toml"
        if not explicit.is_file():
            raise UsageError(f"--config {args.config}: no such file")
    cfg = load_config(path=explicit)
    if args.select:
        cfg.select = _selectors("--select", args.select)
    if args.ignore:
        cfg.ignore = cfg.ignore + _selectors("--ignore", args.ignore)
    if args.preset:
        cfg.preset = args.preset
    if args.early_queue is not None:
        cfg.early_queue = args.early_queue
    if args.fail_on:
        cfg.fail_on = Severity(args.fail_on)
    if args.format:
        cfg.format = args.format
    if cfg.format not in FORMATS:
        raise UsageError(f"unknown format {cfg.format!r}; one of {', '.join(FORMATS)}")
    return cfg


def lint_file(session: Session, path: Path, cfg: LintConfig) -> list[Diagnostic]:
    """Front-end errors, or lint findings after suppressions and selection."""
    if path.suffix == PY_SUFFIX:
        return lint_pypto_file(session, path, cfg)
    codes = {c for c in all_rules() if cfg.enabled(c, str(path))}
    try:
        text = read_source(path)
        session.sources.add(str(path), text)
        findings, graphs = lint_source(
            text, str(path), session.overrides, session.args.layer, codes, cfg.preset, cfg.early_queue
        )
    except CompileError as err:
        return err.diagnostics
    # several root layers of one file can yield the same finding: report it once
    findings = list({(d.code, d.span, d.message): d for d in findings}.values())
    text = "\n".join(session.sources.lines(str(path)) or [])
    findings = apply_suppressions(findings, graphs, str(path), text)
    return [d for d in findings if cfg.enabled(d.code, d.span.file)]
