"""hc_pre linear split-K: FP32 atomics vs the ordered reduce_sum lowering vs a reduce folded
into the consumer phase (issue 5). Side by side in one run, on the a2a3 preset (24 AIC /
48 AIV), at the two row counts of the upstream perf quote (128 decode, 512 prefill rows).

Reports blocks dispatched, simulated makespan (abstract units from the generated kernels'
op counts; fifo policy), wall time (best of 3) and the number of distinct output bit
patterns over 10 random schedules. Run: python bench/bench_hc_pre_reduction.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DSLC_CACHE_DIR", tempfile.mkdtemp(prefix="dslc-bench-"))

from dsl.driver.api import compile_layer  # noqa: E402

LAYERS = Path(__file__).resolve().parent / "layers"
VARIANTS = ("hc_linear_atomic", "hc_linear_ordered", "hc_linear_folded")


def measure(name: str, rows: int) -> dict:
    layer = compile_layer(LAYERS / f"{name}.dsl", {"T": rows})
    (inputs,) = layer.make_inputs(seed=0)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        result = layer.run(inputs, cores="a2a3")
        best = min(best, time.perf_counter() - t0)
    patterns = {
        layer.run(inputs, cores="a2a3", policy="random", seed=s).outputs[0]["post"].tobytes()
        for s in range(10)
    }
    return {"blocks": result.blocks_run, "makespan": result.makespan, "wall": best, "patterns": len(patterns)}


def main() -> None:
    print("| rows | variant | blocks | makespan | vs atomic | wall (s) | bit patterns / 10 schedules |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for rows in (128, 512):
        base = None
        for name in VARIANTS:
            m = measure(name, rows)
            base = base or m["makespan"]
            ratio = f"{100 * (m['makespan'] / base - 1):+.1f} %"
            print(
                f"| {rows} | {name.removeprefix('hc_linear_')} | {m['blocks']} | {m['makespan']} | {ratio} | "
                f"{m['wall']:.3f} | {m['patterns']} |"
            )


if __name__ == "__main__":
    main()
