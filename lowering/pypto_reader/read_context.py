"""The process one read of a PyPTO file pretends to be, shared by every module the read visits.

The reader interprets a model file as that file run as a script with no arguments and an
empty environment (``docs/pypto.md``, "Module-level code"): ``sys.argv`` is the script's name
alone, ``os.environ`` holds only what the file itself sets, ``sys.path`` only what it adds, so
every argv and environment lookup takes its default. A read also collects here what it finds
on the way: the calls to the pypto-lib golden harness's ``TensorSpec``/``ScalarSpec`` (name,
shape, dtype, output flag) when the harness itself is not in the model tree -- they bind the
dynamic axes of the entry's tensors -- and the programs the file defines anywhere.

The state lives in a context variable between :func:`begin_read` and :func:`end_read`, so one
read never sees what another set or recorded.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

from lowering.pypto_reader.values import ObjVal, PyVal, SeqVal, Val


class EnvironVal(Val):
    """``os.environ``: empty, except what the file itself sets (``setdefault``, item stores)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[str, Val] = {}


@dataclass
class HostState:
    """What one read of a file shares across its modules: the process the file believes it is."""

    argv: SeqVal
    environ: EnvironVal = field(default_factory=EnvironVal)
    path: SeqVal = field(default_factory=lambda: SeqVal([], "list"))
    records: list[ObjVal] = field(default_factory=list)  # harness TensorSpec/ScalarSpec calls
    programs: list[Val] = field(
        default_factory=list
    )  # ``@pl.program`` classes and ``@pl.jit`` functions defined anywhere


_HOST: ContextVar[HostState | None] = ContextVar("dslc_pypto_host", default=None)


def host() -> HostState:
    """The state of the current read (a default one when no read has begun)."""
    state = _HOST.get()
    if state is None:
        state = HostState(SeqVal([PyVal("model.py")], "list"))
        _HOST.set(state)
    return state


def begin_read(script: str) -> object:
    """A fresh host state for reading ``script``; returns the token for :func:`end_read`."""
    return _HOST.set(HostState(SeqVal([PyVal(script)], "list")))


def end_read(token: object) -> None:
    """Restore the host state :func:`begin_read` replaced."""
    _HOST.reset(token)  # type: ignore[arg-type]
