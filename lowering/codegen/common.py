"""What every code generator shares: the jinja2 templates of a target, the identifier rule, the
name mangling, and the errors for what a target cannot express.

Each target has a folder under ``codegen_templates/``; its environment renders without
autoescaping (the output is code, not HTML) and fails on an undefined name. The content hash
that keys a cache of generated modules covers the inputs and the code that generates them --
the front end, the lowering, the targets and their templates -- so editing any of it
invalidates what was generated before.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from lowering import body as ir
from lowering.symbolic import Bin, Expr, Sym

TEMPLATES = Path(__file__).resolve().parents[2] / "codegen_templates"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UnsafeName(ValueError):
    """A name that must not reach generated code (the front end never produces one)."""


class TargetLimit(ValueError):
    """The layer uses something a target cannot express (a strided store PyPTO lacks, loops
    nested deeper than CPython compiles). ``span`` is the construct in the source; the driver
    reports it as a located E110 diagnostic naming the target and its limit."""

    def __init__(self, message: str, span=None, target: str = ""):
        super().__init__(message)
        self.span = span
        self.target = target


# ---------------------------------------------------------------- name mangling
# docs/naming.md is the user-facing description; keep the two in step.

PLAIN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$")
_ESCAPES = {"_": "_u", ".": "__", "[": "_b", "]": "_e"}
_MANGLEABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\[\]]*$")


def mangle(name: str, reserved: frozenset[str] | set[str] = frozenset()) -> str:
    """The identifier a target writes for the source name ``name`` -- injective, so two source
    names never share one generated name.

    A *plain* name (a letter, then letters and digits in words joined by single underscores,
    no leading, trailing or doubled underscore) that is not in ``reserved`` is written as it
    is: ``hc_pre`` stays ``hc_pre``. Every other name is escaped character by character --
    ``_`` -> ``_u``, ``.`` -> ``__``, ``[`` -> ``_b``, ``]`` -> ``_e``, letters and digits
    unchanged -- and ends with one ``_``: ``stage.tmp`` -> ``stage__tmp_``, ``stage__tmp`` ->
    ``stage_u_utmp_``, ``mm[3]`` -> ``mm_b3_e_``, a reserved ``in`` -> ``in_``.

    Why it is injective: plain results never end with ``_`` and escaped ones always do, so the
    two kinds never meet; among escaped results, every escape is two characters starting with
    ``_`` (a prefix-free code), so the source name reads back uniquely. Generated helpers of a
    target use names that start with ``_`` and do not end with one (``_o1``, ``_x_buf``),
    which no mangled name is.
    """
    if not _MANGLEABLE.match(name):
        raise UnsafeName(f"refusing to generate code for name {name!r}")
    if PLAIN_NAME.match(name) and name not in reserved:
        return name
    return "".join(_ESCAPES.get(c, c) for c in name) + "_"


def helper_name(of: str, what: str) -> str:
    """The name of a target's helper for the source name ``of`` (``_x_buf``, the window
    buffer of ``x``): ``_`` + mangled name + ``_`` + ``what`` (letters). It starts with ``_``
    and does not end with one, so it is outside the image of :func:`mangle`; and it is
    injective in ``of``."""
    assert what.isalpha(), what
    return f"_{mangle(of)}_{what}"


# ---------------------------------------------------------------- the author's integer names

#: The kind of a symbol a target has already named (a name of ``NamedInts``, a target's own
#: temporary): it is written as it is, never mangled again.
EMITTED = "emitted"


@dataclass
class NamedLet:
    """An inlined integer ``let`` a target wrote: its emitted name, the lines it took, how often
    the name was written since, and the other lets its own line used."""

    name: str
    expr: Expr
    lines: tuple[int, int] = (0, 0)
    uses: int = 0
    needs: list[NamedLet] = field(default_factory=list)


class NamedInts:
    """The author's names for integer expressions (``let t0 = block * T_TILE``, an inlined
    ``ir.LetS``), in scope while a target writes a task body.

    The IR holds every use of such a let as the expression itself; a target that writes the
    binding once registers it (``define``) and then writes each expression through ``rename``,
    which puts the name back wherever the very same expression occurs while the let is in
    scope. That is exact: the let's symbols (block, rank, parameters, enclosing loop variables,
    runtime scalars; never a value read from data, see ``dsl.elaborate_body``) hold the same
    values at every use in its scope. ``scope()`` brackets a block; a let whose name was never
    written is reported by ``unused`` so the target can drop its line.
    """

    def __init__(self) -> None:
        self.names: dict[Expr, list[NamedLet]] = {}
        self.scopes: list[list[NamedLet]] = []
        self.defining: NamedLet | None = None

    def push(self) -> None:
        self.scopes.append([])

    def pop(self) -> list[NamedLet]:
        """Close the innermost block; its lets whose names nothing kept (latest first)."""
        lets = self.scopes.pop()
        for let in lets:
            self.names[let.expr].pop()
            if not self.names[let.expr]:
                del self.names[let.expr]
        dropped = []
        for let in reversed(lets):
            if let.uses == 0:
                dropped.append(let)
                for need in let.needs:
                    need.uses -= 1
        return dropped

    def define(self, name: str, expr: Expr, write: Callable[[Expr], str]) -> tuple[NamedLet, str]:
        """Name ``expr`` from here to the end of the block; ``write(expr)`` gives the text of the
        binding's value, in which earlier names already stand (this one does not yet)."""
        let = NamedLet(name, expr)
        self.defining = let
        try:
            text = write(self.rename(expr))
        finally:
            self.defining = None
        self.scopes[-1].append(let)
        self.names.setdefault(expr, []).append(let)
        return let, text

    @contextlib.contextmanager
    def suspended(self):
        """Write expressions as the IR holds them (no names) inside the ``with``."""
        names, self.names = self.names, {}
        try:
            yield
        finally:
            self.names = names

    def rename(self, e: Expr) -> Expr:
        """``e`` with every subexpression that a let in scope names replaced by the name."""
        if not self.names or not isinstance(e, Bin):
            return e
        found = self.names.get(e)
        if found:
            let = found[-1]
            let.uses += 1
            if self.defining is not None:
                self.defining.needs.append(let)
            return Sym(let.name, EMITTED)
        a, b = self.rename(e.a), self.rename(e.b)
        return e if a is e.a and b is e.b else Bin(e.op, a, b)


# ---------------------------------------------------------------- generated Python

#: CPython refuses a function with more than 20 statically nested blocks (loops, ``with``,
#: ``try``): "too many statically nested blocks" (``CO_MAXBLOCKS``).
PYTHON_MAX_BLOCKS = 20


def check_block_nesting(
    stmts: tuple, base: int, target: str, where: str, hidden_loops=None, limit: int = PYTHON_MAX_BLOCKS
) -> None:
    """Refuse, as a TargetLimit at the loop, a body whose generated Python would nest more than
    ``limit`` blocks in one function. ``base`` blocks enclose the body in the target (``where``
    says which); each ``for`` of the body is one more; ``hidden_loops(stmt)`` counts loops a
    target writes for one statement (a ``pl.gather_row`` loop, say)."""
    work = [(s, base) for s in reversed(stmts)]
    while work:
        s, depth = work.pop()
        here = depth + 1 if isinstance(s, ir.ForS) else depth + (hidden_loops(s) if hidden_loops else 0)
        if here > limit:
            loops = here - base
            raise TargetLimit(
                f"the {target} target cannot nest this deep: {loops} nested loop(s) here{where} make "
                f"{here} nested Python blocks, and CPython compiles at most {limit} in one function",
                s.span,
                target,
            )
        if isinstance(s, ir.ForS):
            work.extend((c, here) for c in reversed(s.body))
        elif isinstance(s, ir.IfS):
            work.extend((c, depth) for c in reversed(s.then + s.orelse))


def compile_python(text: str, filename: str, target: str) -> None:
    """``compile()`` a generated module before it is written or imported: dslc never hands over
    Python that does not compile. Failing here is a dslc bug (the targets refuse what they cannot
    express first, as a located TargetLimit), reported as an internal error."""
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        where = f" at line {err.lineno}" if isinstance(err, SyntaxError) and err.lineno else ""
        raise GeneratedCodeError(
            f"the {target} target generated Python that does not compile{where}: {type(err).__name__}: {err}"
        ) from err


class GeneratedCodeError(RuntimeError):
    """A generated module did not compile: a bug in a target, never the user's mistake."""


def checked_name(name: str, pattern: re.Pattern = IDENTIFIER) -> str:
    """``name`` itself, once it matches ``pattern``: the last guard before it is written as code."""
    if not pattern.match(name):
        raise UnsafeName(f"refusing to generate code for name {name!r}")
    return name


def template_environment(target: str) -> jinja2.Environment:
    """The jinja2 environment of the templates in ``codegen_templates/<target>``."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / target)),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
    )


#: What generates code: the language, the lowering, every target's driver and templates. A
#: cache key covers all of it (``generator_hash``), so an edited compiler never serves a module
#: the old one generated. (The runtime that runs the modules is not part of the key.)
GENERATOR_SOURCES = (
    (Path(__file__).resolve().parents[2] / "dsl", ("*.py", "*.lark")),
    (Path(__file__).resolve().parents[2] / "lowering", ("*.py", "*.h")),
    (TEMPLATES, ("*",)),
)


@functools.cache
def compiler_fingerprint() -> str:
    """sha256 over the path and bytes of every file of ``GENERATOR_SOURCES`` (read once per
    process: a few hundred small files)."""
    h = hashlib.sha256()
    for root, patterns in GENERATOR_SOURCES:
        files = {p for pattern in patterns for p in root.rglob(pattern) if p.is_file()}
        for path in sorted(files):
            if "__pycache__" in path.parts:
                continue
            h.update(path.relative_to(root.parent).as_posix().encode("utf-8") + b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def generator_hash(target: str, *parts: str) -> str:
    """The key of what ``target`` generates from ``parts`` (source text, parameters, layer,
    version): sha256 of the target, the parts and ``compiler_fingerprint()``."""
    h = hashlib.sha256(target.encode("utf-8") + b"\0" + compiler_fingerprint().encode("ascii"))
    for p in parts:
        h.update(b"\0")
        h.update(p.encode("utf-8"))
    return h.hexdigest()
