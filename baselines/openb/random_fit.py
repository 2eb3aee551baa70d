"""``random`` (the paper's Random): a uniformly random node among those that fit.

Algorithm (artifact: ``RandomScore`` plugin, GPU selection ``random``):

1. pick one of the nodes that fit the task, each with the same probability;
2. a GPU share goes to a uniformly random GPU of that node among those with enough free
   share; whole GPUs are the node's first idle ones in index order.
"""

from __future__ import annotations

from collections.abc import Sequence

from baselines.openb.base import PlacementPolicy
from baselines.openb.cluster import OpenbCluster, TaskRequest, whole_gpus

__all__ = ["RandomFit"]


class RandomFit(PlacementPolicy):
    """Random node; random GPU for a share."""

    name = "random"
    paper_name = "Random"

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """Every node that fits scores the same; :meth:`choose_node` draws among them."""
        return 0

    def choose_node(
        self, cluster: OpenbCluster, task: TaskRequest, feasible: Sequence[int], draw: float
    ) -> int:
        """``feasible[floor(draw * len(feasible))]``: each node with probability 1/n."""
        return feasible[int(draw * len(feasible))]

    def select_gpus(
        self, cluster: OpenbCluster, node: int, task: TaskRequest, draw: float
    ) -> tuple[int, ...]:
        """A random GPU that holds the share, or the first idle GPUs for whole ones."""
        free = cluster.gpus(node)
        if task.gpu_milli == 0:
            return ()
        if not task.is_gpu_share:
            return whole_gpus(free, task.num_gpu)
        holding = [gpu for gpu, share in enumerate(free) if share >= task.gpu_milli]
        return (holding[int(draw * len(holding))],)
