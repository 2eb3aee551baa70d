"""FGD's target workload (``gpushare_env.sim.target_workload``) and its rule, the
simulator setting ``simulator.target_workload``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpushare_env.envs.config import EnvConfig
from gpushare_env.sim import ClusterConfig, JobSpec, NodeGroup, SimConfig, Simulator, make_cluster
from gpushare_env.sim.target_workload import TARGET_WORKLOADS, typical_requests
from gpushare_env.sim.types import Request

# (cpu_milli, gpu_milli, num_gpu, gpu_spec) per task: 12 half GPUs, 6 whole GPUs, one
# 8-GPU task and one CPU-only task (20 tasks; GPU requested: 6,000 + 6,000 + 8,000 milli)
HALF, WHOLE, EIGHT, CPU = (
    (4000, 500, 1, ()),
    (8000, 1000, 1, ()),
    (64000, 1000, 8, ()),
    (2000, 0, 0, ()),
)
TASKS = [HALF] * 12 + [WHOLE] * 6 + [EIGHT] + [CPU]


def kept(rule: str) -> list[tuple[tuple, float]]:
    return [
        ((t.cpu_milli, t.gpu_milli, t.num_gpu, t.gpu_spec), t.frequency)
        for t in typical_requests(TASKS, rule=rule)
    ]


def test_popular_keeps_the_frequent_kinds_until_95_percent_of_the_tasks():
    # 12 + 6 = 18 of 20 tasks: 90%, then a tie of one task each, the larger (8 GPUs)
    # first: 19 of 20 = 95%; the CPU-only task is cut
    got = kept("popular")
    assert [kind for kind, _ in got] == [HALF, WHOLE, EIGHT]
    assert [f for _, f in got] == pytest.approx([12 / 19, 6 / 19, 1 / 19])
    assert kept("popular") == [
        ((t.cpu_milli, t.gpu_milli, t.num_gpu, t.gpu_spec), t.frequency)
        for t in typical_requests(TASKS)  # the default
    ]


def test_popular_multi_gpu_adds_the_multi_gpu_kinds_popularity_cut():
    tasks = [HALF] * 40 + [WHOLE] * 19 + [EIGHT] + [CPU]  # 59 of 61 tasks cover 95%
    popular = typical_requests(tasks)
    assert all(t.num_gpu <= 1 for t in popular)
    wider = typical_requests(tasks, rule="popular_multi_gpu")
    assert [(t.num_gpu, t.gpu_milli) for t in wider] == [(1, 500), (1, 1000), (8, 1000)]
    assert [t.frequency for t in wider] == pytest.approx([40 / 60, 19 / 60, 1 / 60])
    # kept already: nothing added twice
    assert len(typical_requests(TASKS, rule="popular_multi_gpu")) == 3


def test_gpu_demand_keeps_the_kinds_asking_for_the_most_gpu():
    # GPU requested: 8,000 (EIGHT) + 6,000 + 6,000 = 20,000; 95% needs all three kinds,
    # the larger request first among the tied 6,000s; CPU-only asks for none
    got = kept("gpu_demand")
    assert [kind for kind, _ in got] == [EIGHT, WHOLE, HALF]
    assert [f for _, f in got] == pytest.approx([1 / 19, 6 / 19, 12 / 19])
    assert math.fsum(f for _, f in got) == pytest.approx(1.0)
    # no GPU requested at all: the kinds by popularity
    assert typical_requests([CPU, CPU], rule="gpu_demand") == typical_requests([CPU, CPU])


def test_a_bad_rule_is_refused_with_the_rules_listed():
    with pytest.raises(ValueError, match=r"target_workload must be one of \['popular', "):
        typical_requests(TASKS, rule="all")
    with pytest.raises(ValueError, match=r"SimConfig\.target_workload must be one of"):
        SimConfig(sharing="shares", target_workload="gpu")
    assert SimConfig().target_workload == TARGET_WORKLOADS[0] == "popular"


@pytest.mark.parametrize("seed", range(3))
def test_the_rule_reaches_share_fgd(seed):
    # one node of 8 GPUs and one of 2; 10 half-GPU tasks, 30 whole-GPU ones and one of 8
    # GPUs: "popular" keeps no 8-GPU kind (40 of 41 tasks cover 95%), so FGD sees the
    # same fragment growth on both nodes and puts the first half GPU on the 8-GPU node;
    # counting the 8-GPU kind, that node would no longer fit it, so FGD takes the other
    groups = tuple(NodeGroup(1, gpus, "v100", None, 96000, 393216) for gpus in (8, 2))
    cluster = make_cluster(ClusterConfig(groups, max_jobs_per_gpu=64))
    half, whole, eight = (
        Request(500, 4000, 1024),
        Request(1000, 8000, 1024),
        Request(1000, 64000, 1024),
    )
    jobs = [JobSpec(i, 0.0, "resnet50", 64, 1, 10**6, 8.0, 0.5, 0.158, half) for i in range(10)]
    jobs += [JobSpec(i, 0.0, "resnet50", 64, 1, 10, 8.0, 1.0, 0.158, whole) for i in range(10, 40)]
    jobs.append(JobSpec(40, 0.0, "resnet50", 64, 8, 10, 8.0, 1.0, 0.158, eight))
    nodes = {}
    for rule in TARGET_WORKLOADS:
        config = SimConfig(sharing="shares", target_workload=rule)
        sim = Simulator(jobs, cluster, config, rng=np.random.default_rng(seed))
        sim.advance()
        placement = sim.find_placement(0, "share_fgd")
        assert placement is not None
        nodes[rule] = int(cluster.gpu_node[placement[0]])
    assert nodes == {"popular": 0, "popular_multi_gpu": 1, "gpu_demand": 1}


def test_the_env_and_its_runs_hand_the_rule_to_the_simulator():
    config = EnvConfig.from_any({"sharing": "shares", "target_workload": "gpu_demand"})
    assert config.simulator.target_workload == "gpu_demand"
    assert config.sim_config().target_workload == "gpu_demand"
    assert config.run_args().sim_config.target_workload == "gpu_demand"
    with pytest.raises(ValueError, match=r"EnvConfig\.simulator\.target_workload must be one of"):
        EnvConfig.from_any({"target_workload": "multi"})
