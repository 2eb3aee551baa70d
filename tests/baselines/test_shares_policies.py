"""Every heuristic through the env under the requested-shares model keeps every limit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import baselines
import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.sim import JobSpec
from gpushare_env.sim.types import Request


def _shares_jobs(seed: int, count: int) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(count):
        gpus = int(rng.choice([1, 1, 1, 2]))
        milli = 1000 if gpus > 1 else int(rng.choice([100, 250, 500, 1000]))
        request = Request(gpu_milli=milli, cpu_milli=int(rng.integers(0, 6000)))
        jobs.append(
            JobSpec(
                i,
                30.0 * i,
                "resnet50",
                64,
                gpus,
                int(rng.integers(200, 3000)),
                8.0,
                1.0,
                0.158,
                request,
            )
        )
    return jobs


@pytest.mark.parametrize("policy", baselines.available())
def test_env_episodes_under_shares_keep_every_limit(policy: str) -> None:
    cluster = {"groups": [{"nodes": 2, "gpus_per_node": 4, "gpu_type": "v100", "cpu_milli": 8000}]}
    config = {"cluster": cluster, "jobs": _shares_jobs(0, 40), "sharing": "shares"}
    env = gym.make("GPUShare-v0", config=config)
    agent = baselines.make(policy, env)
    obs, info = env.reset(seed=0)
    sim = env.unwrapped.simulator
    done = False
    steps = 0
    while not done:
        action, _ = agent.predict(obs)
        assert info["action_mask"][action]
        obs, _, terminated, truncated, info = env.step(action)
        assert not info["invalid"]
        if steps % 7 == 0:
            sim.check_invariants()
        steps += 1
        done = terminated or truncated
    assert terminated and info["metrics"]["num_jobs"] == 40
