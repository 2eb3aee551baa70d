"""What a placement policy of FGD's experiment is, and how one task gets placed.

A policy scores each node that fits the task (an integer, higher is better, as a
Kubernetes score plugin does), may rescale the scores over those nodes
(:meth:`PlacementPolicy.normalize`), and chooses GPUs on the winning node. The node with
the highest score wins; among equals the smallest ``tie_rank`` (``cluster.py``). A task no
node fits fails and is not retried.

Randomness comes in as two numbers in [0, 1) per task (``draws``), drawn by the caller
from its seeded generator: only ``random`` uses them, for the node and for the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from baselines.openb.cluster import OpenbCluster, TaskRequest, best_fit_gpus

__all__ = ["PlacementPolicy", "place_task"]


class PlacementPolicy:
    """Base class: best score wins, GPUs by the GPU-share plugin's best fit."""

    #: The policy's name in the reproduction (``random``, ``dotprod``, ...).
    name: ClassVar[str] = ""
    #: The name the paper and its artifact use (``Random``, ``DotProd``, ...).
    paper_name: ClassVar[str] = ""

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """Score of ``node`` for ``task`` (the node fits the task)."""
        raise NotImplementedError

    def normalize(self, scores: list[int]) -> list[int]:
        """Rescale the scores of the nodes that fit (identity unless a policy says otherwise)."""
        return scores

    def choose_node(
        self, cluster: OpenbCluster, task: TaskRequest, feasible: Sequence[int], draw: float
    ) -> int:
        """The node with the best score, ties to the smallest ``tie_rank``."""
        scores = self.normalize([self.score(cluster, node, task) for node in feasible])
        best = max(range(len(feasible)), key=lambda i: (scores[i], -cluster.tie_rank[feasible[i]]))
        return feasible[best]

    def select_gpus(
        self, cluster: OpenbCluster, node: int, task: TaskRequest, draw: float
    ) -> tuple[int, ...]:
        """GPUs of ``node`` for ``task``: best fit (``cluster.best_fit_gpus``)."""
        return best_fit_gpus(cluster.gpus(node), task)


def place_task(
    cluster: OpenbCluster,
    task: TaskRequest,
    policy: PlacementPolicy,
    draws: tuple[float, float] = (0.0, 0.0),
) -> tuple[int, tuple[int, ...]] | None:
    """Place ``task`` by ``policy``: the node and GPUs it went to, or ``None`` if none fits."""
    feasible = cluster.feasible_nodes(task)
    if not feasible:
        return None
    node = policy.choose_node(cluster, task, feasible, draws[0])
    gpus = policy.select_gpus(cluster, node, task, draws[1])
    cluster.place(node, gpus, task)
    return node, gpus
