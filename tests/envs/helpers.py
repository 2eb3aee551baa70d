"""Shared helpers of the env tests: hand-made jobs and a random masked rollout."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpushare_env.envs import GPUShareEnv
from gpushare_env.sim import JobSpec


def job(
    job_id: int,
    arrival_s: float,
    iterations: int,
    num_gpus: int = 1,
    memory_gib: float = 8.0,
    intensity: float = 1.0,
    iter_time_s: float = 1.0,
    model: str = "resnet50",
) -> JobSpec:
    """A job whose solo duration is ``iterations * iter_time_s`` on one GPU."""
    return JobSpec(
        job_id=job_id,
        arrival_s=arrival_s,
        model=model,
        batch_size=64,
        num_gpus=num_gpus,
        iterations=iterations,
        memory_gib=memory_gib,
        intensity=intensity,
        iter_time_s=iter_time_s,
    )


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
