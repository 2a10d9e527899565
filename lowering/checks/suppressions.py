"""``# dslc: ignore[CODE, ...] reason`` comments, on the finding's line or on its task header.

The reason is required (a suppression without one is itself an error, L002, and silences
nothing); a suppression that silences nothing is reported (L001), so stale ones do not pile
up; a ``# dslc:`` comment that is not of this form (``ignore D101``, ``ignore[]``, a typo) is
an error too (L003), rather than a suppression that silently does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lowering.codes import Code
from lowering.ir import Graph
from lowering.source import Diagnostic, Severity, Span

_PATTERN = re.compile(r"#\s*dslc\s*:\s*ignore\s*\[([A-Za-z0-9_,\s]*)\]\s*(.*)$")
_DIRECTIVE = re.compile(r"#\s*dslc\s*:")

_HOW = (
    "A suppression is a comment `# dslc: ignore[CODE, ...] reason` on the line of a finding or on "
    "the header line of the task that contains it. The reason is required (L002); a suppression "
    "that silences nothing is reported (L001); a `# dslc:` comment of any other form is an error "
    "(L003). See docs/lint.md, section Suppressions."
)
META_CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            "L001",
            "unused suppression: the comment silences no finding",
            _HOW,
            Severity.WARNING,
            name="unused_suppression",
        ),
        Code(
            "L002",
            "suppression without a reason: say why the finding does not apply",
            _HOW,
            name="suppression_without_a_reason",
        ),
        Code(
            "L003",
            "malformed dslc comment: write `# dslc: ignore[CODE, ...] reason`",
            _HOW,
            name="malformed_dslc_comment",
        ),
    )
}


@dataclass
class Suppression:
    span: Span
    codes: tuple[str, ...]
    reason: str
    used: set[str] = field(default_factory=set)


def parse_suppressions(file: str, text: str) -> dict[int, Suppression]:
    """Suppression comments by line; a malformed ``# dslc:`` comment has no codes."""
    out: dict[int, Suppression] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        directive = _DIRECTIVE.search(line)
        if directive is None:
            continue
        m = _PATTERN.search(line, directive.start())
        span = Span(file, lineno, directive.start() + 1, lineno, len(line) + 1)
        if m is None or m.start() != directive.start():
            out[lineno] = Suppression(span, (), "")
            continue
        codes = tuple(c.strip().upper() for c in m.group(1).split(",") if c.strip())
        out[lineno] = Suppression(span, codes, m.group(2).strip())
    return out


def apply_suppressions(
    findings: list[Diagnostic], graphs: list[Graph], file: str, text: str
) -> list[Diagnostic]:
    """Drop suppressed findings; add L001/L002/L003 for unused, reason-less or malformed ones."""
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
        if not s.codes:
            kept.append(
                Diagnostic(
                    "L003",
                    META_CODES["L003"].summary,
                    s.span,
                    Severity.ERROR,
                    "list the codes in brackets, then the reason: `# dslc: ignore[D101] why it is safe`",
                )
            )
            continue
        if not s.reason:
            kept.append(
                Diagnostic(
                    "L002", META_CODES["L002"].summary, s.span, Severity.ERROR, "write the reason after ]"
                )
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
