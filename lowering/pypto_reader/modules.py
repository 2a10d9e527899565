"""Loading a PyPTO file and the sibling modules it imports, and its module-level statements.

Nothing is imported or executed: each file is parsed with ``ast`` and its top level is
walked in order. Imports of ``pypto.language``/``pypto.language.distributed`` bind the
``pl``/``pld`` namespaces under whatever alias the file uses; ``from config import T`` and
``from gate import gate`` load ``config.py``/``gate.py`` from the same folder the same way.
Integer constants go to :class:`~lowering.pypto_reader.constants.Params`; functions and
classes are bound with the kind their decorator gives them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from lowering import ir
from lowering.pypto_reader.constants import (
    ArgOption,
    Params,
    argv_options,
    domain_of_assert,
    is_main_guard,
    main_rebindings,
    range_domain,
)
from lowering.pypto_reader.exprs import Evaluator, dotted
from lowering.pypto_reader.notes import Notes, span_of
from lowering.pypto_reader.values import (
    UNKNOWN,
    ArgsVal,
    ClassVal,
    FuncVal,
    IntVal,
    ModuleVal,
    PlRef,
    PyVal,
    SeqVal,
    Unknown,
    Val,
)
from lowering.symbolic import Sym

MAX_MODULE_BYTES = 16 * 1024 * 1024
PL_MODULES = {"pypto.language": "pl", "pypto.language.distributed": "pld"}

# Decorator path -> function kind.
DECORATORS = {
    "pl.jit": "jit",
    "pl.jit.host": "host",
    "pl.jit.inline": "inline",
    "pl.jit.incore": "incore",
    "pl.jit.opaque": "opaque",
    "pl.jit.extern": "extern",
    "pl.inline": "inline",
    "pl.function": "function",
}
FUNCTION_TYPES = {
    "Orchestration": "jit",
    "Opaque": "jit",
    "InCore": "incore",
    "AIC": "incore",
    "AIV": "incore",
    "Group": "incore",
    "Spmd": "incore",
    "Inline": "inline",
}


@dataclass(eq=False)
class ModuleInfo:
    name: str
    path: Path
    text: str
    tree: ast.Module
    prefix: str  # prefix of its constants' symbol names ("" for the main file and config)
    globals: dict[str, Val] = field(default_factory=dict)
    argv: dict[str, ArgOption] = field(default_factory=dict)
    is_pypto: bool = False

    @property
    def file(self) -> str:
        return str(self.path)


class ModuleEval(Evaluator):
    """Evaluates module-level expressions (constants, decorators, defaults)."""

    def __init__(self, module: ModuleInfo, notes: Notes, params: Params):
        super().__init__(module.file, notes, params.env)
        self.module = module
        self.params = params

    def lookup(self, name: str, node: ast.AST) -> Val:
        if name in self.module.globals:
            return self.module.globals[name]
        if name == "__name__":
            return PyVal(self.module.name)
        return Unknown(f"unknown name '{name}'")

    def argv_default(self, attr: str, node: ast.AST) -> Val:
        opt = self.module.argv.get(attr)
        if opt is None or opt.default is None:
            return Unknown(f"argv option '{attr}'")
        return self.eval(opt.default)

    def call_pl(self, path: str, node: ast.Call) -> Val:
        return self.scalar_pl(path, node)

    def call_other(self, func: Val, node: ast.Call) -> Val:
        name = dotted(node.func) or ""
        if name.endswith("parse_args") or name.endswith("parse_known_args"):
            return ArgsVal()
        return UNKNOWN


class Loader:
    """Parses the main file and the sibling modules it imports (each once)."""

    def __init__(self, notes: Notes, params: Params):
        self.notes = notes
        self.params = params
        self.cache: dict[Path, ModuleInfo | None] = {}
        self.loading: set[Path] = set()

    def load_text(self, path: Path, text: str, prefix: str = "") -> ModuleInfo:
        tree = ast.parse(text, filename=str(path))
        module = ModuleInfo(path.stem, path, text, tree, prefix)
        self.cache[path.resolve()] = module
        evaluate_module(module, self)
        return module

    def sibling(self, module: ModuleInfo, name: str, node: ast.AST) -> ModuleInfo | None:
        """``name`` imported from ``module``: ``name.py`` or ``name/__init__.py`` next to it."""
        base = module.path.parent
        parts = name.split(".")
        candidates = [base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            return None
        key = path.resolve()
        if key in self.cache:
            return self.cache[key]
        if key in self.loading:
            return None
        try:
            if path.stat().st_size > MAX_MODULE_BYTES:
                raise OSError("file too large")
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as err:
            self.notes.not_modelled(
                span_of(module.file, node),
                f"module '{name}' ({path.name}) could not be read ({type(err).__name__})",
                "its constants and functions are unknown here",
            )
            self.cache[key] = None
            return None
        prefix = "" if parts[-1] == "config" else f"{parts[-1]}."
        info = ModuleInfo(parts[-1], path, text, tree, prefix)
        self.cache[key] = info
        self.loading.add(key)
        try:
            evaluate_module(info, self)
        finally:
            self.loading.discard(key)
        return info


def evaluate_module(module: ModuleInfo, loader: Loader) -> None:
    """Walk the top level of ``module`` in order, binding its globals."""
    module.argv = argv_options(module.tree, module.file, module.text)
    ev = ModuleEval(module, loader.notes, loader.params)
    _statements(module.tree.body, module, loader, ev)
    _argv_domains(module, loader, ev)


def _statements(stmts: list[ast.stmt], module: ModuleInfo, loader: Loader, ev: ModuleEval) -> None:
    for stmt in stmts:
        try:
            _statement(stmt, module, loader, ev)
        except RecursionError:
            raise
        except Exception as err:  # noqa: BLE001 - one bad statement must not stop the file
            loader.notes.add(
                "P004",
                span_of(module.file, stmt),
                f"the reader failed on this statement ({type(err).__name__}: {err})",
            )


def _statement(stmt: ast.stmt, module: ModuleInfo, loader: Loader, ev: ModuleEval) -> None:
    g = module.globals
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.name in PL_MODULES:
                module.is_pypto = True
                g[alias.asname or alias.name.split(".")[0]] = PlRef(PL_MODULES[alias.name])
                continue
            bound = alias.asname or alias.name.split(".")[0]
            if alias.asname or "." not in alias.name:
                sib = loader.sibling(module, alias.name, stmt)
                if sib is not None:
                    g[bound] = ModuleVal(sib)
                    continue
            g[bound] = PyVal(("module", alias.name if alias.asname else bound))
    elif isinstance(stmt, ast.ImportFrom):
        mod = stmt.module or ""
        if mod == "pypto" and any(a.name == "language" for a in stmt.names):
            module.is_pypto = True
            for a in stmt.names:
                if a.name == "language":
                    g[a.asname or "language"] = PlRef("pl")
            return
        if mod in PL_MODULES:
            module.is_pypto = True
            for a in stmt.names:
                g[a.asname or a.name] = PlRef(f"{PL_MODULES[mod]}.{a.name}")
            return
        if mod.startswith("pypto"):
            return
        sib = loader.sibling(module, mod, stmt) if mod else None
        for a in stmt.names:
            if a.name == "*":
                if sib is not None:
                    g.update({k: v for k, v in sib.globals.items() if not k.startswith("_")})
                continue
            if sib is not None and a.name in sib.globals:
                g[a.asname or a.name] = sib.globals[a.name]
            elif sib is not None:
                sub = loader.sibling(module, f"{mod}.{a.name}", stmt)
                g[a.asname or a.name] = (
                    ModuleVal(sub) if sub is not None else Unknown(f"'{a.name}' from {mod}")
                )
            else:
                g[a.asname or a.name] = Unknown(f"'{a.name}' from module '{mod}'")
    elif isinstance(stmt, ast.Assign):
        value = ev.eval(stmt.value)
        for target in stmt.targets:
            _bind(target, value, module, loader, stmt)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        _bind(stmt.target, ev.eval(stmt.value), module, loader, stmt)
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        old = ev.lookup(stmt.target.id, stmt)
        _bind(stmt.target, ev.binary(stmt.op, old, ev.eval(stmt.value), stmt), module, loader, stmt)
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        g[stmt.name] = function_val(stmt, module, ev)
    elif isinstance(stmt, ast.ClassDef):
        methods = tuple(
            (s.name, function_val(s, module, ev, owner=stmt.name))
            for s in stmt.body
            if isinstance(s, ast.FunctionDef)
        )
        g[stmt.name] = ClassVal(module, stmt, methods)
    elif isinstance(stmt, ast.If):
        if is_main_guard(stmt.test):
            return  # the harness: only its argparse options and rebindings matter
        truth = ev.truth(ev.eval(stmt.test))
        if truth is None:
            loader.notes.not_modelled(
                span_of(module.file, stmt.test),
                "a module-level branch on a value the reader cannot evaluate",
                "both branches were read; where they bind the same name, the later one is used",
            )
            _statements(stmt.body, module, loader, ev)
            _statements(stmt.orelse, module, loader, ev)
        else:
            _statements(stmt.body if truth else stmt.orelse, module, loader, ev)
    elif isinstance(stmt, ast.Try):
        _statements(stmt.body, module, loader, ev)
        _statements(stmt.orelse, module, loader, ev)
        _statements(stmt.finalbody, module, loader, ev)
    elif isinstance(stmt, ast.Assert):
        _assert(stmt, module, loader, ev)


def _bind(target: ast.expr, value: Val, module: ModuleInfo, loader: Loader, stmt: ast.stmt) -> None:
    if isinstance(target, ast.Name):
        name = target.id
        if isinstance(value, IntVal):
            expr = loader.params.define(module.prefix + name, value.expr, span_of(module.file, stmt))
            module.globals[name] = IntVal(expr)
        else:
            module.globals[name] = value
    elif isinstance(target, ast.Tuple | ast.List):
        items = value.items if isinstance(value, SeqVal) and len(value.items) == len(target.elts) else None
        for i, t in enumerate(target.elts):
            _bind(t, items[i] if items else UNKNOWN, module, loader, stmt)


def function_val(
    node: ast.FunctionDef, module: ModuleInfo, ev: ModuleEval, owner: str | None = None
) -> FuncVal:
    kind, deco = "plain", None
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        path = ev.eval(target)
        if not isinstance(path, PlRef) or path.path not in DECORATORS:
            continue
        kind, deco = DECORATORS[path.path], d
        if kind == "function":
            kind = "jit"  # pl.function defaults to Opaque: control plane
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg == "type":
                        ftype = ev.eval(kw.value)
                        if isinstance(ftype, PlRef):
                            kind = FUNCTION_TYPES.get(ftype.path.rsplit(".", 1)[-1], "jit")
        if (
            kind == "incore"
            and isinstance(d, ast.Call)
            and any(k.arg == "external_source" for k in d.keywords)
        ):
            kind = "extern"
        break
    if owner is None and kind == "function":
        kind = "jit"
    return FuncVal(module, node, kind, deco, owner)


def _assert(stmt: ast.Assert, module: ModuleInfo, loader: Loader, ev: ModuleEval) -> None:
    params = loader.params
    dom = domain_of_assert(stmt.test, lambda n: ev.static(ev.eval(n)), params)
    if dom is not None:
        name, values, rng = dom
        params.set_domain(name, values, rng)
        return
    cond = ev.eval(stmt.test)
    if not isinstance(cond, IntVal):
        return  # a non-integer assert (a dtype, a string) says nothing about the graph
    message = None
    if stmt.msg is not None:
        m = ev.static(ev.eval(stmt.msg))
        message = m if isinstance(m, str) else None
    params.assertions.append(ir.Assertion(cond.expr, message, span_of(module.file, stmt)))


def _argv_domains(module: ModuleInfo, loader: Loader, ev: ModuleEval) -> None:
    """Choices of argparse options tied to a module constant become its admissible set."""
    params = loader.params
    tied: dict[str, ArgOption] = {}
    for opt in module.argv.values():
        if isinstance(opt.default, ast.Name):
            v = module.globals.get(opt.default.id)
            if isinstance(v, IntVal) and isinstance(v.expr, Sym) and v.expr.name in params.params:
                tied[v.expr.name] = opt
    for name, dest in main_rebindings(module.tree).items():
        opt = module.argv.get(dest)
        if opt is None:
            continue
        full = module.prefix + name
        if full not in params.params and opt.default is not None:
            value = ev.eval(opt.default)
            if isinstance(value, IntVal):
                module.globals[name] = IntVal(params.define(full, value.expr, opt.span))
        tied.setdefault(full, opt)
    for name, opt in tied.items():
        if opt.choices is None:
            continue
        choices = ev.static(ev.eval(opt.choices))
        if isinstance(choices, tuple) and choices and all(isinstance(c, int) for c in choices):
            params.set_domain(name, sorted(set(choices)), None)
        elif isinstance(opt.choices, ast.Call) and dotted(opt.choices.func) == "range":
            rng = range_domain([ev.static(ev.eval(a)) for a in opt.choices.args])
            if rng is not None:
                params.set_domain(name, None, rng)
