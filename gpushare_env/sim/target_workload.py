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

Which kinds are kept is a rule (:data:`TARGET_WORKLOADS`, the simulator setting
``simulator.target_workload``):

* ``"popular"`` (the paper's, the default): the most popular kinds until they cover 95%
  of the tasks. On Alibaba's ``openb_pod_list_default`` (1% of its tasks ask for 2-8
  GPUs) it keeps no multi-GPU kind, so FGD sees no fragment in a node whose free GPUs are
  too few for a multi-GPU task;
* ``"popular_multi_gpu"``: those kinds, plus every kind asking for more than one GPU;
* ``"gpu_demand"``: the kinds asking for the most GPU (tasks x GPUs x share) until they
  cover 95% of the GPU requested; CPU-only kinds ask for none and are left out (all
  kinds by popularity if no task asks for a GPU).

Whatever the rule, a kept kind's frequency is its share of the tasks of the kept kinds
(the paper's: the probability that the next task is of that kind).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["POPULARITY_PCT", "TARGET_WORKLOADS", "TypicalTask", "typical_requests"]

#: Share of the tasks (of the GPU requested, under ``"gpu_demand"``) the kept request
#: kinds must cover.  [%]
POPULARITY_PCT = 95

#: The rules choosing the kept kinds (module docstring); the first is the default.
TARGET_WORKLOADS: tuple[str, ...] = ("popular", "popular_multi_gpu", "gpu_demand")

_Kind = tuple[int, int, int, tuple[str, ...]]


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
    kinds: Iterable[_Kind],
    popularity_pct: int = POPULARITY_PCT,
    rule: str = TARGET_WORKLOADS[0],
) -> tuple[TypicalTask, ...]:
    """The target workload of requests ``(cpu_milli, gpu_milli, num_gpu, gpu_spec)``, one
    per task, by ``rule`` (one of :data:`TARGET_WORKLOADS`; module docstring): the kinds
    kept by popularity first, most frequent first, then (``"popular_multi_gpu"``) the
    multi-GPU kinds added, most frequent first; under ``"gpu_demand"`` the kinds by GPU
    requested, most first.

    Raises:
        ValueError: No task, or an unknown ``rule`` (the rules are listed).
    """
    if rule not in TARGET_WORKLOADS:
        raise ValueError(f"target_workload must be one of {list(TARGET_WORKLOADS)}, got {rule!r}")
    counts = Counter(kinds)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("the target workload needs at least one task")

    def demand(item: tuple[_Kind, int]) -> int:
        (_, milli, num, _), count = item
        return count * num * milli

    def larger(item: tuple[_Kind, int]) -> tuple[int, int, int, str]:
        # among equals the larger request (CPU, share, count, models)
        (cpu, milli, num, spec), _ = item
        return (cpu, milli, num, "|".join(spec))

    by_demand = rule == "gpu_demand" and any(demand(item) for item in counts.items())
    weight = demand if by_demand else (lambda item: item[1])
    ranked = sorted(counts.items(), key=lambda item: (weight(item), *larger(item)), reverse=True)
    need = popularity_pct * sum(weight(item) for item in ranked) / 100
    kept: list[tuple[_Kind, int]] = []
    covered = 0
    for item in ranked:
        if covered >= need:
            break
        kept.append(item)
        covered += weight(item)
    if rule == "popular_multi_gpu":
        kept += [item for item in ranked if item[0][2] > 1 and item not in kept]
    # the artifact normalises twice: by all tasks, then by the kept share of them
    tasks = sum(count for _, count in kept)
    return tuple(
        TypicalTask(cpu, num, milli, spec, count / total / (tasks / total))
        for (cpu, milli, num, spec), count in kept
    )
