"""AscendC target: emission time, kernels and lines per layer, type-check time, support.

    python bench/bench_ascendc.py [--repeat 3] [--no-typecheck] [--only TEXT]

For every model layer (default parameters) and every simulator fixture: the front end's
time (parse + elaborate, for scale), the emitter's (``render_project``, best of --repeat),
the kernels and the lines of the kernels header and host program, and -- with
``DSLC_ASC_DEVKIT`` set -- the wall and CPU time of ``g++ -fsyntax-only`` of the layer's
project (kernels and host program in one unit) against the asc-devkit headers. A layer the
target refuses is listed with the code and message of its first refusal. ``--only`` keeps the
layers whose ``file:layer`` name contains TEXT (repeatable). Prints Markdown.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ascendc"))

from asctoolchain import find_devkit, one_unit, typecheck  # noqa: E402
from ascutil import SOURCES  # noqa: E402

from dsl.frontend import compile_file  # noqa: E402
from lowering.codegen.ascendc.emit import render_project  # noqa: E402
from lowering.source import CompileError  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-typecheck", action="store_true")
    ap.add_argument("--only", action="append", default=[], help="keep layers whose name contains this")
    args = ap.parse_args()
    devkit = None if args.no_typecheck else find_devkit()[0]
    rows, refused = [], []
    for path in SOURCES:
        t0 = time.perf_counter()
        graphs = compile_file(path)
        front = (time.perf_counter() - t0) / max(len(graphs), 1)
        for graph in graphs:
            name = f"{path.relative_to(ROOT).as_posix()}:{graph.name}"
            if args.only and not any(text in name for text in args.only):
                continue
            best, files, error = float("inf"), None, None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                try:
                    files = render_project(graph, "h", "v")
                except CompileError as err:
                    error = err
                    break
                best = min(best, time.perf_counter() - t0)
            if error is not None:
                d = error.diagnostics[0]
                refused.append(
                    (name, d.code, f"{d.span.line}:{d.span.col} {d.message}", len(error.diagnostics))
                )
                continue
            kernels = next(t for n, t in files.items() if n.endswith("_kernels.h"))
            host = next(t for n, t in files.items() if n.endswith(".asc"))
            check = ""
            if devkit is not None:
                with tempfile.TemporaryDirectory() as tmp:
                    work = Path(tmp)
                    for fname, text in files.items():
                        (work / fname).write_text(text, encoding="utf-8")
                    (work / "unit.cpp").write_text(one_unit([files]), encoding="utf-8")
                    cpu0, t0 = _children_cpu(), time.perf_counter()
                    proc = typecheck(devkit, work, "unit.cpp")
                    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
                check = f"{wall:.1f} s ({cpu:.1f} s CPU){'' if proc.returncode == 0 else ' FAILED'}"
            rows.append(
                (
                    name,
                    len(graph.tasks),
                    kernels.count('extern "C" __global__'),
                    len(kernels.splitlines()),
                    len(host.splitlines()),
                    f"{front * 1000:.0f} ms",
                    f"{best * 1000:.0f} ms",
                    check or "-",
                )
            )
    print("| layer | tasks | kernels | kernel lines | host lines | front end | emission | type check |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print()
    print(f"{len(rows)} layers emitted, {len(refused)} refused:")
    print()
    print("| layer | first refusal | where, why | refusals |")
    print("|---|---|---|---:|")
    for name, code, why, n in refused:
        print(f"| {name} | {code} | {why} | {n} |")


if __name__ == "__main__":
    main()
