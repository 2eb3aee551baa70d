"""Scheduling metrics: pure functions over finished-job records and a cluster timeline.

Nothing here touches a running simulator. Every function reads a sequence of finished
:class:`~gpushare_env.sim.types.JobRecord` and, for the time-averaged cluster figures, a
:class:`~gpushare_env.sim.types.Timeline`, and returns plain floats (the metrics are listed
in docs/model.md, *What is modelled*).

Conventions:
    * Percentiles use numpy's ``linear`` method (``np.percentile(x, q, method="linear")``),
      the default of numpy, pandas and spreadsheets.
    * Time averages are taken over the **makespan window** ``[first arrival, last finish]``.
      The timeline is piecewise constant (row ``i`` holds from ``time_s[i]`` to
      ``time_s[i + 1]``, the last row to ``end_s``); rows are clipped to the window and
      weighted by the length they overlap it. The timeline must cover the window.
    * A figure that is undefined for the given input (the mean JCT of large jobs when no
      job is large, a share of zero GPU-seconds) is ``float("nan")``, never ``None``, so
      :func:`summarize` stays ``dict[str, float]`` and aggregates with ``np.nanmean``.
      ``json.dumps`` writes it as ``NaN``; pass ``allow_nan=False`` to catch it.
    * Empty records, an inconsistent record or a malformed timeline raise ``ValueError``
      naming the problem.

Example:
    >>> stats = summarize(records, timeline)  # doctest: +SKIP
    >>> print(f"{stats['mean_jct_s']:.0f} s, util {stats['gpu_util']:.1%}")  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gpushare_env.sim.types import JobRecord, Timeline

__all__ = [
    "LARGE_JOB_GPUS",
    "METRIC_DOCS",
    "expected_fragment",
    "fragmentation",
    "gpu_allocation",
    "gpu_utilisation",
    "jain_index",
    "jct_cdf",
    "jct_stats",
    "makespan_s",
    "makespan_window",
    "overhead_stats",
    "percentile",
    "queue_stats",
    "size_class_stats",
    "slowdown_stats",
    "summarize",
    "summarize_run",
    "time_average",
    "utilisation_series",
]

LARGE_JOB_GPUS = 4
"""A job requesting at least this many GPUs counts as *large* for the starvation figures."""

METRIC_DOCS: dict[str, str] = {
    "num_jobs": "Number of finished jobs in the records. [jobs]",
    "mean_jct_s": "Mean job completion time, finish - arrival. [s]",
    "p50_jct_s": "Median job completion time. [s]",
    "p95_jct_s": "95th-percentile job completion time. [s]",
    "p99_jct_s": "99th-percentile job completion time. [s]",
    "mean_solo_s": "Mean solo exclusive duration of the jobs: a lower bound of mean JCT that "
    "no scheduler can beat on these jobs. [s]",
    "makespan_s": "Last finish - first arrival. [s]",
    "mean_queue_s": "Mean queueing delay, first start - arrival. [s]",
    "p50_queue_s": "Median queueing delay. [s]",
    "p95_queue_s": "95th-percentile queueing delay. [s]",
    "p99_queue_s": "99th-percentile queueing delay (starvation). [s]",
    "max_queue_s": "Largest queueing delay (starvation). [s]",
    "p99_queued_total_s": "99th percentile of total time waiting without GPUs, "
    "first wait and after suspensions (starvation). [s]",
    "max_queued_total_s": "Largest total time waiting without GPUs (starvation). [s]",
    "mean_slowdown": "Mean slowdown, JCT / solo exclusive duration. [ratio, >= 1 ideally]",
    "p50_slowdown": "Median slowdown. [ratio]",
    "p95_slowdown": "95th-percentile slowdown. [ratio]",
    "jain_fairness": "Jain's index over slowdowns, (sum x)^2 / (n sum x^2); 1 = equal. [1/n..1]",
    "num_large_jobs": f"Jobs requesting >= {LARGE_JOB_GPUS} GPUs. [jobs]",
    "num_small_jobs": f"Jobs requesting < {LARGE_JOB_GPUS} GPUs. [jobs]",
    "mean_jct_large_s": f"Mean JCT of jobs with >= {LARGE_JOB_GPUS} GPUs; NaN if none. [s]",
    "mean_jct_small_s": f"Mean JCT of jobs with < {LARGE_JOB_GPUS} GPUs; NaN if none. [s]",
    "gpu_util": "Time-average over the makespan of compute in use / GPUs. [fraction]",
    "gpu_alloc": "Time-average over the makespan of GPUs holding a worker / GPUs. [fraction]",
    "fragmentation": "Time-average over the makespan of fragmented / free memory "
    "(0 while no memory is free). [fraction]",
    "expected_fragment": "Time-average over the makespan of the FGD expected fragment / "
    "total memory. [fraction]",
    "suspends": "Completed suspensions, all jobs. [count]",
    "resumes": "Completed restarts after a suspension, all jobs. [count]",
    "migrations": "Resumes on a different GPU set, all jobs. [count]",
    "overhead_gpu_s": "GPU-time held while suspending or resuming, all jobs. [GPU s]",
    "total_gpu_s": "GPU-time held by all jobs, overheads included. [GPU s]",
    "overhead_share": "overhead_gpu_s / total_gpu_s; NaN if total_gpu_s is 0. [fraction]",
}
"""One-line description, with unit, of every key :func:`summarize` returns (in order)."""


# --------------------------------------------------------------------------- validation


def _check_records(records: Sequence[JobRecord]) -> None:
    """Raise ``ValueError`` if ``records`` is empty, has duplicates or an impossible job."""
    if len(records) == 0:
        raise ValueError("metrics need at least one finished JobRecord, got an empty sequence")
    seen: set[int] = set()
    for record in records:
        if record.job_id in seen:
            raise ValueError(f"job {record.job_id} appears more than once in the records")
        seen.add(record.job_id)
        if not record.arrival_s <= record.first_start_s <= record.finish_s:
            raise ValueError(
                f"job {record.job_id}: need arrival_s <= first_start_s <= finish_s, got "
                f"{record.arrival_s}, {record.first_start_s}, {record.finish_s}"
            )
        if not record.solo_duration_s > 0:
            raise ValueError(
                f"job {record.job_id}: solo_duration_s must be > 0 to define a slowdown, "
                f"got {record.solo_duration_s}"
            )


_TIMELINE_SERIES = (
    "time_s",
    "compute_in_use",
    "allocated_gpus",
    "free_memory_gib",
    "fragmented_memory_gib",
    "expected_fragment_gib",
    "jobs_in_system",
    "jobs_waiting",
)


def _check_timeline(timeline: Timeline) -> None:
    """Raise ``ValueError`` if the timeline's arrays disagree in shape or time runs back."""
    shapes = {name: np.shape(getattr(timeline, name)) for name in _TIMELINE_SERIES}
    if len(shapes["time_s"]) != 1 or shapes["time_s"][0] == 0:
        raise ValueError(
            f"timeline.time_s must be a non-empty 1-D array, got shape {shapes['time_s']}"
        )
    mismatched = {name: shape for name, shape in shapes.items() if shape != shapes["time_s"]}
    if mismatched:
        raise ValueError(
            f"timeline arrays must all have time_s's shape {shapes['time_s']}; "
            f"mismatched: {mismatched}"
        )
    if timeline.num_gpus < 1:
        raise ValueError(f"timeline.num_gpus must be >= 1, got {timeline.num_gpus}")
    if not timeline.total_memory_gib > 0:
        raise ValueError(f"timeline.total_memory_gib must be > 0, got {timeline.total_memory_gib}")
    times = np.asarray(timeline.time_s, dtype=float)
    if np.any(np.diff(times) < 0):
        raise ValueError("timeline.time_s must be non-decreasing")
    if timeline.end_s < times[-1]:
        raise ValueError(f"timeline.end_s ({timeline.end_s}) is before its last row ({times[-1]})")


# --------------------------------------------------------------------------- helpers


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The ``q``-th percentile of ``values`` by numpy's linear interpolation.

    Args:
        values: Non-empty sample.
        q: Percentile in [0, 100].

    Returns:
        ``np.percentile(values, q, method="linear")`` as a float.

    Raises:
        ValueError: If ``values`` is empty or ``q`` is outside [0, 100].
    """
    sample = np.asarray(values, dtype=float)
    if sample.size == 0:
        raise ValueError("percentile of an empty sample is undefined")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    return float(np.percentile(sample, q, method="linear"))


def _mean_or_nan(values: list[float]) -> float:
    """Mean of ``values``, or NaN for an empty list (no warning)."""
    return float(np.mean(values)) if values else math.nan


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``.

    It is 1 when all values are equal and tends to ``1/n`` when one value dominates.

    Args:
        values: Non-empty, non-negative sample (here: slowdowns).

    Returns:
        The index in ``[1/n, 1]``; NaN if every value is 0 (0/0).

    Raises:
        ValueError: If ``values`` is empty or holds a negative number.
    """
    sample = np.asarray(values, dtype=float)
    if sample.size == 0:
        raise ValueError("Jain's index of an empty sample is undefined")
    if np.any(sample < 0):
        raise ValueError("Jain's index needs non-negative values")
    sum_of_squares = float(np.sum(sample**2))
    if sum_of_squares == 0:
        return math.nan
    return float(np.sum(sample) ** 2 / (sample.size * sum_of_squares))


# --------------------------------------------------------------------------- job metrics


def makespan_window(records: Sequence[JobRecord]) -> tuple[float, float]:
    """The makespan window ``(first arrival, last finish)`` of the records.  # [s]

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    return float(min(r.arrival_s for r in records)), float(max(r.finish_s for r in records))


def makespan_s(records: Sequence[JobRecord]) -> float:
    """Last finish - first arrival.  # [s]

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    start_s, end_s = makespan_window(records)
    return end_s - start_s


def jct_stats(records: Sequence[JobRecord]) -> dict[str, float]:
    """Job completion time (finish - arrival) statistics.

    Returns:
        ``mean_jct_s``, ``p50_jct_s``, ``p95_jct_s``, ``p99_jct_s``, and ``mean_solo_s``,
        the mean solo exclusive duration (JCT's lower bound).  # [s]

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    jcts = np.array([r.jct_s for r in records])
    return {
        "mean_jct_s": float(np.mean(jcts)),
        "p50_jct_s": percentile(jcts, 50),
        "p95_jct_s": percentile(jcts, 95),
        "p99_jct_s": percentile(jcts, 99),
        "mean_solo_s": float(np.mean([r.solo_duration_s for r in records])),
    }


def jct_cdf(records: Sequence[JobRecord]) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of JCT, for plotting.

    Returns:
        ``(jct_s, fraction)``: JCTs sorted ascending  # (N,) [s]
        and the fraction of jobs finished within each  # (N,) in (0, 1]

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    jcts = np.sort(np.array([r.jct_s for r in records]))
    return jcts, np.arange(1, jcts.size + 1) / jcts.size


def queue_stats(records: Sequence[JobRecord]) -> dict[str, float]:
    """Queueing delay (first start - arrival) and starvation figures.

    Besides the first wait, ``queued_s`` counts every wait without GPUs after a
    suspension, so a job that is repeatedly suspended shows up in ``*_queued_total_s``
    even if it started at once.

    Returns:
        ``mean_queue_s``, ``p50_queue_s``, ``p95_queue_s``, ``p99_queue_s``,
        ``max_queue_s``, ``p99_queued_total_s``, ``max_queued_total_s``.  # [s]

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    delays = np.array([r.queueing_delay_s for r in records])
    queued = np.array([r.queued_s for r in records])
    return {
        "mean_queue_s": float(np.mean(delays)),
        "p50_queue_s": percentile(delays, 50),
        "p95_queue_s": percentile(delays, 95),
        "p99_queue_s": percentile(delays, 99),
        "max_queue_s": float(np.max(delays)),
        "p99_queued_total_s": percentile(queued, 99),
        "max_queued_total_s": float(np.max(queued)),
    }


def slowdown_stats(records: Sequence[JobRecord]) -> dict[str, float]:
    """Slowdown (JCT / solo exclusive duration) statistics and Jain's fairness over it.

    Returns:
        ``mean_slowdown``, ``p50_slowdown``, ``p95_slowdown``, ``jain_fairness``.

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    slowdowns = np.array([r.slowdown for r in records])
    return {
        "mean_slowdown": float(np.mean(slowdowns)),
        "p50_slowdown": percentile(slowdowns, 50),
        "p95_slowdown": percentile(slowdowns, 95),
        "jain_fairness": jain_index(slowdowns),
    }


def size_class_stats(
    records: Sequence[JobRecord], large_gpus: int = LARGE_JOB_GPUS
) -> dict[str, float]:
    """Mean JCT of large jobs (``num_gpus >= large_gpus``) against small ones.

    A large job needs a whole gang of free GPUs at once, so it is the first to starve
    under a scheduler that backfills small jobs.

    Args:
        records: Finished jobs.
        large_gpus: Smallest GPU count that makes a job large.

    Returns:
        ``num_large_jobs``, ``num_small_jobs``, ``mean_jct_large_s``,
        ``mean_jct_small_s``; a mean is NaN when its group is empty.

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    large = [r.jct_s for r in records if r.num_gpus >= large_gpus]
    small = [r.jct_s for r in records if r.num_gpus < large_gpus]
    return {
        "num_large_jobs": float(len(large)),
        "num_small_jobs": float(len(small)),
        "mean_jct_large_s": _mean_or_nan(large),
        "mean_jct_small_s": _mean_or_nan(small),
    }


def overhead_stats(records: Sequence[JobRecord]) -> dict[str, float]:
    """Preemption overheads summed over all jobs.

    Returns:
        ``suspends``, ``resumes``, ``migrations`` (counts), ``overhead_gpu_s`` and
        ``total_gpu_s`` (GPU s), and ``overhead_share`` = overhead / total GPU-seconds
        (NaN if no GPU-time was held at all).

    Raises:
        ValueError: If ``records`` is empty or inconsistent.
    """
    _check_records(records)
    overhead_gpu_s = float(sum(r.overhead_gpu_seconds for r in records))
    total_gpu_s = float(sum(r.gpu_seconds for r in records))
    return {
        "suspends": float(sum(r.suspends for r in records)),
        "resumes": float(sum(r.resumes for r in records)),
        "migrations": float(sum(r.migrations for r in records)),
        "overhead_gpu_s": overhead_gpu_s,
        "total_gpu_s": total_gpu_s,
        "overhead_share": overhead_gpu_s / total_gpu_s if total_gpu_s > 0 else math.nan,
    }


# --------------------------------------------------------------------------- timeline metrics


def time_average(timeline: Timeline, values: np.ndarray, window_s: tuple[float, float]) -> float:
    """Time-average of a piecewise-constant per-row series over a window.

    Row ``i`` holds ``values[i]`` from ``time_s[i]`` to ``time_s[i + 1]`` (the last row to
    ``end_s``); each row is weighted by the length of its overlap with the window.

    Args:
        timeline: The cluster timeline whose rows ``values`` follows.
        values: One value per timeline row.  # (T,)
        window_s: ``(start, end)`` with ``start < end``, inside
            ``[time_s[0], end_s]``.  # [s]

    Returns:
        ``integral of values over the window / window length``.

    Raises:
        ValueError: If the timeline is malformed, ``values`` does not have one entry per
            row, the window is empty or the timeline does not cover it.
    """
    _check_timeline(timeline)
    series = np.asarray(values, dtype=float)
    times = np.asarray(timeline.time_s, dtype=float)
    if series.shape != times.shape:
        raise ValueError(
            f"values must have one entry per timeline row, shape {times.shape}, got {series.shape}"
        )
    start_s, end_s = window_s
    if not start_s < end_s:
        raise ValueError(f"window must have start < end, got ({start_s}, {end_s})")
    # Tolerate float round-off between the engine's clock and the records' times.
    slack_s = 1e-9 * max(1.0, abs(start_s), abs(end_s))
    if times[0] > start_s + slack_s or timeline.end_s < end_s - slack_s:
        raise ValueError(
            f"timeline covers [{times[0]}, {timeline.end_s}] s but the window is "
            f"[{start_s}, {end_s}] s"
        )
    row_ends = np.append(times[1:], timeline.end_s)
    overlap_s = np.clip(np.minimum(row_ends, end_s) - np.maximum(times, start_s), 0.0, None)
    return float(np.sum(series * overlap_s) / (end_s - start_s))


def gpu_utilisation(timeline: Timeline, window_s: tuple[float, float]) -> float:
    """Time-average of compute in use / GPUs over the window (the thesis's utilisation).

    Compute in use sums ``min(1, U_g)`` over GPUs, so a GPU shared by two light jobs
    counts by how busy it is, not as fully used.

    Args:
        timeline: Cluster timeline.
        window_s: ``(start, end)``, usually :func:`makespan_window`.  # [s]

    Returns:
        A fraction in [0, 1].

    Raises:
        ValueError: As :func:`time_average`.
    """
    compute = np.asarray(timeline.compute_in_use, dtype=float)
    return time_average(timeline, compute / timeline.num_gpus, window_s)


def gpu_allocation(timeline: Timeline, window_s: tuple[float, float]) -> float:
    """Time-average of GPUs holding at least one worker / GPUs over the window.

    Args:
        timeline: Cluster timeline.
        window_s: ``(start, end)``, usually :func:`makespan_window`.  # [s]

    Returns:
        A fraction in [0, 1].

    Raises:
        ValueError: As :func:`time_average`.
    """
    allocated = np.asarray(timeline.allocated_gpus, dtype=float)
    return time_average(timeline, allocated / timeline.num_gpus, window_s)


def fragmentation(timeline: Timeline, window_s: tuple[float, float]) -> float:
    """Time-average of the share of free memory that is fragmented.

    A row's share is ``fragmented_memory_gib / free_memory_gib``; a row with no free
    memory has nothing to fragment and contributes 0.

    Args:
        timeline: Cluster timeline.
        window_s: ``(start, end)``, usually :func:`makespan_window`.  # [s]

    Returns:
        A fraction in [0, 1].

    Raises:
        ValueError: As :func:`time_average`.
    """
    _check_timeline(timeline)
    free = np.asarray(timeline.free_memory_gib, dtype=float)
    fragmented = np.asarray(timeline.fragmented_memory_gib, dtype=float)
    share = np.divide(fragmented, free, out=np.zeros_like(free), where=free > 0)
    return time_average(timeline, share, window_s)


def expected_fragment(timeline: Timeline, window_s: tuple[float, float]) -> float:
    """Time-average of the FGD expected fragment / total cluster memory.

    Args:
        timeline: Cluster timeline.
        window_s: ``(start, end)``, usually :func:`makespan_window`.  # [s]

    Returns:
        A fraction in [0, 1].

    Raises:
        ValueError: As :func:`time_average`.
    """
    expected = np.asarray(timeline.expected_fragment_gib, dtype=float)
    return time_average(timeline, expected / timeline.total_memory_gib, window_s)


def utilisation_series(
    timeline: Timeline, *, allocated: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Utilisation over time as a step function, for plotting.

    The last value is repeated at ``end_s`` so that
    ``plt.step(t, u, where="post")`` draws the final row too.

    Args:
        timeline: Cluster timeline.
        allocated: Plot allocated GPUs / GPUs instead of compute in use / GPUs.

    Returns:
        ``(time_s, fraction)``, both of shape ``(T + 1,)``.  # [s], [0, 1]

    Raises:
        ValueError: If the timeline is malformed.
    """
    _check_timeline(timeline)
    source = timeline.allocated_gpus if allocated else timeline.compute_in_use
    fraction = np.asarray(source, dtype=float) / timeline.num_gpus
    times = np.append(np.asarray(timeline.time_s, dtype=float), timeline.end_s)
    return times, np.append(fraction, fraction[-1])


# --------------------------------------------------------------------------- summary


def summarize_run(records: Sequence[JobRecord], timeline: Timeline) -> dict[str, float]:
    """:func:`summarize` of a run that may have stopped before any job finished (a
    truncated episode): then every metric is NaN and ``num_jobs`` 0. The env's
    ``info["metrics"]`` and a headless run's ``RunResult.metrics`` both come from here."""
    if not records:
        values = dict.fromkeys(METRIC_DOCS, math.nan)
        values["num_jobs"] = 0.0
        return values
    return summarize(records, timeline)


def summarize(records: Sequence[JobRecord], timeline: Timeline) -> dict[str, float]:
    """Every metric of one run as a flat dict, keyed and ordered as :data:`METRIC_DOCS`.

    Time averages are over the records' makespan window.

    Args:
        records: The finished jobs of the run.
        timeline: The cluster timeline of the same run.

    Returns:
        ``{key: value}`` for each key of :data:`METRIC_DOCS`; undefined values are NaN.

    Raises:
        ValueError: If ``records`` is empty or inconsistent, or the timeline is malformed
            or does not cover the makespan window.
    """
    window_s = makespan_window(records)
    _check_timeline(timeline)
    values: dict[str, float] = {
        "num_jobs": float(len(records)),
        **jct_stats(records),
        "makespan_s": window_s[1] - window_s[0],
        **queue_stats(records),
        **slowdown_stats(records),
        **size_class_stats(records),
        "gpu_util": gpu_utilisation(timeline, window_s),
        "gpu_alloc": gpu_allocation(timeline, window_s),
        "fragmentation": fragmentation(timeline, window_s),
        "expected_fragment": expected_fragment(timeline, window_s),
        **overhead_stats(records),
    }
    return {key: values[key] for key in METRIC_DOCS}
