"""Branches, loops, jumps and exceptions of the static interpreter.

``if``, ``for``, ``while``, ``try``, ``raise`` and ``assert`` get Python's semantics where the
condition or the iterable is known (``return``, ``break`` and ``continue`` are the signals of
``interp_control``). Where a condition cannot be decided, both branches run and the names they
bind differently become unknown; a branch that raises (a guard that refuses bad values) is taken
not to run. A loop over an unknown iterable makes its names unknown, and a host-code loop past
the interpreter's ``loop_limit`` statements is abandoned so that it cannot eat the budget of
the whole read. The functions take the :class:`~lowering.pypto_reader.interp.PyInterpreter`
they run on.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from lowering.pypto_reader.interp_control import Break, Continue, Return
from lowering.pypto_reader.interp_statements import havoc
from lowering.pypto_reader.notes import span_of
from lowering.pypto_reader.py_exceptions import PyRaise, exception_matches
from lowering.pypto_reader.values import UNKNOWN, BuiltinVal, ClassVal, ObjVal, PyVal, Unknown, Val

if TYPE_CHECKING:
    from lowering.pypto_reader.interp import PyInterpreter


def return_statement(it: PyInterpreter, s: ast.Return) -> None:
    raise Return(it.eval(s.value) if s.value is not None else PyVal(None))


def break_statement(it: PyInterpreter, s: ast.Break) -> None:
    raise Break()


def continue_statement(it: PyInterpreter, s: ast.Continue) -> None:
    raise Continue()


def raise_statement(it: PyInterpreter, s: ast.Raise) -> None:
    if s.exc is None:
        raise PyRaise(ObjVal(None, {"__exception__": PyVal("RuntimeError")}), span_of(it.file, s))
    v = it.eval(s.exc)
    if isinstance(v, BuiltinVal | ClassVal):
        v = it.call_value(v, [], {}, s)
    raise PyRaise(v, span_of(it.file, s))


def assert_statement(it: PyInterpreter, s: ast.Assert) -> None:
    if it.truth(it.eval(s.test)) is False:
        raise PyRaise(ObjVal(None, {"__exception__": PyVal("AssertionError")}), span_of(it.file, s))


def if_statement(it: PyInterpreter, s: ast.If) -> None:
    truth = it.truth(it.eval(s.test))
    if truth is None:
        it.undecided_if(s)
    else:
        it.exec_block(s.body if truth else s.orelse)


def undecided_if(it: PyInterpreter, s: ast.If) -> None:
    """Both branches; names they bind differently become unknown. A branch that raises
    (a guard that refuses bad values) is taken not to run."""
    frame = it.frame
    start = dict(frame.locals)
    outcomes = []
    for branch in (s.body, s.orelse):
        frame.locals.clear()
        frame.locals.update(start)
        try:
            it.exec_block(branch)
            outcomes.append(("ok", dict(frame.locals)))
        except PyRaise:
            outcomes.append(("raise", None))
        except Return as ret:
            outcomes.append(("return", ret.value))
        except (Break, Continue) as jump:
            outcomes.append((type(jump).__name__, dict(frame.locals)))
    kinds = [k for k, _ in outcomes]
    frame.locals.clear()
    frame.locals.update(start)
    ran = [(k, v) for k, v in outcomes if k != "raise"]
    if not ran:
        raise PyRaise(ObjVal(None, {"__exception__": PyVal("RuntimeError")}))
    if len(ran) == 1:
        kind, v = ran[0]
        if kind == "return":
            raise Return(v)  # type: ignore[arg-type]
        frame.locals.update(v)  # type: ignore[arg-type]
        if kind in ("Break", "Continue"):
            raise Break() if kind == "Break" else Continue()
        return
    if kinds[0] == kinds[1] == "return":
        a, b = outcomes[0][1], outcomes[1][1]
        raise Return(a if it.same(a, b) else Unknown("a value returned on a branch the reader cannot decide"))  # type: ignore[arg-type]
    if "return" in kinds:
        raise Return(Unknown("a value returned on a branch the reader cannot decide"))
    merged = _join(outcomes[0][1], outcomes[1][1], it.same)  # type: ignore[arg-type]
    frame.locals.update(merged)
    if kinds[0] == kinds[1] and kinds[0] in ("Break", "Continue"):
        raise Break() if kinds[0] == "Break" else Continue()


def same(it: PyInterpreter, a: Val, b: Val) -> bool:
    if a is b or a == b:
        return True
    sa, sb = it.static(a), it.static(b)
    return sa is not UNKNOWN and sa == sb and type(sa) is type(sb)


def for_statement(it: PyInterpreter, s: ast.For) -> None:
    items = it.iterate(it.eval(s.iter))
    if items is None:
        havoc(it, s)
        return
    run_loop(it, s, items)


def run_loop(it: PyInterpreter, s: ast.For, items: list[Val]) -> None:
    start = it.budget.steps
    for item in items:
        if loop_too_long(it, s, start):
            return
        it.bind_target(s.target, item)
        if _body_breaks(it, s):
            return
    it.exec_block(s.orelse)


def _body_breaks(it: PyInterpreter, s: ast.For | ast.While) -> bool:
    """Runs a loop's body once; whether it ended in ``break`` (``continue`` just ends it)."""
    try:
        it.exec_block(s.body)
    except Break:
        return True
    except Continue:
        pass
    return False


def loop_too_long(it: PyInterpreter, s: ast.For | ast.While, start: int) -> bool:
    """Past ``loop_limit`` statements, a host-code loop is abandoned: what it binds or fills
    becomes unknown and reading goes on after it (a metadata table built element by element
    is data the lint does not need, and must not eat the budget of the whole read)."""
    if it.loop_limit is None or it.budget.steps - start <= it.loop_limit:
        return False
    it.notes.not_modelled(
        span_of(it.file, s),
        f"a host-code loop past {it.loop_limit} interpreted statements",
        "it is abandoned there: the names it binds or fills are unknown after it",
    )
    havoc(it, s)
    for name in _filled_names(s):
        it.bind_name(name, Unknown("filled by a loop the reader abandoned"), s)
    return True


def while_statement(it: PyInterpreter, s: ast.While) -> None:
    start = it.budget.steps
    while True:
        if loop_too_long(it, s, start):
            return
        truth = it.truth(it.eval(s.test))
        if truth is None:
            havoc(it, s)
            return
        if not truth:
            it.exec_block(s.orelse)
            return
        if _body_breaks(it, s):
            return


def try_statement(it: PyInterpreter, s: ast.Try) -> None:
    try:
        try:
            it.exec_block(s.body)
        except PyRaise as exc:
            for h in s.handlers:
                kind = it.eval(h.type) if h.type is not None else None
                if exception_matches(exc.value, kind):
                    if h.name:
                        it.bind_name(h.name, exc.value, h)
                    it.exec_block(h.body)
                    break
            else:
                raise
        else:
            it.exec_block(s.orelse)
    finally:
        it.exec_block(s.finalbody)


def _join(a: dict[str, Val], b: dict[str, Val], same) -> dict[str, Val]:
    out = {}
    for name in set(a) | set(b):
        x, y = a.get(name), b.get(name)
        if x is not None and y is not None and same(x, y):
            out[name] = x
        else:
            out[name] = Unknown(f"'{name}' is bound differently on branches the reader cannot decide")
    return out


_FILLING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "sort"}
)


def _filled_names(loop: ast.stmt) -> list[str]:
    """Names whose value a loop fills in place: ``x[i] = v``, ``x.attr = v``, ``x.append(v)``."""
    out: dict[str, None] = {}
    for node in ast.walk(loop):
        base = None
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store):
            base = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _FILLING_METHODS:
                base = node.func.value
        while isinstance(base, ast.Subscript | ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name):
            out[base.id] = None
    return list(out)
