"""Collective steps done patiently, and failing together.

MPI's blocking calls busy-wait: on a host with more processes than cores, processes waiting
for process 0 (while it draws the inputs or checks the golden) would take the cores it needs.
:func:`patient_barrier` and :func:`receive_patiently` wait with growing sleeps instead.

Between the collective steps of a run (scattering inputs, allocating windows, gathering
results) a process that raised alone would leave its peers blocked in the next collective.
:func:`everywhere` and :func:`on_root` run a step, then agree on its outcome, so every process
raises (or returns) together.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_FIRST_PAUSE, _LONGEST_PAUSE = 1e-4, 1e-2


def _patiently(done: Callable[[], bool]) -> None:
    pause = _FIRST_PAUSE
    while not done():
        time.sleep(pause)
        pause = min(2 * pause, _LONGEST_PAUSE)


def patient_barrier(comm: Any) -> None:
    """Return once every process has called it, sleeping rather than spinning meanwhile."""
    _patiently(comm.Ibarrier().Test)


def receive_patiently(comm: Any, source: int, tag: int) -> Any:
    """``comm.recv(source=source, tag=tag)``, sleeping rather than spinning until it arrives."""
    _patiently(lambda: comm.Iprobe(source=source, tag=tag))
    return comm.recv(source=source, tag=tag)


def _portable(err: BaseException) -> bytes:
    """``err`` pickled if it survives a round trip, else a RuntimeError with its message."""
    try:
        data = pickle.dumps(err)
        pickle.loads(data)
        return data
    except Exception:
        return pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}"))


def everywhere(comm: Any, fn: Callable[[], T]) -> T:
    """Run ``fn`` on every process; if any raised, raise on every process.

    A process that raised re-raises its own exception; the others raise the first failing
    process's (as far as it pickles).
    """
    try:
        value, error = fn(), None
    except Exception as err:  # reported on every process below
        value, error = None, err
    patient_barrier(comm)
    failures = comm.allgather(None if error is None else _portable(error))
    if error is not None:
        raise error
    for data in failures:
        if data is not None:
            raise pickle.loads(data)
    return value  # type: ignore[return-value]


def on_root(comm: Any, fn: Callable[[], T]) -> T | None:
    """Run ``fn`` on process 0 only and raise its error, if any, on every process.

    Returns ``fn()`` on process 0 and None elsewhere.
    """
    value, failure = None, None
    if comm.Get_rank() == 0:
        try:
            value = fn()
        except Exception as err:  # reported on every process below
            failure = err
    patient_barrier(comm)
    data = comm.bcast(None if failure is None else _portable(failure), root=0)
    if failure is not None:
        raise failure
    if data is not None:
        raise pickle.loads(data)
    return value
