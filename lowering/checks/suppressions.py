"""``# dslc: ignore[CODE, ...] reason`` comments, on the finding's line or on its task header.

The reason is required (a suppression without one is itself an error, L002); a suppression
that silences nothing is reported (L001), so stale ones do not pile up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lowering.ir import Graph
from lowering.source import Diagnostic, Severity, Span

_PATTERN = re.compile(r"#\s*dslc:\s*ignore\[([A-Za-z0-9_,\s]*)\]\s*(.*)$")

META_CODES = {
    "L001": "unused suppression: the comment silences no finding",
    "L002": "suppression without a reason: say why the finding does not apply",
}


@dataclass
class Suppression:
    span: Span
    codes: tuple[str, ...]
    reason: str
    used: set[str] = field(default_factory=set)


def parse_suppressions(file: str, text: str) -> dict[int, Suppression]:
    out: dict[int, Suppression] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _PATTERN.search(line)
        if m:
            codes = tuple(c.strip().upper() for c in m.group(1).split(",") if c.strip())
            col = m.start() + 1
            out[lineno] = Suppression(
                Span(file, lineno, col, lineno, len(line) + 1), codes, m.group(2).strip()
            )
    return out


def apply_suppressions(
    findings: list[Diagnostic], graphs: list[Graph], file: str, text: str
) -> list[Diagnostic]:
    """Drop suppressed findings; add L001/L002 for unused or reason-less suppressions."""
    table = parse_suppressions(file, text)
    if not table:
        return findings
    headers: list[tuple[int, int, int]] = []  # (first line, last line, header line) of each task
    for g in graphs:
        for t in g.tasks:
            if t.span.file == file:
                headers.append((t.span.line, t.span.end_line or t.span.line, t.header_span.line))
    kept: list[Diagnostic] = []
    for d in findings:
        if d.span.file != file:
            kept.append(d)
            continue
        candidates = [table.get(d.span.line)]
        candidates += [table.get(h) for lo, hi, h in headers if lo <= d.span.line <= hi]
        hit = next((s for s in candidates if s is not None and d.code in s.codes and s.reason), None)
        if hit is None:
            kept.append(d)
        else:
            hit.used.add(d.code)
    for s in table.values():
        if not s.reason:
            kept.append(
                Diagnostic("L002", META_CODES["L002"], s.span, Severity.ERROR, "write the reason after ]")
            )
            continue
        unused = [c for c in s.codes if c not in s.used]
        if unused:
            kept.append(
                Diagnostic(
                    "L001",
                    f"unused suppression of {', '.join(unused)}: no such finding here",
                    s.span,
                    Severity.WARNING,
                    "remove the comment or the code from it",
                )
            )
    return kept
