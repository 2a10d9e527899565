"""Bounded work (issue 14): the inputs that ran unbounded, timed end to end through the CLI.

Each case is a ``dslc`` command on a layer written here (the reproducers of issue 14, and a
task array at the limits), run in a child process under an 8 GB address-space cap and an outer
timeout; the figures are its wall time, CPU time and peak RSS (GNU ``/usr/bin/time``).
Before this work: spmd(10**7) check > 300 s / 6.3 GB, a layer loop at the cap > 300 s /
3.4 GB, a 1..1e8 scalar range 6.5 s / 4.1 GB (1..1e9 > 20 GB), ``run --timeout 20`` on a body
looping 1e9 times still running at 120 s.

Run: ``python bench/bench_bounded.py`` (``--only NAME`` for one case).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAP = 8 * 10**9
OUTER_TIMEOUT = 900

CASES = {
    "spmd_1e7_check": (
        "layer biggrid(N = 10000000) {\n  input  x: f32[N, 1]\n  output y: f32[N, 1]\n"
        "  task t spmd(N) on aiv { y[block, :] = x[block, :] * 2.0 }\n}\n",
        ["check"],
    ),
    "spmd_1e7_run_timeout_20": (
        "layer biggrid(N = 10000000) {\n  input  x: f32[N, 1]\n  output y: f32[N, 1]\n"
        "  task t spmd(N) on aiv { y[block, :] = x[block, :] * 2.0 }\n}\n",
        ["run", "--timeout", "20"],
    ),
    "layer_loop_1e6_check": (
        "layer bigloop(E = 1000000) {\n  input  x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  for e in parallel(E) {\n    task t[e] on aiv { y[e % 16, :] = x[e % 16, :] }\n  }\n}\n",
        ["check"],
    ),
    "task_array_99999_overlapping_check": (
        "layer bigloop(E = 99999) {\n  input  x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  for e in parallel(E) {\n    task t[e] on aiv { y[e % 16, :] = x[e % 16, :] }\n  }\n}\n",
        ["check"],
    ),
    "scalar_range_1e8_check": (
        "layer scalar_range(T = 64, D = 64) {\n  scalar n: i32 in 1..100000000\n  input  x: f32[T, D]\n"
        "  output y: f32[T, D]\n  task t on aiv { y[:, :] = x[:, :] }\n}\n",
        ["check"],
    ),
    "scalar_range_1e12_i64_check": (
        "layer scalar_range(T = 64, D = 64) {\n  scalar n: i64 in 1..1000000000000\n  input  x: f32[T, D]\n"
        "  output y: f32[T, D]\n  task t on aiv { y[:, :] = x[:, :] }\n}\n",
        ["check"],
    ),
    "body_loop_1e9_run_timeout_20": (
        "layer bodyloop(K = 1000000000) {\n  input  x: f32[16, 16]\n  output y: f32[16, 16]\n"
        "  task t on aiv {\n    let acc = zeros(f32, [16, 16])\n    for k in range(K) { acc = acc + x[:, :] }\n"
        "    y[:, :] = acc\n  }\n}\n",
        ["run", "--timeout", "20"],
    ),
    "big_tensor_run": (
        "layer bigtensor(R = 1000000, C = 1000000) {\n  input  x: f32[R, C]\n  output y: f32[16, 16]\n"
        "  task t on aiv { y[:, :] = x[0 : 16, 0 : 16] }\n}\n",
        ["run"],
    ),
}


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def measure(name: str, source: str, command: list[str], work: Path) -> dict:
    path = work / f"{name}.dsl"
    path.write_text(source)
    stats = work / f"{name}.time"
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(stats), sys.executable, "-m", "dsl.driver.cli"]
            + [command[0], str(path), *command[1:]],
            cwd=ROOT,
            env={**os.environ, "DSLC_CACHE_DIR": str(work / "cache")},
            capture_output=True,
            text=True,
            timeout=OUTER_TIMEOUT,
            preexec_fn=limit_memory,
        )
        code, text = done.returncode, (done.stdout + done.stderr).strip().splitlines()
    except subprocess.TimeoutExpired:
        code, text = "timeout", []
    wall = time.monotonic() - t0
    fields = stats.read_text().split()[-4:] if stats.exists() else ["0", "0", "0", "0"]
    cpu, rss_kb = float(fields[1]) + float(fields[2]), int(fields[3])
    line = next((t for t in text if " E1" in t or t.startswith(("timeout:", "refused", "1 file"))), "")
    return {"case": name, "exit": code, "wall": wall, "cpu": cpu, "rss_mb": rss_kb / 1024, "says": line}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(CASES))
    args = parser.parse_args()
    names = [args.only] if args.only else list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        print("| case | command | exit | wall (s) | CPU (s) | peak RSS (MB) | what it says |")
        print("|---|---|---:|---:|---:|---:|---|")
        for name in names:
            source, command = CASES[name]
            r = measure(name, source, command, Path(tmp))
            says = r["says"][:110].replace("|", "\\|")
            print(
                f"| {name} | `dslc {' '.join(command)}` | {r['exit']} | {r['wall']:.1f} | {r['cpu']:.1f} "
                f"| {r['rss_mb']:.0f} | {says} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
