"""MISO's unpartitioned and static baselines on the simulator's MIG model (``sharing = "mig"``).

B. Li et al., "MISO: Exploiting Multi-Instance GPU Capability on Multi-Tenant GPU Clusters"
(ACM SoCC 2022) compare their scheduler with two MIG baselines; these are their rules,
acting through the simulator's decisions (``Schedule``, ``Suspend``, ``Repartition``) in
continuous time. ``baselines.mig.artifact_loop`` runs the same rules with the artifact's
1 s steps (docs/mig.md compares the two).

- ``mig_full``: no partitioning: every GPU stays one whole instance; the oldest waiting
  job takes one (``mig_fit``), strictly first in first out.
- ``mig_static``: every GPU is partitioned 3g + 2g + 2g once, while idle (NVIDIA's
  placement on an A100: ``2g.10gb`` at memory slices 0 and 2, ``3g.20gb`` at 4). A waiting
  job takes the largest idle instance of the cluster (``mig_largest``: ties to the lower
  GPU) if it fits it, else the next waiting job is tried (backfilling). Whenever an idle
  instance is larger than the one a job holds on the same GPU, the job is promoted: it is
  checkpointed (``Suspend``) and restarts on the larger one (``mig_largest`` prefers the
  job's own GPU among equal instances), paying its restart time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, JobStatus, Repartition, Schedule, SimView, Suspend
from gpushare_env.sim.types import JobSpec

if TYPE_CHECKING:  # MISO's data and searches load when a MISO policy first decides
    from baselines.mig.search import SlowdownTable
    from gpushare_env.workloads.miso import MisoJob

__all__ = ["STATIC_PARTITION", "MigFull", "MigOracle", "MigStatic", "Miso", "real_layout"]

#: MISO's static partition (3g + 2g + 2g) as NVIDIA places it on an A100-40GB:
#: ``(profile, start memory slice)``.
STATIC_PARTITION: tuple[tuple[str, int], ...] = (("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4))

_SLICES = {"1g": 1, "2g": 2, "3g": 3, "4g": 4, "7g": 7}


def _compute(profile: str) -> int:
    """Compute slices of a profile name (``"3g.20gb"`` -> 3)."""
    return _SLICES[profile.split(".", 1)[0]]


class MigFull(Policy):
    """MISO's unpartitioned baseline: one job per whole GPU, first in first out."""

    name = "mig_full"
    needs_strategies = ("mig_fit",)

    def decide(self, view: SimView) -> Decision:
        """Start the oldest waiting job on a whole idle GPU, else let time run."""
        head = self.visible_pending(view)[:1]
        if head and view.find_placement(head[0], "mig_fit") is not None:
            return Schedule(head[0], "mig_fit")
        return ADVANCE


class MigStatic(Policy):
    """MISO's static-partition baseline: 3g + 2g + 2g on every GPU, largest idle instance
    first, backfilling, promotion into larger idle instances.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        partition: The static partition, ``(profile, start)`` pairs (default MISO's).
    """

    name = "mig_static"
    needs_strategies = ("mig_largest",)
    needs_repartition = True

    def __init__(
        self,
        env: object = None,
        seed: int | None = 0,
        partition: Sequence[tuple[str, int]] = STATIC_PARTITION,
    ) -> None:
        super().__init__(env, seed)
        self.partition = tuple((str(p), int(s)) for p, s in partition)
        self._promoting: set[int] = set()

    def params(self) -> dict[str, object]:
        """Named parameters."""
        return {"partition": self.partition}

    def _reset_state(self) -> None:
        self._promoting = set()

    def decide(self, view: SimView) -> Decision:
        """Partition idle GPUs, restart promoted jobs, place waiting jobs, then promote."""
        for gpu in range(view.num_gpus):
            instances = view.mig_instances(gpu)
            layout = tuple((inst.profile, inst.start) for inst in instances)
            if layout != self.partition and not any(inst.jobs for inst in instances):
                return Repartition(gpu, self.partition)
        waiting = self.visible_pending(view)
        for job_id in waiting:  # promoted jobs first: their larger instance is waiting
            if (
                job_id in self._promoting
                and view.job(job_id).status == JobStatus.SUSPENDED
                and view.find_placement(job_id, "mig_largest") is not None
            ):
                self._promoting.discard(job_id)
                return Schedule(job_id, "mig_largest")
        for job_id in waiting:
            if job_id not in self._promoting and view.find_placement(job_id, "mig_largest"):
                return Schedule(job_id, "mig_largest")
        victim = self._promotion(view)
        if victim is not None:
            self._promoting.add(victim)
            return Suspend(victim)
        return ADVANCE

    def _promotion(self, view: SimView) -> int | None:
        """A job to promote: on a GPU, the idle instances largest first are paired with
        the jobs' instances smallest first; the first pair whose idle one is larger."""
        allowed = set(self.suspendable(view))
        for gpu in range(view.num_gpus):
            instances = view.mig_instances(gpu)
            idle = sorted((_compute(i.profile) for i in instances if not i.jobs), reverse=True)
            held = sorted((_compute(i.profile), i.start, i.jobs[0]) for i in instances if i.jobs)
            for size, (held_size, _, job) in zip(idle, held, strict=False):
                if size <= held_size:
                    break
                if job in allowed:
                    return job
        return None


def _miso_scenario_job(spec: JobSpec) -> MisoJob | None:
    """The job of MISO's scenario ``spec`` is (same id, model and length), or ``None``."""
    jobs = _scenario()
    if spec.job_id >= len(jobs):
        return None
    job = jobs[spec.job_id]
    name = f"{spec.model}_train{spec.batch_size}"
    return job if job.model == name and job.artifact_duration_s == spec.iterations else None


_SCENARIO: list[MisoJob] = []


def _scenario() -> list[MisoJob]:
    if not _SCENARIO:
        from gpushare_env.workloads.miso import miso_jobs

        _SCENARIO.extend(miso_jobs())
    return _SCENARIO


#: MISO's slice sizes as NVIDIA's A100-40GB profiles.
_PROFILE_OF_SIZE = {7: "7g.40gb", 4: "4g.20gb", 3: "3g.20gb", 2: "2g.10gb", 1: "1g.5gb"}
_SIZE_OF = {profile: size for size, profile in _PROFILE_OF_SIZE.items()}


@cache
def _geometry() -> tuple[dict[int, tuple[int, tuple[int, ...]]], int]:
    """Each MISO slice size's memory slices and allowed starts on an A100-40GB, and the
    GPU's memory slices (NVIDIA's placement rules, ``gpushare_env.sim.mig``)."""
    from gpushare_env.sim.mig import get_mig_model

    model = get_mig_model("A100-40GB")
    rules = {size: model.profile(name) for size, name in _PROFILE_OF_SIZE.items()}
    return {s: (p.memory_slices, p.starts) for s, p in rules.items()}, model.memory_slices


def real_layout(
    sizes: Sequence[int], kept: Mapping[int, tuple[int, int]] | None = None
) -> list[tuple[int, int]] | None:
    """NVIDIA placements ``(size, start)`` for the slices ``sizes`` (an artifact partition,
    in slice order) on an A100, keeping ``kept`` (slice index -> ``(size, start)`` already
    placed); ``None`` if they do not fit. Slices are placed largest first, each at its
    lowest free allowed start, backtracking."""
    geometry, memory_slices = _geometry()
    kept = dict(kept or {})
    used = 0
    for size, start in kept.values():
        used |= ((1 << geometry[size][0]) - 1) << start
    todo = sorted((i for i in range(len(sizes)) if i not in kept), key=lambda i: -sizes[i])
    found: dict[int, tuple[int, int]] = dict(kept)

    def place(k: int, used: int) -> bool:
        if k == len(todo):
            return True
        index = todo[k]
        width, starts = geometry[sizes[index]]
        for start in starts:
            bits = ((1 << width) - 1) << start
            if not used & bits and start + width <= memory_slices:
                found[index] = (sizes[index], start)
                if place(k + 1, used | bits):
                    return True
        found.pop(index, None)
        return False

    if not place(0, used):
        return None
    return [found[i] for i in range(len(sizes))]


class Miso(Policy):
    """MISO (Li et al., SoCC 2022): each arriving job goes, strictly first in first out,
    to the GPU with the fewest jobs among those whose partition can admit it (not
    profiling); the GPU profiles its jobs under MPS for ``profiling_s`` (each at a third
    of its speed, the GPU closed to others), then each job runs on the MIG instance the
    search over the artifact's partitions chose from *predicted* speeds; when no job
    waits, GPUs with an idle slice are re-packed. Moving a job is a checkpoint and
    restart (``Suspend``, ``Repartition`` reserving its new instance, ``Schedule``).

    Speeds it decides from: MISO's jobs' predictions as the artifact draws them for
    ``scenario_seed`` (``gpushare_env.workloads.miso``), other jobs' true speeds with
    MISO's error drawn per job. The profiling phase ends on the profiled job's sampling
    event: run with ``SimConfig.sample_iterations = profiling_s / 3`` of its whole-GPU
    iterations (10 for MISO's jobs, which make one a second), as the preset does.

    Args:
        env: The env for ``predict`` (``None`` headless; refused in the env).
        seed: Seeds the errors of jobs that are not MISO's.
        scenario_seed: The artifact's seed its predictions are drawn with.
        profiling_s: Length of the MPS profiling phase [s].
    """

    name = "miso"
    needs_strategies = ("mig_fit",)
    needs_repartition = True
    #: Decide from predicted speeds (``mig_oracle``: the true ones).
    predicted = True

    def __init__(
        self,
        env: object = None,
        seed: int | None = 0,
        scenario_seed: int = 9,
        profiling_s: float = 30.0,
    ) -> None:
        super().__init__(env, seed)
        if profiling_s < 0:
            raise ValueError(f"{self.name}: profiling_s must be >= 0, got {profiling_s}")
        self.scenario_seed = int(scenario_seed)
        self.profiling_s = float(profiling_s) if self.predicted else 0.0
        self._reset_state()

    def params(self) -> dict[str, object]:
        """Named parameters."""
        return {"scenario_seed": self.scenario_seed, "profiling_s": self.profiling_s}

    def _reset_state(self) -> None:
        #: Per GPU: the artifact partition and the job on each slice (None: idle).
        self._plan: dict[int, tuple[tuple[int, ...], list[int | None]]] = {}
        #: Per GPU: (profiling end time, the profiled job).
        self._profiling: dict[int, tuple[float, int]] = {}
        #: Per GPU: a move in progress: (jobs to checkpoint, layout, jobs to (re)start).
        self._moves: dict[
            int, tuple[list[int], list[tuple[str, int, tuple[int, ...], bool]], list[int]]
        ] = {}
        self._tables: dict[int, SlowdownTable] = {}
        self._predictions: dict[int, dict[str, float]] | None = None

    # ------------------------------------------------------------ speeds
    def _table(self, view: SimView, job_id: int) -> SlowdownTable:
        """The slowdown table the policy decides from for ``job_id``."""
        from baselines.mig.search import canonical_table

        table = self._tables.get(job_id)
        if table is None:
            table = self._tables[job_id] = canonical_table(self._slowdowns(view, job_id))
        return table

    def _slowdowns(self, view: SimView, job_id: int) -> dict[int, float]:
        from gpushare_env.sim.mig_speed import MISO_GPU_MODEL, job_speed_table
        from gpushare_env.workloads.miso import (
            MISO_ERROR_MEAN,
            MISO_ERROR_STD,
            PROFILE_SLICES,
            artifact_normalized_latencies,
            miso_scenario_draws,
        )

        spec = view.job(job_id).spec
        scenario = _miso_scenario_job(spec)
        if scenario is not None:
            table = artifact_normalized_latencies(scenario)
            if self.predicted:
                if self._predictions is None:
                    _, self._predictions = miso_scenario_draws(self.scenario_seed)
                table = self._predictions[scenario.job_id]
            whole = table["7g.40gb"]
            return {PROFILE_SLICES[p]: v / whole for p, v in table.items() if p in _SIZE_OF}
        speeds = job_speed_table(spec, MISO_GPU_MODEL)
        slow = {s: 1.0 / v for s, p in _PROFILE_OF_SIZE.items() if (v := speeds[p])}
        if self.predicted:
            rng = np.random.default_rng([self.seed or 0, job_id])
            errors = rng.normal(MISO_ERROR_MEAN, MISO_ERROR_STD, len(slow))
            signs = np.where(rng.random(len(slow)) > 0.5, -1.0, 1.0)
            slow = {s: v + e * g for (s, v), e, g in zip(slow.items(), errors, signs, strict=True)}
        return slow

    def _min_size(self, view: SimView, job_id: int) -> int:
        return min(size for size, _ in self._table(view, job_id))

    # ------------------------------------------------------------ deciding
    def decide(self, view: SimView) -> Decision:
        """Carry on a move in progress; end a profiling phase; place the head job; when
        no job waits, re-pack GPUs with an idle slice."""
        self._forget_finished(view)
        for gpu in list(self._moves):
            decision = self._continue_move(view, gpu)
            if decision is not None and decision is not ADVANCE:
                return decision
        now = view.now_s
        for gpu, (end, _) in list(self._profiling.items()):
            if now + 1e-9 >= end:
                del self._profiling[gpu]
                self._start_move(view, gpu, list(self._active(gpu)), mps=False)
                return self.decide(view)
        moving = {
            j for checkpoint, _, restart in self._moves.values() for j in (*checkpoint, *restart)
        }
        waiting = [j for j in self.visible_pending(view) if j not in moving]
        if waiting:
            return self._place(view, waiting[0])
        for gpu in range(view.num_gpus):
            if gpu not in self._profiling and gpu not in self._moves and self._repack(view, gpu):
                return self.decide(view)
        return ADVANCE

    def _active(self, gpu: int) -> list[int]:
        plan = self._plan.get(gpu)
        return [] if plan is None else [j for j in plan[1] if j is not None]

    def _forget_finished(self, view: SimView) -> None:
        for _, jobs in self._plan.values():
            for k, job in enumerate(jobs):
                if job is not None and view.job(job).status == JobStatus.FINISHED:
                    jobs[k] = None

    def _place(self, view: SimView, job_id: int) -> Decision:
        from baselines.mig.search import admission_size, best_placement

        need = self._min_size(view, job_id)
        best = None
        for gpu in range(view.num_gpus):
            if gpu in self._profiling or gpu in self._moves:
                continue
            active = self._active(gpu)
            allowed = admission_size([self._min_size(view, j) for j in active])
            if allowed is None or allowed < need:
                continue
            if best is None or len(active) < len(self._active(best)):
                best = gpu
        if best is None:
            return ADVANCE  # strictly first in first out: the head waits
        active = self._active(best)
        placement = best_placement([self._table(view, j) for j in [*active, job_id]])
        if placement is None:
            return ADVANCE
        self._plan[best] = (placement.partition, list(placement.jobs_by_slice([*active, job_id])))
        if self.profiling_s > 0:
            self._profiling[best] = (view.now_s + self.profiling_s, job_id)
        self._start_move(view, best, [*active, job_id], mps=self.profiling_s > 0, checkpoint=active)
        return self.decide(view)

    def _start_move(
        self,
        view: SimView,
        gpu: int,
        jobs: list[int],
        mps: bool,
        checkpoint: list[int] | None = None,
    ) -> None:
        """Checkpoint ``checkpoint`` (default: every job of ``jobs`` holding an instance of
        ``gpu``), re-partition ``gpu`` (MPS over the whole GPU, or the plan's layout) and
        restart ``jobs`` on their reserved instances."""
        if checkpoint is None:
            checkpoint = [j for j in jobs if view.job(j).status != JobStatus.SUSPENDED]
        if mps:
            layout = [("7g.40gb", 0, tuple(jobs), True)]
        else:
            partition, by_slice = self._plan[gpu]
            placed = real_layout(partition)
            assert placed is not None, partition
            layout = [
                (_PROFILE_OF_SIZE[size], start, () if job is None else (job,), False)
                for (size, start), job in zip(placed, by_slice, strict=True)
            ]
        self._moves[gpu] = (list(checkpoint), layout, list(jobs))

    def _continue_move(self, view: SimView, gpu: int) -> Decision | None:
        """The next decision of ``gpu``'s move, ``ADVANCE`` while it waits for time to
        run, ``None`` once it is done."""
        checkpoint, layout, restart = self._moves[gpu]
        statuses = [view.job(job).status for job in checkpoint]
        for job, status in zip(checkpoint, statuses, strict=True):
            if status == JobStatus.RUNNING:
                return Suspend(job)
        if JobStatus.RESUMING in statuses or JobStatus.SUSPENDING in statuses:
            return ADVANCE  # wait: a restart ends (then its checkpoint), or a checkpoint
        if layout:
            self._moves[gpu] = ([], [], restart)  # checkpoints done, the layout applied
            return Repartition(gpu, tuple(layout))
        for job in restart:
            if view.job(job).status in (JobStatus.PENDING, JobStatus.SUSPENDED):
                return Schedule(job, "mig_fit")
        del self._moves[gpu]
        return None

    def _repack(self, view: SimView, gpu: int) -> bool:
        """Start re-packing ``gpu`` if it has an idle slice (True if it did)."""
        from baselines.mig.search import best_placement, moved_jobs

        plan = self._plan.get(gpu)
        if plan is None or None not in plan[1]:
            return False
        partition, by_slice = plan
        active = [j for j in by_slice if j is not None]
        if not active:
            del self._plan[gpu]
            self._moves[gpu] = ([], [("7g.40gb", 0, (), False)], [])
            return True
        placement = best_placement([self._table(view, j) for j in active])
        if placement is None:
            return False
        new_jobs: list[int | None] = list(placement.jobs_by_slice(active))
        moved = moved_jobs(partition, by_slice, placement.partition, new_jobs)
        self._plan[gpu] = (placement.partition, list(new_jobs))
        old_real = real_layout(partition)
        assert old_real is not None
        where = {job: old_real[k] for k, job in enumerate(by_slice) if job is not None}
        kept = {
            k: where[job]
            for k, job in enumerate(new_jobs)
            if job is not None and job not in moved and where[job][0] == placement.partition[k]
        }
        placed = real_layout(placement.partition, kept)
        if placed is None:  # NVIDIA's geometry moves more jobs than the artifact's
            moved, placed = list(active), real_layout(placement.partition)
            assert placed is not None
        layout: list[tuple[str, int, tuple[int, ...], bool]] = [
            (
                _PROFILE_OF_SIZE[size],
                start,
                () if job is None or job not in moved else (job,),
                False,
            )
            for (size, start), job in zip(placed, new_jobs, strict=True)
        ]
        self._moves[gpu] = (list(moved), layout, list(moved))
        return True


class MigOracle(Miso):
    """MISO with the true speeds and no profiling (an upper bound: it knows each job's
    speed on every profile before it runs)."""

    name = "mig_oracle"
    oracle = True
    predicted = False
