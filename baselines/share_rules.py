"""FGD's six placement rules scheduling over time: ``share_random`` ... ``share_fgd``.

Jobs are taken in arrival order; a job that does not fit is skipped and a later one that
fits is placed (backfilling, as a Kubernetes scheduler moves an unschedulable pod aside
and tries the next). Each policy places with the core's strategy of its name
(``gpushare_env.sim.placement``): the rules of Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23,
which ``baselines.openb`` runs in the paper's static experiment. No preemption.

Each needs its strategy (``needs_strategies``) and so the requested-shares model
(``needs_sharing``: ``simulator.sharing = "shares"``; the simulator refuses their
strategy otherwise): ``baselines.make`` refuses one in an env, or headless in a setting,
whose ``strategies`` lack its strategy or whose sharing model is memory::

    env = gym.make("GPUShare-v0", config={"simulator": {"sharing": "shares"},
                   "strategies": [*STRATEGIES, "share_fgd"], ...})
    policy = baselines.make("share_fgd", env)

``gpushare-evaluate`` gives their runs the strategy (``baselines.env_overrides``) and
refuses them on a workload under the memory model (an openb pod list runs under shares
by itself).

Differences from the paper: tasks leave (a node's kinds of task and its fragmentation
are those of the jobs on it now), ties between nodes go to the lower node (the paper's
simulator breaks them by a seeded node order), and the target workload of ``share_fgd``
is the episode's jobs (the paper's: the pod list's tasks, CPU-only ones included).
"""

from __future__ import annotations

from baselines.fifo_pack import FifoPack

__all__ = [
    "SHARE_RULE_POLICIES",
    "ShareBestFit",
    "ShareClustering",
    "ShareDotProd",
    "ShareFGD",
    "SharePacking",
    "ShareRandom",
    "ShareRule",
]


class ShareRule(FifoPack):
    """Arrival order, backfill, placement by the FGD rule ``strategy``."""

    name = "share_rule"
    strategy = ""


class ShareRandom(ShareRule):
    """A random node among those that fit (the job's seeded draw)."""

    name = strategy = "share_random"


class ShareDotProd(ShareRule):
    """Least alignment of the node's free (CPU, GPU share) with the request."""

    name = strategy = "share_dotprod"


class ShareClustering(ShareRule):
    """Jobs of one kind (a share, or K whole GPUs) together."""

    name = strategy = "share_clustering"


class SharePacking(ShareRule):
    """Shared GPUs first, then used nodes, then idle ones."""

    name = strategy = "share_packing"


class ShareBestFit(ShareRule):
    """Least CPU and GPU share left on the node."""

    name = strategy = "share_bestfit"


class ShareFGD(ShareRule):
    """Least growth of the node's expected fragmentation (the paper's FGD)."""

    name = strategy = "share_fgd"


#: The six, in the paper's order (``gpushare_env.sim.placement.SHARE_RULES``); the
#: registry of ``baselines`` names them.
SHARE_RULE_POLICIES: tuple[type[ShareRule], ...] = (
    ShareRandom, ShareDotProd, ShareClustering, SharePacking, ShareBestFit, ShareFGD,
)  # fmt: skip
