"""Validation episodes during training: a model in memory, or a heuristic, on seeded episodes.

The training callbacks (``agents.callbacks``: the periodic validation against ``thesis``
that keeps the best model) and the learning curves' heuristic levels (``agents.curve``)
play here: training sits below the evaluation harness, and validates a model that is
still in memory between updates. Every other evaluation (``gpushare-evaluate``, the zoo
cards) is the harness's (``gpushare_eval``).

Both go through the one episode loop, :func:`gpushare_env.rollout.rollout`, with the
harness's conventions: a learned agent acts with ``deterministic=True`` and, for
MaskablePPO, the env's action mask; a heuristic is seeded by the episode seed
(:func:`gpushare_env.seeding.policy_seed`). Env and policy are then deterministic, so one
(agent, config, seed) always gives the same metrics, here and in the harness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agents.envs import make_env
from agents.inference import for_play
from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed

__all__ = ["METRIC_KEYS", "run_episode", "run_episodes"]

#: Metrics recorded by evaluations and the TensorBoard callbacks.
METRIC_KEYS: tuple[str, ...] = ("mean_jct_s", "makespan_s", "gpu_util", "suspends")


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
    episode = rollout(for_play(policy, env), env, seed=seed)
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
