"""FGD's six placement rules in the core (``share_*`` strategies, the shares model)
against the paper's policy classes of ``baselines.openb``.

With no departure the core's rules must make the paper's static experiment's choices:
the same node and GPUs for every job placed in arrival order, on random clusters (GPU
models, CPU and host-memory limits) and on a slice of the real trace. The classes break
ties by ``tie_rank``; the core by node index, so the reference gets ``tie_rank`` = the
node order. ``share_random`` reads the draws the simulator made for each job.
"""

from __future__ import annotations

import numpy as np
import pytest

from baselines.openb import POLICIES, OpenbCluster, TaskRequest, make_policy, place_task
from baselines.openb.fragmentation import typical_tasks
from gpushare_env.sim import ClusterConfig, JobSpec, NodeGroup, SimConfig, Simulator, make_cluster
from gpushare_env.sim.cluster import shares_unfit_reason
from gpushare_env.sim.placement import SHARE_RULES
from gpushare_env.sim.types import Request
from gpushare_env.workloads.openb import (
    OpenbNode,
    alibaba_openb_nodes,
    read_openb_pods,
    shipped_pod_list_path,
)

SHARES = SimConfig(sharing="shares")
MODELS = ("T4", "V100", "G2")


def random_case(seed: int) -> tuple[list[OpenbNode], list[TaskRequest]]:
    """3-10 GPU nodes and 40-160 tasks of every kind (CPU-only ones too), some asking for
    models."""
    rng = np.random.default_rng(seed)
    nodes = []
    for index in range(int(rng.integers(3, 11))):
        gpus = int(rng.choice([1, 2, 4, 8]))
        cpu = int(rng.choice([4000, 16000, 32000, 96000]))
        memory = int(rng.choice([16384, 65536, 262144]))
        nodes.append(OpenbNode(f"n{index:02d}", cpu, memory, gpus, str(rng.choice(MODELS))))
    tasks = []
    for _ in range(int(rng.integers(40, 161))):
        cpu = int(rng.choice([0, 500, 1000, 4000, 8000, 24000]))
        memory = int(rng.choice([0, 1024, 8192, 32768]))
        spec: tuple[str, ...] = ()
        if rng.random() < 0.2:
            spec = tuple(sorted(set(rng.choice(MODELS, size=int(rng.integers(1, 3))).tolist())))
        if rng.random() < 0.12:  # CPU-only: no GPU, any node with the CPU and memory
            tasks.append(TaskRequest(cpu, memory, 0, 0, spec))
        elif rng.random() < 0.55:
            milli = int(rng.choice([100, 230, 250, 300, 470, 500, 650, 810]))
            tasks.append(TaskRequest(cpu, memory, 1, milli, spec))
        else:
            count = int(rng.choice([1, 1, 1, 2, 4, 8]))
            tasks.append(TaskRequest(cpu, memory, count, 1000, spec))
    return nodes, fitting(nodes, tasks)


def fitting(nodes: list[OpenbNode], tasks: list[TaskRequest]) -> list[TaskRequest]:
    """The tasks an empty cluster holds (a simulator refuses the others up front)."""
    cluster = make_cluster(cluster_of(nodes))
    return [
        t
        for t in tasks
        if shares_unfit_reason(
            t.num_gpu, Request(t.gpu_milli, t.cpu_milli, t.memory_mib, t.gpu_spec), cluster
        )
        is None
    ]


def cluster_of(nodes: list[OpenbNode]) -> ClusterConfig:
    groups = [
        NodeGroup(1, n.num_gpu, "v100", None, n.cpu_milli, n.memory_mib, n.model) for n in nodes
    ]
    return ClusterConfig(tuple(groups), max_jobs_per_gpu=64)


def jobs_of(tasks: list[TaskRequest]) -> list[JobSpec]:
    """One job per task, all arriving at 0 in task order, none ever finishing."""
    return [
        JobSpec(
            i, 0.0, "resnet50", 64, t.num_gpu, 10**8, 8.0 if t.num_gpu else 0.0,
            1.0 if t.num_gpu else 0.0, 0.158,
            Request(t.gpu_milli, t.cpu_milli, t.memory_mib, t.gpu_spec),
        )
        for i, t in enumerate(tasks)
    ]  # fmt: skip


def placements(nodes, tasks, rule: str) -> tuple[list, list]:
    """(core, reference): each task's ``(node, GPU columns)``, or ``None``."""
    cluster = make_cluster(cluster_of(nodes))
    sim = Simulator(jobs_of(tasks), cluster, SHARES, rng=np.random.default_rng(7))
    sim.advance()  # every job arrives at 0
    draws = sim.core.inputs.jobs
    reference = OpenbCluster(nodes)
    policy = make_policy(rule.removeprefix("share_"), typical_tasks(tasks))
    core_out, reference_out = [], []
    for job_id, task in enumerate(tasks):
        got = sim.find_placement(job_id, rule)
        if got is not None:
            sim.schedule(job_id, rule)
            node = sim.jobs[job_id].node
            columns = tuple(int(np.flatnonzero(cluster.node_gpus[node] == g)[0]) for g in got)
            got = (node, columns)
        core_out.append(got)
        rank = sim.core.rank_of[job_id]
        placed = place_task(reference, task, policy, (draws.node_draw[rank], draws.gpu_draw[rank]))
        reference_out.append(None if placed is None else (placed[0], tuple(placed[1])))
    sim.check_invariants()
    return core_out, reference_out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("rule", SHARE_RULES)
def test_the_core_rules_place_as_the_paper_policies_on_random_cases(seed, rule):
    nodes, tasks = random_case(seed)
    core, reference = placements(nodes, tasks, rule)
    assert core == reference


def test_the_random_cases_fill_clusters_and_the_rules_differ():
    nodes, tasks = random_case(3)
    runs = {rule: placements(nodes, tasks, rule)[0] for rule in SHARE_RULES}
    assert any(None in run for run in runs.values())  # failures are exercised
    assert sum(t.num_gpu == 0 for t in tasks) > 5  # and CPU-only tasks
    assert len({tuple(map(str, run)) for run in runs.values()}) == len(SHARE_RULES)


def test_the_core_rules_place_as_the_paper_policies_on_the_real_trace():
    # the first 400 tasks of the default pod list on the first 60 GPU nodes of the node
    # list: every kind of request of the trace, models, node limits and CPU-only tasks
    nodes = [n for n in alibaba_openb_nodes() if n.num_gpu > 0][:60]
    pods = read_openb_pods(shipped_pod_list_path())
    tasks = fitting(nodes, [TaskRequest.from_task(p) for p in pods][:400])
    assert sum(t.num_gpu == 0 for t in tasks) > 20
    for rule in ("share_fgd", "share_packing", "share_bestfit"):
        core, reference = placements(nodes, tasks, rule)
        assert core == reference, rule
        assert sum(p is not None for p in core) > 100


def test_the_policies_of_baselines_openb_are_the_core_rules():
    assert [f"share_{name}" for name in POLICIES] == list(SHARE_RULES)
