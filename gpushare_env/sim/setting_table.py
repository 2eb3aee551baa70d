"""Every setting of the env and the simulator, declared once: :data:`SETTINGS`.

A setting's one declaration (a :class:`~gpushare_env.sim.settings.Setting`) holds its
path in ``EnvConfig``'s nested form, its default, what it accepts, its flat key, its
unit and its meaning. Everything else is made from it:

* the checks and their errors: the env's groups (``EnvConfig.windows``, ...) and
  ``SimConfig`` are :class:`~gpushare_env.sim.settings.DeclaredGroup` s whose fields are
  :func:`declared` (``pending: int = declared("windows.pending")``), so they take the
  default from here and check the value with it, naming their own path
  (``EnvConfig.limits.max_suspends_per_job``, ``SimConfig.max_suspends_per_job``);
* the flat keys (:data:`FLAT_KEYS`, the env's ``FLAT_KEYS``);
* ``SimConfig`` of an env config (``EnvConfig.sim_config``: every setting with ``sim``);
* the env's spec (``gpushare_env.envs.spec``) and docs/env.md's settings tables
  (``python -m scripts.env_doc`` writes them; a test fails when they are stale);
* the training's env settings (``agents.train_config.EnvsConfig``: their defaults).

Adding a setting: one :class:`Setting` below, at its place in its group; a field
``name: type = declared("group.name")`` in the group's class (and in ``SimConfig`` if
``sim``); then ``python -m scripts.env_doc``. ``tests/sim/test_setting_table.py`` fails
until every config field and every setting match one to one.

It is part of the simulation core (no env, no gymnasium), so every layer can use it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from gpushare_env.sim.cluster import PRESETS
from gpushare_env.sim.interference import INTERFERENCE_MODELS
from gpushare_env.sim.limits import MAX_CLUSTER_GPUS, MAX_DURATION_S, MAX_JOBS
from gpushare_env.sim.placement import ALL_STRATEGIES, STRATEGIES
from gpushare_env.sim.settings import (
    Choice,
    Flag,
    Given,
    Int,
    Names,
    Real,
    Setting,
    declared_field,
)
from gpushare_env.sim.sharing import SHARING_MODELS as _SHARING_CLASSES
from gpushare_env.sim.target_workload import TARGET_WORKLOADS

__all__ = [
    "DURATION_INFO",
    "FLAT_KEYS",
    "INVALID_ACTION_MODES",
    "MAX_DECISIONS",
    "MAX_REWARD_WEIGHT",
    "MAX_WINDOW",
    "MIN_TIME_SCALE_S",
    "ON_UNFIT",
    "REWARD_COMPONENTS",
    "SETTINGS",
    "SHARING_MODELS",
    "declared",
    "env_settings",
    "index_settings",
    "setting",
    "sim_settings",
]

#: The sharing models' names (``SimConfig.sharing``; one class each in
#: ``gpushare_env.sim.sharing``): what limits the jobs on one GPU.
SHARING_MODELS = tuple(_SHARING_CLASSES)

#: What schedulers see of job lengths (``simulator.duration_info``).
DURATION_INFO: tuple[str, ...] = ("none", "sampled", "oracle")
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
ON_UNFIT: tuple[str, ...] = ("reject", "error")

#: Largest pending and running window.
MAX_WINDOW = 1024
#: Largest magnitude of a reward weight and of ``invalid_penalty`` (the reward stays finite).
MAX_REWARD_WEIGHT = 1e12
#: Smallest ``reward.time_scale_s`` (its inverse scales every term).  [s]
MIN_TIME_SCALE_S = 1e-6
#: Largest ``limits.max_decisions`` (a C ``long`` in the core, with room).
MAX_DECISIONS = 2**62
#: Largest value of the core's C ``int`` settings (``max_suspends_per_job``,
#: ``sample_iterations``).
_MAX_C_INT = 2**31 - 1


def _noise(value: float) -> float:
    """``sample_noise`` as a float; ``-0.0`` as ``0.0`` (numpy's ``normal`` refuses a
    negative zero scale)."""
    return float(value) + 0.0


_CLUSTERS = ", ".join(PRESETS)
_SECONDS = "s"

#: The declarations, in ``EnvConfig``'s order (its fields, each group's settings in the
#: group's field order); the simulator's settings the env does not expose last in
#: ``simulator``.
_DECLARED: tuple[Setting, ...] = (
    # ---------------------------------------------------------------- what is simulated
    Setting(
        "cluster",
        "thesis",
        Given("a preset name, a dict or a ClusterConfig"),
        f"the cluster: a preset ({_CLUSTERS}) or a dict of its node groups",
        flat="cluster",
        details="Presets: ``gpushare_env.sim.PRESETS``.",
    ),
    Setting(
        "workload",
        "thesis",
        Given("a preset name, a dict or a trace path"),
        "the workload: a preset of WORKLOAD_PRESETS (thesis, thesis_poisson, philly, "
        "philly_parametric, philly_bursty, philly_heavy), a dict of WorkloadConfig fields, "
        "or a .csv / .json trace path",
        flat="workload",
        details="A new workload is drawn at every reset from the env's generator; a trace "
        "is read once and replayed every episode.",
    ),
    Setting(
        "num_jobs",
        None,
        Int(1, MAX_JOBS, optional=True),
        "jobs per episode (None: the workload's own count, 100 generated or every job of a trace)",
        flat="num_jobs",
        details="A trace cut short by it warns once (``UserWarning``) and says so in "
        "``reset``'s ``info['trace_cut']``.",
    ),
    Setting(
        "jobs",
        None,
        Given("a non-empty sequence of JobSpec", optional=True),
        "a fixed list of JobSpec replayed every episode (overrides workload and num_jobs)",
        flat="jobs",
        details="``reset(options={'jobs': [...]})`` does the same for one episode.",
    ),
    # ---------------------------------------------------------------- windows
    Setting(
        "windows.pending",
        16,
        Int(1, MAX_WINDOW),
        "W: the waiting jobs schedule actions address, suspended ones included (the first "
        "W by arrival, unless windows.priority: under a long queue a policy sees only the "
        "oldest W)",
        flat="pending_window",
    ),
    Setting(
        "windows.running",
        16,
        Int(1, MAX_WINDOW),
        "R: the running jobs suspend actions address, in start order",
        flat="running_window",
    ),
    Setting(
        "windows.gpus",
        None,
        Int(1, MAX_CLUSTER_GPUS, optional=True),
        "rows of obs['gpus'] (None: one per GPU; N: the cluster's GPUs, then all-zero rows "
        "up to N, one shape for clusters of up to N GPUs)",
        flat="gpu_rows",
        details="A real GPU's row has ``capacity`` > 0, a padding row is all zeros.",
    ),
    Setting(
        "windows.priority",
        0.0,
        Real(0.0, 1.0),
        "share of the pending window given, under a long queue, to the waiting jobs with "
        "the least attained GPU service (fresh ones first) instead of the next by arrival; "
        "the window lists its jobs in arrival order (0: by arrival)",
        flat="window_priority",
        details="The window holds the first ``W - round(priority * W)`` waiting jobs by "
        "arrival (the starved), then the ``round(priority * W)`` others with the least "
        "attained GPU service (Tiresias' key), ties by arrival.",
    ),
    # ---------------------------------------------------------------- observation
    Setting(
        "observation.held_time",
        False,
        Flag(),
        "append held_time (the time since the job got its GPUs) to the running rows",
        flat="observe_held_time",
        details="What time-slicing schedulers decide by.",
    ),
    Setting(
        "observation.placement",
        False,
        Flag(),
        "append pack_load, spread_load to the pending rows and shares_gpu to the running "
        "rows (experimental)",
        flat="observe_placement",
        details="What packing schedulers such as Gandiva decide by; every observation runs "
        "two placement searches per pending slot (shared among the window's jobs of one "
        "shape).",
    ),
    Setting(
        "observation.drain",
        False,
        Flag(),
        "append drain_share (remaining / (remaining + drain time)) to the pending and "
        "running rows (experimental)",
        flat="observe_drain",
        details="What the thesis's critical-path rule decides by; an O(jobs in system) sum "
        "per observation.",
    ),
    Setting(
        "observation.rivals",
        False,
        Flag(),
        "append rival_wait, rival_remaining (the waiting jobs requesting as many GPUs: "
        "longest wait, shortest predicted remaining) to the running rows (experimental)",
        flat="observe_rivals",
        details="What time-slicing schedulers decide by when they swap a running job for a "
        "waiting one of the same size; an O(waiting jobs) pass per observation.",
    ),
    Setting(
        "observation.cluster_summary",
        False,
        Flag(),
        "replace obs['gpus'] (a row per GPU) by obs['cluster'] (per GPU type: idle, free "
        "memory, compute, gangs; one width for every cluster)",
        flat="observe_cluster_summary",
        details="With it (and the pointer policy's slots) no part of the observation's "
        "shape depends on the cluster, so one model file plays on any cluster.",
    ),
    # ---------------------------------------------------------------- reward
    *(
        Setting(
            f"reward.{name}",
            1.0 if name in ("jct", "invalid") else 0.0,
            Real(-MAX_REWARD_WEIGHT, MAX_REWARD_WEIGHT),
            f"weight of the {name} reward term",
            flat="reward",
        )
        for name in REWARD_COMPONENTS
    ),
    Setting(
        "reward.time_scale_s",
        3600.0,
        Real(MIN_TIME_SCALE_S),
        "T: the time unit of the rewards",
        flat="time_scale_s",
        unit=_SECONDS,
    ),
    Setting(
        "reward.invalid_penalty",
        0.1,
        Real(0.0, MAX_REWARD_WEIGHT),
        "size of the invalid term: the penalty of an invalid (no-op) action",
        flat="invalid_penalty",
    ),
    # ---------------------------------------------------------------- limits
    Setting(
        "limits.max_decisions",
        None,
        Int(1, MAX_DECISIONS, optional=True),
        "truncate after this many decisions (None: 50 per job + 1000)",
        flat="max_decisions",
    ),
    Setting(
        "limits.max_time_s",
        None,
        Real(0.0, low_open=True, finite=False, optional=True),
        "truncate when simulated time reaches this (None: no limit)",
        flat="max_time_s",
        unit=_SECONDS,
    ),
    Setting(
        "limits.max_suspends_per_job",
        3,
        Int(0, _MAX_C_INT, optional=True),
        "a job suspended this many times may not be suspended again (None: no cap)",
        flat="max_suspends_per_job",
        details="Default 3, the thesis heuristic's own cap (sampling, a preemption, one "
        "more); with it every episode takes at most ``4 + 4 x 3`` valid decisions per job "
        "(docs/model.md, *Suspension rules*). A simulator rule: it binds every policy "
        "alike (the mask for agents, ``SimView.can_suspend`` for heuristics).",
        sim=True,
    ),
    Setting(
        "limits.min_service_s",
        0.0,
        Real(0.0, MAX_DURATION_S),
        "a resumed job computes this long before it may be suspended again (0: no quantum)",
        flat="min_service_s",
        unit=_SECONDS,
        details="A quantum, as Gandiva's time slices. A simulator rule, as "
        "``max_suspends_per_job``.",
        sim=True,
    ),
    # ---------------------------------------------------------------- simulator
    Setting(
        "simulator.duration_info",
        "sampled",
        Choice(DURATION_INFO),
        "what schedulers see of job lengths: none, sampled (after sample_iterations, with "
        "noise) or oracle (true lengths from arrival)",
        flat="duration_info",
        sim=True,
    ),
    Setting(
        "simulator.sample_iterations",
        20,
        Int(0, _MAX_C_INT),
        "iterations a job runs before its step time is measured",
        flat="sample_iterations",
        sim=True,
    ),
    Setting(
        "simulator.sample_noise",
        0.05,
        Real(0.0, 1.0, high_open=True),
        "relative std-dev of that measurement (eps ~ N(0, noise))",
        flat="sample_noise",
        sim=True,
        convert=_noise,
    ),
    Setting(
        "simulator.suspend_overhead_s",
        None,
        Real(0.0, MAX_DURATION_S, optional=True),
        "checkpoint time of every suspension (None: each model's own, 2-5 s)",
        flat="suspend_overhead_s",
        unit=_SECONDS,
        details="Model times: ``gpushare_env.sim.catalog``.",
        sim=True,
    ),
    Setting(
        "simulator.resume_overhead_s",
        None,
        Real(0.0, MAX_DURATION_S, optional=True),
        "restart time of every resume or migration (None: each model's own, 5-50 s)",
        flat="resume_overhead_s",
        unit=_SECONDS,
        sim=True,
    ),
    Setting(
        "simulator.mig_operation_s",
        0.15,
        Real(0.0, 3600.0),
        "under sharing = mig: time of one MIG instance create or destroy; a re-partition "
        "readies its new instances after all its operations (0.1-0.2 s each, as measured "
        "on an A30)",
        flat="mig_operation_s",
        unit=_SECONDS,
        details="``gpushare_env.sim.mig.DEFAULT_SECONDS_PER_OPERATION``; a job that takes "
        "an instance before it is ready starts (or restarts) when it is. MISO's artifact "
        "charges none (its preset sets 0).",
        sim=True,
    ),
    Setting(
        "simulator.interference",
        "analytic",
        Choice(INTERFERENCE_MODELS),
        "the sharing model: analytic, measured (Gavel's measured pairs, a proxy job type "
        "for every catalog model) or measured_exact (same-architecture matches only)",
        flat="interference",
        details="The model a ``Simulator`` given no ``InterferenceModel`` uses; "
        "docs/model.md, *Measured interference*; ``gpushare_env.sim.interference``.",
        sim=True,
    ),
    Setting(
        "simulator.sharing",
        "memory",
        Choice(SHARING_MODELS),
        "what limits jobs on one GPU: memory (GPU memory a hard limit, compute contended), "
        "shares (each job's requested share of a GPU, its node's CPU and host memory and "
        "its allowed GPU models hard limits) or mig (each worker one MIG instance of a "
        "profile it fits, at its speed there; A100 clusters such as mig_medium)",
        flat="sharing",
        details="docs/model.md, *Two sharing models*, and docs/mig.md; a job's "
        "``JobSpec.request`` holds what it asks under ``shares``. The env takes its "
        "workload's model when none is chosen (an openb pod list: ``shares``, "
        "``WorkloadConfig.sharing``) and refuses a chosen one that contradicts it.",
        sim=True,
    ),
    Setting(
        "simulator.target_workload",
        TARGET_WORKLOADS[0],
        Choice(TARGET_WORKLOADS),
        "the target workload of share_fgd's fragmentation (under sharing = shares), from the "
        "episode's request kinds: popular (the paper's: the most frequent kinds covering 95% "
        "of the tasks), popular_multi_gpu (those and every multi-GPU kind) or gpu_demand "
        "(the kinds covering 95% of the GPU requested)",
        flat="target_workload",
        details="``gpushare_env.sim.target_workload``; on Alibaba's pod list ``popular`` "
        "keeps no multi-GPU kind, so FGD sees no cost in breaking up an 8-GPU node "
        "(docs/results.md, *FGD's rules over time*).",
        sim=True,
    ),
    Setting(
        "simulator.cross_node_factor",
        None,
        Real(0.0, 1.0, low_open=True, optional=True),
        "speed factor of a gang spread over several nodes (None: each model's own)",
        sim=True,
        env=False,
    ),
    Setting(
        "simulator.record_timeline",
        True,
        Flag(),
        "keep the per-change cluster timeline (needed for utilisation)",
        sim=True,
        env=False,
    ),
    # ---------------------------------------------------------------- how the env acts
    Setting(
        "invalid_action",
        "noop",
        Choice(INVALID_ACTION_MODES),
        "an unmasked invalid action: noop (changes nothing, scores -reward.invalid_penalty) "
        "or raise (InvalidActionError)",
        flat="invalid_action",
    ),
    Setting(
        "auto_advance",
        True,
        Flag(),
        "skip states where advance is the only valid action (SMDP decision points; False: "
        "ask at every state)",
        flat="auto_advance",
    ),
    Setting(
        "on_unfit",
        "reject",
        Choice(ON_UNFIT),
        "jobs that can never fit the cluster: reject (dropped, counted in "
        "info['rejected_jobs']) or error",
        flat="on_unfit",
    ),
    Setting(
        "strategies",
        STRATEGIES,
        Names(ALL_STRATEGIES),
        "the placement strategies of the schedule actions, in their order (S per pending "
        "slot); the share_* rules (FGD's six) need simulator.sharing = shares",
        flat="strategies",
        details="``gpushare_env.sim.placement``; ``baselines.make`` refuses a policy needing "
        "a strategy the env does not expose (``Policy.needs_strategies``), in the env and "
        "headless alike, and restricts one that picks among strategies to these.",
        convert=tuple,
    ),
)


def index_settings(declared: tuple[Setting, ...]) -> dict[str, Setting]:
    """The settings by path, each declared once.

    Raises:
        ValueError: A path declared twice, a setting the env exposes without a flat key,
            or a flat key given to several settings unless it is the name of the group
            they all sit in (``reward``, the weights), or naming a group otherwise.
    """
    by_path: dict[str, Setting] = {}
    for entry in declared:
        if entry.path in by_path:
            raise ValueError(f"setting {entry.path!r} is declared twice")
        by_path[entry.path] = entry
        if entry.env and entry.flat is None:
            raise ValueError(f"setting {entry.path!r}: the env exposes it without a flat key")
    groups = {entry.group for entry in declared if entry.group}
    for key in {entry.flat for entry in declared if entry.flat is not None}:
        holders = [entry for entry in declared if entry.flat == key]
        group_key = all(entry.group == key for entry in holders)
        if (len(holders) > 1 or key in groups) and not group_key:
            raise ValueError(
                f"flat key {key!r} is given to {[entry.path for entry in holders]}: a key "
                "several settings share must be the name of the group they sit in"
            )
    return by_path


#: Every setting by its path, in declaration order (read-only).
SETTINGS: MappingProxyType[str, Setting] = MappingProxyType(index_settings(_DECLARED))


def setting(path: str) -> Setting:
    """The setting at ``path`` (``"windows.pending"``).

    Raises:
        KeyError: No such setting (the paths are listed).
    """
    try:
        return SETTINGS[path]
    except KeyError:
        raise KeyError(f"no setting {path!r}; declared: {list(SETTINGS)}") from None


def declared(path: str, **field_options: Any) -> Any:
    """The dataclass field of the setting at ``path``: its default (``default=`` overrides
    it, for a config whose own default differs, as the training's cluster), and the setting
    in the field's ``metadata``; other ``field_options`` go to ``dataclasses.field``."""
    return declared_field(setting(path), **field_options)


def env_settings() -> tuple[Setting, ...]:
    """The settings ``EnvConfig`` exposes, in its order."""
    return tuple(entry for entry in SETTINGS.values() if entry.env)


def sim_settings() -> tuple[Setting, ...]:
    """The settings ``SimConfig`` has, in declaration order."""
    return tuple(entry for entry in SETTINGS.values() if entry.sim)


def _flat_keys() -> dict[str, str]:
    """Every flat key -> the path it sets, in declaration order: a setting's own key ->
    its path; a key several settings of a group share -> the group (a dict of them by
    name: ``reward``)."""
    out: dict[str, str] = {}
    for entry in env_settings():
        assert entry.flat is not None  # index_settings refuses an env setting without one
        shared = sum(1 for other in SETTINGS.values() if other.flat == entry.flat)
        out.setdefault(entry.flat, entry.path if shared == 1 else entry.group)
    return out


#: Every key of the env's flat form (one short key per setting) -> the setting's path in
#: the nested form; ``reward`` (the weights by component name) -> the reward group.
FLAT_KEYS: MappingProxyType[str, str] = MappingProxyType(_flat_keys())
