"""The ``dslc`` command line.

Exit codes: 0 clean, 1 findings at or above ``--fail-on`` (``run``: lint errors or a
mismatch; ``verify``: a violation), 2 usage, input or internal error (every front-end error is
a 2), 3 deadlock in ``dslc run``, 4 ``dslc run`` stopped at its ``--timeout`` or ``dslc
verify`` inconclusive (bounded). No traceback reaches the user unless ``--debug`` is given; an
internal error (a dslc bug) says how to report it.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path

from dsl.codes import CODES
from dsl.driver.cli_fix import add_parser as add_fix_parser
from dsl.driver.cli_fix import cmd_fix
from dsl.driver.cli_pypto import PY_SUFFIX, is_pypto_candidate
from dsl.driver.cli_run import add_parsers as add_run_parsers
from dsl.driver.cli_run import cmd_compile, cmd_run
from dsl.driver.cli_verify import add_parser as add_verify_parser
from dsl.driver.cli_verify import cmd_verify
from dsl.driver.codes import lookup, registry
from dsl.driver.diagnostics import DRIVER_CODES, diag
from dsl.driver.golden import GoldenError
from dsl.driver.options import integer
from dsl.driver.render import SourceCache, render
from dsl.driver.report import FORMATS, format_findings, one_per_site
from dsl.driver.session import Session, UsageError, lint_config, lint_file, write_error
from dsl.version import __version__
from lowering.checks.rule import PRESETS
from lowering.pypto_reader import INPUT_ERRORS as READER_INPUT_ERRORS
from lowering.source import CompileError, Diagnostic, Severity, Span
from runtime.files import WriteError, write_text

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_DEADLOCK = 0, 1, 2, 3

DESCRIPTION = """\
dslc compiles NPU layers written as task graphs, proves the concurrency and numerics bugs
of the Ascend task runtime absent (or names them with the line and the fix), and emits
NumPy kernels for the simulator, and PyPTO and AscendC for the device.

exit codes: 0 clean, 1 findings (a mismatch in `run`, a violation in `verify`), 2 usage or
input error, 3 deadlock in `run`, 4 `run` stopped at its --timeout or `verify` inconclusive.
`dslc COMMAND --help` for the options.

examples:
  dslc check models/
  dslc graph models/deepseek_v4_flash/hc_pre.dsl --format dot | dot -Tsvg > hc_pre.svg
  dslc check layer.dsl --set T=8192
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit(2) with its own text; keep our format
        # "argument --seed: --seed -1: must be >= 0" says the option twice: keep our own message
        raise UsageError(re.sub(r"^argument (\S+): (?=\1\b)", "", message))


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a layer parameter (repeatable)",
    )
    common.add_argument("--layer", help="the layer to use when a file defines several roots")
    common.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    common.add_argument("--no-color", action="store_true", help="never colour the output")

    parser = _Parser(
        prog="dslc", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"dslc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = sub.add_parser(
        "check", parents=[common], help="lint .dsl and PyPTO .py files, or the directories holding them"
    )
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=FORMATS, help="output format (default: text)")
    check.add_argument(
        "--select", action="append", metavar="CODES", help="only these codes or prefixes (comma list)"
    )
    check.add_argument(
        "--ignore", action="append", metavar="CODES", help="skip these codes or prefixes (comma list)"
    )
    check.add_argument("--preset", choices=sorted(PRESETS), help="device whose core counts the rules assume")
    check.add_argument(
        "--early-queue",
        type=integer("--early-queue", 1, 1 << 20),
        metavar="N",
        help="early-dispatch queue capacity D110 assumes (default 128, the fan-out known to run on simpler "
        "after #1812; 64 for simpler before it)",
    )
    check.add_argument("--fail-on", choices=("error", "warning", "note"), help="lowest severity that exits 1")
    check.add_argument("--config", metavar="PYPROJECT", help="read [tool.dslc] from this file")
    check.add_argument(
        "--strict", action="store_true", help="PyPTO files: constructs the reader cannot model are errors"
    )

    graph = sub.add_parser(
        "graph", parents=[common], help="print the task graph with every edge and its reason (json or dot)"
    )
    graph.add_argument("file", metavar="FILE")
    graph.add_argument("--format", choices=("json", "dot"), default="json")
    graph.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")

    explain = sub.add_parser("explain", parents=[common], help="explain a diagnostic code")
    explain.add_argument("code", metavar="CODE")
    add_run_parsers(sub, common)
    add_verify_parser(sub, common)
    add_fix_parser(sub, common)
    return parser


def discover(paths: Iterable[str]) -> list[Path]:
    """Files named on the command line, and ``*.dsl`` and PyPTO ``*.py`` files below directories."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = [q for q in p.rglob("*.dsl") if q.is_file()]
            found += [q for q in p.rglob("*" + PY_SUFFIX) if q.is_file() and is_pypto_candidate(q)]
            out.extend(sorted(found))
        else:
            out.append(p)
    return out


def cmd_check(session: Session) -> int:
    cfg = lint_config(session.args)
    files = list(dict.fromkeys(discover(session.args.paths)))  # each file once, in order
    if not files:
        raise UsageError("no *.dsl or PyPTO *.py files found under the given paths")
    everything: list[Diagnostic] = []
    for path in files:
        everything.extend(one_per_site(lint_file(session, path, cfg)))
    sys.stdout.write(format_findings(cfg.format, everything, session.sources, session.colour))
    if session.args.debug:
        for d in everything:
            trace = dict(d.data).get("traceback")
            if trace:
                print(f"{d.span}: {d.code} traceback:\n{trace}", file=sys.stderr)
    front_end = [
        d for d in everything if d.code in CODES or d.code in DRIVER_CODES or d.code in READER_INPUT_ERRORS
    ]
    failing = [d for d in everything if d.severity.rank >= cfg.fail_on.rank]
    counts = ", ".join(f"{sum(d.severity is s for d in everything)} {s.value}(s)" for s in Severity)
    print(f"{len(files)} file(s) checked: {counts}", file=sys.stderr)
    if front_end:
        return EXIT_ERROR
    return EXIT_FINDINGS if failing else EXIT_OK


def cmd_graph(session: Session) -> int:
    from lowering.printer import to_dot, to_json

    graphs = session.compile(Path(session.args.file))
    if len(graphs) != 1:
        names = ", ".join(g.name for g in graphs)
        raise UsageError(f"{session.args.file} defines several root layers ({names}); pick one with --layer")
    text = to_json(graphs[0]) if session.args.format == "json" else to_dot(graphs[0])
    if session.args.output:
        write_text(session.args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_explain(session: Session) -> int:
    entry = lookup(session.args.code)
    if entry is None:
        raise UsageError(f"unknown code {session.args.code!r}; codes: {', '.join(registry())}")
    print(entry.page)
    return EXIT_OK


def cmd_run_on_launcher(session) -> int:
    """``dslc run`` in this process, or over MPI processes with ``--launcher mpi``."""
    if session.args.launcher == "mpi":
        from dsl.driver.run_mpi import run_with_mpi  # mpi4py is loaded only when asked for

        return run_with_mpi(session)
    return cmd_run(session)


COMMANDS = {
    "check": cmd_check,
    "graph": cmd_graph,
    "explain": cmd_explain,
    "run": cmd_run_on_launcher,
    "compile": cmd_compile,
    "fix": cmd_fix,
    "verify": cmd_verify,
}


REPORT_BUG = (
    "This is a bug in dslc, not a mistake in your input. Please report it to the dslc maintainers "
    "with the command line, the input files and the output of the same command with --debug."
)


def _command_line_error(message: str) -> int:
    d = diag("E104", Span.command_line(), message, hint="dslc --help lists the commands and options")
    print(render(d, SourceCache()), file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help and --version print and "exit": return their code
            return done.code if isinstance(done.code, int) else EXIT_OK
        if args.command is None:
            parser.print_help()
            return EXIT_ERROR
        return COMMANDS[args.command](Session(args))
    except UsageError as err:
        return _command_line_error(str(err))
    except CompileError as err:
        sources = SourceCache()
        for d in err.diagnostics:
            print(render(d, sources))
        return EXIT_ERROR
    except GoldenError as err:  # a golden that raises or does not fit the layer: E109 at the golden
        print(render(err.diagnostic(), SourceCache()))
        return EXIT_ERROR
    except WriteError as err:
        print(render(write_error(err), SourceCache()), file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `dslc explain X | head`: the reader left; not an error of ours
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # the last line of defence: never a bare traceback
        if debug:
            traceback.print_exc()
        print(f"dslc: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        print(REPORT_BUG, file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
