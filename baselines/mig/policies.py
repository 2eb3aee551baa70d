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

from collections.abc import Sequence

from baselines.base import Policy
from gpushare_env.sim import ADVANCE, Decision, JobStatus, Repartition, Schedule, SimView, Suspend

__all__ = ["STATIC_PARTITION", "MigFull", "MigStatic"]

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
