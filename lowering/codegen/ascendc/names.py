"""Source names -> C++ identifiers, injectively, so no source name can inject code or collide.

Every identifier the AscendC emitter writes for a source name is ``prefix + encode(name)``:

- letters other than ``z`` and digits are kept;
- ``z`` is written ``zz``;
- ``_`` is kept, except at the start of the name or right after another ``_``, where it is
  written ``zu`` (so the output never holds ``__`` and never starts with ``_``: C++ reserves
  both);
- ``.`` is ``zd``, ``[`` is ``zb``, ``]`` is ``ze``; any other character is ``zx`` and its code
  point in six hex digits.

A ``z`` in the output is always followed by one of ``z u d b e x``, so reading the output
left to right recovers the name: the encoding is injective (``stage.tmp`` -> ``stagezdtmp``,
``stage_tmp`` -> ``stage_tmp``, ``stage__tmp`` -> ``stage_zutmp``). Each kind of name has its
own prefix (``t_`` tensors, ``p_`` kernel parameters, ``v_`` locals and loop variables, ``s_``
runtime scalars), and the prefixes end in ``_`` followed by a letter or digit, so two kinds
never meet either. Kernel symbols are ``encode(layer) + "zk" + index + "_" + encode(task)``:
``zk`` never occurs in an encoding, so the first one ends the layer's name. Generated helper
names (``block``, ``pipe``, ``inQueue``, ...) have no ``_`` after a one-letter prefix, so they
cannot equal an encoded name either.
"""

from __future__ import annotations

_KEEP = frozenset("abcdefghijklmnopqrstuvwxyABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ESCAPES = {"z": "zz", ".": "zd", "[": "zb", "]": "ze"}


def encode(name: str) -> str:
    """The injective, reserved-word-free spelling of ``name`` (see the module doc)."""
    out: list[str] = []
    previous = ""
    for ch in name:
        if ch in _KEEP:
            out.append(ch)
        elif ch == "_":
            out.append("zu" if previous in ("", "_") else "_")
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        else:
            out.append(f"zx{ord(ch):06x}")
        previous = ch
    return "".join(out)


def decode(text: str) -> str:
    """The inverse of ``encode`` (used by the tests to prove injectivity)."""
    out: list[str] = []
    i = 0
    back = {"z": "z", "u": "_", "d": ".", "b": "[", "e": "]"}
    while i < len(text):
        ch = text[i]
        if ch != "z":
            out.append(ch)
            i += 1
            continue
        code = text[i + 1]
        if code == "x":
            out.append(chr(int(text[i + 2 : i + 8], 16)))
            i += 8
        else:
            out.append(back[code])
            i += 2
    return "".join(out)


def tensor(name: str) -> str:
    """The ``GlobalTensor`` of a tensor."""
    return "t_" + encode(name)


def param(name: str) -> str:
    """The kernel parameter (``GM_ADDR``) carrying a tensor's base address."""
    return "p_" + encode(name)


def local(name: str) -> str:
    """A local value or loop variable of a task body."""
    return "v_" + encode(name)


def scalar(name: str) -> str:
    """A runtime scalar argument (``epoch``, ``num_tokens``)."""
    return "s_" + encode(name)


def kernel(layer: str, index: int, task: str) -> str:
    """The ``extern "C"`` symbol of task number ``index`` of ``layer``."""
    return f"{encode(layer)}zk{index}_{encode(task)}"
