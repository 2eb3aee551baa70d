"""``fifo``: sequential first come, first served on whole GPUs, without backfilling.

The oldest waiting job is started on idle GPUs (``exclusive`` placement, fewest nodes)
as soon as enough of them are free; until then nothing behind it may start
(head-of-line blocking). No GPU sharing, no preemption.

Source: the thesis's baseline "sequential scheduling without GPU sharing" (J.-S. Tong,
CYCU 2022), which is also the FIFO of YARN-style GPU clusters that Tiresias and Gandiva
compare against. Differences: the thesis does not say whether its sequential baseline
runs several jobs at once when they fit; this version does (it is sequential in *order*,
not in *count*), which makes it a stronger baseline than one-job-at-a-time.
"""

from __future__ import annotations

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, Schedule, SimView

__all__ = ["Fifo"]


class Fifo(Policy):
    """Arrival order, exclusive placement, no backfill, no preemption."""

    name = "fifo"

    def decide(self, view: SimView) -> Decision:
        """Start the oldest waiting job if enough idle GPUs exist; otherwise let time run."""
        head = self.visible_pending(view)[:1]
        if head:
            job = view.job(head[0])
            if view.fit_checker().fits_exclusive(job.num_gpus):
                return Schedule(job.job_id, "exclusive")
        return ADVANCE
