"""Per-job placement intervals of one run, for a Gantt view of who held which GPU when.

Neither the simulator's records nor its timeline say which GPUs a job held, so
:class:`PlacementRecorder` watches a run: after every decision it reads the running and
suspending / resuming jobs from the read-only :class:`~gpushare_env.sim.SimView`, and the
events each ``advance`` processed give the exact times of completions, finished
suspensions and finished restarts that happen between two decision points. It costs
O(jobs holding GPUs) per decision, so the harness turns it on only for the runs it draws.

:func:`assign_lanes` then gives every interval on a GPU one of ``max_jobs_per_gpu`` lanes
so that co-located jobs are drawn side by side (greedy interval colouring by start time,
which needs no more lanes than the most jobs a GPU ever hosted at once).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpushare_env.sim import Event, EventKind, JobStatus, SimView

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
    """Collects :class:`GpuInterval` s of one run from snapshots of the view and events."""

    def __init__(self) -> None:
        # job -> (gpus, kind, since) of the hold currently open
        self._open: dict[int, tuple[tuple[int, ...], str, float]] = {}
        self.intervals: list[GpuInterval] = []

    def _close(self, job_id: int, time_s: float) -> None:
        gpus, kind, since = self._open.pop(job_id)
        if time_s > since:
            self.intervals.extend(GpuInterval(job_id, g, since, time_s, kind) for g in gpus)

    def on_events(self, events: Iterable[Event]) -> None:
        """Apply the events an ``advance`` processed, at their exact times."""
        for event in events:
            if event.job_id not in self._open:
                continue
            if event.kind in (EventKind.FINISH, EventKind.SUSPEND_DONE):
                self._close(event.job_id, event.time_s)
            elif event.kind == EventKind.RESUME_DONE:
                gpus, kind, _ = self._open[event.job_id]
                if kind == OVERHEAD:
                    self._close(event.job_id, event.time_s)
                    self._open[event.job_id] = (gpus, RUN, event.time_s)

    def observe(self, view: SimView) -> None:
        """Compare the jobs holding GPUs now with the open holds and update them."""
        now = view.now_s
        holding: dict[int, tuple[tuple[int, ...], str]] = {}
        for job_id in view.running():
            holding[job_id] = (tuple(view.job(job_id).gpus), RUN)
        for job_id in view.in_transition():
            job = view.job(job_id)
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
