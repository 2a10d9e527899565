"""Lint output formats: text, json, sarif (2.1.0) and github (workflow commands)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from dsl import __version__
from dsl.codes import CODES
from dsl.render import SourceCache, render
from lowering.checks import all_rules
from lowering.checks.suppressions import META_CODES
from lowering.source import Diagnostic, Severity

FORMATS = ("text", "json", "sarif", "github")
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def describe_code(code: str) -> tuple[str, str, str]:
    """(name, summary, full help) of any code dslc emits."""
    rules = all_rules()
    if code in rules:
        r = rules[code]
        return r.name, r.summary, r.docs
    if code in CODES:
        c = CODES[code]
        return c.summary.replace(" ", "_"), c.summary, c.explanation
    if code in META_CODES:
        return "suppression", META_CODES[code], META_CODES[code]
    return code, code, code


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


def _fingerprint(d: Diagnostic, sources: SourceCache) -> str:
    line = (sources.line(d.span.file, d.span.line) or "").strip()
    return hashlib.sha256(f"{d.code}\0{Path(d.span.file).name}\0{line}\0{d.message}".encode()).hexdigest()[
        :32
    ]


def to_sarif(diagnostics: list[Diagnostic], sources: SourceCache) -> dict:
    codes = sorted({d.code for d in diagnostics} | set(all_rules()))
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for code in codes:
        name, summary, docs = describe_code(code)
        level = _SARIF_LEVEL[all_rules()[code].severity] if code in all_rules() else "error"
        rules.append(
            {
                "id": code,
                "name": name,
                "shortDescription": {"text": summary},
                "fullDescription": {"text": summary},
                "help": {"text": docs, "markdown": docs},
                "defaultConfiguration": {"level": level},
            }
        )
    results = []
    for d in diagnostics:
        region = {"startLine": d.span.line, "startColumn": d.span.col}
        if d.span.end_line >= d.span.line and d.span.end_col:
            region.update(endLine=d.span.end_line, endColumn=d.span.end_col)
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message + (f" Fix: {d.hint}" if d.hint else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": Path(d.span.file).as_posix()},
                        "region": region,
                    }
                }
            ],
            "partialFingerprints": {"primaryLocationLineHash": _fingerprint(d, sources)},
        }
        if d.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "message": {"text": m},
                    "physicalLocation": {
                        "artifactLocation": {"uri": Path(s.file).as_posix()},
                        "region": {"startLine": s.line, "startColumn": s.col},
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
            lines.append(
                f"::{kind} file={_github_prop(d.span.file)},line={d.span.line},col={d.span.col},"
                f"title={_github_prop(d.code)}::{_github_escape(msg)}"
            )
        return "\n".join(lines) + ("\n" if lines else "")
    return "".join(render(d, sources, colour) + "\n" for d in diagnostics)
