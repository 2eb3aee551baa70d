"""The MISO artifact's 1 s time loop for its four policies, in pure Python.

:func:`run_artifact_loop` plays the scenario of :mod:`gpushare_env.workloads.miso` (100 jobs
on 8 A100-40GB, the artifact's random draws for ``seed``) the way the artifact's classes
``full_paper``, ``static_paper``, ``miso_paper`` and ``oracle_paper``
(``mps/scheduler/experiment/paper_eval.py`` of ``gajagajago/socc22-miso``) do, so that its
stored average JCTs (:data:`~gpushare_env.workloads.miso.MISO_STORED_AVG_JCT_S`) are
reproduced. The rules are in ``docs/design/miso_protocol.md``; the searches are
:mod:`baselines.mig.search`.

Each iteration, at whole second ``T`` (starting at 0):

1. jobs with arrival ``<= T`` join the queue;
2. the queue is scheduled on all GPUs (``mig_full``, ``miso``, ``mig_oracle``: strict FIFO,
   stopping at the first job that cannot be placed; ``mig_static``: every queued job is
   tried); a job placed starts at ``T``;
3. ``T += 1``;
4. overheads that are over end (``T - start >= overhead``); then (``miso``) profiling that
   is over ends (``T - start >= profiling_s``) and every job on that GPU starts a checkpoint
   overhead at ``T``;
5. every active job progresses by 0 in overhead, ``1 / mps_rate`` on a profiling GPU, else
   ``1 / slowdown`` (true slowdowns); a job whose remaining length minus that is ``<= 0``
   finishes at ``T`` and its slice becomes idle;
6. the queue is scheduled again, on the GPUs where a job finished in step 5 only;
7. clean-up: ``mig_static`` promotes jobs into larger idle slices on every GPU;
   ``miso`` and ``mig_oracle``, when the queue is empty, re-pack every GPU that has an idle
   slice (and, for ``miso``, is not profiling), checkpointing the jobs that move;
8. the run ends when every job has arrived and finished.

``miso`` decides (admission, placement, re-packing) from the predicted slowdowns, the
others from the true ones; progress always uses the true ones. Seconds in which nothing is
active, queued or profiling are skipped (they change nothing).

>>> result = run_artifact_loop("mig_full")
>>> result.avg_jct_s, result.makespan_s
(2371.06, 11641)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from baselines.mig.search import (
    SlowdownTable,
    admission_size,
    best_placement,
    canonical_table,
    moved_jobs,
    static_promotions,
)
from gpushare_env.workloads.miso import (
    PROFILE_SLICES,
    MisoJob,
    artifact_normalized_latencies,
    miso_jobs,
    miso_scenario_draws,
)

__all__ = [
    "POLICIES",
    "STATIC_PARTITION",
    "ArtifactResult",
    "JobOutcome",
    "TimelineEntry",
    "run_artifact_loop",
]

#: The artifact's four policies for this scenario (its folders: full, static, miso, oracle).
POLICIES: tuple[str, ...] = ("mig_full", "mig_static", "miso", "mig_oracle")

#: ``mig_static``'s fixed partition (the artifact's partition code 6).
STATIC_PARTITION: tuple[int, ...] = (3, 2, 2)

_WHOLE: tuple[int, ...] = (7,)
_STRICT_FIFO = frozenset({"mig_full", "miso", "mig_oracle"})


class TimelineEntry(NamedTuple):
    """A GPU's partition from ``time_s`` on, until its next entry.

    Attributes:
        time_s: When the GPU took this partition and assignment [s].
        gpu: The GPU's index.
        partition: Slice sizes in position order.
        jobs: The job id on each slice, ``None`` for an idle slice.
    """

    time_s: int
    gpu: int
    partition: tuple[int, ...]
    jobs: tuple[int | None, ...]


@dataclass(frozen=True)
class JobOutcome:
    """One job's run.

    Attributes:
        job_id: The trace's job id.
        length_s: Length alone on a whole A100, as the artifact takes it (whole seconds).
        arrival_s: Arrival time [s].
        start_s: When it was first placed [s] (the artifact's ``sched_time``).
        finish_s: When it finished [s].
        migrations: How many times it was checkpointed and restarted.
    """

    job_id: int
    length_s: int
    arrival_s: int
    start_s: int
    finish_s: int
    migrations: int

    @property
    def jct_s(self) -> int:
        """Job completion time: finish - arrival [s]."""
        return self.finish_s - self.arrival_s

    @property
    def queueing_s(self) -> int:
        """Time queued before the first placement: start - arrival [s]."""
        return self.start_s - self.arrival_s


@dataclass(frozen=True)
class ArtifactResult:
    """The result of :func:`run_artifact_loop`.

    Attributes:
        policy: One of :data:`POLICIES`.
        seed: The scenario's seed.
        num_gpus: GPUs in the cluster.
        jobs: Each job's outcome, by job id.
        makespan_s: When the last job finished [s].
        timeline: Every GPU's partition over time: an entry at time 0 for each GPU, then one
            each time a GPU's partition or assignment changes (in the order they happen).
    """

    policy: str
    seed: int
    num_gpus: int
    jobs: tuple[JobOutcome, ...]
    makespan_s: int
    timeline: tuple[TimelineEntry, ...]

    @property
    def avg_jct_s(self) -> float:
        """Mean JCT over the jobs [s] (the artifact's ``JCT.json`` ``average``)."""
        return _mean([j.jct_s for j in self.jobs])

    @property
    def avg_queueing_s(self) -> float:
        """Mean queueing time [s] (the artifact's ``QT.json`` ``average``)."""
        return _mean([j.queueing_s for j in self.jobs])

    @property
    def avg_migrations(self) -> float:
        """Mean number of checkpoints per job (the artifact's ``migration.json`` ``average``)."""
        return _mean([j.migrations for j in self.jobs])

    def gpu_timeline(self, gpu: int) -> list[TimelineEntry]:
        """The entries of one GPU, in time order."""
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < self.num_gpus:
            raise ValueError(f"gpu must be an int in [0, {self.num_gpus}), got {gpu!r}")
        return [e for e in self.timeline if e.gpu == gpu]


def _mean(values: Sequence[int]) -> float:
    return float(np.mean(values))


class _Gpu:
    """A GPU's mutable state: partition, job per slice, and the largest job it admits."""

    __slots__ = ("index", "jobs", "max_allowed", "partition")

    def __init__(self, index: int, partition: tuple[int, ...], max_allowed: int | None) -> None:
        self.index = index
        self.partition = partition
        self.jobs: list[int | None] = [None] * len(partition)
        self.max_allowed = max_allowed

    def active(self) -> list[int]:
        return [j for j in self.jobs if j is not None]

    def largest_idle(self) -> tuple[int | None, int | None]:
        """Size and index of the largest idle slice (the first of that size)."""
        best_size, best_index = None, None
        for k, (size, job) in enumerate(zip(self.partition, self.jobs, strict=True)):
            if job is None and (best_size is None or size > best_size):
                best_size, best_index = size, k
        return best_size, best_index


def run_artifact_loop(
    policy: str,
    seed: int = 9,
    *,
    jobs: Sequence[MisoJob] | None = None,
    num_gpus: int = 8,
    profiling_s: int = 30,
    mps_rate: float = 3,
) -> ArtifactResult:
    """Play the MISO scenario with the artifact's 1 s time loop for ``policy``.

    Args:
        policy: ``"mig_full"`` (whole GPUs), ``"mig_static"`` (every GPU ``(3, 2, 2)``),
            ``"miso"`` (profiling, then placement by predicted slowdowns) or
            ``"mig_oracle"`` (placement by true slowdowns, no profiling).
        seed: The scenario's seed (the artifact's ``--seed``; its stored results are 9).
        jobs: The scenario's jobs, ids 0 to ``n - 1`` in that order; default
            :func:`~gpushare_env.workloads.miso.miso_jobs`.
        num_gpus: GPUs (``--num_gpu``).
        profiling_s: ``miso``'s profiling time per placement (``--mps_time``) [s]; a job
            still in overhead when profiling ends restarts its overhead.
        mps_rate: ``miso`` runs every job of a profiling GPU at ``1 / mps_rate`` of its
            whole-GPU speed (``--mps_rate``).

    Raises:
        ValueError: A bad argument (named in the message).
        RuntimeError: A job that can never be placed (e.g. one that fits no slice of
            ``mig_static``'s partition), or a placement the artifact's search cannot make.
    """
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, (int, np.integer)) or num_gpus < 1:
        raise ValueError(f"num_gpus must be an int >= 1, got {num_gpus!r}")
    if (
        isinstance(profiling_s, bool)
        or not isinstance(profiling_s, (int, np.integer))
        or profiling_s < 0
    ):
        raise ValueError(f"profiling_s must be an int >= 0 (seconds), got {profiling_s!r}")
    if (
        isinstance(mps_rate, bool)
        or not isinstance(mps_rate, (int, float))
        or not math.isfinite(mps_rate)
        or mps_rate <= 0
    ):
        raise ValueError(f"mps_rate must be a finite number > 0, got {mps_rate!r}")
    scenario = miso_jobs() if jobs is None else list(jobs)
    if not scenario:
        raise ValueError("jobs must hold at least one job")
    for position, job in enumerate(scenario):
        if not isinstance(job, MisoJob):
            raise ValueError(f"jobs[{position}] must be a MisoJob, got {type(job).__name__}")
        if job.job_id != position:
            raise ValueError(
                f"jobs must have ids 0 to {len(scenario) - 1} in order; "
                f"jobs[{position}] has id {job.job_id}"
            )
    return _Loop(policy, int(seed), scenario, int(num_gpus), int(profiling_s), mps_rate).run()


def _slowdowns(latencies: dict[str, float]) -> SlowdownTable:
    """A normalised latency table (profile -> value) as a slowdown table (size -> value)."""
    whole = latencies["7g.40gb"]
    return canonical_table({PROFILE_SLICES[p]: v / whole for p, v in latencies.items()})


class _Loop:
    """One run of the artifact's loop (the state of ``*_paper.run``)."""

    def __init__(
        self,
        policy: str,
        seed: int,
        scenario: list[MisoJob],
        num_gpus: int,
        profiling_s: int,
        mps_rate: float,
    ) -> None:
        self.policy = policy
        self.seed = seed
        self.profiling_s = profiling_s
        self.profiling_step = 1 / mps_rate
        draws, predicted = miso_scenario_draws(seed, scenario)
        n = len(scenario)
        self.n = n
        self.lengths = [job.artifact_duration_s for job in scenario]
        self.order = list(draws.order)
        self.arrival = [0] * n
        for job_id, time in zip(draws.order, draws.arrival_s, strict=True):
            self.arrival[job_id] = time
        self.overhead = list(draws.overhead_s)
        self.actual = [_slowdowns(artifact_normalized_latencies(job)) for job in scenario]
        self.predicted = [_slowdowns(predicted[job.job_id]) for job in scenario]
        # what the policy decides from; progress always uses the true slowdowns
        self.decide = self.predicted if policy == "miso" else self.actual
        self.min_size = [min(size for size, _ in table) for table in self.decide]
        # progress per 1 s step on each size: step / slowdown, as the artifact divides
        self.step_on = [{size: 1 / slow for size, slow in table} for table in self.actual]

        if policy == "mig_static":
            gpus = [_Gpu(g, STATIC_PARTITION, max(STATIC_PARTITION)) for g in range(num_gpus)]
        else:
            gpus = [_Gpu(g, _WHOLE, 7) for g in range(num_gpus)]
        self.gpus = gpus
        self.remaining: list[float] = [float(x) for x in self.lengths]
        self.start = [0] * n
        self.finish: list[int | None] = [None] * n
        self.migrations = [0] * n
        self.queue: list[int] = []
        self.overhead_start: dict[int, int] = {}  # job -> start of its current overhead
        self.profiling_start: dict[int, int] = {}  # gpu index -> start of its profiling
        self.time = 0
        self.timeline: list[TimelineEntry] = []
        self.last_recorded: dict[int, tuple[tuple[int, ...], tuple[int | None, ...]]] = {}
        for gpu in gpus:
            self._record(gpu)

    # ---------------------------------------------------------------- bookkeeping

    def _record(self, gpu: _Gpu) -> None:
        state = (gpu.partition, tuple(gpu.jobs))
        if self.last_recorded.get(gpu.index) != state:
            self.last_recorded[gpu.index] = state
            self.timeline.append(TimelineEntry(self.time, gpu.index, *state))

    def _checkpoint(self, job: int) -> None:
        """The job is checkpointed now: one more migration, its overhead (re)starts."""
        self.migrations[job] += 1
        self.overhead_start[job] = self.time

    def _update_admission(self, gpu: _Gpu) -> None:
        if self.policy == "mig_full":
            gpu.max_allowed = 7 if gpu.jobs == [None] else None
        elif self.policy == "mig_static":
            gpu.max_allowed = gpu.largest_idle()[0]
        else:
            gpu.max_allowed = admission_size([self.min_size[j] for j in gpu.active()])

    # ---------------------------------------------------------------- placing

    def _try_place(self, job: int, gpus: Sequence[_Gpu]) -> bool:
        policy = self.policy
        if policy == "mig_full":
            for gpu in gpus:
                if gpu.jobs == [None]:
                    gpu.jobs = [job]
                    gpu.max_allowed = None
                    self._record(gpu)
                    return True
            return False
        if policy == "mig_static":
            # the GPU whose largest idle slice is largest (first on ties); only that slice
            candidates = [g for g in gpus if g.max_allowed is not None]
            if not candidates:
                return False
            gpu = max(candidates, key=lambda g: g.largest_idle()[0] or 0)
            size, index = gpu.largest_idle()
            if size is None or index is None or size < self.min_size[job]:
                return False
            gpu.jobs[index] = job
            self._update_admission(gpu)
            self._record(gpu)
            return True
        # miso and mig_oracle: fewest active jobs among the GPUs that admit it
        need = self.min_size[job]
        allowed = [
            g
            for g in gpus
            if g.max_allowed is not None
            and g.max_allowed >= need
            and g.index not in self.profiling_start
        ]
        if not allowed:
            return False
        gpu = min(allowed, key=lambda g: len(g.active()))
        active = gpu.active()
        for other in active:
            self._checkpoint(other)
        if policy == "miso":
            self.profiling_start[gpu.index] = self.time
        placement = best_placement([self.decide[j] for j in [*active, job]])
        if placement is None:
            raise RuntimeError(
                f"no partition holds jobs {[*active, job]} on GPU {gpu.index} at {self.time} s"
            )
        gpu.partition = placement.partition
        gpu.jobs = list(placement.jobs_by_slice([*active, job]))
        self._update_admission(gpu)
        self._record(gpu)
        return True

    def _schedule(self, gpus: Sequence[_Gpu]) -> None:
        strict = self.policy in _STRICT_FIFO
        for job in list(self.queue):
            if self._try_place(job, gpus):
                self.queue.remove(job)
                self.start[job] = self.time
            elif strict:
                break

    # ---------------------------------------------------------------- one step

    def _end_overheads(self) -> None:
        now = self.time
        for job, started in list(self.overhead_start.items()):
            if now - started >= self.overhead[job]:
                del self.overhead_start[job]
        for index, started in list(self.profiling_start.items()):
            if now - started >= self.profiling_s:
                del self.profiling_start[index]
                for job in self.gpus[index].active():
                    self._checkpoint(job)

    def _progress(self) -> list[_Gpu]:
        emptied = []
        now = self.time
        for gpu in self.gpus:
            profiling = gpu.index in self.profiling_start
            for k, job in enumerate(gpu.jobs):
                if job is None:
                    continue
                if job in self.overhead_start:
                    passed = 0.0
                elif profiling:
                    passed = self.profiling_step
                else:
                    passed = self.step_on[job][gpu.partition[k]]
                if self.remaining[job] - passed <= 0:
                    gpu.jobs[k] = None
                    self.finish[job] = now
                    self.remaining[job] = 0.0
                    emptied.append(gpu)
                    self._update_admission(gpu)
                    self._record(gpu)
                else:
                    self.remaining[job] -= passed
        return emptied

    def _clean_up(self) -> None:
        policy = self.policy
        if policy == "mig_static":
            for gpu in self.gpus:
                if None not in gpu.jobs:
                    continue
                promotions = static_promotions(gpu.partition, gpu.jobs)
                for job, from_slice, to_slice in promotions:
                    gpu.jobs[to_slice] = job
                    gpu.jobs[from_slice] = None
                    self._checkpoint(job)
                self._update_admission(gpu)
                self._record(gpu)
            return
        if policy == "mig_full" or self.queue:
            return
        for gpu in self.gpus:
            if None not in gpu.jobs or gpu.index in self.profiling_start:
                continue
            active = gpu.active()
            if not active:
                gpu.partition, gpu.jobs, gpu.max_allowed = _WHOLE, [None], 7
                self._record(gpu)
                continue
            placement = best_placement([self.decide[j] for j in active])
            if placement is None:
                raise RuntimeError(
                    f"no partition re-packs jobs {active} on GPU {gpu.index} at {self.time} s"
                )
            new_jobs: list[int | None] = list(placement.jobs_by_slice(active))
            for job in moved_jobs(gpu.partition, gpu.jobs, placement.partition, new_jobs):
                self._checkpoint(job)
            gpu.partition, gpu.jobs = placement.partition, new_jobs
            self._update_admission(gpu)
            self._record(gpu)

    # ---------------------------------------------------------------- the loop

    def run(self) -> ArtifactResult:
        arrivals = self.order  # arrival order; arrival times never decrease along it
        next_arrival = 0
        unfinished = self.n
        while True:
            while next_arrival < self.n and self.arrival[arrivals[next_arrival]] <= self.time:
                self.queue.append(arrivals[next_arrival])
                next_arrival += 1
            if self.queue:
                self._schedule(self.gpus)
                if (
                    self.queue
                    and not self.profiling_start
                    and not any(g.active() for g in self.gpus)
                ):
                    raise RuntimeError(
                        f"{self.policy}: job {self.queue[0]} cannot be placed on an empty "
                        "cluster, so the run would never end"
                    )
            self.time += 1
            self._end_overheads()
            emptied = self._progress()
            unfinished -= len(emptied)  # one entry per job finished
            if self.queue and emptied:
                self._schedule(emptied)
            self._clean_up()
            if unfinished == 0 and next_arrival == self.n and not self.queue:
                break
            # nothing active, queued or profiling: the seconds before the next arrival are
            # idle (the clean-up above already reset what it would reset)
            if (
                not self.queue
                and not self.profiling_start
                and next_arrival < self.n
                and not any(g.active() for g in self.gpus)
            ):
                self.time = max(self.time, self.arrival[arrivals[next_arrival]])
        finish = [f for f in self.finish if f is not None]
        if len(finish) != self.n:  # pragma: no cover - the loop ends only when all finished
            raise RuntimeError("the loop ended with unfinished jobs")
        outcomes = tuple(
            JobOutcome(
                job_id=j,
                length_s=self.lengths[j],
                arrival_s=self.arrival[j],
                start_s=self.start[j],
                finish_s=finish[j],
                migrations=self.migrations[j],
            )
            for j in range(self.n)
        )
        return ArtifactResult(
            policy=self.policy,
            seed=self.seed,
            num_gpus=len(self.gpus),
            jobs=outcomes,
            makespan_s=self.time,
            timeline=tuple(self.timeline),
        )
