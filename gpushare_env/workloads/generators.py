"""Synthetic workloads: the thesis's 100-job experiment and Philly-style streams.

Both generators draw from four independent child generators spawned from the ``rng``
passed in (arrivals, GPU counts, durations, models; see ``jobs.STREAMS``), so switching
the arrival process, say, leaves every job's size, length and model unchanged. Jobs use
their model's catalog batch size and memory; ids are ``0..J-1`` in arrival order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.distributions import (
    DURATION_MODELS,
    PHILLY_BURSTY,
    DurationModel,
    LengthDistribution,
    interval_arrivals,
    poisson_arrivals,
)
from gpushare_env.workloads.jobs import jobs_from_arrays, spawn_streams

__all__ = [
    "PHILLY_CLUSTER_GPUS",
    "THESIS_DURATION_SCALE",
    "THESIS_MAX_DURATION_QUANTILE",
    "THESIS_MEAN_GAP_S",
    "philly_mean_gap_s",
    "philly_workload",
    "thesis_workload",
]

#: Thesis default: one Philly hour becomes one simulated minute. Philly's lengths (>= 1 h,
#: median 3 h for 1-GPU jobs) then give jobs of 1 min to a few hours.
THESIS_DURATION_SCALE = 1.0 / 60.0

#: Thesis default: draw lengths below Philly's 95th percentile only. The top 5% run 4 to
#: 60 days; one of them in a 100-job episode would outlast all the others together and
#: make the makespan a measure of that single job. With the cap the longest job is
#: 106 min (1 GPU) to 240 min (8 GPUs) and 100 jobs hold about 100 GPU-hours, so a
#: 16-GPU cluster needs at least ~6 h of simulated time.
THESIS_MAX_DURATION_QUANTILE = 0.95

#: Thesis default mean gap of Poisson arrivals: 100 jobs over about 100 minutes. Each job
#: brings about an hour of GPU-time, so this offers almost four times what 16 GPUs serve
#: without sharing: queues form as in the one-second mode, but spread out in time.  [s]
THESIS_MEAN_GAP_S = 60.0

#: GPUs of the ``philly`` cluster preset (256 nodes x 8), the default for load targets.
PHILLY_CLUSTER_GPUS = 2048


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")


def _check_common(
    num_jobs: int,
    duration_model: str,
    duration_scale: float,
    max_duration_quantile: float,
    models: Sequence[str],
    max_gpus: int | None,
) -> LengthDistribution:
    if not isinstance(num_jobs, (int, np.integer)) or isinstance(num_jobs, bool) or num_jobs < 1:
        raise ValueError(f"num_jobs must be an int >= 1, got {num_jobs!r}")
    if duration_model not in DURATION_MODELS:
        raise ValueError(
            f"duration_model must be one of {sorted(DURATION_MODELS)}, got {duration_model!r}"
        )
    _check_positive("duration_scale", duration_scale)
    if not 0 < max_duration_quantile <= 1:
        raise ValueError(f"max_duration_quantile must be in (0, 1], got {max_duration_quantile}")
    if len(models) == 0:
        raise ValueError("models must name at least one model")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown models {unknown}; allowed: {sorted(MODELS)}")
    if max_gpus is not None and max_gpus < 1:
        raise ValueError(f"max_gpus must be >= 1, got {max_gpus}")
    return DURATION_MODELS[duration_model]


def _sizes_lengths_models(
    num_jobs: int,
    streams: dict[str, np.random.Generator],
    distribution: LengthDistribution,
    duration_scale: float,
    max_duration_quantile: float,
    models: Sequence[str],
    max_gpus: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    num_gpus = distribution.sample_gpus(num_jobs, streams["gpus"], max_gpus)
    durations = distribution.sample_durations_s(
        num_gpus, streams["durations"], max_duration_quantile
    )
    model_index = streams["models"].integers(len(models), size=num_jobs)
    return num_gpus, durations * duration_scale, model_index


def thesis_workload(
    num_jobs: int = 100,
    *,
    rng: np.random.Generator | int,
    arrival: Literal["interval", "poisson"] = "interval",
    interval_s: float = 1.0,
    mean_gap_s: float = THESIS_MEAN_GAP_S,
    duration_model: DurationModel = "empirical",
    duration_scale: float = THESIS_DURATION_SCALE,
    max_duration_quantile: float = THESIS_MAX_DURATION_QUANTILE,
    models: Sequence[str] = DEFAULT_MODELS,
    max_gpus: int | None = None,
) -> list[JobSpec]:
    """The thesis's workload: Philly-style jobs of the four TF-Slim models.

    GPU counts follow Philly's mix (1/2/4/8 GPUs, all within the 16-GPU thesis cluster);
    lengths follow Philly's quantiles per GPU count, scaled by ``duration_scale`` (one
    Philly hour is one simulated minute by default) and capped at the
    ``max_duration_quantile`` (see :data:`THESIS_MAX_DURATION_QUANTILE` for why). The
    thesis ran seeds 0, 1 and 2.

    Args:
        num_jobs: Jobs to generate.
        rng: Parent generator (or int seed) to spawn the per-purpose streams from.
        arrival: ``"interval"``: one job every ``interval_s``; ``"poisson"``: exponential
            gaps of mean ``mean_gap_s``. The first job arrives at 0 either way.
        interval_s: Gap of the interval mode.  [s]
        mean_gap_s: Mean gap of the Poisson mode.  [s]
        duration_model: ``"empirical"`` (Philly quantiles) or ``"parametric"`` (Gavel's fit).
        duration_scale: Multiplies every length.
        max_duration_quantile: Draw lengths below this quantile only, in (0, 1].
        models: Models to draw from, uniformly.
        max_gpus: Draw GPU counts conditioned on ``<= max_gpus`` (``None``: no limit).

    Returns:
        Jobs sorted by ``(arrival_s, job_id)``.
    """
    distribution = _check_common(
        num_jobs, duration_model, duration_scale, max_duration_quantile, models, max_gpus
    )
    streams = spawn_streams(rng)
    if arrival == "interval":
        _check_positive("interval_s", interval_s)
        arrivals = interval_arrivals(num_jobs, interval_s)
    elif arrival == "poisson":
        _check_positive("mean_gap_s", mean_gap_s)
        arrivals = poisson_arrivals(num_jobs, mean_gap_s, streams["arrivals"])
    else:
        raise ValueError(f"arrival must be 'interval' or 'poisson', got {arrival!r}")
    num_gpus, durations, model_index = _sizes_lengths_models(
        num_jobs, streams, distribution, duration_scale, max_duration_quantile, models, max_gpus
    )
    return jobs_from_arrays(arrivals, num_gpus, durations, model_index, models)


def philly_mean_gap_s(
    load: float,
    num_cluster_gpus: int,
    duration_model: DurationModel = "empirical",
    duration_scale: float = 1.0,
    max_duration_quantile: float = 1.0,
    max_gpus: int | None = None,
) -> float:
    """Mean inter-arrival gap that offers ``load`` to the cluster.  [s]

    Offered load is ``E[num_gpus * duration] / (num_cluster_gpus * mean_gap)``: the
    fraction of the cluster's GPU-time the jobs would fill running alone. The expectation
    is computed exactly from the length distribution (not from a sample).
    """
    _check_positive("load", load)
    if num_cluster_gpus < 1:
        raise ValueError(f"num_cluster_gpus must be >= 1, got {num_cluster_gpus}")
    distribution = DURATION_MODELS[duration_model]
    gpu_seconds = distribution.mean_gpu_seconds(max_gpus, max_duration_quantile) * duration_scale
    return gpu_seconds / (load * num_cluster_gpus)


def philly_workload(
    num_jobs: int,
    rng: np.random.Generator | int,
    *,
    duration_model: DurationModel = "empirical",
    arrival: Literal["poisson", "bursty"] = "poisson",
    load: float = 0.8,
    num_cluster_gpus: int = PHILLY_CLUSTER_GPUS,
    mean_gap_s: float | None = None,
    duration_scale: float = 1.0,
    max_duration_quantile: float = 1.0,
    models: Sequence[str] = DEFAULT_MODELS,
    max_gpus: int | None = None,
) -> list[JobSpec]:
    """Philly-style jobs arriving at a target offered load.

    ``duration_model="empirical"``: GPU counts 1/2/4/8 with 76.2/2.0/9.3/12.5%; lengths by
    linear interpolation of Philly's quantile table for the job's GPU count (1 h to 60
    days). ``"parametric"``: Gavel's fit (0.70/0.10/0.15/0.05; ``10**U(1.5, 3)`` minutes
    w.p. 0.8, else ``10**U(3, 4)``).

    Arrivals start at 0. ``"poisson"``: exponential gaps. ``"bursty"``: the two-state
    process of :class:`~gpushare_env.workloads.distributions.BurstyArrivals`, whose gaps
    have Philly's quantile shape (p10 1 s, p50 19 s, p75 19 min, p90 2 h) stretched by one
    factor to the same mean. Either way the mean gap is :func:`philly_mean_gap_s`, so the
    expected offered load is ``load``; bursty gaps are heavy-tailed, so one sample's
    realised load varies far more than a Poisson one's.

    Args:
        num_jobs: Jobs to generate.
        rng: Parent generator (or int seed) to spawn the per-purpose streams from.
        duration_model: ``"empirical"`` or ``"parametric"``.
        arrival: ``"poisson"`` or ``"bursty"``.
        load: Target offered load, > 0 (1.0 fills the cluster exactly, without sharing).
        num_cluster_gpus: GPUs the load refers to.
        mean_gap_s: Mean gap; overrides ``load`` when given.  [s]
        duration_scale: Multiplies every length (and so shortens gaps alike at a fixed load).
        max_duration_quantile: Draw lengths below this quantile only, in (0, 1].
        models: Models to draw from, uniformly.
        max_gpus: Draw GPU counts conditioned on ``<= max_gpus`` (``None``: no limit).

    Returns:
        Jobs sorted by ``(arrival_s, job_id)``.
    """
    distribution = _check_common(
        num_jobs, duration_model, duration_scale, max_duration_quantile, models, max_gpus
    )
    if mean_gap_s is None:
        mean_gap_s = philly_mean_gap_s(
            load, num_cluster_gpus, duration_model, duration_scale, max_duration_quantile, max_gpus
        )
    _check_positive("mean_gap_s", mean_gap_s)
    streams = spawn_streams(rng)
    if arrival == "poisson":
        arrivals = poisson_arrivals(num_jobs, mean_gap_s, streams["arrivals"])
    elif arrival == "bursty":
        arrivals = PHILLY_BURSTY.arrivals(num_jobs, mean_gap_s, streams["arrivals"])
    else:
        raise ValueError(f"arrival must be 'poisson' or 'bursty', got {arrival!r}")
    num_gpus, durations, model_index = _sizes_lengths_models(
        num_jobs, streams, distribution, duration_scale, max_duration_quantile, models, max_gpus
    )
    return jobs_from_arrays(arrivals, num_gpus, durations, model_index, models)
