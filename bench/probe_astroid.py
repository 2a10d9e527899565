"""astroid against the reader's own interpreter, on what model files compute at import time.

    pip install astroid
    python bench/probe_astroid.py ../shared/corpus/pypto-lib/models

For every module-level ``UPPER_CASE = ...`` assignment of every file of the tree, does each
engine find one integer value for it? astroid infers the assigned expression
(``node.value.infer()``, following imports from the file's folder); the reader evaluates the
module with ``lowering.pypto_reader.modules.Loader`` (never importing or running it). The
figures (constants with one integer value, CPU seconds) are recorded in ``docs/pypto.md``
("Why not astroid"). Integer-valued is the right denominator only approximately: some
constants are floats or strings, which neither engine should count.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lowering.pypto_reader import read_context  # noqa: E402
from lowering.pypto_reader.constants import Params  # noqa: E402
from lowering.pypto_reader.modules import Loader  # noqa: E402
from lowering.pypto_reader.notes import Notes  # noqa: E402
from lowering.pypto_reader.values import IntVal  # noqa: E402
from lowering.symbolic import EvalError, evaluate  # noqa: E402


def upper_assignments(tree: ast.Module) -> list[str]:
    return [
        s.targets[0].id
        for s in tree.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id.isupper()
    ]


def with_reader(files: list[Path]) -> tuple[int, int, float]:
    found = total = 0
    t0 = time.process_time()
    for f in files:
        text = f.read_text(encoding="utf-8")
        names = upper_assignments(ast.parse(text))
        total += len(names)
        token = read_context.begin_read(str(f))
        try:
            params = Params()
            module = Loader(Notes(), params).load_text(f, text)
            env = params.env()
            for n in names:
                v = module.globals.get(n)
                if isinstance(v, IntVal):
                    try:
                        evaluate(v.expr, env)
                        found += 1
                    except EvalError:
                        pass
        except (SyntaxError, ValueError):
            pass
        finally:
            read_context.end_read(token)
    return found, total, time.process_time() - t0


def with_astroid(files: list[Path]) -> tuple[int, int, float] | None:
    try:
        from astroid import MANAGER, nodes
    except ImportError:
        return None
    found = total = 0
    t0 = time.process_time()
    for f in files:
        sys.path.insert(0, str(f.parent))
        MANAGER.astroid_cache.clear()
        try:
            module = MANAGER.ast_from_file(str(f), modname=f.stem)
        except Exception:  # noqa: BLE001 - a file astroid cannot parse has no inferred constants
            sys.path.pop(0)
            continue
        for node in module.body:
            if not (
                isinstance(node, nodes.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], nodes.AssignName)
                and node.targets[0].name.isupper()
            ):
                continue
            total += 1
            try:
                values = list(node.value.infer())
            except Exception:  # noqa: BLE001 - astroid's own inference errors count as not found
                continue
            ints = {v.value for v in values if isinstance(v, nodes.Const) and isinstance(v.value, int)}
            if len(values) == 1 and len(ints) == 1:
                found += 1
        sys.path.pop(0)
    return found, total, time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    args = ap.parse_args()
    files = sorted(args.tree.rglob("*.py"))
    r = with_reader(files)
    print(
        f"reader : {r[0]} of {r[1]} module constants with one integer value, {r[2]:.1f} s CPU ({len(files)} files)"
    )
    a = with_astroid(files)
    if a is None:
        print("astroid: not installed (pip install astroid)")
    else:
        print(f"astroid: {a[0]} of {a[1]} module constants with one integer value, {a[2]:.1f} s CPU")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
