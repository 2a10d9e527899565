"""``dslc verify FILE``: explore every schedule the runtime model admits for one configuration.

Exit codes: 0 verified (every equivalence class of schedules explored, no property violated),
1 a property violated (the shortest counterexample found is printed), 2 usage or compile
error (or a configuration the runtime refuses), 4 inconclusive (stopped at ``--max-states``
or ``--timeout`` with no violation found).  3 stays ``dslc run``'s deadlock code: replaying a
deadlock counterexample with ``dslc run FILE --replay SCHEDULE.json`` exits 3.

The checker is :mod:`runtime.verify`; this module picks the configuration, wires the golden
and prints the verdict (:mod:`dsl.driver.verify_report`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from dsl.driver.api import CompiledLayer, RequestRefused, compile_layer
from dsl.driver.options import (
    add_request_options,
    cores,
    integer,
    output_file,
    round_scalar_names,
    scalar_values,
    seconds,
)
from dsl.driver.verify_report import Verdict, render_json, render_text
from runtime import watchdog
from runtime.decisions import Schedule
from runtime.files import write_text
from runtime.program import Program
from runtime.sim_errors import CohortTooLargeError, SimulatorError
from runtime.simulator import PRESETS, simulate
from runtime.verify import Config, estimate_naive, explore, replay_witness

EXIT_VERIFIED, EXIT_VIOLATED, EXIT_ERROR, EXIT_INCONCLUSIVE = 0, 1, 2, 4
STOP_GRACE = 10.0  # seconds past --timeout before a kernel that never yields is interrupted


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "verify",
        parents=[common],
        help="explore every schedule: prove deadlock freedom and determinism, or print a counterexample",
    )
    p.add_argument("file", metavar="FILE")
    add_request_options(p, "set a runtime scalar (repeatable)")
    p.add_argument(
        "--cores",
        type=cores,
        help="AIC[,AIV] per rank (default: the fewest clusters every sync_start cohort fits on)",
    )
    p.add_argument(
        "--rounds",
        type=integer("--rounds", 1, 1_000_000),
        default=2,
        help="back-to-back rounds, epoch = round (default 2)",
    )
    p.add_argument(
        "--max-states",
        type=integer("--max-states", 1),
        default=1_000_000,
        help="stop after this many distinct states",
    )
    p.add_argument("--timeout", type=seconds, default=60.0, help="stop after this many seconds")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--seed",
        type=integer("--seed", 0),
        default=0,
        help="seeds the inputs (schedules are enumerated, not sampled)",
    )
    p.add_argument(
        "--save",
        type=output_file("--save"),
        metavar="SCHEDULE.json",
        help="write the counterexample's schedule for `dslc run --replay`",
    )
    p.add_argument(
        "--trace",
        type=output_file("--trace"),
        metavar="OUT.json",
        help="write the counterexample as a Chrome trace (Perfetto)",
    )
    p.add_argument(
        "--first",
        action="store_true",
        help="stop at the first violation instead of looking for a shorter one",
    )
    p.add_argument(
        "--probes",
        type=integer("--probes", 0),
        default=32,
        help="random schedules for the estimate of the unreduced search (0: no estimate)",
    )
    p.add_argument(
        "--max-block-steps", type=integer("--max-block-steps", 1), default=10_000, help=argparse.SUPPRESS
    )


def default_clusters(program: Program) -> int:
    """The fewest clusters per rank on which every ``sync_start`` cohort fits (at least 1)."""
    need = 1
    for t in program.tasks:
        if t.sync_start:
            need = max(need, -(-int(t.blocks) // 2) if t.shape == "aiv" else int(t.blocks))
    return need


def _config(args, layer: CompiledLayer, scalars: dict[str, int], round_scalars: tuple[str, ...]) -> Config:
    if args.cores is None:
        n_aic, threads = default_clusters(layer.program), 3
    elif isinstance(args.cores, str):
        n_aic, _, threads = PRESETS[args.cores]
    else:
        n_aic, threads = args.cores[0], 3
    ranks = args.ranks or layer.ranks
    return Config(
        ranks=ranks,
        n_aic=n_aic,
        n_threads=threads,
        rounds=args.rounds,
        scalars=tuple(sorted(scalars.items())),
        max_block_steps=args.max_block_steps,
        round_scalars=round_scalars,
    )


def configuration_notes(program: Program, config: Config) -> list[str]:
    """What the configuration hides: a grid of FP atomics on a shape with one core per rank runs
    its blocks one at a time in block order, so their sums cannot race there."""
    from runtime.program import numpy_dtype
    from runtime.verify.footprint import kernel_footprint

    floats = {t.name for t in program.tensors if numpy_dtype(t.dtype).kind == "f"}
    cores = {"aic": config.n_aic, "mix": config.n_aic, "aiv": 2 * config.n_aic}
    notes = []
    for t in program.tasks:
        fp = kernel_footprint(t.kernel)
        if t.blocks > 1 and cores[t.shape] == 1 and (fp.atomics | fp.peer_atomics) & floats:
            notes.append(
                f"task {t.name}'s {t.blocks} blocks run one at a time on the only {t.shape.upper()} core "
                f"of a rank: their FP atomics cannot race here; try --cores {2 * config.n_aic},{4 * config.n_aic}"
            )
    return notes


def _golden(layer: CompiledLayer, inputs: list[dict], rounds: int):
    if layer.graph.golden is None or rounds != 1:
        return None

    def check(outputs: list[dict]) -> list[str]:
        validation = layer.validate(inputs, SimpleNamespace(outputs=outputs))
        if validation is None:
            return []
        return [f"{c.name} on rank {c.rank}: {c.message}" for c in validation.checks if not c.passed]

    return check


class _Progress:
    """The TLC-style line on a terminal: states, distinct, queue (DFS stack), states/s."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=sys.stderr)
        self.live = Live("", console=self.console, transient=True, refresh_per_second=8)
        self.live.start()

    def __call__(self, stats, stack: int) -> None:
        rate = stats.distinct / stats.elapsed if stats.elapsed else 0.0
        self.live.update(
            f"[bold]verify[/] {stats.transitions:,} states, {stats.distinct:,} distinct, queue {stack:,}, "
            f"{rate:,.0f} distinct/s, {stats.elapsed:.1f} s"
        )

    def stop(self) -> None:
        self.live.stop()


def cmd_verify(session) -> int:
    args = session.args
    layer = compile_layer(args.file, session.overrides or None, args.layer)
    scalars = scalar_values(args.scalar, layer)
    round_scalars = round_scalar_names(args.round_scalar, layer, scalars)
    inputs = layer.make_inputs(args.seed, args.ranks or layer.ranks)
    for per in inputs:
        per.update(scalars)
    try:
        per_rank, request = layer.split_scalars(inputs, round_scalars)
    except RequestRefused as err:
        print(f"refused: layer {err.layer} does not accept the request")
        for reason in err.reasons:
            print(f"  {reason}")
        return EXIT_ERROR
    config = _config(args, layer, request, round_scalars)
    progress = _Progress() if sys.stderr.isatty() and args.format == "text" else None
    started = time.monotonic()
    try:
        # The search checks its deadline between steps; a kernel body that never returns to the
        # engine (a loop of 10^9 iterations) is stopped by the alarm, a little after it.
        with watchdog.alarm(args.timeout + STOP_GRACE):
            result = explore(
                layer.program,
                per_rank,
                config,
                max_states=args.max_states,
                timeout=args.timeout,
                check_outputs=_golden(layer, inputs, config.rounds),
                shortest=not args.first,
                progress=progress,
            )
            estimate = None
            if args.probes:
                budget = max(1.0, min(10.0, time.monotonic() - started))
                estimate = estimate_naive(layer.program, per_rank, config, probes=args.probes, timeout=budget)
    except watchdog.Expired:
        print(
            f"inconclusive: stopped at the {args.timeout:g} s timeout while a kernel of {layer.graph.name!r} "
            "was running without returning to the scheduler: a very long (or endless) loop in a task body"
        )
        return EXIT_INCONCLUSIVE
    except CohortTooLargeError as err:
        print(f"refused: {err}; give more cores with --cores")
        return EXIT_ERROR
    finally:
        if progress is not None:
            progress.stop()
    verdict = Verdict(layer.graph.name, str(args.file), config, args.seed, result, estimate)
    verdict.notes = configuration_notes(layer.program, config)
    if layer.graph.golden is None:
        verdict.golden = "the layer names no golden"
    elif config.rounds != 1:
        verdict.golden = "golden checks run for --rounds 1 only (as in dslc run)"
    v = result.violation
    if v is not None:
        verdict.witness = replay_witness(layer.program, per_rank, config, v.decisions)
        verdict.schedule = _schedule(layer, config, args.seed, verdict.witness.decisions, v.kind)
        if v.reference is not None:
            verdict.reference_witness = ref = replay_witness(layer.program, per_rank, config, v.reference)
            verdict.reference = _schedule(layer, config, args.seed, ref.decisions, "reference outputs")
        _write_artifacts(args, layer, per_rank, config, verdict)
    sys.stdout.write(render_json(verdict) if args.format == "json" else render_text(verdict))
    if v is not None:
        return EXIT_VIOLATED
    return EXIT_VERIFIED if result.complete else EXIT_INCONCLUSIVE


def _schedule(layer: CompiledLayer, config: Config, seed: int, decisions, note: str) -> Schedule:
    return Schedule(
        layer=layer.graph.name,
        params=layer.params,
        ranks=config.ranks,
        cores=(config.n_aic, 2 * config.n_aic),
        rounds=config.rounds,
        seed=seed,
        decisions=list(decisions),
        scalars=dict(config.scalars),
        early_capacity=config.early_capacity,
        sched_threads=config.n_threads,
        note=f"dslc verify counterexample: {note}",
        round_scalars=config.round_scalars,
    )


def _write_artifacts(args, layer: CompiledLayer, per_rank, config: Config, verdict: Verdict) -> None:
    """The ``--save`` schedule(s) and the ``--trace``; a path that cannot be written is E107 (exit 2)."""
    if args.save:
        write_text(args.save, verdict.schedule.dumps())
        verdict.saved = args.save
        if verdict.reference is not None:
            ref = Path(args.save).with_suffix(".reference.json")
            write_text(ref, verdict.reference.dumps())
            verdict.saved_reference = str(ref)
    if args.trace:
        _replay_to_trace(layer, per_rank, config, verdict, args.trace)


def _replay_to_trace(layer: CompiledLayer, per_rank, config: Config, verdict: Verdict, path: str) -> None:
    try:
        simulate(
            layer.program,
            per_rank,
            ranks=config.ranks,
            cores=(config.n_aic, 2 * config.n_aic),
            rounds=config.rounds,
            scalars=dict(config.scalars),
            sched_threads=config.n_threads,
            replay=verdict.schedule.decisions,
            round_scalars=config.round_scalars,
            trace=path,
            raise_on_deadlock=False,
            max_block_steps=config.max_block_steps,
        )
    except SimulatorError:
        pass  # a kernel error or step limit: the trace up to it is written all the same
    verdict.trace = path
