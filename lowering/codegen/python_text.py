"""Python source text shared by the targets that write Python (NumPy, PyPTO).

- ``int_text``: an integer expression with the fewest parentheses that parse back to the same
  tree (``block * T_TILE + T_TILE``, not ``((block * T_TILE) + T_TILE)``).
- ``wrap_lines``: every logical line longer than the line length split at its brackets the
  way ``ruff format`` splits it -- the last bracket pair opens, one item per line -- so a
  generated module reads like hand-formatted code and stays within 110 columns wherever a
  bracket allows it. A trailing comma is added only where it cannot change the meaning (call
  arguments, lists, tuples, dicts, subscripts of two or more items); never to a parenthesised
  expression or a one-item subscript, where it would make a tuple.
- ``check_block_nesting`` and ``compile_python``: generated Python that CPython would refuse
  is a located TargetLimit before it is written, and a module that still does not compile is a
  GeneratedCodeError (a dslc bug), never a file on disk.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

from lowering import body as ir_body
from lowering.codegen.common import GeneratedCodeError, TargetLimit
from lowering.symbolic import Bin, Const, Expr, Sym

LINE_LENGTH = 110
INDENT = "    "

# ---------------------------------------------------------------- literals


def py_str(s: str) -> str:
    """A string literal the way ruff writes it: double quotes unless that needs more escapes."""
    body = s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    body = "".join(c if c.isprintable() or c in "\\" else f"\\x{ord(c):02x}" for c in body)
    if '"' in s and "'" not in s:
        return "'" + body + "'"
    return '"' + body.replace('"', '\\"') + '"'


def unparen(code: str) -> str:
    """``code`` without one pair of parentheses around all of it (``(a + b)`` -> ``a + b``), as
    ruff writes the value of an assignment; a tuple, a call or ``(a) + (b)`` stays as it is."""
    if not (code.startswith("(") and code.endswith(")")):
        return code
    depth = 0
    for i, c in enumerate(code):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and i < len(code) - 1:
            return code  # the first parenthesis closes before the end
        if depth == 1 and c == ",":
            return code  # a tuple
    return code[1:-1]


def py_float_text(x: float) -> str:
    """A finite float as ruff writes it: ``repr`` with the exponent's ``+`` dropped (``1e38``)."""
    return repr(float(x)).replace("e+", "e")


def py_literal(v: object) -> str:
    """``repr(v)`` for the literals a generated module holds (strings, numbers, booleans,
    None, and tuples, lists and dicts of them), with strings as ruff writes them (``py_str``)."""
    if isinstance(v, str):
        return py_str(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(map(py_literal, v)) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(map(py_literal, v)) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(x)}" for k, x in v.items()) + "}"
    if isinstance(v, float):
        return py_float_text(v)
    if v is None or isinstance(v, bool | int):
        return repr(v)
    raise TypeError(f"not a literal: {v!r}")


def simple_bound(text: str) -> bool:
    """Is a slice bound "simple" for ruff (a name, a number, or a negated one)?"""
    t = text[1:] if text.startswith("-") else text
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", t))


def slice_text(start: str | None, stop: str | None, step: str | None = None) -> str:
    """A slice the way ruff spaces it: ``a:b``, but ``a : b + 1`` once a bound is not simple."""
    parts = [p for p in (start, stop, step) if p is not None]
    spaced = any(not simple_bound(p) for p in parts)
    lo = start or ""
    hi = stop or ""
    if spaced:
        text = (f"{lo} :" if lo else ":") + (f" {hi}" if hi else "")
        if step is not None:
            text += f" : {step}"
        return text
    text = f"{lo}:{hi}"
    if step is not None:
        text += f":{step}"
    return text


# ---------------------------------------------------------------- integer expressions

_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "+": 5, "-": 5, "*": 6, "//": 6, "%": 6, "neg": 7, "atom": 9}
_CMPS = ("==", "!=", "<", "<=", ">", ">=")


def _prec(e: Expr) -> int:
    if isinstance(e, Bin):
        if e.op in _CMPS:
            return _PREC["cmp"]
        if e.op in ("min", "max", "cdiv"):
            return _PREC["atom"] if e.op != "cdiv" else _PREC["neg"]
        if e.op == "-" and e.a == Const(0):
            return _PREC["neg"]
        return _PREC.get(e.op, _PREC["atom"])
    if isinstance(e, Const) and e.value < 0:
        return _PREC["neg"]
    return _PREC["atom"]


def int_text(e: Expr, name_of: Callable[[Sym], str], minmax: str = "") -> str:
    """``e`` as Python source with minimal parentheses (the tree parses back to itself);
    ``min``/``max`` are written ``{minmax}min(...)``."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Sym):
        return name_of(e)
    assert isinstance(e, Bin)
    if e.op in ("min", "max"):
        return f"{minmax}{e.op}({int_text(e.a, name_of, minmax)}, {int_text(e.b, name_of, minmax)})"
    if e.op == "cdiv":
        a = _wrap(e.a, _PREC["neg"] + 1, name_of, minmax)
        b = _wrap(e.b, _PREC["*"] + 1, name_of, minmax)
        return f"-(-{a} // {b})"
    if e.op == "-" and e.a == Const(0):
        return "-" + _wrap(e.b, _PREC["neg"], name_of, minmax)
    p = _prec(e)
    if e.op in _CMPS:
        a = _wrap(e.a, p + 1, name_of, minmax)
        b = _wrap(e.b, p + 1, name_of, minmax)
    else:
        a = _wrap(e.a, p, name_of, minmax)
        b = _wrap(e.b, p + 1, name_of, minmax)
    return f"{a} {e.op} {b}"


def _wrap(e: Expr, need: int, name_of, minmax: str) -> str:
    text = int_text(e, name_of, minmax)
    return f"({text})" if _prec(e) < need else text


# ---------------------------------------------------------------- long lines

_OPEN = {"(": ")", "[": "]", "{": "}"}


@dataclass
class _Group:
    open: str
    items: list[list]  # each item: a list of str and _Group parts
    close: str
    trailing: bool  # may the last item take a trailing comma
    comma: bool = False  # written with a trailing comma (``(x,)``, a one-item tuple, keeps it)


def _flat(parts: list) -> str:
    out = []
    for p in parts:
        if isinstance(p, _Group):
            one = "," if p.comma and len(p.items) == 1 else ""
            out.append(p.open + ", ".join(_flat(i) for i in p.items) + one + p.close)
        else:
            out.append(p)
    return "".join(out)


def _parse(line: str) -> list | None:
    """The parts of one logical line (str pieces and bracket groups), or None when it cannot be
    split safely (it does not tokenize as one line, or a group holds a generator expression)."""
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(line + "\n").readline)
            if t.type
            not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if any(t.start[0] != 1 or t.type == tokenize.COMMENT for t in tokens):
        return None
    pos = 0

    def text_between(a: int, b: int) -> str:
        return line[a:b]

    def parse_until(close: str | None) -> tuple[list[list], bool] | None:
        """Items (split at top-level commas) up to ``close``; whether the text ended in a comma."""
        nonlocal pos
        items: list[list] = [[]]
        ended_comma = False
        last_end = tokens[pos - 1].end[1] if pos else 0
        while pos < len(tokens):
            t = tokens[pos]
            start, end = t.start[1], t.end[1]
            gap = text_between(last_end, start)
            if t.string == close and t.type == tokenize.OP:
                pos += 1
                return items, ended_comma
            if t.type == tokenize.OP and t.string in _OPEN:
                prev = tokens[pos - 1] if pos else None
                pos += 1
                inner = parse_until(_OPEN[t.string])
                if inner is None:
                    return None
                sub, comma = inner
                if any(p == " for " or (isinstance(p, str) and " for " in f" {p} ") for i in sub for p in i):
                    return None
                called = prev is not None and (
                    prev.type in (tokenize.NAME, tokenize.STRING)
                    and prev.string not in _KEYWORDS
                    or prev.string in (")", "]")
                )
                sub = [i for i in sub if i]  # a trailing comma's empty item
                if t.string == "(":
                    trailing = called or comma or len(sub) > 1
                elif t.string == "[":
                    trailing = not called or len(sub) > 1 or comma
                else:
                    trailing = True
                if items[-1]:
                    items[-1].append(gap)
                items[-1].append(_Group(t.string, sub, _OPEN[t.string], trailing, comma))
                last_end = tokens[pos - 1].end[1]
                ended_comma = False
                continue
            if t.type == tokenize.OP and t.string == "," and close is not None:
                items.append([])
                ended_comma = True
                pos += 1
                last_end = end
                continue
            piece = text_between(last_end, end)
            if not items[-1]:
                piece = piece.lstrip(" ")
            items[-1].append(piece)
            ended_comma = False
            last_end = end
            pos += 1
        return (items, ended_comma) if close is None else None

    parsed = parse_until(None)
    if parsed is None or len(parsed[0]) != 1:
        return None
    return [p for p in parsed[0][0] if p != ""]


_KEYWORDS = frozenset(
    {"in", "not", "and", "or", "is", "if", "else", "return", "yield", "lambda", "for", "assert"}
)


def _layout(parts: list, indent: str, width: int) -> list[str]:
    text = _flat(parts)
    if len(indent) + len(text) <= width:
        return [indent + text]
    groups = [i for i, p in enumerate(parts) if isinstance(p, _Group) and p.items]
    if not groups:
        return [indent + text]

    def ends(i: int) -> tuple[str, str]:
        group = parts[i]
        return _flat(parts[:i]) + group.open, group.close + _flat(parts[i + 1 :])

    # the last bracket pair whose opening and closing lines fit (ruff splits the right-hand
    # side first, then the left), else the first one
    fitting = [i for i in reversed(groups) if all(len(indent) + len(e) <= width for e in ends(i))]
    idx = fitting[0] if fitting else groups[0]
    group = parts[idx]
    head, tail = ends(idx)
    lines = [indent + head]
    for k, item in enumerate(group.items):
        comma = [","] if k < len(group.items) - 1 or group.trailing else []
        lines.extend(_layout(item + comma, indent + INDENT, width))
    lines.append(indent + tail)
    return lines


def wrap_line(line: str, width: int = LINE_LENGTH) -> list[str]:
    """``line`` (one logical line, indented), or the lines it splits into at its brackets."""
    if len(line) <= width:
        return [line]
    stripped = line.lstrip(" ")
    parts = _parse(stripped)
    if parts is None:
        return [line]
    return _layout(parts, line[: len(line) - len(stripped)], width)


def wrap_lines(text: str, width: int = LINE_LENGTH) -> str:
    """Every over-long line of a module split at its brackets, where the line is a whole
    statement or a whole item inside brackets that span lines (``(text, message, line),`` of
    a tuple): its own brackets balance, it holds no comment and no part of a multi-line string.
    Any other line is left as it is."""
    lines = text.split("\n")
    splittable = set(range(len(lines)))
    depth: dict[int, int] = {}
    try:
        for t in tokenize.generate_tokens(io.StringIO(text).readline):
            (row, _), (end_row, _) = t.start, t.end
            if t.type == tokenize.COMMENT or end_row != row:
                splittable.difference_update(range(row - 1, end_row))
            elif t.type == tokenize.OP and t.string in "([{":
                depth[row - 1] = depth.get(row - 1, 0) + 1
            elif t.type == tokenize.OP and t.string in ")]}":
                depth[row - 1] = depth.get(row - 1, 0) - 1
                if depth[row - 1] < 0:
                    splittable.discard(row - 1)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    out: list[str] = []
    for row, line in enumerate(lines):
        fits = len(line) <= width or row not in splittable or depth.get(row, 0) != 0
        out.extend([line] if fits else wrap_line(line, width))
    return "\n".join(out)


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
        here = depth + 1 if isinstance(s, ir_body.ForS) else depth + (hidden_loops(s) if hidden_loops else 0)
        if here > limit:
            loops = here - base
            raise TargetLimit(
                f"the {target} target cannot nest this deep: {loops} nested loop(s) here{where} make "
                f"{here} nested Python blocks, and CPython compiles at most {limit} in one function",
                s.span,
                target,
            )
        if isinstance(s, ir_body.ForS):
            work.extend((c, here) for c in reversed(s.body))
        elif isinstance(s, ir_body.IfS):
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
