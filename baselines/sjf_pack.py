"""``sjf_pack``: shortest predicted job first with backfilling, packed onto shared GPUs.

Waiting jobs are ordered by their predicted remaining time (``predicted_remaining_s``,
which the scheduler sees once a job has been sampled, or from arrival under
``duration_info="oracle"``); the first in that order that fits is placed with ``pack``
(best fit on fragments, idle GPUs only when no fragment fits). Jobs without a
prediction are handled by ``unsampled``:

* ``"sample"`` (default): every new job first gets a sampling run (it starts on a
  fragment, runs ``sample_iterations`` and is suspended once, paying the suspend and
  resume overheads), then waits its turn by predicted remaining time. After that one
  sampling suspension the policy never preempts. If the simulator's suspension rules
  forbid that suspension (``SimView.can_suspend``, e.g. ``max_suspends_per_job=0``), the
  job keeps running: its sampling run becomes its full run.
* ``"last"``: after every job with a prediction, in arrival order. The policy never
  preempts, so under the default ``duration_info="sampled"`` a job is only ever sampled
  while running to completion: the queue then holds no predictions and the policy
  behaves exactly as ``fifo_pack``. It is a true (clairvoyant) SJF under
  ``duration_info="oracle"``.

``"sample"`` is the default because without it the policy is not shortest-first at all
under the default information; what it gains and costs on the thesis workload:
docs/baselines.md, ``sjf_pack``.

Source: shortest-job-first, the classic size-based policy (and its GPU-cluster forms,
e.g. the "SJF" baselines of Tiresias and Gandiva's comparisons) combined with the ``pack``
placement of GPU-sharing schedulers. Differences: predictions come from the simulator's
sampling model (docs/model.md, *What is modelled*), not from user estimates.
"""

from __future__ import annotations

from typing import Any

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, JobStatus, Schedule, SimView, Suspend

__all__ = ["SJFPack"]

_UNSAMPLED = ("last", "sample")


class SJFPack(Policy):
    """Shortest predicted remaining time first, backfill, ``pack`` placement.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        unsampled: ``"last"`` or ``"sample"``; see the module docstring.
    """

    name = "sjf_pack"
    strategy = "pack"
    needs_strategies = ("pack",)

    def __init__(
        self,
        env: Any = None,
        seed: int | None = 0,
        unsampled: str = "sample",
    ) -> None:
        super().__init__(env, seed)
        if unsampled not in _UNSAMPLED:
            raise ValueError(f"sjf_pack: unsampled must be one of {_UNSAMPLED}, got {unsampled!r}")
        self.unsampled = unsampled
        self._sampling_done: set[int] = set()

    def params(self) -> dict[str, Any]:
        """Named parameters."""
        return {"unsampled": self.unsampled}

    def _reset_state(self) -> None:
        """Forget which jobs had their sampling run."""
        self._sampling_done = set()

    def decide(self, view: SimView) -> Decision:
        """Suspend a job whose sampling run ended (``"sample"``), else place the first
        job in predicted order that fits, else let time run."""
        sampling = self.unsampled == "sample" and view.duration_info == "sampled"
        if sampling:
            for job_id in self.visible_running(view):
                job = view.job(job_id)
                if job.sampled and job_id not in self._sampling_done:
                    self._sampling_done.add(job_id)
                    if job.suspends == 0 and view.can_suspend(job_id):
                        return Suspend(job_id)
        keyed = []
        for job_id in self.visible_pending(view):
            job = view.job(job_id)
            predicted = job.predicted_remaining_s
            if predicted is not None:
                key = (1, predicted, job.arrival_s, job_id)
            elif sampling and job.status == JobStatus.PENDING:
                key = (0, 0.0, job.arrival_s, job_id)  # sampling runs first: they are short
            else:
                key = (2, 0.0, job.arrival_s, job_id)
            keyed.append((key, job))
        keyed.sort(key=lambda item: item[0])
        for _, job in keyed:
            if view.fits(job.job_id)[0]:  # (shared, exclusive)
                if sampling and job.status == JobStatus.SUSPENDED:
                    self._sampling_done.add(job.job_id)
                return Schedule(job.job_id, self.strategy)
        return ADVANCE
