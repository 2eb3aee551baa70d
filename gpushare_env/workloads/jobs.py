"""Turning trace-level facts about a job into a ``JobSpec``, and the checks a workload passes.

A trace or a generator knows a job's *solo exclusive duration* (how long it ran alone on
its GPUs), its GPU count and perhaps its model and batch size. The simulator wants
iterations and a per-iteration time. :func:`make_job` does the conversion so that the
``JobSpec``'s ``solo_duration_s`` reproduces the trace's duration (exactly when the trace
also gives the iteration count, to within half an iteration otherwise).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from gpushare_env.sim.catalog import MODELS, scaling_efficiency
from gpushare_env.sim.cluster import Cluster
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_BATCH_SIZE,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    MAX_ITERATIONS,
    MIN_ITER_TIME_S,
    is_finite,
    is_int,
    range_text,
)
from gpushare_env.sim.sharing import sharing_model
from gpushare_env.sim.types import JobSpec

__all__ = [
    "FitResult",
    "TraceError",
    "UnfitJobError",
    "fit_to_cluster",
    "make_job",
    "memory_at_batch",
    "random_run",
    "sort_jobs",
]

#: Number of independent child generators every workload source spawns from its ``rng``,
#: one per purpose, in this order. Fixed so that a source which ignores a purpose (a trace
#: has its own durations) still gives the same streams to the purposes it uses.
STREAMS: tuple[str, ...] = ("arrivals", "gpus", "durations", "models")


class TraceError(ValueError):
    """Bad workload input, with where it is: file, line or job, and field.

    Attributes:
        path: The file, when known.
        line: 1-based line number in the file (the CSV header is line 1), when known.
        job: Job index or identifier, when known.
        field: The offending column or key, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: object = None,
        line: int | None = None,
        job: object = None,
        field: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.job = job
        self.field = field
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if job is not None:
            where.append(f"job {job}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class UnfitJobError(ValueError):
    """A job that no placement on the cluster could ever satisfy."""


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """Return ``rng`` itself, or a fresh generator seeded with it when it is an int."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}")


def spawn_streams(rng: np.random.Generator | int) -> dict[str, np.random.Generator]:
    """Spawn one independent child generator per purpose in :data:`STREAMS`.

    ``Generator.spawn`` derives children from the parent's seed sequence without drawing
    from the parent, so the children do not depend on what else the parent is used for,
    and changing how one purpose draws (another duration model, say) leaves the others'
    draws unchanged. Each call spawns new children, so two calls on one generator differ.
    """
    children = as_generator(rng).spawn(len(STREAMS))
    return dict(zip(STREAMS, children, strict=True))


def _check_model(model: str, allowed: Iterable[str] | None = None) -> None:
    names = MODELS if allowed is None else allowed
    if model not in names:
        raise ValueError(f"unknown model {model!r}; allowed: {sorted(names)}")


def memory_at_batch(model: str, batch_size: int) -> float:
    """Per-worker memory of ``model`` at ``batch_size``, scaled from the catalog figure.  [GiB]

    An approximation: about 30% of a worker's footprint (weights, optimiser state,
    framework workspace) is fixed and the remaining 70% (activations) grows linearly
    with the batch, so ``memory = catalog_memory * (0.3 + 0.7 * batch / catalog_batch)``.
    At the catalog batch size this is the catalog figure exactly.
    """
    spec = MODELS[model]
    if batch_size == spec.batch_size:
        return spec.memory_gib
    return spec.memory_gib * (0.3 + 0.7 * batch_size / spec.batch_size)


def make_job(
    job_id: int,
    arrival_s: float,
    num_gpus: int,
    duration_s: float,
    model: str,
    batch_size: int | None = None,
    *,
    iterations: int | None = None,
    memory_gib: float | None = None,
    iter_time_s: float | None = None,
    intensity: float | None = None,
) -> JobSpec:
    """Build a ``JobSpec`` from a job's solo exclusive duration.

    With ``eff(n)`` the scaling efficiency of ``n`` GPUs, a job's solo duration is
    ``iterations * iter_time_s / eff(n)``; two of the three are needed:

    * neither ``iterations`` nor ``iter_time_s``: ``iter_time_s`` is the catalog's, scaled
      linearly by ``batch_size / catalog_batch``, and ``iterations = max(1,
      round(duration_s * eff(n) / iter_time_s))`` (solo duration within half a step);
    * ``iterations`` only: ``iter_time_s = duration_s * eff(n) / iterations`` (exact);
    * ``iter_time_s`` only: ``iterations`` rounded as in the first case;
    * both: taken as given; ``duration_s`` must agree to a relative 1e-9.

    Args:
        job_id: Non-negative identifier.
        arrival_s: Submission time.  [s]
        num_gpus: Workers, one per GPU.
        duration_s: Solo exclusive duration on V100s in one node, > 0.  [s]
        model: Key of ``MODELS``.
        batch_size: Per-worker batch; the catalog's when ``None``.
        iterations: Total synchronous steps, when known.
        memory_gib: Per-worker memory; :func:`memory_at_batch` when ``None``.  [GiB]
        iter_time_s: Solo time of one step of one worker on a V100, when known.  [s]
        intensity: GPU intensity in (0, 1]; the catalog's when ``None``.

    Returns:
        The job.

    Raises:
        ValueError: Unknown model, a non-positive or non-finite duration, inconsistent
            ``iterations``/``iter_time_s``/``duration_s``, or any field ``JobSpec`` rejects.
    """
    _check_model(model)
    spec = MODELS[model]

    # the arithmetic below needs these in range first; JobSpec checks the rest
    def bad(name: str, value: object, allowed: str) -> ValueError:
        return ValueError(f"job {job_id}: {name} must be {allowed}, got {value!r}")

    # with both iterations and iter_time_s the duration is only checked against them (and
    # JobSpec bounds the duration they imply); otherwise it sets the iterations
    highest = math.inf if iterations is not None and iter_time_s is not None else MAX_DURATION_S
    if not (is_finite(duration_s) and 0 < duration_s <= highest):
        raise bad("duration_s", duration_s, f"finite, {range_text(0, highest, low_open=True)} s")
    if not (is_int(num_gpus) and 1 <= num_gpus <= MAX_CLUSTER_GPUS):
        raise bad("num_gpus", num_gpus, f"an int {range_text(1, MAX_CLUSTER_GPUS)}")
    batch = spec.batch_size if batch_size is None else batch_size
    if not (is_int(batch) and 1 <= batch <= MAX_BATCH_SIZE):
        raise bad("batch_size", batch, f"an int {range_text(1, MAX_BATCH_SIZE)}")
    batch = int(batch)
    if iterations is not None and not (is_int(iterations) and 1 <= iterations <= MAX_ITERATIONS):
        raise bad("iterations", iterations, f"an int {range_text(1, MAX_ITERATIONS)}")
    if iter_time_s is not None and not (
        is_finite(iter_time_s) and MIN_ITER_TIME_S <= iter_time_s <= MAX_DURATION_S
    ):
        raise bad(
            "iter_time_s", iter_time_s, f"finite, {range_text(MIN_ITER_TIME_S, MAX_DURATION_S)} s"
        )
    efficiency = scaling_efficiency(num_gpus)
    if iterations is None:
        if iter_time_s is None:
            iter_time_s = spec.iter_time_s * (batch / spec.batch_size)
        iterations = max(1, round(duration_s * efficiency / iter_time_s))
    elif iter_time_s is None:
        iter_time_s = duration_s * efficiency / iterations
    else:
        implied_s = iterations * (iter_time_s / efficiency)
        if abs(implied_s - duration_s) > 1e-9 * duration_s:
            raise ValueError(
                f"job {job_id}: duration_s {duration_s!r} disagrees with iterations * "
                f"iter_time_s / eff(num_gpus) = {implied_s!r}"
            )
    memory = memory_at_batch(model, batch) if memory_gib is None else float(memory_gib)
    return JobSpec(
        job_id=int(job_id),
        arrival_s=float(arrival_s),
        model=model,
        batch_size=batch,
        num_gpus=int(num_gpus),
        iterations=int(iterations),
        memory_gib=memory,
        intensity=spec.intensity if intensity is None else float(intensity),
        iter_time_s=float(iter_time_s),
    )


def jobs_from_arrays(
    arrival_s: np.ndarray,
    num_gpus: np.ndarray,
    duration_s: np.ndarray,
    model_index: np.ndarray,
    models: Sequence[str],
    job_ids: np.ndarray | None = None,
) -> list[JobSpec]:
    """Vectorised :func:`make_job` at catalog batch sizes; returns jobs sorted by arrival.

    Gives the same ``JobSpec`` as ``make_job(id, arrival, n, duration, model)`` for every
    job (same floating-point operations, same round-half-even rounding).

    Args:
        arrival_s: Submission times.  (J,) [s]
        num_gpus: GPU counts.  (J,) int
        duration_s: Solo exclusive durations, > 0.  (J,) [s]
        model_index: Index into ``models`` of each job's model.  (J,) int
        models: Model catalog keys.
        job_ids: Identifiers; ``0..J-1`` when ``None``.  (J,) int
    """
    count = int(arrival_s.shape[0])
    ids = np.arange(count, dtype=np.int64) if job_ids is None else np.asarray(job_ids)
    # the limits of gpushare_env.sim.limits, before the arithmetic (JobSpec checks the rest)
    for name, values, low, high, closed in (
        ("arrival_s", arrival_s, 0.0, MAX_ARRIVAL_S, True),
        ("duration_s", duration_s, 0.0, MAX_DURATION_S, False),
    ):
        with np.errstate(invalid="ignore"):
            bad = ~((values >= low if closed else values > low) & (values <= high))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"job {ids[first]}: {name} must be finite, "
                f"{range_text(low, high, low_open=not closed)} s, got {float(values[first])!r}"
            )
    specs = [MODELS[name] for name in models]
    iter_time = np.array([s.iter_time_s for s in specs], dtype=np.float64)[model_index]
    unique_gpus, inverse = np.unique(num_gpus, return_inverse=True)
    efficiency = np.array([scaling_efficiency(int(n)) for n in unique_gpus])[inverse]
    iterations = np.maximum(1, np.rint(duration_s * efficiency / iter_time)).astype(np.int64)
    order = np.lexsort((ids, arrival_s))
    model_names = [s.name for s in specs]
    batches = [s.batch_size for s in specs]
    memories = [s.memory_gib for s in specs]
    intensities = [s.intensity for s in specs]
    iter_times = [s.iter_time_s for s in specs]
    # Positional arguments: about a quarter faster than keywords over 100k jobs.
    return [
        JobSpec(i, a, model_names[m], batches[m], n, it, memories[m], intensities[m], iter_times[m])
        for i, a, m, n, it in zip(
            ids[order].tolist(),
            arrival_s[order].tolist(),
            model_index[order].tolist(),
            num_gpus[order].tolist(),
            iterations[order].tolist(),
            strict=True,
        )
    ]


def sort_jobs(jobs: Iterable[JobSpec]) -> list[JobSpec]:
    """Return the jobs sorted by ``(arrival_s, job_id)``."""
    return sorted(jobs, key=lambda job: (job.arrival_s, job.job_id))


def random_run(
    jobs: Sequence[JobSpec], count: int | None, rng: np.random.Generator
) -> list[JobSpec]:
    """``count`` consecutive jobs (by arrival) from a start drawn from ``rng``, with their
    arrivals shifted so the first arrives at 0 s: an episode cut from a trace with its
    real gaps. Every job when ``count`` is ``None`` or at least ``len(jobs)``.

    Example:
        >>> import dataclasses
        >>> from gpushare_env.sim.types import JobSpec
        >>> base = JobSpec(0, 0.0, "resnet50", 32, 1, 10, 2.0, 0.5, 0.1)
        >>> jobs = [dataclasses.replace(base, job_id=i, arrival_s=10.0 * i) for i in range(5)]
        >>> run = random_run(jobs, 2, np.random.default_rng(0))
        >>> [j.job_id for j in run], [j.arrival_s for j in run]
        ([3, 4], [0.0, 10.0])
    """
    ordered = sort_jobs(jobs)
    if count is None or count >= len(ordered):
        return ordered
    start = int(rng.integers(0, len(ordered) - count + 1))
    run = ordered[start : start + count]
    origin = run[0].arrival_s
    return [dataclasses.replace(job, arrival_s=job.arrival_s - origin) for job in run]


@dataclass(frozen=True, slots=True)
class FitResult:
    """The jobs that can fit a cluster, and how many were rejected and why.

    Attributes:
        jobs: The jobs kept, in input order.
        rejected: Count per reason: ``"no_gpu"`` (a job without GPUs: only the shares
            model runs it), ``"too_many_gpus"`` (more workers than the cluster has
            GPUs), ``"too_much_memory"`` (a worker larger than the largest GPU) or
            ``"too_few_large_gpus"`` (fewer GPUs with a worker's memory than workers: a
            mixed cluster's case, checked when ``gpu_memory_gib`` is given); under the
            shares model the reasons of ``shares_unfit_reason``.
        rejected_ids: Identifiers of the rejected jobs, in input order.
    """

    jobs: list[JobSpec]
    rejected: dict[str, int] = field(default_factory=dict)
    rejected_ids: tuple[int, ...] = ()

    @property
    def num_rejected(self) -> int:
        """Total rejected jobs."""
        return sum(self.rejected.values())


def fit_to_cluster(
    jobs: Iterable[JobSpec],
    max_gpus: int,
    max_worker_mem_gib: float,
    on_unfit: Literal["reject", "error"] = "reject",
    *,
    gpu_memory_gib: Sequence[float] | np.ndarray | None = None,
    sharing: str = "memory",
    cluster: Cluster | None = None,
) -> FitResult:
    """Drop (or refuse) the jobs that could never be placed on the cluster.

    A job never fits when it asks for more GPUs than the cluster has, when one worker
    needs more memory than the largest GPU, or, on a mixed cluster, when fewer GPUs than
    it has workers have a worker's memory (8 workers of 20 GiB on a cluster with 8 GPUs
    of 40 GiB and many of 16 GiB). Pass ``gpu_memory_gib`` (``Cluster.gpu_memory_gib``)
    for that last, exact check, which the simulator makes too: without it such a job is
    kept here and refused by ``Simulator`` (a ``ValueError`` naming it).

    Args:
        jobs: The workload.
        max_gpus: GPUs in the cluster.
        max_worker_mem_gib: Memory of the largest GPU.  [GiB]
        on_unfit: ``"reject"`` drops such jobs and counts them; ``"error"`` raises.
        gpu_memory_gib: Every GPU's memory, for the exact check.  (G,) [GiB]
        sharing: The simulator's sharing model (``SimConfig.sharing``): its
            ``unfit_reason`` decides (under ``shares``: a node with the job's GPUs of a
            model it allows, its CPU and host memory; ``cluster`` needed).
        cluster: The cluster, for a sharing model whose rule reads its nodes.

    Returns:
        The kept jobs and the rejection counts.

    Raises:
        UnfitJobError: With ``on_unfit="error"``, at the first job that cannot fit, naming
            it, the field and the cluster's limit.
        ValueError: A bad ``on_unfit``, ``max_gpus``, ``max_worker_mem_gib`` or
            ``gpu_memory_gib``.
    """
    if on_unfit not in ("reject", "error"):
        raise ValueError(f"on_unfit must be 'reject' or 'error', got {on_unfit!r}")
    if not (is_int(max_gpus) and 1 <= max_gpus <= MAX_CLUSTER_GPUS):
        raise ValueError(f"max_gpus must be an int in [1, {MAX_CLUSTER_GPUS}], got {max_gpus!r}")
    if not (is_finite(max_worker_mem_gib) and max_worker_mem_gib > 0):
        raise ValueError(f"max_worker_mem_gib must be > 0, got {max_worker_mem_gib!r}")
    if gpu_memory_gib is None:
        # the coarse check: max_gpus GPUs, all as large as the largest
        memory_desc = np.full(int(max_gpus), float(max_worker_mem_gib))
    else:
        memory_desc = np.sort(np.asarray(gpu_memory_gib, dtype=np.float64))[::-1]
        if memory_desc.shape != (max_gpus,) or memory_desc[0] != max_worker_mem_gib:
            raise ValueError(
                f"gpu_memory_gib must hold max_gpus ({max_gpus}) memories, the largest "
                f"max_worker_mem_gib ({max_worker_mem_gib!r}), got {gpu_memory_gib!r}"
            )
    kept: list[JobSpec] = []
    rejected: dict[str, int] = {}
    rejected_ids: list[int] = []
    model = sharing_model(sharing)
    for job in jobs:
        unfit = model.unfit_reason(job, cluster, memory_desc)
        if unfit is None:
            kept.append(job)
            continue
        reason, detail = unfit
        if on_unfit == "error":
            raise UnfitJobError(f"job {job.job_id} can never fit the cluster: {detail}")
        rejected[reason] = rejected.get(reason, 0) + 1
        rejected_ids.append(job.job_id)
    return FitResult(kept, rejected, tuple(rejected_ids))
