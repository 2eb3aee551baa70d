"""Speed of ``GPUShare-v0`` under a random masked policy (``gpushare-bench --env``), and
the cost of a fork beside it (``gpushare-bench --fork``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpushare_env.envs.config import ObservationConfig
from gpushare_env.envs.gpushare_env import GPUShareEnv
from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed

__all__ = ["OBSERVE_OPTIONS", "env_benchmark", "fork_benchmark"]

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
    env = _bench_env(
        cluster, num_jobs, workload, pending_window, running_window, observe, interference
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
        **_run_fields(
            "env",
            cluster,
            workload,
            observe,
            interference,
            num_jobs,
            seed,
            steps,
            episodes,
            finished,
        ),
        "events": events,
        "wall_s": round(wall_s, 6),
        "steps_per_s": round(steps / wall_s, 1),
        # CPU time of this process: the figure to quote on a shared, loaded machine
        "cpu_s": round(cpu_s, 6),
        "steps_per_cpu_s": round(steps / cpu_s, 1),
    }


def _bench_env(
    cluster: str,
    num_jobs: int,
    workload: str,
    pending_window: int,
    running_window: int,
    observe: Sequence[str],
    interference: str,
) -> GPUShareEnv:
    """The env the benchmarks step (``env_benchmark``'s arguments).

    Raises:
        ValueError: ``observe`` names an unknown option.
    """
    unknown = sorted(set(observe) - set(OBSERVE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown observe option(s) {unknown}; allowed: {list(OBSERVE_OPTIONS)}")
    return GPUShareEnv(
        {
            "cluster": cluster,
            "workload": workload,
            "num_jobs": num_jobs,
            "windows": {"pending": pending_window, "running": running_window},
            "observation": dict.fromkeys(observe, True),
            "simulator": {"interference": interference},
        }
    )


def _run_fields(
    mode: str,
    cluster: str,
    workload: str,
    observe: Sequence[str],
    interference: str,
    num_jobs: int,
    seed: int,
    steps: int,
    episodes: int,
    finished: int,
) -> dict[str, Any]:
    """What ``env_benchmark`` and ``fork_benchmark`` report first: the run's set-up."""
    return {
        "mode": mode,
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
    }


def fork_benchmark(
    cluster: str,
    num_jobs: int,
    steps: int,
    seed: int,
    forks: int = 200,
    workload: str = "philly",
    pending_window: int = 16,
    running_window: int = 16,
    observe: Sequence[str] = (),
    interference: str = "analytic",
) -> dict[str, Any]:
    """The cost of a fork beside the cost of an env step, measured side by side.

    Plays ``steps`` env steps with a uniformly random valid action, as
    :func:`env_benchmark` does (same env, same episodes: later resets continue the first
    one's generator), timing each ``env.step`` call alone. At ``3 * forks`` states spread
    evenly through the steps (so through the episodes, early and late) it forks once, in
    turn ``env.fork()`` (the env: its simulator's fork, its generator and episode state),
    ``Simulator.fork()`` and ``Simulator.fork(belief=True)``, and frees the fork outside
    the timing: each fork is the first after env steps, as a planner forking once per
    decision pays it (a second fork at the same state finds the memory the first freed,
    and is cheaper). Every call is timed alone with ``time.perf_counter_ns``, in this
    process, interleaved, so both see the same machine; the figures are medians (a call
    another process pre-empted is an outlier a median ignores).

    Args:
        forks: Forks of each kind (``3 * forks`` at most ``steps``).
        Others: as :func:`env_benchmark`.

    Returns:
        ``fork_us``, ``sim_fork_us``, ``belief_fork_us`` and ``step_us`` (medians of the
        calls, microseconds), ``fork_in_steps`` (``fork_us / step_us``: the issue's
        yardstick, at most 10), the same ratio for the other two forks, ``step_mean_us``
        (the mean step, which steps that run through many events weigh more: the
        ``--env`` mode's ``1 / steps_per_s``) with ``fork_in_mean_steps``, the 90th
        percentile of each fork, and the episode counts.

    Raises:
        ValueError: ``3 * forks`` is not in ``1..steps``; ``observe`` names an unknown
            option.
    """
    if not 1 <= 3 * forks <= steps:
        raise ValueError(f"3 * forks must be in 1..steps ({steps}), got forks={forks}")
    env = _bench_env(
        cluster, num_jobs, workload, pending_window, running_window, observe, interference
    )
    uniforms = np.random.default_rng(policy_seed(seed)).random(steps).tolist()
    every = steps // (3 * forks)
    clock = time.perf_counter_ns
    step_ns: list[int] = []
    fork_ns: tuple[list[int], list[int], list[int]] = ([], [], [])  # env, sim, belief
    _, info = env.reset(seed=seed)
    episodes = finished = taken = 0
    start = time.perf_counter()
    for i in range(steps):
        if i % every == every // 2 and taken < 3 * forks:
            kind = taken % 3
            sim = env._sim
            assert sim is not None
            if kind == 0:
                t0 = clock()
                forked: Any = env.fork()
                t1 = clock()
            elif kind == 1:
                t0 = clock()
                forked = sim.fork()
                t1 = clock()
            else:
                t0 = clock()
                forked = sim.fork(belief=True)
                t1 = clock()
            del forked
            fork_ns[kind].append(t1 - t0)
            taken += 1
        valid = info["action_mask"].nonzero()[0]
        action = int(valid[int(uniforms[i] * len(valid))])
        t0 = clock()
        _, _, terminated, truncated, info = env.step(action)
        step_ns.append(clock() - t0)
        if terminated or truncated:
            episodes += 1
            finished += int(terminated)
            _, info = env.reset()
    wall_s = time.perf_counter() - start

    def median_us(values: list[int]) -> float:
        return round(statistics.median(values) / 1000, 2)

    step_us = median_us(step_ns)
    step_mean_us = round(sum(step_ns) / len(step_ns) / 1000, 2)
    fork_us, sim_us, belief_us = (median_us(ns) for ns in fork_ns)
    return {
        **_run_fields(
            "fork",
            cluster,
            workload,
            observe,
            interference,
            num_jobs,
            seed,
            steps,
            episodes,
            finished,
        ),
        "forks": forks,
        "wall_s": round(wall_s, 6),
        "fork_us": fork_us,
        "sim_fork_us": sim_us,
        "belief_fork_us": belief_us,
        "step_us": step_us,
        "fork_in_steps": round(fork_us / step_us, 2),
        "sim_fork_in_steps": round(sim_us / step_us, 2),
        "belief_fork_in_steps": round(belief_us / step_us, 2),
        "step_mean_us": step_mean_us,
        "fork_in_mean_steps": round(fork_us / step_mean_us, 2),
        "p90_us": {
            name: round(_quantile(ns, 0.9) / 1000, 2)
            for name, ns in zip(_FORK_KINDS, (*fork_ns, step_ns), strict=True)
        },
    }


#: The keys of ``fork_benchmark``'s ``p90_us``.
_FORK_KINDS = ("fork", "sim_fork", "belief_fork", "step")


def _quantile(values: list[int], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])
