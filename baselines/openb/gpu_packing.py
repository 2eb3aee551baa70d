"""``packing`` (the paper's GpuPacking): occupied GPUs first, then used nodes, then idle ones.

Algorithm (artifact: ``GpuPackingScore``, GPU selection best fit), for a GPU task:

1. the GPUs the task would take: the ones with the least free share that hold it;
2. if they are all partly used, score ``100 - (sum of their free percent) / 10`` (at
   least 50): a share goes onto an occupied GPU, the fuller the better;
3. else, if the node has work already, score ``50 - (idle GPUs taken)`` (at least 33);
4. else (an idle node) score ``33 - (its GPUs)``: among idle nodes the smaller first.

A CPU-only task scores 0 everywhere (ties decide). GPUs by best fit.
"""

from __future__ import annotations

from baselines.openb.base import PlacementPolicy
from baselines.openb.cluster import MAX_NODE_SCORE, OpenbCluster, TaskRequest
from gpushare_env.workloads.openb import MILLI_PER_GPU

__all__ = ["GpuPacking"]


class GpuPacking(PlacementPolicy):
    """Shared GPUs, then idle GPUs on used nodes, then idle nodes."""

    name = "packing"
    paper_name = "GpuPacking"

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """The three cases of the module docstring."""
        if task.gpu_milli == 0:
            return 0
        free = cluster.gpus(node)
        idle = sum(share == MILLI_PER_GPU for share in free)
        if idle == len(free):  # an idle node (all its GPUs free)
            return max(MAX_NODE_SCORE // 3 - idle, idle)
        tightest_first = sorted(range(len(free)), key=lambda gpu: free[gpu])  # stable
        taken = [gpu for gpu in tightest_first if free[gpu] >= task.gpu_milli][: task.num_gpu]
        idle_taken = sum(free[gpu] == MILLI_PER_GPU for gpu in taken)
        if idle_taken > 0:
            return max(MAX_NODE_SCORE // 2 - idle_taken, MAX_NODE_SCORE // 3)
        free_percent = sum(free[gpu] * 100 // MILLI_PER_GPU for gpu in taken)
        return max(MAX_NODE_SCORE - free_percent // 10, MAX_NODE_SCORE // 2)
