"""The ``jct`` reward relative to a reference heuristic on the same episode.

On ``GPUShare-v0`` most of the variance of a return comes from the episode's input, the
job arrivals, not from the agent: a burst of arrivals costs every scheduler. Mao et al.
("Variance Reduction for Reinforcement Learning in Input-Driven Environments", ICLR
2019) remove it with baselines that depend on the input sequence. The cheapest form of
that idea here is a control variate inside the reward: the ``jct`` term is
``-(jobs in system) x elapsed / T``, and ``RelativeReward`` adds back
``+(jobs in system under the reference) x elapsed / T`` over the same simulated
interval, where the reference is a heuristic played once on the same seed. What is
left is "how many more jobs than the reference hold the system now", which arrivals
move much less. The ``makespan`` term (``-elapsed / T`` while jobs remain) is treated
the same way, with the reference's span from the first arrival to its last finish.

The added terms depend only on simulated time and the seed, and when the episode ends
the rest of the reference's integral is added at once, so an episode's added total is
the same constant whatever the agent does: the optimal policies do not change (only the
discounting of the added terms differs, by when the agent's decisions fall).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed

__all__ = ["JobsInSystem", "MeanProfile", "Plays", "RelativeReward", "reference_profile"]


class JobsInSystem:
    """The number of jobs in the system over time, and its integral.

    Args:
        arrivals_s: Each job's arrival.  # (J,) [s]
        finishes_s: Each job's finish.  # (J,) [s]
    """

    def __init__(self, arrivals_s: np.ndarray, finishes_s: np.ndarray) -> None:
        arrivals = np.asarray(arrivals_s, dtype=float)
        finishes = np.asarray(finishes_s, dtype=float)
        if arrivals.size == 0 or arrivals.shape != finishes.shape:
            raise ValueError("JobsInSystem: give one arrival and one finish per job, >= 1 job")
        if np.any(finishes < arrivals):
            raise ValueError("JobsInSystem: every job needs an arrival before its finish")
        times = np.concatenate([arrivals, finishes])
        steps = np.concatenate([np.ones_like(arrivals), -np.ones_like(finishes)])
        order = np.argsort(times, kind="stable")
        self.times_s = times[order]  # [s] breakpoints
        self.counts = np.cumsum(steps[order])  # jobs in system just after each breakpoint
        # integral from 0 to each breakpoint: the count before it x the interval before it
        widths = np.diff(self.times_s, prepend=self.times_s[0])
        before = np.concatenate([[0.0], self.counts[:-1]])
        self._cumulative = np.cumsum(before * widths)  # [job-s]
        self.total = float(self._cumulative[-1])  # [job-s] the sum of the JCTs
        self.start_s = float(self.times_s[0])  # [s] first arrival
        self.end_s = float(self.times_s[-1])  # [s] last finish

    def integral(self, t_s: float) -> float:
        """``integral from 0 to t_s`` of the jobs in the system.  [job-s]"""
        k = int(np.searchsorted(self.times_s, t_s, side="right")) - 1
        if k < 0:
            return 0.0
        return float(self._cumulative[k] + self.counts[k] * (t_s - self.times_s[k]))

    def busy(self, t_s: float) -> float:
        """Time from the first arrival to ``t_s`` while jobs remain (the makespan so far).  [s]"""
        return min(max(t_s, self.start_s), self.end_s) - self.start_s

    @classmethod
    def of_records(cls, records: Sequence[Any]) -> JobsInSystem:
        """From a finished episode's job records (``Simulator.records()``)."""
        return cls(
            np.array([r.arrival_s for r in records]), np.array([r.finish_s for r in records])
        )


class MeanProfile:
    """The mean of several :class:`JobsInSystem` (several plays of one episode).

    Args:
        profiles: At least one profile.
    """

    def __init__(self, profiles: Sequence[JobsInSystem]) -> None:
        if not profiles:
            raise ValueError("MeanProfile: give at least one profile")
        self.profiles = tuple(profiles)
        self.total = sum(p.total for p in self.profiles) / len(self.profiles)  # [job-s]
        self.end_s = max(p.end_s for p in self.profiles)  # [s] the last play's last finish

    def integral(self, t_s: float) -> float:
        """The mean of the plays' ``integral(t_s)``.  [job-s]"""
        return sum(p.integral(t_s) for p in self.profiles) / len(self.profiles)

    def busy(self, t_s: float) -> float:
        """The mean of the plays' ``busy(t_s)``.  [s]"""
        return sum(p.busy(t_s) for p in self.profiles) / len(self.profiles)


class Plays:
    """The agent's own finished episodes, per seed: the last ``keep`` of each.

    One store serves the envs that share it (those of one process: ``InProcessVecEnv``
    shares one across all its envs; under ``SubprocVecEnv`` each worker keeps its own).

    Args:
        keep: Plays of a seed kept and averaged, >= 1.
    """

    def __init__(self, keep: int) -> None:
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"Plays: keep must be an int >= 1, got {keep!r}")
        self.keep = keep
        self._plays: dict[tuple[int, int | None], deque[JobsInSystem]] = {}

    def add(self, seed: int, profile: JobsInSystem, num_jobs: int | None = None) -> None:
        """Keep ``profile`` as the latest play of ``seed`` (of a ``num_jobs`` episode:
        ``reset(options={"num_jobs": n})``; ``None``: the env's own)."""
        key = (int(seed), num_jobs)
        self._plays.setdefault(key, deque(maxlen=self.keep)).append(profile)

    def reference(self, seed: int, num_jobs: int | None = None) -> MeanProfile | None:
        """The mean of the kept plays of ``seed``; ``None`` if none finished yet."""
        plays = self._plays.get((int(seed), num_jobs))
        return MeanProfile(list(plays)) if plays else None

    def __len__(self) -> int:
        return sum(len(p) for p in self._plays.values())


@lru_cache(maxsize=4096)
def _profile(config_json: str, seed: int, heuristic: str) -> JobsInSystem:
    import baselines
    from agents.envs import make_env

    env = make_env(json.loads(config_json))  # the agent's rules bind the reference too
    episode = rollout(baselines.make(heuristic, env, seed=policy_seed(seed)), env, seed=seed)
    if episode.truncated:
        raise RuntimeError(
            f"reward reference {heuristic!r} was truncated on seed {seed}: raise the env's "
            "max_decisions / max_time_s"
        )
    records = env.unwrapped.simulator.records()  # type: ignore[attr-defined]
    env.close()
    return JobsInSystem.of_records(records)


def reference_profile(env_config: Mapping[str, Any], seed: int, heuristic: str) -> JobsInSystem:
    """Jobs in the system when ``heuristic`` plays ``reset(seed=seed)`` of ``env_config``.

    Computed once per (config, seed, heuristic) and process (cached).
    """
    return _profile(json.dumps(dict(env_config), sort_keys=True), int(seed), heuristic)


class RelativeReward(gym.Wrapper[Any, Any, Any, Any]):
    """Add the reference's ``jct`` and ``makespan`` terms back: the reward becomes relative.

    Each step adds ``(w_jct x the integral of the reference's jobs in system + w_makespan
    x the time the reference still had jobs) / T`` over the step's simulated interval;
    the last step adds the rest of both. ``info["reward_terms"]`` is left as the env
    computed it.

    Args:
        env: A ``GPUShare-v0`` env; reset it with an explicit seed.
        env_config: Its config (the reference plays the same episodes).
        heuristic: Reference policy, a name ``baselines.make`` takes (``available()``,
            ``variants()``, with parameters or not).
        plays: The agent's own plays (:class:`Plays`): a seed it has finished before is
            measured against them instead of the heuristic, and every episode that
            terminates is added. ``None``: always the heuristic.
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        env_config: Mapping[str, Any],
        heuristic: str,
        plays: Plays | None = None,
    ) -> None:
        super().__init__(env)
        config = env.unwrapped.config  # type: ignore[attr-defined]
        self.env_config = dict(env_config)
        self.heuristic = heuristic
        self._jct = float(config.reward.jct) / float(config.reward.time_scale_s)
        self._makespan = float(config.reward.makespan) / float(config.reward.time_scale_s)
        self.plays = plays
        self._profile: JobsInSystem | MeanProfile | None = None
        self._seed = 0
        self._jobs: int | None = None
        self._time_s = 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset; ``seed`` is required (the reference must play the same episode)."""
        if seed is None:
            raise ValueError("RelativeReward: reset needs the episode seed")
        obs, info = self.env.reset(seed=seed, options=options)
        jobs = (options or {}).get("num_jobs")  # a curriculum's short episode
        config = self.env_config if jobs is None else {**self.env_config, "num_jobs": jobs}
        own = self.plays.reference(seed, jobs) if self.plays is not None else None
        self._profile = own or reference_profile(config, seed, self.heuristic)
        self._seed, self._jobs = int(seed), jobs
        self._time_s = float(info["time_s"])
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step, adding the reference's share of the ``jct`` term."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        profile = self._profile
        if profile is None:
            raise RuntimeError("RelativeReward: call reset() first")
        now = float(info["time_s"])
        then = self._time_s
        jobs = (profile.total if terminated else profile.integral(now)) - profile.integral(then)
        last = max(profile.end_s if terminated else now, then)
        span = profile.busy(last) - profile.busy(then)
        bonus = self._jct * jobs + self._makespan * span
        self._time_s = now
        if terminated and self.plays is not None:
            records = self.env.unwrapped.simulator.records()  # type: ignore[attr-defined]
            self.plays.add(self._seed, JobsInSystem.of_records(records), self._jobs)
        return obs, float(reward) + bonus, terminated, truncated, info
