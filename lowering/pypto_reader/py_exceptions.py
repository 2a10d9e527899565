"""Python exceptions in the code being read: raising them, naming them, catching them.

Code the reader interprets raises (``raise``, ``sys.exit``, a failed ``assert``) and catches
(``try``/``except``) as Python does. An exception is an object tagged with its class name;
:class:`PyRaise` carries it through the interpreted frames, and an ``except`` clause matches
it by name -- and by the names of its bases, for classes of the file -- following the
hierarchy of Python's builtin exceptions.
"""

from __future__ import annotations

from lowering.pypto_reader.builtin_calls import Fn
from lowering.pypto_reader.values import BuiltinVal, ClassVal, ObjVal, PyVal, SeqVal, Val
from lowering.source import Span


class PyRaise(Exception):  # noqa: N818 - it is Python's ``raise``, not an error of the reader
    """A Python exception raised by the code being read (``raise``, ``sys.exit``, a failed
    ``assert``): it unwinds the interpreted frames to a matching ``except``."""

    def __init__(self, value: Val, span: Span | None = None):
        super().__init__(exception_name(value) or "exception")
        self.value = value
        self.span = span  # the statement that raised, where the reader knows it


def raised(name: str, span: Span | None = None) -> PyRaise:
    """The builtin exception ``name`` as the code being read raises it (``range(0, n, 0)``)."""
    return PyRaise(ObjVal(None, {"__exception__": PyVal(name)}), span)


# Exceptions: calling one makes an exception object; ``raise`` and ``except`` match them by
# name (and by the names of their bases, for classes of the file).
EXCEPTIONS = (
    "BaseException Exception ArithmeticError LookupError ValueError TypeError KeyError IndexError "
    "RuntimeError AssertionError NotImplementedError SystemExit ImportError ModuleNotFoundError "
    "AttributeError ZeroDivisionError OSError FileNotFoundError StopIteration KeyboardInterrupt "
    "OverflowError NameError UnicodeDecodeError RecursionError"
).split()


def _exception(name: str) -> Fn:
    def make(ev, args, kwargs, node):
        return ObjVal(None, {"__exception__": PyVal(name), "args": SeqVal(args)})

    return make


#: The builtin exception classes, by name.
EXCEPTION_CLASSES: dict[str, BuiltinVal] = {name: BuiltinVal(name, _exception(name)) for name in EXCEPTIONS}


def exception_name(v: Val) -> str | None:
    """The class name of a raised value (an exception object, or a class raised bare)."""
    if isinstance(v, ObjVal):
        tag = v.attrs.get("__exception__")
        if isinstance(tag, PyVal):
            return str(tag.value)
        if v.cls is not None:
            return v.cls.name
    if isinstance(v, BuiltinVal) and v.name in EXCEPTIONS:
        return v.name
    if isinstance(v, ClassVal):
        return v.name
    return None


def exception_matches(raised: Val, handler: Val | None) -> bool:
    """Does an ``except handler:`` clause catch ``raised``? Unknown handlers catch all."""
    if handler is None:
        return True
    if isinstance(handler, SeqVal):
        return any(exception_matches(raised, h) for h in handler.items)
    name = exception_name(raised)
    hname = handler.name if isinstance(handler, BuiltinVal | ClassVal) else None
    if hname is None or name is None:
        return True
    if hname == name or hname == "BaseException":
        return True
    if hname == "Exception":
        return name not in ("SystemExit", "KeyboardInterrupt")
    if isinstance(raised, ObjVal) and raised.cls is not None:
        stack = list(raised.cls.bases)
        while stack:
            base = stack.pop()
            if base.name == hname:
                return True
            stack.extend(base.bases)
    return {"LookupError": ("KeyError", "IndexError"), "ArithmeticError": ("ZeroDivisionError", "OverflowError"),
            "ImportError": ("ModuleNotFoundError",), "OSError": ("FileNotFoundError",)}.get(hname, ()) .__contains__(name)  # fmt: skip
