"""``simulator.target_workload`` in a headless run of FGD's rule (a policy of
``baselines``, so here rather than beside the rule's unit tests in tests/sim)."""

from __future__ import annotations

import numpy as np

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.sim.cluster import ClusterConfig, NodeGroup, make_cluster
from gpushare_env.sim.engine import SimConfig
from gpushare_env.sim.types import JobSpec, Request


def test_a_run_keeps_the_8_gpu_node_whole_only_when_the_rule_counts_it():
    # a long half-GPU job at 0, an 8-GPU one at 1 s, then the rest of the workload
    # (9 halves, 30 whole GPUs) long after: "popular" leaves the 8-GPU kind out
    groups = tuple(NodeGroup(1, gpus, "v100", None, 96000, 393216) for gpus in (8, 2))
    cluster = make_cluster(ClusterConfig(groups, max_jobs_per_gpu=64))
    half, whole = Request(500, 4000, 1024), Request(1000, 8000, 1024)
    eight = Request(1000, 64000, 1024)
    jobs = [JobSpec(0, 0.0, "resnet50", 64, 1, 1000, 8.0, 0.5, 1.0, half)]
    jobs.append(JobSpec(1, 1.0, "resnet50", 64, 8, 10, 8.0, 1.0, 1.0, eight))
    jobs += [JobSpec(i, 5000.0, "resnet50", 64, 1, 10, 8.0, 0.5, 1.0, half) for i in range(2, 11)]
    jobs += [JobSpec(i, 5000.0, "resnet50", 64, 1, 10, 8.0, 1.0, 1.0, whole) for i in range(11, 41)]
    waits = {}
    for rule in ("popular", "popular_multi_gpu"):
        config = SimConfig(sharing="shares", target_workload=rule)
        result = run_headless(
            jobs, cluster, baselines.make("share_fgd"), config, rng=np.random.default_rng(0)
        )
        assert len(result.records) == len(jobs)
        waits[rule] = next(r.queueing_delay_s for r in result.records if r.job_id == 1)
    assert waits["popular_multi_gpu"] == 0.0
    assert waits["popular"] > 900.0  # until the half-GPU job leaves the 8-GPU node
