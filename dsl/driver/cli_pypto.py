"""``dslc check`` on PyPTO files: read them into the IR, run the same rules, keep the notes.

A ``.py`` file is read by ``lowering.pypto_reader`` (``ast`` only, never imported); its
P00x notes and the rule findings are reported at ``.py`` lines, suppressions
(``# dslc: ignore[CODE] reason``) work as in DSL files, and ``--strict`` turns the "not
modelled" notes (P001) into errors. A rule that fails on a graph read from PyPTO is reported
as P004 at the entry instead of stopping the run.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import lowering.pypto_reader as pypto_reader
from lowering.checks import all_rules
from lowering.checks.rule import CheckContext
from lowering.checks.suppressions import apply_suppressions
from lowering.ir import Graph
from lowering.perf import paused_gc
from lowering.pypto_reader import INPUT_ERRORS, strict
from lowering.source import CompileError, Diagnostic, Severity

PY_SUFFIX = ".py"
MAX_SNIFF_BYTES = 1 << 20


def is_pypto_candidate(path: Path) -> bool:
    """A ``.py`` file below a searched directory that imports pypto.language (a cheap sniff)."""
    try:
        with path.open("rb") as f:
            head = f.read(MAX_SNIFF_BYTES)
    except OSError:
        return False
    return pypto_reader.looks_like_pypto(head.decode("utf-8", errors="replace"))


def read_file(session, path: Path) -> pypto_reader.ReadResult:
    result = pypto_reader.read_pypto(path, overrides=session.overrides or None, layer=session.args.layer)
    if result.text:
        session.sources.add(str(path), result.text)
    return result


def compile_pypto(session, path: Path) -> list[Graph]:
    """Graphs of a PyPTO file for ``dslc graph``; input errors raise like front-end errors."""
    result = read_file(session, path)
    errors = [d for d in result.diagnostics if d.code in INPUT_ERRORS]
    if errors or not result.graphs:
        raise CompileError(errors or result.diagnostics)
    return result.graphs


def run_rules_safely(graph: Graph, ctx: CheckContext, codes: set[str]) -> list[Diagnostic]:
    """Every rule in ``codes`` on ``graph``, a rule's crash a P004 of its own (with the collector
    paused, as ``lowering.checks.run_rules`` runs them)."""
    out: list[Diagnostic] = []
    with paused_gc():
        for code, rule in all_rules().items():
            if code not in codes or not rule.applies_to(graph):
                continue
            try:
                out.extend(rule.check(graph, ctx))
            except Exception as err:  # noqa: BLE001 - a rule bug must not hide the other findings
                out.append(
                    Diagnostic(
                        "P004",
                        f"rule {code} failed on the graph read from this file ({type(err).__name__}: {err})",
                        graph.span,
                        Severity.ERROR,
                        data=(("traceback", "".join(traceback.format_exception(err))),),
                    )
                )
    return out


def lint_pypto_file(session, path: Path, cfg) -> list[Diagnostic]:
    """Reader notes plus rule findings of one PyPTO file, after suppressions and selection."""
    result = read_file(session, path)
    notes = list(result.diagnostics)
    if getattr(session.args, "strict", False):
        notes = strict(notes)
    findings: list[Diagnostic] = []
    codes = {c for c in all_rules() if cfg.enabled(c, str(path))}
    for graph in result.graphs:
        findings.extend(
            run_rules_safely(
                graph, CheckContext(graph, preset=cfg.preset, early_queue_capacity=cfg.early_queue), codes
            )
        )
    findings = list({(d.code, d.span, d.message): d for d in [*notes, *findings]}.values())
    findings = apply_suppressions(findings, result.graphs, str(path), result.text)
    return sorted(
        (d for d in findings if d.code in INPUT_ERRORS or cfg.enabled(d.code, d.span.file)),
        key=Diagnostic.sort_key,
    )


def compile_to_pypto(session) -> int:
    """``dslc compile FILE --target pypto -o DIR``: one PyPTO module per root layer."""
    import functools

    from dsl.driver.api import target_code
    from dsl.frontend import compile_text, read_source
    from dsl.version import __version__
    from lowering.codegen.pypto.emit import content_hash, render_pypto
    from runtime.files import ensure_directory, write_text

    args = session.args
    source = Path(args.file)
    text = read_source(source)
    graphs = compile_text(text, str(source), session.overrides or None, args.layer)
    modules = []
    for graph in graphs:
        key = content_hash(text, repr(sorted(graph.env().items())), graph.name, __version__)
        # the golden where it is, not relative to the output: the module can be moved or copied
        golden = (source.parent / graph.golden).resolve().as_posix() if graph.golden else None
        module = target_code(graph, functools.partial(render_pypto, graph, key[:16], __version__, golden))
        modules.append((graph.name, module))
    out_dir = ensure_directory(args.output)  # only once every module rendered: a refusal writes nothing
    for name, module in modules:
        target = out_dir / f"{name}.py"
        write_text(target, module)
        print(f"wrote {target}")
    return 0
