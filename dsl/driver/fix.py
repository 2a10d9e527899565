"""``dslc fix``: source rewrites the lint can prove safe.

- **D101** (a waiter not ordered after its local notifier): add ``after <notifier>`` to the
  waiting task's header. Adding an edge only removes schedules, so it cannot break a layer
  that was correct; the rule proved the edge is missing.
- **D117** (a waiter of a later round overtaking an earlier round's notifier), **D113**'s
  Set writers of two unordered rounds and **N202**'s zero seed of the next round that can
  overtake this round's adds: add ``after prev(<task>)`` -- an edge across rounds, which also
  only removes schedules.
- **N201** (FP atomic accumulation): ``dst[R] += E atomic`` in ``task t spmd(G)`` becomes
  ``dst[R] = reduce_sum s in range(S) { ...; return E }`` on ``spmd(G / S)`` when the proof
  holds at the current parameters: the blocks that add into one region form groups of S
  consecutive blocks (``block = g * S + s``) or S strided blocks (``block = s * G/S + g``),
  the statement is the task's last, and an ancestor task zero-seeds ``dst`` (so ``+=`` onto
  zeros equals ``=``). Otherwise the finding stays and the fix says why.

Edits keep the user's text: statements are moved as written, with ``block`` renamed where
the grid changes. Nothing is written unless ``--write`` is given, and then atomically.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from dsl import ast
from dsl.parser import parse
from dsl.sugar.subst import names_used
from lowering.ir import Graph, Task
from lowering.source import Diagnostic
from lowering.symbolic import Bin, Const, EvalError, Expr, Sym, evaluate

FIXABLE = ("D101", "D113", "D117", "N201", "N202")
_ADD_AFTER = ("D101", "D113", "D117", "N202")  # the findings whose data say which `after` to add


@dataclass(frozen=True)
class Edit:
    start: int  # offsets into the text
    end: int
    text: str


class _Text:
    """Offsets of (line, col) positions in a source text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col - 1

    def slice(self, node: ast.Node) -> str:
        s = node.span
        return self.text[self.offset(s.line, s.col) : self.offset(s.end_line, s.end_col)]


def _tasks(stmts) -> list[ast.TaskDef]:
    out = []
    for s in stmts:
        if isinstance(s, ast.TaskDef):
            out.append(s)
        elif isinstance(s, ast.LayerFor):
            out.extend(_tasks(s.body))
        elif isinstance(s, ast.LayerIf):
            out.extend(_tasks(s.then) + _tasks(s.orelse))
    return out


def _task_at(module: ast.Module, task: Task) -> ast.TaskDef | None:
    for layer in module.layers:
        for t in _tasks(layer.body):
            if (t.span.line, t.span.col) == (task.span.line, task.span.col):
                return t
    return None


def _relative(name: str, scope_of: str) -> str:
    if name.startswith("prev(") and name.endswith(")"):
        return f"prev({_relative(name[5:-1], scope_of)})"
    prefix = scope_of.rpartition(".")[0]
    return name[len(prefix) + 1 :] if prefix and name.startswith(prefix + ".") else name


def _after_edit(src: _Text, tdef: ast.TaskDef, target: str) -> Edit:
    if tdef.after:  # extend the existing `after` list
        last = tdef.after[-1].span
        end = src.offset(last.end_line, last.end_col)
        return Edit(end, end, f", {target}")
    start = src.offset(tdef.span.line, tdef.span.col)
    m = re.compile(r"task\s+" + re.escape(tdef.name) + r"(\s*\[[^\]\n]*\])?").match(src.text, start)
    end = m.end() if m else start + len("task ") + len(tdef.name)
    brace = src.text.find("{", end)  # the body: the attributes come before it
    if brace > 0 and "\n" not in src.text[end:brace]:
        return Edit(brace, brace, f"after {target} ")
    return Edit(end, end, f" after {target}")


def _merged(first: Edit, second: Edit) -> Edit:
    """Two `after` insertions at one place (``after a `` / ``, a`` / `` after a``) as one list."""
    target = second.text.strip().removeprefix("after ").removeprefix(", ").strip()
    if first.text.endswith(" ") and first.text.startswith("after "):
        return Edit(first.start, first.end, f"{first.text.rstrip()}, {target} ")
    return Edit(first.start, first.end, f"{first.text}, {target}")


def _int_eval(e, env: dict[str, int]) -> int:
    """An integer expression of the source at one block: its symbolic form, evaluated as every
    rule evaluates index arithmetic (``lowering.symbolic.evaluate``)."""
    return evaluate(_as_expr(e), env)


_OPS = {"+": "+", "-": "-", "*": "*", "/": "//", "//": "//", "%": "%"}  # `/` of ints floors


def _as_expr(e) -> Expr:
    if isinstance(e, ast.IntLit):
        return Const(e.value)
    if isinstance(e, ast.Name):
        return Sym(e.id, "param")
    if isinstance(e, ast.Unary) and e.op == "-":
        return Bin("-", Const(0), _as_expr(e.operand))
    if isinstance(e, ast.Binary) and e.op in _OPS:
        return Bin(_OPS[e.op], _as_expr(e.left), _as_expr(e.right))
    if isinstance(e, ast.Call) and e.func in ("min", "max") and len(e.args) == 2:
        return Bin(e.func, _as_expr(e.args[0]), _as_expr(e.args[1]))
    raise EvalError("not an integer expression")


def _region_key(target: ast.Access, env: dict[str, int]) -> tuple:
    key = []
    for sub in target.subscripts:
        if isinstance(sub, ast.Slice):
            key.append(
                tuple(_int_eval(x, env) if x is not None else None for x in (sub.start, sub.stop, sub.step))
            )
        else:
            key.append(_int_eval(sub, env))
    return tuple(key)


def _rename_block(text: str, replacement: str) -> str:
    return re.sub(r"(?<![A-Za-z0-9_.])block(?![A-Za-z0-9_])", replacement, text)


class _AtomicRewrite:
    """Proves and builds the N201 rewrite of one task, or says why it cannot."""

    def __init__(self, graph: Graph, task: Task, tdef: ast.TaskDef, src: _Text):
        self.graph, self.task, self.tdef, self.src = graph, task, tdef, src

    def edit(self) -> Edit | str:
        tdef, graph, task = self.tdef, self.graph, self.task
        last = tdef.body[-1] if tdef.body else None
        if not (isinstance(last, ast.Accumulate) and last.atomic):
            return "the atomic add is not the task's last statement"
        if any(isinstance(s, ast.Accumulate) for s in tdef.body[:-1]):
            return "the task has several accumulations"
        if tdef.spmd is None or task.blocks < 2:
            return "single-block task: nothing to reorder"
        if not self._zero_seeded(last.target.name):
            return f"no ancestor zero-seeds {last.target.name}, so `+=` cannot become `=`"
        env = graph.env()
        lets = [s for s in tdef.body[:-1] if isinstance(s, ast.Let)]
        regions: dict[tuple, list[int]] = {}
        for b in range(task.blocks):
            scope = dict(env, block=b)
            for let in lets:
                try:
                    scope[let.name] = _int_eval(let.value, scope)
                except EvalError:
                    pass
            try:
                regions.setdefault(_region_key(last.target, scope), []).append(b)
            except EvalError:
                return "the target region depends on data"
        groups = list(regions.values())
        size = len(groups[0])
        if size < 2 or any(len(g) != size for g in groups):
            return "blocks do not split into equal groups per region"
        count = task.blocks // size
        grid = self.src.slice(tdef.spmd)
        name = self._size_name(size, grid)
        if count == 1:
            return self._build(grid, None, "0", "__split", last)
        if all(g == list(range(g[0], g[0] + size)) for g in groups):
            outer, inner = f"(block * {name})", f"(block * {name} + __split)"
        elif all(g == [g[0] + s * count for s in range(size)] for g in groups):
            outer, inner = "block", f"(__split * (({grid}) / {name}) + block)"
        else:
            return "the blocks adding into one region are neither consecutive nor strided"
        return self._build(name, f"({grid}) / {name}", outer, inner, last)

    def _size_name(self, size: int, grid: str) -> str:
        """The split count as the parameter the grid is written with, else the number."""
        env = self.graph.env()
        for name, value in env.items():
            if value == size and re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", grid):
                return name
        return str(size)

    def _zero_seeded(self, tensor: str) -> bool:
        ancestors = self.graph.ancestors()[self.task.name]
        for t in self.graph.tasks:
            if t.name in ancestors and any(a.tensor == tensor and a.mode == "write" for a in t.accesses):
                if "zeros" in t.ops or "full" in t.ops:
                    return True
        return False

    def _build(self, size: str, grid: str | None, outer: str, inner: str, last: ast.Accumulate) -> Edit:
        src, tdef = self.src, self.tdef
        indent = " " * (tdef.body[0].span.col - 1)
        needed = names_used(last.target)
        outside_stmts = []
        for st in reversed(tdef.body[:-1]):
            if isinstance(st, ast.Let) and st.name in needed:
                outside_stmts.insert(0, st)
                needed |= names_used(st.value)
        outside = [src.slice(st) for st in outside_stmts]
        pre = [src.slice(st) for st in tdef.body[:-1] if st not in outside_stmts]
        header_end = src.offset(tdef.body[0].span.line, 1) if tdef.body else None
        head = src.text[src.offset(tdef.span.line, tdef.span.col) : header_end].rstrip()
        old_grid = f"spmd({src.slice(tdef.spmd)})"
        head = head.replace(old_grid, f"spmd({grid})" if grid else "", 1).replace("  ", " ")
        lines = [head]
        lines += [indent + _rename_block(p, outer) for p in outside]
        lines.append(
            f"{indent}{_rename_block(src.slice(last.target), outer)} = reduce_sum __split in range({size}) {{"
        )
        lines += [indent + "  " + _rename_block(p, inner).replace("\n", "\n  ") for p in pre]
        lines.append(f"{indent}  return {_rename_block(src.slice(last.value), inner)}")
        lines.append(indent + "}")
        closing = " " * (tdef.span.col - 1) + "}"
        start = src.offset(tdef.span.line, tdef.span.col)
        end = src.offset(tdef.span.end_line, tdef.span.end_col)
        return Edit(start, end, "\n".join(lines) + "\n" + closing)


def plan(
    text: str, file: str, graphs: list[Graph], findings: list[Diagnostic]
) -> tuple[list[Edit], list[str]]:
    """Edits for the fixable findings, and a note for each finding that could not be fixed."""
    module = parse(text, file)
    src = _Text(text)
    edits: dict[tuple[int, int], Edit] = {}
    notes: list[str] = []
    by_name = {t.name: (g, t) for g in graphs for t in g.tasks}
    for d in findings:
        if d.code not in FIXABLE or d.span.file != file:
            continue
        data = dict(d.data)
        if d.code in _ADD_AFTER and "task" in data and "add_after" in data:
            graph_task = by_name.get(data["task"])
            tdef = _task_at(module, graph_task[1]) if graph_task else None
            if tdef is None:
                notes.append(f"{d.span}: {d.code} not fixed: task {data['task']} not found in the source")
                continue
            e = _after_edit(src, tdef, _relative(data["add_after"], data["task"]))
            if not any(x.start == e.start and x.text == e.text for x in edits.values()):
                same = next((k for k, x in edits.items() if x.start == e.start), None)
                if same is not None:  # a second target for the same task: one `after` list
                    edits[same] = _merged(edits[same], e)
                else:
                    edits[(e.start, len(edits))] = e
        elif d.code == "N201":
            found = next(
                (
                    (g, t)
                    for g, t in by_name.values()
                    if t.span.line <= d.span.line <= t.span.end_line and t.span.file == file
                ),
                None,
            )
            tdef = _task_at(module, found[1]) if found else None
            if tdef is None:
                notes.append(f"{d.span}: N201 not fixed: no task around this line")
                continue
            result = _AtomicRewrite(found[0], found[1], tdef, src).edit()
            if isinstance(result, str):
                notes.append(f"{d.span}: N201 not fixed: {result}")
            elif not any(x.start == result.start for x in edits.values()):
                edits[(result.start, len(edits))] = result
    return sorted(edits.values(), key=lambda e: (e.start, e.end)), notes


def apply(text: str, edits: list[Edit]) -> str:
    out, pos = [], 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            continue  # overlapping edit: keep the first; the next run of `dslc fix` applies the rest
        out.append(text[pos : e.start])
        out.append(e.text)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def unified_diff(old: str, new: str, file: str) -> str:
    a, b = (file, file) if file.startswith("/") else (f"a/{file}", f"b/{file}")
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b))
