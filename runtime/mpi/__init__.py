"""Ranks as MPI processes: the simulator spread over processes and hosts (``dslc run --launcher mpi``).

Each MPI process runs one :class:`runtime.scheduler.Engine` over a block of consecutive ranks
(its own running/pending slots, queues and seeded policy); ranks share nothing but the
program's windows and signal cells, which live in MPI-3 RMA windows allocated once, up front:

* a ``remote_store`` is an ``MPI_Put`` + flush, a remote read an ``MPI_Get`` + flush;
* a ``notify`` is an ``MPI_Accumulate`` (SUM or REPLACE on int32) + flush;
* a spinning ``wait`` reads its cell with ``MPI_Fetch_and_op(NO_OP)`` + flush;
* a remote atomic add is an ``MPI_Accumulate(SUM)`` where MPI's sum is the simulator's
  (fp32, fp64, integers), and a compare-and-swap loop for fp16 and bf16;
* a global deadlock is quiescence, found by a repeated non-blocking MIN-allreduce.

Module map: ``layout`` (which process hosts which rank), ``windows`` (RMA windows and the
operations on them), ``context`` (the kernels' ``ctx`` with MPI peer operations), ``control``
(stop cells and the termination protocol), ``engine`` (the per-process event loop),
``snapshot`` (engine state shipped to process 0 and merged for the report, trace and
schedule), ``simulate`` (:func:`simulate_mpi`), ``launch`` (starting ``mpiexec``).
See ``docs/distributed.md``.

Nothing here imports mpi4py at import time: :func:`load_mpi` does, with an error naming the
optional extra when it is missing.
"""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType

#: The optional dependency group that brings mpi4py and an MPI library (PyPI wheels).
EXTRA = "dslc[mpi]"
INSTALL_HINT = f"pip install '{EXTRA}'"

#: Environment variables a process manager sets in every process it starts (MPICH/Intel MPI
#: hydra, Open MPI, PMIx): their presence means this process is one of an mpiexec job.
_LAUNCHER_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


class MpiUnavailableError(RuntimeError):
    """mpi4py or an MPI library is missing; the message says how to install them."""


def mpi4py_installed() -> bool:
    """Is mpi4py importable (without initialising MPI)?"""
    return importlib.util.find_spec("mpi4py") is not None


def load_mpi() -> ModuleType:
    """``mpi4py.MPI``, initialised; :class:`MpiUnavailableError` naming the extra if absent."""
    if not mpi4py_installed():
        raise MpiUnavailableError(
            f"the MPI launcher needs mpi4py and an MPI library, which are not installed: {INSTALL_HINT}"
        )
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as err:  # mpi4py without a loadable libmpi
        raise MpiUnavailableError(
            f"mpi4py is installed but cannot load an MPI library ({err}): {INSTALL_HINT}"
        ) from err
    return MPI


def under_mpiexec() -> bool:
    """Was this process started by mpiexec (or another MPI process manager)?"""
    return any(v in os.environ for v in _LAUNCHER_RANK_VARS)


def launcher_process_index() -> int:
    """This process's index in its mpiexec job from the environment (0 outside one), before MPI starts."""
    for var in _LAUNCHER_RANK_VARS:
        value = os.environ.get(var)
        if value is not None and value.strip().isdigit():
            return int(value)
    return 0
