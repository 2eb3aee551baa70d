"""Shared helpers of the env tests: random masked actions and rollouts."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpushare_env.envs import GPUShareEnv


def random_valid_action(info: dict[str, Any], rng: np.random.Generator) -> int:
    """A uniformly random valid action."""
    valid = np.flatnonzero(info["action_mask"])
    return int(valid[rng.integers(len(valid))])


def rollout(env: GPUShareEnv, seed: int, steps: int, policy_seed: int = 0) -> list[tuple[Any, ...]]:
    """Reset with ``seed`` and take up to ``steps`` random valid actions; the transcript."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed)
    transcript: list[tuple[Any, ...]] = [(obs, info)]
    for _ in range(steps):
        action = random_valid_action(info, rng)
        obs, reward, terminated, truncated, info = env.step(action)
        transcript.append((action, obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return transcript
