"""Typed records shared by the simulator, the workloads and the metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from gpushare_env.sim.catalog import scaling_efficiency
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_BATCH_SIZE,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    MAX_ITERATIONS,
    MAX_JOB_ID,
    MIN_ITER_TIME_S,
    is_int,
    is_real,
    number_text,
    range_text,
)

__all__ = [
    "Event",
    "EventKind",
    "InvalidDecision",
    "JobRecord",
    "JobSpec",
    "JobStatus",
    "Request",
    "Timeline",
]


class JobStatus(IntEnum):
    """Where a job is in its life. Every job is in exactly one of these at a time."""

    FUTURE = 0  # not arrived yet
    PENDING = 1  # arrived, never placed
    RUNNING = 2  # holding GPUs and making progress
    SUSPENDING = 3  # checkpointing: holds memory, no progress, no compute
    SUSPENDED = 4  # checkpointed, holds nothing, waits to be placed again
    RESUMING = 5  # restarting after (re)placement: holds memory, no progress, no compute
    FINISHED = 6


class InvalidDecision(ValueError):
    """A decision the simulator cannot carry out (wrong state, memory, GPU count)."""


class EventKind(IntEnum):
    """Event kinds; the value is the tie-break priority at equal times (lower first)."""

    FINISH = 0
    SUSPEND_DONE = 1
    RESUME_DONE = 2
    SAMPLED = 3
    ARRIVAL = 4


class Event(NamedTuple):
    """Something that happened: what, when, to which job (immutable)."""

    time_s: float  # [s]
    kind: EventKind
    job_id: int


#: Milli-GPU of one whole GPU: a request's ``gpu_milli`` is at most this.
GPU_MILLI = 1000


@dataclass(frozen=True, slots=True)
class Request:
    """What a job asks of the cluster under the requested-shares model
    (``SimConfig.sharing = "shares"``; Kubernetes GPU-share requests, as in Alibaba's
    ``cluster-trace-gpu-v2023``): a share of each of its GPUs, CPU and host memory on its
    node, and the GPU models it may run on. The memory model ignores it.

    Every field is checked on creation (``ValueError`` naming it).

    Attributes:
        gpu_milli: Share of each of its GPUs, in milli-GPU (1-1000; a job of several GPUs
            asks 1000 of each in the trace, but any share is accepted). 0 for a job
            without GPUs (``JobSpec.num_gpus = 0``): it loads CPU and host memory only.
        cpu_milli: CPU of the whole job on its node, in milli-cores (>= 0).
        host_memory_mib: Host memory of the whole job on its node (>= 0).  # [MiB]
        gpu_models: GPU type names the job may run on (``Cluster.gpu_type``); empty: any.
            A job without GPUs may go on any node whatever it names (the FGD
            simulator's rule).
    """

    gpu_milli: int = GPU_MILLI
    cpu_milli: int = 0
    host_memory_mib: int = 0
    gpu_models: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, low, high in (
            ("gpu_milli", 0, GPU_MILLI),
            ("cpu_milli", 0, 2**31 - 1),
            ("host_memory_mib", 0, 2**40),
        ):
            value = getattr(self, name)
            if not (is_int(value) and low <= value <= high):
                raise ValueError(
                    f"request.{name} must be an int {range_text(low, high)}, got {value!r}"
                )
            object.__setattr__(self, name, int(value))
        models = self.gpu_models
        if isinstance(models, list):
            models = tuple(models)
        if not (isinstance(models, tuple) and all(isinstance(m, str) and m for m in models)):
            raise ValueError(
                f"request.gpu_models must be a tuple of GPU type names, got {self.gpu_models!r}"
            )
        object.__setattr__(self, "gpu_models", models)


_INT_FIELDS = ("job_id", "batch_size", "num_gpus", "iterations")
_FLOAT_FIELDS = ("arrival_s", "memory_gib", "intensity", "iter_time_s")


@dataclass(frozen=True, slots=True)
class JobSpec:
    """An immutable description of a training job, as a workload produces it.

    The job is ``iterations`` synchronous data-parallel steps of ``num_gpus`` workers.
    Alone on V100s in one node, one step takes ``iter_time_s / eff(num_gpus)``.

    A job of no GPU (``num_gpus = 0``, a CPU-only task of a GPU cluster's trace) runs
    only under the requested-shares model: it carries a ``request`` of ``gpu_milli = 0``,
    ``memory_gib = 0`` and ``intensity = 0``, holds CPU and host memory on one node, and
    one step takes ``iter_time_s``.

    Every field is checked on creation against the limits of ``gpushare_env.sim.limits``
    (``docs/bad_input.md``); a bad one raises ``ValueError`` naming the job and the field.
    Numpy integers and floats are accepted and stored as Python ``int`` / ``float``;
    ``bool`` is not an integer here.

    Attributes:
        job_id: Unique, non-negative identifier.
        arrival_s: Submission time.  # [s]
        model: Model catalog key (``gpushare_env.sim.catalog.MODELS``).
        batch_size: Per-worker batch size.
        num_gpus: Number of workers, one per GPU (0: a job without GPUs, above).
        iterations: Total synchronous steps.
        memory_gib: Per-worker GPU memory.  # [GiB]
        intensity: Fraction of a GPU's compute one worker uses alone, in (0, 1].
        iter_time_s: Solo time of one step of one worker on a V100.  # [s]
        request: What the job requests under the requested-shares model (``None``: one
            whole GPU per worker, nothing else); the memory model ignores it.
        restart_s: The job's own time to restart from a checkpoint (``None``: its
            model's, ``SimConfig.resume_overhead_s`` overrides both).  # [s]
    """

    job_id: int
    arrival_s: float  # [s]
    model: str
    batch_size: int
    num_gpus: int
    iterations: int
    memory_gib: float  # [GiB]
    intensity: float
    iter_time_s: float  # [s]
    request: Request | None = None
    restart_s: float | None = None  # [s]

    def __post_init__(self) -> None:
        # The fast path (a workload builds 1e5 of these): plain Python numbers within the
        # limits of gpushare_env.sim.limits pass with one test; anything else is examined.
        if not (
            type(self.job_id) is int
            and type(self.batch_size) is int
            and type(self.num_gpus) is int
            and type(self.iterations) is int
            and type(self.arrival_s) is float
            and type(self.memory_gib) is float
            and type(self.intensity) is float
            and type(self.iter_time_s) is float
            and type(self.model) is str
            and 0 <= self.job_id <= MAX_JOB_ID
            and 0.0 <= self.arrival_s <= MAX_ARRIVAL_S
            and 1 <= self.num_gpus <= MAX_CLUSTER_GPUS
            and 1 <= self.iterations <= MAX_ITERATIONS
            and 0.0 < self.memory_gib < math.inf
            and 0.0 < self.intensity <= 1.0
            and MIN_ITER_TIME_S <= self.iter_time_s <= MAX_DURATION_S
            and 1 <= self.batch_size <= MAX_BATCH_SIZE
            and (self.request is None or (type(self.request) is Request and self.request.gpu_milli))
            and self.restart_s is None
        ):
            self._normalise_or_refuse()
        # rounding to whole steps may take a trace's duration of 1e8 s one step beyond
        if not (self.iterations - 1) * self.step_time_s <= MAX_DURATION_S:
            raise ValueError(
                f"job {self.job_id}: the solo duration (iterations x iter_time_s / "
                f"eff(num_gpus)) must be <= {number_text(MAX_DURATION_S)} s, "
                f"got {self.solo_duration_s!r}"
            )

    def _normalise_or_refuse(self) -> None:
        """Store numpy scalars as Python numbers, then raise ``ValueError`` naming every
        field of the wrong type or beyond its limit."""
        problems: list[str] = []
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if type(value) is not int:
                if is_int(value):
                    object.__setattr__(self, name, int(value))
                else:
                    problems.append(f"{name} must be an int, got {value!r}")
        for name in _FLOAT_FIELDS:
            value = getattr(self, name)
            if type(value) is not float:
                try:
                    if not is_real(value):
                        raise TypeError
                    object.__setattr__(self, name, float(value))
                except (TypeError, OverflowError):
                    problems.append(f"{name} must be a finite number, got {value!r}")
        if not isinstance(self.model, str):
            problems.append(f"model must be a str, got {self.model!r}")
        if not (self.request is None or isinstance(self.request, Request)):
            problems.append(f"request must be None or a Request, got {self.request!r}")
        if self.restart_s is not None:
            if is_real(self.restart_s) and 0 <= float(self.restart_s) <= MAX_DURATION_S:
                object.__setattr__(self, "restart_s", float(self.restart_s))
            else:
                problems.append(
                    f"restart_s must be None or a number in {range_text(0, MAX_DURATION_S)}, "
                    f"got {self.restart_s!r}"
                )
        if problems:
            raise ValueError(f"job {self.job_id!r}: " + "; ".join(problems))
        gpu_checks: tuple[tuple[str, bool, str], ...]
        if self.num_gpus == 0:  # a job without GPUs: nothing of a GPU, a request
            gpu_checks = (
                ("memory_gib", self.memory_gib == 0, "0 for a job without GPUs"),
                ("intensity", self.intensity == 0, "0 for a job without GPUs"),
                (
                    "request",
                    self.request is not None and self.request.gpu_milli == 0,
                    "a Request of gpu_milli 0 for a job without GPUs",
                ),
            )
        else:
            gpu_checks = (
                ("memory_gib", 0 < self.memory_gib < math.inf, "finite and > 0"),
                ("intensity", 0 < self.intensity <= 1, range_text(0, 1, low_open=True)),
                (
                    "request",
                    self.request is None or self.request.gpu_milli > 0,
                    "None or a Request of gpu_milli >= 1 for a job with GPUs",
                ),
            )
        checks = (
            ("job_id", 0 <= self.job_id <= MAX_JOB_ID, range_text(0, MAX_JOB_ID)),
            ("arrival_s", 0 <= self.arrival_s <= MAX_ARRIVAL_S, range_text(0, MAX_ARRIVAL_S)),
            ("num_gpus", 0 <= self.num_gpus <= MAX_CLUSTER_GPUS, range_text(0, MAX_CLUSTER_GPUS)),
            ("iterations", 1 <= self.iterations <= MAX_ITERATIONS, range_text(1, MAX_ITERATIONS)),
            *gpu_checks,
            (
                "iter_time_s",
                MIN_ITER_TIME_S <= self.iter_time_s <= MAX_DURATION_S,
                range_text(MIN_ITER_TIME_S, MAX_DURATION_S),
            ),
            ("batch_size", 1 <= self.batch_size <= MAX_BATCH_SIZE, range_text(1, MAX_BATCH_SIZE)),
        )
        for name, ok, allowed in checks:
            if not ok:
                problems.append(f"{name} must be {allowed}, got {getattr(self, name)!r}")
        if problems:
            raise ValueError(f"job {self.job_id}: " + "; ".join(problems))

    @property
    def step_time_s(self) -> float:
        """Solo time of one synchronous step of all workers on V100s in one node (of a job
        without GPUs: ``iter_time_s``).  # [s]"""
        if self.num_gpus == 0:
            return self.iter_time_s
        return self.iter_time_s / scaling_efficiency(self.num_gpus)

    @property
    def solo_duration_s(self) -> float:
        """Exclusive duration alone on V100s in one node.  # [s]"""
        return self.iterations * self.step_time_s


@dataclass(frozen=True, slots=True)
class JobRecord:
    """What happened to one finished job. Metrics are pure functions over these.

    Attributes:
        job_id: The job's identifier.
        model: Model catalog key.
        num_gpus: Number of workers.
        arrival_s: Submission time.  # [s]
        first_start_s: First placement.  # [s]
        finish_s: Completion.  # [s]
        solo_duration_s: Exclusive duration alone on V100s in one node.  # [s]
        gpu_seconds: GPU-time held, overheads included.  # [GPU s]
        overhead_gpu_seconds: GPU-time held while suspending or resuming.  # [GPU s]
        suspends: Completed suspensions.
        resumes: Completed restarts after a suspension.
        migrations: Resumes on a GPU set different from the previous one.
        queued_s: Total time waiting without GPUs (first wait and after suspensions).  # [s]
    """

    job_id: int
    model: str
    num_gpus: int
    arrival_s: float  # [s]
    first_start_s: float  # [s]
    finish_s: float  # [s]
    solo_duration_s: float  # [s]
    gpu_seconds: float  # [GPU s]
    overhead_gpu_seconds: float  # [GPU s]
    suspends: int
    resumes: int
    migrations: int
    queued_s: float  # [s]

    @classmethod
    def of(
        cls,
        spec: JobSpec,
        first_start_s: float,
        finish_s: float,
        gpu_seconds: float,
        overhead_gpu_seconds: float,
        suspends: int,
        resumes: int,
        migrations: int,
        queued_s: float,
    ) -> JobRecord:
        """The record of a finished job: its spec's fields plus what happened to it."""
        return cls(
            job_id=spec.job_id,
            model=spec.model,
            num_gpus=spec.num_gpus,
            arrival_s=spec.arrival_s,
            first_start_s=first_start_s,
            finish_s=finish_s,
            solo_duration_s=spec.solo_duration_s,
            gpu_seconds=gpu_seconds,
            overhead_gpu_seconds=overhead_gpu_seconds,
            suspends=suspends,
            resumes=resumes,
            migrations=migrations,
            queued_s=queued_s,
        )

    @property
    def jct_s(self) -> float:
        """Job completion time: finish - arrival.  # [s]"""
        return self.finish_s - self.arrival_s

    @property
    def queueing_delay_s(self) -> float:
        """First start - arrival.  # [s]"""
        return self.first_start_s - self.arrival_s

    @property
    def slowdown(self) -> float:
        """JCT / solo exclusive duration."""
        return self.jct_s / self.solo_duration_s


@dataclass(frozen=True, slots=True)
class Timeline:
    """Piecewise-constant cluster state over time, one row per change.

    Row ``i`` holds from ``time_s[i]`` until ``time_s[i + 1]`` (the last row until
    ``end_s``). All arrays have the same length ``T``.

    Attributes:
        num_gpus: GPUs in the cluster.
        total_memory_gib: Sum of all GPUs' memory.  # [GiB]
        end_s: Time the simulation stopped.  # [s]
        time_s: Start of each row.  # (T,) [s]
        compute_in_use: Sum over GPUs of ``min(1, U_g)``.  # (T,) [GPUs]
        allocated_gpus: GPUs holding at least one worker.  # (T,) [GPUs]
        free_memory_gib: Free memory over all GPUs.  # (T,) [GiB]
        fragmented_memory_gib: Free memory on partly used GPUs that cannot host the
            workload's median worker.  # (T,) [GiB]
        expected_fragment_gib: FGD-style expected fragment (Weng et al., ATC'23): for each
            GPU, its free memory times the probability that a worker drawn from the
            workload's memory distribution cannot use it.  # (T,) [GiB]
        jobs_in_system: Arrived and unfinished jobs.  # (T,)
        jobs_waiting: Jobs pending or suspended (holding no GPU).  # (T,)
    """

    num_gpus: int
    total_memory_gib: float  # [GiB]
    end_s: float  # [s]
    time_s: np.ndarray  # (T,) [s]
    compute_in_use: np.ndarray  # (T,) [GPUs]
    allocated_gpus: np.ndarray  # (T,) [GPUs]
    free_memory_gib: np.ndarray  # (T,) [GiB]
    fragmented_memory_gib: np.ndarray  # (T,) [GiB]
    expected_fragment_gib: np.ndarray  # (T,) [GiB]
    jobs_in_system: np.ndarray  # (T,)
    jobs_waiting: np.ndarray  # (T,)

    @property
    def durations_s(self) -> np.ndarray:
        """Length of each row.  # (T,) [s]"""
        ends = np.append(self.time_s[1:], self.end_s)
        return np.maximum(ends - self.time_s, 0.0)
