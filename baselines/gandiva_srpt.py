"""``gandiva_srpt``: Gandiva's packing, time-slicing and migration, in SRPT order.

A variant of this project, not a published scheduler. Each decision runs ``gandiva``'s
steps (``baselines/gandiva.py``) with two of them changed:

2. **Queue order: shortest predicted remaining time first.** Jobs without a prediction
   (not yet sampled) come first, longest wait first, as in Gandiva's round robin; then
   jobs with a prediction, shortest predicted remaining time first.
5. **Time-slicing for the shortest job.** The victim of a slice is the same-size running
   job (alone on its GPUs, run a full slice) with the longest predicted remaining time
   (unknown counts as longest), and only if that is longer than the waiting job's: a
   longer job makes room for a shorter one, never the reverse.

Steps 1 (migration to consolidate), 3 (idle GPUs first) and 4 (packing by intensity,
``U_g <= max_load``) are Gandiva's, and so are the parameters.

Sources: the order is shortest-remaining-processing-time (L. Schrage, "A proof of the
optimality of the shortest remaining processing time discipline", Operations Research
16(3), 1968), as the queue order of the thesis heuristic (``baselines/thesis.py`` step 2;
J.-S. Tong, CYCU 2022); the mechanisms are Gandiva's (W. Xiao et al., OSDI'18).
Predicted remaining times come from the sampling phase (docs/model.md, *What is
modelled*). ``baselines.make`` refuses the spec ``gandiva:order=srpt`` and names this
policy instead.
"""

from __future__ import annotations

import math

from baselines.gandiva import Gandiva, Rank, WaitClass
from gpushare_env.sim import JobState, SimView

__all__ = ["GandivaSRPT"]


class GandivaSRPT(Gandiva):
    """Gandiva's steps with SRPT queue order and slices taken from the longest job.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        time_slice_s: As ``gandiva``'s: how long a job runs before it may be swapped
            out, and how long the waiting job must have waited. Default 600 s.  [s]
        max_load: As ``gandiva``'s: largest compute load ``U_g`` packing may create on a
            GPU. Default 1.0.
        migration_gain: As ``gandiva``'s: migrate a cross-node job only if the time it
            would save is at least this many times its restart overhead. Default 2.
    """

    name = "gandiva_srpt"

    def _queue_rank(self, view: SimView, job: JobState) -> Rank:
        """Jobs without a prediction by wait, then shortest predicted remaining first."""
        remaining = job.predicted_remaining_s
        if remaining is None:
            return super()._queue_rank(view, job)
        return (WaitClass.BY_PREDICTION, remaining, job.job_id)

    def _slice_key(
        self, view: SimView, job: JobState, waiting: JobState, ran_s: float
    ) -> float | None:
        """The running job's predicted remaining time (unknown: ``inf``), if it is longer
        than the waiting job's."""
        remaining = job.predicted_remaining_s
        key = math.inf if remaining is None else remaining
        if waiting.predicted_remaining_s is not None and key <= waiting.predicted_remaining_s:
            return None  # SRPT: only a longer job makes room for a shorter one
        return key
