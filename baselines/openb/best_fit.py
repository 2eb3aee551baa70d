"""``bestfit`` (the paper's BestFit): the node with the least free resources left after placing.

Algorithm (artifact: ``BestFitScore``, GPU selection best fit):

1. left-over ``r = 0.5 * (cpu_free - cpu) / 128 cores + 0.5 * (gpu_free_total -
   num_gpu * gpu_milli) / 8 GPUs``;
2. ``score = floor(100 * (1 - r))``, then rescaled over the nodes that fit to 0-100
   (``(score - lowest) * 100 // (highest - lowest)``, all 0 when they are equal);
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

__all__ = ["BestFit"]


class BestFit(PlacementPolicy):
    """Least weighted CPU and GPU left over."""

    name = "bestfit"
    paper_name = "BestFit"

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """``floor(100 * (1 - left-over))`` (module docstring)."""
        left_over = (cluster.cpu_free[node] - task.cpu_milli) / MAX_SPEC_CPU * 0.5 + (
            cluster.gpu_free_total(node) - task.total_gpu_milli
        ) / MAX_SPEC_GPU * 0.5
        return int((1.0 - left_over) * MAX_NODE_SCORE)

    def normalize(self, scores: list[int]) -> list[int]:
        """Min-max rescaling to 0-100 over the nodes that fit (integer division)."""
        lowest, highest = min(scores), max(scores)
        if highest == lowest:
            return [0] * len(scores)
        return [(score - lowest) * MAX_NODE_SCORE // (highest - lowest) for score in scores]
