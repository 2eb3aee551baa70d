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
"""

from __future__ import annotations

__all__ = ["STRATEGIES"]

#: The placement strategies, in the order of the env's schedule actions.
STRATEGIES: tuple[str, ...] = ("exclusive", "pack", "spread", "min_frag")
