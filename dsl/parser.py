"""Source text -> typed AST: the lark LALR parser, syntax-error recovery and the depth limits.

The parse tree becomes AST nodes in ``dsl.to_ast`` (the one Transformer).

Syntax errors do not stop at the first one: after an error the offending line is replaced
by a neutral one with the same block structure (its braces, each ``{`` opened by ``if 1``),
and the file is parsed again, so one run reports every broken statement (up to 20) without
inventing errors; when that does not help, the line before is neutralised too (a statement
broken at its end, such as ``let x =``, shows up on the next line).
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from pathlib import Path

import lark

from dsl import ast
from dsl.codes import diag
from dsl.limits import MAX_EXPRESSION_DEPTH, MAX_NESTING, MAX_SYNTAX_ERRORS, MAX_TREE_DEPTH
from dsl.to_ast import ToAst
from lowering.perf import paused_gc
from lowering.source import CompileError, Diagnostic, Span
from runtime.cache_dir import cache_dir

GRAMMAR = Path(__file__).with_name("grammar.lark")

_TOKEN_NAMES = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "COLON": "':'",
    "EQUAL": "'='",
    "DIRECTION": "a tensor direction",
    "$END": "end of file",
}


@cache
def _parser() -> lark.Lark:
    return lark.Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=True,
        cache=_grammar_cache(),
    )


def _grammar_cache() -> str | bool:
    """Where lark keeps its analysis of the grammar between runs (building it is a few tenths
    of a second of every ``dslc`` start): a file in the dslc cache directory, which lark
    checks against the grammar's and its own version's hash and rebuilds when they differ or
    the file is damaged. The directory holds the generated kernels too, so it is trusted as
    much as they are. False (no cache) when the directory cannot be made (a read-only home)."""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(directory / "dsl-grammar.lark-cache") if directory.is_dir() else False


@cache
def _terminal_names() -> dict[str, str]:
    """How each terminal is shown in "expected ..." hints: its text when it is a literal."""
    out = {}
    for t in _parser().terminals:
        if t.name in _TOKEN_NAMES:
            out[t.name] = _TOKEN_NAMES[t.name]
        elif isinstance(t.pattern, lark.lexer.PatternStr):
            out[t.name] = repr(t.pattern.value)
        else:
            out[t.name] = t.name.lower().replace("_", " ")
    return out


def _describe_expected(expected: set[str]) -> str:
    shown = _terminal_names()
    names = sorted({shown.get(t, _TOKEN_NAMES.get(t, t.lower())) for t in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    return ", ".join(names)


def _syntax_diagnostic(err: lark.exceptions.UnexpectedInput, file: str, text: str) -> Diagnostic:
    line, col = max(err.line, 1), max(err.column, 1)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        ch = err.char or "?"
        return diag("E101", Span(file, line, col, line, col + 1), f"unexpected character {ch!r}")
    if isinstance(err, lark.exceptions.UnexpectedToken):
        tok = err.token
        if tok.type == "$END":
            lines = text.splitlines() or [""]
            line, col = len(lines), len(lines[-1]) + 1
            return diag(
                "E101",
                Span(file, line, col, line, col),
                "unexpected end of file",
                hint=f"expected {_describe_expected(err.expected)}",
            )
        end = col + max(len(str(tok)), 1)
        return diag(
            "E101",
            Span(file, line, col, line, end),
            f"unexpected {str(tok)!r}",
            hint=f"expected {_describe_expected(err.expected)}",
        )
    return diag("E101", Span(file, line, col, line, col + 1), "syntax error")


def _code(line: str) -> str:
    """``line`` with its comment and string literals blanked (same length)."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "#":
            out.append(" " * (n - i))
            break
        if ch == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _neutralise_line(lines: list[str], idx: int) -> None:
    """Replace line ``idx`` by text that parses wherever the line stood and keeps the block
    structure: every brace stays, each ``{`` gets a neutral opener in front (``if 1 {``, or
    ``layer _() {`` at the top level), and everything else is blanked; a stray ``}`` at the
    top level is dropped. Parsing the result again finds the next error without a cascade
    of errors caused by the first (an ``else`` still has its ``if`` before it)."""
    depth = 0
    for line in lines[:idx]:
        code = _code(line)
        depth += code.count("{") - code.count("}")
    depth = max(depth, 0)
    parts: list[str] = []
    for ch in _code(lines[idx]):
        if ch == "{":
            parts.append("if 1 {" if depth > 0 else "layer _() {")
            depth += 1
        elif ch == "}" and depth > 0:
            parts.append("}")
            depth -= 1
    lines[idx] = " ".join(parts)


def _check_nesting(text: str, file: str) -> Diagnostic | None:
    depth = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        for col, ch in enumerate(_code(line), 1):
            if ch in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    return diag(
                        "E105",
                        Span(file, lineno, col, lineno, col + 1),
                        f"nesting deeper than {MAX_NESTING} levels",
                        hint="split the expression or block into named parts",
                    )
            elif ch in ")]}":
                depth -= 1
    return None


def parse(text: str, file: str = "<string>") -> ast.Module:
    """Parse a whole source file; raise CompileError with every syntax error found."""
    with paused_gc():  # lark allocates a tree node per token: keep the collector out
        return _parse(text, file)


def _parse(text: str, file: str) -> ast.Module:
    deep = _check_nesting(text, file)
    if deep:
        raise CompileError([deep])
    diagnostics: list[Diagnostic] = []
    lines = text.split("\n")
    neutralised: set[int] = set()
    seen: set[tuple[int, int]] = set()
    tree = None
    for _attempt in range(3 * MAX_SYNTAX_ERRORS):  # bounded: each attempt reparses the file
        if len(diagnostics) >= MAX_SYNTAX_ERRORS:
            break
        try:
            tree = _parser().parse("\n".join(lines))
            break
        except lark.exceptions.UnexpectedInput as err:
            eof = isinstance(err, lark.exceptions.UnexpectedToken) and err.token.type == "$END"
            if eof and diagnostics:
                break  # an end-of-file error after a blanked line is a cascade of the first error
            d = _syntax_diagnostic(err, file, text)
            if isinstance(err, lark.exceptions.UnexpectedToken) and err.token.type == "$END":
                diagnostics.append(d)  # braces are kept balanced, so this one is genuine
                break  # nothing after the end to recover into
            idx = min(max(d.span.line - 1, 0), len(lines) - 1)
            if (d.span.line, d.span.col) in seen or idx in neutralised:
                # Neutralising that line did not help: the statement that is really
                # broken starts earlier (``let x =`` with its value missing, say).
                earlier = [
                    i for i in range(idx - 1, -1, -1) if i not in neutralised and _code(lines[i]).strip()
                ]
                if not earlier:
                    break
                idx = earlier[0]
            else:
                seen.add((d.span.line, d.span.col))
                diagnostics.append(d)
            neutralised.add(idx)
            _neutralise_line(lines, idx)
    if diagnostics:
        raise CompileError(diagnostics)
    if tree is None:  # pragma: no cover - loop always parses or reports
        raise CompileError([diag("E101", Span.whole_file(file), "could not parse the file")])
    deep = _check_tree_depth(tree, file)
    if deep:
        raise CompileError([deep])
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 10000))
        module = ToAst(file).transform(tree)
    except lark.exceptions.VisitError as err:
        if isinstance(err.orig_exc, CompileError):
            raise err.orig_exc from None
        if isinstance(err.orig_exc, RecursionError):
            raise CompileError([diag("E105", Span.whole_file(file), "program nests too deeply")]) from None
        raise
    except RecursionError:
        raise CompileError([diag("E105", Span.whole_file(file), "program nests too deeply")]) from None
    finally:
        sys.setrecursionlimit(limit)
    deep = _check_expression_depth(module, file)
    if deep:
        raise CompileError([deep])
    return module


_EXPRESSION_RULES = frozenset(
    {"neg", "not_op", "arith", "compare", "and_chain", "or_chain", "call", "access", "list_lit", "slice"}
)


def _check_tree_depth(tree: lark.Tree, file: str) -> Diagnostic | None:
    """Refuse a parse tree too deep to transform (``- - - ... 1``), at the start of the
    expression that nests (iterative: the check never runs out of stack)."""
    work: list[tuple[lark.Tree, int, object]] = [(tree, 1, None)]
    while work:
        node, depth, top = work.pop()
        top = (top or node.meta) if node.data in _EXPRESSION_RULES else None
        if depth > MAX_TREE_DEPTH:
            meta = top or node.meta
            line, col = (meta.line, meta.column) if not getattr(meta, "empty", True) else (0, 0)
            return diag(
                "E105",
                Span(file, line, col, line, col + 1) if line else Span.whole_file(file),
                f"expression nests deeper than {MAX_EXPRESSION_DEPTH} levels (each operator, call or "
                "subscript is one)",
                hint="name parts of it with `let`, e.g. sum the terms in a loop",
            )
        work.extend((c, depth + 1, top) for c in node.children if isinstance(c, lark.Tree))
    return None


_EXPRESSIONS = (ast.Unary, ast.Binary, ast.Access, ast.Call, ast.ListLit, ast.Slice)


def _check_expression_depth(module: ast.Module, file: str) -> Diagnostic | None:
    """Refuse an expression whose operators, calls and subscripts nest deeper than
    MAX_EXPRESSION_DEPTH (a 500-term sum, 500 minus signs): every later stage, and the
    Python that the targets generate, stays well inside its recursion and nesting limits.
    Iterative, so the check itself never runs out of stack."""
    work: list[tuple[object, int, ast.Node | None]] = [(module, 0, None)]
    while work:
        node, depth, root = work.pop()
        if isinstance(node, tuple | list):
            work.extend((c, depth, root) for c in node)
            continue
        if not isinstance(node, ast.Node):
            continue
        if isinstance(node, _EXPRESSIONS):
            depth, root = depth + 1, root or node
            if depth > MAX_EXPRESSION_DEPTH:
                return diag(
                    "E105",
                    root.span,
                    f"expression nests deeper than {MAX_EXPRESSION_DEPTH} levels (each operator, call or "
                    "subscript is one)",
                    hint="name parts of it with `let`, e.g. sum the terms in a loop",
                )
        else:
            depth, root = 0, None
        for f in dataclasses.fields(node):
            if f.name != "span":
                work.append((getattr(node, f.name), depth, root))
    return None
