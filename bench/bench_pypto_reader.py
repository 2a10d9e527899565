"""Reading plus linting a large PyPTO model file (issue 7): ~2,000 lines, ~300 tasks.

The file is generated here, in the style of pypto-lib model files: 27 layers of 12 task
scopes each (a handshake per layer: an spmd push with folded notifies, a waiter, a gather;
split-K projections with a reduce; elementwise stages chained through GM tensors), each scope
written out (no orchestration loop), so the reader walks every line. The figure is the best
of several runs of ``read_pypto`` + every lint rule, measured in one process.

    python bench/bench_pypto_reader.py            # prints the figures
    python bench/bench_pypto_reader.py --write F  # also writes the generated model to F
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lowering.checks import run_rules  # noqa: E402
from lowering.checks.rule import CheckContext  # noqa: E402
from lowering.pypto_reader import read_pypto  # noqa: E402

HEADER = '''"""Synthetic PyPTO model for the dslc reader benchmark (generated)."""

import pypto.language as pl
import pypto.language.distributed as pld

EP = 8
N_LOCAL = 8
T = 128
D = 256
SPLITS = 4
K_CHUNK = 64

assert EP in (2, 4, 8, 16)
'''

LAYER = '''

@pl.jit.inline
def layer_{i}(x, w, acc, win, sig, my_rank, epoch):  # sig: this layer's own signal window
    """Layer {i}: RMS norm, split-K projection into disjoint partials and an ascending reduce,
    an all-to-all exchange of the projected rows (push with folded notifies, a waiter ordered
    after the push grid, a gather), then elementwise stages chained through GM.

    Every task is one pl.at / pl.spmd scope; the partials and the exchange window are reused
    by every call of this helper with a new epoch.
    """
    # scratch buffers of this layer (tracked: the edges come from their accesses)
    h = pl.create_tensor([T, D], dtype=pl.FP32)
    parts = pl.create_tensor([SPLITS * T, D], dtype=pl.FP32)
    g = pl.create_tensor([T, D], dtype=pl.FP32)
    with pl.spmd(T // 16, name_hint="norm_{i}", allow_early_resolve=True):
        t0 = pl.tile.get_block_idx() * 16
        v = x[t0 : t0 + 16, :]
        r = pl.rsqrt(pl.add(pl.row_sum(pl.mul(v, v)), 0.000001))
        h = pl.assemble(h, pl.row_expand_mul(v, r), [t0, 0])
    with pl.spmd(T // 16 * SPLITS, name_hint="proj_{i}"):
        b = pl.tile.get_block_idx()
        t0 = b // SPLITS * 16
        s = b % SPLITS
        a = pl.full([16, D], dtype=pl.FP32, value=0.0)
        for kb in pl.range(D // SPLITS // K_CHUNK):
            k0 = s * (D // SPLITS) + kb * K_CHUNK
            a = pl.matmul_acc(a, h[t0 : t0 + 16, k0 : k0 + K_CHUNK], w[:, k0 : k0 + K_CHUNK], b_trans=True)
        parts = pl.assemble(parts, a, [s * T + t0, 0])
    with pl.spmd(T // 16, name_hint="reduce_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        total = parts[t0 : t0 + 16, :]
        for s in pl.range(1, SPLITS):
            total = pl.add(total, parts[s * T + t0 : s * T + t0 + 16, :])
        g = pl.assemble(g, total, [t0, 0])
    # the exchange: every rank pushes its rows, then one waiter per rank spins for its peers
    with pl.spmd(N_LOCAL, name_hint="push_{i}", allow_early_resolve=True) as push_tid:
        e = pl.tile.get_block_idx()
        for dst in pl.range(EP):
            pld.tile.remote_store(pl.load(g, [e * 16, 0], [16, D]), win, dst, [my_rank * 16 * N_LOCAL + e * 16, 0])
        for dst in pl.range(EP):
            if dst != my_rank:
                pld.system.notify(target=sig, peer=dst, offsets=[my_rank], value=1, op=pld.NotifyOp.AtomicAdd)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="wait_{i}", deps=[push_tid]) as wait_tid:
        for src in pl.range(EP):
            if src != my_rank:
                pld.system.wait(signal=sig, offsets=[src], expected=epoch * N_LOCAL, cmp=pld.WaitCmp.Ge)
    with pl.spmd(N_LOCAL, name_hint="gather_{i}", deps=[wait_tid]):
        e = pl.tile.get_block_idx()
        acc = pl.assemble(acc, win[e * 16 : e * 16 + 16, :], [e * 16, 0])
    # elementwise tail: activation, scale, bias, a row statistic and the output cast
    with pl.spmd(T // 16, name_hint="act_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        y = acc[t0 : t0 + 16, :]
        acc = pl.assemble(acc, pl.mul(y, pl.recip(pl.add(pl.exp(pl.neg(y)), 1.0))), [t0, 0])
    with pl.spmd(T // 16, name_hint="scale_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        acc = pl.assemble(acc, pl.mul(acc[t0 : t0 + 16, :], 0.5), [t0, 0])
    with pl.spmd(T // 16, name_hint="bias_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        acc = pl.assemble(acc, pl.add(acc[t0 : t0 + 16, :], x[t0 : t0 + 16, :]), [t0, 0])
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="stat_{i}"):
        m = pl.row_max(acc[0:16, :])
        h = pl.assemble(h, pl.row_expand_sub(acc[0:16, :], m), [0, 0])
    with pl.spmd(T // 16, name_hint="mix_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        acc = pl.assemble(acc, pl.add(acc[t0 : t0 + 16, :], h[t0 : t0 + 16, :]), [t0, 0])
    with pl.spmd(T // 16, name_hint="out_{i}"):
        t0 = pl.tile.get_block_idx() * 16
        x = pl.assemble(x, pl.cast(acc[t0 : t0 + 16, :], pl.FP32), [t0, 0])
    return x, acc
'''

ENTRY = """

@pl.jit
def model_test(
    x: pl.InOut[pl.Tensor[[T, D], pl.FP32]],
    w: pl.Tensor[[D, D], pl.FP32],
    acc: pl.Out[pl.Tensor[[T, D], pl.FP32]],
    win: pld.DistributedTensor[[EP * 16 * N_LOCAL, D], pl.FP32],
{signals}
    my_rank: pl.Scalar[pl.INT32],
    epoch: pl.Scalar[pl.INT32],
):
{calls}
    return x, acc
"""


def generate(layers: int = 27) -> str:
    body = "".join(LAYER.format(i=i) for i in range(layers))
    calls = "\n".join(
        f"    x, acc = layer_{i}(x, w, acc, win, sig_{i}, my_rank, epoch)" for i in range(layers)
    )
    signals = "\n".join(f"    sig_{i}: pld.DistributedTensor[[EP], pl.INT32]," for i in range(layers))
    return HEADER + body + ENTRY.format(calls=calls, signals=signals)


def measure(path: Path, repeat: int = 5) -> dict:
    """Best-of-``repeat`` times (s): ast.parse alone, read_pypto, read + every rule; per-rule costs."""
    import ast

    text = path.read_text(encoding="utf-8")
    best = {"parse": float("inf"), "read": float("inf"), "total": float("inf")}
    rules: dict[str, float] = {}
    out: dict = {}
    for _ in range(repeat):
        t = time.perf_counter()
        ast.parse(text)
        best["parse"] = min(best["parse"], time.perf_counter() - t)
        t0 = time.perf_counter()
        result = read_pypto(path)
        t1 = time.perf_counter()
        found = []
        for g in result.graphs:
            found.extend(run_rules(g, CheckContext(g)))
        t2 = time.perf_counter()
        best["read"] = min(best["read"], t1 - t0)
        best["total"] = min(best["total"], t2 - t0)
        (g,) = result.graphs
        out.update(tasks=len(g.tasks), edges=len(g.edges), findings=len(found) + len(result.diagnostics))
    from lowering.checks import all_rules

    (g,) = read_pypto(path).graphs
    ctx = CheckContext(g)
    for code, rule in all_rules().items():
        t = time.perf_counter()
        list(rule.check(g, ctx))
        rules[code] = time.perf_counter() - t
    out.update(best, rules=rules)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--layers", type=int, default=27)
    parser.add_argument("--write", metavar="FILE")
    args = parser.parse_args()
    text = generate(args.layers)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "model.py"
        path.write_text(text, encoding="utf-8")
        m = measure(path)
    lines = text.count("\n")
    print(f"{lines} lines, {m['tasks']} tasks, {m['edges']} edges, {m['findings']} findings")
    print(
        f"ast.parse {m['parse'] * 1000:.0f} ms; read {m['read'] * 1000:.0f} ms "
        f"({m['read'] / m['parse']:.1f}x parse); read + lint {m['total'] * 1000:.0f} ms "
        f"({m['total'] / m['parse']:.1f}x parse) -- best of 5"
    )
    slow = sorted(m["rules"].items(), key=lambda kv: -kv[1])[:5]
    print("slowest rules: " + ", ".join(f"{c} {t * 1000:.0f} ms" for c, t in slow))
    return 0


if __name__ == "__main__":
    sys.exit(main())
