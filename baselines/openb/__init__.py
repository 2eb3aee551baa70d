"""FGD's six placement policies for GPU-sharing by requested share (Weng et al., ATC'23).

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC 2023, compare six policies for placing tasks
that ask for a share of one GPU (``gpu_milli`` of 1000), whole GPUs, or no GPU, plus CPU
and memory, on the nodes of Alibaba's GPU-sharing cluster. This package holds them as the
paper and its simulator (``hkust-adsl/kubernetes-scheduler-simulator``) define them,
written anew from the paper and the simulator's documented rules:

========== ============== =====================================================
name       paper          rule
========== ============== =====================================================
random     Random         a random node among those that fit
dotprod    DotProd        least alignment of free and requested (CPU, GPU)
clustering GpuClustering  tasks of one kind (share, K GPUs) together
packing    GpuPacking     occupied GPUs, then used nodes, then idle nodes
bestfit    BestFit        least CPU and GPU left over
fgd        FGD            least growth of expected GPU fragmentation
========== ============== =====================================================

They work on a static :class:`OpenbCluster` (CPU, memory, GPU model and the free share of
every GPU per node), one task at a time (:func:`place_task`); each file reads as the
policy's algorithm box. ``baselines.openb.protocol`` runs the paper's experiment on them
(engine ``reference``) or on the simulator's compiled core (engine ``core``: its
``share_*`` rules, the same rules, checked against these classes placement by placement
in ``tests/baselines/test_openb_engines.py`` and ``test_share_rules.py``).

These are not the policies of ``baselines.make``: those schedule jobs over time in the
simulator's memory-sharing model. In particular ``baselines.min_frag`` (registry name
``min_frag``, formerly ``fgd``) is an adaptation of FGD to that model, not the paper's
policy; this package's ``fgd`` is the paper's.
"""

from __future__ import annotations

from collections.abc import Sequence

from baselines.openb.base import PlacementPolicy, place_task
from baselines.openb.best_fit import BestFit
from baselines.openb.cluster import OpenbCluster, TaskRequest
from baselines.openb.dot_product import DotProduct
from baselines.openb.fgd import FragmentationGradientDescent
from baselines.openb.fragmentation import (
    TypicalTask,
    cluster_fragmentation,
    node_fragmentation,
    typical_tasks,
)
from baselines.openb.gpu_clustering import GpuClustering
from baselines.openb.gpu_packing import GpuPacking
from baselines.openb.random_fit import RandomFit

__all__ = [
    "POLICIES",
    "BestFit",
    "DotProduct",
    "FragmentationGradientDescent",
    "GpuClustering",
    "GpuPacking",
    "OpenbCluster",
    "PlacementPolicy",
    "RandomFit",
    "TaskRequest",
    "TypicalTask",
    "cluster_fragmentation",
    "make_policy",
    "node_fragmentation",
    "place_task",
    "typical_tasks",
]

#: The six policies by name, in the paper's order.
POLICIES: dict[str, type[PlacementPolicy]] = {
    policy.name: policy
    for policy in (
        RandomFit,
        DotProduct,
        GpuClustering,
        GpuPacking,
        BestFit,
        FragmentationGradientDescent,
    )
}


def make_policy(name: str, workload: Sequence[TypicalTask] = ()) -> PlacementPolicy:
    """Build policy ``name``; ``fgd`` scores against the target ``workload``.

    Raises:
        ValueError: An unknown name, or ``fgd`` without a target workload.
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
    if name == FragmentationGradientDescent.name:
        if not workload:
            raise ValueError("fgd needs the target workload (typical_tasks of the pod list)")
        return FragmentationGradientDescent(workload)
    return POLICIES[name]()
