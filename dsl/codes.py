"""Stable codes of the front-end diagnostics (E1xx input and syntax, E2xx names and
parameters, E3xx types and shapes, E4xx tasks and the graph). `dslc explain CODE` prints
these entries; tests assert code, line and column for each."""

from __future__ import annotations

from lowering.codes import Code
from lowering.source import Diagnostic, Severity, Span

CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code(
            "E101", "syntax error", "The text does not follow the grammar; the hint lists what may come next."
        ),
        Code("E102", "unreadable input", "The path is missing, a directory, unreadable, or not UTF-8 text."),
        Code("E103", "no layer", "The file declares no `layer`; there is nothing to compile."),
        Code("E105", "nesting too deep", "Blocks or expressions nest deeper than the compiler accepts."),
        Code(
            "E108",
            "over a documented limit",
            "The layer needs more than a documented limit of dslc allows (docs/language.md, "
            '"Limits"): task instances per graph, the nesting a code-generation target can '
            "express, or the memory the simulator may allocate. The message names the limit.",
        ),
        Code(
            "E110",
            "the target cannot express this",
            "The code-generation target (`--target numpy|pypto`, or the simulator's NumPy kernels) "
            "cannot write a construct of the layer: an op or store form PyPTO lacks, or loops nested "
            "deeper than the generated Python may be (CPython compiles at most 20 nested blocks in "
            "one function). The message names the construct and the limit; dslc never writes code "
            "that does not compile.",
        ),
        Code(
            "E201",
            "unknown name",
            "A name is used that no parameter, constant, tensor, local or task defines.",
        ),
        Code("E202", "duplicate definition", "A name is defined twice in the same layer or scope."),
        Code(
            "E203",
            "unknown parameter",
            "`--set` or a layer call names a parameter the layer does not declare.",
        ),
        Code(
            "E204",
            "parameter outside its admissible range",
            "A parameter value (default, `--set` or a layer call) lies outside the `in ...` domain.",
        ),
        Code(
            "E205",
            "assertion failed",
            "A layer-level `assert` is false at the parameter values being compiled (defaults and "
            "`--set`); at other admissible values an assert narrows the admissible set instead.",
        ),
        Code(
            "E206",
            "not a compile-time constant",
            "Shapes, grids, parameter defaults and domains must be computable at compile time.",
        ),
        Code(
            "E207", "invalid arithmetic", "Division or modulo by zero, or a negative extent, at compile time."
        ),
        Code("E208", "unknown layer", "A `call` names a layer that is not defined in the file."),
        Code(
            "E209", "bad layer call", "A `call` leaves a tensor unbound, binds the wrong kind, or recurses."
        ),
        Code(
            "E301",
            "unknown dtype",
            "Tensor and scalar types are one of the dtypes listed in docs/language.md.",
        ),
        Code(
            "E302", "dtype mismatch", "Operands of an operation or a store have different dtypes; use cast()."
        ),
        Code("E303", "shape mismatch", "Operand shapes do not agree for the operation or the store target."),
        Code(
            "E304",
            "wrong number of subscripts",
            "A tensor is indexed with more or fewer subscripts than it has dims.",
        ),
        Code(
            "E305",
            "slice out of bounds",
            "A region can reach past the tensor's extent for some admissible parameter value.",
        ),
        Code(
            "E306",
            "unknown operation",
            "A call names no tile op of the language, or passes the wrong arguments.",
        ),
        Code(
            "E307",
            "write to an input",
            "Input tensors are read-only; declare the tensor `inout` or `output`.",
        ),
        Code("E308", "wrong kind of tensor", "notify/wait need a `signal`; remote_store needs a `window`."),
        Code(
            "E309", "not an integer", "Indices, loop bounds, peers and signal values must be integer scalars."
        ),
        Code(
            "E310",
            "topk bound not holdable",
            "topk(row, k, valid=n): n must be bounded over the admissible range and fit in the row.",
        ),
        Code(
            "E311",
            "range does not fit its dtype",
            "A runtime scalar's `in lo..hi` range (or its values) includes a number its dtype cannot "
            "hold, e.g. `scalar n: i32 in 1..4294967296`.",
        ),
        Code("E401", "unknown task", "`after` names a task that is not defined before this one."),
        Code("E402", "bad core kind", "The core kind is `aic`, `aiv` or `mix`."),
        Code("E403", "bad grid", "An spmd grid must be a positive compile-time integer."),
        Code(
            "E404", "bad loop", "Loop bounds are range(stop), range(start, stop) or range(start, stop, step)."
        ),
        Code(
            "E405",
            "statement not allowed here",
            "e.g. `return` outside a `reduce_sum` body, or `reduce_sum` anywhere but as the value "
            "of a task's last store.",
        ),
        Code("E406", "bad predicate", "A `when` predicate compares one tensor element with an integer."),
    )
}


def diag(
    code: str,
    span: Span,
    message: str,
    *,
    hint: str | None = None,
    severity: Severity = Severity.ERROR,
    related: tuple[tuple[Span, str], ...] = (),
) -> Diagnostic:
    assert code in CODES, code
    return Diagnostic(code, message, span, severity, hint, related)
