"""A read-only view of the simulator for policies.

Heuristics read the state through ``SimView`` (per-GPU arrays are read-only numpy views
that stay current; jobs are the simulator's ``JobState`` proxies); they change it only
through decisions.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gpushare_env.sim.engine import JobState, Simulator

__all__ = ["SimView"]


def _frozen(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class SimView:
    """What a policy may read of a simulator. It never changes the simulator."""

    __slots__ = (
        "_sim",
        "free_memory_gib",
        "gpu_memory_gib",
        "gpu_node",
        "gpu_speed",
        "holders",
        "load",
        "max_jobs_per_gpu",
        "node_gpus",
    )

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        state = sim.gpus
        #: Free memory of each GPU.  # (G,) [GiB]
        self.free_memory_gib = _frozen(state.free_memory_gib)
        #: Compute load ``U_g`` of each GPU.  # (G,)
        self.load = _frozen(state.load)
        #: Workers holding memory on each GPU.  # (G,)
        self.holders = _frozen(state.holders)
        #: Memory of each GPU.  # (G,) [GiB]
        self.gpu_memory_gib = _frozen(sim.cluster.gpu_memory_gib)
        #: Node of each GPU.  # (G,)
        self.gpu_node = _frozen(sim.cluster.gpu_node)
        #: GPUs of each node, -1 padded.  # (N, M)
        self.node_gpus = _frozen(sim.cluster.node_gpus)
        #: Speed factor of each GPU vs a V100.  # (G,)
        self.gpu_speed = _frozen(sim.cluster.gpu_speed)
        self.max_jobs_per_gpu = sim.cluster.max_jobs_per_gpu

    def __reduce__(self) -> tuple[type[SimView], tuple[Simulator]]:
        # rebuilt over the (unpickled) simulator, so its arrays are the live ones again
        return SimView, (self._sim,)

    @property
    def now_s(self) -> float:
        """Current simulated time.  # [s]"""
        return self._sim.now_s

    @property
    def num_gpus(self) -> int:
        """GPUs in the cluster."""
        return self._sim.cluster.num_gpus

    @property
    def num_waiting(self) -> int:
        """Jobs pending or suspended."""
        return self._sim.num_waiting

    @property
    def num_running(self) -> int:
        """Jobs running."""
        return self._sim.num_running

    def cluster_totals(self) -> tuple[float, int, float, float, float]:
        """Cluster-wide sums the simulator maintains incrementally, in O(1).

        Returns:
            ``(compute_in_use, allocated_gpus, free_memory_gib, fragmented_memory_gib,
            expected_fragment_gib)``: the current values of the ``Timeline`` series of the
            same names (sum of ``min(1, U_g)`` [GPUs], GPUs with a worker, free memory
            [GiB], free memory on partly used GPUs that cannot host the median worker
            [GiB], FGD-style expected fragment [GiB]).
        """
        return self._sim.cluster_totals()

    @property
    def jobs_in_system(self) -> int:
        """Arrived and unfinished jobs."""
        return self._sim.jobs_in_system

    @property
    def duration_info(self) -> str:
        """What lengths schedulers see: ``none``, ``sampled`` or ``oracle``."""
        return self._sim.config.duration_info

    def predicted_work_s(self, prior_s: float = 0.0) -> float:
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system, as schedulers
        may know it (``duration_info``); a job without a prediction counts ``prior_s``
        times the share of its iterations left (default 0).  [GPU s]"""
        return self._sim.predicted_work_s(prior_s)

    def next_event_time(self) -> float | None:
        """Time of the next event, or ``None`` when nothing is left to happen (then an
        ``ADVANCE`` is invalid: a waiting job must be placed first).  # [s]"""
        return self._sim.next_event_time()

    def pending(self, limit: int | None = None) -> list[int]:
        """Ids of waiting jobs (pending and suspended) by arrival, at most ``limit``."""
        return self._sim.pending(limit)

    def running(self, limit: int | None = None) -> list[int]:
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        return self._sim.running(limit)

    def pending_window(self, also_waiting: Iterable[int] = ()) -> list[int]:
        """Ids of the pending window (``Simulator.pending_window``): the waiting jobs a
        placement may address, in arrival order."""
        return self._sim.pending_window(also_waiting)

    def running_window(self) -> list[int]:
        """Ids of the running window (``Simulator.running_window``): the running jobs a
        suspension may address."""
        return self._sim.running_window()

    def in_transition(self) -> list[int]:
        """Ids of jobs suspending or resuming (they hold GPUs without progress)."""
        return self._sim.in_transition()

    def gpu_jobs(self, gpu: int) -> list[int]:
        """Ids of the jobs holding memory on ``gpu``."""
        return self._sim.gpu_jobs(gpu)

    def job(self, job_id: int) -> JobState:
        """One job, read-only (the simulator's ``JobState``: the one view of a job)."""
        return self._sim.jobs[job_id]

    def can_suspend(self, job_id: int) -> bool:
        """True if the suspension rules allow suspending ``job_id`` now
        (``Simulator.can_suspend``; the env's mask encodes the same rule)."""
        return self._sim.can_suspend(job_id)

    def find_placement(self, job_id: int, strategy: str) -> tuple[int, ...] | None:
        """GPUs the named strategy would give ``job_id`` now, or ``None``."""
        return self._sim.find_placement(job_id, strategy)

    def fits(self, job_id: int) -> tuple[bool, bool]:
        """``(shared, exclusive)``: whether a sharing strategy (``pack``, ``spread``,
        ``min_frag``: GPUs of any nodes with a free slot and the job's memory free) and
        ``exclusive`` (idle GPUs) find room for waiting job ``job_id`` now; the env's mask
        is the same rule (``Simulator.fits``)."""
        return self._sim.fits(job_id)

    def speed_if_placed(
        self, job_id: int, gpus: tuple[int, ...], include_resuming: bool = False
    ) -> tuple[float, float]:
        """Predicted speeds if ``job_id`` joined ``gpus``: (its own, slowest co-located).

        Both are fractions of solo speed under the simulator's interference model (the
        core applies the rule it runs by: ``Simulator.speed_if_placed``); the second is
        1.0 when no other job computes there. With ``include_resuming``, jobs that are
        restarting on those GPUs (they hold memory and will compute in seconds) count as
        computing too, so a burst of placements at one instant does not stack jobs on a
        GPU whose restarting tenants look idle.
        """
        return self._sim.speed_if_placed(job_id, gpus, include_resuming)
