"""Generated kernels on the simulator vs the same math as one plain NumPy function (issue 3).

Side by side in one run: split-K projection (reduce_sum) at a real hc_pre size, and a
multi-op vector layer. Wall time is the best of 5 runs; the ratio is what matters.
Run: python bench/bench_run.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DSLC_CACHE_DIR", tempfile.mkdtemp(prefix="dslc-bench-"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from dsl.driver.api import compile_layer  # noqa: E402
from runtime import tileops  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn, n: int = 5) -> tuple[float, float]:
    """Best wall time and best CPU time of ``n`` runs (CPU time is steadier on a shared box)."""
    wall = cpu = float("inf")
    for _ in range(n):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu


def splitk_plain(x: np.ndarray, w: np.ndarray, splits: int, rows: int = 16) -> np.ndarray:
    """The same tiles and fold order, written as one NumPy function."""
    k = x.shape[1] // splits
    out = np.empty((x.shape[0], w.shape[0]), np.float32)
    for t0 in range(0, x.shape[0], rows):
        parts = [
            tileops.matmul(x[t0 : t0 + rows, s * k : (s + 1) * k], w[:, s * k : (s + 1) * k], b_trans=True)
            for s in range(splits)
        ]
        acc = parts[0]
        for p in parts[1:]:
            acc = tileops.add(acc, p)
        out[t0 : t0 + rows] = acc
    return out


def main() -> None:
    params = {"T": 512, "K": 16384, "N": 32, "SPLITS": 4}
    layer = compile_layer(ROOT / "tests" / "fixtures" / "run" / "splitk_reduce.dsl", params)
    (inputs,) = layer.make_inputs(seed=0)
    result = layer.run(inputs, cores="a2a3")
    expected = tileops.mul(splitk_plain(inputs["x"], inputs["w"], 4), 2.0)
    assert result.outputs[0]["y"].tobytes() == expected.tobytes(), "kernels and plain NumPy disagree"
    t_sim = best_of(lambda: layer.run(inputs, cores="a2a3"))
    t_plain = best_of(lambda: tileops.mul(splitk_plain(inputs["x"], inputs["w"], 4), 2.0))
    print("| layer | blocks | simulated wall / CPU (s) | plain NumPy wall / CPU (s) | ratio (CPU) |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| splitk_reduce T=512 K=16384 N=32 S=4 | {result.blocks_run} | {t_sim[0]:.4f} / {t_sim[1]:.4f} | "
        f"{t_plain[0]:.4f} / {t_plain[1]:.4f} | {t_sim[1] / t_plain[1]:.2f}x |"
    )


if __name__ == "__main__":
    main()
