"""Speed of ``GPUShare-v0`` under a random masked policy (``gpushare-bench --env``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpushare_env.envs.config import ObservationConfig
from gpushare_env.envs.gpushare_env import GPUShareEnv

__all__ = ["OBSERVE_OPTIONS", "env_benchmark"]

#: What ``observe`` may name: each turns on ``EnvConfig.observation.<name>``.
OBSERVE_OPTIONS: tuple[str, ...] = ObservationConfig.keys()


def env_benchmark(
    cluster: str,
    num_jobs: int,
    steps: int,
    seed: int,
    workload: str = "philly",
    pending_window: int = 16,
    running_window: int = 16,
    observe: Sequence[str] = (),
) -> dict[str, Any]:
    """Step the env ``steps`` times with a uniformly random valid action.

    Counts everything an agent loop pays per step: the action, the simulator, the
    observation, the mask and the info dict (resets included; the policy's own draw is a
    table lookup). The env is used unwrapped, as vectorised trainers see it.

    Args:
        cluster: Cluster preset.
        num_jobs: Jobs per episode.
        steps: Env steps to take.
        seed: Seed of the first reset (later resets continue its generator) and the policy.
        workload: Workload preset (default ``philly``: Philly-style jobs at load 0.8).
        pending_window: ``W``.
        running_window: ``R``.
        observe: Optional observation columns to turn on, among ``OBSERVE_OPTIONS``
            (``"rivals"``: ``observation.rivals=True``).

    Returns:
        ``steps, episodes, wall_s, steps_per_s`` (keys other tools parse) and details,
        among them ``cpu_s`` and ``steps_per_cpu_s`` (process CPU time, which other
        processes competing for the core do not inflate).

    Raises:
        ValueError: ``observe`` names an unknown option.
    """
    unknown = sorted(set(observe) - set(OBSERVE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown observe option(s) {unknown}; allowed: {list(OBSERVE_OPTIONS)}")
    env = GPUShareEnv(
        {
            "cluster": cluster,
            "workload": workload,
            "num_jobs": num_jobs,
            "windows": {"pending": pending_window, "running": running_window},
            "observation": dict.fromkeys(observe, True),
        }
    )
    uniform = np.random.default_rng(seed).random(steps).tolist()
    start = time.perf_counter()
    cpu_start = time.process_time()
    _, info = env.reset(seed=seed)
    mask = info["action_mask"]
    episodes = 0
    finished = 0
    reset_s = 0.0
    events = 0
    for u in uniform:
        valid = mask.nonzero()[0]
        _, _, terminated, truncated, info = env.step(int(valid[int(u * len(valid))]))
        mask = info["action_mask"]
        if terminated or truncated:
            episodes += 1
            finished += int(terminated)
            events += env.events_processed
            t = time.perf_counter()
            _, info = env.reset()
            reset_s += time.perf_counter() - t
            mask = info["action_mask"]
    wall_s = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    events += env.events_processed
    return {
        "mode": "env",
        "cluster": cluster,
        "workload": workload,
        "observe": [name for name in OBSERVE_OPTIONS if name in observe],
        "jobs": num_jobs,
        "seed": seed,
        "policy": "random_masked",
        "steps": steps,
        "episodes": episodes,
        "episodes_terminated": finished,
        "events": events,
        "reset_s": round(reset_s, 3),
        "wall_s": round(wall_s, 6),
        "steps_per_s": round(steps / wall_s, 1),
        # CPU time of this process: the figure to quote on a shared, loaded machine
        "cpu_s": round(cpu_s, 6),
        "steps_per_cpu_s": round(steps / cpu_s, 1),
    }
