"""The thesis experiment: every baseline on the thesis workload, headless, as a table.

The thesis compares its heuristic with sequential scheduling without sharing on 100 jobs
per seed, seeds 0-2, jobs arriving one second apart or by a Poisson process, on a
16-GPU cluster. :func:`run_thesis_experiment` runs that grid for any set of policies and
:func:`markdown_table` prints per policy the mean over seeds of makespan, mean JCT and GPU
utilisation, with the ratios to ``fifo``.

Episodes are drawn as ``GPUShare-v0``'s ``reset(seed=s)`` draws them
(:func:`gpushare_env.envs.episodes.draw_episode`), so a
headless run here and an env episode with the same seed see the same jobs and the same
sampling noise; a seeded policy (``random``) is seeded with the episode seed, as in
``gpushare-evaluate``. In the env, every run is one :func:`gpushare_env.rollout.rollout`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.episodes import draw_episode
from gpushare_env.rollout import rollout
from gpushare_env.runner import run_headless
from gpushare_env.seeding import policy_seed
from gpushare_env.sim import JobSpec, SimConfig, make_cluster

__all__ = [
    "ARRIVAL_MODES",
    "RunRow",
    "episode_jobs",
    "markdown_table",
    "run_in_env",
    "run_thesis_experiment",
    "summarize_rows",
]

#: Arrival modes of the thesis experiment: label -> workload preset.
ARRIVAL_MODES: dict[str, str] = {"interval 1 s": "thesis", "Poisson": "thesis_poisson"}


@dataclass(frozen=True, slots=True)
class RunRow:
    """One headless run of the grid.

    Attributes:
        policy: Policy label.
        arrival: Arrival-mode label (a key of :data:`ARRIVAL_MODES`).
        seed: Episode seed.
        metrics: ``gpushare_env.metrics.summarize`` of the run.
        wall_s: Wall-clock time of the run.  [s]
    """

    policy: str
    arrival: str
    seed: int
    metrics: dict[str, float]
    wall_s: float  # [s]


def episode_jobs(
    preset: str, seed: int, cluster: str = "thesis", num_jobs: int | None = None
) -> tuple[list[JobSpec], np.random.Generator]:
    """The jobs and the noise generator ``GPUShare-v0`` uses for ``reset(seed=seed)``
    (:func:`gpushare_env.envs.episodes.draw_episode`)."""
    config = EnvConfig.from_any({"cluster": cluster, "workload": preset, "num_jobs": num_jobs})
    episode = draw_episode(config, make_cluster(cluster), seed)
    return episode.jobs, episode.noise_rng


def run_thesis_experiment(
    policies: Mapping[str, tuple[str, Mapping[str, Any]]] | Iterable[str],
    seeds: Sequence[int] = (0, 1, 2),
    arrivals: Mapping[str, str] = ARRIVAL_MODES,
    cluster: str = "thesis",
    config: SimConfig | None = None,
) -> list[RunRow]:
    """Run every policy on every (arrival mode, seed) of the thesis experiment.

    Args:
        policies: Policy names, or ``{label: (name, params)}`` for tuned variants.
        seeds: Episode seeds (the thesis used 0, 1, 2).
        arrivals: ``{label: workload preset}``.
        cluster: Cluster preset.
        config: Simulator settings (default ``SimConfig()``, as the env's defaults).

    Returns:
        One row per run.
    """
    import baselines

    if not isinstance(policies, Mapping):
        policies = {name: (name, {}) for name in policies}
    rows: list[RunRow] = []
    layout = make_cluster(cluster)
    for arrival, preset in arrivals.items():
        for seed in seeds:
            jobs, noise = episode_jobs(preset, seed, cluster)
            for label, (name, params) in policies.items():
                noise_rng = copy.deepcopy(noise)  # each run draws the episode's noise afresh
                policy = baselines.make(name, **{"seed": policy_seed(seed), **params})
                result = run_headless(jobs, layout, policy, config or SimConfig(), rng=noise_rng)
                rows.append(RunRow(label, arrival, seed, result.metrics, result.wall_s))
    return rows


def run_in_env(
    policies: Mapping[str, tuple[str, Mapping[str, Any]]] | Iterable[str],
    seeds: Sequence[int] = (0, 1, 2),
    arrivals: Mapping[str, str] = ARRIVAL_MODES,
    env_config: Mapping[str, Any] | None = None,
) -> list[RunRow]:
    """The same grid through ``GPUShare-v0`` and each policy's ``predict``.

    The env addresses only its windows (``pending_window`` / ``running_window``, 16 each
    by default), so a policy sees less than headless; with windows as large as the
    workload the two give identical results.

    Args:
        policies: Policy names, or ``{label: (name, params)}``.
        seeds: ``reset(seed=...)`` values.
        arrivals: ``{label: workload preset}``.
        env_config: Extra ``EnvConfig`` fields (``workload`` is set per arrival mode).
    """
    import gymnasium as gym

    import baselines
    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    if not isinstance(policies, Mapping):
        policies = {name: (name, {}) for name in policies}
    rows: list[RunRow] = []
    for arrival, preset in arrivals.items():
        env = gym.make("GPUShare-v0", config={**(env_config or {}), "workload": preset})
        for seed in seeds:
            for label, (name, params) in policies.items():
                start = time.perf_counter()
                policy = baselines.make(name, env, **{"seed": policy_seed(seed), **params})
                episode = rollout(policy, env, seed=seed)
                if not episode.terminated:
                    raise RuntimeError(f"{label}: episode seed {seed} truncated: {episode.info}")
                rows.append(
                    RunRow(label, arrival, seed, episode.metrics, time.perf_counter() - start)
                )
        env.close()
    return rows


def summarize_rows(
    rows: Sequence[RunRow], baseline: str = "fifo"
) -> dict[tuple[str, str], dict[str, float]]:
    """Means over seeds per (policy, arrival), with ratios to ``baseline``.

    Ratios: ``util_ratio`` = policy utilisation / baseline's, ``makespan_ratio`` =
    baseline makespan / policy's (> 1: shorter), ``jct_ratio`` = baseline mean JCT /
    policy's (> 1: shorter).
    """
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for row in rows:
        groups.setdefault((row.policy, row.arrival), []).append(row.metrics)
    keys = ("makespan_s", "mean_jct_s", "gpu_util", "gpu_alloc", "suspends", "max_queued_total_s")
    means = {
        group: {k: float(np.mean([m[k] for m in runs])) for k in keys}
        for group, runs in groups.items()
    }
    for (_policy, arrival), values in means.items():
        base = means.get((baseline, arrival))
        if base is None:
            values.update(util_ratio=math.nan, makespan_ratio=math.nan, jct_ratio=math.nan)
            continue
        values["util_ratio"] = values["gpu_util"] / base["gpu_util"]
        values["makespan_ratio"] = base["makespan_s"] / values["makespan_s"]
        values["jct_ratio"] = base["mean_jct_s"] / values["mean_jct_s"]
    return means


def markdown_table(rows: Sequence[RunRow], baseline: str = "fifo") -> str:
    """A markdown table per arrival mode: means over seeds and ratios to ``baseline``."""
    means = summarize_rows(rows, baseline)
    policies = list(dict.fromkeys(row.policy for row in rows))
    arrivals = list(dict.fromkeys(row.arrival for row in rows))
    seeds = sorted({row.seed for row in rows})
    lines: list[str] = []
    for arrival in arrivals:
        lines.append(f"**{arrival}** (mean over seeds {', '.join(map(str, seeds))})")
        lines.append("")
        lines.append(
            "| policy | makespan [s] | mean JCT [s] | GPU util | util / fifo "
            "| makespan fifo / policy | JCT fifo / policy | suspends |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for policy in policies:
            v = means.get((policy, arrival))
            if v is None:
                continue
            lines.append(
                f"| {policy} | {v['makespan_s']:,.0f} | {v['mean_jct_s']:,.0f} "
                f"| {v['gpu_util']:.3f} | {v['util_ratio']:.2f}x | {v['makespan_ratio']:.2f}x "
                f"| {v['jct_ratio']:.2f}x | {v['suspends']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines)
