"""``dslc run`` (simulate and validate a layer) and ``dslc compile`` (write generated code).

Exit codes of ``run``: 0 outputs match the golden (or no golden), 1 the error-level lint
found something (nothing is simulated; ``--no-lint`` skips the lint) or an output does not
match, 2 usage or compile error, a golden that does not fit the layer (E109), a layer too large
to simulate (E108), a request the host refuses (a runtime scalar outside its range, a false
``guard``) or a ``--replay`` schedule that does not fit the layer, 3 deadlock (no block can ever
progress), 4 stopped at ``--timeout`` (the report says how far the run got and whether it was
still making progress).

``--replay SCHEDULE.json`` runs the untimed engine on the decisions of a schedule that
``dslc verify`` wrote for a counterexample: the same placements, interleaving and completion
order, so the same deadlock or the same bits. A replay skips the lint: the schedule is the
counterexample of a bug the lint may well name, and the point is to watch it happen.

``--scalar NAME=VALUE`` sets a runtime scalar of the request (``start_pos``, ``num_tokens``)
on every rank, over what the golden's ``make_inputs`` gives. ``--launcher mpi [--procs N]``
runs the ranks as MPI processes with the same report and exit codes (``dsl.driver.run_mpi``,
docs/distributed.md); ``--replay`` does not combine with it (a usage error): a schedule is one
interleaving of every rank's steps, and across MPI processes that interleaving is real time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsl.codes import CODES
from dsl.driver.api import RequestRefused, compile_layer, target_code
from dsl.driver.config import load_config
from dsl.driver.diagnostics import DRIVER_CODES
from dsl.driver.options import (
    add_request_options,
    cores,
    integer,
    output_file,
    round_scalar_names,
    scalar_values,
    seconds,
)
from dsl.driver.report import one_per_site
from dsl.driver.session import UsageError, lint_file
from dsl.frontend import read_source
from dsl.version import __version__
from lowering.codegen.numpy.emit import content_hash, render_numpy
from lowering.source import Severity
from runtime.decisions import Schedule, ScheduleMismatch
from runtime.files import WriteError, ensure_directory, write_text
from runtime.sim_errors import CohortTooLargeError, DeadlockError, SimulationTimeout, SimulatorError

EXIT_OK, EXIT_MISMATCH, EXIT_ERROR, EXIT_DEADLOCK, EXIT_TIMEOUT = 0, 1, 2, 3, 4
TARGETS = ("numpy", "pypto", "ascendc")
POLICY_HELP = (
    "how the simulated scheduler breaks ties: fifo (arrival order, the default), random (seeded "
    "random order and delays) or adversarial (seeded; parks notifiers behind waiters to expose "
    "handshake deadlocks)"
)
LAUNCHERS = ("inprocess", "mpi")


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    run = sub.add_parser("run", parents=[common], help="compile, simulate and validate a layer")
    run.add_argument("file", metavar="FILE")
    add_request_options(run, "set a runtime scalar of the request, e.g. --scalar num_tokens=100 (repeatable)")
    run.add_argument("--policy", choices=("fifo", "random", "adversarial"), default="fifo", help=POLICY_HELP)
    run.add_argument(
        "--seed",
        type=integer("--seed", 0),
        default=0,
        help="seeds the inputs and the scheduling policy (an integer >= 0)",
    )
    run.add_argument(
        "--rounds",
        type=integer("--rounds", 1, 1_000_000),
        default=1,
        help="run the layer R times back to back (epoch = round)",
    )
    run.add_argument(
        "--cores", type=cores, default="sim", help="sim (8/16), a2a3 (24/48), a5 (36/72) or AIC[,AIV]"
    )
    run.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="wall-clock limit in seconds; a run stopped by it exits 4 and says how far it got",
    )
    run.add_argument(
        "--trace",
        type=output_file("--trace"),
        metavar="OUT.json",
        help="write a Chrome trace (opens in Perfetto)",
    )
    run.add_argument("--no-validate", action="store_true", help="skip the golden comparison")
    run.add_argument(
        "--no-lint", action="store_true", help="do not run the error-level lint before simulating"
    )
    run.add_argument(
        "--replay",
        metavar="SCHEDULE.json",
        help="run exactly the schedule a `dslc verify` counterexample saved (it fixes ranks, cores, rounds, "
        "seed; no lint)",
    )
    run.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        default="inprocess",
        help="inprocess (default) or mpi: ranks as MPI processes (pip install 'dslc[mpi]'; docs/distributed.md)",
    )
    run.add_argument(
        "--procs",
        type=integer("--procs", 1, 4096),
        metavar="N",
        help="with --launcher mpi: start mpiexec with N processes on this host",
    )

    comp = sub.add_parser("compile", parents=[common], help="write the generated code of a layer")
    comp.add_argument("file", metavar="FILE")
    comp.add_argument(
        "--target", choices=TARGETS, default="numpy", help="numpy (the simulator's), pypto or ascendc"
    )
    comp.add_argument("-o", "--output", metavar="DIR", required=True, help="directory to write into")


def lint_before_run(session) -> int | None:
    """The error-level lint of ``dslc check`` (same config and suppressions) unless ``--no-lint``
    or ``--replay``; an exit code if it found errors, None when the run may go on."""
    if session.args.no_lint or session.args.replay:
        return None
    cfg = load_config()
    findings = one_per_site(lint_file(session, Path(session.args.file), cfg))  # as dslc check counts them
    errors = [d for d in findings if d.severity is Severity.ERROR]
    if not errors:
        return None
    session.emit(errors)
    if any(d.code in CODES or d.code in DRIVER_CODES for d in errors):
        return EXIT_ERROR  # the file does not compile
    print(
        f"not run: the lint found {len(errors)} error(s); fix them, or run anyway with --no-lint",
        file=sys.stderr,
    )
    return EXIT_MISMATCH


def cmd_run(session) -> int:
    args = session.args
    if args.procs is not None:
        raise UsageError("--procs starts MPI processes: it needs --launcher mpi")
    stop = lint_before_run(session)
    if stop is not None:
        return stop
    schedule = load_schedule(args.replay) if args.replay else None
    if schedule is not None:
        layer, ranks, scalars, round_scalars = _prepare_replay(session, schedule)
    else:
        layer, ranks, scalars, round_scalars = prepare_run(session)
    try:
        return _run_in_process(args, layer, ranks, scalars, round_scalars, schedule)
    except MemoryError:
        raise layer.out_of_memory(ranks) from None


def _run_in_process(args, layer, ranks, scalars, round_scalars, schedule) -> int:
    inputs = layer.make_inputs(args.seed, ranks)
    for per in inputs:
        per.update(scalars)
    where = describe_run(args, layer, ranks)
    if schedule is not None:
        where = f"the schedule in {args.replay} ({len(schedule.decisions)} decisions): " + where
    print(f"running {where}")
    result = guarded_run(
        lambda: layer.run(
            inputs,
            ranks=ranks,
            seed=args.seed,
            policy="fifo" if schedule is not None else args.policy,
            rounds=args.rounds,
            cores=args.cores,
            timeout=args.timeout,
            trace=args.trace,
            progress=sys.stderr.isatty(),
            replay=schedule.decisions if schedule is not None else None,
            sched_threads=schedule.sched_threads if schedule is not None else None,
            round_scalars=round_scalars,
        )
    )
    if isinstance(result, int):
        return result
    return report_run(args, layer, inputs, result)


def prepare_run(session):
    """Compile the layer of ``dslc run``; its rank count, ``--scalar`` values and round scalars."""
    args = session.args
    layer = compile_layer(args.file, session.overrides or None, args.layer)
    scalars = scalar_values(args.scalar, layer)
    if args.trace:
        _check_trace_target(args.trace)
    return layer, args.ranks or layer.ranks, scalars, round_scalar_names(args.round_scalar, layer, scalars)


def _prepare_replay(session, schedule: Schedule):
    """:func:`prepare_run` for ``--replay``: the configuration comes from the schedule."""
    args = session.args
    _replay_options(args, session.overrides, schedule)
    args.rounds, args.ranks, args.seed = schedule.rounds, schedule.ranks, schedule.seed
    args.cores, args.policy = schedule.cores, "replay"
    args.round_scalar = [n for n in schedule.round_scalars if n != "epoch"]
    layer = compile_layer(args.file, session.overrides or None, args.layer)
    _check_layer(layer, schedule)
    params = {k: v for k, v in schedule.params.items() if k in layer.params}
    if params != {k: layer.params[k] for k in params}:
        layer = compile_layer(args.file, {**params, **session.overrides}, args.layer)
    scalars = dict(schedule.scalars)
    return layer, args.ranks or layer.ranks, scalars, round_scalar_names(args.round_scalar, layer, scalars)


def describe_run(args, layer, ranks: int) -> str:
    return (
        f"{layer.graph.name} on {ranks} rank(s), cores {args.cores}, policy {args.policy}, seed {args.seed}, "
        f"{args.rounds} round(s)"
    )


def guarded_run(run):
    """``run()``, or the exit code of the error it raised (printed as ``dslc run`` reports it)."""
    try:
        return run()
    except ScheduleMismatch as err:
        print(f"refused: the schedule does not fit this layer: {err}")
        return EXIT_ERROR
    except RequestRefused as err:
        print(f"refused: layer {err.layer} does not accept the request")
        for reason in err.reasons:
            print(f"  {reason}")
        return EXIT_ERROR
    except DeadlockError as err:
        print(str(err))
        return EXIT_DEADLOCK
    except SimulationTimeout as err:
        print(f"timeout: {err}")
        return EXIT_TIMEOUT
    except CohortTooLargeError as err:
        print(f"refused: {err}")
        return EXIT_ERROR
    except SimulatorError as err:
        print(f"simulator error: {err}")
        return EXIT_ERROR


def report_run(args, layer, inputs, result) -> int:
    """Print the run report and the golden comparison; the exit code."""
    print(f"blocks run {result.blocks_run}, simulated makespan {result.makespan}, waits {result.waits}")
    if args.trace:
        print(f"trace written to {args.trace}")
    if args.no_validate:
        return EXIT_OK
    validation = layer.validate(inputs, result) if args.rounds == 1 else None
    if validation is None:
        reason = (
            "no golden declared" if layer.graph.golden is None else "golden checks run for --rounds 1 only"
        )
        print(f"not validated: {reason}")
        return EXIT_OK
    width = max([len("output"), *(len(c.name) for c in validation.checks)])
    print(f"{'output':<{width}}  rank  {'max abs err':>12}  {'max rel err':>12}  {'out of tol':>10}  verdict")
    for c in validation.checks:
        verdict = "ok" if c.passed else "MISMATCH"
        print(
            f"{c.name:<{width}}  {c.rank:>4}  {c.max_abs_err:>12.3e}  {c.max_rel_err:>12.3e}  "
            f"{c.frac_out_of_tol:>10.2%}  {verdict}"
        )
    return EXIT_OK if validation.passed else EXIT_MISMATCH


def _check_trace_target(path: str) -> None:
    """Refuse a trace path that cannot be written before simulating, not after."""
    p = Path(path)
    if p.is_dir():
        raise WriteError(p, "it is a directory (--trace names the JSON file to write)")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise WriteError(p, f"{parent} is not a directory")
            break


def load_schedule(path: str) -> Schedule:
    """Read a ``--replay`` schedule; anything wrong with it is a usage error (exit 2)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise UsageError(f"--replay {path}: cannot read: {err.strerror or err}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UsageError(f"--replay {path}: not JSON: {err}") from None
    try:
        return Schedule.from_json(doc)
    except ScheduleMismatch as err:
        raise UsageError(f"--replay {path}: {err}") from None


def _replay_options(args, overrides: dict[str, int], schedule: Schedule) -> None:
    """A replay takes its configuration from the schedule; options that say otherwise are errors."""
    given = [
        name
        for name, value, default in (
            ("--rounds", args.rounds, 1),
            ("--ranks", args.ranks, None),
            ("--cores", args.cores, "sim"),
            ("--seed", args.seed, 0),
            ("--policy", args.policy, "fifo"),
            ("--scalar", args.scalar, []),
            ("--round-scalar", args.round_scalar, []),
        )
        if value != default
    ]
    if given:
        raise UsageError(f"--replay takes the configuration from the schedule; drop {', '.join(given)}")
    clash = [f"{k}={v}" for k, v in overrides.items() if schedule.params.get(k, v) != v]
    if clash:
        fixed = ", ".join(f"{k}={schedule.params[k]}" for k, _ in (c.split("=") for c in clash))
        raise UsageError(f"--set {', '.join(clash)}: the schedule was recorded with {fixed}")


def _check_layer(layer, schedule: Schedule) -> None:
    if layer.graph.name != schedule.layer:
        raise UsageError(
            f"--replay: the schedule is of layer {schedule.layer!r}, the file defines {layer.graph.name!r}"
        )


def cmd_compile(session) -> int:
    args = session.args
    if args.target == "pypto":
        from dsl.driver.cli_pypto import compile_to_pypto

        return compile_to_pypto(session)
    if args.target == "ascendc":
        from dsl.driver.cli_ascendc import compile_to_ascendc

        return compile_to_ascendc(session)
    layer = compile_layer(args.file, session.overrides or None, args.layer)
    out_dir = ensure_directory(args.output)
    text = read_source(args.file)
    key = content_hash(text, repr(sorted(layer.graph.env().items())), layer.graph.name, __version__)
    target = out_dir / f"{layer.graph.name}.py"
    write_text(target, target_code(layer.graph, lambda: render_numpy(layer.graph, key[:16], __version__)))
    print(f"wrote {target}")
    return EXIT_OK
