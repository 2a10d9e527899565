"""The MoE layer at EP16, D = 4096, 40 rounds: in-process against ``--launcher mpi`` (issue 16).

models/deepseek_v4_flash/moe.dsl at its real configuration (EP = 16 ranks, 16 experts per
rank, T = 128, D = 4096, I = 2048, top-6, hash routing), a2a3 preset, fifo policy, run for 40
rounds back to back: once in one process (``simulate``) and once over 2, 4 and 16 MPI
processes on this host (``simulate_mpi``, ranks in consecutive blocks), optionally over TCP
between the processes (``--tcp``: the stand-in for several hosts).

The fixture (the golden's ``make_inputs``: 6.4 GB of INT8 expert weights) is drawn once into
``--fixture DIR`` as .npy files; every variant then starts fresh processes and maps it
read-only (page cache, which the kernel can reclaim, instead of private memory on a shared
machine). Each process compiles the layer; process 0 loads the fixture and sends each process
its ranks' inputs.

Per process: wall and CPU seconds of the setup (inputs received, memory and windows) and of
the simulation, peak RSS from just before the simulate call (the high-water mark is reset
there; mapped fixture pages count), the time it had nothing to run, and what it issued
through MPI. Per variant: the SHA-256 of every rank's output tensors after the last round,
which must be the same for every variant. Results are appended to ``--results FILE`` (a
variant already there is not run again), then printed as tables.

Run: python bench/bench_mpi.py [--rounds 40] [--procs [2 4 16]] [--D 4096] [--skip-inprocess] [--tcp]
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see bench_models.py
os.environ.setdefault("DSLC_CACHE_DIR", tempfile.mkdtemp(prefix="dslc-bench-"))

ROOT = Path(__file__).resolve().parents[1]
MOE = ROOT / "models" / "deepseek_v4_flash" / "moe.dsl"
EP16 = {"EP": 16, "N_LOCAL": 16, "T": 128, "TOPK": 6, "I": 2048, "VOCAB": 129280}
RUN = {"ranks": 16, "cores": "a2a3", "policy": "fifo", "seed": 0, "timeout": 1e6}
TCP_ENV = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self"}


def _layer(d: int):
    from dsl.driver.api import compile_layer

    return compile_layer(MOE, {**EP16, "D": d})


def _first_to_go() -> None:
    """On a shared machine, if memory runs out, the benchmark is what the kernel should kill."""
    Path("/proc/self/oom_score_adj").write_text("1000")


def draw(args: argparse.Namespace) -> None:
    """Draw the fixture once and save it: rank r's tensor x is ``DIR/r/x.npy``."""
    import numpy as np

    _first_to_go()
    layer = _layer(args.D)
    t0 = time.perf_counter()
    per_rank, scalars = layer.split_scalars(layer.make_inputs(0, 16))
    out = Path(args.fixture)
    for r, tensors in enumerate(per_rank):
        (out / str(r)).mkdir(parents=True, exist_ok=True)
        for name, value in tensors.items():
            np.save(out / str(r) / f"{name}.npy", np.ascontiguousarray(value))
    (out / "meta.json").write_text(json.dumps({"scalars": scalars, "draw_s": time.perf_counter() - t0}))


def _load_fixture(fixture: str) -> tuple[list[dict], dict]:
    import numpy as np

    root = Path(fixture)
    per_rank = [
        {p.stem: np.load(p, mmap_mode="r") for p in sorted((root / str(r)).glob("*.npy"))} for r in range(16)
    ]
    return per_rank, json.loads((root / "meta.json").read_text())["scalars"]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _digests(program, outputs: list[dict]) -> list[dict[str, str]]:
    kinds = {t.name: t.kind for t in program.tensors}
    return [
        {
            k: hashlib.sha256(v.tobytes()).hexdigest()
            for k, v in out.items()
            if kinds[k] in ("output", "inout")
        }
        for out in outputs
    ]


def _log_rounds(path: Path, t0: float, c0: float) -> None:
    """Append wall, CPU and RSS to ``path`` as every round ends, so that a run stopped before
    its last round still says how far it got (the simulator's progress hook, in-process only)."""
    import runtime.simulator

    def done(r: int) -> None:
        line = {"round": r, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
        with path.open("a") as f:
            f.write(json.dumps({**line, "rss_kb": _status_kb("VmRSS")}) + "\n")

    runtime.simulator._progress = lambda rounds, enabled: (None, done)


def worker(args: argparse.Namespace) -> None:
    """One process of a variant: ``--procs 0`` is the in-process simulator."""
    try:  # sparse first touches of the receive windows would each zero a 2 MiB huge page
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    _set_madvise_hugepage(False)
    _first_to_go()
    t0 = time.perf_counter()
    layer = _layer(args.D)
    line: dict = {"compile_s": time.perf_counter() - t0}
    kw = {**RUN, "rounds": args.rounds}
    if args.procs == 0:
        inputs, scalars = _load_fixture(args.fixture)
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS (Linux)
        t0, c0 = time.perf_counter(), time.process_time()
        _log_rounds(Path(f"{args.out}.0.rounds.jsonl"), t0, c0)
        result = layer.run([{**d, **scalars} for d in inputs], **kw)
        me, digests, comm = 0, _digests(layer.program, result.outputs), None
    else:
        from mpi4py import MPI

        from runtime.mpi.simulate import simulate_mpi

        me = MPI.COMM_WORLD.Get_rank()
        scalars = json.loads((Path(args.fixture) / "meta.json").read_text())["scalars"]
        Path("/proc/self/clear_refs").write_text("5")
        t0, c0 = time.perf_counter(), time.process_time()
        result = simulate_mpi(
            layer.program,
            (lambda: _load_fixture(args.fixture)[0]) if me == 0 else None,
            scalars=scalars,
            outputs="none",
            schedule=False,
            **kw,
        )
        digests, comm = result.digests, result.comm
    line.update(
        process=me,
        wall=time.perf_counter() - t0,
        cpu=time.process_time() - c0,
        peak_run_kb=_status_kb("VmHWM"),
        blocks_run=result.blocks_run,
        makespan=result.makespan,
    )
    if me == 0:
        line.update(digests=digests, comm=comm)
    Path(f"{args.out}.{me}.json").write_text(json.dumps(line))


def run_variant(name: str, procs: int, args: argparse.Namespace) -> dict:
    out = tempfile.mkdtemp(prefix="bench-mpi-") + "/v"
    argv = [sys.executable, __file__, "worker", "--procs", str(procs), "--rounds", str(args.rounds)]
    argv += ["--D", str(args.D), "--fixture", args.fixture, "--out", out]
    env = dict(os.environ)
    if procs:
        from runtime.mpi.launch import find_mpiexec

        argv = [find_mpiexec(), "-n", str(procs), *argv]
        if args.tcp:
            env.update(TCP_ENV)
    t0 = time.perf_counter()
    print(f"{name}: running" + ("" if procs else f", rounds logged to {out}.0.rounds.jsonl"), flush=True)
    subprocess.run(argv, check=True, env=env)
    lines = sorted(
        (json.loads(Path(f).read_text()) for f in glob.glob(out + ".*.json")), key=lambda d: d["process"]
    )
    return {"variant": name, "procs": procs, "job_wall": time.perf_counter() - t0, "processes": lines}


def _gib(kb: float) -> str:
    return f"{kb / 2**20:.2f}"


def report(results: list[dict], rounds: int, draw_s: float) -> None:
    reference = results[0]["processes"][0]["digests"]
    print(f"fixture drawn once in {draw_s:.0f} s (not included below)\n")
    print(
        "| variant | processes | inputs sent, memory set up (s) | simulation wall (s) "
        "| simulation CPU, all processes (s) | passive, mean per process (s) | peak RSS process 0 (GiB) "
        "| peak RSS other processes, max (GiB) | peak RSS, sum over processes (GiB) | outputs equal |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for res in results:
        ps, comm = res["processes"], res["processes"][0]["comm"]
        if comm:  # the phases simulate_mpi measured in every process
            setup = max(c["setup"][0] for c in comm)
            wall = max(c["run"][0] for c in comm)
            cpu = sum(c["run"][1] for c in comm)
            passive = sum(c["passive_seconds"] for c in comm) / len(comm)
        else:
            setup, wall, cpu, passive = 0.0, ps[0]["wall"], ps[0]["cpu"], 0.0
        others = max((p["peak_run_kb"] for p in ps[1:]), default=None)
        print(
            f"| {res['variant']} | {max(res['procs'], 1)} | {setup:.1f} | {wall:.1f} | {cpu:.1f} | {passive:.1f} "
            f"| {_gib(ps[0]['peak_run_kb'])} | {_gib(others) if others else '-'} "
            f"| {_gib(sum(p['peak_run_kb'] for p in ps))} | {'yes' if ps[0]['digests'] == reference else 'NO'} |"
        )
    print("\n| variant | kind | operations per round | MiB per round | seconds per round, all processes |")
    print("|---|---|---:|---:|---:|")
    for res in results:
        comm = res["processes"][0]["comm"]
        for kind in ("put", "atomic", "notify", "read") if comm else ():
            ops = sum(c[kind][0] for c in comm) / rounds
            mib = sum(c[kind][1] for c in comm) / rounds / 2**20
            secs = sum(c[kind][2] for c in comm) / rounds
            print(f"| {res['variant']} | {kind} | {ops:.0f} | {mib:.2f} | {secs:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    parsers = [ap, sub.add_parser("worker"), sub.add_parser("draw")]
    for p in parsers:
        p.add_argument("--rounds", type=int, default=40)
        p.add_argument("--D", type=int, default=4096)
        p.add_argument("--fixture", help="directory of the drawn fixture (default: under the temp dir)")
    parsers[1].add_argument("--procs", type=int, required=True)
    parsers[1].add_argument("--out", required=True)
    ap.add_argument(
        "--procs", type=int, nargs="*", default=[2, 4, 16], help="MPI variants to run (none: in-process only)"
    )
    ap.add_argument("--skip-inprocess", action="store_true")
    ap.add_argument("--tcp", action="store_true", help="MPI processes talk TCP, as across hosts")
    ap.add_argument("--results", help="JSON-lines file of the variants run (default: under the temp dir)")
    args = ap.parse_args()
    args.fixture = args.fixture or str(Path(tempfile.gettempdir()) / f"dslc-bench-moe-fixture-D{args.D}")
    if args.cmd == "worker":
        return worker(args)
    if args.cmd == "draw":
        return draw(args)
    if not (Path(args.fixture) / "meta.json").exists():
        subprocess.run(
            [sys.executable, __file__, "draw", "--D", str(args.D), "--fixture", args.fixture], check=True
        )
    results_path = Path(
        args.results or Path(tempfile.gettempdir()) / f"dslc-bench-mpi-D{args.D}-R{args.rounds}.jsonl"
    )
    done = (
        [json.loads(line) for line in results_path.read_text().splitlines()] if results_path.exists() else []
    )
    wanted = ([] if args.skip_inprocess else [("in-process", 0)]) + [
        (f"--launcher mpi, {p} processes" + (" over TCP" if args.tcp else ""), p) for p in args.procs
    ]
    for name, procs in wanted:
        if any(r["variant"] == name for r in done):
            continue
        result = run_variant(name, procs, args)
        with results_path.open("a") as f:
            f.write(json.dumps(result) + "\n")
        done.append(result)
    meta = json.loads((Path(args.fixture) / "meta.json").read_text())
    report(done, args.rounds, meta["draw_s"])


if __name__ == "__main__":
    main()
