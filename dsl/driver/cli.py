"""The ``dslc`` command line.

Exit codes: 0 clean, 1 findings at or above ``--fail-on``, 2 usage, input or internal
error (every front-end error is a 2), 3 deadlock in ``dslc run``, 4 ``dslc verify``
inconclusive (bounded). No traceback reaches the user unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from collections.abc import Iterable
from pathlib import Path

from dsl import __version__
from dsl.codes import CODES, diag
from dsl.driver.cli_fix import add_parser as add_fix_parser
from dsl.driver.cli_fix import cmd_fix
from dsl.driver.cli_pypto import PY_SUFFIX, compile_pypto, is_pypto_candidate, lint_pypto_file
from dsl.driver.cli_run import add_parsers as add_run_parsers
from dsl.driver.cli_run import cmd_compile, cmd_run
from dsl.driver.cli_verify import add_parser as add_verify_parser
from dsl.driver.cli_verify import cmd_verify
from dsl.driver.codes import lookup, registry
from dsl.driver.config import LintConfig, load_config, unknown_selectors
from dsl.driver.coverage import lint_source
from dsl.driver.report import FORMATS, format_findings, one_per_site
from dsl.frontend import compile_text, read_source
from dsl.render import SourceCache, render
from lowering.checks import all_rules
from lowering.checks.rule import PRESETS
from lowering.checks.suppressions import apply_suppressions
from lowering.ir import Graph
from lowering.pypto_reader import INPUT_ERRORS as READER_INPUT_ERRORS
from lowering.source import CompileError, Diagnostic, Severity, Span

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_DEADLOCK = 0, 1, 2, 3

DESCRIPTION = """\
dslc compiles NPU layers written as task graphs, proves the concurrency and numerics bugs
of the Ascend task runtime absent (or names them with the line and the fix), and emits
NumPy kernels for the simulator, and PyPTO and AscendC for the device.

commands:
  check PATH...        lint .dsl and PyPTO .py files, or the directories holding them
  graph FILE           print the task graph with every edge and its reason (json or dot)
  explain CODE         explain a diagnostic code
  run FILE             compile to NumPy kernels, run on the simulated NPU, compare with the golden
  verify FILE          explore every schedule: prove deadlock freedom and determinism, or a counterexample
  compile FILE         write the generated code (--target numpy|pypto|ascendc) into a directory
  fix FILE...          print (or --write) the rewrites the lint can prove safe

examples:
  dslc check models/
  dslc graph models/deepseek_v4_flash/hc_pre.dsl --format dot | dot -Tsvg > hc_pre.svg
  dslc check layer.dsl --set T=8192
"""


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit(2) with its own text; keep our format
        raise UsageError(message)


def _set_option(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"--set expects NAME=VALUE, got {text!r}")
    try:
        return name.strip(), int(value.strip(), 0)
    except ValueError:
        raise UsageError(f"--set {name.strip()}: {value.strip()!r} is not an integer") from None


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

    check = sub.add_parser("check", parents=[common], help="lint files or directories (*.dsl, PyPTO *.py)")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=FORMATS, help="output format (default: text)")
    check.add_argument(
        "--select", action="append", metavar="CODES", help="only these codes or prefixes (comma list)"
    )
    check.add_argument(
        "--ignore", action="append", metavar="CODES", help="skip these codes or prefixes (comma list)"
    )
    check.add_argument("--preset", choices=sorted(PRESETS), help="device whose core counts the rules assume")
    check.add_argument("--fail-on", choices=("error", "warning", "note"), help="lowest severity that exits 1")
    check.add_argument("--config", metavar="PYPROJECT", help="read [tool.dslc] from this file")
    check.add_argument(
        "--strict", action="store_true", help="PyPTO files: constructs the reader cannot model are errors"
    )

    graph = sub.add_parser("graph", parents=[common], help="print the task graph")
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


def write_atomically(path: str | Path, text: str) -> None:
    """Write via a temporary file in the same directory, so a crash never truncates ``path``.

    The file gets the mode an ordinary write would give it (the old file's, or 0666 minus
    the umask), not the 0600 of the temporary file."""
    target = Path(path)
    try:
        mode = target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Session:
    """One invocation: options, the source cache and the diagnostic printer."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.sources = SourceCache()
        self.colour = (
            not getattr(args, "no_color", True) and sys.stdout.isatty() and "NO_COLOR" not in os.environ
        )
        self.overrides = dict(_set_option(s) for s in getattr(args, "set", []) or [])

    def emit(self, diagnostics: list[Diagnostic]) -> None:
        for d in sorted(diagnostics, key=Diagnostic.sort_key):
            print(render(d, self.sources, self.colour))

    def compile(self, path: Path) -> list[Graph]:
        if path.suffix == PY_SUFFIX:
            return compile_pypto(self, path)
        text = read_source(path)
        self.sources.add(str(path), text)
        return compile_text(text, str(path), self.overrides, self.args.layer)


def _codes(values: list[str] | None) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values or [] for c in v.split(",") if c.strip())


def _selectors(option: str, values: list[str]) -> tuple[str, ...]:
    codes = _codes(values)
    if not codes:
        raise UsageError(f"{option} expects a comma-separated list of codes or code prefixes")
    bad = unknown_selectors(codes)
    if bad:
        raise UsageError(f"{option} {', '.join(bad)}: matches no dslc code (dslc explain CODE lists them)")
    return codes


def lint_config(args: argparse.Namespace) -> LintConfig:
    explicit = None
    if args.config:
        explicit = Path(args.config)
        if explicit.is_dir():
            explicit = explicit / "pyproject.toml"
        if not explicit.is_file():
            raise UsageError(f"--config {args.config}: no such file")
    cfg = load_config(path=explicit)
    if args.select:
        cfg.select = _selectors("--select", args.select)
    if args.ignore:
        cfg.ignore = cfg.ignore + _selectors("--ignore", args.ignore)
    if args.preset:
        cfg.preset = args.preset
    if args.fail_on:
        cfg.fail_on = Severity(args.fail_on)
    if args.format:
        cfg.format = args.format
    if cfg.format not in FORMATS:
        raise UsageError(f"unknown format {cfg.format!r}; one of {', '.join(FORMATS)}")
    return cfg


def lint_file(session: Session, path: Path, cfg: LintConfig) -> list[Diagnostic]:
    """Front-end errors, or lint findings after suppressions and selection."""
    if path.suffix == PY_SUFFIX:
        return lint_pypto_file(session, path, cfg)
    codes = {c for c in all_rules() if cfg.enabled(c, str(path))}
    try:
        text = read_source(path)
        session.sources.add(str(path), text)
        findings, graphs = lint_source(
            text, str(path), session.overrides, session.args.layer, codes, cfg.preset
        )
    except CompileError as err:
        return err.diagnostics
    # several root layers of one file can yield the same finding: report it once
    findings = list({(d.code, d.span, d.message): d for d in findings}.values())
    text = "\n".join(session.sources.lines(str(path)) or [])
    findings = apply_suppressions(findings, graphs, str(path), text)
    return [d for d in findings if cfg.enabled(d.code, d.span.file)]


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
    front_end = [d for d in everything if d.code in CODES or d.code in READER_INPUT_ERRORS]
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
        try:
            write_atomically(session.args.output, text)
        except OSError as err:
            raise UsageError(f"-o {session.args.output}: cannot write: {err.strerror or err}") from None
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_explain(session: Session) -> int:
    entry = lookup(session.args.code)
    if entry is None:
        raise UsageError(f"unknown code {session.args.code!r}; codes: {', '.join(registry())}")
    print(entry.page)
    return EXIT_OK


COMMANDS = {
    "check": cmd_check,
    "graph": cmd_graph,
    "explain": cmd_explain,
    "run": cmd_run,
    "compile": cmd_compile,
    "fix": cmd_fix,
    "verify": cmd_verify,
}


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
        d = diag(
            "E104", Span("<command line>", 1, 1), str(err), hint="dslc --help lists the commands and options"
        )
        print(render(d, SourceCache()), file=sys.stderr)
        return EXIT_ERROR
    except CompileError as err:
        sources = SourceCache()
        for d in err.diagnostics:
            print(render(d, sources))
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
        print(
            f"dslc: internal error: {type(err).__name__}: {err} (rerun with --debug for details)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
