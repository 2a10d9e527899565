"""Which MPI process hosts which simulated rank: consecutive blocks, as even as possible."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankLayout:
    """``nranks`` ranks over ``nprocs`` processes: process p hosts a block of consecutive ranks.

    The first ``nranks % nprocs`` processes host one rank more than the others, so 16 ranks
    over 4 processes are 0-3, 4-7, 8-11, 12-15 and 5 ranks over 2 processes are 0-2, 3-4.
    """

    nranks: int
    nprocs: int

    def __post_init__(self) -> None:
        if self.nprocs < 1 or self.nranks < 1:
            raise ValueError("ranks and processes must be >= 1")
        if self.nprocs > self.nranks:
            raise ValueError(
                f"{self.nprocs} MPI processes for {self.nranks} rank(s): every process must host at "
                f"least one rank; start at most {self.nranks} processes"
            )

    def ranks_of(self, proc: int) -> range:
        """The ranks process ``proc`` hosts."""
        q, r = divmod(self.nranks, self.nprocs)
        first = proc * q + min(proc, r)
        return range(first, first + q + (proc < r))

    def owner(self, rank: int) -> int:
        """The process that hosts ``rank``."""
        q, r = divmod(self.nranks, self.nprocs)
        big = r * (q + 1)  # ranks hosted by the processes that have one more
        return rank // (q + 1) if rank < big else r + (rank - big) // q

    def slot(self, rank: int) -> int:
        """Position of ``rank`` among the ranks of its process."""
        return rank - self.ranks_of(self.owner(rank)).start

    def describe(self, proc: int) -> str:
        """``ranks 4-7`` / ``rank 3``: how reports name what a process hosts."""
        hosted = self.ranks_of(proc)
        if len(hosted) == 1:
            return f"rank {hosted.start}"
        return f"ranks {hosted.start}-{hosted.stop - 1}"
