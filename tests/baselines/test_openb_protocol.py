"""FGD's experiment protocol (``baselines.openb.protocol``) on small clusters: the 130%
workload, the shuffle, no retries, the cluster never over-committed, and the
per-percentage binning of the artifact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.openb import POLICIES, OpenbCluster, TaskRequest
from baselines.openb.protocol import (
    PlacementRun,
    Workload,
    arrival_order,
    discretize,
    run_seed,
)
from gpushare_env.workloads.openb import OpenbNode


def whole(count: int = 1, cpu: int = 1000) -> TaskRequest:
    return TaskRequest(cpu, 0, count, 1000)


def test_the_original_tasks_come_shuffled_then_resampled_up_to_130_percent():
    tasks = [whole(cpu=100 * i) for i in range(10)]  # 10 GPUs asked, 10 in the cluster
    order = arrival_order(tasks, 10_000, np.random.default_rng(0))
    # 10 + 3 = 13 GPUs = 130%; a 14th would overshoot
    assert len(order) == 13
    assert sorted(order[:10].tolist()) == list(range(10))
    assert order[:10].tolist() != list(range(10))  # shuffled
    again = arrival_order(tasks, 10_000, np.random.default_rng(0))
    assert np.array_equal(order, again)  # the seed decides
    assert not np.array_equal(order, arrival_order(tasks, 10_000, np.random.default_rng(1)))


def test_resampling_stops_at_the_first_draw_that_would_overshoot():
    tasks = [TaskRequest(0, 0, 1, milli) for milli in (130, 470, 810, 1000)] + [TaskRequest(0, 0)]
    for seed in range(20):
        order = arrival_order(tasks, 8_000, np.random.default_rng(seed))
        total = sum(tasks[i].total_gpu_milli for i in order)
        assert 1.3 * 8_000 - 1000 < total <= 1.3 * 8_000  # no share is above 1000


def test_a_multi_gpu_draw_is_checked_by_its_per_gpu_share_as_in_the_artifact():
    tasks = [whole(8)]  # 8 GPUs asked of a 10-GPU cluster (80%)
    order = arrival_order(tasks, 10_000, np.random.default_rng(0))
    # 8000 + 1000 (its per-GPU share) <= 13000: drawn, 16000 in all; then 17000 > 13000
    assert order.tolist() == [0, 0]


def test_a_list_above_the_target_loses_random_tasks_until_it_fits():
    tasks = [whole() for _ in range(20)]  # 200% of a 10-GPU cluster
    order = arrival_order(tasks, 10_000, np.random.default_rng(3))
    assert len(order) == 13 and len(set(order.tolist())) == 13


def small_cluster() -> list[OpenbNode]:
    return [
        OpenbNode("a", 16000, 65536, 2, "T4"),
        OpenbNode("b", 32000, 131072, 4, "V100"),
        OpenbNode("c", 8000, 32768, 1, "T4"),
        OpenbNode("d", 64000, 262144, 8, "V100"),
    ]


def small_workload() -> Workload:
    """Tasks asking for about 75% of ``small_cluster``'s 15 GPUs (resampled up to 130%)."""
    rng = np.random.default_rng(5)
    tasks: list[TaskRequest] = []
    while sum(task.total_gpu_milli for task in tasks) < 11_000:
        kind = rng.random()
        cpu = int(rng.choice([500, 2000, 6000]))
        if kind < 0.15:
            tasks.append(TaskRequest(cpu, 1024))
        elif kind < 0.65:
            milli = int(rng.choice([200, 350, 500, 800]))
            spec = ("T4",) if rng.random() < 0.2 else ()
            tasks.append(TaskRequest(cpu, 1024, 1, milli, spec))
        else:
            tasks.append(TaskRequest(cpu, 1024, int(rng.choice([1, 1, 2, 4])), 1000))
    return Workload.from_requests("small", tasks)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_run_never_overcommits_and_never_retries(policy):
    nodes, workload = small_cluster(), small_workload()
    run = run_seed(workload, nodes, policy, seed=11)
    capacity = 15_000
    assert run.capacity_milli == capacity
    tasks = [workload.tasks[i] for i in run.order]
    # the workload: 130% of the GPUs; it stopped at a draw that would overshoot (by its
    # per-GPU share), so it is within one GPU below, and at most a multi-GPU draw above
    overshoot = max(t.total_gpu_milli - t.gpu_milli for t in workload.tasks)
    assert 1.3 * capacity - 1000 < run.arrived_milli[-1] <= 1.3 * capacity + overshoot
    assert np.all(np.diff(run.arrived_milli) >= 0)
    # allocation only grows, by exactly what each placed task asks, never above capacity
    granted = np.array(
        [t.total_gpu_milli if n >= 0 else 0 for t, n in zip(tasks, run.node, strict=True)]
    )
    assert np.array_equal(run.allocated_milli, np.cumsum(granted))
    assert run.allocated_milli[-1] <= capacity
    # replay: shares on every GPU at most 1000, CPU and memory within capacity, and a task
    # failed only when no node fitted it at its arrival (no retry later either)
    cluster = OpenbCluster(nodes)
    assert run.failed > 0
    for task, node, mask in zip(tasks, run.node, run.gpus, strict=True):
        if node < 0:
            assert cluster.feasible_nodes(task) == [], task
            continue
        gpus = tuple(gpu for gpu in range(8) if mask >> gpu & 1)
        cluster.place(int(node), gpus, task)  # raises if a GPU would go above 1000
    assert (cluster.gpu_free >= 0).all() and (cluster.cpu_free >= 0).all()
    assert (cluster.memory_free >= 0).all()
    assert cluster.allocated_milli == run.allocated_milli[-1]


def test_every_policy_sees_the_same_arrivals_for_a_seed():
    nodes, workload = small_cluster(), small_workload()
    orders = {run_seed(workload, nodes, p, seed=4).order.tobytes() for p in POLICIES}
    assert len(orders) == 1


def test_discretize_takes_the_mean_per_rounded_percentage_and_widens_gaps():
    capacity = 1000
    arrived = np.array([4, 6, 14, 16, 25, 40])  # per mille: 0.4%, 0.6%, 1.4%, 1.6%, 2.5%, 4%
    allocated = np.array([4, 6, 10, 10, 20, 30])
    fragment = np.array([0.0, 0.0, 99.0, 0.0, 98.0, 97.0])  # [milli-GPU]
    run = PlacementRun(
        "w",
        "fgd",
        0,
        capacity,
        np.arange(6),
        np.zeros(6),
        np.zeros(6),
        arrived,
        allocated,
        fragment,
    )
    rows = {row["arrived_pct"]: row for row in discretize(run, tuning_ratio=0.06)}
    assert list(rows) == [0, 1, 2, 3, 4, 5, 6]
    assert rows[0]["allocated_pct"] == 0.4  # 0.4% rounds to 0
    assert rows[1]["allocated_pct"] == 0.8  # 0.6% and 1.4%: mean of 0.6 and 1.0
    # 1.6% rounds to 2 and 2.5% to 2 (half to even): mean of 1.0 and 2.0
    assert rows[2]["allocated_pct"] == 1.5
    assert rows[3]["allocated_pct"] == 2.0  # nothing rounds to 3: the arrivals at 2-4
    assert rows[4]["allocated_pct"] == 3.0
    assert rows[5]["allocated_pct"] == 3.0  # nothing at 5: the one at 4
    assert math.isnan(rows[6]["allocated_pct"])  # nothing within 5-7
    # fragment ratio: 100 * 99 / (1000 - 10) = 10% at 1.4%; 0 at 0.6%
    assert rows[1]["frag_ratio_pct"] == 5.0


def test_the_fragment_ratio_is_of_the_free_gpu_share_and_zero_when_full():
    run = PlacementRun(
        "w", "fgd", 0, 2000, np.arange(2), np.zeros(2), np.zeros(2),
        np.array([1000, 2000]), np.array([1000, 2000]), np.array([250.0, 0.0]),
    )  # fmt: skip
    assert run.frag_ratio_pct.tolist() == [25.0, 0.0]
