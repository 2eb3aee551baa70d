"""Frozen, validated configuration of ``GPUShare-v0``: ``EnvConfig`` and its groups.

``EnvConfig`` is nested; each group is a frozen dataclass that validates itself::

    EnvConfig
    ├── cluster, workload, num_jobs, jobs      what is simulated
    ├── windows       WindowsConfig       pending, running, gpus, priority
    ├── observation   ObservationConfig   held_time, placement, drain, rivals,
    │                                     cluster_summary
    ├── reward        RewardConfig        jct ... delay (weights), time_scale_s,
    │                                     invalid_penalty
    ├── limits        LimitsConfig        max_decisions, max_time_s, max_suspends_per_job,
    │                                     min_service_s
    ├── simulator     SimulatorConfig     duration_info, sample_iterations, sample_noise,
    │                                     suspend/resume_overhead_s, interference
    └── invalid_action, auto_advance, on_unfit, strategies

``EnvConfig.run_args()`` gives, once, what a run of the config hands the simulator
(``RunArgs``: its ``SimConfig``, windows, strategies, the decision and time caps): the
env's ``reset``, a headless run and the benchmark all take them from there, so no setting
is honoured by one path only.

The sharing model is the workload's when none is chosen (an openb pod list: ``shares``,
``WorkloadConfig.sharing``); a chosen one that contradicts the workload's is refused.

Every setting is declared once, in ``gpushare_env.sim.setting_table``: its default, what
it accepts, its flat key, unit and meaning. The classes here are views of those
declarations: each field is ``declared("<path>")``, and a group checks its fields with
their declarations (``DeclaredGroup``); ``FLAT_KEYS``, ``EnvConfig.sim_config`` and the
spec's tables are made from them.

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
from gpushare_env.sim.engine import EpisodeOptions, SimConfig, Windows
from gpushare_env.sim.placement import SHARE_RULES
from gpushare_env.sim.setting_table import FLAT_KEYS as _FLAT_KEYS
from gpushare_env.sim.setting_table import (
    INVALID_ACTION_MODES,
    MAX_DECISIONS,
    MAX_REWARD_WEIGHT,
    MIN_TIME_SCALE_S,
    REWARD_COMPONENTS,
    declared,
    setting,
    sim_settings,
)
from gpushare_env.sim.settings import DeclaredGroup, Group, KeyPaths, declared_fields
from gpushare_env.sim.settings import document_settings as _documented
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import WorkloadConfig

__all__ = [
    "FLAT_KEYS",
    "INVALID_ACTION_MODES",
    "MAX_DECISIONS",
    "MAX_REWARD_WEIGHT",
    "MIN_TIME_SCALE_S",
    "REWARD_COMPONENTS",
    "EnvConfig",
    "LimitsConfig",
    "ObservationConfig",
    "RewardConfig",
    "RunArgs",
    "SimulatorConfig",
    "WindowsConfig",
    "flat_keys",
]

#: Every key of the flat form (one short key per setting) -> the setting's path in the
#: nested form, made from the settings' declarations (``gpushare_env.sim.setting_table``).
#: Top-level settings map to themselves; ``reward`` (the weights by component name) is the
#: reward group, whose other settings are the flat keys ``time_scale_s`` and
#: ``invalid_penalty``.
FLAT_KEYS: dict[str, str] = dict(_FLAT_KEYS)


@_documented
@dataclass(frozen=True, slots=True)
class WindowsConfig(DeclaredGroup):
    """The windows of jobs the agent's actions address (and the observation shows).

    Each attribute is a setting declared in ``gpushare_env.sim.setting_table`` (its
    default, range and meaning; ``help(WindowsConfig)`` lists them).
    """

    path: ClassVar[str] = "EnvConfig.windows"

    pending: int = declared("windows.pending")
    running: int = declared("windows.running")
    gpus: int | None = declared("windows.gpus")
    priority: float = declared("windows.priority")

    def windows(self) -> Windows:
        """The simulator's ``Windows`` these settings give (the env's and a headless
        run's alike)."""
        return Windows(self.pending, self.running, self.priority)


@_documented
@dataclass(frozen=True, slots=True)
class ObservationConfig(DeclaredGroup):
    """Optional observation columns (``False``: the standard ones only).

    Each attribute is a setting declared in ``gpushare_env.sim.setting_table``.
    """

    path: ClassVar[str] = "EnvConfig.observation"

    held_time: bool = declared("observation.held_time")
    placement: bool = declared("observation.placement")
    drain: bool = declared("observation.drain")
    rivals: bool = declared("observation.rivals")
    cluster_summary: bool = declared("observation.cluster_summary")


@_documented
@dataclass(frozen=True, slots=True)
class RewardConfig(DeclaredGroup):
    """The reward: weights of the named components (the reward is their weighted sum), the
    time unit they are measured in and the size of the invalid-action term.

    Every component is a raw term in ``info["reward_terms"]`` (see ``GPUShareEnv``'s
    *Rewards* section and ``gpushare_env.envs.spec.REWARD_DOCS`` for the exact
    definitions). The default (only ``jct`` and ``invalid``) optimises mean job completion
    time. The scale and the penalty live here, beside the weights, because they only
    shape the reward (the flat form gives them as ``time_scale_s`` and
    ``invalid_penalty``, the weights as ``reward``). Each attribute is a setting declared
    in ``gpushare_env.sim.setting_table``.
    """

    path: ClassVar[str] = "EnvConfig.reward"

    jct: float = declared("reward.jct")
    makespan: float = declared("reward.makespan")
    utilisation: float = declared("reward.utilisation")
    slowdown: float = declared("reward.slowdown")
    starvation: float = declared("reward.starvation")
    overhead: float = declared("reward.overhead")
    invalid: float = declared("reward.invalid")
    delay: float = declared("reward.delay")
    time_scale_s: float = declared("reward.time_scale_s")  # [s]
    invalid_penalty: float = declared("reward.invalid_penalty")

    def weights(self) -> tuple[float, ...]:
        """The weights in ``REWARD_COMPONENTS`` order."""
        return tuple(float(getattr(self, name)) for name in REWARD_COMPONENTS)

    def weights_by_name(self) -> dict[str, float]:
        """The weights by component name (the value of the flat key ``reward``)."""
        return dict(zip(REWARD_COMPONENTS, self.weights(), strict=True))


@_documented
@dataclass(frozen=True, slots=True)
class LimitsConfig(DeclaredGroup):
    """When an episode is cut short, and the suspension rules.

    The suspension rules bind every policy alike (the mask for agents,
    ``SimView.can_suspend`` and ``Simulator.suspend`` for heuristics): they are the
    simulator's (``SimConfig``), set here for the env. Together they bound the decisions
    of an episode (docs/model.md, *Suspension rules*). Each attribute is a setting
    declared in ``gpushare_env.sim.setting_table``.
    """

    path: ClassVar[str] = "EnvConfig.limits"

    max_decisions: int | None = declared("limits.max_decisions")
    max_time_s: float | None = declared("limits.max_time_s")  # [s]
    max_suspends_per_job: int | None = declared("limits.max_suspends_per_job")
    min_service_s: float = declared("limits.min_service_s")  # [s]

    def decision_cap(self, num_jobs: int) -> int:
        """Decisions after which an episode of ``num_jobs`` jobs is truncated."""
        return _decision_cap(self.max_decisions, num_jobs)


def _decision_cap(max_decisions: int | None, num_jobs: int) -> int:
    """``max_decisions``, or by default ``50 x num_jobs + 1000``."""
    if max_decisions is not None:
        return max_decisions
    return 50 * num_jobs + 1000


@_documented
@dataclass(frozen=True, slots=True)
class SimulatorConfig(DeclaredGroup):
    """What the simulator reveals of job lengths, what a preemption costs and how jobs
    sharing a GPU slow each other (the env's share of ``SimConfig``).

    Each attribute is a setting declared in ``gpushare_env.sim.setting_table``, where
    ``SimConfig`` takes it from too: the env and a headless simulator accept the same
    values, by the same check.
    """

    path: ClassVar[str] = "EnvConfig.simulator"

    duration_info: str = declared("simulator.duration_info")
    sample_iterations: int = declared("simulator.sample_iterations")
    sample_noise: float = declared("simulator.sample_noise")
    suspend_overhead_s: float | None = declared("simulator.suspend_overhead_s")  # [s]
    resume_overhead_s: float | None = declared("simulator.resume_overhead_s")  # [s]
    mig_operation_s: float = declared("simulator.mig_operation_s")  # [s]
    interference: str = declared("simulator.interference")
    sharing: str = declared("simulator.sharing")
    target_workload: str = declared("simulator.target_workload")

    def sim_config(self) -> SimConfig:
        """The ``SimConfig`` of these settings (the others at the simulator's defaults)."""
        return SimConfig(**self.as_dict())


@dataclass(frozen=True, slots=True)
class RunArgs:
    """What a run of an ``EnvConfig`` hands the simulator, made once
    (``EnvConfig.run_args``): the env's ``reset``, a headless run
    (``gpushare_eval.runs``) and the benchmark all take their arguments from here.

    Attributes:
        sim_config: The simulator's settings (``EnvConfig.sim_config``).
        windows: The jobs decisions may address (``WindowsConfig.windows``).
        strategies: The placement strategies a decision may use (the env's actions; a
            headless run refuses a policy needing another, and restricts one that picks
            among them, as the env does).
        auto_advance: Run through states without a choice.
        max_decisions: ``limits.max_decisions`` (``None``: ``decision_cap``'s default).
        max_time_s: Truncate at this simulated time (``None``: never).  [s]
    """

    sim_config: SimConfig
    windows: Windows
    strategies: tuple[str, ...]
    auto_advance: bool
    max_decisions: int | None
    max_time_s: float | None  # [s]

    @property
    def sharing(self) -> str:
        """The sharing model of the run (``SimConfig.sharing``)."""
        return str(self.sim_config.sharing)

    def decision_cap(self, num_jobs: int) -> int:
        """Decisions after which a run of ``num_jobs`` jobs is truncated
        (``LimitsConfig.decision_cap``)."""
        return _decision_cap(self.max_decisions, num_jobs)

    def episode_options(self, num_jobs: int, **encoder: Any) -> EpisodeOptions:
        """The engine's ``EpisodeOptions`` of a run of ``num_jobs`` jobs: these caps and
        strategies, with ``encoder`` (the env's observation columns, reward weights and
        scale, invalid-action penalty; none headless)."""
        return EpisodeOptions(
            auto_advance=self.auto_advance,
            max_time_s=self.max_time_s,
            decision_cap=self.decision_cap(num_jobs),
            strategies=self.strategies,
            **encoder,
        )


#: ``EnvConfig.simulator`` when it is not given: the defaults, the sharing model left to
#: the workload (``EnvConfig._resolve_sharing``).
_SIMULATOR_DEFAULTS = SimulatorConfig()

#: The groups of ``EnvConfig``, by their key, in field order.
_GROUPS: dict[str, type[Group]] = {
    "windows": WindowsConfig,
    "observation": ObservationConfig,
    "reward": RewardConfig,
    "limits": LimitsConfig,
    "simulator": SimulatorConfig,
}


@_documented
@dataclass(frozen=True, slots=True, kw_only=True)
class EnvConfig:
    """Everything that defines a ``GPUShare-v0`` episode distribution.

    The defaults give a quick episode: the 16-GPU ``thesis`` cluster and the thesis's
    100-job workload (one job a second, Philly-style sizes and lengths of 1 min to 4 h),
    about 300-500 decisions per episode with a random policy. The groups take a dict of
    some of their settings or an instance; ``from_any`` also takes the flat form's short
    keys (``FLAT_KEYS``). Every setting, top-level or in a group, is declared in
    ``gpushare_env.sim.setting_table`` (its default, range and meaning).

    The groups: ``windows`` (``WindowsConfig``: the jobs actions address),
    ``observation`` (``ObservationConfig``: optional observation columns), ``reward``
    (``RewardConfig``: the weights by component name, ``time_scale_s`` and
    ``invalid_penalty``), ``limits`` (``LimitsConfig``: truncation and the suspension
    rules) and ``simulator`` (``SimulatorConfig``: what the simulator reveals of job
    lengths, the overheads and the sharing model).
    """

    cluster: str | Mapping[str, Any] | ClusterConfig = declared("cluster")
    workload: str | os.PathLike[str] | Mapping[str, Any] = declared("workload")
    num_jobs: int | None = declared("num_jobs")
    jobs: tuple[JobSpec, ...] | None = declared("jobs", repr=False)
    windows: WindowsConfig = field(default_factory=WindowsConfig)
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    simulator: SimulatorConfig = field(default=_SIMULATOR_DEFAULTS)
    invalid_action: str = declared("invalid_action")
    auto_advance: bool = declared("auto_advance")
    on_unfit: str = declared("on_unfit")
    strategies: tuple[str, ...] = declared("strategies")

    def __post_init__(self) -> None:
        # the declared top-level settings (the composite ones are checked below), then
        # the groups (frozen: via object.__setattr__)
        for name, entry in declared_fields(EnvConfig):
            value = getattr(self, name)
            kept = entry.check(value, "EnvConfig")
            if kept is not value:
                object.__setattr__(self, name, kept)
        given_simulator = self.simulator
        for name, group in _GROUPS.items():
            object.__setattr__(self, name, group.from_any(getattr(self, name)))
        try:
            ClusterConfig.from_any(self.cluster)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.{error}") from error
        if self.jobs is not None:
            jobs = tuple(self.jobs) if isinstance(self.jobs, (list, tuple)) else ()
            if not jobs or not all(isinstance(j, JobSpec) for j in jobs):
                raise self._bad("jobs")
            object.__setattr__(self, "jobs", jobs)
        if not isinstance(self.workload, (str, os.PathLike, Mapping)):
            raise self._bad("workload")
        try:
            WorkloadConfig.from_any(self.workload)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.workload: {error}") from error
        self._resolve_sharing(given_simulator)
        rules = [name for name in self.strategies if name in SHARE_RULES]
        if rules and self.simulator.sharing != "shares":
            raise ValueError(
                f"EnvConfig.strategies: {rules} place requested shares; they need "
                f"simulator.sharing = 'shares', got {self.simulator.sharing!r}"
            )

    def _resolve_sharing(self, given: Any) -> None:
        """Take the workload's sharing model (``WorkloadConfig.sharing``) when none is
        chosen (``simulator`` not given, or given without ``sharing``); refuse a chosen
        one that contradicts it. Given jobs (``jobs``) have no workload to ask."""
        if self.jobs is not None:
            return
        workload = WorkloadConfig.from_any(self.workload)
        needed = workload.sharing()
        if needed is None:
            return
        chosen = not (
            given is _SIMULATOR_DEFAULTS or (isinstance(given, Mapping) and "sharing" not in given)
        )
        if not chosen:
            if self.simulator.sharing != needed:
                simulator = dataclasses.replace(self.simulator, sharing=needed)
                object.__setattr__(self, "simulator", simulator)
            return
        if self.simulator.sharing != needed:
            raise ValueError(
                f"EnvConfig.simulator.sharing: {workload.describe_sharing()}, got sharing="
                f"{self.simulator.sharing!r}; leave it unset (the workload's model is taken) "
                f"or give {needed!r}"
            )

    def _bad(self, name: str) -> ValueError:
        """``"EnvConfig.<name> must be <what its declaration allows>, got <value>"``."""
        allowed = setting(name).allowed_text()
        return ValueError(f"EnvConfig.{name} must be {allowed}, got {getattr(self, name)!r}")

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
            # a simulator group left at its defaults stays so (the workload's sharing)
            given: Mapping[str, Any] = {
                f.name: getattr(spec, f.name)
                for f in fields(cls)
                if not (f.name == "simulator" and spec.simulator is _SIMULATOR_DEFAULTS)
            }
        elif spec is None:
            given = {}
        elif isinstance(spec, Mapping):
            given = spec
        else:
            raise TypeError(f"config must be a dict or an EnvConfig, got {type(spec).__name__}")
        settings = {**_settings(given), **_settings(overrides)}
        top, groups = _KEYS.split(settings)
        # each group as the dict of its settings given (a group left out takes its
        # defaults): the sharing model, if not given, is the workload's
        built: dict[str, Any] = dict(groups)
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

    def value(self, path: str) -> Any:
        """The value of the setting at ``path`` (``"limits.max_suspends_per_job"``)."""
        group, _, name = path.partition(".")
        owner = getattr(self, group)
        return getattr(owner, name) if name else owner

    def sim_config(self) -> SimConfig:
        """The simulator settings of this config: every setting ``SimConfig`` has that the
        env exposes (the ``simulator`` group and the suspension rules of ``limits``), the
        others at the simulator's defaults."""
        return SimConfig(**{entry.name: self.value(entry.path) for entry in _SIM_SETTINGS})

    def run_args(self) -> RunArgs:
        """What a run of this config hands the simulator (``RunArgs``): the env's
        ``reset``, a headless run and the benchmark take them from here."""
        return RunArgs(
            sim_config=self.sim_config(),
            windows=self.windows.windows(),
            strategies=self.strategies,
            auto_advance=self.auto_advance,
            max_decisions=self.limits.max_decisions,
            max_time_s=self.limits.max_time_s,
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
#: The simulator's settings the env sets (``EnvConfig.sim_config``).
_SIM_SETTINGS = tuple(entry for entry in sim_settings() if entry.env)


def flat_keys(group: str) -> tuple[str, ...]:
    """The flat keys that set a group's settings, in ``FLAT_KEYS``
    order (``flat_keys("observation")``: ``observe_held_time``, ...; for ``reward``, the
    flat ``reward`` key of the weights aside)."""
    return _KEYS.flat_keys_of(group)
