"""How long the test suite takes and how much memory it needs (the figures README.md states).

    python bench/bench_suite.py [-- PYTEST ARGS...]

runs ``python -m pytest -q`` (plus the arguments after ``--``) in a child process and prints one
JSON object: wall and CPU seconds, the exit code, the peak resident memory of the largest single
process (``ru_maxrss`` of the children) and the peak of the whole process tree (pytest and every
process it starts, ruff, ``dslc`` subprocesses, MPI ranks), sampled from ``/proc`` every 0.2 s.
Linux only (``/proc``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _tree_rss_kb(root: int) -> int:
    """Resident kB of ``root`` and all its descendants, from one pass over /proc."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            pages = int((entry / "statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while being read
        fields = stat[stat.rindex(")") + 2 :].split()
        parent[int(entry.name)] = int(fields[1])
        rss[int(entry.name)] = pages * PAGE_KB
    total, stack = 0, [root]
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    cmd = [sys.executable, "-m", "pytest", "-q", *extra]
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    peak_tree = 0
    while proc.poll() is None:
        peak_tree = max(peak_tree, _tree_rss_kb(proc.pid))
        time.sleep(0.2)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "command": " ".join(cmd[1:]),
                "exit": proc.returncode,
                "wall_s": round(wall, 1),
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                "peak_process_rss_mb": round(usage.ru_maxrss / 1024),
                "peak_tree_rss_mb": round(peak_tree / 1024),
                "load_avg_1min_at_end": round(os.getloadavg()[0], 1),
            }
        )
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
