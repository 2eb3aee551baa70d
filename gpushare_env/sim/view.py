"""A read-only view of the simulator for policies.

Heuristics read the state through ``SimView`` (per-GPU arrays are read-only numpy views
that stay current; jobs are the simulator's ``JobState`` proxies); they change it only
through decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np

from gpushare_env.sim.engine import JobState, MigInstance

__all__ = ["SimView"]


@runtime_checkable
class SimView(Protocol):
    """What a policy may read of a simulator; ``Simulator`` is one (the env's ``view`` is
    its simulator). Every array is a read-only view that stays current; nothing here
    changes the simulation (decisions go through ``Simulator.place`` / ``schedule`` /
    ``suspend`` / ``advance``, or the env's actions).
    """

    #: Free memory of each GPU.  # (G,) [GiB]
    free_memory_gib: np.ndarray
    #: Compute load ``U_g`` of each GPU.  # (G,)
    load: np.ndarray
    #: Workers holding memory on each GPU.  # (G,)
    holders: np.ndarray
    #: Memory of each GPU.  # (G,) [GiB]
    gpu_memory_gib: np.ndarray
    #: Node of each GPU.  # (G,)
    gpu_node: np.ndarray
    #: GPUs of each node, -1 padded.  # (N, M)
    node_gpus: np.ndarray
    #: Speed factor of each GPU vs a V100.  # (G,)
    gpu_speed: np.ndarray
    #: Workers a GPU holds at most.
    max_jobs_per_gpu: int

    @property
    def now_s(self) -> float:
        """Current simulated time.  # [s]"""
        ...

    @property
    def num_gpus(self) -> int:
        """GPUs in the cluster."""
        ...

    @property
    def num_waiting(self) -> int:
        """Jobs pending or suspended."""
        ...

    @property
    def num_running(self) -> int:
        """Jobs running."""
        ...

    def cluster_totals(self) -> tuple[float, int, float, float, float]:
        """Cluster-wide sums the simulator maintains incrementally, in O(1).

        Returns:
            ``(compute_in_use, allocated_gpus, free_memory_gib, fragmented_memory_gib,
            expected_fragment_gib)``: the current values of the ``Timeline`` series of the
            same names (sum of ``min(1, U_g)`` [GPUs], GPUs with a worker, free memory
            [GiB], free memory on partly used GPUs that cannot host the median worker
            [GiB], FGD-style expected fragment [GiB]).
        """
        ...

    @property
    def jobs_in_system(self) -> int:
        """Arrived and unfinished jobs."""
        ...

    @property
    def duration_info(self) -> str:
        """What lengths schedulers see: ``none``, ``sampled`` or ``oracle``."""
        ...

    def predicted_work_s(self, prior_s: float = 0.0) -> float:
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system, as schedulers
        may know it (``duration_info``); a job without a prediction counts ``prior_s``
        times the share of its iterations left (default 0).  [GPU s]"""
        ...

    def next_event_time(self) -> float | None:
        """Time of the next event, or ``None`` when nothing is left to happen (then an
        ``ADVANCE`` is invalid: a waiting job must be placed first).  # [s]"""
        ...

    def pending(self, limit: int | None = None) -> list[int]:
        """Ids of waiting jobs (pending and suspended) by arrival, at most ``limit``."""
        ...

    def running(self, limit: int | None = None) -> list[int]:
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        ...

    def pending_window(self, also_waiting: Iterable[int] = ()) -> list[int]:
        """Ids of the pending window (the core's rule): the waiting jobs a
        placement may address, in arrival order."""
        ...

    def running_window(self) -> list[int]:
        """Ids of the running window (the core's rule): the running jobs a
        suspension may address."""
        ...

    def in_transition(self) -> list[int]:
        """Ids of jobs suspending or resuming (they hold GPUs without progress)."""
        ...

    def gpu_jobs(self, gpu: int) -> list[int]:
        """Ids of the jobs holding memory on ``gpu``."""
        ...

    def job(self, job_id: int) -> JobState:
        """One job, read-only (the simulator's ``JobState``: the one view of a job)."""
        ...

    def can_suspend(self, job_id: int) -> bool:
        """True if the suspension rules allow suspending ``job_id`` now
        (``Simulator.can_suspend``; the env's mask encodes the same rule)."""
        ...

    def mig_instances(self, gpu: int) -> list[MigInstance]:
        """GPU ``gpu``'s MIG instances by start (``sharing = "mig"`` only): profile, start
        memory slice, the jobs holding it, those it is reserved for, MPS-shared."""
        ...

    def find_placement(self, job_id: int, strategy: str) -> tuple[int, ...] | None:
        """GPUs the named strategy would give ``job_id`` now, or ``None``."""
        ...

    def fits(self, job_id: int) -> tuple[bool, bool]:
        """``(shared, exclusive)``: whether a sharing strategy (``pack``, ``spread``,
        ``min_frag``: GPUs of any nodes with a free slot and the job's memory free) and
        ``exclusive`` (idle GPUs) find room for waiting job ``job_id`` now; the env's mask
        is the same rule (``Simulator.fits``)."""
        ...

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
        ...
