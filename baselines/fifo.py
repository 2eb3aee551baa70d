"""``fifo``: sequential first come, first served on whole GPUs, without backfilling.

The oldest waiting job is started on idle GPUs (``exclusive`` placement, fewest nodes)
as soon as enough of them are free; until then nothing behind it may start
(head-of-line blocking). No GPU sharing, no preemption.

Source: the thesis's baseline "sequential scheduling without GPU sharing" (J.-S. Tong,
CYCU 2022), which is also the FIFO of YARN-style GPU clusters that Tiresias and Gandiva
compare against. Differences: the thesis does not say whether its sequential baseline
runs several jobs at once when they fit. By default this policy does (it is sequential
in *order*, not in *count*), the stronger reading; ``max_jobs=1`` gives the literal one
job at a time, which leaves most of a 16-GPU cluster idle under Philly's mostly 1-GPU jobs.
"""

from __future__ import annotations

from typing import Any

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, Schedule, SimView

__all__ = ["Fifo"]


class Fifo(Policy):
    """Arrival order, exclusive placement, no backfill, no preemption.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        max_jobs: Most jobs holding GPUs at once (``None``: no limit; ``1``: one job at
            a time, the literal sequential baseline).
    """

    name = "fifo"
    needs_strategies = ("exclusive",)

    def __init__(self, env: Any = None, seed: int | None = 0, max_jobs: int | None = None) -> None:
        super().__init__(env, seed)
        if max_jobs is not None and max_jobs < 1:
            raise ValueError(f"fifo: max_jobs must be >= 1 or None, got {max_jobs}")
        self.max_jobs = max_jobs

    def params(self) -> dict[str, Any]:
        """Named parameters."""
        return {"max_jobs": self.max_jobs}

    def decide(self, view: SimView) -> Decision:
        """Start the oldest waiting job if enough idle GPUs exist; otherwise let time run."""
        head = self.visible_pending(view)[:1]
        if not head:
            return ADVANCE
        if self.max_jobs is not None:
            holding = view.num_running + len(view.in_transition())
            if holding >= self.max_jobs:
                return ADVANCE
        job = view.job(head[0])
        if view.fits(job.job_id)[1]:  # (shared, exclusive)
            return Schedule(job.job_id, "exclusive")
        return ADVANCE
