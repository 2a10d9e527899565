"""``dslc check`` over a tree of real PyPTO model files: coverage of the graph and time per file.

    python bench/bench_corpus.py ../shared/corpus/pypto-lib/models [--markdown] [--json F]

For every PyPTO file of the tree (the files ``dslc check DIR`` lints), one line:

- ``src``: task scopes in the source -- ``with pl.at(CORE_GROUP)``, ``with pl.spmd``,
  ``for ... in pl.spmd`` (the single ``pl.at`` carrier of an spmd not counted again) -- in the
  functions reached from the file's ``@pl.jit`` entries by following calls (names resolved as
  the reader's module evaluation binds them, so a factory-bound kernel counts its selected
  implementation);
- ``graph``: those scopes that are tasks of the graph, ``grid``: of those, the ones whose grid
  the reader evaluated (no "grid size the reader cannot evaluate" note on them);
- ``notes``: P001 notes, by kind (the words after "not modelled:"), ``findings`` by code;
- ``ms``, ``CPU ms``: wall and CPU time of reading plus every lint rule, in this process (on a
  shared machine the CPU time is the one to compare with the targets).

The last lines total the corpus and time ``dslc check DIR`` itself, as a user runs it. The
targets (issue 10): no P004, >= 95 % of the source scopes in the graph with an evaluated grid,
the whole tree under 60 s and no file over 10 s on the 2-core machine.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsl.driver.cli_pypto import run_rules_safely  # noqa: E402
from lowering.checks import all_rules  # noqa: E402
from lowering.checks.rule import CheckContext  # noqa: E402
from lowering.pypto_reader import (  # noqa: E402
    looks_like_pypto,
    read_context,  # noqa: E402
    read_pypto,
)
from lowering.pypto_reader.constants import Params  # noqa: E402
from lowering.pypto_reader.graph import entries  # noqa: E402
from lowering.pypto_reader.modules import Loader  # noqa: E402
from lowering.pypto_reader.notes import Notes  # noqa: E402
from lowering.pypto_reader.values import FuncVal, ModuleVal  # noqa: E402

GRID_NOTE = "grid size the reader cannot evaluate"


def source_scopes(path: Path) -> set[tuple[str, int]]:
    """(file, line) of every task scope reached from the entries of ``path``."""
    token = read_context.begin_read(str(path))
    try:
        loader = Loader(Notes(), Params())
        module = loader.load_text(path, path.read_text(encoding="utf-8"))
        loader.run_main(module)
        todo = [(f.node, f.module) for f in entries(module)]
    except Exception:  # noqa: BLE001 - a file the reader cannot load has no countable scopes
        return set()
    finally:
        read_context.end_read(token)
    seen: set[int] = set()
    out: set[tuple[str, int]] = set()
    while todo:
        node, mod = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nested = {n.name: n for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n is not node}
        carriers: set[int] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.With | ast.For):
                kind = _scope_kind(n)
                if kind == "spmd" and isinstance(n, ast.With | ast.For) and len(n.body) == 1:
                    inner = n.body[0]
                    if isinstance(inner, ast.With) and _scope_kind(inner) == "at":
                        carriers.add(id(inner))
                if kind and id(n) not in carriers:
                    out.add((str(mod.path), n.lineno))
            if isinstance(n, ast.Call):
                for target in _callees(n):
                    if target in nested:
                        todo.append((nested[target], mod))
                        continue
                    v = mod.globals.get(target)
                    if isinstance(v, FuncVal):
                        todo.append((v.node, v.module))
                    elif isinstance(v, ModuleVal):
                        pass
    return out


def _scope_kind(n: ast.With | ast.For) -> str | None:
    calls = [i.context_expr for i in n.items] if isinstance(n, ast.With) else [n.iter]
    for c in calls:
        if isinstance(c, ast.Call):
            name = ast.unparse(c.func)
            if name.endswith(".spmd"):
                return "spmd"
            if name.endswith(".at") and "CORE_GROUP" in ast.unparse(c):
                return "at"
    return None


def _callees(call: ast.Call) -> list[str]:
    out = []
    f = call.func
    if isinstance(f, ast.Name):
        out.append(f.id)
    elif isinstance(f, ast.Attribute):
        out.append(f.attr)
    if ast.unparse(f).endswith(("submit", "spmd_submit")) and call.args:
        a = call.args[0]
        out.append(a.attr if isinstance(a, ast.Attribute) else getattr(a, "id", ""))
    return out


def lint(path: Path) -> tuple[list, list, float, float]:
    """Graphs, diagnostics, and wall and CPU milliseconds of reading plus every rule."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = read_pypto(path)
    codes = set(all_rules())
    findings = []
    for g in result.graphs:
        findings.extend(run_rules_safely(g, CheckContext(g), codes))
    wall, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    return result.graphs, [*result.diagnostics, *findings], wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--json", type=Path, help="write the per-file figures as JSON")
    ap.add_argument("--no-cli", action="store_true", help="skip timing `dslc check DIR`")
    ap.add_argument("--progress", action="store_true", help="print each file's line to stderr as it is done")
    args = ap.parse_args()
    files = sorted(
        p
        for p in args.tree.rglob("*.py")
        if looks_like_pypto(p.read_text(encoding="utf-8", errors="replace"))
    )
    rows = []
    totals: Counter = Counter()
    notes_total: Counter = Counter()
    findings_total: Counter = Counter()
    for path in files:
        graphs, diags, ms, cpu_ms = lint(path)
        src = source_scopes(path)
        grid_notes = {
            (d.span.file, d.span.line) for d in diags if d.code == "P001" and GRID_NOTE in d.message
        }
        in_graph = {(t.span.file, t.span.line) for g in graphs for t in g.tasks} & src
        evaluated = {s for s in in_graph if s not in grid_notes}
        kinds = Counter(_note_kind(d.message) for d in diags if d.code == "P001")
        codes = Counter(d.code for d in diags if d.code != "P001")
        row = dict(
            file=str(path.relative_to(args.tree)),
            src=len(src),
            graph=len(in_graph),
            grid=len(evaluated),
            tasks=sum(len(g.tasks) for g in graphs),
            notes=sum(kinds.values()),
            note_kinds=dict(kinds.most_common()),
            findings=dict(sorted(codes.items())),
            ms=round(ms),
            cpu_ms=round(cpu_ms),
        )
        rows.append(row)
        if args.progress:
            print(
                f"{row['file']} {row['src']} {row['graph']} {row['grid']} {row['ms']} ms "
                f"({row['cpu_ms']} ms CPU) {row['findings']}",
                file=sys.stderr,
                flush=True,
            )
        totals.update(
            src=row["src"], graph=row["graph"], grid=row["grid"], notes=row["notes"], tasks=row["tasks"]
        )
        notes_total.update(kinds)
        findings_total.update(codes)
        if args.json:  # after every file: a long run that is stopped still leaves its figures
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    _print(rows, args.markdown)
    worst = max(rows, key=lambda r: r["cpu_ms"]) if rows else None
    cover = totals["grid"] / totals["src"] * 100 if totals["src"] else 100.0
    print()
    print(
        f"files {len(rows)}  source scopes {totals['src']}  in graph {totals['graph']}  "
        f"with evaluated grid {totals['grid']} ({cover:.1f} %)  graph tasks {totals['tasks']}"
    )
    print(f"P001 notes {totals['notes']}  findings {dict(sorted(findings_total.items()))}")
    print("P001 by kind: " + "; ".join(f"{k} ({v})" for k, v in notes_total.most_common(12)))
    if worst:
        print(
            f"in-process total {sum(r['ms'] for r in rows) / 1000:.1f} s wall, "
            f"{sum(r['cpu_ms'] for r in rows) / 1000:.1f} s CPU; slowest file {worst['file']} "
            f"{worst['cpu_ms']} ms CPU"
        )
    if not args.no_cli:
        t0 = time.perf_counter()
        cpu0 = _children_cpu()
        subprocess.run([sys.executable, "-m", "dsl.driver.cli", "check", str(args.tree), "--format", "json"],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        print(
            f"dslc check {args.tree}: {time.perf_counter() - t0:.1f} s wall, {_children_cpu() - cpu0:.1f} s CPU"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _note_kind(message: str) -> str:
    text = message.removeprefix("not modelled: ").split(";")[0]
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\d+", "N", text)
    return text[:70]


def _print(rows: list[dict], markdown: bool) -> None:
    head = ["file", "src", "graph", "grid", "tasks", "notes", "findings", "ms", "CPU ms"]
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for r in rows:
        findings = " ".join(f"{k}×{v}" for k, v in r["findings"].items()) or "-"
        cells = [
            r["file"],
            r["src"],
            r["graph"],
            r["grid"],
            r["tasks"],
            r["notes"],
            findings,
            r["ms"],
            r["cpu_ms"],
        ]
        if markdown:
            print("| " + " | ".join(str(c) for c in cells) + " |")
        else:
            print(
                f"{r['file']:<52} {r['src']:>4} {r['graph']:>5} {r['grid']:>4} {r['tasks']:>5} {r['notes']:>5} "
                f"{r['ms']:>6} {r['cpu_ms']:>6}  {findings}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
