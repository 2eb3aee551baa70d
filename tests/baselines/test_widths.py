"""Every baseline places jobs of any width correctly: odd widths (3, 5, 7, 20, 24) and
jobs as wide as the whole cluster.

Each policy of ``baselines.available()`` and ``baselines.variants()`` runs headless on a
small hand-made job list of such widths, on clusters whose nodes are smaller than some of
the jobs (4-GPU nodes), as large as others (8-GPU nodes) and of two sizes at once
(``mixed``). Checked, at every decision:

* every job holding GPUs (running, checkpointing or restarting) holds exactly
  ``num_gpus`` distinct GPUs, each listing the job among its holders, and no GPU holds more
  memory or more workers than it has;
* every placement is the one its strategy names (``SimView.find_placement`` just before),
  and spans several nodes only when no single node could host the job under that
  strategy at that moment, over as few nodes as possible (the nodes with the most fitting
  GPUs first);

and at the end, that every job finished and the run was not truncated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.sim import (
    JobSpec,
    JobStatus,
    Schedule,
    SimConfig,
    Simulator,
    SimView,
    make_cluster,
)
from gpushare_env.sim.catalog import scaling_efficiency
from tests.jobs import job as make_job

POLICIES = [*baselines.available(), *baselines.variants()]

#: Clusters: 4-GPU nodes (jobs of 5 and 7 GPUs must span nodes, 16 is the whole
#: cluster), 8-GPU nodes (20 and 24 span 3 nodes, 64 is the whole cluster), three 8-GPU
#: nodes (24 is the whole cluster), and nodes of 8 and 4 GPUs of three GPU types.
CLUSTERS: dict[str, Any] = {
    "thesis": "thesis",  # 4 nodes x 4
    "medium": "medium",  # 8 nodes x 8
    "three_by_8": {"nodes": 3, "gpus_per_node": 8, "gpu_type": "v100"},
    "mixed": "mixed",  # 4 x 8 v100, 4 x 8 p100, 2 x 4 a100
}

#: Widths tried wherever they fit; each cluster adds its own size.
ODD_WIDTHS = (1, 3, 5, 7, 20, 24)

#: Jobs in flight hold GPUs in these states.
HOLDING = (JobStatus.RUNNING, JobStatus.SUSPENDING, JobStatus.RESUMING)


def width_jobs(cluster_gpus: int) -> list[JobSpec]:
    """Two jobs of every width that fits (and of the cluster's size), with 1-GPU and 3-GPU
    jobs in between: a burst at time 0 that fills the cluster, then arrivals every 40 s
    while it is busy, so jobs wait, fragments form and preemptive policies preempt."""
    widths = sorted({w for w in ODD_WIDTHS if w <= cluster_gpus} | {cluster_gpus})
    sizes = [*widths, 1, 3, *reversed(widths), 1]
    jobs = []
    for i, gpus in enumerate(sizes):
        arrival = 0.0 if i < 3 else 40.0 * (i - 2)
        seconds = 150 + (97 * i) % 600  # 150-750 s alone
        jobs.append(
            make_job(
                i,
                arrival,
                seconds,
                num_gpus=gpus,
                memory_gib=(4.0, 8.0, 6.0)[i % 3],
                intensity=(1.0, 0.6, 0.9)[i % 3],
                iter_time_s=scaling_efficiency(gpus),  # one step = 1 s alone
            )
        )
    return jobs


def fitting_per_node(view: SimView, strategy: str, memory_gib: float) -> np.ndarray:
    """GPUs of each node a worker of ``memory_gib`` fits on under ``strategy`` now
    (``exclusive``: idle GPUs; the sharing strategies: a free slot and the memory).
    # (N,)"""
    fits = view.free_memory_gib + 1e-9 >= memory_gib
    if strategy == "exclusive":
        fits &= view.holders == 0
    else:
        fits &= view.holders < view.max_jobs_per_gpu
    return np.bincount(view.gpu_node[fits], minlength=int(view.gpu_node.max()) + 1)


class PlacementChecker:
    """Wraps a policy: checks each placement it decides against the strategy's rules."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.name = policy.name
        self.expected: dict[int, tuple[int, ...]] = {}  # job -> GPUs of its last placement
        self.placements = self.multi_node = 0

    def reset(self, view: SimView) -> None:
        self.policy.reset(view)

    def decide(self, view: SimView) -> Any:
        decision = self.policy.decide(view)
        if isinstance(decision, Schedule):
            job = view.job(decision.job_id)
            gpus = view.find_placement(decision.job_id, decision.strategy)
            assert gpus is not None, f"{self.name}: {decision} does not fit"
            nodes = {int(view.gpu_node[g]) for g in gpus}
            per_node = np.sort(fitting_per_node(view, decision.strategy, job.memory_gib))[::-1]
            fewest = int(np.searchsorted(np.cumsum(per_node), job.num_gpus) + 1)
            where = f"{self.name}: job {job.job_id} ({job.num_gpus} GPUs) at {view.now_s:.0f}s"
            if len(nodes) > 1:
                self.multi_node += 1
                assert per_node[0] < job.num_gpus, (
                    f"{where} spans nodes {sorted(nodes)} although a node has "
                    f"{per_node[0]} GPUs that fit it ({decision.strategy})"
                )
            assert len(nodes) == fewest, f"{where}: {len(nodes)} nodes, {fewest} would do"
            self.expected[job.job_id] = tuple(sorted(gpus))
            self.placements += 1
        return decision


def check_holds(sim: Simulator, expected: dict[int, tuple[int, ...]]) -> None:
    """Every job in flight holds exactly its GPUs (those of its placement); no GPU is
    over-committed."""
    view: SimView = sim
    for job_id in [*sim.running(), *sim.in_transition()]:
        job = sim.jobs[job_id]
        assert job.status in HOLDING
        gpus = tuple(job.gpus)
        assert len(gpus) == len(set(gpus)) == job.spec.num_gpus, (job_id, gpus)
        assert tuple(sorted(gpus)) == expected[job_id], (job_id, gpus, expected[job_id])
        for g in gpus:
            assert job_id in view.gpu_jobs(g)
    assert np.all(view.free_memory_gib >= -1e-6)
    assert np.all(view.holders <= view.max_jobs_per_gpu)


@pytest.mark.parametrize("cluster_name", list(CLUSTERS))
@pytest.mark.parametrize("name", POLICIES)
def test_every_policy_places_odd_and_cluster_wide_jobs_correctly(
    name: str, cluster_name: str
) -> None:
    cluster = make_cluster(CLUSTERS[cluster_name])
    jobs = width_jobs(cluster.num_gpus)
    policy = PlacementChecker(baselines.make(name, seed=0))
    result = run_headless(
        jobs,
        cluster,
        policy,
        SimConfig(max_suspends_per_job=None),  # unlimited: the policy's own rules only
        rng=np.random.default_rng(0),
        max_decisions=1000 * len(jobs),
        max_decisions_per_instant=10_000,
        on_decision=lambda sim: check_holds(sim, policy.expected),
    )
    assert not result.truncated, f"{name} on {cluster_name}: truncated"
    assert sorted(r.job_id for r in result.records) == [j.job_id for j in jobs]
    assert all(np.isfinite(r.finish_s) for r in result.records)
    widest = max(j.num_gpus for j in jobs)
    assert widest == cluster.num_gpus
    assert policy.placements >= len(jobs)
    # wide jobs cannot fit one node: the multi-node branch is exercised
    assert policy.multi_node > 0
