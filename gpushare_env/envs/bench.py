"""Speed of ``GPUShare-v0`` under a random masked policy (``gpushare-bench --env``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpushare_env.envs.config import ObservationConfig
from gpushare_env.envs.gpushare_env import GPUShareEnv
from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed

__all__ = ["OBSERVE_OPTIONS", "env_benchmark"]

#: What ``observe`` may name: each turns on ``EnvConfig.observation.<name>``.
OBSERVE_OPTIONS: tuple[str, ...] = ObservationConfig.keys()


class _UniformValid:
    """A uniformly random valid action, read off a table of uniforms drawn beforehand
    (so the policy's own cost is a lookup, not a generator call)."""

    def __init__(self, uniforms: list[float]) -> None:
        self._uniforms = iter(uniforms)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[int, Any]:
        """The valid action at the next uniform's quantile of ``action_masks``."""
        assert action_masks is not None
        valid = action_masks.nonzero()[0]
        return int(valid[int(next(self._uniforms) * len(valid))]), state


def env_benchmark(
    cluster: str,
    num_jobs: int,
    steps: int,
    seed: int,
    workload: str = "philly",
    pending_window: int = 16,
    running_window: int = 16,
    observe: Sequence[str] = (),
    interference: str = "analytic",
) -> dict[str, Any]:
    """Step the env ``steps`` times with a uniformly random valid action.

    Counts everything an agent loop pays per step: the action, the simulator, the
    observation, the mask and the info dict, in the one episode loop
    (:func:`~gpushare_env.rollout.rollout`), resets included (the policy's own draw is a
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
        interference: The env's ``simulator.interference``.

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
            "simulator": {"interference": interference},
        }
    )
    policy = _UniformValid(np.random.default_rng(policy_seed(seed)).random(steps).tolist())
    start = time.perf_counter()
    cpu_start = time.process_time()
    episodes = finished = events = taken = 0
    episode_seed: int | None = seed
    while taken < steps:
        episode = rollout(policy, env, seed=episode_seed, max_steps=steps - taken)
        episode_seed = None  # later episodes continue the generator
        taken += episode.steps
        events += env.events_processed
        if episode.done:
            episodes += 1
            finished += int(episode.terminated)
    wall_s = time.perf_counter() - start
    cpu_s = time.process_time() - cpu_start
    return {
        "mode": "env",
        "cluster": cluster,
        "workload": workload,
        "observe": [name for name in OBSERVE_OPTIONS if name in observe],
        "interference": interference,
        "jobs": num_jobs,
        "seed": seed,
        "policy": "random_masked",
        "steps": steps,
        "episodes": episodes,
        "episodes_terminated": finished,
        "events": events,
        "wall_s": round(wall_s, 6),
        "steps_per_s": round(steps / wall_s, 1),
        # CPU time of this process: the figure to quote on a shared, loaded machine
        "cpu_s": round(cpu_s, 6),
        "steps_per_cpu_s": round(steps / cpu_s, 1),
    }
