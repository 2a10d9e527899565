"""Helpers of the MPI tests: skip without the extra, run ``driver.py`` under mpiexec."""

from __future__ import annotations

import glob
import json
import os
import pickle
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runtime.mpi import mpi4py_installed
from runtime.mpi.launch import find_mpiexec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DRIVER = HERE / "driver.py"
PROGRAMS = HERE / "programs.py"
MPIEXEC = find_mpiexec() if mpi4py_installed() else None

needs_mpi = pytest.mark.skipif(
    MPIEXEC is None, reason="the MPI extra is not installed: pip install 'dslc[mpi]'"
)

#: Seconds after which a test gives up on an MPI job: far above the ~1 s a run takes, only
#: there so that a hang fails the test instead of the CI job.
JOB_TIMEOUT = 90

#: The environment of a run "over the network": every process talks TCP, as across hosts.
TCP_ENV = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self"}


@dataclass
class Job:
    returncode: int
    stdout: str
    stderr: str
    processes: list[dict[str, Any]]  # per process: outcome, message, seconds
    result: dict[str, Any] | None  # what process 0 kept of a finished run

    @property
    def outcomes(self) -> list[str]:
        return [p["outcome"] for p in self.processes]


def run_job(
    argv: list[str], *, nprocs: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``mpiexec -n nprocs argv...`` from the repository root, output captured."""
    full_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [MPIEXEC, "-n", str(nprocs), *argv],
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        cwd=ROOT,
        env=full_env,
    )


def run_driver(
    tmp_path: Path,
    program: str,
    *,
    nprocs: int,
    inputs: Any = None,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> Job:
    """Run ``simulate_mpi(program, inputs, **kwargs)`` on ``nprocs`` processes."""
    out = tmp_path / f"job{time.monotonic_ns()}.pkl"
    spec = tmp_path / (out.name + ".spec")
    spec.write_bytes(pickle.dumps({"program": program, "inputs": inputs, "out": str(out), "kwargs": kwargs}))
    proc = run_job([sys.executable, str(DRIVER), str(spec)], nprocs=nprocs, env=env)
    processes = sorted(
        (json.loads(Path(f).read_text()) for f in glob.glob(f"{out}.*.json")), key=lambda p: p["process"]
    )
    result = pickle.loads(out.read_bytes()) if out.exists() else None
    return Job(proc.returncode, proc.stdout, proc.stderr, processes, result)
