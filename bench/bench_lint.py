"""Lint throughput (issue 4): compile and lint generated layers of 1k..50k tasks.

The generated root layer calls a chunk layer ``C`` times (``call k7 = chunk(G = 7, ...)``),
each call ordered after the previous one's last task, so the graph is one long pipeline of
chunks and every task has the whole earlier graph among its ancestors. A chunk has 100
tasks and exercises every rule family on realistic shapes:

* ``stage[0..52]``: a task array chained by ``after`` and by RAW through a private scratch
  tensor (``s[i, :] = x[...] + s[i - 1, :]``), like bench_frontend's chain;
* ``proj``: a 2-block cube task whose ``reduce_sum`` lowers to split partials
  (``proj_splits``) and an ordered reduce;
* the cross-rank handshake, with a signal and a window of its own per chunk: ``push``
  (spmd, early_resolve) remote-stores rows to every peer and notifies each, ``wait`` (after
  push, and after the previous round's push: ``after prev(push)``, D117) waits for ``epoch *
  N_LOCAL`` from every peer, ``gather`` (spmd, after wait, under a runtime-scalar condition)
  reads the window;
* ``seed`` (after the previous round's adds: ``after prev(count)``, N202) zeroes an
  accumulator that ``count[0..15]`` (spmd 2, ``after seed``) add into with atomics;
* ``topk[0..23]``: sort32 + mrgsort + topk_pairs chains;
* ``tail``: joins the chunk (``after gather, count, topk``) with an anchor read.

The layer has ranged parameters (``EP in {2, 4, 8}``), runtime scalars with a derived
scalar and a guard, and is clean: no rule reports anything. ``compile`` is
``dsl.frontend.compile_text``; ``lint`` is ``lowering.checks.run_rules`` with every rule on
a fresh ``CheckContext``, as ``dslc check`` runs them. Times are CPU seconds of this process
(``time.process_time``; the build machine is a shared 2-core box), best of ``--repeat``;
the per-rule times are those of the best lint run (an analysis shared through the context
cache is charged to the first rule that needs it).

Targets (issue 4): 50k tasks linted in under 10 s, near-linear growth (t(50k) / t(5k)
reported).

Run: ``.venv/bin/python bench/bench_lint.py`` (``--sizes 1000,5000`` for a quick look,
``--write DIR`` to keep the generated layers).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsl.frontend import compile_text  # noqa: E402
from lowering.checks import run_rules  # noqa: E402
from lowering.checks.rule import CheckContext  # noqa: E402

SIZES = (1_000, 5_000, 10_000, 50_000)
TASKS_PER_CHUNK = 100

CHUNK = """\
layer chunk(G = 0, A = 53, B = 24, Q = 16, EP = 4, N_LOCAL = 4, R = 16, D = 64, S = 2) {
  ranks EP
  taskid upstream                  # not `prev`: that names the previous round (`after prev(t)`)
  input  x: f32[T, D]
  input  w: f32[D, D]
  input  scores: f32[T, 128]
  input  ramp: i32[1, 128]
  output y: f32[T, D]
  output hist: i32[T, 8]
  output best: f32[T, 16]
  scratch s: f32[A, D]
  scratch h: f32[R, D]
  window inbox: f32[EP * N_LOCAL * 4, D]
  signal arrived: i32[EP]

  task stage[0] on aiv after upstream {
    s[0, :] = x[G * A, :]
  }
  for i in range(1, A) {
    task stage[i] on aiv after stage[i - 1] {
      s[i, :] = x[G * A + i, :] + s[i - 1, :]
    }
  }
  task proj spmd(R / 8) on aic after stage {
    let t0 = block * 8
    h[t0 : t0 + 8, :] = reduce_sum k in range(S) {
      let k0 = k * (D / S)
      return matmul(s[t0 : t0 + 8, k0 : k0 + D / S], w[k0 : k0 + D / S, :])
    }
  }
  task push spmd(N_LOCAL) on aiv early_resolve {
    let e = block
    for dst in range(EP) {
      remote_store inbox[(rank * N_LOCAL + e) * 4 : (rank * N_LOCAL + e) * 4 + 4, :] @ dst = h[e * 4 : e * 4 + 4, :]
    }
    for dst in range(EP) { if dst != rank { notify arrived[rank] @ dst += 1 } }
  }
  task wait on aiv after push, prev(push) {
    for src in range(EP) { if src != rank { wait arrived[src] >= epoch * N_LOCAL } }
  }
  task gather spmd(EP) on aiv after wait {
    let b0 = block * N_LOCAL * 4
    if block * 4 < num_tokens {
      y[G * R + block * 4 : G * R + block * 4 + 4, :] = inbox[b0 : b0 + 4, :]
    }
  }
  task seed on aiv after prev(count) {
    hist[G * Q : G * Q + Q, :] = zeros(i32, [Q, 8])
  }
  for i in parallel(Q) {
    task count[i] spmd(2) on aiv after seed {
      hist[G * Q + i, block * 4 : block * 4 + 4] += full(i32, [1, 4], 1) atomic
    }
  }
  for i in parallel(B) {
    task topk[i] on aiv {
      let srt = sort32(scores[G * B + i : G * B + i + 1, :], ramp[0 : 1, :])
      best[G * B + i : G * B + i + 1, :] = topk_pairs(mrgsort(srt, 64), 8)
    }
  }
  task tail on aiv after gather, count, topk {
    read(y[G * R, 0])
  }
}
"""


def layer_source(tasks: int) -> str:
    """A layer of ``tasks // 100`` chained chunk calls (``100 * chunks + 1`` tasks)."""
    chunks = max(tasks // TASKS_PER_CHUNK, 1)
    calls = []
    prev = "init"
    for g in range(chunks):
        calls.append(
            f"  call k{g} = chunk(G = {g}, D = D, EP = EP, x = x, w = w, scores = scores, ramp = ramp, "
            f"y = y, hist = hist, best = best, upstream = {prev})"
        )
        prev = f"k{g}.tail"
    body = "\n".join(calls)
    return f"""{CHUNK}
layer lintbench(C = {chunks}, EP = 4 in {{2, 4, 8}}, D = 64) {{
  ranks EP
  const T = C * 53
  scalar epoch: i32 in 1..4096
  scalar num_tokens: i32 in 1..16
  scalar padded = cdiv(num_tokens, 8) * 8
  guard padded <= 16, "padded tokens fit a chunk"
  input  x: f32[T, D]
  input  w: f32[D, D]
  input  scores: f32[T, 128]
  input  ramp: i32[1, 128]
  output y: f32[T, D]
  output hist: i32[T, 8]
  output best: f32[T, 16]
  task init on aiv {{
    y[0, :] = x[0, :]
  }}
{body}
}}
"""


def measure(n: int, repeat: int) -> dict:
    text = layer_source(n)
    best: dict = {"compile": float("inf"), "lint": float("inf")}
    for _ in range(repeat):
        t0 = time.process_time()
        (graph,) = compile_text(text, f"lint{n}.dsl")
        t1 = time.process_time()
        timings: dict[str, float] = {}
        found = run_rules(graph, CheckContext(graph), timings=timings)
        t2 = time.process_time()
        best["compile"] = min(best["compile"], t1 - t0)
        if t2 - t1 < best["lint"]:
            best["lint"] = t2 - t1
            best["rules"] = timings
        best.update(tasks=len(graph.tasks), edges=len(graph.edges), findings=len(found))
        del graph
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best is reported")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated task counts")
    ap.add_argument("--top", type=int, default=5, help="slowest rules listed per size")
    ap.add_argument("--write", metavar="DIR", help="also write the generated layers into DIR")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.write:
        Path(args.write).mkdir(parents=True, exist_ok=True)
        for n in sizes:
            (Path(args.write) / f"lint{n}.dsl").write_text(layer_source(n), encoding="utf-8")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{load}; CPU s, best of {args.repeat}"
    )
    print("| tasks | edges | compile s | lint s | us/task (lint) | findings | slowest rules (s) |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    results = {}
    for n in sizes:
        r = measure(n, args.repeat)
        results[n] = r
        top = sorted(r["rules"].items(), key=lambda kv: -kv[1])[: args.top]
        rules = ", ".join(f"{code} {t:.2f}" for code, t in top)
        print(
            f"| {r['tasks']:,} | {r['edges']:,} | {r['compile']:.2f} | {r['lint']:.2f} "
            f"| {1e6 * r['lint'] / r['tasks']:.0f} | {r['findings']} | {rules} |",
            flush=True,
        )
    if 5_000 in results and 50_000 in results:
        lint = results[50_000]["lint"] / results[5_000]["lint"]
        comp = results[50_000]["compile"] / results[5_000]["compile"]
        print(
            f"t(50k) / t(5k): lint {lint:.1f}, compile {comp:.1f}; 50k tasks linted in "
            f"{results[50_000]['lint']:.2f} s (target < 10 s)"
        )


if __name__ == "__main__":
    main()
