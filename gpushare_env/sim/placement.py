"""Placement strategies shared by the environment and the baselines.

Each strategy picks ``num_gpus`` distinct GPUs for a job's workers, or returns ``None``
when the job does not fit now. All of them prefer GPUs of one node (a gang inside a node
avoids the cross-node penalty) and fall back to as few nodes as possible.

* ``exclusive``: whole idle GPUs only; inside a node, the node with the fewest idle GPUs
  that still hosts the gang (best fit keeps large gangs of idle GPUs for large jobs).
* ``pack``: best fit on shared GPUs: the fragments with the least free memory left after
  placement; idle GPUs only when no fragment fits.
* ``spread``: the least loaded GPUs (lowest compute load ``U_g``) where memory fits.
* ``min_frag``: the GPUs whose FGD-style expected fragment grows least (Weng et al.,
  "Beware of Fragmentation", ATC'23): a GPU's fragment is its free memory times the
  probability that a worker drawn from the workload's memory distribution cannot use it.

The strategies are carried out by the simulator's compiled core
(``Core._find_placement`` and the functions it calls in ``gpushare_env/compiled/_core.pyx``),
with an incremental index that answers one-worker placements and exclusive gangs without
a pass over the cluster. Ask a simulator (``Simulator.find_placement``) or a view
(``SimView.find_placement``) what a strategy would pick now; the scores, precisely:

* a GPU fits when its free memory holds the worker and it has a free worker slot (for
  ``exclusive``: it has no worker at all);
* ``pack`` scores ``free - memory`` (+1e6 for an idle GPU), ``spread`` ``U_g + 0.01 x
  workers``, ``min_frag`` the growth of the GPU's expected fragment plus ``1e-3 x (free -
  memory)``, ``exclusive`` (one worker) the idle GPUs of its node;
* a gang goes to the node whose ``n`` lowest-scoring fitting GPUs sum least (the first
  such node; for ``exclusive``, the node with the fewest idle GPUs that holds it), else
  across the nodes with the most fitting GPUs first; the GPUs come back sorted.

Under the requested-shares model (``SimConfig.sharing = "shares"``) six more strategies
place a job by the rules of FGD's paper (Weng et al., ATC'23; the same rules as
``baselines.openb``, whose protocol runs the paper's static experiment on them): each
scores the nodes that hold the job (``num_gpus`` GPUs with its share free, its CPU, host
memory and GPU model), takes the highest score (ties: the lower node) and picks GPUs
inside it.

* ``share_random``: a node among those that fit, drawn with the job's own uniform draw
  (seeded per episode), and for a share of one GPU a GPU drawn the same way;
* ``share_dotprod``: least alignment of the node's free (CPU, GPU share) with the
  request;
* ``share_clustering``: nodes that hold tasks of the same kind (a share of one GPU, or
  the same count of whole GPUs) first, then fuller nodes;
* ``share_packing``: a GPU already shared, then a used node, then an idle one;
* ``share_bestfit``: least CPU and GPU share left over (scores normalised over the
  fitting nodes);
* ``share_fgd``: least growth of the node's expected fragmentation against the target
  workload: the episode's requests, counted by kind (CPU, share, GPU count, models), the
  most frequent kinds covering 95% of the jobs (``typical_requests``).

The non-FGD rules put a share of one GPU on the GPU with the least free share that holds
it, whole GPUs on the node's first idle ones; FGD picks the GPU whose choice lowers the
node's fragmentation most. Over time, "the same kind" and the fragmentation read the
jobs placed *now* (the paper places tasks that never leave).

A job without GPUs (a CPU-only task, shares model only) gets a node and no GPU: the six
rules score the nodes with its CPU and host memory free as for any task (``share_packing``
and ``share_clustering`` give it 0 everywhere, as the paper's simulator does), and every
other strategy takes the node with the least CPU left after it (ties: the lower node).
On nodes without a CPU limit (``NodeGroup.cpu_milli = None``) ``share_dotprod`` and
``share_bestfit`` score the free CPU as the normaliser's 128 cores (the paper's nodes all
have a limit).

Under the MIG model (``SimConfig.sharing = "mig"``) a worker takes one idle MIG instance
of a profile its job fits, on a GPU that has one; two more strategies choose it:

* ``mig_fit``: the smallest such instance (compute, then memory slices), on the GPU whose
  smallest is smallest (ties: the lower GPU, then the lower start);
* ``mig_largest``: the largest idle instance that fits, on the GPU whose largest is
  largest (ties as above): the rule of MISO's static partitions.

A gang's workers take one instance each on as many GPUs (the first ``n`` by the rule, on
any nodes). Every other strategy picks GPUs by its own score and takes ``mig_fit``'s
instance on each.
"""

from __future__ import annotations

__all__ = ["ALL_STRATEGIES", "MIG_RULES", "SHARE_RULES", "STRATEGIES"]

#: The placement strategies of the env's schedule actions by default, in their order.
STRATEGIES: tuple[str, ...] = ("exclusive", "pack", "spread", "min_frag")
#: FGD's six placement rules, for the requested-shares model only, in the paper's order.
SHARE_RULES: tuple[str, ...] = (
    "share_random",
    "share_dotprod",
    "share_clustering",
    "share_packing",
    "share_bestfit",
    "share_fgd",
)
#: MIG's two rules, for the mig model only.
MIG_RULES: tuple[str, ...] = ("mig_fit", "mig_largest")
#: Every strategy the core carries out (an env's ``strategies`` choose among them).
ALL_STRATEGIES: tuple[str, ...] = STRATEGIES + SHARE_RULES + MIG_RULES
