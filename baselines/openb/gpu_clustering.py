"""``clustering`` (the paper's GpuClustering): tasks of one kind together.

A task's kind: a share of one GPU, or ``K`` whole GPUs (``TaskRequest.affinity``).
Algorithm (artifact: ``GpuClusteringScore``, GPU selection best fit), for a GPU task:

1. a node already holding only tasks of the same kind scores 75-100;
2. a node holding that kind among others scores 50-75;
3. an empty node (no GPU task) scores 25-50;
4. a node holding only other kinds scores 0-25;

within its band a node scores ``25 * (8 GPUs - gpu_free_total) / 8 GPUs`` more (integer
arithmetic), so fuller nodes come first. A CPU-only task scores 0 everywhere (ties decide).
GPUs by best fit.
"""

from __future__ import annotations

from baselines.openb.base import PlacementPolicy
from baselines.openb.cluster import MAX_NODE_SCORE, MAX_SPEC_GPU, OpenbCluster, TaskRequest, go_div

__all__ = ["GpuClustering"]


class GpuClustering(PlacementPolicy):
    """Prefer nodes whose GPU tasks are all of the task's kind."""

    name = "clustering"
    paper_name = "GpuClustering"

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """Band by the kinds already on the node, plus fullness (module docstring)."""
        if not task.affinity:
            return 0
        kinds = cluster.affinities[node]
        quarter = MAX_NODE_SCORE // 4
        fullness = go_div(quarter * (MAX_SPEC_GPU - cluster.gpu_free_total(node)), MAX_SPEC_GPU)
        if task.affinity in kinds:  # only its kind: 75-100; among others: 50-75
            return fullness + (3 if len(kinds) == 1 else 2) * quarter
        return fullness + (1 if not kinds else 0) * quarter  # empty: 25-50; others: 0-25
