"""What an episode plays, drawn by one rule for every tool.

:func:`draw_episode` turns an env config, its cluster and an episode generator into the
episode's jobs (generated, a trace, or a given list; those that can never fit dropped by
``on_unfit``) and its measurement-noise generator. ``GPUShare-v0``'s ``reset``, the
headless runs of the evaluation harness, the thesis experiment and the benchmarks all
call it, so episode ``s`` is the same episode in each of them.

The generator is split as :func:`gpushare_env.seeding.episode_streams` says: two
children, the workload's and the noise's, both always spawned, so the noise a job sees
does not depend on where the jobs came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpushare_env.envs.config import EnvConfig
from gpushare_env.sim.cluster import Cluster
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import WorkloadConfig
from gpushare_env.workloads.jobs import fit_to_cluster
from gpushare_env.workloads.trace_cut import TraceRead, read_trace

__all__ = ["EpisodeInputs", "draw_episode"]


@dataclass(frozen=True, slots=True)
class EpisodeInputs:
    """An episode's jobs and noise.

    Attributes:
        jobs: The jobs that fit the cluster, by arrival.
        rejected_ids: Ids of the jobs dropped as unfit (``on_unfit="reject"``).
        noise_rng: The generator of the simulator's measurement noise.
    """

    jobs: list[JobSpec]
    rejected_ids: tuple[int, ...]
    noise_rng: np.random.Generator


def draw_episode(
    config: EnvConfig,
    cluster: Cluster,
    rng: np.random.Generator | int,
    *,
    num_jobs: int | None = None,
    jobs: Sequence[JobSpec] | None = None,
    workload: WorkloadConfig | None = None,
    trace: TraceRead | None = None,
) -> EpisodeInputs:
    """The jobs and noise generator of one episode.

    Args:
        config: The env config: its ``jobs``, else its ``workload`` (with ``num_jobs``),
            and ``on_unfit``.
        cluster: The cluster the jobs must fit (``make_cluster(config.cluster)``).
        rng: The episode's generator, or its seed (``reset(seed=s)`` gives the env
            ``np.random.default_rng(s)``).
        num_jobs: Jobs of a generated workload this episode (``None``: the config's).
        jobs: A job list to play instead of the config's (``reset``'s ``options``).
        workload: ``WorkloadConfig.from_any(config.workload)``, if the caller has it.
        trace: The config's trace, already read (``read_trace``); ``None``: read it here.

    Raises:
        ValueError: No job fits the cluster; a bad workload (as ``WorkloadConfig``).
        UnfitJobError: A job cannot fit and ``on_unfit="error"``.
    """
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    workload_rng, noise_rng = generator.spawn(2)
    num_gpus = cluster.num_gpus
    if jobs is not None:
        drawn = list(jobs)
    elif config.jobs is not None:
        drawn = list(config.jobs)
    else:
        workload = workload or WorkloadConfig.from_any(config.workload)
        if workload.kind == "trace":
            if trace is None:
                trace = read_trace(workload, config.num_jobs, cluster_gpus=num_gpus)
            drawn = trace.episode(workload_rng)
        else:
            count = config.num_jobs if num_jobs is None else int(num_jobs)
            drawn = workload.generate(workload_rng, num_jobs=count, cluster_gpus=num_gpus)
    fit = fit_to_cluster(
        drawn,
        num_gpus,
        float(cluster.gpu_memory_gib.max()),
        on_unfit=config.on_unfit,  # type: ignore[arg-type]
        gpu_memory_gib=cluster.gpu_memory_gib,
        sharing=config.simulator.sharing,
        cluster=cluster,
    )
    if not fit.jobs:
        raise ValueError(
            f"no job of the workload fits the cluster {cluster.describe()} "
            f"(rejected: {fit.rejected})"
        )
    return EpisodeInputs(list(fit.jobs), tuple(fit.rejected_ids), noise_rng)
