"""``min_frag``: arrival order with backfilling, placed where the expected fragment grows least.

Jobs are taken in arrival order; a job that does not fit is skipped and a later one that
fits is placed (backfilling). Each job goes where the cluster's expected fragment grows
least (the ``min_frag`` strategy): a GPU's fragment is its free memory times the
probability that a worker drawn from the workload's memory distribution cannot use it,
and the strategy picks the GPUs whose fragment increases least (ties to the fuller GPU).
No preemption.

It was called ``fgd``, a name that now stays an alias for one release (``baselines.make
("fgd")`` warns): it is an adaptation of fragmentation gradient descent to the memory
model, not FGD as published, which is ``share_fgd`` over time (``baselines.share_rules``)
and ``baselines.openb``'s ``fgd`` in the paper's static experiment.

Source: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC'23 (a Kubernetes scheduler plugin; code in
hkust-adsl/kubernetes-scheduler-simulator). Differences: the paper measures fragments over
the GPU *compute* shares that pods request, against the target workload's distribution of
requests, and evaluates by placing arriving tasks until the cluster can take no more
(unallocated GPUs); here sharing is by memory (compute is contended, not partitioned),
the reference distribution is the episode's worker memories, and jobs that do not fit
wait in the queue.
"""

from __future__ import annotations

from baselines.fifo_pack import FifoPack

__all__ = ["MinFrag"]


class MinFrag(FifoPack):
    """Arrival order, backfill, ``min_frag`` placement."""

    name = "min_frag"
    strategy = "min_frag"
