"""Workloads: Philly-style generators, trace readers and the ``WorkloadConfig`` front door.

>>> import numpy as np
>>> from gpushare_env.workloads import make_workload
>>> jobs = make_workload("thesis", np.random.default_rng(0))
>>> len(jobs), jobs[0].job_id, jobs[0].arrival_s
(100, 0, 0.0)

Every source returns ``list[JobSpec]`` sorted by ``(arrival_s, job_id)``; the Philly JSON
reader returns a :class:`TraceLoad` that also counts what it skipped. Randomness comes only
from the generator passed in, split into independent per-purpose streams.
"""

from typing import TYPE_CHECKING, Any

from gpushare_env.workloads.config import WORKLOAD_PRESETS, WorkloadConfig, make_workload
from gpushare_env.workloads.csv_trace import (
    read_csv_trace,
    read_duration_gpus_csv,
    write_csv_trace,
)
from gpushare_env.workloads.distributions import (
    EMPIRICAL,
    PARAMETRIC,
    PHILLY_BURSTY,
    BurstyArrivals,
    LengthDistribution,
)
from gpushare_env.workloads.generators import philly_mean_gap_s, philly_workload, thesis_workload
from gpushare_env.workloads.jobs import (
    FitResult,
    TraceError,
    UnfitJobError,
    fit_to_cluster,
    make_job,
    memory_at_batch,
)
from gpushare_env.workloads.philly_trace import TraceLoad, read_philly_job_log
from gpushare_env.workloads.real_traces import (
    PHILLY_VC_TRACES,
    offered_load,
    parse_load_rule,
    philly_vc_path,
    sized_cluster,
)

if TYPE_CHECKING:
    from gpushare_env.workloads.gavel_trace import read_gavel_trace

__all__ = [
    "EMPIRICAL",
    "PARAMETRIC",
    "PHILLY_BURSTY",
    "PHILLY_VC_TRACES",
    "WORKLOAD_PRESETS",
    "BurstyArrivals",
    "FitResult",
    "LengthDistribution",
    "TraceError",
    "TraceLoad",
    "UnfitJobError",
    "WorkloadConfig",
    "fit_to_cluster",
    "make_job",
    "make_workload",
    "memory_at_batch",
    "offered_load",
    "parse_load_rule",
    "philly_mean_gap_s",
    "philly_vc_path",
    "philly_workload",
    "read_csv_trace",
    "read_duration_gpus_csv",
    "read_gavel_trace",
    "read_philly_job_log",
    "sized_cluster",
    "thesis_workload",
    "write_csv_trace",
]


def __getattr__(name: str) -> Any:
    """Import ``read_gavel_trace`` on first use.

    Importing its module with the package would make ``python -m
    gpushare_env.workloads.gavel_trace`` warn that the module it runs is already imported
    (runpy's ``RuntimeWarning``).
    """
    if name == "read_gavel_trace":
        from gpushare_env.workloads.gavel_trace import read_gavel_trace

        globals()[name] = read_gavel_trace
        return read_gavel_trace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
