"""FGD's experiment: tasks placed one by one until they ask for 130% of the cluster's GPUs.

The protocol of Weng et al. (ATC'23, section 6.1) as their artifact runs it
(``experiments/run_scripts``, ``pkg/simulator``):

1. the pod list, sorted by name, is the *original workload*; its request kinds give the
   target workload of FGD and of the fragmentation metric (``fragmentation.py``);
2. with the run's seed the original tasks are shuffled; then, while the GPU requests of
   the list are below ``tuning_ratio`` (1.3) times the cluster's GPU capacity, tasks drawn
   uniformly (with replacement) from the original workload are appended after them; the
   draw that would overshoot ends it (the artifact compares the running total plus the
   drawn task's *per-GPU* share with the target, so a multi-GPU draw may overshoot by up to
   7 GPUs, 0.1% of the ``alibaba_openb`` cluster; kept). A list already above the target
   loses uniformly drawn tasks until it is not;
3. the seed also draws a random tie-break order of the nodes (the artifact's random node
   name prefixes);
4. the tasks arrive in that order, each placed by the policy or failing if no node fits;
   nothing leaves and nothing is retried;
5. after each arrival: the arrived workload (GPU requests so far, failed ones included, in
   % of capacity), the GPU allocation ratio (GPU shares handed out, in % of capacity, on
   a milli-GPU basis) and the fragmentation ratio (the cluster's expected fragment in %
   of its free GPU share);
6. per integer arrived percentage ``k`` = 0..130, the mean over the arrivals whose
   arrived percentage rounds (half to even) to ``k``, or, if there is none, over those
   that round to ``k - 1 .. k + 1`` (the artifact's ``analysis/merge_*_discrete.py``;
   each allocation ratio rounded to 0.01 first, as it logs them).

The randomness of a run comes from one seeded ``numpy.random.Generator``, split into
independent streams (order, ties, draws for ``random``), so every policy of a seed sees
the same task order and the same tie-break order. The artifact's Go ``math/rand`` is not
reproduced: per-seed figures differ from the artifact's, their medians over seeds are
what is compared.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from baselines.openb import make_policy
from baselines.openb.base import place_task
from baselines.openb.cluster import OpenbCluster, TaskRequest
from baselines.openb.fragmentation import TypicalTask, cluster_fragmentation, typical_tasks
from gpushare_env.compiled._core import place_static
from gpushare_env.sim.core_inputs import ClusterInput
from gpushare_env.workloads.openb import (
    MILLI_PER_GPU,
    OpenbNode,
    node_models,
    read_openb_pods,
)

__all__ = [
    "ARTIFACT_FIRST_SEED",
    "ENGINES",
    "MAX_GPUS_PER_NODE",
    "TUNING_RATIO",
    "PlacementRun",
    "Workload",
    "arrival_order",
    "discretize",
    "load_workload",
    "run_policy",
    "run_seed",
]

#: Workload size as a multiple of the cluster's GPU capacity.
TUNING_RATIO = 1.3
#: The artifact's seeds are 42, 43, ...; the reproduction's seeds start there too.
ARTIFACT_FIRST_SEED = 42
#: ``core``: the simulator's compiled core (its ``share_*`` rules and node fragments, with
#: the run's tie order; ``place_static``); ``reference``: the Python classes, the oracle.
ENGINES: tuple[str, ...] = ("core", "reference")
#: Earlier names of the engines.
_ENGINE_ALIASES = {"compiled": "core"}

#: GPUs per node the placement runs can hold (a task's GPUs are a 64-bit mask).
MAX_GPUS_PER_NODE = 62


@dataclass(frozen=True, slots=True)
class Workload:
    """An original workload: a pod list sorted by name, and its target workload.

    Attributes:
        name: The pod list's name (its file stem, ``openb_pod_list_default``).
        tasks: The tasks' requests, sorted by task name.
        typical: The target workload (``fragmentation.typical_tasks`` of ``tasks``).
    """

    name: str
    tasks: tuple[TaskRequest, ...]
    typical: tuple[TypicalTask, ...]

    @classmethod
    def from_requests(cls, name: str, tasks: Sequence[TaskRequest]) -> Workload:
        """A workload of ``tasks`` in the given order (already sorted)."""
        return cls(name, tuple(tasks), typical_tasks(tasks))


@dataclass(frozen=True, slots=True)
class PlacementRun:
    """One run: every arrival, where it went, and the cluster after it.

    Attributes:
        workload: The workload's name.
        policy: The policy's name.
        seed: The run's seed.
        capacity_milli: The cluster's GPU capacity.  [milli-GPU]
        order: Index into ``Workload.tasks`` of each arrival.  (M,)
        node: Node of each arrival, -1 if it failed.  (M,)
        gpus: Bit mask of the GPUs each arrival took.  (M,)
        arrived_milli: GPU requested by the arrivals so far.  [milli-GPU] (M,)
        allocated_milli: GPU shares handed out after each arrival.  [milli-GPU] (M,)
        fragment_milli: The cluster's expected fragment after each arrival.  [milli-GPU] (M,)
    """

    workload: str
    policy: str
    seed: int
    capacity_milli: int
    order: np.ndarray  # (M,)
    node: np.ndarray  # (M,)
    gpus: np.ndarray  # (M,)
    arrived_milli: np.ndarray  # (M,)
    allocated_milli: np.ndarray  # (M,)
    fragment_milli: np.ndarray  # (M,)

    @property
    def arrived_pct(self) -> np.ndarray:
        """Arrived workload in % of the GPU capacity.  (M,)"""
        return self.arrived_milli / self.capacity_milli * 100

    @property
    def allocated_pct(self) -> np.ndarray:
        """GPU allocation ratio in %.  (M,)"""
        return self.allocated_milli / self.capacity_milli * 100

    @property
    def frag_ratio_pct(self) -> np.ndarray:
        """Fragment in % of the free GPU share (0 on a full cluster).  (M,)"""
        idle = (self.capacity_milli - self.allocated_milli).astype(np.float64)
        return np.divide(100 * self.fragment_milli, idle, out=np.zeros_like(idle), where=idle > 0)

    @property
    def failed(self) -> int:
        """Arrivals no node fitted."""
        return int((self.node < 0).sum())


def load_workload(path: str | os.PathLike[str], nodes: Sequence[OpenbNode]) -> Workload:
    """Read a pod list for the cluster ``nodes`` (its ``gpu_spec`` checked against them)."""
    tasks = read_openb_pods(path, known_models=node_models(nodes))
    ordered = sorted(tasks, key=lambda task: task.name)
    name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    return Workload.from_requests(name, [TaskRequest.from_task(task) for task in ordered])


def arrival_order(
    tasks: Sequence[TaskRequest],
    capacity_milli: int,
    rng: np.random.Generator,
    tuning_ratio: float = TUNING_RATIO,
) -> np.ndarray:
    """Steps 2 of the module docstring: indices into ``tasks``, in arrival order.

    Args:
        tasks: The original workload, sorted by name.
        capacity_milli: The cluster's GPU capacity.  [milli-GPU]
        rng: The order stream of the run.
        tuning_ratio: Target GPU requests as a multiple of the capacity.
    """
    if not tasks:
        raise ValueError("the workload has no tasks")
    per_gpu = np.array([task.gpu_milli for task in tasks], dtype=np.int64)
    total_per_task = np.array([task.total_gpu_milli for task in tasks], dtype=np.int64)
    order = list(rng.permutation(len(tasks)))
    total = int(total_per_task.sum())
    target = tuning_ratio * capacity_milli
    if total <= 0:
        raise ValueError("the workload asks for no GPU; it cannot be scaled to the capacity")
    if total < target:
        while True:
            drawn = int(rng.integers(len(tasks)))
            if total + per_gpu[drawn] > target:
                break
            total += int(total_per_task[drawn])
            order.append(drawn)
    else:
        while total > target:
            position = int(rng.integers(len(order)))
            total -= int(total_per_task[order.pop(position)])
    return np.asarray(order, dtype=np.int64)


def run_seed(
    workload: Workload,
    nodes: Sequence[OpenbNode],
    policy: str,
    seed: int,
    *,
    tuning_ratio: float = TUNING_RATIO,
    engine: str = "core",
) -> PlacementRun:
    """One run of the protocol: ``policy`` on ``workload`` with seed ``seed``."""
    order_rng, tie_rng, draw_rng = np.random.default_rng(seed).spawn(3)
    capacity = sum(node.num_gpu for node in nodes) * MILLI_PER_GPU
    order = arrival_order(workload.tasks, capacity, order_rng, tuning_ratio)
    tie_rank = tie_rng.permutation(len(nodes))
    draws = draw_rng.random((len(order), 2)) if policy == "random" else None
    return run_policy(workload, nodes, policy, order, tie_rank, draws, seed=seed, engine=engine)


def run_policy(
    workload: Workload,
    nodes: Sequence[OpenbNode],
    policy: str,
    order: np.ndarray,
    tie_rank: np.ndarray,
    draws: np.ndarray | None = None,
    *,
    seed: int = 0,
    engine: str = "core",
) -> PlacementRun:
    """Place ``workload.tasks[order]`` on an empty cluster of ``nodes``, in order.

    Args:
        workload: The original workload and its target workload.
        nodes: The cluster.
        policy: A name of ``baselines.openb.POLICIES``.
        order: Index into ``workload.tasks`` of each arrival.  (M,)
        tie_rank: The nodes' tie-break order, a permutation.  (N,)
        draws: Uniform numbers in [0, 1), two per arrival (``random`` only; zeros if
            ``None``).  (M, 2)
        seed: Recorded in the result.
        engine: One of :data:`ENGINES` (``compiled``, the earlier name of ``core``, too).
    """
    make_policy(policy, workload.typical)  # checks the name
    widest = max(node.num_gpu for node in nodes)
    if widest > MAX_GPUS_PER_NODE:
        raise ValueError(
            f"a node has {widest} GPUs; the placement runs hold at most {MAX_GPUS_PER_NODE}"
            " per node (GPU sets are bit masks)"
        )
    order = np.asarray(order, dtype=np.int64)
    if draws is None:
        draws = np.zeros((len(order), 2))
    draws = np.ascontiguousarray(draws, dtype=np.float64)
    if draws.shape != (len(order), 2):
        raise ValueError(f"draws must have shape ({len(order)}, 2), got {draws.shape}")
    engine = _ENGINE_ALIASES.get(engine, engine)
    if engine == "core":
        placed = _run_core(workload, nodes, policy, order, tie_rank, draws)
    elif engine == "reference":
        placed = _run_reference(workload, nodes, policy, order, tie_rank, draws)
    else:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    requested = np.array([workload.tasks[i].total_gpu_milli for i in order], dtype=np.int64)
    return PlacementRun(
        workload=workload.name,
        policy=policy,
        seed=seed,
        capacity_milli=sum(node.num_gpu for node in nodes) * MILLI_PER_GPU,
        order=order,
        node=placed["node"],
        gpus=placed["gpus"],
        arrived_milli=np.cumsum(requested),
        allocated_milli=placed["allocated"],
        fragment_milli=placed["fragmentation"],
    )


def discretize(run: PlacementRun, tuning_ratio: float = TUNING_RATIO) -> list[dict[str, float]]:
    """Step 6 of the module docstring: one row per integer arrived percentage.

    Returns:
        Rows ``{"arrived_pct", "allocated_pct", "frag_ratio_pct"}`` for 0..130 (NaN where
        no arrival is within one percentage point), each mean rounded to 0.01.
    """
    arrived = np.round(run.arrived_pct)  # half to even, as Python's round()
    allocated = np.round(run.allocated_pct, 2)
    fragment = run.frag_ratio_pct
    rows = []
    for percent in range(round(tuning_ratio * 100) + 1):
        chosen = arrived == percent
        if not chosen.any():
            chosen = (arrived >= percent - 1) & (arrived <= percent + 1)
        if chosen.any():
            allocation = round(float(allocated[chosen].mean()), 2)
            frag_ratio = round(float(fragment[chosen].mean()), 2)
        else:
            allocation = frag_ratio = math.nan
        rows.append(
            {"arrived_pct": percent, "allocated_pct": allocation, "frag_ratio_pct": frag_ratio}
        )
    return rows


# -- engines -----------------------------------------------------------------------------


def _run_reference(
    workload: Workload,
    nodes: Sequence[OpenbNode],
    policy_name: str,
    order: np.ndarray,
    tie_rank: np.ndarray,
    draws: np.ndarray,
) -> dict[str, np.ndarray]:
    cluster = OpenbCluster(nodes, tie_rank)
    policy = make_policy(policy_name, workload.typical)
    count = len(order)
    node_of = np.full(count, -1, dtype=np.int64)
    gpus_of = np.zeros(count, dtype=np.int64)
    allocated = np.zeros(count, dtype=np.int64)
    fragment = np.zeros(count, dtype=np.float64)
    for arrival, index in enumerate(order):
        placed = place_task(
            cluster,
            workload.tasks[index],
            policy,
            (float(draws[arrival, 0]), float(draws[arrival, 1])),
        )
        if placed is not None:
            node_of[arrival] = placed[0]
            gpus_of[arrival] = sum(1 << gpu for gpu in placed[1])
        allocated[arrival] = cluster.allocated_milli
        fragment[arrival] = cluster_fragmentation(cluster, workload.typical)
    return {"node": node_of, "gpus": gpus_of, "allocated": allocated, "fragmentation": fragment}


def _run_core(
    workload: Workload,
    nodes: Sequence[OpenbNode],
    policy: str,
    order: np.ndarray,
    tie_rank: np.ndarray,
    draws: np.ndarray,
) -> dict[str, np.ndarray]:
    """The run on the simulator's core: its ``share_<policy>`` rule on a cluster of
    ``nodes`` (GPUs numbered node by node), ties by ``tie_rank``."""
    models = sorted(node_models(nodes))
    if len(models) > 62:
        raise ValueError(f"the core handles up to 62 GPU models, got {len(models)}")
    index = {model: i for i, model in enumerate(models)}

    def model_mask(spec: tuple[str, ...]) -> int:
        """The models of ``spec`` as core model bits (-1: any model)."""
        return sum(1 << index[m] for m in set(spec) if m in index) if spec else -1

    per_node = np.array([node.num_gpu for node in nodes], dtype=np.int64)
    width = max(1, int(per_node.max()))
    columns = np.arange(width)
    first = np.cumsum(per_node) - per_node
    gpu_node = np.repeat(np.arange(len(nodes)), per_node)
    node_model = np.array([index.get(node.model, 0) for node in nodes], dtype=np.int64)
    tasks = workload.tasks
    shares = [t.gpu_milli for t in tasks if t.num_gpu and t.gpu_milli > 0]
    cluster = ClusterInput(
        capacity=np.full(len(gpu_node), float(MILLI_PER_GPU)),
        gpu_node=gpu_node,
        node_gpus=np.where(columns < per_node[:, None], first[:, None] + columns, -1),
        gpu_speed=np.ones(len(gpu_node)),
        # more holders than the smallest share fits: the rules' holder limit never binds
        max_jobs_per_gpu=MILLI_PER_GPU // min(shares, default=MILLI_PER_GPU) + 1,
        gpu_model=node_model[gpu_node],
        node_cpu_milli=np.array([node.cpu_milli for node in nodes], dtype=np.float64),
        node_memory_mib=np.array([node.memory_mib for node in nodes], dtype=np.float64),
    )
    # a task of no GPU share holds no GPU (as the reference classes place it) and may go
    # to any node: no GPU, any model
    with_gpus = np.array([bool(t.num_gpu and t.gpu_milli) for t in tasks])
    num_gpus = np.where(with_gpus, [t.num_gpu for t in tasks], 0)
    share = np.where(with_gpus, [t.gpu_milli for t in tasks], 0)
    mask = np.array(
        [model_mask(t.gpu_spec) if gpu else -1 for t, gpu in zip(tasks, with_gpus, strict=True)],
        dtype=np.int64,
    )
    # FGD caches its scores per node and kind of request (what they depend on); the
    # other rules read no kind
    kinds: dict[tuple[int, int, int, tuple[str, ...]], int] = {}
    kind = np.array(
        [
            kinds.setdefault((t.cpu_milli, t.num_gpu, t.gpu_milli, t.gpu_spec), len(kinds))
            if policy == "fgd"
            else 0
            for t in tasks
        ],
        dtype=np.int64,
    )
    target = [
        (float(t.cpu_milli), t.num_gpu, float(t.gpu_milli), model_mask(t.gpu_spec), t.frequency)
        for t in workload.typical
    ]
    return place_static(
        f"share_{policy}",
        cluster,
        target,
        np.asarray(tie_rank, dtype=np.int64).tolist(),
        num_gpus=num_gpus[order].tolist(),
        share_milli=share[order].astype(np.float64).tolist(),
        cpu_milli=np.array([t.cpu_milli for t in tasks], dtype=np.float64)[order].tolist(),
        host_memory_mib=np.array([t.memory_mib for t in tasks], dtype=np.float64)[order].tolist(),
        model_mask=mask[order].tolist(),
        request_kind=kind[order].tolist(),
        node_draw=draws[:, 0].tolist(),
        gpu_draw=draws[:, 1].tolist(),
    )
