"""Per-job placement intervals of one run, for a Gantt view of who held which GPU when.

Neither the simulator's records nor its timeline say which GPUs a job held, so
:class:`PlacementRecorder` watches a run: after every decision it reads the running and
suspending / resuming jobs of the simulator (read only). A decision point can be several
event instants after the previous one (the env lets time run through states without a
choice), so a hold that ended in between is closed at the exact time the job's state
records: its finish, the end of its checkpoint (when it was queued again) or the end of
its restart. It costs O(jobs holding GPUs) per decision, so the harness turns it on only
for the runs it draws (in the env, as the ``callback`` of
:func:`~gpushare_env.rollout.rollout`).

:func:`assign_lanes` then gives every interval on a GPU one of ``max_jobs_per_gpu`` lanes
so that co-located jobs are drawn side by side (greedy interval colouring by start time,
which needs no more lanes than the most jobs a GPU ever hosted at once).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from gpushare_env.sim import JobStatus, Simulator

__all__ = ["GpuInterval", "PlacementRecorder", "assign_lanes"]

#: Interval kinds: ``"run"`` = computing (sampling included), ``"overhead"`` = holding the
#: GPUs while checkpointing or restarting, without progress.
RUN = "run"
OVERHEAD = "overhead"


@dataclass(frozen=True, slots=True)
class GpuInterval:
    """One job holding one GPU for a while.

    Attributes:
        job_id: The job.
        gpu: The GPU index.
        start_s: Start of the hold.  # [s]
        end_s: End of the hold.  # [s]
        kind: ``"run"`` or ``"overhead"`` (suspending / resuming).
    """

    job_id: int
    gpu: int
    start_s: float  # [s]
    end_s: float  # [s]
    kind: str


class PlacementRecorder:
    """Collects :class:`GpuInterval` s of one run from the simulator's state after each decision."""

    def __init__(self) -> None:
        # job -> (gpus, kind, since) of the hold currently open
        self._open: dict[int, tuple[tuple[int, ...], str, float]] = {}
        self.intervals: list[GpuInterval] = []

    def _close(self, job_id: int, time_s: float) -> None:
        gpus, kind, since = self._open.pop(job_id)
        if time_s > since:
            self.intervals.extend(GpuInterval(job_id, g, since, time_s, kind) for g in gpus)

    def observe(self, sim: Simulator) -> None:
        """Bring the holds up to ``sim``'s present; call it after every decision.

        Between two decisions a job may have finished, completed its checkpoint or
        completed its restart (one action per decision, so at most a restart and then a
        finish): those holds close at the times the job's state records, exactly when the
        simulator's events happened. The jobs holding GPUs now then continue, change or
        open their holds at ``sim.now_s``.
        """
        jobs = sim.jobs
        for job_id in list(self._open):
            job = jobs[job_id]
            status = job.status
            gpus, kind, _ = self._open[job_id]
            if kind == OVERHEAD and status in (JobStatus.RUNNING, JobStatus.FINISHED):
                # it was resuming: the restart ended (the same sum the simulator's
                # RESUME_DONE event was scheduled at)
                restarted_s = job.transition_since_s + job.resume_overhead_s
                self._close(job_id, restarted_s)
                self._open[job_id] = (gpus, RUN, restarted_s)
            if status == JobStatus.FINISHED:
                self._close(job_id, job.finish_s)
            elif status == JobStatus.SUSPENDED:  # the checkpoint ended: queued again
                self._close(job_id, job.queued_since_s)
        now = sim.now_s
        holding: dict[int, tuple[tuple[int, ...], str]] = {}
        for job_id in sim.running():
            holding[job_id] = (tuple(jobs[job_id].gpus), RUN)
        for job_id in sim.in_transition():
            job = jobs[job_id]
            if job.status in (JobStatus.SUSPENDING, JobStatus.RESUMING):
                holding[job_id] = (tuple(job.gpus), OVERHEAD)
        for job_id in [j for j in self._open if j not in holding]:
            self._close(job_id, now)
        for job_id, (gpus, kind) in holding.items():
            current = self._open.get(job_id)
            if current is not None and (current[0], current[1]) == (gpus, kind):
                continue
            if current is not None:
                self._close(job_id, now)
            if gpus:
                self._open[job_id] = (gpus, kind, now)

    def finish(self, end_s: float) -> list[GpuInterval]:
        """Close every open hold at ``end_s`` and return all intervals by (start, job, gpu)."""
        for job_id in list(self._open):
            self._close(job_id, end_s)
        self.intervals.sort(key=lambda i: (i.start_s, i.job_id, i.gpu, i.end_s))
        return self.intervals


def assign_lanes(intervals: Sequence[GpuInterval], max_lanes: int) -> list[int]:
    """A lane in ``[0, max_lanes)`` for every interval, so that overlaps on a GPU differ.

    Intervals touching end-to-start do not overlap. Consecutive holds of the same job on
    the same GPU keep their lane when it is free, so a job stays on one row.

    Args:
        intervals: The intervals of one run.
        max_lanes: Lanes per GPU (the cluster's ``max_jobs_per_gpu``).

    Returns:
        One lane per interval, in the input order.

    Raises:
        ValueError: More than ``max_lanes`` intervals overlap on one GPU.
    """
    lanes = [0] * len(intervals)
    by_gpu: dict[int, list[int]] = {}
    for index, interval in enumerate(intervals):
        by_gpu.setdefault(interval.gpu, []).append(index)
    for gpu, indices in by_gpu.items():
        indices.sort(key=lambda i: (intervals[i].start_s, intervals[i].end_s, intervals[i].job_id))
        busy: list[tuple[float, int]] = []  # (end, lane) of holds in progress
        free = list(range(max_lanes))
        last_lane: dict[int, int] = {}
        for index in indices:
            interval = intervals[index]
            while busy and busy[0][0] <= interval.start_s:
                _, lane = heapq.heappop(busy)
                free.append(lane)
            if not free:
                raise ValueError(
                    f"more than {max_lanes} jobs overlap on GPU {gpu} at {interval.start_s} s"
                )
            preferred = last_lane.get(interval.job_id)
            lane = preferred if preferred in free else min(free)
            free.remove(lane)
            heapq.heappush(busy, (interval.end_s, lane))
            last_lane[interval.job_id] = lane
            lanes[index] = lane
    return lanes
