"""The cluster state FGD's experiment places tasks on, and the rules every policy shares.

A node has CPU and host memory, a GPU model and a list of GPUs, each with a free share
(1000 milli-GPU when idle). A task asks for CPU, memory and either nothing on GPUs, a
share of one GPU (``num_gpu == 1``, ``gpu_milli < 1000``) or whole GPUs; it may name the
GPU models it accepts (``gpu_spec``). Tasks never leave, so the state only fills up.

The node filter (the Kubernetes ``NodeResourcesFit`` filter plus the GPU-share plugin's):
a node fits a task when its free CPU and free memory are at least the request, and, for a
GPU task, the node's model is one the task accepts and at least ``num_gpu`` of its GPUs
have ``gpu_milli`` free. Policies then score the nodes that fit (higher is better, integer
scores as in the Kubernetes scheduler framework); of the nodes with the highest score the
one with the smallest :attr:`OpenbCluster.tie_rank` wins. The artifact's rule: the
scheduler picks the lexicographically smallest node name among the best, and the
simulator prefixes every node name with its place in a seeded random permutation, so ties
go to a random node that stays the same for the whole run.

GPUs within the chosen node (the GPU-share plugin's default "best fit", used by DotProd,
GpuClustering, GpuPacking and BestFit): a share goes to the GPU with the least free share
that still holds it (the lowest index among equals); whole GPUs are the first free ones
in index order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpushare_env.workloads.openb import MILLI_PER_GPU, OpenbNode, OpenbTask

__all__ = [
    "MAX_NODE_SCORE",
    "MAX_SPEC_CPU",
    "MAX_SPEC_GPU",
    "OpenbCluster",
    "TaskRequest",
    "best_fit_gpus",
    "go_div",
    "whole_gpus",
]

#: The scheduler framework's score range is 0-100.
MAX_NODE_SCORE = 100
#: The artifact's normalisers of CPU and GPU in DotProd and BestFit (a 128-core, 8-GPU
#: node).  [milli-cores], [milli-GPU]
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8 * MILLI_PER_GPU


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """What a task asks for; everything a placement policy looks at.

    Attributes:
        cpu_milli: CPU.  [milli-cores]
        memory_mib: Host memory.  [MiB]
        num_gpu: GPUs (0: a CPU-only task).
        gpu_milli: Share of each GPU, 0 for a CPU-only task.  [milli-GPU]
        gpu_spec: GPU models the task accepts, as written in the trace; empty: any.
    """

    cpu_milli: int  # [milli-cores]
    memory_mib: int  # [MiB]
    num_gpu: int = 0
    gpu_milli: int = 0  # [milli-GPU] per GPU
    gpu_spec: tuple[str, ...] = ()

    @classmethod
    def from_task(cls, task: OpenbTask) -> TaskRequest:
        """The request of a task read from a pod list."""
        return cls(task.cpu_milli, task.memory_mib, task.num_gpu, task.gpu_milli, task.gpu_spec)

    @property
    def total_gpu_milli(self) -> int:
        """``num_gpu * gpu_milli``.  [milli-GPU]"""
        return self.num_gpu * self.gpu_milli

    @property
    def is_gpu_share(self) -> bool:
        """Whether the task asks for a fraction of one GPU."""
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI_PER_GPU

    @property
    def affinity(self) -> str:
        """GpuClustering's class of the task: ``share``, ``K-gpu`` or ``""`` (no GPU)."""
        if self.gpu_milli == 0:
            return ""
        return "share" if self.is_gpu_share else f"{self.num_gpu}-gpu"

    def accepts(self, model: str) -> bool:
        """Whether the task may run on GPUs of ``model`` (any model when ``gpu_spec`` is empty)."""
        return not self.gpu_spec or model in self.gpu_spec


class OpenbCluster:
    """Nodes and what is free on them; filled by :meth:`place`.

    Attributes:
        names: Node names.
        models: GPU model per node (``""`` on a CPU node).
        num_gpus: GPUs per node.  (N,)
        cpu_free: Free CPU per node.  [milli-cores] (N,)
        memory_free: Free memory per node.  [MiB] (N,)
        gpu_free: Free share per GPU, 0 beyond a node's GPUs.  [milli-GPU] (N, G)
        affinities: GpuClustering's classes (:attr:`TaskRequest.affinity`) of the GPU tasks
            placed on each node.
        tie_rank: Tie-break order between equal scores, smaller first; a permutation.  (N,)
    """

    def __init__(
        self, nodes: Sequence[OpenbNode], tie_rank: Sequence[int] | np.ndarray | None = None
    ):
        """Build an empty cluster of ``nodes``; ``tie_rank`` defaults to the nodes' order."""
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        count = len(nodes)
        self.names = [node.name for node in nodes]
        self.models = [node.model for node in nodes]
        self.num_gpus = np.array([node.num_gpu for node in nodes], dtype=np.int64)
        self.cpu_capacity = np.array([node.cpu_milli for node in nodes], dtype=np.int64)
        self.memory_capacity = np.array([node.memory_mib for node in nodes], dtype=np.int64)
        self.cpu_free = self.cpu_capacity.copy()
        self.memory_free = self.memory_capacity.copy()
        width = max(1, int(self.num_gpus.max()))
        self.gpu_free = np.zeros((count, width), dtype=np.int64)
        for index, gpus in enumerate(self.num_gpus):
            self.gpu_free[index, :gpus] = MILLI_PER_GPU
        self.affinities: list[set[str]] = [set() for _ in nodes]
        rank = np.arange(count) if tie_rank is None else np.asarray(tie_rank, dtype=np.int64)
        if sorted(rank.tolist()) != list(range(count)):
            raise ValueError(f"tie_rank must be a permutation of 0..{count - 1}")
        self.tie_rank = rank

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @property
    def capacity_milli(self) -> int:
        """GPU capacity of the cluster.  [milli-GPU]"""
        return int(self.num_gpus.sum()) * MILLI_PER_GPU

    @property
    def allocated_milli(self) -> int:
        """GPU shares handed out so far.  [milli-GPU]"""
        return self.capacity_milli - int(self.gpu_free.sum())

    def gpus(self, node: int) -> list[int]:
        """Free share of each GPU of ``node``, in index order.  [milli-GPU]"""
        return [int(free) for free in self.gpu_free[node, : self.num_gpus[node]]]

    def gpu_free_total(self, node: int) -> int:
        """Free GPU share on ``node`` in all.  [milli-GPU]"""
        return int(self.gpu_free[node].sum())

    def fits(self, node: int, task: TaskRequest) -> bool:
        """The node filter: CPU, memory, GPU model and the GPU shares (module docstring)."""
        if self.cpu_free[node] < task.cpu_milli or self.memory_free[node] < task.memory_mib:
            return False
        if task.gpu_milli == 0:
            return True
        if self.num_gpus[node] == 0 or not task.accepts(self.models[node]):
            return False
        holding = sum(free >= task.gpu_milli for free in self.gpus(node))
        return holding >= task.num_gpu

    def feasible_nodes(self, task: TaskRequest) -> list[int]:
        """Nodes that fit ``task``, in node order."""
        return [node for node in range(self.num_nodes) if self.fits(node, task)]

    def place(self, node: int, gpus: Sequence[int], task: TaskRequest) -> None:
        """Put ``task`` on ``node``, taking ``gpu_milli`` from each GPU index in ``gpus``.

        Raises:
            ValueError: The node does not fit the task, or ``gpus`` is not ``num_gpu``
                distinct GPUs of the node each with ``gpu_milli`` free.
        """
        if not self.fits(node, task):
            raise ValueError(f"node {self.names[node]} does not fit {task}")
        free = self.gpus(node)
        wanted = task.num_gpu if task.gpu_milli else 0
        if len(gpus) != wanted or len(set(gpus)) != len(gpus):
            raise ValueError(f"{task} needs {wanted} distinct GPUs, got {list(gpus)}")
        for gpu in gpus:
            if not 0 <= gpu < len(free) or free[gpu] < task.gpu_milli:
                raise ValueError(f"GPU {gpu} of node {self.names[node]} cannot hold {task}")
        self.cpu_free[node] -= task.cpu_milli
        self.memory_free[node] -= task.memory_mib
        for gpu in gpus:
            self.gpu_free[node, gpu] -= task.gpu_milli
        if task.affinity:
            self.affinities[node].add(task.affinity)


def best_fit_gpus(free: Sequence[int], task: TaskRequest) -> tuple[int, ...]:
    """The GPU-share plugin's default GPU choice on one node (module docstring).

    Args:
        free: Free share of each GPU of the node, in index order.  [milli-GPU]
        task: A task the node fits.
    """
    if task.gpu_milli == 0:
        return ()
    if not task.is_gpu_share:
        return whole_gpus(free, task.num_gpu)
    best = -1
    for gpu, share in enumerate(free):
        if share >= task.gpu_milli and (best < 0 or share < free[best]):
            best = gpu
    return (best,)


def whole_gpus(free: Sequence[int], count: int) -> tuple[int, ...]:
    """The first ``count`` idle GPUs in index order."""
    idle = [gpu for gpu, share in enumerate(free) if share == MILLI_PER_GPU]
    if len(idle) < count:
        raise ValueError(f"{count} idle GPUs wanted, the node has {len(idle)}")
    return tuple(idle[:count])


def go_div(numerator: int, denominator: int) -> int:
    """Integer division truncated toward zero, as Go's ``/`` (Python's ``//`` floors)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient
