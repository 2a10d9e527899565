"""Dispatch throughput of the simulator, in blocks per second of wall clock.

Two 10k-block graphs with trivial kernels, so the figure is the scheduler's own cost:

* ``chain``   - 100 AIV tasks x 100 blocks, each task depending on the previous one
  (SPMD waves: 16 running + 16 pending slots on the ``sim`` preset);
* ``singles`` - 10 000 single-block tasks, each depending on the previous one.

Each graph runs under every policy; the best of ``--repeat`` runs is reported.  The target is
>= 50 000 blocks/s.  Run: ``.venv/bin/python bench/bench_simulator.py``.
"""

from __future__ import annotations

import argparse
import time

from runtime.program import Program, TaskSpec
from runtime.simulator import simulate


def _noop(ctx: object) -> None:
    return None


def chain(tasks: int = 100, blocks: int = 100) -> Program:
    """``tasks`` SPMD tasks of ``blocks`` blocks, chained."""
    specs = tuple(TaskSpec(f"t{i}", "aiv", blocks, _noop, deps=(i - 1,) if i else ()) for i in range(tasks))
    return Program("bench_chain", (), (), specs)


def singles(n: int = 10_000) -> Program:
    """``n`` single-block tasks, chained."""
    specs = tuple(TaskSpec(f"t{i}", "aiv", 1, _noop, deps=(i - 1,) if i else ()) for i in range(n))
    return Program("bench_singles", (), (), specs)


def measure(program: Program, policy: str, repeat: int) -> tuple[float, int]:
    """Best blocks/s over ``repeat`` runs, and the block count."""
    best = 0.0
    blocks = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = simulate(program, {}, cores="sim", policy=policy, seed=1)
        dt = time.perf_counter() - t0
        blocks = res.blocks_run
        best = max(best, blocks / dt)
    return best, blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for label, prog in (("chain 100x100", chain()), ("singles 10k", singles())):
        for policy in ("fifo", "random", "adversarial"):
            rate, blocks = measure(prog, policy, args.repeat)
            print(f"{label:<14} {policy:<12} {blocks:>6} blocks  {rate:>10,.0f} blocks/s")


if __name__ == "__main__":
    main()
