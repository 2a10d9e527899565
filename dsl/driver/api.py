"""The Python API: ``dsl.load(path, **params).run(inputs, ranks=, seed=, policy=, rounds=)``.

``load`` compiles a layer, renders its NumPy kernels into the cache (keyed by a content
hash of source, parameter values and dslc version) and imports them; ``run`` executes them
on the simulator and returns the outputs with a run report. ``validate`` compares against
the layer's golden (``golden "x_golden.py"`` in the source), a module beside the layer whose
contract -- ``make_inputs``, ``golden``, ``TOLERANCES`` and the default tolerance -- is
``docs/golden.md`` (loaded and checked by ``dsl.driver.golden``). Runtime scalars (``scalar
num_tokens: i32``) are passed in the inputs like tensors; ``run`` checks the layer's
``guard``s on them. The generated kernels are cached as described in ``docs/simulator.md``
("The kernel cache"); the simulator refuses a layer whose tensors exceed
``max_simulated_bytes()`` (E108) before allocating anything.

The guards run in the generated module (``check_request(scalars) -> list[str]``, each ranged
runtime scalar within its range, then every ``guard`` in source order, derived scalars and
``emitted(T)`` computed from the runtime scalars): a request it refuses raises
:class:`RequestRefused` (a ValueError) before anything is simulated, naming the guard and the
values (``dslc run`` prints it and exits 2).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsl.codes import diag
from dsl.driver import golden
from dsl.frontend import compile_text, read_source
from dsl.version import __version__
from lowering.codegen.common import TargetLimit
from lowering.codegen.numpy.emit import content_hash, render_numpy
from lowering.ir import Graph
from lowering.source import CompileError, Span
from runtime.decisions import Decision
from runtime.loader import cached_module_path, load_module, load_program
from runtime.program import Program, numpy_dtype
from runtime.simulator import RunResult, simulate


@dataclass
class OutputCheck:
    name: str
    rank: int
    passed: bool
    max_abs_err: float
    max_rel_err: float
    frac_out_of_tol: float
    message: str


@dataclass
class Validation:
    checks: list[OutputCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every check passed, and there is one: a validation that compared nothing has not
        passed (``validate`` refuses a golden that returns no output at all, E109)."""
        return bool(self.checks) and all(c.passed for c in self.checks)


class RequestRefused(ValueError):
    """The host refuses a request: a runtime scalar outside its range or a ``guard`` that is
    false. ``reasons`` are the generated ``check_request``'s messages, in guard order."""

    def __init__(self, layer: str, scalars: dict[str, int], reasons: list[str]):
        self.layer, self.scalars, self.reasons = layer, dict(scalars), list(reasons)
        super().__init__(f"layer {layer!r} refuses the request: " + "; ".join(reasons))


@dataclass
class CompiledLayer:
    graph: Graph
    source: Path
    module_path: Path
    program: Program

    @property
    def ranks(self) -> int:
        return self.graph.nranks

    @property
    def params(self) -> dict[str, int]:
        return {p.name: p.value for p in self.graph.params.values()}

    def check_request(self, scalars: dict[str, int]) -> list[str]:
        """The generated module's host checks on one request: why it is refused (empty: accepted)."""
        return list(load_module(self.module_path).check_request(dict(scalars)))

    def golden_path(self) -> Path | None:
        return None if self.graph.golden is None else (self.source.parent / self.graph.golden).resolve()

    def golden_module(self) -> ModuleType | None:
        path = self.golden_path()
        if path is None:
            return None
        if not path.is_file():
            span = self.graph.golden_span or Span.whole_file(str(self.source))
            raise CompileError([diag("E102", span, f"golden module {path} not found")])
        return golden.load(path)

    def declared(self) -> dict[str, golden.Declared]:
        """The tensors as a golden must give or return them (DSL dtypes, concrete shapes)."""
        dtypes = {n: t.dtype for n, t in self.graph.tensors.items()}
        return {
            t.name: golden.Declared(t.name, t.kind, dtypes.get(t.name, t.dtype), tuple(t.shape))
            for t in self.program.tensors
        }

    def memory_needed(self, ranks: int | None = None) -> int:
        """Bytes the simulator allocates for the tensors of every rank."""
        ranks = ranks or self.ranks
        return ranks * sum(math.prod(t.shape) * numpy_dtype(t.dtype).itemsize for t in self.program.tensors)

    def check_memory(self, ranks: int | None = None) -> None:
        """Refuse (E108 at the largest tensor) a run whose tensors exceed ``max_simulated_bytes()``."""
        ranks = ranks or self.ranks
        need, limit = self.memory_needed(ranks), max_simulated_bytes()
        if need > limit:
            raise self._memory_error(
                ranks,
                f"over the limit of {_bytes(limit)}",
                f"simulate at smaller sizes (--set), or raise the limit with {MEMORY_ENV}=BYTES",
            )

    def out_of_memory(self, ranks: int | None = None) -> CompileError:
        """E108 for a run under the limit that this machine could not allocate (a MemoryError)."""
        return self._memory_error(
            ranks or self.ranks,
            f"under the limit of {_bytes(max_simulated_bytes())}, but this machine could not allocate them",
            f"simulate at smaller sizes (--set), or set {MEMORY_ENV}=BYTES to what the machine has free",
        )

    def _memory_error(self, ranks: int, why: str, hint: str) -> CompileError:
        big = max(self.program.tensors, key=lambda t: math.prod(t.shape) * numpy_dtype(t.dtype).itemsize)
        size = math.prod(big.shape) * numpy_dtype(big.dtype).itemsize
        decl = self.graph.tensors.get(big.name)
        span = decl.span if decl is not None else self.graph.span
        message = (
            f"simulating this layer needs {_bytes(self.memory_needed(ranks))} for its tensors on {ranks} "
            f"rank(s), {why}; the largest is {big.name} {tuple(big.shape)} ({_bytes(size)} per rank)"
        )
        return CompileError([diag("E108", span, message, hint=hint)])

    def make_inputs(self, seed: int = 0, ranks: int | None = None) -> list[dict[str, np.ndarray]]:
        """Inputs from the golden's ``make_inputs``, else seeded normal floats / zero integers
        (drawn in the tensor's own dtype: no float64 copy of a large input is ever built)."""
        ranks = ranks or self.ranks
        self.check_memory(ranks)
        module = self.golden_module()
        if module is not None and hasattr(module, "make_inputs"):
            path = self.golden_path()
            made = golden.call(path, "make_inputs", module.make_inputs, self.params, seed, ranks)
            given = golden.per_rank(path, "make_inputs", made, ranks)
            golden.check_inputs(path, given, self.declared(), set(self.program.scalars) - {"epoch"})
            return given
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(ranks):
            per = {}
            for t in self.program.tensors:
                if t.kind in ("input", "inout"):
                    dt = numpy_dtype(t.dtype)
                    if np.issubdtype(dt, np.floating):
                        draw = dt if dt in (np.float32, np.float64) else np.float32
                        per[t.name] = rng.standard_normal(t.shape, dtype=draw).astype(dt, copy=False)
                    else:
                        per[t.name] = np.zeros(t.shape, dt)
            out.append(per)
        return out

    def run(
        self,
        inputs: dict | list[dict] | None = None,
        *,
        ranks: int | None = None,
        seed: int = 0,
        policy: str = "fifo",
        rounds: int = 1,
        cores: tuple[int, int] | str = "sim",
        timeout: float = 60.0,
        trace: str | Path | None = None,
        progress: bool = False,
        raise_on_deadlock: bool = True,
        replay: list[Decision] | None = None,
        sched_threads: int | None = None,
        round_scalars: tuple[str, ...] = ("epoch",),
    ) -> RunResult:
        """Simulate; ``replay`` runs the recorded schedule (``dslc verify`` counterexamples,
        ``runtime.decisions``) instead of the seeded ``policy``."""
        ranks = ranks or self.ranks
        if inputs is None:
            inputs = self.make_inputs(seed, ranks)
        self.check_memory(ranks)
        per_rank, scalars = self.split_scalars(_per_rank(inputs, ranks), round_scalars)
        return simulate(
            self.program,
            per_rank,
            ranks=ranks,
            scalars=scalars,
            cores=cores,
            policy=policy,
            seed=seed,
            rounds=rounds,
            timeout=timeout,
            trace=trace,
            progress=progress,
            raise_on_deadlock=raise_on_deadlock,
            replay=replay,
            sched_threads=sched_threads,
            round_scalars=round_scalars,
        )

    def split_scalars(
        self, per_rank: list[dict], round_scalars: tuple[str, ...] = ()
    ) -> tuple[list[dict], dict[str, int]]:
        """Take the runtime scalars (``scalar num_tokens: i32``) out of the inputs and check the
        layer's host ``guard``s on them (the generated ``check_request``): a request it refuses
        raises :class:`RequestRefused`, as the host refuses it before any kernel runs. Scalars
        are per request, the same on every rank. ``round_scalars`` (besides ``epoch``) are set
        by the simulator to round + 1: they are checked at 1 and not returned."""
        names = set(self.program.scalars) - {"epoch"}
        scalars: dict[str, int] = {}
        for rank, given in enumerate(per_rank):
            for name in names & set(given):
                value = int(np.asarray(given[name]).reshape(()))
                if scalars.setdefault(name, value) != value:
                    raise ValueError(f"runtime scalar {name!r} differs between ranks 0 and {rank}")
        per_round = {n: 1 for n in round_scalars if n in names}
        reasons = self.check_request({**scalars, **per_round})
        if reasons:
            raise RequestRefused(self.graph.name, scalars, reasons)
        request = {k: v for k, v in scalars.items() if k not in per_round}
        return [{k: v for k, v in d.items() if k not in names} for d in per_rank], request

    def validate(self, inputs: list[dict], result: RunResult) -> Validation | None:
        module = self.golden_module()
        if module is None:
            return None
        path = self.golden_path()
        made = golden.call(path, "golden", module.golden, inputs, self.params)
        expected = golden.per_rank(path, "golden", made, len(inputs))
        golden.check_outputs(path, expected, result.outputs, self.declared())
        tolerances: Any = getattr(module, "TOLERANCES", {})
        out = Validation()
        for rank, (want, got) in enumerate(zip(expected, result.outputs, strict=False)):
            for name, value in want.items():
                spec = golden.tolerance(path, tolerances, name)
                context = {"inputs": inputs[rank], "outputs": got, "golden": want, "params": self.params}
                c = golden.compare_output(path, name, spec, np.asarray(got[name]), np.asarray(value), context)
                out.checks.append(
                    OutputCheck(
                        name, rank, c.passed, c.max_abs_err, c.max_rel_err, c.frac_out_of_tol, c.message
                    )
                )
        return out


def _per_rank(value: dict | list, ranks: int) -> list[dict]:
    if isinstance(value, dict):
        return [value] + [dict(value) for _ in range(ranks - 1)]
    return list(value)


MEMORY_ENV = "DSLC_MAX_SIM_BYTES"
DEFAULT_MAX_SIM_BYTES = 8 << 30


def max_simulated_bytes() -> int:
    """The simulator's memory limit for a layer's tensors (all ranks): ``$DSLC_MAX_SIM_BYTES``,
    else 8 GiB (docs/simulator.md, "Limits")."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    try:
        return int(text, 0) if text else DEFAULT_MAX_SIM_BYTES
    except ValueError:
        return DEFAULT_MAX_SIM_BYTES


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def compile_layer(
    path: str | Path, params: dict[str, int] | None = None, layer: str | None = None
) -> CompiledLayer:
    """Compile ``path`` at ``params`` and import its generated kernels (from the cache)."""
    source = Path(path)
    text = read_source(source)
    graphs = compile_text(text, str(source), params, layer)
    if len(graphs) != 1:
        names = ", ".join(g.name for g in graphs)
        raise CompileError(
            [
                diag(
                    "E208",
                    Span.whole_file(str(source)),
                    f"several root layers ({names}); choose one with --layer NAME (layer= in the Python API)",
                )
            ]
        )
    graph = graphs[0]
    key = content_hash(text, repr(sorted(graph.env().items())), graph.name, __version__)
    module_path = cached_module_path(
        graph.name, key, lambda: target_code(graph, lambda: render_numpy(graph, key[:16], __version__))
    )
    return CompiledLayer(graph, source, module_path, load_program(module_path))


def target_code(graph: Graph, render) -> str:
    """``render()``, with what the target cannot express as a located E110 diagnostic."""
    try:
        return render()
    except TargetLimit as err:
        span = err.span or graph.span
        raise CompileError([diag("E110", span, f"layer {graph.name}: {err}")]) from None


def load(path: str | Path, *, layer: str | None = None, **params: int) -> CompiledLayer:
    return compile_layer(path, params or None, layer)
