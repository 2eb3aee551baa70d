"""``fgd`` (the paper's FGD): place where the expected GPU fragmentation grows least.

Fragmentation Gradient Descent (Weng et al., ATC'23, Algorithm 1; artifact: ``FGDScore``
with GPU selection by the same score). For a task ``m`` and the target workload ``M``
(``fragmentation.typical_tasks``):

1. for each node ``n`` that fits ``m``, and for a share each GPU ``g`` of ``n`` that holds
   it, the hypothetical node ``n'`` with ``m`` placed (CPU taken; the share taken from
   ``g``; whole GPUs taken from the idle ones);
2. the gradient ``delta = F_n(M) - F_n'(M)``, the fall of the node's fragmentation
   (``fragmentation.node_fragmentation``);
3. the score ``floor(100 * sigmoid(delta / 1000))`` (1000: one GPU); for a share the
   node's score is its best GPU's, and that GPU (the lowest index among equals) is the
   one the task takes; whole GPUs are the node's first idle ones;
4. the best score wins (ties to the smallest ``tie_rank``).

The sigmoid and the integer score are the artifact's: fragment changes much below one
GPU land on the same score, and ties between them are broken as any other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from baselines.openb.base import PlacementPolicy
from baselines.openb.cluster import MAX_NODE_SCORE, OpenbCluster, TaskRequest, whole_gpus
from baselines.openb.fragmentation import TypicalTask, node_fragmentation
from gpushare_env.workloads.openb import MILLI_PER_GPU

__all__ = ["FragmentationGradientDescent", "fragment_score"]


def fragment_score(before: float, after: float) -> int:
    """``floor(100 * sigmoid((before - after) / 1000))``: 50 when nothing changes."""
    return int(1.0 / (1.0 + math.exp(-(before - after) / MILLI_PER_GPU)) * MAX_NODE_SCORE)


class FragmentationGradientDescent(PlacementPolicy):
    """Least growth of the node's expected fragment for the target workload.

    Args:
        workload: The target workload (``fragmentation.typical_tasks`` of the pod list).
    """

    name = "fgd"
    paper_name = "FGD"

    def __init__(self, workload: Sequence[TypicalTask]):
        """Score against ``workload``."""
        self.workload = tuple(workload)

    def score(self, cluster: OpenbCluster, node: int, task: TaskRequest) -> int:
        """The node's best score over its candidate GPUs."""
        return self._best(cluster, node, task)[0]

    def select_gpus(
        self, cluster: OpenbCluster, node: int, task: TaskRequest, draw: float
    ) -> tuple[int, ...]:
        """The GPU with the best score for a share; the first idle GPUs for whole ones."""
        return self._best(cluster, node, task)[1]

    def _best(
        self, cluster: OpenbCluster, node: int, task: TaskRequest
    ) -> tuple[int, tuple[int, ...]]:
        model = cluster.models[node]
        free = cluster.gpus(node)
        cpu_after = int(cluster.cpu_free[node]) - task.cpu_milli
        before = node_fragmentation(int(cluster.cpu_free[node]), model, free, self.workload)
        if task.is_gpu_share:
            best: tuple[int, tuple[int, ...]] | None = None
            for gpu, share in enumerate(free):
                if share < task.gpu_milli:
                    continue
                after_free = list(free)
                after_free[gpu] -= task.gpu_milli
                after = node_fragmentation(cpu_after, model, after_free, self.workload)
                score = fragment_score(before, after)
                if best is None or score > best[0]:
                    best = (score, (gpu,))
            assert best is not None, "a node that fits a share has a GPU that holds it"
            return best
        gpus = whole_gpus(free, task.num_gpu) if task.gpu_milli else ()
        after_free = [
            share - task.gpu_milli if gpu in gpus else share for gpu, share in enumerate(free)
        ]
        after = node_fragmentation(cpu_after, model, after_free, self.workload)
        return fragment_score(before, after), gpus
