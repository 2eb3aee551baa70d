"""The target workload of FGD's fragmentation measure (Weng et al., ATC'23, section 3).

The *target workload* is the distribution of requests a cluster expects: the requests of
a list of tasks, counted by kind (CPU, GPU share, GPU count, accepted GPU models; memory
does not count), the most popular kinds kept until they cover 95% of the tasks, their
frequencies renormalised over the kept share (the artifact of
``hkust-adsl/kubernetes-scheduler-simulator``: ``typicalPods`` with
``podPopularityThreshold: 95``). Ties in popularity go to the larger request first.

Both FGD implementations read it from here: ``baselines.openb`` (the paper's static
experiment, over a pod list) and the core's ``share_fgd`` strategy (over an episode's
jobs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["POPULARITY_PCT", "TypicalTask", "typical_requests"]

#: Share of the tasks the kept request kinds must cover.  [%]
POPULARITY_PCT = 95


@dataclass(frozen=True, slots=True)
class TypicalTask:
    """One kind of request of the target workload, with its frequency.

    Attributes:
        cpu_milli: CPU.  [milli-cores]
        num_gpu: GPUs.
        gpu_milli: Share of each GPU.  [milli-GPU]
        gpu_spec: Accepted GPU models; empty: any.
        frequency: Probability of this kind in the target workload.
    """

    cpu_milli: int  # [milli-cores]
    num_gpu: int
    gpu_milli: int  # [milli-GPU]
    gpu_spec: tuple[str, ...]
    frequency: float

    def accepts(self, model: str) -> bool:
        """Whether this kind may run on GPUs of ``model``."""
        return not self.gpu_spec or model in self.gpu_spec


def typical_requests(
    kinds: Iterable[tuple[int, int, int, tuple[str, ...]]], popularity_pct: int = POPULARITY_PCT
) -> tuple[TypicalTask, ...]:
    """The target workload of requests ``(cpu_milli, gpu_milli, num_gpu, gpu_spec)``, one
    per task, most frequent kind first (module docstring).

    Raises:
        ValueError: No task.
    """
    counts = Counter(kinds)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("the target workload needs at least one task")
    # most popular first; among equals the larger request (CPU, share, count, models)
    ranked = sorted(
        counts.items(),
        key=lambda item: (item[1], item[0][0], item[0][1], item[0][2], "|".join(item[0][3])),
        reverse=True,
    )
    kept: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
    covered = 0
    for kind, count in ranked:
        if covered >= popularity_pct * total / 100:
            break
        kept.append((kind, count))
        covered += count
    # the artifact normalises twice: by all tasks, then by the kept share of them
    kept_share = covered / total
    return tuple(
        TypicalTask(cpu, num, milli, spec, count / total / kept_share)
        for (cpu, milli, num, spec), count in kept
    )
