"""Stand-ins for ``pypto`` and ``torch`` (neither is installed here), so that emitted PyPTO can be
imported and its host functions run (unique basename: pytest prepend mode)."""

from __future__ import annotations

import sys
import types

import numpy as np


class Anything:
    """Stands for any ``pl``/``pld`` attribute: subscriptable, callable, a decorator."""

    def __getattr__(self, name):
        return Anything()

    def __getitem__(self, key):
        return Anything()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # a decorator: keep the function itself
        return Anything()


class Window:
    def __init__(self, buf, shape, dtype=None):
        self.buf = buf


class Tensor:
    """A torch tensor stand-in over a NumPy array (``x[r]``, ``.cpu().numpy()``, ``copy_``)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __getitem__(self, r):
        return Tensor(self.array[r])

    def cpu(self):
        return self

    def numpy(self):
        return self.array

    def copy_(self, other):
        self.array[...] = other


def install(monkeypatch) -> None:
    """Put the stand-ins into ``sys.modules`` for one test (``monkeypatch`` undoes it)."""
    pl = Anything()
    pld = types.SimpleNamespace(
        alloc_window_buffer=lambda shape, dtype=None: ("buffer", tuple(shape)), window=Window
    )
    language = types.ModuleType("pypto.language")
    language.__getattr__ = lambda name: getattr(pl, name)  # type: ignore[attr-defined]
    language.range = range  # type: ignore[attr-defined]
    distributed = types.ModuleType("pypto.language.distributed")
    distributed.__dict__.update(vars(pld))
    distributed.__getattr__ = lambda name: Anything()  # type: ignore[attr-defined]
    language.distributed = distributed  # type: ignore[attr-defined]
    pypto = types.ModuleType("pypto")
    pypto.language = language  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    torch.from_numpy = lambda a: a  # type: ignore[attr-defined]
    torch.__getattr__ = lambda name: f"torch.{name}"  # type: ignore[attr-defined]
    for name, module in {
        "pypto": pypto,
        "pypto.language": language,
        "pypto.language.distributed": distributed,
        "torch": torch,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
