"""The DeepSeek-V4-Flash layers of models/ at their real configurations, simulated, against the
same math as one plain NumPy function (the layer's golden). Figures go to bench/README.md.

One function per layer (``bench_<layer>``), each returning a ``Row``; ``main`` runs them all
(or ``--only NAME ...``) and prints a markdown table. Every layer runs at its real
configuration: compile (not timed), inputs from the golden's fixture, the simulated run on
the a2a3 preset (24 AIC / 48 AIV: the fused hc_pre is one block per cluster), the golden
on the same inputs, then the golden comparison (the run must validate for its figures to
count). Layers that run in well under a second are timed best of 3-5 on both sides,
alternating; the others once. Wall time and the process's CPU time are both recorded; the
ratio is taken on CPU time, which a busy shared host does not inflate.

OpenBLAS is pinned to one thread (``OPENBLAS_NUM_THREADS=1``, set before NumPy loads unless
already set): the generated kernels issue thousands of small GEMMs, and OpenBLAS worker
threads spinning on a shared 2-core machine slowed them (and the golden) by 10-30x; one
thread for both sides keeps the ratio about the code, not the scheduler of the host.

Run: python bench/bench_models.py [--only hc_pre prefill_csa]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DSLC_CACHE_DIR", tempfile.mkdtemp(prefix="dslc-bench-"))

from dsl.driver.api import compile_layer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models" / "deepseek_v4_flash"


@dataclass
class Row:
    layer: str
    config: str
    blocks: int
    makespan: int
    sim_s: float  # wall clock
    golden_s: float
    sim_cpu: float  # CPU time of this process: the figure a busy shared host does not inflate
    golden_cpu: float
    validated: bool

    @property
    def ratio(self) -> float:
        return self.sim_cpu / self.golden_cpu


def timed(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def run_model(name: str, config: str, params: dict | None = None, repeat: int = 1) -> Row:
    """Compile ``models/deepseek_v4_flash/<name>.dsl`` at ``params`` (its defaults: the real
    configuration), run it on the simulator and its golden on the same inputs, alternately;
    layers that take well under a second are timed best of ``repeat`` (both sides)."""
    layer = compile_layer(MODELS / f"{name}.dsl", params or None)
    inputs = layer.make_inputs(seed=0)
    golden = layer.golden_module()
    sim = gold = (float("inf"), float("inf"))
    result = None
    for _ in range(repeat):
        wall, cpu, result = timed(lambda: layer.run(inputs, cores="a2a3", timeout=7200.0))
        sim = (min(sim[0], wall), min(sim[1], cpu))
        wall, cpu, _ = timed(lambda: golden.golden(inputs, layer.params))
        gold = (min(gold[0], wall), min(gold[1], cpu))
    validation = layer.validate(inputs, result)
    return Row(
        name, config, result.blocks_run, result.makespan, sim[0], gold[0], sim[1], gold[1], validation.passed
    )


def bench_hc_pre() -> Row:
    return run_model("hc_pre", "T=128, HC_DIM=16384 (decode)", repeat=5)


def bench_hc_pre_prefill() -> Row:
    return run_model("hc_pre", "T=512, HC_DIM=16384 (prefill)", {"T": 512}, repeat=3)


def bench_hc_pre_fused() -> Row:
    return run_model("hc_pre_fused", "T=128, HC_DIM=16384, 24 clusters", repeat=5)


def bench_hc_post() -> Row:
    return run_model("hc_post", "T=128, HC_DIM=16384", repeat=5)


def bench_prefill_indexer() -> Row:
    return run_model("prefill_indexer", "T=512, D=4096, 64 x 128 heads, start_pos 0")


def bench_prefill_csa() -> Row:
    return run_model("prefill_csa", "T=512, D=4096, 64 x 512 heads, PAD=384")


def bench_moe() -> Row:
    """EP16 at the real sizes: 16 simulated ranks x 16 experts, T=128 tokens per rank, D=4096,
    I=2048, top-6, hash routing (layer 0); one forward, one run on each side. NumPy's huge
    pages are off for this run: the 16 ranks' receive windows are touched sparsely, and each
    first touch of a 2 MiB page zeroes all of it (time and resident memory, nothing else)."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    previous = _set_madvise_hugepage(False)
    try:
        return run_model("moe", "EP=16, 16 experts/rank, T=128, D=4096, I=2048, top-6 (hash)")
    finally:
        _set_madvise_hugepage(previous)


BENCHES: dict[str, Callable[[], Row]] = {
    "hc_pre": bench_hc_pre,
    "hc_pre_prefill": bench_hc_pre_prefill,
    "hc_pre_fused": bench_hc_pre_fused,
    "hc_post": bench_hc_post,
    "prefill_indexer": bench_prefill_indexer,
    "prefill_csa": bench_prefill_csa,
    "moe": bench_moe,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these layers")
    args = ap.parse_args()
    print(
        "| layer | configuration | blocks | simulated makespan | simulated wall (s) | golden wall (s) "
        "| simulated CPU (s) | golden CPU (s) | ratio (CPU) | validated |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in args.only or BENCHES:
        r = BENCHES[name]()
        print(
            f"| {r.layer} | {r.config} | {r.blocks} | {r.makespan} | {r.sim_s:.2f} | {r.golden_s:.2f} "
            f"| {r.sim_cpu:.2f} | {r.golden_cpu:.2f} | {r.ratio:.2f}x | {'yes' if r.validated else 'NO'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
