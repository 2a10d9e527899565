"""Starting an MPI job on this host: find ``mpiexec`` and run it under a hard deadline."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: Exit code of a job that did not finish in time (``dslc run``'s code for a run stopped at --timeout).
EXIT_TIMEOUT = 4


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside this Python (the mpich wheel puts it there), else on ``PATH``."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def run_job(command: Sequence[str], deadline: float) -> int:
    """Run ``command`` (an mpiexec line) with inherited output; its exit code.

    The job runs in a session of its own; if it is still running after ``deadline`` seconds,
    the whole session is killed and :data:`EXIT_TIMEOUT` returned after a message on stderr.
    Ctrl-C stops the job the same way.
    """
    job = subprocess.Popen(list(command), start_new_session=True)
    try:
        code = job.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        _kill(job)
        print(
            f"dslc: the MPI job did not finish within {deadline:g} s and was killed "
            "(a process stuck in a kernel that never yields, or a lost process)",
            file=sys.stderr,
        )
        return EXIT_TIMEOUT
    except KeyboardInterrupt:
        _kill(job)
        raise
    if code < 0:  # killed by a signal
        print(f"dslc: mpiexec was killed by signal {-code}", file=sys.stderr)
        return 2
    return code


def _kill(job: subprocess.Popen) -> None:
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    job.wait()
