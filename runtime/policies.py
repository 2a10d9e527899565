"""Scheduling policies: the seeded choices the real runtime leaves to timing.

The scheduler (``runtime.scheduler``) computes what is *legal* - which core slots a block may
take, which blocks are runnable at the same instant, which consumers a completion releases - and
a policy only picks among legal options.  Every source of randomness is one ``random.Random``
seeded by the caller, so a (program, policy, seed) triple always yields the same schedule.

* ``fifo``: queue order, the lowest-numbered free core, event ties in arrival order.  This is
  the idealised single-threaded scheduler and the reference for makespans.
* ``random``: a uniform choice among legal placements, released consumers in random order, and
  random order among blocks whose code runs at the same instant (so FP atomics land in
  different orders on different seeds).
* ``adversarial``: hunts for the D1/D2 deadlocks of docs/runtime-semantics.md §9.  It

  - also allows the *racy* placements of the multi-threaded scheduler: a scheduler thread
    whose own clusters have no idle core of a shape runs its PENDING stage even while another
    thread has an idle core (the ``has_idle_in_other_threads`` check is an advisory snapshot,
    docs/runtime-semantics.md §5);
  - scores each legal placement and, most of the time, picks uniformly among the worst ones:
    a notifier block parked in the pending slot of a core whose running block is spinning,
    gated, at a barrier, or belongs to a waiting task is worst; a waiter grabbing an idle core
    is next; any other parking after that;
  - releases waiter tasks before notifier tasks and runs waiter blocks before notifier blocks
    at equal times;
  - delays notifier blocks by a random 0..cost extra time units.

  Choices stay random within a badness class so different seeds explore different schedules.

Roles (waiter/notifier) come from ``TaskSpec`` hints, from a scan of the kernel's bytecode for
``.wait``/``.notify`` attribute uses, and from what blocks actually do at run time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

WAITER = 1
NOTIFIER = 2

POLICIES = ("fifo", "random", "adversarial")


class Policy:
    """Base policy (``fifo``): deterministic, lowest index first, no reordering."""

    name = "fifo"
    #: May the PENDING stage of one scheduler thread run while another thread has idle cores?
    racy_advisory = False

    def __init__(self, seed: int, roles: list[int]) -> None:
        self.rng = random.Random(seed)
        self.roles = roles

    def event_key(self, spec_index: int) -> float:
        """Tie-break among events at the same time (lower runs first)."""
        return 0.0

    def order_release(self, items: list[Any], spec_index_of: Any) -> list[Any]:
        """Order in which simultaneously released tasks enter their queues."""
        return items

    def choose(self, options: Sequence[Any], role: int, badness: Any) -> Any:
        """Pick one placement among legal ``options`` (sorted by core index)."""
        return options[0]

    def choose_cohort(self, options: Sequence[Any], n: int) -> list[Any]:
        """Pick ``n`` of the idle cores/clusters for an all-or-nothing cohort."""
        return list(options[:n])

    def extra_delay(self, spec_index: int, cost: int) -> int:
        """Extra time a block takes beyond its cost (only the adversary slows notifiers)."""
        return 0


class RandomPolicy(Policy):
    """Uniform random choices among legal options; random tie order of same-time events."""

    name = "random"

    def event_key(self, spec_index: int) -> float:
        return self.rng.random()

    def order_release(self, items: list[Any], spec_index_of: Any) -> list[Any]:
        if len(items) > 1:
            items = list(items)
            self.rng.shuffle(items)
        return items

    def choose(self, options: Sequence[Any], role: int, badness: Any) -> Any:
        return options[self.rng.randrange(len(options))] if len(options) > 1 else options[0]

    def choose_cohort(self, options: Sequence[Any], n: int) -> list[Any]:
        picked = self.rng.sample(range(len(options)), n)
        return [options[i] for i in sorted(picked)]


class AdversarialPolicy(RandomPolicy):
    """Prefers schedules that park notifiers behind spinners (see module docstring)."""

    name = "adversarial"
    racy_advisory = True
    #: Probability of picking among the worst options rather than among all legal ones.
    greed = 0.8

    def _class(self, spec_index: int) -> int:
        role = self.roles[spec_index]
        if role == WAITER:
            return 0
        if role & NOTIFIER and not role & WAITER:
            return 2
        return 1

    def event_key(self, spec_index: int) -> float:
        return self._class(spec_index) + self.rng.random()

    def order_release(self, items: list[Any], spec_index_of: Any) -> list[Any]:
        if len(items) > 1:
            keyed = [(self._class(spec_index_of(it)), self.rng.random(), i) for i, it in enumerate(items)]
            keyed.sort()
            items = [items[i] for _, _, i in keyed]
        return items

    def choose(self, options: Sequence[Any], role: int, badness: Any) -> Any:
        if len(options) == 1:
            return options[0]
        if self.rng.random() < self.greed:
            scores = [badness(o, role) for o in options]
            worst = max(scores)
            options = [o for o, s in zip(options, scores, strict=True) if s == worst]
        return options[self.rng.randrange(len(options))]

    def extra_delay(self, spec_index: int, cost: int) -> int:
        if self.roles[spec_index] & NOTIFIER and cost > 0:
            return self.rng.randint(0, cost)
        return 0


def make_policy(name: str, seed: int, roles: list[int]) -> Policy:
    """Instantiate policy ``name`` ("fifo" | "random" | "adversarial")."""
    classes = {"fifo": Policy, "random": RandomPolicy, "adversarial": AdversarialPolicy}
    if name not in classes:
        raise ValueError(f"unknown policy {name!r}; expected one of {POLICIES}")
    return classes[name](seed, roles)


def _code_names(obj: Any, depth: int = 0) -> set[str]:
    """Attribute/global names used by a callable's code, including nested functions."""
    func = getattr(obj, "func", obj)  # functools.partial
    code = getattr(func, "__code__", None)
    if code is None:
        call = type(func).__call__ if callable(func) else None
        code = getattr(call, "__code__", None)
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    return names


def static_role(kernel: Any, notifier_hint: bool, waiter_hint: bool) -> int:
    """Role bits of a task from its hints and a scan of its kernel's code for ``.notify``/``.wait``."""
    names = _code_names(kernel)
    role = 0
    if waiter_hint or "wait" in names:
        role |= WAITER
    if notifier_hint or "notify" in names:
        role |= NOTIFIER
    return role
