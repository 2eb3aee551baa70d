"""MISO's searches (``baselines.mig.search``) on small hand-checked cases.

Slowdown tables map a slice size (compute slices of 7) to ``perf[p] / perf[7g]``; a job
fits exactly the sizes its table has. The partitions are the artifact's 18
(``A100_PARTITIONS``) unless a case passes its own.
"""

from __future__ import annotations

import pytest

from baselines.mig import (
    Placement,
    admission_size,
    best_placement,
    canonical_table,
    moved_jobs,
    slice_starts,
    static_promotions,
)
from gpushare_env.workloads.miso import A100_PARTITIONS

#: Fits every size; the same slowdown everywhere.
FLAT = {7: 1.0, 4: 1.0, 3: 1.0, 2: 1.0, 1: 1.0}
#: Fits 3g and larger only (no 2g, no 1g).
NO_SMALL = {7: 1.0, 4: 1.1, 3: 1.2}
#: Fits every size, slows down a lot on small slices.
SMALL_OK = {7: 1.0, 4: 1.2, 3: 1.3, 2: 1.6, 1: 2.5}


# ------------------------------------------------------------------ admission
def test_admission_of_an_empty_gpu_is_a_whole_gpu() -> None:
    assert admission_size([]) == 7


def test_admission_counts_slices_of_each_size_exactly() -> None:
    # three 1g jobs + a 4g: (1, 1, 1, 4) holds them
    assert admission_size([1, 1, 1]) == 4
    # four 1g jobs + a 4g: no partition has four 1g slices and a 4g; + a 3g: (3, 1, 1, 1, 1)
    assert admission_size([1, 1, 1, 1]) == 3
    # two 2g jobs + a 4g: (2, 1, 4) has one 2g only; + a 3g: (3, 2, 2)
    assert admission_size([2, 2]) == 3
    # three 2g jobs: no partition has three 2g slices and a 3g or a 2g more; a 1g fits
    # (2, 1, 2, 2): a 2g job is not assumed to take the 3g of (3, 2, 2)
    assert admission_size([2, 2, 2]) == 1
    # a 4g job + a 3g: the artifact's list has no (4, 3); a 2g: (2, 1, 4)
    assert admission_size([4]) == 2


def test_admission_full() -> None:
    assert admission_size([3, 3]) is None
    assert admission_size([1] * 7) is None
    assert admission_size([7]) is None


def test_admission_ignores_the_order_of_the_jobs_and_takes_other_partitions() -> None:
    assert admission_size([2, 1]) == admission_size([1, 2]) == 4  # (2, 1, 4)
    assert admission_size([1], partitions=[(1, 1)]) == 1
    assert admission_size([2], partitions=[(1, 1)]) is None


# ------------------------------------------------------------------ placement
def test_one_job_goes_on_the_whole_gpu() -> None:
    assert best_placement([SMALL_OK]) == Placement((7,), (0,), 1.0)


def test_two_jobs_share_the_only_two_slice_partition() -> None:
    # (3, 3) is the only 2-slice partition; the first permutation already has the least mean
    assert best_placement([NO_SMALL, SMALL_OK]) == Placement((3, 3), (0, 1), (1.2 + 1.3) / 2)


def test_ties_keep_the_first_candidate() -> None:
    # every 3-slice candidate has mean 1.0: the first partition, (2, 1, 4), first permutation
    placement = best_placement([FLAT, FLAT, FLAT])
    assert placement == Placement((2, 1, 4), (0, 1, 2), 1.0)
    # two equal jobs on (3, 3): the identity permutation, not the swap
    assert best_placement([FLAT, FLAT]) == Placement((3, 3), (0, 1), 1.0)


def test_a_strictly_better_later_candidate_wins() -> None:
    # 3 jobs: NO_SMALL must sit on the 4g (2, 1, 4) or the 3g (2, 1, 3), (3, 2, 2); the
    # others take what is left:
    #   (2, 1, 4): 1.6 + 2.5 + 1.1 = 5.2;  (2, 1, 3): 1.6 + 2.5 + 1.2 = 5.3
    #   (3, 2, 2): 1.2 + 1.6 + 1.6 = 4.4   <- least, NO_SMALL on slice 0
    placement = best_placement([SMALL_OK, SMALL_OK, NO_SMALL])
    assert placement is not None
    assert placement.partition == (3, 2, 2)
    assert placement.slices == (1, 2, 0)
    assert placement.mean_slowdown == pytest.approx(4.4 / 3)
    assert placement.jobs_by_slice(["a", "b", "c"]) == ("c", "a", "b")


def test_a_slice_a_job_does_not_fit_is_never_used() -> None:
    # on (1, 4), NO_SMALL cannot take the 1g slice, so only the swap is a candidate
    cheap_small = {7: 1.0, 4: 1.0, 1: 1.0}
    placement = best_placement([NO_SMALL, cheap_small], partitions=[(1, 4)])
    assert placement == Placement((1, 4), (1, 0), (1.1 + 1.0) / 2)
    # no 2-slice partition of the artifact's has two 4g slices; NO_SMALL fits neither 1g
    assert best_placement([{7: 1.0, 4: 1.5}, SMALL_OK]) is None
    assert best_placement([NO_SMALL, NO_SMALL], partitions=[(1, 1), (2, 1)]) is None
    assert best_placement([NO_SMALL] + [SMALL_OK] * 6) is None  # 7 jobs: only 1g slices


def test_placing_appends_the_new_job_after_the_active_ones() -> None:
    # "place": active jobs in slice order, then the new one; the search may reorder them
    active, new = [SMALL_OK, SMALL_OK], NO_SMALL
    place = best_placement([*active, new])
    repack = best_placement(active)
    assert place is not None and repack is not None
    assert place.jobs_by_slice([10, 11, 12]) == (12, 10, 11)
    assert repack == Placement((3, 3), (0, 1), 1.3)


def test_placement_is_memoised_and_accepts_canonical_tables() -> None:
    tables = [SMALL_OK, NO_SMALL, FLAT]
    first = best_placement(tables)
    assert best_placement([canonical_table(t) for t in tables]) is first


def test_search_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="tables"):
        best_placement([])
    with pytest.raises(ValueError, match="size"):
        best_placement([{5: 1.0}])
    with pytest.raises(ValueError, match="slowdown"):
        best_placement([{7: 0.0}])
    with pytest.raises(ValueError, match="at least one"):
        canonical_table({})
    with pytest.raises(ValueError, match="partitions"):
        best_placement([FLAT], partitions=[(6,)])


def test_canonical_table_orders_sizes_largest_first() -> None:
    assert canonical_table({1: 2.0, 7: 1.0, 3: 1.5}) == ((7, 1.0), (3, 1.5), (1, 2.0))


# ------------------------------------------------------------------ moves
def test_slice_starts_are_running_sums() -> None:
    assert slice_starts((2, 1, 4)) == (0, 2, 3)
    assert A100_PARTITIONS[1] == (2, 1, 4)


def test_a_job_moves_when_its_size_changes() -> None:
    # a keeps 3g at 0; b goes from 2g at 5 to 3g at 3
    assert moved_jobs((3, 2, 2), ("a", None, "b"), (3, 3), ("a", "b")) == ["b"]


def test_a_job_moves_when_only_its_start_changes() -> None:
    # a: 1g at 1 -> 1g at 0 (moves); b: 4g at 3 -> 4g at 3 (stays)
    old = ((1, 1, 1, 4), (None, "a", None, "b"))
    assert moved_jobs(*old, (1, 1, 1, 4), ("a", None, None, "b")) == ["a"]
    # b and c keep their size and start in another partition (they stay); a grows
    assert moved_jobs((2, 1, 2, 2), ("a", None, "b", "c"), (3, 2, 2), ("a", "b", "c")) == ["a"]


def test_nothing_moves_when_nothing_changes() -> None:
    assert moved_jobs((3, 2, 2), (1, 2, 3), (3, 2, 2), (1, 2, 3)) == []


def test_swapping_jobs_moves_both_even_between_equal_slices() -> None:
    # the two 2g slices start at 3 and 5: a swap changes both starts
    assert moved_jobs((3, 2, 2), (1, 2, 3), (3, 2, 2), (1, 3, 2)) == [2, 3]
    assert moved_jobs((3, 2, 2), (1, 2, 3), (3, 2, 2), (2, 1, 3)) == [1, 2]


def test_moved_jobs_needs_the_same_jobs() -> None:
    with pytest.raises(ValueError, match="same jobs"):
        moved_jobs((3, 3), ("a", "b"), (3, 3), ("a", "c"))
    with pytest.raises(ValueError, match="one entry per slice"):
        moved_jobs((3, 3), ("a",), (7,), ("a",))


# ------------------------------------------------------------------ mig_static
def test_static_promotes_into_a_larger_idle_slice() -> None:
    assert static_promotions((3, 2, 2), (None, "a", "b")) == [("a", 1, 0)]
    assert static_promotions((3, 2, 2), (None, None, "b")) == [("b", 2, 0)]


def test_static_does_not_promote_into_an_equal_or_smaller_slice() -> None:
    assert static_promotions((3, 2, 2), ("a", None, None)) == []
    assert static_promotions((3, 2, 2), ("a", "b", "c")) == []


def test_static_pairs_largest_idle_with_smallest_active_and_stops_at_the_first_miss() -> None:
    # idle 3g (0), 2g (1); active 1g (2), 1g (3): both promoted, in that pairing
    assert static_promotions((3, 2, 1, 1), (None, None, "a", "b")) == [("a", 2, 0), ("b", 3, 1)]
    # idle 2g (0), 2g (2); active 1g (1), 2g (3): a promoted, then 2g vs 2g ends it
    assert static_promotions((2, 1, 2, 2), (None, "a", None, "b")) == [("a", 1, 0)]
