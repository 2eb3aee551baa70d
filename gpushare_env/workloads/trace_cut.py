"""Reading a trace for episodes, and saying when ``num_jobs`` cut it short.

A trace replays its own jobs, all of them unless ``num_jobs`` keeps only the first ones
(earliest first). A cut trace is a different workload (a real trace's first 100 jobs are
its quiet start, not its busy weeks), so whoever reads a trace for episodes (the env, the
evaluation harness) reads it with :func:`read_trace`, which also counts the whole trace,
and says so when it was cut. With the workload's ``cut="random"`` the whole trace is read
and each episode plays a run of ``num_jobs`` consecutive jobs from a start drawn from the
episode's generator (:meth:`TraceRead.episode`): training episodes from a whole trace,
with its real arrivals.

Example:
    >>> from gpushare_env.workloads import WorkloadConfig
    >>> read = read_trace(WorkloadConfig(kind="trace", path="VC.csv"), num_jobs=100)
    >>> read.cut, read.describe()  # doctest: +SKIP
    (True, 'trace VC.csv: first 100 of 1,181 jobs')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpushare_env.seeding import trace_generator
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import WorkloadConfig
from gpushare_env.workloads.jobs import random_run

__all__ = ["TraceCutWarning", "TraceRead", "read_trace"]


class TraceCutWarning(UserWarning):
    """``num_jobs`` keeps only the first jobs of a trace (``GPUShare-v0`` warns once per
    env; the evaluation harness, which notes it in its log and summary, silences it)."""


@dataclass(frozen=True, slots=True)
class TraceRead:
    """A trace as read for episodes.

    Attributes:
        jobs: The jobs kept: the whole trace, or its first ``num_jobs``.
        path: The trace file.
        total_jobs: Jobs of the whole trace (as its reader reads it: a JSON trace's time
            window applies; jobs that never fit a cluster are still counted).
        run_jobs: With ``cut="random"``, the jobs of one episode's run (``jobs`` is then
            the whole trace); ``None``: every episode plays ``jobs``.
    """

    jobs: list[JobSpec]
    path: str
    total_jobs: int
    run_jobs: int | None = None

    @property
    def cut(self) -> bool:
        """True if ``num_jobs`` kept fewer jobs than the trace has."""
        return len(self.jobs) < self.total_jobs

    @property
    def name(self) -> str:
        """The trace's file name."""
        return Path(self.path).name

    def episode(self, rng: np.random.Generator) -> list[JobSpec]:
        """The jobs of one episode: ``jobs``, or a random run of ``run_jobs`` of them."""
        if self.run_jobs is None:
            return list(self.jobs)
        return random_run(self.jobs, self.run_jobs, rng)

    def describe(self) -> str:
        """``"trace VC.csv: first 100 of 1,181 jobs"`` (cut), ``"trace VC.csv: runs of 100
        consecutive jobs from a random start, of 1,181"`` (``cut="random"``) or ``"trace
        VC.csv: all 1,181 jobs"``."""
        if self.run_jobs is not None and self.run_jobs < self.total_jobs:
            return (
                f"trace {self.name}: runs of {self.run_jobs:,} consecutive jobs from a "
                f"random start, of {self.total_jobs:,}"
            )
        if self.cut:
            return f"trace {self.name}: first {len(self.jobs):,} of {self.total_jobs:,} jobs"
        return f"trace {self.name}: all {self.total_jobs:,} jobs"


def read_trace(
    workload: WorkloadConfig, num_jobs: int | None = None, cluster_gpus: int | None = None
) -> TraceRead:
    """Read a trace workload with the fixed trace generator, and count the whole trace.

    Args:
        workload: A ``kind="trace"`` workload.
        num_jobs: Keep the first ``num_jobs`` jobs (``None``: the workload's own
            ``num_jobs``; both ``None``: every job).
        cluster_gpus: As for :meth:`WorkloadConfig.generate`.

    Returns:
        The jobs kept and the trace's whole size. When the limit was reached the trace is
        read a second time, whole, to count it (once per env or plan). With
        ``cut="random"``: the whole trace, and the limit as ``run_jobs``.

    Raises:
        ValueError: ``workload`` is not a trace.
        TraceError: A bad trace file (as :meth:`WorkloadConfig.generate`).
    """
    if workload.kind != "trace" or workload.path is None:
        raise ValueError(f"read_trace: not a trace workload: kind={workload.kind!r}")
    limit = num_jobs if num_jobs is not None else workload.num_jobs
    if workload.cut == "random":
        whole = dataclasses.replace(workload, num_jobs=None, cut="first")
        jobs = whole.generate(trace_generator(), cluster_gpus=cluster_gpus)
        return TraceRead(jobs, workload.path, len(jobs), limit)
    jobs = workload.generate(trace_generator(), num_jobs=num_jobs, cluster_gpus=cluster_gpus)
    total = len(jobs)
    if limit is not None and len(jobs) >= limit:
        whole = dataclasses.replace(workload, num_jobs=None)
        total = len(whole.generate(trace_generator(), cluster_gpus=cluster_gpus))
    return TraceRead(jobs, workload.path, total)
