"""``dotprod`` (the paper's DotProd): the node whose free resources align least with the request.

Algorithm (artifact: ``DotProductScore``, ``dimExtMethod: merge``, ``normMethod: max``,
GPU selection best fit):

1. free vector of the node ``(cpu_free / 128 cores, gpu_free_total / 8 GPUs)``, request
   vector ``(cpu / 128 cores, num_gpu * gpu_milli / 8 GPUs)``;
2. ``score = floor(100 * (1 - (free . request) / 2))``: the smaller the dot product, the
   higher the score (a node the request fills tightly, relative to what it has left);
3. the best score wins; GPUs by best fit.
"""

from __future__ import annotations

from baselines.openb.base import PlacementPolicy
from baselines.openb.cluster import (
    MAX_NODE_SCORE,
    MAX_SPEC_CPU,
    MAX_SPEC_GPU,
    OpenbCluster,
    TaskRequest,
)

__all__ = ["DotProduct"]


class DotProduct(PlacementPolicy):
    """Smallest dot product of the normalised free and requested (CPU, GPU)."""

    name = "dotprod"
    paper_name = "DotProd"

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """``floor(100 * (1 - dot / 2))`` of the normalised vectors."""
        dot = (cluster.cpu_free[node] / MAX_SPEC_CPU) * (task.cpu_milli / MAX_SPEC_CPU) + (
            cluster.gpu_free_total(node) / MAX_SPEC_GPU
        ) * (task.total_gpu_milli / MAX_SPEC_GPU)
        return int(MAX_NODE_SCORE * (1 - dot / 2))
