"""Run one ``simulate_mpi`` call on every process of an mpiexec job, for the MPI tests.

    mpiexec -n P python driver.py SPEC.pkl

SPEC is a pickled dict: ``program`` ("path/to/module.py" or "path:NAME", a module defining
PROGRAM or NAME, a Program or a function returning one), ``inputs`` (read on process 0),
``out`` (where process 0 pickles the result), and keyword arguments of ``simulate_mpi`` under
``kwargs``. Every process writes ``<out>.<process>.json``: its index, the outcome (``done`` or
the exception class and its message) and the seconds from the start of the run to its end.
Only the runtime is imported, so a process starts in a few tenths of a second.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from runtime.loader import load_module  # noqa: E402
from runtime.mpi.simulate import simulate_mpi  # noqa: E402
from runtime.program import Program  # noqa: E402
from runtime.sim_errors import SimulatorError  # noqa: E402


def _program(ref: str) -> Program:
    path, _, name = ref.partition(":")
    from pathlib import Path

    obj = getattr(load_module(Path(path)), name or "PROGRAM")
    return obj if isinstance(obj, Program) else obj()


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        spec = pickle.load(f)
    program = _program(spec["program"])
    from mpi4py import MPI

    me = MPI.COMM_WORLD.Get_rank()
    t0 = time.monotonic()
    line = {"process": me}
    try:
        result = simulate_mpi(program, spec.get("inputs") if me == 0 else None, **spec["kwargs"])
        line["outcome"] = "done"
        if me == 0:
            keep = {
                "outputs": result.outputs,
                "digests": result.digests,
                "blocks_run": result.blocks_run,
                "makespan": result.makespan,
                "waits": result.waits,
                "schedule": result.schedule,
                "deadlock": None if result.deadlock is None else str(result.deadlock),
                "latency": max(c["verdict_at"] for c in result.comm)
                - max(c["last_work"] for c in result.comm),
            }
            with open(spec["out"], "wb") as f:
                pickle.dump(keep, f)
    except SimulatorError as err:
        line["outcome"] = type(err).__name__
        line["message"] = str(err)
    line["seconds"] = time.monotonic() - t0
    with open(f"{spec['out']}.{me}.json", "w") as f:
        json.dump(line, f)


if __name__ == "__main__":
    main()
