"""``dslc verify`` throughput and reduction, and why it restores snapshots instead of replaying.

Workloads (compiled from the project's own fixtures, explored to completion):

* ``handshake``  - ``tests/fixtures/run/handshake_post.dsl``: the two-rank push/wait handshake
  (EP 2, 2 push blocks, 1 cluster per rank), 1 and 2 rounds;
* ``split-K``    - ``tests/fixtures/run/splitk_atomic.dsl`` at SPLITS 4 on 2 clusters: FP32
  atomics, every completion order (determinism off, so every output pattern is enumerated);
* ``dispatch``   - ``tests/fixtures/seed/dispatch_post.dsl`` (the fixed seed MoE dispatch) at
  EP 2, N_LOCAL 2, T 64, TOPK 2: meta handshake, push grid, waiter, gather, experts.

For each: distinct states, transitions, revisits, block steps replayed from the step memo
(``runtime.verify.memo``), CPU and wall seconds, distinct states per CPU second; the same
search without sleep/persistent sets (hashing and symmetry kept); and Knuth's estimate of the
unreduced tree (``runtime.verify.estimate``).  The reduction factor is estimated-naive
transitions / transitions explored.

``--restore`` also times the two ways of going back to a state during the search on the
handshake: restoring a snapshot (what the explorer does) against replaying the decisions of
the path from a fresh engine (stateless, DPOR style), on every 7th restore of a search.

CPU time (``time.process_time``) is the figure to compare across runs on a shared machine;
wall time is reported too.  Run: ``python bench/bench_verify.py [--restore]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsl.driver.api import compile_layer  # noqa: E402
from runtime.decisions import ScriptedDecider  # noqa: E402
from runtime.verify import Config, estimate_naive, explore  # noqa: E402
from runtime.verify import explorer as _explorer  # noqa: E402
from runtime.verify.space import Space  # noqa: E402

WORKLOADS = {
    "handshake, 1 round": ("tests/fixtures/run/handshake_post.dsl", {}, {}, 1, 1, True),
    "handshake, 2 rounds": ("tests/fixtures/run/handshake_post.dsl", {}, {}, 1, 2, True),
    "split-K atomic, 4 splits": ("tests/fixtures/run/splitk_atomic.dsl", {"SPLITS": 4}, {}, 2, 1, False),
    "MoE dispatch EP2": (
        "tests/fixtures/seed/dispatch_post.dsl",
        {"EP": 2, "N_LOCAL": 2, "T": 64, "TOPK": 2},
        {"moe_epoch": 1},
        1,
        1,
        True,
    ),
}


def _prepare(path: str, params: dict, scalars: dict, n_aic: int, rounds: int):
    layer = compile_layer(ROOT / path, params or None)
    inputs = layer.make_inputs(0, layer.ranks)
    for per in inputs:
        per.update(scalars)
    per_rank, sc = layer.split_scalars(inputs)
    return (
        layer,
        per_rank,
        Config(ranks=layer.ranks, n_aic=n_aic, rounds=rounds, scalars=tuple(sorted(sc.items()))),
    )


def _run(program, inputs, config, determinism: bool, reduce: bool):
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    res = explore(program, inputs, config, determinism=determinism, reduce=reduce, timeout=3600)
    return res, time.process_time() - t_cpu, time.perf_counter() - t_wall


def throughput(probes: int) -> None:
    print(
        f"{'workload':<26} {'distinct':>9} {'trans.':>9} {'revisits':>9} {'replayed':>9} "
        f"{'cpu s':>7} {'wall s':>7} "
        f"{'dist/s cpu':>10} {'no POR: dist':>12} {'trans.':>9} {'naive trans. (Knuth)':>22} {'factor':>9}"
    )
    for label, (path, params, scalars, n_aic, rounds, det) in WORKLOADS.items():
        layer, inputs, config = _prepare(path, params, scalars, n_aic, rounds)
        res, cpu, wall = _run(layer.program, inputs, config, det, True)
        full, _c, _w = _run(layer.program, inputs, config, det, False)
        est = estimate_naive(layer.program, inputs, config, probes=probes, timeout=60)
        s, f = res.stats, full.stats
        assert res.complete and full.complete and res.outputs == full.outputs
        print(
            f"{label:<26} {s.distinct:>9,} {s.transitions:>9,} {s.revisits:>9,} {s.replayed:>9,} "
            f"{cpu:>7.2f} {wall:>7.2f} "
            f"{s.distinct / cpu:>10,.0f} {f.distinct:>12,} {f.transitions:>9,} {est.transitions:>22.3g} "
            f"{est.transitions / s.transitions:>9.3g}"
        )


def restore_vs_replay() -> None:
    """Time restore(snapshot) against replaying the path's decisions from a fresh engine."""
    layer, inputs, config = _prepare(*WORKLOADS["handshake, 2 rounds"][:5])
    timings = {"restore": [], "replay": []}
    original = _explorer._Search._transition
    count = [0]

    def transition(self, f):
        if self.live is not f and f.parent is not None:
            count[0] += 1
            if count[0] % 7 == 0:
                path = f.path()
                t0 = time.process_time()
                _replay_prefix(layer.program, inputs, config, path, f.depth)
                timings["replay"].append((time.process_time() - t0, f.depth))
                t0 = time.process_time()
                self.space.restore(f.snap)
                timings["restore"].append((time.process_time() - t0, f.depth))
                self.live = f
        return original(self, f)

    _explorer._Search._transition = transition
    try:
        res = explore(layer.program, inputs, config, timeout=3600)
    finally:
        _explorer._Search._transition = original
    assert res.complete
    for kind, rows in timings.items():
        mean = sum(t for t, _ in rows) / len(rows)
        depth = sum(d for _, d in rows) / len(rows)
        print(
            f"{kind:<8} {len(rows):>6} samples, mean {mean * 1e6:>9,.0f} us (CPU) at mean depth {depth:.1f}"
        )


def _replay_prefix(program, inputs, config, decisions, steps: int) -> None:
    """From a fresh engine: submit, then ``steps`` block steps answered from ``decisions``."""
    decider = ScriptedDecider(decisions)
    space = Space(program, inputs, config, decider)
    space.execute(None)
    for _ in range(steps):
        space.execute(decider.pick_step(space.runnable_blocks()))
    assert decider.exhausted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probes", type=int, default=64)
    ap.add_argument("--restore", action="store_true", help="also time snapshot restore against replay")
    args = ap.parse_args()
    throughput(args.probes)
    if args.restore:
        restore_vs_replay()


if __name__ == "__main__":
    main()
