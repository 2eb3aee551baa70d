"""The event-driven simulation core: a GPU cluster running data-parallel training jobs.

Time jumps from event to event (arrival, completion, sampling done, suspend done, resume
done). Between events every running job progresses at its current rate. When the set of
computing workers on a GPU changes, only the jobs on that GPU get a new rate and new
completion / sampling events; stale events stay in the heap and are skipped by version
(lazy deletion), so each event costs O(log E) heap work plus the GPUs and jobs it touches.

Heap entries are ``(time, priority, seq, job_id, version)`` with ``seq`` a running counter (as in
SimPy), so the order of simultaneous events is deterministic:
completions and suspensions first (they free resources), then restarts, sampling, and
arrivals last. Arrivals are read from the sorted job list, not pushed on the heap.

Decisions the engine accepts (from a policy, the env or a test):

* ``place(job_id, gpus)``: start a pending job, or resume a suspended one (a resume on a
  different GPU set is a migration), on an explicit list of GPUs;
* ``schedule(job_id, strategy)``: the same with a named placement strategy;
* ``suspend(job_id)``: checkpoint a running job;
* ``advance()``: let time run to the next event.

Invalid decisions raise ``InvalidDecision`` naming the job and the reason.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.cluster import Cluster
from gpushare_env.sim.interference import InterferenceModel, LinearContention
from gpushare_env.sim.placement import (
    STRATEGIES,
    SingleWorkerIndex,
    expected_fragment,
    find_placement,
)
from gpushare_env.sim.types import JobRecord, JobSpec, JobStatus, Timeline

__all__ = [
    "DURATION_INFO",
    "Event",
    "EventKind",
    "GPUState",
    "InvalidDecision",
    "JobState",
    "SimConfig",
    "Simulator",
    "timeline_from_rows",
]

DURATION_INFO: tuple[str, ...] = ("none", "sampled", "oracle")
_EPS = 1e-9


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


_KINDS: dict[int, EventKind] = {int(k): k for k in EventKind}  # the heap stores plain ints


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Simulator settings.

    Attributes:
        sample_iterations: Steps a job runs before its measured step time is visible.
        sample_noise: Std-dev of the relative measurement error ``eps ~ N(0, noise)``.
        duration_info: What schedulers see of job lengths: ``"none"``, ``"sampled"``
            (after sampling, the default) or ``"oracle"`` (true lengths from arrival).
        suspend_overhead_s: Overrides the per-model checkpoint time when set.  # [s]
        resume_overhead_s: Overrides the per-model restart time when set.  # [s]
        cross_node_factor: Overrides the per-model cross-node factor when set.
        record_timeline: Keep the per-change cluster timeline (needed for utilisation).
    """

    sample_iterations: int = 20
    sample_noise: float = 0.05
    duration_info: str = "sampled"
    suspend_overhead_s: float | None = None  # [s]
    resume_overhead_s: float | None = None  # [s]
    cross_node_factor: float | None = None
    record_timeline: bool = True

    def __post_init__(self) -> None:
        if self.sample_iterations < 0:
            raise ValueError(f"sample_iterations must be >= 0, got {self.sample_iterations}")
        if not 0 <= self.sample_noise < 1:
            raise ValueError(f"sample_noise must be in [0, 1), got {self.sample_noise}")
        if self.duration_info not in DURATION_INFO:
            raise ValueError(
                f"duration_info must be one of {list(DURATION_INFO)}, got {self.duration_info!r}"
            )
        for name in ("suspend_overhead_s", "resume_overhead_s"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        if self.cross_node_factor is not None and not 0 < self.cross_node_factor <= 1:
            raise ValueError(f"cross_node_factor must be in (0, 1], got {self.cross_node_factor}")


@dataclass(slots=True)
class JobState:
    """The mutable state of one job inside the simulator (policies see a ``JobView``)."""

    spec: JobSpec
    noise: float  # relative measurement error of the sampled step time
    suspend_overhead_s: float  # [s]
    resume_overhead_s: float  # [s]
    cross_node_factor: float
    status: JobStatus = JobStatus.FUTURE
    progress: float = 0.0  # [iterations] done as of ``last_update_s``
    last_update_s: float = 0.0  # [s]
    rate: float = 0.0  # [iterations / s]
    speed: float = 0.0  # current rate / solo-exclusive rate
    gpus: tuple[int, ...] = ()
    prev_gpus: tuple[int, ...] = ()
    version: int = 0
    first_start_s: float = math.nan  # [s]
    finish_s: float = math.nan  # [s]
    held_since_s: float = 0.0  # [s]
    gpu_seconds: float = 0.0  # [GPU s]
    overhead_gpu_seconds: float = 0.0  # [GPU s]
    transition_since_s: float = 0.0  # [s] start of the current suspend / resume
    queued_since_s: float = 0.0  # [s]
    queued_s: float = 0.0  # [s]
    suspends: int = 0
    resumes: int = 0
    migrations: int = 0
    sampled: bool = False
    cross_node: bool = False


@dataclass(slots=True)
class GPUState:
    """Per-GPU state arrays the placement strategies and policies read.

    Attributes:
        free_memory_gib: Free memory.  # (G,) [GiB]
        load: Sum of intensities of the computing workers, ``U_g``.  # (G,)
        computing: Number of computing workers, ``k_g``.  # (G,)
        holders: Workers holding memory (computing, suspending or resuming).  # (G,)
        factor: Current speed factor of each computing worker.  # (G,)
        gpu_node: Node of each GPU.  # (G,)
        node_gpus: GPUs of each node, -1 padded.  # (N, M)
        num_nodes: Number of nodes.
        max_jobs_per_gpu: Most workers a GPU may host.
        reference_memory_gib: Sorted worker memories of the workload (for fragments).  # (R,)
        rectangular: ``node_gpus`` is ``arange(G).reshape(N, M)`` (equal nodes, no padding).
    """

    free_memory_gib: np.ndarray
    load: np.ndarray
    computing: np.ndarray
    holders: np.ndarray
    factor: np.ndarray
    gpu_node: np.ndarray
    node_gpus: np.ndarray
    num_nodes: int
    max_jobs_per_gpu: int
    reference_memory_gib: np.ndarray = field(repr=False)
    rectangular: bool = False


class Simulator:
    """A GPU cluster running a fixed list of jobs, driven by decisions from outside.

    Args:
        jobs: The workload; job ids must be unique and every job must fit the cluster.
        cluster: The cluster layout (``make_cluster``).
        config: Simulator settings.
        interference: Co-location slowdown model (default ``LinearContention()``).
        rng: Generator for the sampling noise; one draw per job in job-id order, so the
            noise a job sees does not depend on the schedule.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        cluster: Cluster,
        config: SimConfig | None = None,
        interference: InterferenceModel | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.config = config or SimConfig()
        self.cluster = cluster
        self.interference: InterferenceModel = interference or LinearContention()
        # models without ``uses_models = False`` get the co-located model names
        self._interference_uses_models = bool(getattr(self.interference, "uses_models", True))
        if not jobs:
            raise ValueError("the workload has no jobs")
        ordered = sorted(jobs, key=lambda j: (j.arrival_s, j.job_id))
        self._check_fits(ordered)
        rng = rng if rng is not None else np.random.default_rng(0)
        by_id = sorted(j.job_id for j in ordered)
        noise = rng.normal(0.0, self.config.sample_noise, size=len(by_id))
        noise_of = dict(zip(by_id, np.clip(noise, -0.9, 0.9).tolist(), strict=True))
        cfg = self.config
        self.jobs: dict[int, JobState] = {}
        for spec in ordered:
            model = MODELS.get(spec.model)
            self.jobs[spec.job_id] = JobState(
                spec=spec,
                noise=noise_of[spec.job_id],
                suspend_overhead_s=_pick(cfg.suspend_overhead_s, model, "suspend_overhead_s", 3.0),
                resume_overhead_s=_pick(cfg.resume_overhead_s, model, "resume_overhead_s", 20.0),
                cross_node_factor=_pick(cfg.cross_node_factor, model, "cross_node_factor", 0.8),
            )
        self._arrivals: list[JobSpec] = ordered
        self._next_arrival = 0
        self.now_s: float = 0.0
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0  # tie-break counter (a plain int pickles on every Python)
        g = cluster.num_gpus
        reference = np.sort(np.asarray([j.memory_gib for j in ordered], dtype=np.float64))
        self.gpus = GPUState(
            free_memory_gib=cluster.gpu_memory_gib.copy(),
            load=np.zeros(g),
            computing=np.zeros(g, dtype=np.int64),
            holders=np.zeros(g, dtype=np.int64),
            factor=np.ones(g),
            gpu_node=cluster.gpu_node,
            node_gpus=cluster.node_gpus,
            num_nodes=cluster.num_nodes,
            max_jobs_per_gpu=cluster.max_jobs_per_gpu,
            reference_memory_gib=reference,
            rectangular=bool(
                cluster.node_gpus.size == g
                and np.array_equal(cluster.node_gpus.ravel(), np.arange(g))
            ),
        )
        self._gpu_jobs: list[dict[int, None]] = [{} for _ in range(g)]
        self._gpu_speed: list[float] = cluster.gpu_speed.tolist()
        # one-worker placements without a pass over the cluster (equal-memory GPUs only)
        capacity = cluster.gpu_memory_gib
        self._single: SingleWorkerIndex | None = (
            SingleWorkerIndex(self.gpus, float(capacity[0]))
            if g and bool(np.all(capacity == capacity[0]))
            else None
        )
        # The median worker of the workload defines "fragmented" free memory.
        self._median_worker_gib = float(np.median(reference))
        self._reference_list: list[float] = reference.tolist()
        # Incrementally maintained sums of per-GPU contributions (O(1) per touched GPU).
        # (plain lists: the engine reads and writes them one GPU at a time)
        fgd_part = expected_fragment(self.gpus.free_memory_gib, np.zeros(g, dtype=bool), reference)
        self._util_part: list[float] = [0.0] * g
        self._alloc_part: list[int] = [0] * g
        self._free_part: list[float] = cluster.gpu_memory_gib.tolist()
        self._frag_part: list[float] = [0.0] * g
        self._fgd_part: list[float] = fgd_part.tolist()
        self._util_sum = 0.0
        self._allocated = 0
        self._free_sum = float(cluster.gpu_memory_gib.sum())
        self._frag_sum = 0.0
        self._fgd_sum = float(fgd_part.sum())
        # Queue of jobs waiting for GPUs (pending and suspended), by (arrival, id).
        self._queue: list[tuple[float, int]] = []
        self._running: dict[int, None] = {}  # RUNNING jobs in the order they started
        self._in_transition: dict[int, None] = {}  # SUSPENDING or RESUMING
        self._finished: list[JobRecord] = []
        self._in_system = 0
        self.events_processed = 0
        self.decisions = 0
        self._timeline: list[tuple[float, ...]] = []
        self._record()

    # ------------------------------------------------------------------ queries
    @property
    def done(self) -> bool:
        """True when every job has finished."""
        return len(self._finished) == len(self.jobs)

    @property
    def num_finished(self) -> int:
        """Jobs finished so far."""
        return len(self._finished)

    @property
    def jobs_in_system(self) -> int:
        """Arrived and not finished."""
        return self._in_system

    @property
    def num_waiting(self) -> int:
        """Jobs pending or suspended (holding no GPU)."""
        return len(self._queue)

    @property
    def num_running(self) -> int:
        """Jobs running (computing)."""
        return len(self._running)

    def pending(self, limit: int | None = None) -> list[int]:
        """Ids of waiting jobs (pending and suspended) by arrival, at most ``limit``."""
        part = self._queue if limit is None else self._queue[:limit]
        return [job_id for _, job_id in part]

    def running(self, limit: int | None = None) -> list[int]:
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        if limit is None:
            return list(self._running)
        return list(itertools.islice(self._running, limit))

    def in_transition(self) -> list[int]:
        """Ids of jobs suspending or resuming."""
        return list(self._in_transition)

    def gpu_jobs(self, gpu: int) -> list[int]:
        """Ids of the jobs holding memory on ``gpu``."""
        return list(self._gpu_jobs[gpu])

    def next_event_time(self) -> float | None:
        """Time of the next event, or ``None`` when nothing is left to happen."""
        self._drop_stale()
        times = []
        if self._heap:
            times.append(self._heap[0][0])
        if self._next_arrival < len(self._arrivals):
            times.append(self._arrivals[self._next_arrival].arrival_s)
        return min(times) if times else None

    def progress_of(self, job_id: int) -> float:
        """Iterations done by ``job_id`` as of now."""
        job = self.jobs[job_id]
        return min(job.progress + job.rate * (self.now_s - job.last_update_s), job.spec.iterations)

    def predicted_remaining_s(self, job_id: int) -> float | None:
        """Remaining time alone on V100s as schedulers may know it (``duration_info``).

        ``"oracle"``: the true value; ``"sampled"``: remaining iterations times the measured
        step time once the job is sampled, else ``None``; ``"none"``: always ``None``.
        """
        job = self.jobs[job_id]
        info = self.config.duration_info
        if info == "none":
            return None
        remaining = job.spec.iterations - self.progress_of(job_id)
        if info == "oracle":
            return remaining * job.spec.step_time_s
        if not job.sampled:
            return None
        return remaining * job.spec.step_time_s * (1.0 + job.noise)

    def predicted_work_s(self) -> float:
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system (waiting, then
        running and transitioning; jobs without a prediction count 0).  [GPU s]"""
        work = 0.0
        jobs = self.jobs
        for job_id in itertools.chain(self.pending(), self.running(), self._in_transition):
            remaining = self.predicted_remaining_s(job_id)
            if remaining is not None:
                work += remaining * jobs[job_id].spec.num_gpus
        return work

    def measured_step_time_s(self, job_id: int) -> float | None:
        """Measured solo step time once sampled (``None`` before, or if info is none)."""
        job = self.jobs[job_id]
        if self.config.duration_info == "oracle":
            return job.spec.step_time_s
        if self.config.duration_info == "none" or not job.sampled:
            return None
        return job.spec.step_time_s * (1.0 + job.noise)

    def find_placement(self, job_id: int, strategy: str) -> tuple[int, ...] | None:
        """GPUs the named strategy would give ``job_id`` now, or ``None``."""
        spec = self.jobs[job_id].spec
        single = self._single
        if single is not None:
            if spec.num_gpus == 1:
                return single.find(strategy, spec.memory_gib)
            if strategy == "exclusive":
                return single.find_exclusive(spec.num_gpus, spec.memory_gib)
        return find_placement(strategy, self.gpus, spec.num_gpus, spec.memory_gib)

    # ---------------------------------------------------------------- decisions
    def schedule(self, job_id: int, strategy: str) -> tuple[int, ...]:
        """Place ``job_id`` with a named strategy; raise ``InvalidDecision`` if it does not fit."""
        if strategy not in STRATEGIES:
            raise InvalidDecision(
                f"job {job_id}: unknown strategy {strategy!r}; allowed: {list(STRATEGIES)}"
            )
        job = self._require_waiting(job_id)
        gpus = self.find_placement(job_id, strategy)
        if gpus is None:
            spec = self.jobs[job_id].spec
            raise InvalidDecision(
                f"job {job_id}: {spec.num_gpus} worker(s) of {spec.memory_gib:g} GiB do not "
                f"fit now with strategy {strategy!r}"
            )
        self._occupy(job, gpus)  # a strategy's answer is sorted, distinct and fits
        return gpus

    def place(self, job_id: int, gpus: Iterable[int]) -> None:
        """Start (or resume) a waiting job on explicit GPUs.

        Raises:
            InvalidDecision: the job is not waiting, the GPU count or indices are wrong,
                or a GPU lacks memory or a worker slot.
        """
        job = self._require_waiting(job_id)
        gpu_list = tuple(sorted(int(g) for g in gpus))
        spec = job.spec
        if len(gpu_list) != spec.num_gpus:
            raise InvalidDecision(
                f"job {job_id}: needs {spec.num_gpus} GPU(s), got {len(gpu_list)}: {gpu_list}"
            )
        if len(set(gpu_list)) != len(gpu_list):
            raise InvalidDecision(f"job {job_id}: GPUs must be distinct, got {gpu_list}")
        state = self.gpus
        num_gpus = len(self._gpu_jobs)
        free_of = state.free_memory_gib.item
        holders_of = state.holders.item
        for g in gpu_list:
            if not 0 <= g < num_gpus:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} does not exist (cluster has {num_gpus})"
                )
            if free_of(g) + _EPS < spec.memory_gib:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} has {free_of(g):.2f} GiB free, "
                    f"a worker needs {spec.memory_gib:g} GiB (memory)"
                )
            if holders_of(g) >= state.max_jobs_per_gpu:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} already hosts {state.max_jobs_per_gpu} workers "
                    "(max_jobs_per_gpu)"
                )
        self._occupy(job, gpu_list)

    def _occupy(self, job: JobState, gpu_list: tuple[int, ...]) -> None:
        """Carry out a checked placement: ``gpu_list`` sorted, distinct, with room."""
        job_id = job.spec.job_id
        spec = job.spec
        state = self.gpus
        free_of = state.free_memory_gib.item
        holders_of = state.holders.item
        self.decisions += 1
        now = self.now_s
        self._dequeue(job)
        job.gpus = gpu_list
        job.held_since_s = now
        if len(gpu_list) > 1:
            node_of = state.gpu_node.item
            job.cross_node = len({node_of(g) for g in gpu_list}) > 1
        else:
            job.cross_node = False
        single = self._single
        free = state.free_memory_gib
        holders = state.holders
        memory = spec.memory_gib
        for g in gpu_list:
            free[g] = free_of(g) - memory
            held = holders_of(g) + 1
            holders[g] = held
            self._gpu_jobs[g][job_id] = None
            if single is not None:
                single.refresh(g)
        self._touch_memory(gpu_list)
        if job.status == JobStatus.PENDING:
            job.first_start_s = now
            self._start_compute(job)
        else:  # SUSPENDED: restart first, holding the GPUs without progress
            job.status = JobStatus.RESUMING
            job.transition_since_s = now
            self._in_transition[job_id] = None
            job.version += 1
            self._push(now + job.resume_overhead_s, EventKind.RESUME_DONE, job)
        self._record()

    def suspend(self, job_id: int) -> None:
        """Checkpoint a running job: it keeps its GPUs for its suspend overhead, then waits.

        Raises:
            InvalidDecision: the job is not running.
        """
        job = self.jobs.get(job_id)
        if job is None:
            raise InvalidDecision(f"job {job_id}: no such job")
        if job.status != JobStatus.RUNNING:
            raise InvalidDecision(
                f"job {job_id}: only a running job can be suspended; it is {job.status.name}"
            )
        self.decisions += 1
        self._stop_compute(job, JobStatus.SUSPENDING)
        self._touch_compute(job.gpus)
        job.transition_since_s = self.now_s
        self._in_transition[job_id] = None
        self._push(self.now_s + job.suspend_overhead_s, EventKind.SUSPEND_DONE, job)
        self._record()

    def advance(self) -> list[Event]:
        """Run time to the next event and process every event at that instant.

        Returns:
            The events processed, in order.

        Raises:
            RuntimeError: nothing is left to happen (all jobs finished, or the remaining
                ones wait for a decision that never comes).
        """
        t = self.next_event_time()
        if t is None:
            waiting = len(self._queue)
            raise RuntimeError(
                "advance(): no event left"
                + (f" and {waiting} job(s) waiting: place them first" if waiting else "")
            )
        self.now_s = t
        events: list[Event] = []
        heap = self._heap
        while True:
            self._drop_stale()
            if heap and heap[0][0] <= t:
                _, kind, _, job_id, _ = heapq.heappop(heap)
                events.append(self._handle(_KINDS[kind], job_id))
            elif (
                self._next_arrival < len(self._arrivals)
                and self._arrivals[self._next_arrival].arrival_s <= t
            ):
                spec = self._arrivals[self._next_arrival]
                self._next_arrival += 1
                events.append(self._arrive(self.jobs[spec.job_id]))
            else:
                break
        self.events_processed += len(events)
        self._record()
        return events

    # ----------------------------------------------------------------- results
    def records(self) -> list[JobRecord]:
        """Records of the finished jobs, in finishing order."""
        return list(self._finished)

    def timeline(self) -> Timeline:
        """The cluster timeline up to now."""
        rows = np.asarray(self._timeline, dtype=np.float64).reshape(-1, 8)
        return timeline_from_rows(rows, self.cluster, self.now_s)

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` if the state is inconsistent (for tests; O(G + J))."""
        state = self.gpus
        used = np.zeros(self.cluster.num_gpus)
        load = np.zeros(self.cluster.num_gpus)
        holders = np.zeros(self.cluster.num_gpus, dtype=np.int64)
        queued = set(self._queue)
        assert len(queued) == len(self._queue), "a job is queued twice"
        for job_id, job in self.jobs.items():
            holds = job.status in (JobStatus.RUNNING, JobStatus.SUSPENDING, JobStatus.RESUMING)
            assert bool(job.gpus) == holds, f"job {job_id} {job.status.name} gpus={job.gpus}"
            for g in job.gpus:
                used[g] += job.spec.memory_gib
                holders[g] += 1
                if job.status == JobStatus.RUNNING:
                    load[g] += job.spec.intensity
            assert self.progress_of(job_id) <= job.spec.iterations + 1e-6
            in_queue = job.status in (JobStatus.PENDING, JobStatus.SUSPENDED)
            assert in_queue == ((job.spec.arrival_s, job_id) in queued), job_id
            assert (job.status == JobStatus.RUNNING) == (job_id in self._running), job_id
        assert np.all(used <= self.cluster.gpu_memory_gib + 1e-6), "memory over-committed"
        assert np.allclose(state.free_memory_gib, self.cluster.gpu_memory_gib - used)
        assert np.allclose(state.load, load)
        assert np.array_equal(state.holders, holders)
        assert np.all(holders <= state.max_jobs_per_gpu)
        assert self._allocated == int(np.count_nonzero(holders))
        assert math.isclose(self._util_sum, float(np.minimum(load, 1.0).sum()), abs_tol=1e-6)

    # ---------------------------------------------------------------- internals
    def _check_fits(self, jobs: Sequence[JobSpec]) -> None:
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            seen: set[int] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"job {dup}: duplicate job_id in the workload")
        biggest = float(self.cluster.gpu_memory_gib.max())
        for j in jobs:
            if j.num_gpus > self.cluster.num_gpus:
                raise ValueError(
                    f"job {j.job_id}: needs {j.num_gpus} GPUs, the cluster has "
                    f"{self.cluster.num_gpus} (filter the workload with fit_to_cluster)"
                )
            if j.memory_gib > biggest + _EPS:
                raise ValueError(
                    f"job {j.job_id}: a worker needs {j.memory_gib:g} GiB, the largest GPU "
                    f"has {biggest:g} GiB"
                )

    def _require_waiting(self, job_id: int) -> JobState:
        job = self.jobs.get(job_id)
        if job is None:
            raise InvalidDecision(f"job {job_id}: no such job")
        if job.status not in (JobStatus.PENDING, JobStatus.SUSPENDED):
            raise InvalidDecision(
                f"job {job_id}: only a pending or suspended job can be placed; "
                f"it is {job.status.name}"
            )
        return job

    def _push(self, time_s: float, kind: EventKind, job: JobState) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time_s, int(kind), self._seq, job.spec.job_id, job.version))

    def _drop_stale(self) -> None:
        heap = self._heap
        jobs = self.jobs
        while heap and heap[0][4] != jobs[heap[0][3]].version:
            heapq.heappop(heap)

    def _enqueue(self, job: JobState) -> None:
        bisect.insort(self._queue, (job.spec.arrival_s, job.spec.job_id))
        job.queued_since_s = self.now_s

    def _dequeue(self, job: JobState) -> None:
        key = (job.spec.arrival_s, job.spec.job_id)
        i = bisect.bisect_left(self._queue, key)
        del self._queue[i]
        job.queued_s += self.now_s - job.queued_since_s

    def _arrive(self, job: JobState) -> Event:
        job.status = JobStatus.PENDING
        self._in_system += 1
        self._enqueue(job)
        return Event(self.now_s, EventKind.ARRIVAL, job.spec.job_id)

    def _handle(self, kind: EventKind, job_id: int) -> Event:
        job = self.jobs[job_id]
        now = self.now_s
        if kind == EventKind.FINISH:
            self._finish(job)
        elif kind == EventKind.SAMPLED:
            self._fold(job)
            job.sampled = True
        elif kind == EventKind.SUSPEND_DONE:
            del self._in_transition[job_id]
            job.overhead_gpu_seconds += (now - job.transition_since_s) * job.spec.num_gpus
            job.suspends += 1
            self._release(job)
            self._touch_memory(job.prev_gpus)  # it stopped computing when suspended
            job.status = JobStatus.SUSPENDED
            self._enqueue(job)
        elif kind == EventKind.RESUME_DONE:
            del self._in_transition[job_id]
            job.overhead_gpu_seconds += (now - job.transition_since_s) * job.spec.num_gpus
            job.resumes += 1
            if job.prev_gpus and job.prev_gpus != job.gpus:
                job.migrations += 1
            self._start_compute(job)
        return Event(now, kind, job_id)

    def _fold(self, job: JobState) -> None:
        """Bring ``job.progress`` up to now at its current rate."""
        now = self.now_s
        if job.rate > 0.0:
            job.progress = min(
                job.progress + job.rate * (now - job.last_update_s), float(job.spec.iterations)
            )
        job.last_update_s = now

    def _start_compute(self, job: JobState) -> None:
        job.status = JobStatus.RUNNING
        self._running[job.spec.job_id] = None
        state = self.gpus
        u = job.spec.intensity
        load = state.load
        computing = state.computing
        for g in job.gpus:
            load[g] = load.item(g) + u
            computing[g] = computing.item(g) + 1
        job.last_update_s = self.now_s
        job.rate = 0.0
        self._touch_compute(job.gpus, force=job)

    def _stop_compute(self, job: JobState, status: JobStatus) -> None:
        """Stop a running job's progress and compute; the caller touches its GPUs."""
        self._fold(job)
        job.status = status
        job.rate = 0.0
        job.speed = 0.0
        job.version += 1  # invalidates its FINISH / SAMPLED events
        del self._running[job.spec.job_id]
        state = self.gpus
        u = job.spec.intensity
        load = state.load
        computing = state.computing
        for g in job.gpus:
            left = computing.item(g) - 1
            computing[g] = left
            load[g] = load.item(g) - u if left > 0 else 0.0

    def _release(self, job: JobState) -> None:
        """Free a job's memory and worker slots (it computes no more); caller touches GPUs."""
        state = self.gpus
        spec = job.spec
        job.gpu_seconds += (self.now_s - job.held_since_s) * spec.num_gpus
        free = state.free_memory_gib
        holders = state.holders
        memory = spec.memory_gib
        single = self._single
        for g in job.gpus:
            held = holders.item(g) - 1
            holders[g] = held
            if held == 0:
                # no drift: an empty GPU's memory is exactly its capacity
                free[g] = self.cluster.gpu_memory_gib[g]
            else:
                free[g] = free.item(g) + memory
            if single is not None:
                single.refresh(g)
            del self._gpu_jobs[g][spec.job_id]
        job.prev_gpus = job.gpus
        job.gpus = ()

    def _finish(self, job: JobState) -> None:
        job.progress = float(job.spec.iterations)
        job.rate = 0.0
        self._stop_compute(job, JobStatus.FINISHED)
        self._release(job)
        self._touch_memory(job.prev_gpus)
        self._touch_compute(job.prev_gpus)
        job.finish_s = self.now_s
        self._in_system -= 1
        record = JobRecord.of(
            job.spec, job.first_start_s, job.finish_s, job.gpu_seconds,
            job.overhead_gpu_seconds, job.suspends, job.resumes, job.migrations, job.queued_s,
        )  # fmt: skip
        self._finished.append(record)

    def _touch_compute(self, gpus: Iterable[int], force: JobState | None = None) -> None:
        """The computing workers of ``gpus`` changed: new factors, utilisation, job rates."""
        state = self.gpus
        interference = self.interference
        uses_models = self._interference_uses_models
        affected: dict[int, None] = {}
        computing = state.computing.item
        load_of = state.load.item
        factor = state.factor
        gpu_jobs = self._gpu_jobs
        util_part = self._util_part
        for g in gpus:
            k = computing(g)
            load = load_of(g)
            on_gpu = gpu_jobs[g]
            if k > 0:
                models = (
                    [self.jobs[j].spec.model for j in on_gpu if self._computes(j)]
                    if uses_models
                    else ()
                )
                factor[g] = interference.factor(load, k, models)
            else:
                factor[g] = 1.0
            affected.update(on_gpu)
            util = load if load < 1.0 else 1.0
            self._util_sum += util - util_part[g]
            util_part[g] = util
        if force is not None:
            affected[force.spec.job_id] = None
        jobs = self.jobs
        running = JobStatus.RUNNING
        for j in affected:
            job = jobs[j]
            if job.status == running:
                self._update_rate(job, force=job is force)

    def _touch_memory(self, gpus: Iterable[int]) -> None:
        """The memory or workers held on ``gpus`` changed: the cluster's memory sums."""
        state = self.gpus
        max_jobs = state.max_jobs_per_gpu
        median = self._median_worker_gib
        reference = self._reference_list
        free_of = state.free_memory_gib.item
        holders_of = state.holders.item
        alloc_part = self._alloc_part
        free_part = self._free_part
        frag_part = self._frag_part
        fgd_part = self._fgd_part
        for g in gpus:
            free = free_of(g)
            holders = holders_of(g)
            alloc = 1 if holders > 0 else 0
            self._allocated += alloc - alloc_part[g]
            alloc_part[g] = alloc
            self._free_sum += free - free_part[g]
            free_part[g] = free
            frag = free if holders > 0 and (free + _EPS < median or holders >= max_jobs) else 0.0
            self._frag_sum += frag - frag_part[g]
            frag_part[g] = frag
            if holders >= max_jobs:
                fgd = free
            else:
                fits = bisect.bisect_right(reference, free + _EPS)
                fgd = free * (1.0 - fits / len(reference))
            self._fgd_sum += fgd - fgd_part[g]
            fgd_part[g] = fgd

    def _computes(self, job_id: int) -> bool:
        return self.jobs[job_id].status == JobStatus.RUNNING

    def _update_rate(self, job: JobState, force: bool = False) -> None:
        factor = self.gpus.factor.item
        speed = self._gpu_speed
        gpus = job.gpus
        if len(gpus) == 1:
            g = gpus[0]
            slowest = factor(g) * speed[g]
        else:
            slowest = min(factor(g) * speed[g] for g in gpus)
        if job.cross_node:
            slowest *= job.cross_node_factor
        spec = job.spec
        rate = slowest / spec.step_time_s
        if not force and rate == job.rate:
            return
        self._fold(job)
        job.rate = rate
        job.speed = slowest
        job.version += 1
        now = self.now_s
        remaining = spec.iterations - job.progress
        # snap float dust so simultaneous finishes stay simultaneous
        finish_in = 0.0 if remaining <= 1e-9 * spec.iterations else remaining / rate
        self._push(now + finish_in, EventKind.FINISH, job)
        target = self.config.sample_iterations
        if not job.sampled:
            if job.progress >= target:
                job.sampled = True
            elif target < spec.iterations:
                self._push(now + (target - job.progress) / rate, EventKind.SAMPLED, job)

    def _record(self) -> None:
        if not self.config.record_timeline:
            return
        row = (
            self.now_s,
            self._util_sum,
            float(self._allocated),
            self._free_sum,
            self._frag_sum,
            self._fgd_sum,
            float(self._in_system),
            float(len(self._queue)),
        )
        timeline = self._timeline
        if timeline and timeline[-1][0] == self.now_s:
            timeline[-1] = row
        else:
            timeline.append(row)


def timeline_from_rows(rows: np.ndarray, cluster: Cluster, end_s: float) -> Timeline:
    """A ``Timeline`` from rows of ``(time, compute_in_use, allocated_gpus, free_memory,
    fragmented_memory, expected_fragment, jobs_in_system, jobs_waiting)``.  # (T, 8)"""
    return Timeline(
        num_gpus=cluster.num_gpus,
        total_memory_gib=float(cluster.gpu_memory_gib.sum()),
        end_s=end_s,
        time_s=rows[:, 0],
        compute_in_use=rows[:, 1],
        allocated_gpus=rows[:, 2],
        free_memory_gib=rows[:, 3],
        fragmented_memory_gib=rows[:, 4],
        expected_fragment_gib=rows[:, 5],
        jobs_in_system=rows[:, 6],
        jobs_waiting=rows[:, 7],
    )


def _pick(override: float | None, model: object, attribute: str, default: float) -> float:
    """A config override, else the model's own figure, else a default for unknown models."""
    if override is not None:
        return override
    if model is None:
        return default
    return float(getattr(model, attribute))
