"""Explicit-state model checking of the schedules the runtime model admits (``dslc verify``).

``explore(program, inputs, Config(...))`` searches every schedule of the untimed engine - the
same engine, kernels and memory ``dslc run`` uses - with state hashing, sleep sets, persistent
sets and core symmetry, and returns the verdict with the shortest counterexample found;
``replay_witness`` tells a counterexample step by step; ``estimate_naive`` estimates the size of
the unreduced search.  See ``docs/verify.md``.
"""

from runtime.verify.estimate import Estimate, estimate_naive
from runtime.verify.explorer import explore
from runtime.verify.space import Config
from runtime.verify.verdict import KINDS, Result, Stats, Violation
from runtime.verify.witness import Step, Witness, replay_witness

__all__ = [
    "KINDS",
    "Config",
    "Estimate",
    "Result",
    "Stats",
    "Step",
    "Violation",
    "Witness",
    "estimate_naive",
    "explore",
    "replay_witness",
]
