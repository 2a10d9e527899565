"""Front-end throughput: parse, elaborate and edge inference of large task arrays.

A generated layer declares ``N`` single-block AIV tasks in a layer-level loop. Task ``t[i]``
names ``t[i - 1]`` in ``after``, reads row ``i`` of the input and row ``i - 1`` of a scratch
tensor that ``t[i - 1]`` wrote (a RAW chain through ``s``), and writes row ``i`` of ``s``
and of the output; the loop is sequential, so every write is promoted to InOut (R-seq)::

    for i in range(1, N) {
      task t[i] on aiv after t[i - 1] {
        s[i, :] = inp[i, :] + s[i - 1, :]
        out[i, :] = s[i, :] * 2.0
      }
    }

Each phase is timed on its own, best of ``--repeat`` runs, in CPU seconds of this process
(``time.process_time``: the build machine is shared, and CPU time is what a loaded machine
distorts least; on an idle machine it equals the wall-clock time):

* ``parse``     - source text -> AST (``dsl.parser.parse``);
* ``elab``      - AST -> IR: task bodies and the E305 bounds check (``Elaborator.elaborate``
  minus edge inference);
* ``edges``     - edge inference (``lowering.edges.infer_edges``, both replayed rounds);
* ``total``     - ``dsl.frontend.compile_text`` end to end (its own best of ``--repeat``).

Targets (issue 2): 50k tasks in under 5 s, and t(50k) / t(5k) <= 12 (near-linear scaling).
``--unrolled`` writes every task out instead (``task t7 on aiv after t6 { ... }``), so the
source grows with N and the parser's share shows.

Run: ``.venv/bin/python bench/bench_frontend.py`` (``--sizes 1000,5000`` for a quick look).
"""

from __future__ import annotations

import argparse
import platform
import time

import lowering.edges
from dsl.elaborate import Elaborator
from dsl.frontend import compile_text
from dsl.parser import parse

SIZES = (1_000, 5_000, 10_000, 50_000)


def layer_source(n: int) -> str:
    """A layer with an ``n``-task array chained through a scratch tensor."""
    return f"""\
layer chain(N = {n}, D = 64) {{
  input  inp: f32[N, D]
  scratch s: f32[N, D]
  output out: f32[N, D]

  task t[0] on aiv {{
    s[0, :] = inp[0, :]
    out[0, :] = s[0, :]
  }}
  for i in range(1, N) {{
    task t[i] on aiv after t[i - 1] {{
      s[i, :] = inp[i, :] + s[i - 1, :]
      out[i, :] = s[i, :] * 2.0
    }}
  }}
}}
"""


def unrolled_source(n: int) -> str:
    """The same graph with every task written out."""
    lines = [
        "layer flat(D = 64) {",
        f"  input  inp: f32[{n}, D]",
        f"  scratch s: f32[{n}, D]",
        f"  output out: f32[{n}, D]",
        "  task t0 on aiv { s[0, :] = inp[0, :]  out[0, :] = s[0, :] }",
    ]
    for i in range(1, n):
        lines.append(
            f"  task t{i} on aiv after t{i - 1} {{ s[{i}, :] = inp[{i}, :] + s[{i - 1}, :]"
            f"  out[{i}, :] = s[{i}, :] * 2.0 }}"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


class _EdgeTimer:
    """Wraps ``infer_edges`` so one elaboration reports its edge-inference time apart."""

    def __init__(self) -> None:
        self.original = lowering.edges.infer_edges
        self.seconds = 0.0

    def __call__(self, graph):
        t0 = time.process_time()
        try:
            return self.original(graph)
        finally:
            self.seconds += time.process_time() - t0

    def __enter__(self) -> _EdgeTimer:
        lowering.edges.infer_edges = self
        return self

    def __exit__(self, *exc) -> None:
        lowering.edges.infer_edges = self.original


def measure(n: int, repeat: int, unrolled: bool = False) -> dict[str, float]:
    text = unrolled_source(n) if unrolled else layer_source(n)
    name = "flat" if unrolled else "chain"
    best = {"parse": float("inf"), "elaborate": float("inf"), "edges": float("inf"), "total": float("inf")}
    tasks = edges = 0
    for _ in range(repeat):
        t0 = time.process_time()
        module = parse(text, f"{name}.dsl")
        t1 = time.process_time()
        with _EdgeTimer() as timer:
            graph = Elaborator(module, f"{name}.dsl").elaborate(name)
        t2 = time.process_time()
        best["parse"] = min(best["parse"], t1 - t0)
        best["elaborate"] = min(best["elaborate"], t2 - t1 - timer.seconds)
        best["edges"] = min(best["edges"], timer.seconds)
        tasks, edges = len(graph.tasks), len(graph.edges)
        del graph, module
    for _ in range(repeat):
        t0 = time.process_time()
        (graph,) = compile_text(text, f"{name}.dsl")
        best["total"] = min(best["total"], time.process_time() - t0)
        del graph
    best["tasks"], best["edge_count"] = tasks, edges
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best is reported")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated task counts")
    ap.add_argument("--unrolled", action="store_true", help="write every task out instead of a task array")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    form = "tasks written out" if args.unrolled else "task array"
    print(f"python {platform.python_version()} on {platform.machine()}; {form}; CPU s, best of {args.repeat}")
    print("| tasks | edges | parse s | elab s | edges s | total s | us/task |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    results = {}
    for n in sizes:
        r = measure(n, args.repeat, args.unrolled)
        results[n] = r
        print(
            f"| {r['tasks']:,} | {r['edge_count']:,} | {r['parse']:.3f} | {r['elaborate']:.3f} "
            f"| {r['edges']:.3f} | {r['total']:.3f} | {1e6 * r['total'] / r['tasks']:.1f} |"
        )
    if 5_000 in results and 50_000 in results:
        ratio = results[50_000]["total"] / results[5_000]["total"]
        total = results[50_000]["total"]
        print(f"t(50k) / t(5k) = {ratio:.1f} (target <= 12); 50k total {total:.2f} s (target < 5 s)")


if __name__ == "__main__":
    main()
