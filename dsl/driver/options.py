"""The options ``dslc run`` and ``dslc verify`` share: argparse types that say what was wrong
with a value, and the options of a request (ranks and runtime scalars).

A value argparse can judge alone (an integer out of range, a ``--cores`` spec) is refused by
its type; one that needs the layer (``--scalar NAME=VALUE`` naming a declared scalar) is
checked once the layer is read, by :func:`scalar_values` and :func:`round_scalar_names`.
"""

from __future__ import annotations

import argparse
import math

from dsl.driver.session import UsageError


def cores(text: str) -> str | tuple[int, int]:
    if text in ("sim", "a2a3", "a5"):
        return text
    aic, sep, aiv = text.partition(",")
    try:
        cores = (int(aic), int(aiv) if sep else 2 * int(aic))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--cores expects sim, a2a3, a5 or AIC[,AIV], got {text!r}"
        ) from None
    if cores[0] < 1 or cores[1] != 2 * cores[0]:
        raise argparse.ArgumentTypeError(
            f"--cores {text}: a cluster is 1 AIC + 2 AIV, so AIV must be 2 x AIC and AIC >= 1"
        )
    return cores


def integer(option: str, low: int, high: int | None = None):
    """An argparse type: an integer in ``low..high``."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} expects an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{option} {text}: must be {bound}")
        return value

    return parse


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout expects a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"--timeout {text}: must be a finite number of seconds > 0")
    return value


def output_file(option: str):
    """An argparse type: the name of a file to write (checked when it is written)."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{option} expects a file name, got an empty one")
        return text

    return parse


def add_request_options(parser: argparse.ArgumentParser, scalar_help: str) -> None:
    """``--ranks``, ``--scalar`` and ``--round-scalar``: what a request sets besides its inputs."""
    parser.add_argument(
        "--ranks", type=integer("--ranks", 1, 4096), help="EP ranks (default: the layer's `ranks`)"
    )
    parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE", help=scalar_help)
    parser.add_argument(
        "--round-scalar",
        action="append",
        default=[],
        metavar="NAME",
        help="a runtime scalar that counts the rounds like epoch (round + 1), e.g. a dispatch counter",
    )


def round_scalar_names(options: list[str], layer, scalars: dict[str, int]) -> tuple[str, ...]:
    """``epoch`` plus the ``--round-scalar`` names: declared, not also given a value."""
    declared = [n for n in layer.graph.scalars if n != "epoch"]
    for name in options:
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise UsageError(
                f"--round-scalar {name}: layer '{layer.graph.name}' has no runtime scalar {name!r} ({known})"
            )
        if name in scalars:
            raise UsageError(
                f"--round-scalar {name}: it is round + 1 in every round; drop --scalar {name}=..."
            )
    return ("epoch", *dict.fromkeys(options))


def scalar_values(options: list[str], layer) -> dict[str, int]:
    """``--scalar NAME=VALUE`` options: declared runtime scalars with integer values."""
    declared = [n for n in layer.graph.scalars if n != "epoch"]
    out: dict[str, int] = {}
    for text in options:
        name, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not name.isidentifier():
            raise UsageError(f"--scalar expects NAME=VALUE, got {text!r}")
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise UsageError(
                f"--scalar {name}: layer '{layer.graph.name}' has no runtime scalar {name!r} ({known})"
            )
        try:
            out[name] = int(value, 0)
        except ValueError:
            raise UsageError(f"--scalar {name}: {value!r} is not an integer") from None
    return out
