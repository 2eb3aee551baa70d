"""The simulator: a GPU cluster running data-parallel training jobs, event by event.

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

One engine carries out these rules: the compiled core ``gpushare_env.compiled._core``
(Cython), which also encodes the env's observations, masks and rewards in the same pass
(see ``docs/design/engine.md``). ``Simulator`` is its Python face: it validates and
prepares an episode's inputs, hands them to a ``Core``, and exposes the decisions and
queries above; ``jobs`` maps ids to read-only ``JobState`` proxies over the C records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.cluster import (
    Cluster,
    gpu_models,
)
from gpushare_env.sim.core_inputs import (
    ClusterInput,
    CoreInputs,
    EncoderInput,
    EnvInput,
    JobsInput,
    SimInput,
)
from gpushare_env.sim.interference import (
    InterferenceModel,
    LinearContention,
    MeasuredContention,
    NoInterference,
    measured_contention,
)
from gpushare_env.sim.limits import is_finite, is_int
from gpushare_env.sim.placement import ALL_STRATEGIES, STRATEGIES
from gpushare_env.sim.setting_table import DURATION_INFO, declared
from gpushare_env.sim.settings import DeclaredGroup, document_settings
from gpushare_env.sim.sharing import sharing_model
from gpushare_env.sim.types import (
    GPU_MILLI,
    Event,
    EventKind,
    InvalidDecision,
    JobRecord,
    JobSpec,
    JobStatus,
    Timeline,
)

try:
    from gpushare_env.compiled._core import Core, JobState, time_feature, truncation_reason
except ImportError as _error:  # pragma: no cover - a broken install
    raise ImportError(
        "gpushare_env: the simulator's compiled core (gpushare_env.compiled._core) is not "
        f"built ({_error}); install the package with a C compiler present: pip install -e ."
    ) from _error


def check_core_enums(name: str, order: Sequence[str]) -> None:
    """Refuse a compiled core whose C enum ``name`` does not number ``order`` 0, 1, ...

    The core's C constants (job status, event kinds, strategies, reward terms) index
    arrays that Python fills or reads in the order of these tuples; a core built from an
    older ``_core.pyx``, or an edit on one side only, would mix them up silently.

    Raises:
        ImportError: Naming the enum, what the core numbers and what Python expects.
    """
    from gpushare_env.compiled._core import C_ENUMS

    expected = {label: index for index, label in enumerate(order)}
    if C_ENUMS.get(name) != expected:
        raise ImportError(
            f"gpushare_env: the compiled core numbers {name} as {C_ENUMS.get(name)}, Python "
            f"as {expected}; rebuild the core (pip install -e .) or align _core.pyx"
        )


check_core_enums("JobStatus", [status.name for status in JobStatus])
check_core_enums("EventKind", [kind.name for kind in EventKind])
check_core_enums("STRATEGIES", ALL_STRATEGIES)

__all__ = [
    "DURATION_INFO",
    "EpisodeOptions",
    "Event",
    "EventKind",
    "GPUState",
    "InvalidDecision",
    "JobState",
    "SimConfig",
    "Simulator",
    "Windows",
    "time_feature",
    "timeline_from_rows",
    "truncation_reason",
]

_EPS = 1e-9


@document_settings
@dataclass(frozen=True, slots=True)
class SimConfig(DeclaredGroup):
    """Simulator settings.

    Each attribute is a setting declared once in ``gpushare_env.sim.setting_table`` (its
    default, range and meaning; ``help(SimConfig)`` lists them), where the env's
    ``simulator`` and ``limits`` groups take theirs from too: ``EnvConfig.sim_config()``
    builds a ``SimConfig`` from them. Every setting is checked on creation: a bad one
    raises ``ValueError`` naming it (``SimConfig.sample_noise``) and its allowed range;
    numpy scalars are accepted.
    """

    path: ClassVar[str] = "SimConfig"

    sample_iterations: int = declared("simulator.sample_iterations")
    sample_noise: float = declared("simulator.sample_noise")
    duration_info: str = declared("simulator.duration_info")
    suspend_overhead_s: float | None = declared("simulator.suspend_overhead_s")  # [s]
    resume_overhead_s: float | None = declared("simulator.resume_overhead_s")  # [s]
    mig_operation_s: float = declared("simulator.mig_operation_s")  # [s]
    cross_node_factor: float | None = declared("simulator.cross_node_factor")
    record_timeline: bool = declared("simulator.record_timeline")
    max_suspends_per_job: int | None = declared("limits.max_suspends_per_job")
    min_service_s: float = declared("limits.min_service_s")  # [s]
    interference: str = declared("simulator.interference")
    sharing: str = declared("simulator.sharing")
    target_workload: str = declared("simulator.target_workload")


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


@dataclass(frozen=True, slots=True)
class Windows:
    """Which waiting and running jobs decisions may address: one rule for the env and
    headless runs (``Simulator.pending_window``, ``Simulator.running_window``).

    Attributes:
        pending: Pending slots ``W``: the waiting jobs a placement may address. ``None``:
            every waiting job (headless only).
        running: Running slots ``R``: the running jobs a suspension may address (the
            first ``R`` in the order they started). ``None``: every running job.
        priority: Share of the pending slots that go, once more jobs wait than ``W``, to
            the waiting jobs with the least attained GPU service (Tiresias' key), ties by
            arrival; the window lists them in arrival order. 0: the first ``W`` by
            arrival. Needs a bounded ``pending``.
    """

    pending: int | None = None
    running: int | None = None
    priority: float = 0.0

    def __post_init__(self) -> None:
        for name in ("pending", "running"):
            value = getattr(self, name)
            if value is not None and not (is_int(value) and value >= 1):
                raise ValueError(f"Windows.{name} must be None or an int >= 1, got {value!r}")
        if not (is_finite(self.priority) and 0.0 <= self.priority <= 1.0):
            raise ValueError(f"Windows.priority must be in [0, 1], got {self.priority!r}")
        if self.priority > 0 and self.pending is None:
            raise ValueError(
                f"Windows.priority={self.priority} needs a bounded pending window "
                "(Windows.pending, the env's windows.pending): with every waiting job "
                "visible there is no share to give"
            )

    @property
    def priority_slots(self) -> int:
        """Pending slots chosen by least attained service (``round(priority * W)``)."""
        return 0 if self.pending is None else round(self.priority * self.pending)

    def sizes(self, num_jobs: int) -> tuple[int, int]:
        """``(W, R)`` for an episode of ``num_jobs`` jobs (an unbounded window holds all)."""
        return (
            num_jobs if self.pending is None else self.pending,
            num_jobs if self.running is None else self.running,
        )


@dataclass(frozen=True, slots=True)
class EpisodeOptions:
    """What the env asks of the engine beyond the simulation: the observation and mask
    encoder, the reward terms and the episode's limits (``GPUShareEnv`` fills it in; a
    headless simulator has none and its core encodes nothing).

    Attributes:
        columns: The column names of each observation key, in order (the env's feature
            registry, ``gpushare_env.envs.features``): the core looks up where to write
            each feature by its name. ``None``: a headless run, nothing encoded.
        frag_edges: Upper edges of the shared-GPU bins of ``frag_hist``.  [GiB]
        weights: Reward weights in ``REWARD_COMPONENTS`` order (empty: no reward; the core
            refuses any other count than the number of components, ``REWARD_TERMS``).
        time_scale_s: Time unit of the reward.  # [s]
        auto_advance: Run through states without a choice.
        max_time_s: Truncate at this simulated time.  # [s]
        decision_cap: Truncate after this many decisions.
        invalid_penalty: Reward of an invalid action (negated).
        strategies: The placement strategies of the schedule actions, in their order.
    """

    columns: Mapping[str, tuple[str, ...]] | None = None
    frag_edges: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()
    time_scale_s: float = 1.0  # [s]
    auto_advance: bool = True
    max_time_s: float | None = None  # [s]
    decision_cap: int = 2**62
    invalid_penalty: float = 0.0
    strategies: tuple[str, ...] = STRATEGIES


#: The solo duration a belief fork assumes for a job of unknown length when no arrived
#: job's length is known yet (``Simulator.fork``).  # [s]
BELIEF_DEFAULT_PRIOR_S = 3600.0


class Simulator:
    """A GPU cluster running a fixed list of jobs, driven by decisions from outside.

    Args:
        jobs: The workload; job ids must be unique and every job must fit the cluster.
        cluster: The cluster layout (``make_cluster``).
        config: Simulator settings.
        interference: Co-location slowdown model (default: the one
            ``config.interference`` names); ``LinearContention``, ``MeasuredContention``
            and ``NoInterference`` run in C, any other model is called from the core for
            each GPU whose computing workers change.
        rng: Generator for the sampling noise; one draw per job in job-id order, so the
            noise a job sees does not depend on the schedule.
        windows: The jobs decisions may address (``Windows``; default: every job).
        episode: The env's encoder, reward and limits (``None``: headless).
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        cluster: Cluster,
        config: SimConfig | None = None,
        interference: InterferenceModel | None = None,
        rng: np.random.Generator | None = None,
        *,
        windows: Windows | None = None,
        episode: EpisodeOptions | None = None,
    ) -> None:
        self.config = config or SimConfig()
        self.windows = windows or Windows()
        self.cluster = cluster
        self.interference: InterferenceModel = self._interference_model(interference)
        if isinstance(jobs, (str, bytes, Mapping)) or not isinstance(jobs, Iterable):
            raise TypeError(f"jobs must be a list of JobSpec, got {type(jobs).__name__}")
        jobs = list(jobs)
        if not jobs:
            raise ValueError("the workload has no jobs")
        for position, job in enumerate(jobs):
            if not isinstance(job, JobSpec):
                raise TypeError(f"jobs[{position}] must be a JobSpec, got {job!r}")
        ordered = sorted(jobs, key=lambda j: (j.arrival_s, j.job_id))
        self._check_fits(ordered)
        rng = rng if rng is not None else np.random.default_rng(0)
        by_id = sorted(j.job_id for j in ordered)
        noise = rng.normal(0.0, self.config.sample_noise, size=len(by_id))
        noise_of = dict(zip(by_id, np.clip(noise, -0.9, 0.9).tolist(), strict=True))
        draws_of = sharing_model(self.config.sharing).tie_draws(rng, by_id)
        self.core: Core = new_core(
            core_inputs(
                ordered,
                noise_of,
                cluster,
                self.config,
                self.interference,
                self.windows,
                episode,
                draws_of,
            )
        )
        #: Per-GPU state arrays (live, written by the core).
        self.gpus: GPUState = self.core.gpus.gpu_state
        #: Job id -> ``JobState`` (read-only proxies), in arrival order.
        self.jobs: Mapping[int, JobState] = JobTable(self.core, [j.job_id for j in ordered])
        self._read_only_arrays()

    def _interference_model(self, given: InterferenceModel | None) -> InterferenceModel:
        """``given``, else the model ``config.interference`` names (not both)."""
        name = self.config.interference
        if given is not None:
            if name != "analytic":
                raise ValueError(
                    f"interference: give either an InterferenceModel or "
                    f"SimConfig.interference={name!r}, not both"
                )
            return given
        if name == "analytic":
            return LinearContention()
        return measured_contention(proxies=name == "measured")

    # ------------------------------------------------------------------ forks
    def fork(self, belief: bool = False, *, prior_s: float | None = None) -> Simulator:
        """A new simulator at the same instant of the same episode, independent of this
        one: the core copies its memory (``Core.fork``), no operation is replayed.

        A full fork (the default) is exact: the same decisions on both give the same
        results bit for bit, stepping one never changes the other, and a fork can itself
        be forked. It holds what a scheduler cannot know (future arrivals, true
        lengths), so planning on it is clairvoyant: an upper bound.

        ``belief=True`` keeps only what a scheduler could know now under
        ``config.duration_info`` (``Core.believe``): the jobs that have arrived and no
        future ones, and each unfinished job's length as the scheduler sees it: the
        truth under ``oracle``; under ``sampled`` the noisy sampled prediction once the
        job is sampled; otherwise ``prior_s`` of solo time (default: the median solo
        duration of the arrived jobs whose length is known, finished or sampled, else
        ``BELIEF_DEFAULT_PRIOR_S``). Its job specs carry the believed step times, so
        nothing it holds reaches the true lengths or the trace's future; it cannot be
        pickled (it is no replay of an episode). See ``docs/env.md``, *Forks*.
        """
        other = Simulator.__new__(Simulator)
        other.config = self.config
        other.windows = self.windows
        other.cluster = self.cluster
        other.interference = self.interference
        other.core = core = fork_core(self.core)
        table = self.jobs
        ids = table._ids if isinstance(table, JobTable) else list(table)
        if belief:
            prior = core.belief_prior(BELIEF_DEFAULT_PRIOR_S) if prior_s is None else prior_s
            if not (is_finite(prior) and prior > 0):
                raise ValueError(
                    f"fork: prior_s must be a positive number of seconds, got {prior_s!r}"
                )
            core.believe(float(prior))
            ids = ids[: core.jobs.num_jobs]
            core.specs = core.specs[: len(ids)]  # believed step times: Core.spec_of
            core.rank_of = {job_id: rank for rank, job_id in enumerate(ids)}
            core.ops = []
            # the inputs' job table holds the truth: a belief keeps only the cluster's
            core.inputs = replace(core.inputs, jobs=None)  # type: ignore[arg-type]
        other.gpus = core.gpus.gpu_state
        other.jobs = JobTable(core, ids)
        other._read_only_arrays()
        return other

    @property
    def is_belief(self) -> bool:
        """True for a belief fork (``fork(belief=True)``)."""
        return bool(self.core.belief)

    def __getstate__(self) -> dict[str, Any]:
        # the core pickles itself (it replays its operations); the rest is rebuilt on it
        return {
            "config": self.config,
            "cluster": self.cluster,
            "interference": self.interference,
            "windows": self.windows,
            "core": self.core,
            "ids": list(self.jobs),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.config = state["config"]
        self.cluster = state["cluster"]
        self.interference = state["interference"]
        self.windows = state["windows"]
        self.core = state["core"]
        self.gpus = self.core.gpus.gpu_state
        self.jobs = JobTable(self.core, state["ids"])
        self._read_only_arrays()

    def _read_only_arrays(self) -> None:
        """The per-GPU arrays policies read (``SimView``): read-only views of the live
        ones the core writes, and the cluster's layout."""
        state, cluster = self.gpus, self.cluster
        #: Free memory of each GPU.  # (G,) [GiB]
        self.free_memory_gib = _frozen(state.free_memory_gib)
        #: Compute load ``U_g`` of each GPU.  # (G,)
        self.load = _frozen(state.load)
        #: Workers holding memory on each GPU.  # (G,)
        self.holders = _frozen(state.holders)
        #: Memory of each GPU.  # (G,) [GiB]
        self.gpu_memory_gib = _frozen(cluster.gpu_memory_gib)
        #: Node of each GPU.  # (G,)
        self.gpu_node = _frozen(cluster.gpu_node)
        #: GPUs of each node, -1 padded.  # (N, M)
        self.node_gpus = _frozen(cluster.node_gpus)
        #: Speed factor of each GPU vs a V100.  # (G,)
        self.gpu_speed = _frozen(cluster.gpu_speed)
        #: Workers a GPU holds at most.
        self.max_jobs_per_gpu: int = cluster.max_jobs_per_gpu
        #: The env's action mask and observation, as the core last encoded them (live,
        #: read-only; empty-layout arrays on a headless simulator).  # (A,) bool, (D,)
        self.action_mask = _frozen(self.core.enc.mask_array)
        self.observation_buffer = _frozen(self.core.enc.buffer_array)
        self.step = self.core.step
        self.is_valid = self.core.is_valid
        self.reward_terms = self.core.reward_terms

    # ------------------------------------------------------------------ queries
    @property
    def now_s(self) -> float:
        """Current simulated time.  # [s]"""
        return float(self.core.now)

    @property
    def num_gpus(self) -> int:
        """GPUs in the cluster."""
        return self.cluster.num_gpus

    @property
    def duration_info(self) -> str:
        """What lengths schedulers see: ``none``, ``sampled`` or ``oracle``."""
        return self.config.duration_info

    def job(self, job_id: int) -> JobState:
        """One job, read-only (its ``JobState``: the one view of a job)."""
        return self.jobs[job_id]

    @property
    def done(self) -> bool:
        """True when every job has finished."""
        return bool(self.core.done)

    @property
    def num_finished(self) -> int:
        """Jobs finished so far."""
        return int(self.core.num_finished)

    @property
    def num_arrived(self) -> int:
        """Jobs that have arrived (finished ones included)."""
        return self.core.num_arrived

    @property
    def jobs_in_system(self) -> int:
        """Arrived and not finished."""
        return int(self.core.in_system)

    @property
    def num_waiting(self) -> int:
        """Jobs pending or suspended (holding no GPU)."""
        return int(self.core.num_waiting)

    @property
    def num_running(self) -> int:
        """Jobs running (computing)."""
        return int(self.core.num_running)

    @property
    def events_processed(self) -> int:
        """Events handled so far."""
        return int(self.core.events_processed)

    @property
    def decisions(self) -> int:
        """Placements and suspensions carried out so far."""
        return int(self.core.sim_decisions)

    def pending(self, limit: int | None = None) -> list[int]:
        """Ids of waiting jobs (pending and suspended) by arrival, at most ``limit``."""
        return self.core.pending(limit)

    def pending_window(self, also_waiting: Iterable[int] = ()) -> list[int]:
        """Ids of the pending window, in arrival order: the waiting jobs a placement may
        address (``windows``: the first ``W`` by arrival, or a share by least attained
        service). ``also_waiting``: jobs holding GPUs to count as waiting again, for the
        window once they are suspended (a what-if; ``InvalidDecision`` for a job that
        holds none)."""
        return self.core.pending_window(also_waiting)

    def running_window(self) -> list[int]:
        """Ids of the running window: the first ``R`` running jobs in the order they
        (re)started, the ones a suspension may address."""
        return self.core.running_window()

    def settle(self) -> None:
        """Let time run through the instants where no decision but letting time run is
        valid (the env's ``auto_advance``; the time cap of ``episode`` stops it)."""
        self.core.settle()

    def running(self, limit: int | None = None) -> list[int]:
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        return self.core.running_list(limit)

    def in_transition(self) -> list[int]:
        """Ids of jobs suspending or resuming."""
        return self.core.transition_list()

    def gpu_jobs(self, gpu: int) -> list[int]:
        """Ids of the jobs holding memory on ``gpu``."""
        return self.core.jobs_on_gpu(gpu)

    def next_event_time(self) -> float | None:
        """Time of the next event, or ``None`` when nothing is left to happen."""
        return self.core.next_event_time()

    def progress_of(self, job_id: int) -> float:
        """Iterations done by ``job_id`` as of now."""
        return float(self.core.progress_of(job_id))

    def predicted_remaining_s(self, job_id: int) -> float | None:
        """Remaining time alone on V100s as schedulers may know it (``duration_info``).

        ``"oracle"``: the true value; ``"sampled"``: remaining iterations times the measured
        step time once the job is sampled, else ``None``; ``"none"``: always ``None``.
        """
        return self.core.predicted_remaining_s(job_id)

    def predicted_work_s(self, prior_s: float = 0.0) -> float:
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system (waiting, then
        running and transitioning); a job without a prediction counts ``prior_s`` times
        the share of its iterations left (default 0).  [GPU s]"""
        return float(self.core.predicted_work_s(prior_s))

    def fits(self, job_id: int) -> tuple[bool, bool]:
        """``(shared, exclusive)``: whether a sharing strategy, and the exclusive one,
        find room for waiting job ``job_id`` now (the env's mask rule)."""
        shared, exclusive = self.core.fits(job_id)
        return bool(shared), bool(exclusive)

    def speed_if_placed(
        self, job_id: int, gpus: Sequence[int], include_resuming: bool = False
    ) -> tuple[float, float]:
        """Predicted speeds if waiting job ``job_id`` joined ``gpus``: (its own x V100
        solo, the slowest co-located job's factor), under the interference model the core
        applies; with ``include_resuming``, restarting tenants count as computing."""
        own, others = self.core.speed_if_placed(job_id, gpus, include_resuming)
        return float(own), float(others)

    def measured_step_time_s(self, job_id: int) -> float | None:
        """Measured solo step time once sampled (``None`` before, or if info is none)."""
        return self.core.measured_step_time_s(job_id)

    def cluster_totals(self) -> tuple[float, int, float, float, float]:
        """``(compute_in_use, allocated_gpus, free_memory_gib, fragmented_memory_gib,
        expected_fragment_gib)``: the current values of the ``Timeline`` series."""
        return self.core.cluster_totals()

    def colocation_factor(self, load: float, count: int, models: Sequence[str] = ()) -> float:
        """Speed factor of each of ``count`` workers computing on one GPU with load
        ``load``, as the engine applies it (the interference model's rule)."""
        return float(self.core.colocation_factor(load, count, models))

    def find_placement(self, job_id: int, strategy: str) -> tuple[int, ...] | None:
        """GPUs the named strategy would give ``job_id`` now, or ``None``.

        Raises:
            InvalidDecision: an unknown strategy (a ``ValueError``).
        """
        return self.core.find_placement(job_id, strategy)

    # ---------------------------------------------------------------- decisions
    def schedule(self, job_id: int, strategy: str) -> tuple[int, ...]:
        """Place ``job_id`` with a named strategy; raise ``InvalidDecision`` if it does not fit."""
        return self.core.schedule(job_id, strategy)

    def place(self, job_id: int, gpus: Iterable[int]) -> None:
        """Start (or resume) a waiting job on explicit GPUs.

        Raises:
            InvalidDecision: the job is not waiting, the GPU count or indices are wrong,
                or a GPU lacks memory or a worker slot.
        """
        self.core.place(job_id, gpus)

    def mig_instances(self, gpu: int) -> list[MigInstance]:
        """GPU ``gpu``'s MIG instances by start (``sharing = "mig"`` only)."""
        return [MigInstance(*row) for row in self.core.mig_instances(gpu)]

    def repartition(self, gpu: int, instances: Iterable[Sequence[Any]]) -> None:
        """Re-partition MIG GPU ``gpu`` into ``instances``, each ``(profile, start)``,
        ``(profile, start, jobs)`` or ``(profile, start, jobs, mps)``: NVIDIA's profile
        names and placement rules (``gpushare_env.sim.mig``), the ids of waiting jobs the
        instance is reserved for (taken only by them, and first by them), and whether it
        is shared under MPS (its workers at ``MigInput.mps_speed``). The idle instances
        are destroyed and the new ones created; the instances jobs hold must stay as they
        are (suspend a job to move it: its checkpoint and restart are the cost of moving).

        Raises:
            InvalidDecision: not the mig model, an unknown GPU or profile, a start the
                profile may not use, overlapping instances, a held instance missing, or
                a reservation for a job that is not waiting.
        """
        rows = []
        for item in instances:
            if isinstance(item, MigInstance):
                item = (item.profile, item.start, item.reserved, item.mps)
            if not 2 <= len(item) <= 4:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: an instance is (profile, start[, jobs[, mps]]), "
                    f"got {item!r}"
                )
            jobs = item[2] if len(item) > 2 else ()
            jobs = (jobs,) if isinstance(jobs, int) else tuple(int(j) for j in jobs)
            mps = bool(item[3]) if len(item) > 3 else False
            rows.append((str(item[0]), int(item[1]), jobs, mps))
        self.core.repartition(gpu, rows)

    def suspend(self, job_id: int) -> None:
        """Checkpoint a running job: it keeps its GPUs for its suspend overhead, then waits.

        Raises:
            InvalidDecision: the job is not running, or the suspension rules forbid it
                (``SimConfig.max_suspends_per_job``, ``min_service_s``; see
                ``can_suspend``).
        """
        self.core.suspend(job_id)

    def can_suspend(self, job_id: int) -> bool:
        """True if ``suspend(job_id)`` is allowed now: the job runs, has been suspended
        fewer than ``max_suspends_per_job`` times and, if it was resumed, has computed for
        ``min_service_s`` since. The env's mask for suspend actions is this rule."""
        return bool(self.core.can_suspend(job_id))

    def truncation_cost(self) -> tuple[float, float]:
        """``(jct_s, makespan_s)`` the unfinished jobs would still cost run one at a time
        from now (the charge of a truncated episode; see ``Core.truncation_cost``)."""
        jct, makespan = self.core.truncation_cost()
        return float(jct), float(makespan)

    def advance(self) -> list[Event]:
        """Run time to the next event and process every event at that instant.

        Returns:
            The events processed, in order.

        Raises:
            RuntimeError: nothing is left to happen (all jobs finished, or the remaining
                ones wait for a decision that never comes).
        """
        return self.core.advance()

    # --------------------------------------------------------- the env's episode
    # What ``GPUShare-v0`` drives: an action index at a time, the core settling to the
    # next decision point and encoding the observation, mask and reward terms in the same
    # pass (``episode`` set; a headless simulator encodes nothing).

    # The env's per-step calls are the core's own, bound when the simulator is built:
    # a step then costs no Python frame here.
    #: Carry out action ``action`` (a no-op if ``invalid``), settle to the next decision
    #: point, encode: ``(reward, terminated, truncated, now_s, jobs finished, steps)``.
    step: Callable[[int, bool], tuple[float, bool, bool, float, int, int]]
    #: True if an action index is in the action space and the mask allows it now.
    is_valid: Callable[[int], bool]
    #: The last step's reward components by name (``REWARD_COMPONENTS`` order).
    reward_terms: Callable[[Sequence[str]], dict[str, float]]

    def start(self) -> None:
        """Settle the first decision point and encode it (the env's ``reset``)."""
        self.core.start()

    def decode(
        self, action: int
    ) -> (
        tuple[Literal["advance"], None, None]
        | tuple[Literal["schedule"], int, int]
        | tuple[Literal["suspend"], int, None]
    ):
        """``(kind, job_id, strategy index)`` of an action index now (``Core.decode``)."""
        return self.core.decode(action)

    def encode(self, kind: str, job_id: int | None = None, strategy: int = 0) -> int:
        """The action index of ``(kind, job_id, strategy index)`` (``Core.encode``)."""
        return int(self.core.encode(kind, job_id, strategy))

    def window_ids(self) -> tuple[list[int], list[int]]:
        """Job ids of the pending and running windows the last encoding addressed."""
        return self.core.pending_ids(), self.core.running_ids()

    def suspend_refusal(self, job_id: int) -> str | None:
        """Why the suspension rules refuse suspending ``job_id`` now, in words (``None``:
        they allow it)."""
        return self.core.suspend_refusal(job_id)

    @property
    def steps(self) -> int:
        """Env steps taken this episode (what ``limits.max_decisions`` counts)."""
        return int(self.core.decisions)

    @property
    def deadlock(self) -> bool:
        """True when jobs wait, none fits and nothing is left to happen."""
        return bool(self.core.deadlock)

    @property
    def truncated_by(self) -> str | None:
        """Why the episode was truncated (``"decisions"``, ``"time"``, ``"deadlock"``)."""
        return self.core.truncated_by

    # ----------------------------------------------------------------- results
    def records(self) -> list[JobRecord]:
        """Records of the finished jobs, in finishing order."""
        core = self.core
        rank_of = core.rank_of
        if core.spec_factor is not None:  # a belief: its specs hold its step times
            return [
                JobRecord.of(core.spec_of(rank_of[row[0]]), *row[1:])
                for row in core.finished_jobs()
            ]
        specs = core.specs
        return [JobRecord.of(specs[rank_of[row[0]]], *row[1:]) for row in core.finished_jobs()]

    def timeline(self) -> Timeline:
        """The cluster timeline up to now."""
        return timeline_from_rows(self.core.timeline_rows(), self.cluster, self.now_s)

    def check_invariants(self) -> None:
        """Raise ``AssertionError`` if the state is inconsistent (for tests; O(G + J))."""
        state = self.gpus
        num_gpus = self.cluster.num_gpus
        used = np.zeros(num_gpus)
        load = np.zeros(num_gpus)
        holders = np.zeros(num_gpus, dtype=np.int64)
        # what the core counts a worker as: its demand in the sharing model's unit
        model = sharing_model(self.config.sharing)
        capacity = self.core.inputs.cluster.capacity
        node_cpu = self.cluster.node_cpu_milli.copy()
        node_memory = self.cluster.node_memory_mib.copy()
        queue = self.pending()
        queued = set(queue)
        assert len(queued) == len(queue), "a job is queued twice"
        running = set(self.running())
        for job_id, job in self.jobs.items():
            status = job.status
            gpus = job.gpus
            holds = status in (JobStatus.RUNNING, JobStatus.SUSPENDING, JobStatus.RESUMING)
            assert len(gpus) == job.num_gpus if holds else not gpus, (job_id, status.name, gpus)
            assert (job.node >= 0) == holds, f"job {job_id} {status.name} node={job.node}"
            if gpus:
                assert job.node == int(self.cluster.gpu_node[gpus[0]]), (job_id, job.node, gpus)
            if holds:  # a node's CPU and host memory (none taken without node limits)
                node = job.node
                one_node = all(self.cluster.gpu_node[g] == node for g in gpus)
                assert one_node or not model.one_node_gangs, (job_id, gpus)
                cpu_milli, host_memory_mib, _ = job.node_request
                node_cpu[node] -= cpu_milli
                node_memory[node] -= host_memory_mib
            for g, (take, worker_load) in zip(gpus, self.core.worker_parts(job_id), strict=True):
                used[g] += take
                holders[g] += 1
                if status == JobStatus.RUNNING:
                    load[g] += worker_load
                assert job_id in self.gpu_jobs(g), (job_id, g)
            assert self.progress_of(job_id) <= job.spec.iterations + 1e-6
            in_queue = status in (JobStatus.PENDING, JobStatus.SUSPENDED)
            assert in_queue == (job_id in queued), job_id
            assert (status == JobStatus.RUNNING) == (job_id in running), job_id
        assert np.all(used <= capacity + 1e-6), "memory (or shares) over-committed"
        assert np.allclose(state.free_memory_gib, capacity - used)
        assert np.all(node_cpu >= -1e-6) and np.all(node_memory >= -1e-6), "node over-committed"
        assert np.allclose(self.core.gpus.node_cpu_array, node_cpu)
        assert np.allclose(self.core.gpus.node_mem_array, node_memory)
        assert np.allclose(state.load, load)
        assert np.array_equal(state.holders, holders)
        assert np.all(holders <= state.max_jobs_per_gpu)
        compute_in_use, allocated, *_ = self.cluster_totals()
        assert allocated == int(np.count_nonzero(holders))
        assert math.isclose(compute_in_use, float(np.minimum(load, 1.0).sum()), abs_tol=1e-6)

    # ---------------------------------------------------------------- internals
    def _check_fits(self, jobs: Sequence[JobSpec]) -> None:
        """Refuse, naming the job, a workload the core cannot run to the end: an entry
        that is not a ``JobSpec`` (whose checks bound every field), a duplicate id, or a
        job no placement on this cluster could ever satisfy (too many GPUs, or too few
        GPUs with the memory of one of its workers: on a mixed cluster this is found
        here, not as a deadlock at the end)."""
        ids = [j.job_id for j in jobs]
        if len(set(ids)) != len(ids):
            seen: set[int] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"job {dup}: duplicate job_id in the workload")
        memory_desc = np.sort(self.cluster.gpu_memory_gib)[::-1]
        model = sharing_model(self.config.sharing)
        for j in jobs:
            unfit = model.unfit_reason(j, self.cluster, memory_desc)
            if unfit is not None:
                raise ValueError(
                    f"job {j.job_id} can never fit the cluster {self.cluster.describe()}: "
                    f"{unfit[1]} (filter the workload with fit_to_cluster)"
                )


def _frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (it still follows the array's changes)."""
    view = array.view()
    view.flags.writeable = False
    return view


class JobTable(Mapping[int, JobState]):
    """``Simulator.jobs``: job id -> ``JobState`` proxy, in (arrival, id) order."""

    __slots__ = ("_core", "_ids")

    def __init__(self, core: Core, ids: list[int]) -> None:
        self._core = core
        self._ids = ids

    def __getitem__(self, job_id: int) -> JobState:
        return self._core.job(job_id)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._core.rank_of


_MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


def core_inputs(
    ordered: Sequence[JobSpec],
    noise_of: Mapping[int, float],
    cluster: Cluster,
    config: SimConfig,
    interference: InterferenceModel,
    windows: Windows,
    episode: EpisodeOptions | None,
    draws_of: Mapping[int, tuple[float, float]] | None = None,
) -> CoreInputs:
    """What ``Core`` is built from for an episode of ``ordered`` jobs (by arrival, id).

    The sharing model (``config.sharing``, ``gpushare_env.sim.sharing``) fills the
    demand columns: what a worker holds of a GPU (its memory, or its requested share of
    a GPU of 1000 milli-GPU), its compute intensity, what its job holds of its node, the
    GPU models it allows, a GPU's capacity and FGD's target workload; the observation's
    fragment edges, given in GiB of the largest GPU, are scaled to its unit.
    ``draws_of`` holds ``share_random``'s two uniform draws per job id
    (``SharingModel.tie_draws``).
    """
    sharing = sharing_model(config.sharing)
    models = gpu_models(cluster)
    columns = sharing.columns(ordered, cluster)
    kind_index = {kind: i for i, kind in enumerate(dict.fromkeys(columns.kinds))}
    draws = [(draws_of or {}).get(s.job_id, (0.0, 0.0)) for s in ordered]
    demand = list(columns.demand)
    sizes = sorted(set(demand))
    overheads = []
    for spec in ordered:
        model = MODELS.get(spec.model)
        overheads.append(
            (
                _pick(config.suspend_overhead_s, model, "suspend_overhead_s", 3.0),
                _pick(
                    config.resume_overhead_s,
                    model if spec.restart_s is None else _Own(spec.restart_s),
                    "resume_overhead_s",
                    20.0,
                ),
                _pick(config.cross_node_factor, model, "cross_node_factor", 0.8),
            )
        )
    jobs = JobsInput(
        specs=tuple(ordered),
        job_id=tuple(s.job_id for s in ordered),
        num_gpus=tuple(s.num_gpus for s in ordered),
        demand=columns.demand,
        intensity=columns.intensity,
        iterations=tuple(float(s.iterations) for s in ordered),
        step_time_s=tuple(s.step_time_s for s in ordered),
        arrival_s=tuple(s.arrival_s for s in ordered),
        model_index=tuple(
            _MODEL_NAMES.index(s.model) if s.model in _MODEL_NAMES else -1 for s in ordered
        ),
        noise=tuple(noise_of[s.job_id] for s in ordered),
        suspend_overhead_s=tuple(o[0] for o in overheads),
        resume_overhead_s=tuple(o[1] for o in overheads),
        cross_node_factor=tuple(o[2] for o in overheads),
        size_index=tuple(sizes.index(d) for d in demand),
        inv_solo_s=tuple(1.0 / s.solo_duration_s for s in ordered),
        cpu_milli=columns.cpu_milli,
        host_memory_mib=columns.host_memory_mib,
        model_mask=columns.model_mask,
        request_kind=tuple(kind_index[k] for k in columns.kinds) or (0,) * len(ordered),
        node_draw=tuple(d[0] for d in draws),
        gpu_draw=tuple(d[1] for d in draws),
        profile_speed=columns.profile_speed,
    )
    cluster_input = ClusterInput(
        capacity=sharing.gpu_capacity(cluster),
        gpu_node=cluster.gpu_node,
        node_gpus=cluster.node_gpus,
        gpu_speed=cluster.gpu_speed,
        max_jobs_per_gpu=sharing.max_workers(cluster),
        gpu_model=np.asarray([models.index(m) for m in cluster.node_model], dtype=np.int64)[
            cluster.gpu_node
        ],
        node_cpu_milli=cluster.node_cpu_milli,
        node_memory_mib=cluster.node_memory_mib,
    )
    # the meters' reference workers: those of the jobs with GPUs (a whole GPU if none has)
    workers = [d for d, s in zip(demand, ordered, strict=True) if s.num_gpus] or [float(GPU_MILLI)]
    reference = np.sort(np.asarray(workers, dtype=np.float64))
    num_gpus = cluster.num_gpus
    interference = sharing.interference(interference)  # mig: isolated instances
    builtin = isinstance(interference, (LinearContention, NoInterference, MeasuredContention))
    measured = None
    if isinstance(interference, MeasuredContention):
        measured = interference.core_tables(
            _MODEL_NAMES, cluster.gpu_type, cluster.gpu_speed.tolist()
        )
    sim = SimInput(
        alpha=(
            interference.alpha
            if isinstance(interference, (LinearContention, MeasuredContention))
            else 0.0
        ),
        interference=isinstance(interference, (LinearContention, MeasuredContention)),
        measured=measured,
        interference_model=None if builtin else interference,
        interference_models=bool(getattr(interference, "uses_models", True)),
        sample_iterations=config.sample_iterations,
        duration_info=config.duration_info,
        record_timeline=config.record_timeline,
        max_suspends_per_job=config.max_suspends_per_job,
        min_service_s=float(config.min_service_s),
        reference_demand=tuple(reference.tolist()),
        median_demand=float(np.median(reference)),
        **sharing.sim_fields(),
        target_workload=sharing.target_workload(columns.kinds, models, config.target_workload),
        mig=sharing.mig_input(cluster, config),
    )
    # headless: no layout, the core encodes nothing
    options = episode or EpisodeOptions()
    pending_window, running_window = windows.sizes(len(ordered))
    encoder = EncoderInput(
        pending_window=pending_window,
        running_window=running_window,
        priority_slots=windows.priority_slots,
        columns=dict(options.columns) if options.columns is not None else None,
        frag_edges=sharing.frag_edges(options.frag_edges, cluster),
        num_models=len(_MODEL_NAMES),
        demand_sizes=tuple(sizes),
        log_gpus=1.0 / math.log2(1.0 + num_gpus),
        strategies=tuple(options.strategies),
    )
    env = EnvInput(
        weights=tuple(options.weights),
        inv_scale=1.0 / options.time_scale_s,
        auto_advance=options.auto_advance,
        max_time_s=options.max_time_s,
        decision_cap=options.decision_cap,
        invalid_penalty=options.invalid_penalty,
    )
    return CoreInputs(jobs=jobs, cluster=cluster_input, sim=sim, encoder=encoder, env=env)


def new_core(inputs: CoreInputs) -> Core:
    """A fresh ``Core`` from ``core_inputs``, with its ``GPUState`` over the live arrays."""
    core = Core(inputs)
    core.gpus.gpu_state = _gpu_state(core, inputs.cluster)
    return core


def _gpu_state(core: Core, cluster: ClusterInput) -> GPUState:
    """The ``GPUState`` over a core's live per-GPU arrays."""
    return GPUState(
        free_memory_gib=core.gpus.free_array,
        load=core.gpus.load_array,
        computing=core.gpus.computing_array,
        holders=core.gpus.holders_array,
        factor=core.gpus.factor_array,
        gpu_node=cluster.gpu_node,
        node_gpus=cluster.node_gpus,
        num_nodes=cluster.node_gpus.shape[0],
        max_jobs_per_gpu=cluster.max_jobs_per_gpu,
    )


def fork_core(core: Core) -> Core:
    """An independent copy of ``core`` at the same state (``Core.fork``), with its
    ``GPUState`` over the copy's live arrays."""
    other = core.fork()
    other.gpus.gpu_state = _gpu_state(other, core.inputs.cluster)
    return other


def rebuild_core(inputs: CoreInputs, ops: list[Any]) -> Core:
    """Unpickle a ``Core``: a fresh one replays the operations of the pickled one."""
    core = new_core(inputs)
    core.replay(ops)
    return core


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


class MigInstance(NamedTuple):
    """One MIG instance of a GPU (``Simulator.mig_instances``).

    Attributes:
        profile: NVIDIA's profile name (``"3g.20gb"``).
        start: Its first memory slice.
        jobs: Ids of the jobs holding it (at most one unless ``mps``).
        reserved: Ids of the waiting jobs it is reserved for.
        mps: Shared by its jobs under MPS.
    """

    profile: str
    start: int
    jobs: tuple[int, ...]
    reserved: tuple[int, ...]
    mps: bool


@dataclass(frozen=True)
class _Own:
    """A job's own restart time, read as its model's would be (``JobSpec.restart_s``)."""

    resume_overhead_s: float


def _pick(override: float | None, model: object, attribute: str, default: float) -> float:
    """A config override, else the model's own figure, else a default for unknown models."""
    if override is not None:
        return override
    if model is None:
        return default
    return float(getattr(model, attribute))
