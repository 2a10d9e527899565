"""Lint output formats: text, json, sarif (2.1.0) and github (workflow commands)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from dsl.driver.codes import lookup, registry
from dsl.driver.config import FORMATS
from dsl.driver.render import SourceCache, render
from dsl.version import __version__
from lowering.checks import all_rules
from lowering.codes import Code
from lowering.source import Diagnostic, Severity

__all__ = ["FORMATS", "all_codes", "format_findings", "markdown_code_table", "to_sarif"]

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}
MAX_RELATED = 20


def one_per_site(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per source site and code: a scope an orchestration loop submits 40 times is
    one thing to fix, not 40. The first instance (in source order) stands for the others; its
    message says how many there are, and the others' related locations are kept (SARIF shows
    them as related locations of the one result)."""
    groups: dict[tuple, list[Diagnostic]] = {}
    for d in sorted(diagnostics, key=Diagnostic.sort_key):
        groups.setdefault((d.code, d.span.file, d.span.line, d.span.col), []).append(d)
    out = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1:
            out.append(first)
            continue
        related = list(first.related)
        for d in group[1:]:
            for r in d.related:
                if r not in related and len(related) < MAX_RELATED:
                    related.append(r)
        message = f"{first.message} [{len(group)} instances at this site; this is the first]"
        out.append(replace(first, message=message, related=tuple(related)))
    return out


def _as_json(d: Diagnostic) -> dict:
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "fix": d.hint,
        "location": {
            "file": d.span.file,
            "line": d.span.line,
            "column": d.span.col,
            "end_line": d.span.end_line,
            "end_column": d.span.end_col,
        },
        "related": [{"file": s.file, "line": s.line, "column": s.col, "message": m} for s, m in d.related],
    }


def _uri(file: str) -> str:
    """A SARIF artifact URI: relative paths stay relative (to the repository root, for code
    scanning), absolute ones become ``file:`` URIs; either is percent-encoded."""
    path = Path(file)
    if path.is_absolute():
        return path.as_uri()
    return quote(PurePosixPath(path.as_posix()).as_posix(), safe="/")


def _fingerprints(diagnostics: list[Diagnostic], sources: SourceCache) -> list[str]:
    """One stable fingerprint per finding: rule, file and the text of the line (not its number,
    so that edits above a finding keep its identity), and the occurrence among equal keys."""
    seen: Counter[str] = Counter()
    out = []
    for d in diagnostics:
        line = (sources.line(d.span.file, d.span.line) or "").strip()
        digest = hashlib.sha256(f"{d.code}\0{_uri(d.span.file)}\0{line}".encode()).hexdigest()[:32]
        seen[digest] += 1
        out.append(f"{digest}:{seen[digest]}")
    return out


def to_sarif(diagnostics: list[Diagnostic], sources: SourceCache) -> dict:
    diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
    codes = sorted({d.code for d in diagnostics} | set(all_rules()))
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for code in codes:
        c = lookup(code) or Code(code, code, code, family="unknown")
        rules.append(
            {
                "id": code,
                "name": c.label,
                "shortDescription": {"text": c.summary},
                "fullDescription": {"text": c.explanation},
                "help": {"text": c.page, "markdown": c.page},
                "defaultConfiguration": {"level": _SARIF_LEVEL[c.severity]},
                "properties": {"tags": [c.family]},
            }
        )
    results = []
    for d, fingerprint in zip(diagnostics, _fingerprints(diagnostics, sources), strict=True):
        location: dict = {"artifactLocation": {"uri": _uri(d.span.file)}}
        if d.span.line:  # line 0: the file as a whole, no region
            region = location["region"] = {"startLine": d.span.line, "startColumn": max(d.span.col, 1)}
            if d.span.end_line >= d.span.line and d.span.end_col >= 1:
                if d.span.end_line > d.span.line or d.span.end_col > d.span.col:
                    region.update(endLine=d.span.end_line, endColumn=d.span.end_col)
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message + (f" Fix: {d.hint}" if d.hint else "")},
            "locations": [{"physicalLocation": location}],
            "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        }
        if d.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "message": {"text": m},
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(s.file)},
                        "region": {"startLine": s.line, "startColumn": max(s.col, 1)},
                    },
                }
                for i, (s, m) in enumerate(d.related)
            ]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "dslc", "version": __version__, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _github_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_prop(text: str) -> str:
    return _github_escape(text).replace(":", "%3A").replace(",", "%2C")


def format_findings(
    fmt: str, diagnostics: list[Diagnostic], sources: SourceCache, colour: bool = False
) -> str:
    diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
    if fmt == "json":
        return json.dumps([_as_json(d) for d in diagnostics], indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(diagnostics, sources), indent=2) + "\n"
    if fmt == "github":
        lines = []
        for d in diagnostics:
            kind = {"error": "error", "warning": "warning", "note": "notice"}[d.severity.value]
            msg = d.message + (f" Fix: {d.hint}" if d.hint else "")
            where = f",line={d.span.line},col={d.span.col}" if d.span.line else ""
            lines.append(
                f"::{kind} file={_github_prop(d.span.file)}{where},"
                f"title={_github_prop(d.code)}::{_github_escape(msg)}"
            )
        return "\n".join(lines) + ("\n" if lines else "")
    if fmt != "text":
        raise ValueError(f"unknown output format {fmt!r}; one of {', '.join(FORMATS)}")
    return "".join(render(d, sources, colour) + "\n" for d in diagnostics)


def all_codes() -> list[str]:
    """Every code dslc can emit (``dsl.driver.codes``), sorted."""
    return list(registry())


def markdown_code_table() -> str:
    """The table of codes in docs/lint.md (a test keeps the doc in step with this)."""
    rows = ["| code | name | family | severity | summary |", "|---|---|---|---|---|"]
    for c in registry().values():
        text = c.explanation if c.family in ("front end", "driver") else c.summary
        summary = text.replace("|", "\\|")
        rows.append(f"| {c.code} | `{c.label}` | {c.family} | {c.severity.value} | {summary} |")
    return "\n".join(rows) + "\n"
