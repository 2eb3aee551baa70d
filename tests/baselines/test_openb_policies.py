"""FGD's six placement policies (``baselines.openb``) on hand-built clusters whose right
choice is worked out by hand in each test, and the fragmentation measure on toy workloads."""

from __future__ import annotations

import math

import pytest

from baselines.openb import (
    POLICIES,
    BestFit,
    DotProduct,
    FragmentationGradientDescent,
    GpuClustering,
    GpuPacking,
    OpenbCluster,
    RandomFit,
    TaskRequest,
    TypicalTask,
    make_policy,
    node_fragmentation,
    place_task,
    typical_tasks,
)
from baselines.openb.cluster import best_fit_gpus, go_div
from baselines.openb.fgd import fragment_score
from baselines.openb.fragmentation import CATEGORIES, fragment_categories
from gpushare_env.workloads.openb import OpenbNode


def node(name: str, cpu: int, gpus: int, model: str = "T4", memory: int = 1 << 20) -> OpenbNode:
    return OpenbNode(name, cpu, memory, gpus, model if gpus else "")


def share(milli: int, cpu: int = 1000, memory: int = 0, spec: tuple[str, ...] = ()) -> TaskRequest:
    return TaskRequest(cpu, memory, 1, milli, spec)


def whole(count: int, cpu: int = 1000, memory: int = 0) -> TaskRequest:
    return TaskRequest(cpu, memory, count, 1000)


def cpu_only(cpu: int = 1000, memory: int = 0) -> TaskRequest:
    return TaskRequest(cpu, memory)


def with_free(cluster: OpenbCluster, index: int, free: list[int]) -> None:
    """Use GPUs of node ``index`` down to ``free`` by placing shares on them."""
    for gpu, left in enumerate(free):
        if left < 1000:
            cluster.place(index, (gpu,), share(1000 - left, cpu=0))


def test_the_filter_checks_cpu_memory_model_and_gpu_shares():
    cluster = OpenbCluster(
        [
            node("small", 8000, 2, "T4"),
            OpenbNode("no-memory", 64000, 100, 1, "V100"),
            node("v100", 64000, 4, "V100"),
        ]
    )
    with_free(cluster, 2, [500, 500, 1000, 1000])
    assert cluster.feasible_nodes(cpu_only(cpu=16000, memory=500)) == [2]  # CPU, then memory
    assert cluster.feasible_nodes(share(600, spec=("T4",))) == [0]  # the model
    assert cluster.feasible_nodes(share(600, spec=("V100",))) == [1, 2]
    assert cluster.fits(2, whole(2)) and not cluster.fits(2, whole(3))  # idle GPUs
    assert cluster.fits(2, share(500)) and cluster.gpus(2) == [500, 500, 1000, 1000]
    with pytest.raises(ValueError, match="cannot hold"):
        cluster.place(2, (0,), share(600))


def test_best_fit_gpus_take_the_tightest_share_and_the_first_idle_gpus():
    assert best_fit_gpus([1000, 300, 200, 300], share(200)) == (2,)
    assert best_fit_gpus([1000, 300, 200, 300], share(250)) == (1,)  # lowest index of equals
    assert best_fit_gpus([300, 1000, 1000, 1000], whole(2)) == (1, 2)
    assert best_fit_gpus([300, 1000], cpu_only()) == ()


def test_random_takes_the_drawn_node_and_gpu():
    cluster = OpenbCluster([node("a", 64000, 4), node("b", 500, 4), node("c", 64000, 4)])
    with_free(cluster, 2, [1000, 200, 500, 300])
    policy = RandomFit()
    feasible = cluster.feasible_nodes(share(300))
    assert feasible == [0, 2]
    assert policy.choose_node(cluster, share(300), feasible, 0.0) == 0
    assert policy.choose_node(cluster, share(300), feasible, 0.5) == 2  # floor(0.5 * 2) = 1
    # GPUs of c holding 300: 0 (1000), 2 (500), 3 (300)
    assert policy.select_gpus(cluster, 2, share(300), 0.0) == (0,)
    assert policy.select_gpus(cluster, 2, share(300), 0.5) == (2,)
    assert policy.select_gpus(cluster, 2, share(300), 0.99) == (3,)
    assert policy.select_gpus(cluster, 2, whole(1), 0.99) == (0,)  # whole GPUs: first idle


def test_dotprod_scores_the_smallest_normalised_dot_product_highest():
    cluster = OpenbCluster([node("a", 64000, 2), node("b", 16000, 8)])
    task = whole(1, cpu=8000)
    # a: (64/128)(8/128) + (2/8)(1/8) = 0.0625 -> floor(100 (1 - 0.03125)) = 96
    # b: (16/128)(8/128) + (8/8)(1/8) = 0.1328125 -> floor(100 (1 - 0.06640625)) = 93
    assert [DotProduct().score(cluster, n, task) for n in (0, 1)] == [96, 93]
    assert place_task(cluster, task, DotProduct()) == (0, (0,))


def test_clustering_puts_a_share_with_shares_and_a_new_kind_on_an_empty_node():
    cluster = OpenbCluster(
        [node("shares", 64000, 8), node("mixed", 64000, 8), node("empty", 64000, 8)]
    )
    cluster.place(0, (0,), share(500))
    cluster.place(1, (0,), share(500))
    cluster.place(1, (1,), whole(1))
    policy = GpuClustering()
    # shares only: 75 + 25 * 500 // 8000 = 76; mixed: 50 + 25 * 1500 // 8000 = 54; empty: 25
    assert [policy.score(cluster, n, share(200)) for n in range(3)] == [76, 54, 25]
    # two whole GPUs: a kind nobody has -> an empty node (25) beats nodes of other kinds
    assert [policy.score(cluster, n, whole(2)) for n in range(3)] == [1, 4, 25]
    assert place_task(cluster, whole(2), policy) == (2, (0, 1))


def test_clustering_and_packing_leave_cpu_tasks_to_the_tie_break():
    cluster = OpenbCluster(
        [node("a", 64000, 2), node("b", 64000, 2), node("c", 64000, 2)], tie_rank=[2, 0, 1]
    )
    for policy in (GpuClustering(), GpuPacking()):
        assert [policy.score(cluster, n, cpu_only()) for n in range(3)] == [0, 0, 0]
        assert policy.choose_node(cluster, cpu_only(), [0, 1, 2], 0.0) == 1  # rank 0


def test_packing_prefers_occupied_gpus_then_used_nodes_then_small_idle_nodes():
    cluster = OpenbCluster(
        [
            node("p", 64000, 2),
            node("q", 64000, 2),
            node("idle2", 64000, 2),
            node("idle8", 64000, 8),
        ],
        tie_rank=[1, 0, 2, 3],
    )
    with_free(cluster, 0, [300, 1000])
    with_free(cluster, 1, [500, 1000])
    policy = GpuPacking()
    # a 200 share: p's GPU 0 (300 free): 100 - 30 // 10 = 97; q's (500): 95; idle: 33 - GPUs
    assert [policy.score(cluster, n, share(200)) for n in range(4)] == [97, 95, 31, 25]
    # a 400 share: p must take an idle GPU (50 - 1 = 49), q its shared one (95)
    assert [policy.score(cluster, n, share(400)) for n in range(4)] == [49, 95, 31, 25]
    # one whole GPU: p and q tie at 49 -> q has the smaller tie rank
    assert policy.choose_node(cluster, whole(1), [0, 1, 2, 3], 0.0) == 1
    # two whole GPUs fit idle nodes only: the one with fewer GPUs first
    assert place_task(cluster, whole(2), policy) == (2, (0, 1))
    assert place_task(cluster, share(200), policy) == (0, (0,))


def test_bestfit_picks_the_least_left_over_after_min_max_rescaling():
    cluster = OpenbCluster([node("a", 32000, 8), node("b", 96000, 2), node("c", 8000, 1)])
    task = whole(1, cpu=4000)
    policy = BestFit()
    # left-over: a 0.5*28/128 + 0.5*7/8 = 0.546875 -> 45; b 0.421875 -> 57; c 0.015625 -> 98
    raw = [policy.score(cluster, n, task) for n in range(3)]
    assert raw == [45, 57, 98]
    assert policy.normalize(raw) == [0, 22, 100]  # (57 - 45) * 100 // 53 = 22
    assert policy.normalize([7, 7]) == [0, 0]
    assert place_task(cluster, task, policy) == (2, (0,))


def test_equal_scores_go_to_the_smallest_tie_rank():
    nodes = [node("a", 64000, 8), node("b", 64000, 8), node("c", 64000, 8)]
    for name in ("dotprod", "bestfit", "packing"):
        cluster = OpenbCluster(nodes, tie_rank=[2, 1, 0])
        assert place_task(cluster, whole(1), make_policy(name)) == (2, (0,)), name


# -- fragmentation -------------------------------------------------------------------------

#: A toy target workload: half 500-milli shares, half whole GPUs, each with one core.
HALF_AND_HALF = (
    TypicalTask(1000, 1, 500, (), 0.5),
    TypicalTask(1000, 1, 1000, (), 0.5),
)


def test_fragmentation_of_a_node_by_hand():
    # GPUs [600, 1000]: a 500 share fits and no GPU is too small for it (0); a whole GPU
    # fits, the 600 is too small for it: 0.5 * 600 = 300
    assert node_fragmentation(8000, "T4", [600, 1000], HALF_AND_HALF) == 300.0
    # [100, 1000]: the 100 is too small for both kinds: 0.5 * 100 + 0.5 * 100
    assert node_fragmentation(8000, "T4", [100, 1000], HALF_AND_HALF) == 100.0
    # [600, 500]: shares fit (0); no idle GPU for a whole one: all 1100 free is a fragment
    assert node_fragmentation(8000, "T4", [600, 500], HALF_AND_HALF) == 550.0
    # too little CPU for either kind: all the free GPU share is a fragment
    assert node_fragmentation(500, "T4", [600, 1000], HALF_AND_HALF) == 1600.0
    assert node_fragmentation(8000, "T4", [1000, 1000], HALF_AND_HALF) == 0.0


def test_fragmentation_counts_cpu_tasks_and_other_models_as_fragments():
    workload = (
        TypicalTask(1000, 0, 0, (), 0.25),  # a CPU task uses no GPU share
        TypicalTask(1000, 1, 300, ("V100",), 0.75),  # cannot use a T4 at all
    )
    amounts = dict(
        zip(CATEGORIES, fragment_categories(8000, "T4", [700, 1000], workload), strict=True)
    )
    assert amounts["cpu_task_satisfied"] == 0.25 * 1700
    assert amounts["no_access"] == 0.75 * 1700
    assert node_fragmentation(8000, "T4", [700, 1000], workload) == 1700.0
    assert node_fragmentation(8000, "V100", [700, 1000], workload) == 0.25 * 1700


def test_typical_tasks_keep_the_popular_kinds_until_95_percent():
    tasks = [share(500)] * 12 + [whole(1)] * 7 + [whole(8)]
    typical = typical_tasks(tasks)  # 12 + 7 = 19 of 20 tasks: 95%, the 8-GPU kind is cut
    assert [(t.num_gpu, t.gpu_milli) for t in typical] == [(1, 500), (1, 1000)]
    assert [t.frequency for t in typical] == pytest.approx([12 / 19, 7 / 19])
    # equal counts: the larger request first (CPU, then share)
    typical = typical_tasks([share(500, cpu=2000), share(500, cpu=1000)], popularity_pct=100)
    assert [t.cpu_milli for t in typical] == [2000, 1000]
    assert math.fsum(t.frequency for t in typical) == 1.0


def test_fgd_places_where_the_fragment_falls_most():
    cluster = OpenbCluster([node("idle", 8000, 2), node("used", 8000, 2)])
    cluster.place(1, (0,), share(400, cpu=0))  # used: GPUs [600, 1000], fragment 300
    policy = FragmentationGradientDescent(HALF_AND_HALF)
    task = share(500)
    # used, GPU 0 -> [100, 1000]: fragment 100, fall 200: floor(100 sigmoid(0.2)) = 54
    # used, GPU 1 -> [600, 500]: fragment 550, fall -250: floor(100 sigmoid(-0.25)) = 43
    # idle, either GPU -> [500, 1000]: fragment 250, fall -250: 43
    assert fragment_score(300.0, 100.0) == 54 and fragment_score(300.0, 550.0) == 43
    assert policy.score(cluster, 0, task) == 43
    assert policy.score(cluster, 1, task) == 54
    assert place_task(cluster, task, policy) == (1, (0,))
    assert cluster.gpus(1) == [100, 1000]


def test_fgd_scores_whole_gpus_and_cpu_tasks_by_the_same_gradient():
    cluster = OpenbCluster([node("a", 8000, 2), node("b", 1500, 2)])
    policy = FragmentationGradientDescent(HALF_AND_HALF)
    # a: [1000, 1000] -> [0, 1000] with 7000 CPU left: fragment 0 -> 0: 50
    # b: 1500 CPU -> 500 left, below every kind's core: fragment 0 -> 1000: 26
    assert [policy.score(cluster, n, whole(1)) for n in (0, 1)] == [50, 26]
    assert policy.select_gpus(cluster, 0, whole(1), 0.0) == (0,)
    # a CPU task that leaves b without a core for the workload makes b's 2000 a fragment
    assert policy.score(cluster, 1, cpu_only(1000)) == fragment_score(0.0, 2000.0) == 11


def test_make_policy_and_the_registry():
    assert list(POLICIES) == ["random", "dotprod", "clustering", "packing", "bestfit", "fgd"]
    assert [POLICIES[name].paper_name for name in POLICIES] == [
        "Random",
        "DotProd",
        "GpuClustering",
        "GpuPacking",
        "BestFit",
        "FGD",
    ]
    with pytest.raises(ValueError, match="target workload"):
        make_policy("fgd")
    with pytest.raises(ValueError, match="unknown policy 'fifo'"):
        make_policy("fifo")


def test_go_div_truncates_toward_zero():
    assert [go_div(7, 2), go_div(-7, 2), go_div(7, -2), go_div(-7, -2)] == [3, -3, -3, 3]
