"""``gandiva``: introspective packing, time-slicing and migration (Gandiva as published).

Each decision, in this order (Xiao et al. 2018, section 4: the scheduler reacts to
arrivals and departures and introspects the running jobs; its mechanisms are packing,
suspend-resume time-slicing and migration):

1. **Migration to consolidate.** A running job whose workers span nodes is suspended and
   re-placed on one node when a node has enough idle GPUs and the time it saves (it loses
   its cross-node slowdown) exceeds ``migration_gain`` times its restart overhead; each
   job migrates at most once.
2. **Round robin.** Waiting jobs are served longest current wait first (for jobs that
   never ran this is arrival order; a job that was time-sliced out goes to the back);
   a job re-placed by step 1 goes first, then a job a slice was opened for (step 5).
   Jobs that cannot start are passed over (backfilling).
3. **Idle GPUs first.** If enough GPUs are idle, the job gets them alone (``exclusive``,
   fewest nodes).
4. **Packing by intensity.** Otherwise it is co-located on shared GPUs only if every
   GPU it joins keeps its compute load ``U_g <= max_load`` (default 1: the co-located
   jobs do not slow each other beyond the small context-switch penalty). The ``pack``
   and ``spread`` candidate placements are tried in that order.
5. **Time-slicing.** If the first job that cannot start has waited ``time_slice_s`` or
   more, a running job of the same GPU count that holds its GPUs alone and has run a full
   slice since it (re)started is suspended (the one that has run longest), and the
   waiting job takes its GPUs when the suspension completes: the pair swaps every slice
   (suspend-resume round robin).

Suspension rules: steps 1 and 5 (and the variants' rules) choose their victims only among
the running jobs the simulator's rules allow suspending now (``SimView.can_suspend``:
``max_suspends_per_job``, ``min_service_s``; ``Policy.suspendable``). A cross-node job
they forbid is not migrated (the next one is, or none); a slice goes to the next
same-size job that has run a full slice, or is not opened (the waiting job keeps its
place). Every ``Suspend`` is thus valid, so the bookkeeping of a migration or a slice
never waits for a suspension that cannot happen.

Source: W. Xiao, R. Bhardwaj, R. Ramjee, M. Sivathanu, N. Kwatra, Z. Han, P. Patel,
X. Peng, H. Zhao, Q. Zhang, F. Yang, L. Zhou, "Gandiva: Introspective Cluster Scheduling
for Deep Learning", OSDI'18 (suspend-resume time-slicing, packing, migration; the affinity
of same-size jobs follows the node sets of the Tiresias authors' Gandiva simulator).
Differences: Gandiva's suspend-resume takes about a second and slices every minute; here
a restart costs 5-50 s (docs/model.md, *What is modelled*), so the default slice is 10
minutes to keep that overhead near 5%; packing uses each job's known intensity instead of
measuring co-located throughput and unpacking afterwards; there is no grow-shrink (jobs
have a fixed GPU count).

Variants of this project built on these steps (not Gandiva's; see their modules):
``gandiva_srpt`` (step 2 and the choice of a slice's victim by predicted remaining time)
and ``gandiva_critical_path`` (``gandiva_srpt`` with a critical-path rule). They change
only the hooks of :data:`RULE_HOOKS`; the steps above are written once, here.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from baselines.base import Policy, committed_load
from gpushare_env.sim import ADVANCE, Decision, JobState, JobStatus, Schedule, SimView, Suspend

__all__ = ["RULE_HOOKS", "Gandiva", "Rank", "WaitClass"]

_EPS = 1e-9

#: The methods through which a variant adds its rules to Gandiva's steps; with Gandiva's
#: own versions of them, a variant schedules exactly as ``gandiva``.
RULE_HOOKS: tuple[str, ...] = (
    "_before_migration",
    "_queue_rank",
    "_opens_slices",
    "_packing_load",
    "_may_take_idle",
    "_slice_key",
)

#: A waiting job's place in the queue: its class, then a key (smaller first), then its id.
Rank = tuple[int, float, int]


class WaitClass(IntEnum):
    """Classes of waiting jobs, served in this order (then by the key of their rank)."""

    MIGRATING = 0  # suspended by step 1 to be re-placed on one node
    SLICE_OPENED = 1  # a running job was suspended to make room for it (step 5)
    CRITICAL = 2  # gandiva_critical_path: on the critical path, longest first
    BY_WAIT = 3  # longest wait first (Gandiva's round robin)
    BY_PREDICTION = 4  # gandiva_srpt: shortest predicted remaining time first


class Gandiva(Policy):
    """Gandiva: round robin with packing (``U_g <= max_load``), time-slicing and migration.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        time_slice_s: Time-slicing quantum: how long a job runs before it may be swapped
            out for a waiting job of the same size, and how long that job must have
            waited. Default 600 s: restarts cost 5-50 s here (Gandiva's cost about 1 s
            for a 60 s slice), and 600 s keeps that overhead near 5%.  [s]
        max_load: Largest compute load ``U_g`` packing may create on a GPU. Default 1.0:
            up to a full GPU of intensity, so co-located jobs barely slow each other.
        migration_gain: Migrate a cross-node job only if the time it would save is at
            least this many times its restart overhead. Default 2 (a clear net gain);
            ``inf`` disables migration.
    """

    name = "gandiva"
    needs_strategies = ("exclusive", "pack", "spread")

    def __init__(
        self,
        env: Any = None,
        seed: int | None = 0,
        time_slice_s: float = 600.0,
        max_load: float = 1.0,
        migration_gain: float = 2.0,
    ) -> None:
        super().__init__(env, seed)
        if time_slice_s <= 0:
            raise ValueError(f"{self.name}: time_slice_s must be > 0, got {time_slice_s}")
        if max_load <= 0:
            raise ValueError(f"{self.name}: max_load must be > 0, got {max_load}")
        if migration_gain <= 0:
            raise ValueError(f"{self.name}: migration_gain must be > 0, got {migration_gain}")
        self.time_slice_s = time_slice_s
        self.max_load = max_load
        self.migration_gain = migration_gain
        self._reset_state()

    def params(self) -> dict[str, Any]:
        """Named parameters."""
        return {
            "time_slice_s": self.time_slice_s,
            "max_load": self.max_load,
            "migration_gain": self.migration_gain,
        }

    def _reset_state(self) -> None:
        self._migrating: set[int] = set()  # suspended to be re-placed on one node
        self._migrated: set[int] = set()
        self._settled: set[int] = set()  # running on one node (or migrated): skip checks
        self._slice_for: dict[int, int] = {}  # waiting job -> job suspended to make room
        self.time_slices = 0

    def decide(self, view: SimView) -> Decision:
        """Migrate, place, or time-slice, in that order; otherwise let time run."""
        running = self.visible_running(view)
        pending = self.visible_pending(view)
        first = self._before_migration(view, running)
        if first is not None:
            return first
        migration = self._migration(view)  # step 1
        if migration is not None:
            return migration
        ranks = {job_id: self._rank(view, job_id) for job_id in pending}
        order = sorted(pending, key=ranks.__getitem__)  # step 2
        blocked: JobState | None = None
        memo: dict[tuple[float, ...], str | None] = {}  # same shape, same answer
        load = self._packing_load(view, running) if order else view.load
        for job_id in order:
            job = view.job(job_id)
            shape = (job.num_gpus, job.memory_gib, job.intensity, *job.node_request)
            if shape not in memo:
                memo[shape] = self._placement(view, job, load)  # steps 3-4
            strategy = memo[shape]
            if strategy is not None:
                self._migrating.discard(job_id)
                self._settled.discard(job_id)  # new GPUs: check again once it runs
                self._slice_for.pop(job_id, None)
                return Schedule(job_id, strategy)
            if (
                blocked is None
                and job_id not in self._slice_for
                and self._opens_slices(ranks[job_id])
            ):
                blocked = job
        # a reservation whose victim has finished suspending had its chance just now
        for waiting_id, suspended_id in list(self._slice_for.items()):
            if view.job(suspended_id).status != JobStatus.SUSPENDING:
                del self._slice_for[waiting_id]
        if blocked is not None and blocked.wait_s >= self.time_slice_s:  # step 5
            victim = self._slice_victim(view, blocked, self.suspendable(view))
            if victim is not None:
                self._slice_for[blocked.job_id] = victim
                self.time_slices += 1
                return Suspend(victim)
        return ADVANCE

    # ------------------------------------------------- hooks (variants change these)
    def _before_migration(self, view: SimView, running: list[int]) -> Decision | None:
        """A decision taken before step 1 (Gandiva has none)."""
        return None

    def _queue_rank(self, view: SimView, job: JobState) -> Rank:
        """Step 2's place of a job neither migrating nor given a slice: longest wait first."""
        return (WaitClass.BY_WAIT, -job.wait_s, job.job_id)

    def _opens_slices(self, rank: Rank) -> bool:
        """True if a waiting job of this rank may open a time slice (step 5): all may."""
        return True

    def _packing_load(self, view: SimView, running: list[int]) -> np.ndarray:
        """The compute load steps 3-4 place against, restarting jobs included.  # (G,)"""
        return committed_load(view)

    def _may_take_idle(self, view: SimView, job: JobState) -> bool:
        """True if ``job`` may take idle GPUs alone (step 3): always."""
        return True

    def _slice_key(
        self, view: SimView, job: JobState, waiting: JobState, ran_s: float
    ) -> float | None:
        """How much step 5 prefers suspending ``job`` (largest first; ``None``: never)
        for ``waiting``: the time it has run since it (re)started."""
        return ran_s

    # -------------------------------------------------------------- helpers
    def _rank(self, view: SimView, job_id: int) -> Rank:
        """Migrating jobs first, then jobs a slice was opened for, then ``_queue_rank``."""
        if job_id in self._migrating:
            return (WaitClass.MIGRATING, 0.0, job_id)
        if job_id in self._slice_for:
            return (WaitClass.SLICE_OPENED, 0.0, job_id)
        return self._queue_rank(view, view.job(job_id))

    def _migration(self, view: SimView) -> Decision | None:
        """Step 1: suspend a cross-node job that a node with enough idle GPUs can hold
        (among the running jobs the suspension rules allow suspending now)."""
        idle_per_node = np.bincount(view.gpu_node, weights=(view.holders == 0).astype(float))
        if self.migration_gain < np.inf and float(idle_per_node.max()) >= 2:
            for job_id in self.suspendable(view):
                if job_id in self._settled:
                    continue
                if self._should_migrate(view, view.job(job_id), idle_per_node):
                    self._migrating.add(job_id)
                    self._migrated.add(job_id)
                    return Suspend(job_id)
        return None

    def _migration_pays(self, job: JobState) -> bool:
        """The time one node saves ``job`` exceeds ``migration_gain`` restart overheads."""
        remaining = job.predicted_remaining_s
        if remaining is None:
            return False
        # remaining is solo time; cross-node it takes remaining / factor
        saved_s = remaining / job.cross_node_factor - remaining
        return saved_s >= self.migration_gain * job.resume_overhead_s

    def _placement(self, view: SimView, job: JobState, load: np.ndarray) -> str | None:
        """``exclusive`` on idle GPUs, else a shared placement keeping ``U_g <= max_load``
        (``load``: the compute load of each GPU, restarting jobs included)."""
        shared, exclusive = view.fits(job.job_id)
        if exclusive and self._may_take_idle(view, job):
            return "exclusive"
        if not shared:
            return None
        # O(G) pre-check: enough GPUs with the memory, a slot and the compute to spare?
        spare = (
            (view.free_memory_gib + _EPS >= job.memory_gib)
            & (view.holders < view.max_jobs_per_gpu)
            & (load + job.intensity <= self.max_load + _EPS)
        )
        if int(np.count_nonzero(spare)) < job.num_gpus:
            return None
        for strategy in ("pack", "spread"):
            gpus = view.find_placement(job.job_id, strategy)
            if gpus is None:
                return None  # memory does not fit anywhere: no other strategy fits either
            if bool(np.all(load[list(gpus)] + job.intensity <= self.max_load + _EPS)):
                return strategy
        return None

    def _slice_victim(self, view: SimView, waiting: JobState, suspendable: list[int]) -> int | None:
        """A same-size running job alone on its GPUs that has run a full slice, the one
        of largest ``_slice_key``, among ``suspendable`` (the running jobs the suspension
        rules allow suspending now)."""
        now = view.now_s
        best: tuple[float, int] | None = None
        for job_id in suspendable:
            job = view.job(job_id)
            if job.num_gpus != waiting.num_gpus or job_id in self._slice_for.values():
                continue
            ran = now - job.held_since_s
            if ran < self.time_slice_s:
                continue
            if bool(np.any(view.holders[list(job.gpus)] != 1)):
                continue  # shares a GPU: suspending it would not free whole GPUs
            key = self._slice_key(view, job, waiting, ran)
            if key is None:
                continue
            if best is None or key > best[0]:
                best = (key, job_id)
        return None if best is None else best[1]

    def _should_migrate(self, view: SimView, job: JobState, idle_per_node: np.ndarray) -> bool:
        """True if a cross-node job should move to one node now."""
        if job.num_gpus < 2 or job.job_id in self._migrated or job.status != JobStatus.RUNNING:
            self._settled.add(job.job_id)  # never a candidate while it keeps these GPUs
            return False
        nodes = view.gpu_node[list(job.gpus)]
        if bool(np.all(nodes == nodes[0])):
            self._settled.add(job.job_id)
            return False
        if not bool(np.any(idle_per_node >= job.num_gpus)):
            return False
        return self._migration_pays(job)
