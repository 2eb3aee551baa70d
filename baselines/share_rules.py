"""FGD's six placement rules scheduling over time: ``share_random`` ... ``share_fgd``.

Jobs are taken in arrival order; a job that does not fit is skipped and a later one that
fits is placed (backfilling, as a Kubernetes scheduler moves an unschedulable pod aside
and tries the next). Each policy places with the core's strategy of its name
(``gpushare_env.sim.placement``): the rules of Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23,
which ``baselines.openb`` runs in the paper's static experiment. No preemption.

They need the requested-shares model (``simulator.sharing = "shares"``; the simulator
refuses their strategy otherwise), and in an env the env's ``strategies`` must include
theirs::

    env = gym.make("GPUShare-v0", config={"simulator": {"sharing": "shares"},
                   "strategies": [*STRATEGIES, "share_fgd"], ...})
    policy = baselines.make("share_fgd", env)

``gpushare-evaluate`` sets both for them.

Differences from the paper: tasks leave (a node's kinds of task and its fragmentation
are those of the jobs on it now), ties between nodes go to the lower node (the paper's
simulator breaks them by a seeded node order), and the target workload of ``share_fgd``
is the episode's jobs (the paper's: the pod list's tasks, CPU-only ones included).
"""

from __future__ import annotations

from typing import Any

from baselines.fifo_pack import FifoPack

__all__ = [
    "SHARE_POLICIES",
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

    def __init__(self, env: Any = None, seed: int | None = 0) -> None:
        super().__init__(env=env, seed=seed)
        if env is not None:
            strategies = env.unwrapped.strategies
            if self.strategy not in strategies:
                raise ValueError(
                    f"{self.name}: the env's actions do not include strategy "
                    f"{self.strategy!r} (its strategies: {list(strategies)}); make the env "
                    f"with strategies=[..., {self.strategy!r}] and simulator.sharing='shares'"
                )


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


#: The six by name, in the paper's order (``gpushare_env.sim.placement.SHARE_RULES``).
SHARE_POLICIES: dict[str, type[ShareRule]] = {
    cls.name: cls
    for cls in (ShareRandom, ShareDotProd, ShareClustering, SharePacking, ShareBestFit, ShareFGD)
}
