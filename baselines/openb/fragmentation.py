"""GPU fragmentation of a node for a target workload (Weng et al., ATC'23, section 3).

The *target workload* is the distribution of requests the cluster expects: the task
requests of the original pod list (before any resampling), CPU-only tasks included
(``gpushare_env.sim.target_workload``, which the core's ``share_fgd`` reads too).

The fragment of a node for one task ``t`` of the target workload is the part of the
node's free GPU share that ``t`` could not use:

* ``t`` asks for no GPU: all the free share (it would not use a GPU at all);
* the node's model is not one ``t`` accepts: all of it;
* fewer than ``num_gpu`` GPUs of the node have ``gpu_milli`` free, or the node's free CPU
  is below ``t``'s request: all of it;
* otherwise ``t`` fits: the free share of the GPUs that hold less than ``gpu_milli``.

The node's fragmentation is the frequency-weighted sum over the target workload, an
expected value in milli-GPU. The artifact files each amount under one of seven categories
(lack of both, lack of GPU, satisfied, lack of CPU, CPU task satisfied or not, no access)
and sums all but "satisfied"; :func:`node_fragmentation` adds them up in that same order,
so its floating-point result is the artifact's to the bit. The cluster's fragmentation
ratio is the sum over nodes divided by the free GPU share of the cluster.

FGD scores a node by how much its fragmentation would fall if the task went there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from baselines.openb.cluster import OpenbCluster, TaskRequest
from gpushare_env.sim.target_workload import POPULARITY_PCT, TypicalTask, typical_requests

__all__ = [
    "CATEGORIES",
    "POPULARITY_PCT",
    "TypicalTask",
    "cluster_fragmentation",
    "fragment_categories",
    "node_fragmentation",
    "typical_tasks",
]

#: The artifact's categories of a fragment, in its order; all but ``satisfied`` count.
CATEGORIES: tuple[str, ...] = (
    "lack_both",
    "lack_gpu",
    "satisfied",
    "lack_cpu",
    "cpu_task_satisfied",
    "cpu_task_lack_cpu",
    "no_access",
)
_LACK_BOTH, _LACK_GPU, _SATISFIED, _LACK_CPU, _CPU_OK, _CPU_LACK, _NO_ACCESS = range(7)


def typical_tasks(
    tasks: Iterable[TaskRequest], popularity_pct: int = POPULARITY_PCT
) -> tuple[TypicalTask, ...]:
    """The target workload of ``tasks`` (module docstring), most frequent kind first."""
    return typical_requests(
        ((t.cpu_milli, t.gpu_milli, t.num_gpu, t.gpu_spec) for t in tasks), popularity_pct
    )


def fragment_categories(
    cpu_free: int, model: str, gpu_free: Sequence[int], workload: Sequence[TypicalTask]
) -> list[float]:
    """A node's expected fragment per category of :data:`CATEGORIES`.  [milli-GPU]

    Args:
        cpu_free: The node's free CPU.  [milli-cores]
        model: The node's GPU model.
        gpu_free: Free share of each GPU of the node.  [milli-GPU]
        workload: The target workload (:func:`typical_tasks`).
    """
    amounts = [0.0] * len(CATEGORIES)
    idle = sum(gpu_free)
    for kind in workload:
        weight = kind.frequency
        cpu_fits = cpu_free >= kind.cpu_milli
        if kind.gpu_milli == 0:
            amounts[_CPU_OK if cpu_fits else _CPU_LACK] += weight * idle
        elif not kind.accepts(model):
            amounts[_NO_ACCESS] += weight * idle
        elif sum(free >= kind.gpu_milli for free in gpu_free) >= kind.num_gpu:
            if cpu_fits:
                too_small = sum(free for free in gpu_free if free < kind.gpu_milli)
                amounts[_LACK_GPU] += weight * too_small
                amounts[_SATISFIED] += weight * (idle - too_small)
            else:
                amounts[_LACK_CPU] += weight * idle
        else:
            amounts[_LACK_GPU if cpu_fits else _LACK_BOTH] += weight * idle
    return amounts


def node_fragmentation(
    cpu_free: int, model: str, gpu_free: Sequence[int], workload: Sequence[TypicalTask]
) -> float:
    """A node's expected GPU fragment for the target workload.  [milli-GPU]"""
    amounts = fragment_categories(cpu_free, model, gpu_free, workload)
    total = 0.0
    for category, amount in enumerate(amounts):
        if category != _SATISFIED:
            total += amount
    return total


def cluster_fragmentation(cluster: OpenbCluster, workload: Sequence[TypicalTask]) -> float:
    """The cluster's fragment: the sum over its nodes.  [milli-GPU]"""
    return sum(
        node_fragmentation(
            int(cluster.cpu_free[node]), cluster.models[node], cluster.gpus(node), workload
        )
        for node in range(cluster.num_nodes)
    )
