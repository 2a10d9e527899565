"""The MoE layer at EP16, D = 4096, 40 rounds: in-process against ``--launcher mpi`` (issue 16).

models/deepseek_v4_flash/moe.dsl at its real configuration (EP = 16 ranks, 16 experts per
rank, T = 128, D = 4096, I = 2048, top-6, hash routing), a2a3 preset, fifo policy, run for 40
rounds back to back: once in one process (``simulate``) and once over 2, 4 and 16 MPI
processes on this host (``simulate_mpi``, ranks in consecutive blocks). Every variant starts
fresh processes; each process compiles the layer, process 0 draws the fixture.

Per process: wall and CPU seconds of the simulate call (compile and fixture drawing are
reported apart), peak RSS during the call (the high-water mark is reset just before it) and
over the whole process, the time it had nothing to run (waiting for peers), and what it
issued through MPI. Per variant: the SHA-256 of every rank's output tensors after the last
round, which must be the same for every variant.

Run: python bench/bench_mpi.py [--rounds 40] [--procs 2 4 16] [--D 4096] [--skip-inprocess]
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


def _no_huge_pages() -> None:
    """Sparse first touches of the receive windows would each zero a 2 MiB huge page."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    _set_madvise_hugepage(False)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux)


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


def worker(args: argparse.Namespace) -> None:
    """One process of a variant: ``--procs 0`` is the in-process simulator."""
    import numpy as np

    from dsl.driver.api import compile_layer

    _no_huge_pages()
    t0 = time.perf_counter()
    layer = compile_layer(MOE, {**EP16, "D": args.D})
    compile_s = time.perf_counter() - t0
    kw = {"ranks": 16, "cores": "a2a3", "policy": "fifo", "seed": 0, "rounds": args.rounds, "timeout": 1e6}
    line: dict = {"procs": args.procs, "compile_s": compile_s}
    if args.procs == 0:
        t0 = time.perf_counter()
        inputs = layer.make_inputs(0, 16)
        line["draw_s"] = time.perf_counter() - t0
        _reset_peak()
        t0, c0 = time.perf_counter(), time.process_time()
        result = layer.run(inputs, **kw)
        me, digests, comm = 0, _digests(layer.program, result.outputs), None
    else:
        from mpi4py import MPI

        from runtime.mpi.collective import on_root
        from runtime.mpi.simulate import simulate_mpi

        world = MPI.COMM_WORLD
        me = world.Get_rank()
        handed = []  # process 0 hands its inputs over and keeps no reference

        def draw() -> dict:
            per_rank, scalars = layer.split_scalars(layer.make_inputs(0, 16))
            handed.append(per_rank)
            return scalars

        t0 = time.perf_counter()
        scalars = world.bcast(on_root(world, draw), root=0)
        line["draw_s"] = time.perf_counter() - t0
        _reset_peak()
        t0, c0 = time.perf_counter(), time.process_time()
        result = simulate_mpi(
            layer.program,
            handed.pop if me == 0 else None,
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
        peak_kb=_rusage_peak_kb(),
        blocks_run=result.blocks_run,
        makespan=result.makespan,
    )
    if me == 0:
        line.update(digests=digests, comm=comm)
    del np
    Path(f"{args.out}.{me}.json").write_text(json.dumps(line))


def _rusage_peak_kb() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_variant(procs: int, args: argparse.Namespace, out: str) -> list[dict]:
    argv = [sys.executable, __file__, "worker", "--procs", str(procs), "--rounds", str(args.rounds)]
    argv += ["--D", str(args.D), "--out", out]
    if procs:
        from runtime.mpi.launch import find_mpiexec

        argv = [find_mpiexec(), "-n", str(procs), *argv]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True)
    wall = time.perf_counter() - t0
    lines = sorted(
        (json.loads(Path(f).read_text()) for f in glob.glob(out + ".*.json")), key=lambda d: d["process"]
    )
    lines[0]["job_wall"] = wall
    return lines


def _gib(kb: float) -> str:
    return f"{kb / 2**20:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    w = sub.add_parser("worker")
    for p in (ap, w):
        p.add_argument("--rounds", type=int, default=40)
        p.add_argument("--D", type=int, default=4096)
    w.add_argument("--procs", type=int, required=True)
    w.add_argument("--out", required=True)
    ap.add_argument("--procs", type=int, nargs="+", default=[2, 4, 16])
    ap.add_argument("--skip-inprocess", action="store_true")
    args = ap.parse_args()
    if args.cmd == "worker":
        worker(args)
        return
    tmp = tempfile.mkdtemp(prefix="bench-mpi-")
    variants = ([] if args.skip_inprocess else [0]) + list(args.procs)
    results = {}
    for procs in variants:
        results[procs] = run_variant(procs, args, f"{tmp}/v{procs}")
        print(json.dumps({"procs": procs, "processes": results[procs]}), flush=True)
    reference = results[variants[0]][0]["digests"]
    print()
    print(
        "| variant | processes | fixture drawn (s) | inputs sent, memory set up (s) | simulation wall (s) "
        "| simulation CPU, all processes (s) | passive, mean per process (s) | peak RSS process 0 (GiB) "
        "| peak RSS other processes, max (GiB) | peak RSS, sum over processes (GiB) | outputs equal |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for procs in variants:
        ps = results[procs]
        comm = ps[0]["comm"]
        if comm:  # the phases simulate_mpi measured in every process
            setup = max(c["setup"][0] for c in comm)
            wall = max(c["run"][0] for c in comm)
            cpu = sum(c["run"][1] for c in comm)
            passive = sum(c["passive_seconds"] for c in comm) / len(comm)
        else:
            setup, wall, cpu, passive = 0.0, ps[0]["wall"], ps[0]["cpu"], 0.0
        others = [p["peak_run_kb"] for p in ps[1:]] or [0]
        name = "in-process" if procs == 0 else f"--launcher mpi, {procs} processes"
        print(
            f"| {name} | {max(procs, 1)} | {ps[0]['draw_s']:.0f} | {setup:.1f} | {wall:.1f} | {cpu:.1f} "
            f"| {passive:.1f} | {_gib(ps[0]['peak_run_kb'])} | {_gib(max(others)) if procs else '-'} "
            f"| {_gib(sum(p['peak_run_kb'] for p in ps))} | {'yes' if ps[0]['digests'] == reference else 'NO'} |"
        )
    print()
    print("| variant | kind | operations per round | MiB per round | seconds per round (all processes) |")
    print("|---|---|---:|---:|---:|")
    for procs in variants:
        comm = results[procs][0]["comm"]
        if not comm:
            continue
        for kind in ("put", "atomic", "notify", "read"):
            ops = sum(c[kind][0] for c in comm) / args.rounds
            mib = sum(c[kind][1] for c in comm) / args.rounds / 2**20
            secs = sum(c[kind][2] for c in comm) / args.rounds
            print(f"| {procs} processes | {kind} | {ops:.0f} | {mib:.2f} | {secs:.3f} |")


if __name__ == "__main__":
    main()
