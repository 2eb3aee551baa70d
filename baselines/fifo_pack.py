"""``fifo_pack``: first come, first served with backfilling, packed onto shared GPUs.

Jobs are taken in arrival order; a job that does not fit is skipped and a later one
that fits is placed (backfilling). Placement is ``pack``: best fit on the fragments of
partly used GPUs, idle GPUs only when no fragment fits. No preemption.

Source: the common "FIFO + GPU sharing" baseline of the sharing literature (e.g.
Gandiva's and AntMan's comparisons). Differences: placement is blind to compute load (a
GPU is a candidate whenever memory and a worker slot are free), so two heavy jobs may
share a GPU and both slow to under half speed; backfilling looks only at the visible
pending window.
"""

from __future__ import annotations

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, Schedule, SimView

__all__ = ["FifoPack"]


class FifoPack(Policy):
    """Arrival order, backfill, ``pack`` placement."""

    name = "fifo_pack"
    #: The one strategy it places with (and needs); a subclass sets its own.
    strategy = "pack"
    needs_strategies: tuple[str, ...] = ("pack",)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.needs_strategies = (cls.strategy,) if cls.strategy else ()

    def decide(self, view: SimView) -> Decision:
        """Place the oldest waiting job that fits; otherwise let time run."""
        if view.num_waiting == 0:
            return ADVANCE
        for job_id in self.visible_pending(view):
            if view.fits(job_id)[0]:  # (shared, exclusive)
                return Schedule(job_id, self.strategy)
        return ADVANCE
