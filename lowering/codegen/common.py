"""What every code generator shares: the jinja2 templates of a target and the identifier rule.

Each target has a folder under ``codegen_templates/``; its environment renders without
autoescaping (the output is code, not HTML) and fails on an undefined name. The content hash
that keys a cache of generated modules covers the inputs and the target's templates, so
editing a template invalidates what was generated with it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parents[2] / "codegen_templates"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UnsafeName(ValueError):
    """A name that must not reach generated code (the front end never produces one)."""


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


def template_hash(target: str, *parts: str) -> str:
    """sha256 of ``parts`` and of the target's templates (in name order)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\0")
    for template in sorted((TEMPLATES / target).glob("*.j2")):
        h.update(template.read_bytes())
    return h.hexdigest()
