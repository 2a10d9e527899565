"""CPU time and peak memory of `dslc check` on each model file, and on the whole folder.

Each check runs in its own process (``python -m dsl.driver.cli check FILE``), so its start-up
is counted and its memory is its own; the figures are the child's user + system CPU seconds and
its peak resident set (``os.wait4``).

Usage: ``python bench/bench_check_models.py [--only hc_post moe ...] [--no-folder]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


def measure(target: Path) -> tuple[float, float, float, int]:
    """(wall s, user s, system s, peak RSS MB) of one `dslc check` process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsl.driver.cli", "check", str(target)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own usage
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(err.decode(errors="replace"))
    return wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss // 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=(), help="model names (file stems) to check")
    ap.add_argument("--no-folder", action="store_true", help="skip `dslc check models` as one process")
    args = ap.parse_args()
    files = sorted(p for p in MODELS.rglob("*.dsl") if not args.only or p.stem in args.only)
    print("| target | wall s | CPU s (user + sys) | peak RSS MB |")
    print("|---|---:|---:|---:|")
    for target in [*files, *([] if args.no_folder or args.only else [MODELS])]:
        wall, user, system, rss = measure(target)
        name = target.relative_to(ROOT)
        print(
            f"| {name} | {wall:.1f} | {user + system:.1f} ({user:.1f} + {system:.1f}) | {rss} |", flush=True
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
