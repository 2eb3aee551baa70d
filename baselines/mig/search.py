"""MISO's searches over MIG partitions, as pure functions (``docs/design/miso_protocol.md``).

MISO (SoCC 2022) keeps every A100 in one of the artifact's 18 partitions
(:data:`~gpushare_env.workloads.miso.A100_PARTITIONS`): tuples of slice sizes, in compute
slices of 7, in position order. A slice's *start* is the sum of the sizes before it. A GPU
holds one job per slice.

The searches decide from *slowdown tables*, one per job: a mapping from a slice size in
``{7, 4, 3, 2, 1}`` to the job's slowdown there, ``perf[p] / perf[7g]`` (1.0 on 7). A job
fits exactly the sizes its table has. Tables may be given as mappings or, as the loop does
to memoise, already canonical (:func:`canonical_table`: a tuple of ``(size, slowdown)``
pairs, sizes decreasing).

* :func:`admission_size`: the largest new job a GPU admits (the artifact's
  ``update_max_allowed``).
* :func:`best_placement`: the partition and assignment of least mean slowdown, found the
  artifact's way (``single_gpu_optimize`` to *place* a new job, ``idle_partition_optimize_V2``
  to *re-pack* the active jobs): the partitions with exactly as many slices as jobs, in their
  order, times :func:`itertools.permutations` of the jobs over the slices, keeping the
  **first** candidate whose mean slowdown is strictly smaller than the best so far. The mean
  is computed as numpy's ``np.mean`` does for so few values (a sum in slice order, then one
  division), so ties and near-ties break exactly as in the artifact.
* :func:`moved_jobs`: which jobs a change of assignment checkpoints (``get_num_migrate``).
* :func:`static_promotions`: ``mig_static``'s promotions into idle slices
  (``static_idle_optimize_V2``).

>>> small, big = {7: 1.0, 4: 1.3, 3: 1.5}, {7: 1.0, 4: 1.1, 3: 1.2}
>>> best_placement([small, big])
Placement(partition=(3, 3), slices=(0, 1), mean_slowdown=1.35)
>>> admission_size([3, 3]) is None, admission_size([4])  # no listed partition has 4 + 3
(True, 2)
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from gpushare_env.workloads.miso import A100_PARTITIONS

__all__ = [
    "SLICE_SIZES",
    "Partition",
    "Placement",
    "SlowdownTable",
    "admission_size",
    "best_placement",
    "canonical_table",
    "moved_jobs",
    "slice_starts",
    "static_promotions",
]

#: The slice sizes of an A100, largest first (the order ``admission_size`` tries them in).
SLICE_SIZES: tuple[int, ...] = (7, 4, 3, 2, 1)

#: A partition: slice sizes in position order, e.g. ``(3, 2, 2)``.
Partition = tuple[int, ...]

#: A canonical slowdown table: ``(size, slowdown)`` pairs, sizes decreasing.
SlowdownTable = tuple[tuple[int, float], ...]

#: A job id (any hashable value; ``None`` marks an idle slice).
J = TypeVar("J", bound=Hashable)


@dataclass(frozen=True)
class Placement:
    """The result of :func:`best_placement`.

    Attributes:
        partition: The chosen partition (slice sizes in position order).
        slices: For each job, in the order the tables were given, the index of its slice
            in ``partition``.
        mean_slowdown: The jobs' mean slowdown there (the value the search minimised).
    """

    partition: Partition
    slices: tuple[int, ...]
    mean_slowdown: float

    def jobs_by_slice(self, jobs: Sequence[J]) -> tuple[J, ...]:
        """``jobs`` (one per table, same order) laid out by slice: element ``k`` is the job
        on slice ``k``."""
        if len(jobs) != len(self.slices):
            raise ValueError(
                f"jobs_by_slice: jobs must have {len(self.slices)} entries, got {len(jobs)}"
            )
        layout = {index: job for job, index in zip(jobs, self.slices, strict=True)}
        return tuple(layout[k] for k in range(len(self.partition)))


def canonical_table(table: Mapping[int, float] | SlowdownTable) -> SlowdownTable:
    """``table`` as a hashable tuple of ``(size, slowdown)`` pairs, sizes decreasing.

    Raises:
        ValueError: A size not in ``{7, 4, 3, 2, 1}``, a slowdown that is not a number
            ``> 0``, or an empty table.
    """
    items = table.items() if isinstance(table, Mapping) else table
    pairs: dict[int, float] = {}
    for size, slowdown in items:
        if isinstance(size, bool) or size not in SLICE_SIZES:
            raise ValueError(f"slowdown table: size must be one of {SLICE_SIZES}, got {size!r}")
        if (
            isinstance(slowdown, bool)
            or not isinstance(slowdown, (int, float))
            or not (slowdown > 0)
        ):
            raise ValueError(
                f"slowdown table: slowdown on size {size} must be a number > 0, got {slowdown!r}"
            )
        pairs[int(size)] = float(slowdown)
    if not pairs:
        raise ValueError("slowdown table: a job must fit at least one slice size")
    return tuple(sorted(pairs.items(), reverse=True))


def slice_starts(partition: Sequence[int]) -> tuple[int, ...]:
    """The start of each slice: the sum of the sizes before it."""
    starts, total = [], 0
    for size in partition:
        starts.append(total)
        total += size
    return tuple(starts)


def _check_partitions(partitions: Sequence[Sequence[int]]) -> tuple[Partition, ...]:
    checked = tuple(tuple(int(s) for s in p) for p in partitions)
    for partition in checked:
        if not partition or any(s not in SLICE_SIZES for s in partition):
            raise ValueError(
                f"partitions: each must be a non-empty list of sizes in {SLICE_SIZES}, "
                f"got {partition!r}"
            )
    return checked


# ------------------------------------------------------------------ admission


def admission_size(
    min_sizes: Sequence[int], partitions: Sequence[Sequence[int]] = A100_PARTITIONS
) -> int | None:
    """The largest new job a GPU admits: the artifact's ``update_max_allowed``.

    ``min_sizes`` are the minimum slice sizes of the GPU's active jobs. The answer is the
    largest ``s`` in 7, 4, 3, 2, 1 such that some partition has, for each size, at least as
    many slices *of exactly that size* as ``min_sizes`` plus ``s`` has (a job is not assumed
    to take a larger slice here). ``None`` means the GPU is full.

    >>> admission_size([]), admission_size([1, 1, 1, 1, 1, 1]), admission_size([4, 3])
    (7, 1, None)
    """
    return _admission(tuple(sorted(int(s) for s in min_sizes)), _check_partitions(partitions))


@lru_cache(maxsize=4096)
def _admission(min_sizes: tuple[int, ...], partitions: tuple[Partition, ...]) -> int | None:
    counts = [Counter(p) for p in partitions]
    base = Counter(min_sizes)
    for size in SLICE_SIZES:
        wanted = base.copy()
        wanted[size] += 1
        if any(all(c[k] >= v for k, v in wanted.items()) for c in counts):
            return size
    return None


# ------------------------------------------------------------------ placement


def best_placement(
    tables: Sequence[Mapping[int, float] | SlowdownTable],
    partitions: Sequence[Sequence[int]] = A100_PARTITIONS,
) -> Placement | None:
    """The partition and assignment of least mean slowdown, found the artifact's way.

    Candidates are, for each partition with exactly ``len(tables)`` slices (in the order of
    ``partitions``), each permutation of the jobs over its slices (in
    :func:`itertools.permutations` order of the jobs as given; job ``k`` of a permutation
    goes on slice ``k``); a candidate counts only if every job fits its slice. The first
    candidate whose mean slowdown is strictly smaller than the best so far is kept, so of
    equal candidates the first wins. Used both to *place* (the GPU's active jobs in slice
    order, then the new job) and to *re-pack* (the active jobs only).

    Returns ``None`` when no candidate exists (the artifact raises there). Memoised on the
    tables and partitions.
    """
    if not tables:
        raise ValueError("best_placement: tables must hold at least one job")
    canonical = tuple(canonical_table(t) for t in tables)
    return _best_placement(canonical, _check_partitions(partitions))


@lru_cache(maxsize=1 << 16)
def _best_placement(
    tables: tuple[SlowdownTable, ...], partitions: tuple[Partition, ...]
) -> Placement | None:
    n = len(tables)
    lookup = [dict(t) for t in tables]
    best: Placement | None = None
    least = 1000.0  # the artifact's starting bound; every slowdown sum here is far below
    for partition in partitions:
        if len(partition) != n:
            continue
        # slowdown[j][k]: job j on slice k, or None where it does not fit
        slowdown = [[table.get(size) for size in partition] for table in lookup]
        for order in itertools.permutations(range(n)):
            total = 0.0
            for k, j in enumerate(order):
                value = slowdown[j][k]
                if value is None:
                    break
                total += value
            else:
                mean = total / n
                if mean < least:
                    least = mean
                    slices = [0] * n
                    for k, j in enumerate(order):
                        slices[j] = k
                    best = Placement(partition, tuple(slices), mean)
    return best


# ------------------------------------------------------------------ moves


def moved_jobs(
    old_partition: Sequence[int],
    old_jobs: Sequence[J | None],
    new_partition: Sequence[int],
    new_jobs: Sequence[J | None],
) -> list[J]:
    """The jobs that move from one assignment to another (the artifact's
    ``get_num_migrate``), in the old slice order.

    An assignment is a partition and the job on each slice (``None`` for an idle slice). A
    job moves when its slice size or its slice's start (the sum of the sizes before it)
    changes; a moved job is checkpointed.

    Raises:
        ValueError: Lengths that differ between a partition and its jobs, or assignments
            that do not hold the same jobs.

    >>> moved_jobs((3, 2, 2), ("a", None, "b"), (3, 3), ("a", "b"))
    ['b']
    """
    if len(old_partition) != len(old_jobs) or len(new_partition) != len(new_jobs):
        raise ValueError("moved_jobs: each partition needs exactly one entry per slice in its jobs")
    old_active = [j for j in old_jobs if j is not None]
    new_active = [j for j in new_jobs if j is not None]
    if len(set(old_active)) != len(old_active) or set(old_active) != set(new_active):
        raise ValueError(
            f"moved_jobs: the assignments must hold the same jobs once each, got "
            f"{old_active!r} and {new_active!r}"
        )
    old_starts, new_starts = slice_starts(old_partition), slice_starts(new_partition)
    new_index = {job: k for k, job in enumerate(new_jobs) if job is not None}
    moved: list[J] = []
    for k, job in enumerate(old_jobs):
        if job is None:
            continue
        m = new_index[job]
        if old_partition[k] != new_partition[m] or old_starts[k] != new_starts[m]:
            moved.append(job)
    return moved


# ------------------------------------------------------------------ mig_static


def static_promotions(
    partition: Sequence[int], jobs: Sequence[J | None]
) -> list[tuple[J, int, int]]:
    """``mig_static``'s promotions (the artifact's ``static_idle_optimize_V2``).

    The idle slices, largest first, are paired with the active jobs' slices, smallest
    first (slice order on ties, in both lists); going down the pairs, while the idle slice
    is larger the job is promoted into it, and the first pair where it is not ends the
    promotions. Returns ``(job, from_slice, to_slice)`` for each promoted job; applying them
    all at once gives the new assignment (the slices involved are distinct).

    >>> static_promotions((3, 2, 2), (None, "a", "b"))
    [('a', 1, 0)]
    """
    if len(partition) != len(jobs):
        raise ValueError("static_promotions: jobs must have exactly one entry per slice")
    idle = sorted(
        (k for k, job in enumerate(jobs) if job is None), key=lambda k: partition[k], reverse=True
    )
    active = sorted(
        (k for k, job in enumerate(jobs) if job is not None), key=lambda k: partition[k]
    )
    promotions: list[tuple[J, int, int]] = []
    for to_slice, from_slice in zip(idle, active, strict=False):
        job = jobs[from_slice]
        if job is None or partition[to_slice] <= partition[from_slice]:
            break
        promotions.append((job, from_slice, to_slice))
    return promotions
