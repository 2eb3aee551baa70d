"""Frozen, validated configuration of ``GPUShare-v0``: ``EnvConfig`` and its groups.

``EnvConfig`` is nested; each group is a frozen dataclass that validates itself::

    EnvConfig
    ├── cluster, workload, num_jobs, jobs      what is simulated
    ├── windows       WindowsConfig       pending, running          (what actions address)
    ├── observation   ObservationConfig   held_time, placement, drain, rivals
    ├── reward        RewardConfig        jct ... invalid (weights), time_scale_s,
    │                                     invalid_penalty
    ├── limits        LimitsConfig        max_decisions, max_time_s, max_suspends_per_job,
    │                                     min_service_s
    ├── simulator     SimulatorConfig     duration_info, sample_iterations, sample_noise
    └── invalid_action, auto_advance, on_unfit

``gym.make("GPUShare-v0", config={...})`` accepts the nested form
(``{"windows": {"pending": 8}}``), the flat form, one short key per setting
(``{"pending_window": 8}``, mapped by ``FLAT_KEYS``, which recorded configs and model files
use), or both for different settings; one setting given both ways is an error naming
both. Unknown keys, at any level, are rejected with the allowed ones listed, and a bad
value names its full path (``EnvConfig.windows.pending``) and the allowed range, so a
typo never silently falls back to a default. ``EnvConfig.as_dict()`` gives the nested
form back and ``EnvConfig.flat()`` the flat one; both rebuild the same config.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from gpushare_env.sim.cluster import ClusterConfig
from gpushare_env.sim.engine import DURATION_INFO, SimConfig, Windows
from gpushare_env.sim.interference import INTERFERENCE_MODELS
from gpushare_env.sim.limits import MAX_DURATION_S, MAX_JOBS
from gpushare_env.sim.settings import Group, KeyPaths, is_finite, is_int, is_real, plain, range_text
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import WorkloadConfig

__all__ = [
    "FLAT_KEYS",
    "INVALID_ACTION_MODES",
    "REWARD_COMPONENTS",
    "EnvConfig",
    "LimitsConfig",
    "ObservationConfig",
    "RewardConfig",
    "SimulatorConfig",
    "WindowsConfig",
    "flat_keys",
]

#: Named reward components, in the order ``info["reward_terms"]`` lists them.
REWARD_COMPONENTS: tuple[str, ...] = (
    "jct",
    "makespan",
    "utilisation",
    "slowdown",
    "starvation",
    "overhead",
    "invalid",
    "delay",
)

#: What an unmasked invalid action does: a no-op (with ``invalid_penalty``) or an error.
INVALID_ACTION_MODES: tuple[str, ...] = ("noop", "raise")

#: What happens to jobs that can never fit the cluster.
_ON_UNFIT: tuple[str, ...] = ("reject", "error")

_MAX_WINDOW = 1024
_MAX_GPU_ROWS = 65536

#: Every key of the flat form (one short key per setting) -> the setting's path in the
#: nested form (the one table of the mapping). Top-level settings map to themselves;
#: ``reward`` (the weights by component name) is the reward group, whose other settings
#: are the flat keys ``time_scale_s`` and ``invalid_penalty``.
FLAT_KEYS: dict[str, str] = {
    "cluster": "cluster",
    "workload": "workload",
    "num_jobs": "num_jobs",
    "jobs": "jobs",
    "pending_window": "windows.pending",
    "running_window": "windows.running",
    "gpu_rows": "windows.gpus",
    "window_priority": "windows.priority",
    "reward": "reward",
    "time_scale_s": "reward.time_scale_s",
    "invalid_action": "invalid_action",
    "invalid_penalty": "reward.invalid_penalty",
    "duration_info": "simulator.duration_info",
    "sample_iterations": "simulator.sample_iterations",
    "sample_noise": "simulator.sample_noise",
    "suspend_overhead_s": "simulator.suspend_overhead_s",
    "resume_overhead_s": "simulator.resume_overhead_s",
    "interference": "simulator.interference",
    "max_decisions": "limits.max_decisions",
    "max_time_s": "limits.max_time_s",
    "auto_advance": "auto_advance",
    "on_unfit": "on_unfit",
    "max_suspends_per_job": "limits.max_suspends_per_job",
    "min_service_s": "limits.min_service_s",
    "observe_held_time": "observation.held_time",
    "observe_placement": "observation.placement",
    "observe_drain": "observation.drain",
    "observe_rivals": "observation.rivals",
    "observe_cluster_summary": "observation.cluster_summary",
}


#: Largest magnitude of a reward weight and of ``invalid_penalty`` (the reward stays finite).
MAX_REWARD_WEIGHT = 1e12
#: Smallest ``reward.time_scale_s`` (its inverse scales every term).  [s]
MIN_TIME_SCALE_S = 1e-6
#: Largest ``limits.max_decisions`` (a C ``long`` in the core, with room).
MAX_DECISIONS = 2**62
#: Largest ``limits.max_suspends_per_job`` (a C ``int`` in the core).
_MAX_C_INT = 2**31 - 1


@dataclass(frozen=True, slots=True)
class WindowsConfig(Group):
    """The windows of jobs the agent's actions address (and the observation shows).

    Attributes:
        pending: ``W``, waiting jobs (by arrival, suspended ones included) the schedule
            actions address, in [1, 1024].
        running: ``R``, running jobs (in start order) the suspend actions address, in
            [1, 1024].
        gpus: Rows of ``obs["gpus"]``: ``None`` (default), one per GPU of the cluster;
            an int in [1, 65536], the cluster's GPUs then all-zero rows up to this many,
            so that envs on clusters of up to ``gpus`` GPUs share one observation shape
            (a real GPU's row has ``capacity`` > 0, a padding row is all zeros).
        priority: Share of the pending window, in [0, 1], chosen by priority rather
            than by arrival once more jobs wait than it holds: the first
            ``W - round(priority * W)`` waiting jobs by arrival (the starved), then the
            ``round(priority * W)`` others with the least attained GPU service (Tiresias'
            key; fresh jobs first), ties by arrival; the window lists them in arrival
            order. 0 (default): the first ``W`` by arrival, so that under a long queue
            a policy sees only its oldest jobs.
    """

    path: ClassVar[str] = "EnvConfig.windows"

    pending: int = 16
    running: int = 16
    gpus: int | None = None
    priority: float = 0.0

    def __post_init__(self) -> None:
        self._plain_settings()
        for name in ("pending", "running"):
            value = getattr(self, name)
            if not (is_int(value) and 1 <= value <= _MAX_WINDOW):
                raise self._bad(name, f"an int in [1, {_MAX_WINDOW}]")
        if self.gpus is not None and not (is_int(self.gpus) and 1 <= self.gpus <= _MAX_GPU_ROWS):
            raise self._bad("gpus", f"None or an int in [1, {_MAX_GPU_ROWS}]")
        self._within(("priority",), 0.0, 1.0)

    def windows(self) -> Windows:
        """The simulator's ``Windows`` these settings give (the env's and a headless
        run's alike)."""
        return Windows(self.pending, self.running, self.priority)


@dataclass(frozen=True, slots=True)
class ObservationConfig(Group):
    """Optional observation columns (``False``: the standard ones only).

    Attributes:
        held_time: Append a ``held_time`` column to ``obs["running"]``: the time since the
            job got its current GPUs (``log_time``), which time-slicing schedulers decide
            by.
        placement: Append ``pack_load`` and ``spread_load`` to the pending rows (the load
            the GPUs each strategy would pick reach with the job) and ``shares_gpu`` to the
            running rows, what packing schedulers such as Gandiva decide by. Experimental:
            every observation runs two placement searches per pending slot (shared among
            the window's jobs of one shape).
        drain: Append ``drain_share`` to the pending and running rows: ``r / (r + D)`` for
            a job's predicted remaining time ``r`` and the time ``D`` the cluster needs for
            all predicted work at full use, what the thesis's critical-path rule decides by
            (a job is critical when ``r >= f D``). Experimental: an O(jobs in system) sum
            per observation.
        rivals: Append ``rival_wait`` and ``rival_remaining`` to the running rows: over the
            waiting jobs of the whole queue that request as many GPUs as the running job,
            the longest wait and the shortest predicted remaining time, what time-slicing
            schedulers decide by when they swap a running job for a waiting one of the
            same size. Experimental: an O(waiting jobs) pass per observation.
        cluster_summary: Replace ``obs["gpus"]`` (a row per GPU) by ``obs["cluster"]``, the
            cluster summarised at a fixed width: per GPU type of the catalog, its share of
            the GPUs, idle GPUs, a histogram of the free memory of shared GPUs, free
            compute, contention and the idle gangs of 1, 2, 4 and 8 GPUs on one node.
            With it (and the pointer policy's slots) no part of the observation's shape
            depends on the cluster, so one model file plays on any cluster.
    """

    path: ClassVar[str] = "EnvConfig.observation"

    held_time: bool = False
    placement: bool = False
    drain: bool = False
    rivals: bool = False
    cluster_summary: bool = False

    def __post_init__(self) -> None:
        self._plain_settings()
        for name in self.keys():
            if not isinstance(getattr(self, name), bool):
                raise self._bad(name, "True or False")


@dataclass(frozen=True, slots=True)
class RewardConfig(Group):
    """The reward: weights of the named components (the reward is their weighted sum), the
    time unit they are measured in and the size of the invalid-action term.

    Every component is a raw term in ``info["reward_terms"]`` (see ``GPUShareEnv``'s
    *Rewards* section for the exact definitions); ``T`` below is ``time_scale_s``. The
    default (only ``jct`` and ``invalid``) optimises mean job completion time. The scale
    and the penalty live here, beside the weights, because they only shape the reward
    (the flat form gives them as ``time_scale_s`` and ``invalid_penalty``, the weights as
    ``reward``).

    Attributes:
        jct: Weight of ``-(jobs in system) x elapsed / T``; sums to ``-total JCT / T``.
        makespan: Weight of ``-elapsed / T`` from the first arrival until all jobs finish.
        utilisation: Weight of ``+(compute in use / GPUs) x elapsed / T``.
        slowdown: Weight of ``-sum over jobs in system of elapsed / solo duration``; sums to
            ``-sum of slowdowns``.
        starvation: Weight of the integral of ``-(sum of current waits) / T^2``; sums to
            ``-sum over waiting stints of (wait / T)^2 / 2`` (long waits cost more).
        overhead: Weight of ``-(GPUs held by suspending / resuming jobs) x elapsed / T``;
            sums to ``-GPU-seconds lost to overheads / T``.
        invalid: Weight of ``-invalid_penalty`` per invalid (no-op) action.
        delay: Weight of ``-(jobs in system - their progress in solo seconds per second) x
            elapsed / T``; sums to ``-(total JCT - total solo time) / T``: the time jobs
            lose to waiting, sharing, suspensions and overheads. A running job at solo
            speed costs nothing, so the term is small and immediate where ``jct`` charges
            every job in the system.
        time_scale_s: ``T``, the time unit of the rewards, > 0.  # [s]
        invalid_penalty: Size of the ``invalid`` term, >= 0.
    """

    path: ClassVar[str] = "EnvConfig.reward"

    jct: float = 1.0
    makespan: float = 0.0
    utilisation: float = 0.0
    slowdown: float = 0.0
    starvation: float = 0.0
    overhead: float = 0.0
    invalid: float = 1.0
    delay: float = 0.0
    time_scale_s: float = 3600.0  # [s]
    invalid_penalty: float = 0.1

    def __post_init__(self) -> None:
        self._plain_settings()
        for name in REWARD_COMPONENTS:
            value = getattr(self, name)
            if not (is_finite(value) and abs(value) <= MAX_REWARD_WEIGHT):
                raise self._bad(name, "a finite number >= -1e12 and <= 1e12")
        if not (is_finite(self.time_scale_s) and self.time_scale_s >= MIN_TIME_SCALE_S):
            raise self._bad("time_scale_s", f"a finite number {range_text(MIN_TIME_SCALE_S)}")
        if not (is_finite(self.invalid_penalty) and 0 <= self.invalid_penalty <= MAX_REWARD_WEIGHT):
            allowed = f"a finite number {range_text(0, MAX_REWARD_WEIGHT)}"
            raise self._bad("invalid_penalty", allowed)

    def weights(self) -> tuple[float, ...]:
        """The weights in ``REWARD_COMPONENTS`` order."""
        return tuple(float(getattr(self, name)) for name in REWARD_COMPONENTS)

    def weights_by_name(self) -> dict[str, float]:
        """The weights by component name (the value of the flat key ``reward``)."""
        return dict(zip(REWARD_COMPONENTS, self.weights(), strict=True))


@dataclass(frozen=True, slots=True)
class LimitsConfig(Group):
    """When an episode is cut short, and the suspension rules.

    The suspension rules bind every policy alike (the mask for agents,
    ``SimView.can_suspend`` and ``Simulator.suspend`` for heuristics): they are the
    simulator's (``SimConfig``), set here for the env. Together they bound the decisions
    of an episode (docs/model.md, *Suspension rules*).

    Attributes:
        max_decisions: Truncate after this many agent decisions, >= 1 (``None``: 50 per
            job plus 1,000; see ``decision_cap``).
        max_time_s: Truncate when simulated time reaches this, > 0 (``None``: no limit).  # [s]
        max_suspends_per_job: A job suspended this many times may not be suspended again,
            >= 0 (``None``: no cap). Default 3, the thesis heuristic's own cap.
        min_service_s: A resumed job may not be suspended again before it has computed
            this long, >= 0 (default 0: no quantum).  # [s]
    """

    path: ClassVar[str] = "EnvConfig.limits"

    max_decisions: int | None = None
    max_time_s: float | None = None  # [s]
    max_suspends_per_job: int | None = 3
    min_service_s: float = 0.0  # [s]

    def __post_init__(self) -> None:
        self._plain_settings()
        if self.max_decisions is not None and not (
            is_int(self.max_decisions) and 1 <= self.max_decisions <= MAX_DECISIONS
        ):
            raise self._bad("max_decisions", "None or an int >= 1 and <= 2**62")
        if self.max_time_s is not None and not (is_real(self.max_time_s) and self.max_time_s > 0):
            raise self._bad("max_time_s", "None or a number > 0 (inf: no limit)")
        cap = self.max_suspends_per_job
        if cap is not None and not (is_int(cap) and 0 <= cap <= _MAX_C_INT):
            raise self._bad("max_suspends_per_job", "None or an integer >= 0 and <= 2**31 - 1")
        if not (is_finite(self.min_service_s) and 0 <= self.min_service_s <= MAX_DURATION_S):
            raise self._bad("min_service_s", f"a finite number {range_text(0, MAX_DURATION_S)}")

    def decision_cap(self, num_jobs: int) -> int:
        """Decisions after which an episode of ``num_jobs`` jobs is truncated."""
        if self.max_decisions is not None:
            return self.max_decisions
        return 50 * num_jobs + 1000


#: The simulator settings the env exposes, and how the errors describe their ranges.
_SIMULATOR_ALLOWED: dict[str, str] = {
    "duration_info": f"one of {list(DURATION_INFO)}",
    "sample_iterations": "an int >= 0",
    "sample_noise": "a number in [0, 1)",
    "suspend_overhead_s": f"None or a number {range_text(0, MAX_DURATION_S)} s",
    "resume_overhead_s": f"None or a number {range_text(0, MAX_DURATION_S)} s",
    "interference": f"one of {list(INTERFERENCE_MODELS)}",
}


@dataclass(frozen=True, slots=True)
class SimulatorConfig(Group):
    """What the simulator reveals of job lengths, and what a preemption costs (the env's
    share of ``SimConfig``).

    The ranges are ``gpushare_env.sim.SimConfig``'s own (each value is checked by building
    a ``SimConfig`` with it), so the env and a headless simulator accept the same values;
    this group adds the type checks and names the failing setting by its path.

    Attributes:
        duration_info: What the agent sees of job lengths: ``"none"``, ``"sampled"``
            (after ``sample_iterations``, with noise) or ``"oracle"``.
        sample_iterations: Iterations a job runs before its step time is measured, >= 0.
        sample_noise: Relative std-dev of that measurement, in [0, 1).
        suspend_overhead_s: Checkpoint time of every suspension (``None``: each model's own,
            2-5 s, ``gpushare_env.sim.catalog``).  # [s]
        resume_overhead_s: Restart time of every resume or migration (``None``: each
            model's own, 5-50 s).  # [s]
        interference: The sharing model: ``"analytic"`` (default), ``"measured"``
            (Gavel's measured pairs, a proxy job type for every catalog model) or
            ``"measured_exact"`` (measured pairs of same-architecture matches only);
            docs/model.md, *Measured interference*.
    """

    path: ClassVar[str] = "EnvConfig.simulator"

    duration_info: str = "sampled"
    sample_iterations: int = 20
    sample_noise: float = 0.05
    suspend_overhead_s: float | None = None  # [s]
    resume_overhead_s: float | None = None  # [s]
    interference: str = "analytic"

    def __post_init__(self) -> None:
        self._plain_settings()
        kinds: dict[str, type | tuple[type, ...]] = {
            "duration_info": str,
            "sample_iterations": int,
            "sample_noise": (int, float),
            "suspend_overhead_s": (int, float, type(None)),
            "resume_overhead_s": (int, float, type(None)),
            "interference": str,
        }
        for name, allowed in _SIMULATOR_ALLOWED.items():
            value = getattr(self, name)
            try:
                if isinstance(value, bool) or not isinstance(value, kinds[name]):
                    raise TypeError(name)
                one: dict[str, Any] = {name: value}
                SimConfig(**one)  # the simulator's own range check
            except (TypeError, ValueError):
                raise self._bad(name, allowed) from None

    def sim_config(self) -> SimConfig:
        """The ``SimConfig`` of these settings (the others at the simulator's defaults)."""
        return SimConfig(**self.as_dict())


#: The groups of ``EnvConfig``, by their key, in field order.
_GROUPS: dict[str, type[Group]] = {
    "windows": WindowsConfig,
    "observation": ObservationConfig,
    "reward": RewardConfig,
    "limits": LimitsConfig,
    "simulator": SimulatorConfig,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvConfig:
    """Everything that defines a ``GPUShare-v0`` episode distribution.

    The defaults give a quick episode: the 16-GPU ``thesis`` cluster and the thesis's
    100-job workload (one job a second, Philly-style sizes and lengths of 1 min to 4 h),
    about 300-500 decisions per episode with a random policy. The groups take a dict of
    some of their settings or an instance; ``from_any`` also takes the flat form's short
    keys (``FLAT_KEYS``).

    Attributes:
        cluster: A preset name of ``gpushare_env.sim.PRESETS`` (``tiny``, ``thesis``,
            ``medium``, ``philly``, ...), a dict for ``ClusterConfig.from_any``, or a
            ``ClusterConfig``.
        workload: A preset of ``gpushare_env.workloads.WORKLOAD_PRESETS`` (``thesis``,
            ``thesis_poisson``, ``philly``, ``philly_parametric``, ``philly_bursty``), a
            dict of ``WorkloadConfig`` fields, or the path of a ``.csv`` / ``.json`` trace.
            A new workload is drawn at every reset from the env's generator; a trace is
            read once and replayed every episode.
        num_jobs: Jobs per episode, >= 1 (``None``, the default: the workload's own count:
            its ``num_jobs`` if it sets one, else 100 for a generator and every job for a
            trace). A trace cut short by it warns once (``UserWarning``) and says so in
            ``reset``'s ``info["trace_cut"]``.
        jobs: A fixed job list replayed every episode (overrides ``workload`` and
            ``num_jobs``); ``reset(options={"jobs": [...]})`` does the same for one episode.
        windows: The jobs actions address (``WindowsConfig``: ``pending``, ``running``).
        observation: Optional observation columns (``ObservationConfig``: ``held_time``,
            ``placement``, ``drain``, ``rivals``).
        reward: The reward (``RewardConfig``: the weights by component name,
            ``time_scale_s`` and ``invalid_penalty``).
        limits: Truncation and the suspend cap (``LimitsConfig``: ``max_decisions``,
            ``max_time_s``, ``max_suspends_per_job``).
        simulator: What the simulator reveals of job lengths (``SimulatorConfig``:
            ``duration_info``, ``sample_iterations``, ``sample_noise``).
        invalid_action: ``"noop"`` (an unmasked invalid action changes nothing and scores
            ``-reward.invalid_penalty``) or ``"raise"`` (``InvalidActionError``).
        auto_advance: Skip states where ``advance`` is the only valid action (SMDP
            decision points); ``False`` asks the agent at every state.
        on_unfit: Jobs that can never fit the cluster are dropped (``"reject"``, counted in
            ``info["rejected_jobs"]``) or raise (``"error"``).
    """

    cluster: str | Mapping[str, Any] | ClusterConfig = "thesis"
    workload: str | os.PathLike[str] | Mapping[str, Any] = "thesis"
    num_jobs: int | None = None
    jobs: tuple[JobSpec, ...] | None = field(default=None, repr=False)
    windows: WindowsConfig = field(default_factory=WindowsConfig)
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    simulator: SimulatorConfig = field(default_factory=SimulatorConfig)
    invalid_action: str = "noop"
    auto_advance: bool = True
    on_unfit: str = "reject"

    def __post_init__(self) -> None:
        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"EnvConfig.{name} must be {allowed}, got {getattr(self, name)!r}")

        # normalise the composite fields first (frozen: via object.__setattr__)
        for name in ("num_jobs", "invalid_action", "auto_advance", "on_unfit"):
            object.__setattr__(self, name, plain(getattr(self, name)))
        for name, group in _GROUPS.items():
            object.__setattr__(self, name, group.from_any(getattr(self, name)))
        try:
            ClusterConfig.from_any(self.cluster)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.{error}") from error
        if self.jobs is not None:
            jobs = tuple(self.jobs) if isinstance(self.jobs, (list, tuple)) else ()
            if not jobs or not all(isinstance(j, JobSpec) for j in jobs):
                raise bad("jobs", "None or a non-empty sequence of JobSpec")
            object.__setattr__(self, "jobs", jobs)
        if not isinstance(self.workload, (str, os.PathLike, Mapping)):
            raise bad("workload", "a preset name, a dict or a trace path")
        try:
            WorkloadConfig.from_any(self.workload)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.workload: {error}") from error
        if self.num_jobs is not None and not (
            is_int(self.num_jobs) and 1 <= self.num_jobs <= MAX_JOBS
        ):
            raise bad("num_jobs", f"None or an int {range_text(1, MAX_JOBS)}")
        if not (
            isinstance(self.invalid_action, str) and self.invalid_action in INVALID_ACTION_MODES
        ):
            raise bad("invalid_action", f"one of {list(INVALID_ACTION_MODES)}")
        if not isinstance(self.auto_advance, bool):
            raise bad("auto_advance", "True or False")
        if not (isinstance(self.on_unfit, str) and self.on_unfit in _ON_UNFIT):
            raise bad("on_unfit", f"one of {list(_ON_UNFIT)}")

    # ------------------------------------------------------------ keys and paths
    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The accepted top-level keys of the nested form (settings and groups)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def paths(cls) -> tuple[str, ...]:
        """Every setting's path in the nested form (``windows.pending``, ...), in order."""
        return _KEYS.paths()

    # ------------------------------------------------------------ building
    @classmethod
    def from_any(
        cls, spec: EnvConfig | Mapping[str, Any] | None = None, **overrides: Any
    ) -> EnvConfig:
        """Build from ``None`` (defaults), a dict, or an ``EnvConfig``, then apply ``overrides``.

        A dict may use the nested form, the flat form's short keys (``FLAT_KEYS``), or
        both for different settings. ``overrides`` take the same keys (flat ones
        included) and win over ``spec``, setting by setting.

        Raises:
            ValueError: an unknown key (the allowed ones are listed), one setting given
                twice in ``spec`` or in ``overrides`` (both keys are named), or a bad value
                (its path and the allowed range are named).
            TypeError: ``spec`` is neither a dict nor an ``EnvConfig``, or a group's value
                is neither a dict nor the group's class.
        """
        if isinstance(spec, EnvConfig):
            if not overrides:
                return spec
            given: Mapping[str, Any] = {f.name: getattr(spec, f.name) for f in fields(cls)}
        elif spec is None:
            given = {}
        elif isinstance(spec, Mapping):
            given = spec
        else:
            raise TypeError(f"config must be a dict or an EnvConfig, got {type(spec).__name__}")
        settings = {**_settings(given), **_settings(overrides)}
        top, groups = _KEYS.split(settings)
        built: dict[str, Any] = {name: _GROUPS[name](**values) for name, values in groups.items()}
        return cls(**top, **built)

    @classmethod
    def flatten(cls, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The settings ``spec`` gives, by their flat key (defaults are not filled in).

        Checks the keys as ``from_any`` does (unknown keys, a setting given twice), not
        the values. For code that merges flat dicts (``{**base, **overrides}``) and is
        handed a nested one.
        """
        flat_of = {path: key for key, path in FLAT_KEYS.items()}
        out: dict[str, Any] = {}
        for path, value in _settings(spec).items():
            group, _, name = path.partition(".")
            if group == "reward" and name in REWARD_COMPONENTS:
                out.setdefault("reward", {})[name] = value
            else:
                out[flat_of[path]] = value
        return out

    # ------------------------------------------------------------ views
    def as_dict(self) -> dict[str, Any]:
        """The nested form: top-level settings as given, each group as a dict of every
        setting (``EnvConfig.from_any(config.as_dict()) == config``)."""
        out: dict[str, Any] = {}
        for key in self.keys():
            value = getattr(self, key)
            out[key] = value.as_dict() if isinstance(value, Group) else value
        return out

    def flat(self) -> dict[str, Any]:
        """The flat form, one short key per setting, every key of ``FLAT_KEYS``
        (``EnvConfig.from_any(config.flat()) == config``)."""
        out = _KEYS.flat(self)
        out["reward"] = self.reward.weights_by_name()
        return out

    def decision_cap(self, num_jobs: int) -> int:
        """Decisions after which an episode of ``num_jobs`` jobs is truncated
        (``limits.decision_cap``)."""
        return self.limits.decision_cap(num_jobs)

    def sim_config(self) -> SimConfig:
        """The simulator settings of this config: the ``simulator`` group and the
        suspension rules of ``limits`` (the others at the simulator's defaults)."""
        return dataclasses.replace(
            self.simulator.sim_config(),
            max_suspends_per_job=self.limits.max_suspends_per_job,
            min_service_s=float(self.limits.min_service_s),
        )


def _settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a config dict gives, by path (``{"windows.pending": 8, ...}``).

    Accepts the nested form, the flat keys (``FLAT_KEYS``) or both; a group given as an
    instance sets every one of its settings.

    Raises:
        ValueError: an unknown key (at any level), or one setting given twice.
        TypeError: a group's value is neither a dict nor the group's class.
    """
    if "engine" in spec:
        raise ValueError(
            "GPUShare-v0 config: the 'engine' key was removed: every episode runs on the "
            "simulator's one compiled engine (drop the key)"
        )
    return _KEYS.settings(spec)


#: The keys of ``EnvConfig``: its settings and groups, and the flat keys (the short form).
_KEYS = KeyPaths("EnvConfig", _GROUPS, FLAT_KEYS, top_level=EnvConfig.keys())


def flat_keys(group: str) -> tuple[str, ...]:
    """The flat keys that set a group's settings, in ``FLAT_KEYS``
    order (``flat_keys("observation")``: ``observe_held_time``, ...; for ``reward``, the
    flat ``reward`` key of the weights aside)."""
    return _KEYS.flat_keys_of(group)
