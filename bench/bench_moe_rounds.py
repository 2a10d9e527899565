"""The MoE layer at EP16 under the adversarial scheduling policy, 20 seeds x 40 rounds (issue 6).

models/deepseek_v4_flash/moe.dsl at EP = 16 ranks, N_LOCAL = 16 experts per rank, T = 128
tokens per rank, TOPK = 6, with the hidden sizes reduced to D = 256, I = 128 (the task graph
and the handshakes do not depend on them), on the ``sim`` preset (8 AIC / 16 AIV per rank),
for each signal-clearing mode, and its pre-fix form tests/fixtures/seed/moe_pre.dsl
(docs/runtime-semantics.md §15.2) under the same runs. Per variant: seeds that completed every
round, seeds that deadlocked (and in which round), blocks dispatched, simulated makespan, wall time
and CPU time (on a shared machine the CPU seconds are the stable figure). The post-fix runs
are validated against the golden after their last round (memory persists across rounds).
tests/models/test_moe_model.py runs 3 of these seeds.

Run: python bench/bench_moe_rounds.py [--seeds 20] [--rounds 40]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_models.py
os.environ.setdefault("DSLC_CACHE_DIR", tempfile.mkdtemp(prefix="dslc-bench-"))

import numpy as np  # noqa: E402

from dsl.driver.api import compile_layer  # noqa: E402
from runtime.simulator import DeadlockError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EP16 = {"EP": 16, "N_LOCAL": 16, "T": 128, "TOPK": 6, "D": 256, "I": 128, "VOCAB": 8192}
VARIANTS = {
    "post-fix, RETIRE=1": (ROOT / "models" / "deepseek_v4_flash" / "moe.dsl", {"RETIRE": 1}),
    "post-fix, RETIRE=0": (ROOT / "models" / "deepseek_v4_flash" / "moe.dsl", {"RETIRE": 0}),
    "pre-fix (moe_pre.dsl)": (ROOT / "tests" / "fixtures" / "seed" / "moe_pre.dsl", {"RETIRE": 1}),
}


def _no_huge_pages() -> None:
    """Sparse first touches of 16 ranks' receive windows would each zero a 2 MiB huge page."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    _set_madvise_hugepage(False)


def run_variant(path: Path, params: dict, seeds: int, rounds: int) -> dict:
    layer = compile_layer(path, {**EP16, **params})
    inputs = layer.make_inputs(seed=0)
    done, deadlocks, blocks, makespans, walls, cpus, valid = 0, [], [], [], [], [], 0
    for seed in range(seeds):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = layer.run(inputs, policy="adversarial", seed=seed, rounds=rounds, timeout=3600.0)
        except DeadlockError as err:
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            stuck = [s for s in err.report.stuck if s.task.endswith("wait")]
            deadlocks.append((seed, 1 + min((s.round for s in stuck), default=0)))
            continue
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        done += 1
        blocks.append(result.blocks_run)
        makespans.append(result.makespan)
        valid += bool(layer.validate(inputs, result).passed)
    return {
        "done": done,
        "deadlocks": deadlocks,
        "blocks": int(np.mean(blocks)) if blocks else 0,
        "makespan": int(np.mean(makespans)) if makespans else 0,
        "wall": sum(walls),
        "per_seed": float(np.mean(walls)),
        "cpu_per_seed": float(np.mean(cpus)),
        "valid": valid,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    _no_huge_pages()
    print(
        "| variant | seeds x rounds | completed | deadlocked (seed: round) | validated after the last round "
        "| blocks per run | simulated makespan | wall total (s) | wall per seed (s) | CPU per seed (s) |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, (path, params) in VARIANTS.items():
        r = run_variant(path, params, args.seeds, args.rounds)
        dl = ", ".join(f"{s}: {rnd}" for s, rnd in r["deadlocks"]) or "none"
        print(
            f"| {name} | {args.seeds} x {args.rounds} | {r['done']} | {dl} | {r['valid']}/{r['done']} "
            f"| {r['blocks']} | {r['makespan']} | {r['wall']:.1f} | {r['per_seed']:.1f} | {r['cpu_per_seed']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
