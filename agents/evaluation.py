"""Play learned agents and heuristics on seeded episodes, the same way ``gpushare-evaluate`` does.

Both go through the one episode loop, :func:`gpushare_env.rollout.rollout`: a learned
agent acts with ``deterministic=True`` and, for MaskablePPO, the env's action mask; a
heuristic is seeded by the episode seed (:func:`gpushare_env.seeding.policy_seed`). Env
and policy are then deterministic, so one (agent, config, seed) always gives the same
metrics (the shipped model's test relies on it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agents.envs import make_env
from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed

__all__ = ["METRIC_KEYS", "mean_ci95", "run_episode", "run_episodes"]

#: Metrics recorded by evaluations and the TensorBoard callbacks.
METRIC_KEYS: tuple[str, ...] = ("mean_jct_s", "makespan_s", "gpu_util", "suspends")

# two-sided 97.5% Student t quantiles by degrees of freedom (1-30); normal beyond
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of its 95% Student-t confidence interval (0 for one value)."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return math.nan, math.nan
    if data.size == 1:
        return float(data[0]), 0.0
    dof = data.size - 1
    quantile = _T975[dof - 1] if dof <= len(_T975) else 1.96
    return float(data.mean()), float(quantile * data.std(ddof=1) / math.sqrt(data.size))


def run_episode(policy: Any, env_config: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Play one episode of ``env_config`` with ``reset(seed=seed)``; its final metrics.

    Args:
        policy: An SB3 model, or a heuristic name ``baselines.make`` takes
            (``available()`` or ``variants()``, with parameters or not; built on the
            episode's env, seeded with the episode seed).
        env_config: ``GPUShare-v0`` config (agents and heuristics alike: one set of
            suspension rules for all).
        seed: The episode seed.

    Returns:
        ``info["metrics"]`` plus ``decisions``, ``invalid`` and ``truncated``.
    """
    env = make_env(env_config)
    if isinstance(policy, str):
        import baselines

        policy = baselines.make(policy, env, seed=policy_seed(seed))
    episode = rollout(policy, env, seed=seed)
    env.close()
    metrics = {
        k: float(v)
        for k, v in episode.metrics.items()
        if isinstance(v, (int, float, np.integer, np.floating))
    }
    metrics.update(
        decisions=episode.steps, invalid=episode.invalid_actions, truncated=float(episode.truncated)
    )
    return metrics


def run_episodes(
    policy: Any, env_configs: Sequence[Mapping[str, Any]], seeds: Sequence[int]
) -> list[dict[str, float]]:
    """``run_episode`` over every (config, seed), configs outermost."""
    return [run_episode(policy, config, seed) for config in env_configs for seed in seeds]
