"""The protocol's two engines: the simulator's core (its ``share_*`` rules and node
fragments, ``place_static``) against the Python policy classes, the oracle: the same node
and GPUs for every task, the same allocation and fragment to the bit, on random clusters
(nodes without GPUs too) and workloads and on a slice of the real trace."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.openb import POLICIES, TaskRequest
from baselines.openb.protocol import (
    ENGINES,
    Workload,
    arrival_order,
    load_workload,
    run_policy,
)
from gpushare_env.compiled._core import place_static
from gpushare_env.workloads.openb import (
    OpenbNode,
    alibaba_openb_nodes,
    shipped_pod_list_path,
)

MODELS = ("T4", "V100", "G2")


def random_case(seed: int) -> tuple[list[OpenbNode], Workload]:
    """3-10 nodes (some without GPUs) and 40-160 tasks of every kind, some with models."""
    rng = np.random.default_rng(seed)
    nodes = []
    for index in range(int(rng.integers(3, 11))):
        gpus = int(rng.choice([0, 1, 2, 4, 8], p=[0.1, 0.2, 0.3, 0.2, 0.2]))
        model = str(rng.choice(MODELS)) if gpus else ""
        cpu = int(rng.choice([4000, 16000, 32000, 96000]))
        memory = int(rng.choice([16384, 65536, 262144]))
        nodes.append(OpenbNode(f"n{index:02d}", cpu, memory, gpus, model))
    tasks = []
    for _ in range(int(rng.integers(40, 161))):
        kind = rng.random()
        cpu = int(rng.choice([0, 500, 1000, 4000, 8000, 24000]))
        memory = int(rng.choice([0, 1024, 8192, 32768]))
        spec: tuple[str, ...] = ()
        if rng.random() < 0.2:
            spec = tuple(sorted(set(rng.choice(MODELS, size=int(rng.integers(1, 3))).tolist())))
        if kind < 0.15:
            tasks.append(TaskRequest(cpu, memory))
        elif kind < 0.6:
            milli = int(rng.choice([100, 230, 250, 300, 470, 500, 650, 810]))
            tasks.append(TaskRequest(cpu, memory, 1, milli, spec))
        else:
            count = int(rng.choice([1, 1, 1, 2, 4, 8]))
            tasks.append(TaskRequest(cpu, memory, count, 1000, spec))
    return nodes, Workload.from_requests(f"case{seed}", tasks)


@pytest.mark.parametrize("seed", range(12))
def test_the_core_and_the_python_policies_place_alike_on_random_cases(seed):
    nodes, workload = random_case(seed)
    rng = np.random.default_rng(1000 + seed)
    capacity = max(1000, sum(node.num_gpu for node in nodes) * 1000)
    order = arrival_order(workload.tasks, capacity, rng)
    tie_rank = rng.permutation(len(nodes))
    draws = rng.random((len(order), 2))
    for policy in POLICIES:
        runs = [
            run_policy(workload, nodes, policy, order, tie_rank, draws, engine=engine)
            for engine in ("core", "reference")
        ]
        core, reference = runs
        assert np.array_equal(core.node, reference.node), policy
        assert np.array_equal(core.gpus, reference.gpus), policy
        assert np.array_equal(core.allocated_milli, reference.allocated_milli), policy
        assert np.array_equal(core.fragment_milli, reference.fragment_milli), policy


def test_the_core_and_the_python_policies_place_alike_on_the_real_trace():
    nodes = alibaba_openb_nodes()[::100]  # 13 nodes of the real cluster
    workload = load_workload(shipped_pod_list_path(), nodes)
    rng = np.random.default_rng(7)
    order = rng.permutation(len(workload.tasks))[:150]
    tie_rank = rng.permutation(len(nodes))
    draws = rng.random((len(order), 2))
    for policy in POLICIES:
        core, reference = (
            run_policy(workload, nodes, policy, order, tie_rank, draws, engine=engine)
            for engine in ("core", "reference")
        )
        assert np.array_equal(core.node, reference.node), policy
        assert np.array_equal(core.gpus, reference.gpus), policy
        assert np.array_equal(core.fragment_milli, reference.fragment_milli), policy
        assert core.failed > 0  # the slice is overloaded: failures are compared too


def test_the_random_cases_exercise_failures_models_and_every_policy_differently():
    """The equivalence above would prove little if the cases were trivial."""
    failures = cpu_nodes = restricted = 0
    distinct = []
    for seed in range(12):
        nodes, workload = random_case(seed)
        rng = np.random.default_rng(1000 + seed)
        order = arrival_order(workload.tasks, sum(n.num_gpu for n in nodes) * 1000, rng)
        tie_rank = rng.permutation(len(nodes))
        draws = rng.random((len(order), 2))
        runs = [run_policy(workload, nodes, p, order, tie_rank, draws) for p in POLICIES]
        failures += sum(run.failed > 0 for run in runs)
        distinct.append(len({run.node.tobytes() for run in runs}))
        cpu_nodes += any(node.num_gpu == 0 for node in nodes)
        restricted += any(task.gpu_spec for task in workload.tasks)
    assert failures >= 30  # tasks fail in most runs (130% of the GPUs arrive)
    assert min(distinct) >= 4  # the six policies place differently
    assert cpu_nodes >= 3 and restricted == 12


def test_an_unknown_engine_or_bad_draws_are_refused():
    nodes, workload = random_case(0)
    order = np.arange(len(workload.tasks))
    with pytest.raises(ValueError, match="unknown engine"):
        run_policy(workload, nodes, "fgd", order, np.arange(len(nodes)), engine="go")
    with pytest.raises(ValueError, match="draws must have shape"):
        run_policy(workload, nodes, "random", order, np.arange(len(nodes)), np.zeros((2, 2)))


def test_nodes_wider_than_a_gpu_mask_are_refused():
    nodes = [OpenbNode("wide", 64000, 65536, 63, "T4")]
    workload = Workload.from_requests("w", [TaskRequest(1000, 0, 1, 500)])
    with pytest.raises(ValueError, match="at most 62 per node"):
        run_policy(workload, nodes, "fgd", np.zeros(1, dtype=np.int64), np.zeros(1))


def test_the_engines_are_the_core_and_the_reference_and_compiled_names_the_core():
    assert ENGINES == ("core", "reference")
    nodes, workload = random_case(1)
    order = np.arange(len(workload.tasks))
    tie_rank = np.arange(len(nodes))[::-1]
    core, compiled = (
        run_policy(workload, nodes, "fgd", order, tie_rank, engine=engine)
        for engine in ("core", "compiled")
    )
    assert np.array_equal(core.node, compiled.node)
    assert np.array_equal(core.fragment_milli, compiled.fragment_milli)


def test_the_core_engine_refuses_a_bad_tie_order_and_a_rule_over_time():
    nodes, workload = random_case(2)
    order = np.arange(len(workload.tasks))
    with pytest.raises(ValueError, match="permutation"):
        run_policy(workload, nodes, "bestfit", order, np.zeros(len(nodes), dtype=np.int64))
    with pytest.raises(ValueError, match="unknown share rule 'pack'"):
        place_static(
            "pack", None, (), [], num_gpus=[], share_milli=[], cpu_milli=[],
            host_memory_mib=[], model_mask=[], request_kind=[], node_draw=[], gpu_draw=[],
        )  # fmt: skip
