"""Reading a task body once per source scope, not once per task instance.

An orchestration loop over 40 layers submits the same ``pl.spmd`` scopes 40 times; what
differs between the instances is, almost always, the integers the body captures from the
orchestration (the layer index, an offset computed from it). So a body is read with each
captured integer constant replaced by a symbol (``@layer_idx``), and the summary it yields
(statements, accesses, signals, barriers, ops) is kept as a template. The next instance of
the same scope reuses it, with the symbols replaced by its own values, when every other name
the body looked up outside itself has the same value as at the first read.

A body whose reading *used* the value of a captured integer (a Python-level branch, a static
loop bound) depends on that value: its template is reused only for the same values. The
captured values are in the environment of the first read, so reading with symbols follows
exactly the path a read with the values would.

This module keeps the templates and decides which one stands for an instance; what a read
captures is recorded by ``kernel_captures``, and an instance is made from its template by
``kernel_instances``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from lowering.pypto_reader.kernel_captures import ARG, Recorder, fingerprint, known_value
from lowering.pypto_reader.kernel_instances import Images, dependencies, instantiate
from lowering.pypto_reader.kernel_summary import KernelSummary
from lowering.pypto_reader.values import IntVal, TensorVal, Unknown, Val
from lowering.symbolic import Expr

MAX_TEMPLATES_PER_SCOPE = 64


@dataclass
class _Template:
    lookups: dict[str, object]  # outer name -> fingerprint, as the first read saw it
    roots: dict[str, str]  # outer name -> the tensor it named at the first read
    summary: KernelSummary
    dependent: bool  # the read used a capture's value
    values: dict[str, int | None]  # the captures' values at the first read
    deps: set[int] | None = None  # ids of the parts of the summary that mention a capture or root
    images: Images = field(default_factory=lambda: Images())  # its expressions' substitutions


class KernelCache:
    def __init__(self) -> None:
        self.templates: dict[tuple, list[_Template]] = {}
        self.hits = 0
        self.misses = 0

    def find(
        self,
        key: tuple,
        outer: Callable[[str, ast.AST], Val],
        bindings: Mapping[str, Val],
        env: Mapping[str, int],
        signature: Callable[[str], object],
        node: ast.AST,
    ) -> KernelSummary | None:
        for t in self.templates.get(key, ()):
            match = _match(t, outer, bindings, signature, node)
            if match is None:
                continue
            exprs, renames = match
            if t.dependent and any(known_value(e, env) != t.values[n] for n, e in exprs.items()):
                continue
            self.hits += 1
            if t.deps is None:
                t.deps = dependencies(t.summary, set(t.values), set(t.roots.values()))
            mapping = {"@" + k: e for k, e in exprs.items()}
            return instantiate(t.summary, mapping, renames, t.deps, t.images)
        return None

    def store(self, key: tuple, recorder: Recorder, summary: KernelSummary) -> KernelSummary:
        self.misses += 1
        bucket = self.templates.setdefault(key, [])
        if len(bucket) < MAX_TEMPLATES_PER_SCOPE:
            bucket.append(
                _Template(
                    dict(recorder.lookups),
                    dict(recorder.roots),
                    summary,
                    recorder.env.used,
                    dict(recorder.values),
                )
            )
        return instantiate(summary, recorder.mapping(), {})


def _match(t: _Template, outer, bindings, signature, node) -> tuple[dict[str, Expr], dict[str, str]] | None:
    """The captures and tensor renames under which ``t`` stands for this instance, if it does."""
    exprs: dict[str, Expr] = {}
    renames: dict[str, str] = {}
    for name, fp in t.lookups.items():
        v = bindings.get(name[len(ARG) :], Unknown("unbound")) if name.startswith(ARG) else outer(name, node)
        kind = fp[0] if isinstance(fp, tuple) and fp else None
        if kind == "capture":
            if not isinstance(v, IntVal):
                return None
            exprs[name] = v.expr
            continue
        if kind in ("tensor", "view"):
            if not isinstance(v, TensorVal) or signature(v.root) != fp[1]:
                return None
            if kind == "tensor":
                if (v.offsets, v.shape, v.dropped) != fp[2:]:
                    return None
            else:
                if (
                    v.offsets is None
                    or v.shape is None
                    or (v.dropped, len(v.offsets), len(v.shape)) != fp[2:]
                ):
                    return None
                exprs.update({f"{name}.o{i}": e for i, e in enumerate(v.offsets)})
                exprs.update({f"{name}.s{i}": e for i, e in enumerate(v.shape)})
            old = t.roots[name]
            if renames.get(old, v.root) != v.root:
                return None  # two names that were one tensor are two now (or the reverse)
            renames[old] = v.root
            continue
        if fingerprint(v) != fp:
            return None
    if len(set(renames.values())) != len(renames):
        return None
    return exprs, {a: b for a, b in renames.items() if a != b}
