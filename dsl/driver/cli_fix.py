"""``dslc fix FILE...``: print the unified diff of the provable rewrites; ``--write`` applies
them through ``runtime.files.write_text`` (atomic, mode, owner and links kept, a read-only
file or one changed since it was read refused, E107, and the other files fixed). Exit 0 when
nothing is left to fix (or it was written), 1 when a diff was shown without ``--write``, 2 on
errors."""

from __future__ import annotations

import sys
from pathlib import Path

from dsl.driver import fix
from dsl.driver.render import render
from dsl.driver.session import write_error
from dsl.frontend import UTF8_BOM, compile_text, decode_source, read_source_bytes
from lowering.checks import run_rules
from lowering.checks.rule import CheckContext
from runtime.files import Snapshot, WriteError, write_text


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "fix",
        parents=[common],
        help="apply the rewrites the lint can prove safe (D101, D113, D117, N201, N202)",
    )
    p.add_argument("paths", nargs="+", metavar="FILE")
    p.add_argument(
        "--write", action="store_true", help="rewrite the files (atomically) instead of printing a diff"
    )


def fix_text(text: str, file: str, overrides=None, layer=None) -> tuple[str, list[str]]:
    """The fixed text and notes on findings that could not be fixed (repeats until stable)."""
    notes: list[str] = []
    for _ in range(8):  # each pass fixes what it can prove; edits never overlap within a pass
        graphs = compile_text(text, file, overrides, layer)
        findings = [d for g in graphs for d in run_rules(g, CheckContext(g), set(fix.FIXABLE))]
        edits, notes = fix.plan(text, file, graphs, findings)
        if not edits:
            break
        text = fix.apply(text, edits)
    return text, notes


def cmd_fix(session) -> int:
    changed = failed = False
    for raw in session.args.paths:
        path = Path(raw)
        data = read_source_bytes(path)
        old = decode_source(data, path)
        session.sources.add(str(path), old)
        new, notes = fix_text(old, str(path), session.overrides or None, session.args.layer)
        for n in notes:
            print(n, file=sys.stderr)
        if new == old:
            continue
        changed = True
        if session.args.write:
            bom = "\ufeff" if data.startswith(UTF8_BOM) else ""  # keep the file's byte-order mark
            try:
                write_text(path, bom + new, expected=Snapshot.of_bytes(path, data))
            except WriteError as err:  # report it and go on with the other files
                print(render(write_error(err), session.sources), file=sys.stderr)
                failed = True
                continue
            print(f"fixed {path}")
        else:
            sys.stdout.write(fix.unified_diff(old, new, str(path)))
    if failed:
        return 2
    return 1 if changed and not session.args.write else 0
