"""How source names become generated identifiers: the identifier guard, the injective name
mangling every target uses (docs/naming.md), target helper names outside its image, and the
author's names for inlined integer ``let``s.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lowering import body as ir_body
from lowering.symbolic import Bin, Expr, Sym

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UnsafeName(ValueError):
    """A name that must not reach generated code (the front end never produces one)."""


def checked_name(name: str, pattern: re.Pattern = IDENTIFIER) -> str:
    """``name`` itself, once it matches ``pattern``: the last guard before it is written as code."""
    if not pattern.match(name):
        raise UnsafeName(f"refusing to generate code for name {name!r}")
    return name


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


_INDEXED = re.compile(r"^([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*)\[([0-9]+)\]$")


def readable(name: str) -> str | None:
    """The form a reviewer reads for a qualified or indexed source name, or None: the parts
    of ``stage.tmp`` or ``mm[3]`` joined by one ``_`` (``stage_tmp``, ``mm_3``) when every part
    is plain; a plain name is its own readable form. The result is always a plain name, so it
    never ends with ``_`` -- which is what keeps it apart from an escaped name (``mangle``)."""
    if not _MANGLEABLE.match(name):
        return None
    parts = []
    for seg in name.split("."):
        m = _INDEXED.match(seg)
        if m:
            parts += [m.group(1), m.group(2)]
        elif PLAIN_NAME.match(seg):
            parts.append(seg)
        else:
            return None
    text = "_".join(parts)
    return text if PLAIN_NAME.match(text) else None


class ModuleNames:
    """The names of one emitted module: every source name it writes, mapped injectively.

    Built from *all* the source names the module writes (``names``) and, per name, the
    identifiers it must not become (``reserved(name)``: what the emitted module itself
    defines, imports or calls in that name's scope). Each name gets its readable form
    (``readable``: ``dispatch.send_cnt`` -> ``dispatch_send_cnt``, ``hc_pre`` unchanged)
    unless another source name of the module has the same readable form or the form is
    reserved for it; then the author's plain name (the one equal to the form) keeps it and
    every other name of the group is escaped (``mangle``: ``dispatch__send_ucnt_``). A
    reserved plain name is escaped too (``in`` -> ``in_``).

    Injective: readable forms are granted to one name each, and are plain (never end with
    ``_``); escaped names always end with ``_`` and read back uniquely (``mangle``). ``alias``
    maps a source name onto another's emitted name on purpose (an equal module constant).
    """

    def __init__(self, names, reserved: Callable[[str], frozenset[str] | set[str]]) -> None:
        self.reserved = reserved
        self.emitted: dict[str, str] = {}
        self.taken: dict[str, str] = {}  # emitted name -> the source name that has it
        groups: dict[str, list[str]] = {}
        for name in dict.fromkeys(names):
            form = readable(name)
            if form is None:
                self._give(name, mangle(name, frozenset({name})))
            else:
                groups.setdefault(form, []).append(name)
        for form, group in groups.items():
            owner = None
            if not any(form in reserved(n) for n in group):
                if len(group) == 1:
                    owner = group[0]
                elif form in group:
                    owner = form
            for n in group:
                self._give(n, form if n == owner else mangle(n, frozenset({n})))

    def _give(self, name: str, text: str) -> None:
        assert text not in self.taken or self.taken[text] == name, (name, text, self.taken.get(text))
        self.emitted[name] = text
        self.taken[text] = name

    def fresh(self, name: str, hint: str, avoid: set[str] | frozenset[str] = frozenset()) -> str:
        """Give ``name`` (a generated temporary, no author's name) the first free of ``hint``,
        ``hint2``, ...: free of every name given so far, the reserved ones and ``avoid``."""
        k = 1
        while True:
            text = hint if k == 1 else f"{hint}{k}"
            if text not in self.taken and text not in self.reserved(name) and text not in avoid:
                self._give(name, text)
                return text
            k += 1

    def alias(self, name: str, to: str) -> None:
        """Write the source name ``name`` as ``to``'s emitted name (the two hold one value)."""
        self.emitted[name] = self.emitted[to]

    def __call__(self, name: str) -> str:
        text = self.emitted.get(name)
        if text is None:  # a name the module did not declare up front: granted if still free
            form = readable(name)
            ok = form is not None and form not in self.taken and form not in self.reserved(name)
            text = form if ok else mangle(name, frozenset({name}))
            self._give(name, text)
        return text


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


def own_name(tensor: str) -> str:
    """A tensor's own name, readable, without the layer calls and the task array index it was
    reached through (``stage.kv[2]`` -> ``kv``); "" when it has no readable form (``x__y``)."""
    return readable(tensor.rpartition(".")[2].partition("[")[0]) or ""


def data_temp_name(value: object) -> str:
    """What a front-end temporary holding a value read from data is called: ``<word>_val`` after
    the last word of the tensor it reads (``table_val`` for ``block_table``), else ``val``."""
    read = value.args[0] if isinstance(value, ir_body.CallV) and value.op == "read" else value
    word = own_name(read.tensor).rpartition("_")[2] if isinstance(read, ir_body.LoadV) else ""
    return f"{word}_val" if word[:1].isalpha() else "val"
