"""``dslc run --launcher mpi``: the run command with the ranks as MPI processes.

Two ways in (docs/distributed.md):

* ``mpiexec -n P dslc run FILE --launcher mpi ...``: every process compiles the layer (the
  cache makes that cheap), process 0 draws every rank's inputs and sends each process its
  own, every process simulates its block of ranks (``runtime.mpi``), and process 0 prints the
  one report: the merged counters, the merged deadlock report, the golden comparison (run
  once, on process 0). Every process exits with process 0's code.
* ``dslc run FILE --launcher mpi --procs P ...``: compiles once here (so a front-end error is
  reported before any process starts), then starts ``mpiexec -n P`` with the same options
  on this host and returns its exit code, under a hard deadline.

Outside an mpiexec job and without ``--procs`` the run is one MPI process hosting every rank.
Processes other than 0 print nothing: what goes wrong on one of them reaches process 0
through the run's stop protocol and is printed there.
"""

from __future__ import annotations

import os
import sys

from dsl.driver.cli_run import (
    EXIT_ERROR,
    EXIT_OK,
    describe_run,
    guarded_run,
    lint_before_run,
    prepare_run,
    report_run,
)
from dsl.driver.session import UsageError
from runtime import mpi

#: Options of ``dslc run`` a ``--procs`` launch passes on to its processes (``procs`` is
#: consumed here and ``replay`` refused before; the test of this module checks that no
#: option is forgotten).
FORWARDED = (
    "file",
    "policy",
    "seed",
    "rounds",
    "ranks",
    "cores",
    "timeout",
    "trace",
    "no_validate",
    "scalar",
    "round_scalar",
    "launcher",
    "set",
    "layer",
    "debug",
    "no_color",
)

#: Seconds a ``--procs`` launch allows beyond ``--timeout`` for start-up, the stop grace and
#: the final report before it kills the job.
LAUNCH_SLACK_SECONDS = 60.0


def run_with_mpi(session) -> int:
    """``dslc run --launcher mpi``: the ranks as MPI processes (started here with ``--procs``)."""
    args = session.args
    if args.replay:
        raise UsageError(
            "--replay runs one recorded interleaving of every rank's steps in-process; over MPI "
            "processes that interleaving is real time: drop --launcher mpi to replay"
        )
    if args.procs is not None:
        return _launch(session)
    if mpi.launcher_process_index() != 0:
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    try:
        MPI = mpi.load_mpi()
    except mpi.MpiUnavailableError as err:
        raise UsageError(f"--launcher mpi: {err}") from None
    from runtime.mpi.collective import on_root, patient_barrier
    from runtime.mpi.simulate import simulate_mpi

    stop = lint_before_run(session)  # on every process, printed by process 0 only
    if stop is not None:
        return stop
    comm = MPI.COMM_WORLD
    root = comm.Get_rank() == 0
    layer, ranks, scalars, round_scalars = prepare_run(session)  # the same everywhere, errors included
    if comm.Get_size() > ranks:
        raise UsageError(
            f"mpiexec started {comm.Get_size()} processes for {ranks} rank(s): use at most {ranks}"
        )

    def draw():
        inputs = layer.make_inputs(args.seed, ranks)
        for per in inputs:
            per.update(scalars)
        per_rank, run_scalars = layer.split_scalars(inputs, round_scalars)
        return inputs, per_rank, run_scalars

    drawn = guarded_run(lambda: on_root(comm, draw))  # a refused request: exit 2 on every process
    if isinstance(drawn, int):
        return drawn
    inputs, per_rank, run_scalars = drawn if root else (None, None, None)
    del drawn
    run_scalars = comm.bcast(run_scalars, root=0)
    validate = not args.no_validate and args.rounds == 1 and layer.graph.golden is not None
    if root and not validate:  # hand the inputs over: process 0 keeps only its own once sent
        inputs, handed = None, [per_rank]
        per_rank = handed.pop
    if root:
        print(f"running {describe_run(args, layer, ranks)}, over {comm.Get_size()} MPI process(es)")
    result = guarded_run(
        lambda: simulate_mpi(
            layer.program,
            per_rank,
            ranks=ranks,
            scalars=run_scalars,
            cores=args.cores,
            policy=args.policy,
            seed=args.seed,
            rounds=args.rounds,
            timeout=args.timeout,
            trace=args.trace,
            outputs="gather" if validate else "none",
            schedule=False,
            round_scalars=round_scalars,
        )
    )
    if isinstance(result, int):
        return result  # the same error on every process, printed by process 0
    code, failure = EXIT_OK, None
    if root:
        try:
            code = report_run(args, layer, inputs, result)
        except Exception as err:  # a golden that raises (E109): the others must not wait forever
            code, failure = EXIT_ERROR, err
    patient_barrier(comm)  # the golden check may take a while on process 0
    code = comm.bcast(code, root=0)
    if failure is not None:
        raise failure  # reported by the CLI as in-process, once every process is released
    return code


def child_argv(args) -> list[str]:
    """The ``dslc`` arguments of each process of a ``--procs`` launch."""
    cores = args.cores if isinstance(args.cores, str) else f"{args.cores[0]},{args.cores[1]}"
    out = ["run", args.file, "--launcher", "mpi", "--no-lint"]  # linted by the launch (or --no-lint)
    out += ["--policy", args.policy, "--seed", str(args.seed)]
    out += ["--rounds", str(args.rounds), "--cores", cores, "--timeout", repr(args.timeout)]
    if args.ranks is not None:
        out += ["--ranks", str(args.ranks)]
    if args.trace:
        out += ["--trace", args.trace]
    if args.no_validate:
        out.append("--no-validate")
    for text in args.scalar:
        out += ["--scalar", text]
    for name in args.round_scalar:
        out += ["--round-scalar", name]
    for text in args.set:
        out += ["--set", text]
    if args.layer:
        out += ["--layer", args.layer]
    out += ["--debug"] * args.debug + ["--no-color"] * args.no_color
    return out


def _launch(session) -> int:
    """``--procs P``: start ``mpiexec -n P`` on this host with the same run."""
    from runtime.mpi.launch import find_mpiexec, run_job

    args = session.args
    if mpi.under_mpiexec():
        raise UsageError(
            "--procs starts mpiexec itself; under mpiexec leave it out (the job size is the process count)"
        )
    if args.procs < 1:
        raise UsageError("--procs must be positive")
    if not mpi.mpi4py_installed():
        raise UsageError(f"--launcher mpi needs mpi4py and an MPI library: {mpi.INSTALL_HINT}")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise UsageError(f"--procs: no mpiexec beside {sys.executable} nor on PATH: {mpi.INSTALL_HINT}")
    stop = lint_before_run(session)  # once, before any process starts
    if stop is not None:
        return stop
    ranks = prepare_run(session)[1]  # front-end errors once, before any process starts
    if args.procs > ranks:
        raise UsageError(
            f"--procs {args.procs}: the layer runs on {ranks} rank(s); use at most {ranks} processes"
        )
    command = [mpiexec, "-n", str(args.procs), sys.executable, "-m", "dsl.driver.cli", *child_argv(args)]
    sys.stdout.flush()
    return run_job(command, args.timeout + LAUNCH_SLACK_SECONDS)
