"""Frozen, validated configuration of ``GPUShare-v0``: ``EnvConfig`` and ``RewardConfig``.

``gym.make("GPUShare-v0", config={...})`` accepts a dict (or an ``EnvConfig``); unknown keys
are rejected with the allowed ones listed, and a bad value names its field and the allowed
range, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpushare_env.sim.cluster import ClusterConfig
from gpushare_env.sim.engine import DURATION_INFO
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import WorkloadConfig

__all__ = ["INVALID_ACTION_MODES", "REWARD_COMPONENTS", "EnvConfig", "RewardConfig"]

#: Named reward components, in the order ``info["reward_terms"]`` lists them.
REWARD_COMPONENTS: tuple[str, ...] = (
    "jct",
    "makespan",
    "utilisation",
    "slowdown",
    "starvation",
    "overhead",
    "invalid",
)

#: What an unmasked invalid action does: a no-op (with ``invalid_penalty``) or an error.
INVALID_ACTION_MODES: tuple[str, ...] = ("noop", "raise")

_MAX_WINDOW = 1024


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unknown_keys_error(owner: str, unknown: Sequence[str], allowed: Sequence[str]) -> ValueError:
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), allowed, n=1)
        if close:
            hints.append(f"{key!r} -> did you mean {close[0]!r}?")
    hint = (" " + " ".join(hints)) if hints else ""
    return ValueError(
        f"{owner}: unknown key(s) {sorted(map(str, unknown))}; allowed: {sorted(allowed)}.{hint}"
    )


@dataclass(frozen=True, slots=True)
class RewardConfig:
    """Weights of the named reward components; the reward is their weighted sum.

    Every component is a raw term in ``info["reward_terms"]`` (see ``GPUShareEnv``'s
    *Rewards* section for the exact definitions); ``T`` below is ``EnvConfig.time_scale_s``.
    The default (only ``jct`` and ``invalid``) optimises mean job completion time.

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
    """

    jct: float = 1.0
    makespan: float = 0.0
    utilisation: float = 0.0
    slowdown: float = 0.0
    starvation: float = 0.0
    overhead: float = 0.0
    invalid: float = 1.0

    def __post_init__(self) -> None:
        for name in REWARD_COMPONENTS:
            value = getattr(self, name)
            if not (_is_number(value) and math.isfinite(value)):
                raise ValueError(f"reward.{name} must be a finite number, got {value!r}")

    @classmethod
    def from_any(cls, spec: RewardConfig | Mapping[str, Any] | None) -> RewardConfig:
        """Build from a dict of weights by component name (missing ones keep defaults)."""
        if spec is None:
            return cls()
        if isinstance(spec, RewardConfig):
            return spec
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"reward must be a dict of weights by component name or a RewardConfig, "
                f"got {type(spec).__name__}"
            )
        unknown = [k for k in spec if k not in REWARD_COMPONENTS]
        if unknown:
            raise _unknown_keys_error("reward", unknown, REWARD_COMPONENTS)
        return cls(**dict(spec))

    def weights(self) -> tuple[float, ...]:
        """The weights in ``REWARD_COMPONENTS`` order."""
        return tuple(float(getattr(self, name)) for name in REWARD_COMPONENTS)

    def as_dict(self) -> dict[str, float]:
        """The weights by component name."""
        return dict(zip(REWARD_COMPONENTS, self.weights(), strict=True))


@dataclass(frozen=True, slots=True)
class EnvConfig:
    """Everything that defines a ``GPUShare-v0`` episode distribution.

    The defaults give a quick episode: the 16-GPU ``thesis`` cluster and the thesis's
    100-job workload (one job a second, Philly-style sizes and lengths of 1 min to 4 h),
    about 300-500 decisions per episode with a random policy.

    Attributes:
        cluster: A preset name of ``gpushare_env.sim.PRESETS`` (``tiny``, ``thesis``,
            ``medium``, ``philly``, ...), a dict for ``ClusterConfig.from_any``, or a
            ``ClusterConfig``.
        workload: A preset of ``gpushare_env.workloads.WORKLOAD_PRESETS`` (``thesis``,
            ``thesis_poisson``, ``philly``, ``philly_parametric``, ``philly_bursty``), a
            dict of ``WorkloadConfig`` fields, or the path of a ``.csv`` / ``.json`` trace.
            A new workload is drawn at every reset from the env's generator; a trace is
            read once and replayed every episode.
        num_jobs: Jobs per episode, >= 1 (``None``: the workload's own count; for a trace,
            every job).
        jobs: A fixed job list replayed every episode (overrides ``workload`` and
            ``num_jobs``); ``reset(options={"jobs": [...]})`` does the same for one episode.
        pending_window: ``W``, waiting jobs the agent can address, in [1, 1024].
        running_window: ``R``, running jobs the agent can suspend, in [1, 1024].
        reward: Weights by component name (a dict or a ``RewardConfig``).
        time_scale_s: ``T``, the time unit of the rewards, > 0.  # [s]
        invalid_action: ``"noop"`` (an unmasked invalid action changes nothing and scores
            ``-invalid_penalty``) or ``"raise"`` (``InvalidActionError``).
        invalid_penalty: Size of the ``invalid`` reward term, >= 0.
        duration_info: What the agent sees of job lengths: ``"none"``, ``"sampled"``
            (after ``sample_iterations``, with noise) or ``"oracle"``.
        sample_iterations: Iterations a job runs before its step time is measured, >= 0.
        sample_noise: Relative std-dev of that measurement, in [0, 1).
        max_decisions: Truncate after this many agent decisions, >= 1 (``None``: 50 per
            job plus 1,000).
        max_time_s: Truncate when simulated time reaches this, > 0 (``None``: no limit).  # [s]
        auto_advance: Skip states where ``advance`` is the only valid action (SMDP
            decision points); ``False`` asks the agent at every state.
        on_unfit: Jobs that can never fit the cluster are dropped (``"reject"``, counted in
            ``info["rejected_jobs"]``) or raise (``"error"``).
        max_suspends_per_job: Mask ``suspend`` for a job once it has been suspended this
            many times, >= 0 (``None``: no cap). A guard for learning agents, which can
            otherwise learn to postpone costs by suspending and resuming jobs forever.
        observe_held_time: Append a ``held_time`` column to ``obs["running"]``: the time
            since the job got its current GPUs (``log_time``), which time-slicing
            schedulers decide by (``False``: the standard 17 columns).
        observe_placement: Append ``pack_load`` and ``spread_load`` to the pending rows
            (the load the GPUs each strategy would pick reach with the job) and
            ``shares_gpu`` to the running rows, what packing schedulers such as Gandiva
            decide by. Experimental: every observation runs two placement searches per
            pending slot (shared among the window's jobs of one shape).
        observe_drain: Append ``drain_share`` to the pending and running rows: ``r / (r +
            D)`` for a job's predicted remaining time ``r`` and the time ``D`` the cluster
            needs for all predicted work at full use, what the thesis's critical-path rule
            decides by (a job is critical when ``r >= f D``). Experimental: an O(jobs in
            system) sum per observation.
        observe_rivals: Append ``rival_wait`` and ``rival_remaining`` to the running rows:
            over the waiting jobs of the whole queue that request as many GPUs as the
            running job, the longest wait and the shortest predicted remaining time, what
            time-slicing schedulers decide by when they swap a running job for a waiting
            one of the same size. Experimental: an O(waiting jobs) pass per observation.
    """

    cluster: str | Mapping[str, Any] | ClusterConfig = "thesis"
    workload: str | os.PathLike[str] | Mapping[str, Any] = "thesis"
    num_jobs: int | None = 100
    jobs: tuple[JobSpec, ...] | None = field(default=None, repr=False)
    pending_window: int = 16
    running_window: int = 16
    reward: RewardConfig = field(default_factory=RewardConfig)
    time_scale_s: float = 3600.0  # [s]
    invalid_action: str = "noop"
    invalid_penalty: float = 0.1
    duration_info: str = "sampled"
    sample_iterations: int = 20
    sample_noise: float = 0.05
    max_decisions: int | None = None
    max_time_s: float | None = None  # [s]
    auto_advance: bool = True
    on_unfit: str = "reject"
    max_suspends_per_job: int | None = None
    observe_held_time: bool = False
    observe_placement: bool = False
    observe_drain: bool = False
    observe_rivals: bool = False

    def __post_init__(self) -> None:
        def bad(name: str, allowed: str) -> ValueError:
            return ValueError(f"EnvConfig.{name} must be {allowed}, got {getattr(self, name)!r}")

        # normalise the composite fields first (frozen: via object.__setattr__)
        object.__setattr__(self, "reward", RewardConfig.from_any(self.reward))
        try:
            ClusterConfig.from_any(self.cluster)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.{error}") from error
        if self.jobs is not None:
            jobs = tuple(self.jobs)
            if not jobs or not all(isinstance(j, JobSpec) for j in jobs):
                raise bad("jobs", "None or a non-empty sequence of JobSpec")
            object.__setattr__(self, "jobs", jobs)
        if not isinstance(self.workload, (str, os.PathLike, Mapping)):
            raise bad("workload", "a preset name, a dict or a trace path")
        try:
            WorkloadConfig.from_any(self.workload)
        except (TypeError, ValueError) as error:
            raise ValueError(f"EnvConfig.workload: {error}") from error
        if self.num_jobs is not None and not (_is_int(self.num_jobs) and self.num_jobs >= 1):
            raise bad("num_jobs", "None or an int >= 1")
        for name in ("pending_window", "running_window"):
            value = getattr(self, name)
            if not (_is_int(value) and 1 <= value <= _MAX_WINDOW):
                raise bad(name, f"an int in [1, {_MAX_WINDOW}]")
        if not (
            _is_number(self.time_scale_s)
            and math.isfinite(self.time_scale_s)
            and self.time_scale_s > 0
        ):
            raise bad("time_scale_s", "a finite number > 0")
        if self.invalid_action not in INVALID_ACTION_MODES:
            raise bad("invalid_action", f"one of {list(INVALID_ACTION_MODES)}")
        if not (
            _is_number(self.invalid_penalty)
            and math.isfinite(self.invalid_penalty)
            and self.invalid_penalty >= 0
        ):
            raise bad("invalid_penalty", "a finite number >= 0")
        if self.duration_info not in DURATION_INFO:
            raise bad("duration_info", f"one of {list(DURATION_INFO)}")
        if not (_is_int(self.sample_iterations) and self.sample_iterations >= 0):
            raise bad("sample_iterations", "an int >= 0")
        if not (_is_number(self.sample_noise) and 0 <= self.sample_noise < 1):
            raise bad("sample_noise", "a number in [0, 1)")
        if self.max_decisions is not None and not (
            _is_int(self.max_decisions) and self.max_decisions >= 1
        ):
            raise bad("max_decisions", "None or an int >= 1")
        if self.max_time_s is not None and not (
            _is_number(self.max_time_s) and self.max_time_s > 0
        ):
            raise bad("max_time_s", "None or a number > 0")
        for name in (
            "auto_advance",
            "observe_held_time",
            "observe_placement",
            "observe_drain",
            "observe_rivals",
        ):
            if not isinstance(getattr(self, name), bool):
                raise bad(name, "True or False")
        cap = self.max_suspends_per_job
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise bad("max_suspends_per_job", "None or an integer >= 0")
        if self.on_unfit not in ("reject", "error"):
            raise bad("on_unfit", "one of ['reject', 'error']")

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The accepted configuration keys."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_any(
        cls, spec: EnvConfig | Mapping[str, Any] | None = None, **overrides: Any
    ) -> EnvConfig:
        """Build from ``None`` (defaults), a dict, or an ``EnvConfig``, then apply ``overrides``.

        Raises:
            ValueError: an unknown key (the allowed ones are listed) or a bad value (the
                field and the allowed range are named).
            TypeError: ``spec`` is neither a dict nor an ``EnvConfig``.
        """
        if spec is None:
            values: dict[str, Any] = {}
        elif isinstance(spec, EnvConfig):
            values = {f.name: getattr(spec, f.name) for f in dataclasses.fields(cls)}
        elif isinstance(spec, Mapping):
            values = dict(spec)
        else:
            raise TypeError(f"config must be a dict or an EnvConfig, got {type(spec).__name__}")
        values.update(overrides)
        allowed = cls.keys()
        if "engine" in values:
            raise ValueError(
                "GPUShare-v0 config: the 'engine' key was removed: every episode runs on the "
                "simulator's one compiled engine (drop the key)"
            )
        unknown = [k for k in values if k not in allowed]
        if unknown:
            raise _unknown_keys_error("GPUShare-v0 config", unknown, allowed)
        return cls(**values)

    def decision_cap(self, num_jobs: int) -> int:
        """Decisions after which an episode of ``num_jobs`` jobs is truncated."""
        if self.max_decisions is not None:
            return self.max_decisions
        return 50 * num_jobs + 1000
