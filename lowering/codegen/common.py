"""What every code generator shares: the jinja2 templates of a target, the errors for what a
target cannot express or got wrong, and the key of a cache of generated modules.

Each target has a folder under ``codegen_templates/``; its environment renders without
autoescaping (the output is code, not HTML) and fails on an undefined name. The content hash
that keys a cache of generated modules covers the inputs and the code that generates them --
the front end, the lowering, the targets, their templates and the device facts they read --
so editing any of it invalidates what was generated before. Names are
``lowering.codegen.names``; checks of generated Python are ``lowering.codegen.python_text``.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).resolve().parents[2] / "codegen_templates"


class TargetLimit(ValueError):
    """The layer uses something a target cannot express (a strided store PyPTO lacks, loops
    nested deeper than CPython compiles). ``span`` is the construct in the source; the driver
    reports it as a located E110 diagnostic naming the target and its limit."""

    def __init__(self, message: str, span=None, target: str = ""):
        super().__init__(message)
        self.span = span
        self.target = target


class GeneratedCodeError(RuntimeError):
    """A generated module did not compile: a bug in a target, never the user's mistake."""


def template_environment(target: str) -> jinja2.Environment:
    """The jinja2 environment of the templates in ``codegen_templates/<target>`` (jinja2 is
    imported here: ``dslc check`` needs this module's errors, not its templates)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / target)),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
    )


REPOSITORY = Path(__file__).resolve().parents[2]

#: What generates code: the language, the lowering, every target's driver and templates, and
#: the device facts the front end and the targets read (``runtime.device``: the lint's presets,
#: the AscendC core counts). Patterns are ``Path.glob`` patterns below each root. A cache key
#: covers all of it (``generator_hash``), so an edited compiler never serves a module the old
#: one wrote; tests/runtime/test_kernel_cache.py checks that every module the front end and the
#: targets import is listed. The rest of ``runtime`` is not part of the key: a generated module
#: imports it (``runtime.tileops``, ``runtime.program``) when it is loaded, so a cached module
#: runs on the current runtime exactly as a freshly generated one would.
GENERATOR_SOURCES = (
    (REPOSITORY / "dsl", ("**/*.py", "**/*.lark")),
    (REPOSITORY / "lowering", ("**/*.py", "**/*.h")),
    (TEMPLATES, ("**/*",)),
    (REPOSITORY / "runtime", ("__init__.py", "device.py", "cache_dir.py")),
)


def generator_files() -> list[tuple[Path, Path]]:
    """(root, file) of every file of ``GENERATOR_SOURCES``, sorted, without ``__pycache__``."""
    found = []
    for root, patterns in GENERATOR_SOURCES:
        files = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
        found.extend((root, p) for p in sorted(files) if "__pycache__" not in p.relative_to(root).parts)
    return found


@functools.cache
def compiler_fingerprint() -> str:
    """sha256 over the path and bytes of every file of ``GENERATOR_SOURCES`` (read once per
    process: a few hundred small files)."""
    h = hashlib.sha256()
    for root, path in generator_files():
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
