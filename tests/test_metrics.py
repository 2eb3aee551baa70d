"""Metrics on hand-built records and timelines, every expected number worked out by hand."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpushare_env import metrics
from gpushare_env.sim.types import JobRecord, Timeline


def make_record(job_id: int, **fields: float) -> JobRecord:
    """A finished job; unspecified fields are those of a 1-GPU job run alone at once."""
    values: dict[str, object] = {
        "job_id": job_id,
        "model": "resnet50",
        "num_gpus": 1,
        "arrival_s": 0.0,
        "first_start_s": 0.0,
        "finish_s": 10.0,
        "solo_duration_s": 10.0,
        "gpu_seconds": 10.0,
        "overhead_gpu_seconds": 0.0,
        "suspends": 0,
        "resumes": 0,
        "migrations": 0,
        "queued_s": 0.0,
    }
    values.update(fields)
    return JobRecord(**values)  # type: ignore[arg-type]


def make_timeline(
    rows: Sequence[tuple[float, float, float, float, float, float]],
    end_s: float,
    num_gpus: int = 4,
    total_memory_gib: float = 128.0,
) -> Timeline:
    """A timeline from rows ``(time, compute, allocated, free, fragmented, expected)``."""
    columns = np.array(rows, dtype=float).T
    zeros = np.zeros(len(rows))
    return Timeline(
        num_gpus=num_gpus,
        total_memory_gib=total_memory_gib,
        end_s=end_s,
        time_s=columns[0],
        compute_in_use=columns[1],
        allocated_gpus=columns[2],
        free_memory_gib=columns[3],
        fragmented_memory_gib=columns[4],
        expected_fragment_gib=columns[5],
        jobs_in_system=zeros,
        jobs_waiting=zeros,
    )


def busy_timeline(rows: Sequence[tuple[float, float]], end_s: float, num_gpus: int = 4) -> Timeline:
    """A timeline from rows ``(time, compute in use)``; allocation follows compute."""
    return make_timeline(
        [(t, busy, busy, 0.0, 0.0, 0.0) for t, busy in rows], end_s, num_gpus=num_gpus
    )


# The 3-job hand example on 4 GPUs of 32 GiB (128 GiB in all).
#   job 0: 1 GPU,  arrives 0, starts 0,  ends 10, solo 10 -> JCT 10, delay 0, slowdown 1
#   job 1: 4 GPUs, arrives 2, starts 10, ends 30, solo 10 -> JCT 28, delay 8, slowdown 2.8
#          suspended and resumed once on other GPUs: 8 GPU s of overhead, queued 8 + 4 s
#   job 2: 2 GPUs, arrives 4, starts 5,  ends 24, solo 5  -> JCT 20, delay 1, slowdown 4
#          suspended and resumed once in place, queued 1 + 2 s
HAND_RECORDS = [
    make_record(
        0, num_gpus=1, arrival_s=0, first_start_s=0, finish_s=10, solo_duration_s=10, gpu_seconds=10
    ),
    make_record(
        1,
        num_gpus=4,
        arrival_s=2,
        first_start_s=10,
        finish_s=30,
        solo_duration_s=10,
        gpu_seconds=80,
        overhead_gpu_seconds=8,
        suspends=1,
        resumes=1,
        migrations=1,
        queued_s=12,
    ),
    make_record(
        2,
        num_gpus=2,
        arrival_s=4,
        first_start_s=5,
        finish_s=24,
        solo_duration_s=5,
        gpu_seconds=38,
        suspends=1,
        resumes=1,
        queued_s=3,
    ),
]

# Window [0, 30]. The last row (30-40 s, idle) lies outside it and must be clipped away:
# counting it would divide by 40 s instead of 30 s.
#   (time, compute, allocated, free GiB, fragmented GiB, expected GiB), row length
HAND_TIMELINE = make_timeline(
    [
        (0.0, 0.5, 1, 112, 16, 8),  # 5 s
        (5.0, 2.5, 3, 72, 16, 12),  # 5 s
        (10.0, 4.0, 4, 0, 0, 0),  # 14 s, no free memory -> fragmentation share 0
        (24.0, 3.0, 4, 64, 32, 16),  # 6 s
        (30.0, 0.0, 0, 128, 0, 0),  # 10 s, outside the window
    ],
    end_s=40.0,
)

HAND_SUMMARY = {
    "num_jobs": 3,
    # JCTs sorted [10, 20, 28]; linear percentile rank = q/100 * (n - 1).
    "mean_jct_s": 58 / 3,
    "p50_jct_s": 20.0,
    "p95_jct_s": 20 + 0.9 * 8,  # rank 1.9 -> 27.2
    "p99_jct_s": 20 + 0.98 * 8,  # rank 1.98 -> 27.84
    "mean_solo_s": (10 + 10 + 5) / 3,  # JCT / slowdown of each job
    "makespan_s": 30.0,  # 30 - 0
    # Delays sorted [0, 1, 8].
    "mean_queue_s": 3.0,
    "p50_queue_s": 1.0,
    "p95_queue_s": 1 + 0.9 * 7,  # 7.3
    "p99_queue_s": 1 + 0.98 * 7,  # 7.86
    "max_queue_s": 8.0,
    # Total queued sorted [0, 3, 12].
    "p99_queued_total_s": 3 + 0.98 * 9,  # 11.82
    "max_queued_total_s": 12.0,
    # Slowdowns sorted [1, 2.8, 4].
    "mean_slowdown": 7.8 / 3,  # 2.6
    "p50_slowdown": 2.8,
    "p95_slowdown": 2.8 + 0.9 * 1.2,  # 3.88
    "jain_fairness": 7.8**2 / (3 * (1 + 2.8**2 + 4**2)),  # 60.84 / 74.52 = 0.8164
    # Job 1 has exactly 4 GPUs, so it is large; jobs 0 and 2 are small.
    "num_large_jobs": 1,
    "num_small_jobs": 2,
    "mean_jct_large_s": 28.0,
    "mean_jct_small_s": 15.0,  # (10 + 20) / 2
    "gpu_util": (0.5 * 5 + 2.5 * 5 + 4 * 14 + 3 * 6) / (4 * 30),  # 89 / 120
    "gpu_alloc": (1 * 5 + 3 * 5 + 4 * 14 + 4 * 6) / (4 * 30),  # 100 / 120
    "fragmentation": (16 / 112 * 5 + 16 / 72 * 5 + 0 * 14 + 32 / 64 * 6) / 30,  # 0.1608
    "expected_fragment": (8 * 5 + 12 * 5 + 0 * 14 + 16 * 6) / (128 * 30),  # 196 / 3840
    "suspends": 2,
    "resumes": 2,
    "migrations": 1,
    "overhead_gpu_s": 8.0,
    "total_gpu_s": 128.0,  # 10 + 80 + 38
    "overhead_share": 8 / 128,
}


# --------------------------------------------------------------------------- hand example


def test_summarize_matches_hand_computed_values() -> None:
    summary = metrics.summarize(HAND_RECORDS, HAND_TIMELINE)
    assert summary == pytest.approx(HAND_SUMMARY, rel=1e-12)


def test_summarize_keys_are_the_documented_ones_in_order() -> None:
    summary = metrics.summarize(HAND_RECORDS, HAND_TIMELINE)
    assert list(summary) == list(metrics.METRIC_DOCS)
    assert set(summary) == set(HAND_SUMMARY)
    assert all(isinstance(value, float) for value in summary.values())
    required = {
        "num_jobs",
        "mean_jct_s",
        "p50_jct_s",
        "p95_jct_s",
        "p99_jct_s",
        "makespan_s",
        "gpu_util",
        "gpu_alloc",
        "mean_queue_s",
        "p99_queue_s",
        "max_queue_s",
        "mean_slowdown",
        "p95_slowdown",
        "fragmentation",
        "expected_fragment",
        "suspends",
        "resumes",
        "migrations",
        "overhead_gpu_s",
        "jain_fairness",
        "mean_jct_large_s",
        "mean_jct_small_s",
    }
    assert required <= set(summary)


def test_every_documented_metric_names_a_unit() -> None:
    for key, doc in metrics.METRIC_DOCS.items():
        assert doc.rstrip().endswith("]"), f"{key}: description should end with [unit]"


def test_group_functions_on_hand_example() -> None:
    assert metrics.makespan_window(HAND_RECORDS) == (0.0, 30.0)
    assert metrics.makespan_s(HAND_RECORDS) == 30.0
    assert metrics.jct_stats(HAND_RECORDS) == pytest.approx(
        {
            "mean_jct_s": 58 / 3,
            "p50_jct_s": 20.0,
            "p95_jct_s": 27.2,
            "p99_jct_s": 27.84,
            "mean_solo_s": 25 / 3,
        }
    )
    assert metrics.queue_stats(HAND_RECORDS)["p95_queue_s"] == pytest.approx(7.3)
    assert metrics.slowdown_stats(HAND_RECORDS)["p95_slowdown"] == pytest.approx(3.88)
    assert metrics.size_class_stats(HAND_RECORDS)["mean_jct_small_s"] == pytest.approx(15.0)
    overheads = metrics.overhead_stats(HAND_RECORDS)
    assert (overheads["suspends"], overheads["resumes"], overheads["migrations"]) == (2, 2, 1)
    window = (0.0, 30.0)
    assert metrics.gpu_utilisation(HAND_TIMELINE, window) == pytest.approx(89 / 120)
    assert metrics.gpu_allocation(HAND_TIMELINE, window) == pytest.approx(100 / 120)
    assert metrics.expected_fragment(HAND_TIMELINE, window) == pytest.approx(196 / 3840)


def test_jct_cdf_sorts_and_accumulates() -> None:
    jcts, fraction = metrics.jct_cdf(HAND_RECORDS)
    np.testing.assert_allclose(jcts, [10, 20, 28])
    np.testing.assert_allclose(fraction, [1 / 3, 2 / 3, 1])


# --------------------------------------------------------------------------- timeline


def test_utilisation_integrates_piecewise_constant_rows() -> None:
    # 0-10 s: 2 of 4 GPUs busy; 10-30 s: 4 of 4 -> (2 * 10 + 4 * 20) / (4 * 30) = 100 / 120.
    timeline = busy_timeline([(0, 2), (10, 4)], end_s=30)
    assert metrics.gpu_utilisation(timeline, (0, 30)) == pytest.approx(100 / 120)


def test_utilisation_clips_rows_to_the_window() -> None:
    timeline = busy_timeline([(0, 2), (10, 4)], end_s=30)
    # Window 5-20 s: 5 s at 2 and 10 s at 4 -> (2 * 5 + 4 * 10) / (4 * 15) = 50 / 60.
    assert metrics.gpu_utilisation(timeline, (5, 20)) == pytest.approx(50 / 60)
    # A window inside one row is that row's value: 4 / 4.
    assert metrics.gpu_utilisation(timeline, (12, 13)) == pytest.approx(1.0)


def test_summarize_clips_to_the_makespan_window() -> None:
    # Idle 0-10 s before the first arrival and 30-50 s after the last finish must not count.
    timeline = busy_timeline([(0, 0), (10, 4), (20, 2), (30, 0)], end_s=50)
    records = [
        make_record(
            0,
            num_gpus=4,
            arrival_s=10,
            first_start_s=10,
            finish_s=30,
            solo_duration_s=20,
            gpu_seconds=80,
        )
    ]
    summary = metrics.summarize(records, timeline)
    # Window 10-30 s: (4 * 10 + 2 * 10) / (4 * 20) = 60 / 80.
    assert summary["gpu_util"] == pytest.approx(0.75)
    assert summary["makespan_s"] == 20.0


def test_zero_length_rows_carry_no_weight() -> None:
    # Two changes at t = 10; the 0-length row (busy 4) must not count.
    timeline = busy_timeline([(0, 2), (10, 4), (10, 0)], end_s=20)
    assert metrics.gpu_utilisation(timeline, (0, 20)) == pytest.approx((2 * 10) / (4 * 20))


@pytest.mark.filterwarnings("error")
def test_fragmentation_counts_full_rows_as_zero_without_warning() -> None:
    # 0-10 s: no free memory at all -> 0; 10-20 s: 8 of 32 free GiB fragmented -> 0.25.
    timeline = make_timeline([(0, 4, 4, 0, 0, 0), (10, 3, 4, 32, 8, 4)], end_s=20)
    assert metrics.fragmentation(timeline, (0, 20)) == pytest.approx((0 * 10 + 0.25 * 10) / 20)
    # Expected fragment: 4 GiB of 128 for half the window -> 4 / 128 / 2.
    assert metrics.expected_fragment(timeline, (0, 20)) == pytest.approx(4 / 128 / 2)


def test_utilisation_series_is_a_closed_step_function() -> None:
    timeline = make_timeline([(0, 2, 3, 0, 0, 0), (10, 4, 4, 0, 0, 0)], end_s=30)
    times, util = metrics.utilisation_series(timeline)
    np.testing.assert_allclose(times, [0, 10, 30])
    np.testing.assert_allclose(util, [0.5, 1.0, 1.0])
    _, alloc = metrics.utilisation_series(timeline, allocated=True)
    np.testing.assert_allclose(alloc, [0.75, 1.0, 1.0])


# --------------------------------------------------------------------------- fairness


def test_jain_index_of_equal_values_is_one() -> None:
    assert metrics.jain_index([2.5, 2.5, 2.5, 2.5]) == pytest.approx(1.0)


def test_jain_index_with_one_dominant_value_tends_to_one_over_n() -> None:
    # [x, 0, 0, 0] -> x^2 / (4 x^2) = 1/4 exactly; near-zero others give about 1/4.
    assert metrics.jain_index([7.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert metrics.jain_index([1000.0, 0.01, 0.01, 0.01]) == pytest.approx(0.25, rel=1e-3)


def test_jain_index_hand_value() -> None:
    # [1, 3]: (1 + 3)^2 / (2 * (1 + 9)) = 16 / 20.
    assert metrics.jain_index([1.0, 3.0]) == pytest.approx(0.8)


@given(st.lists(st.floats(0.01, 1e4), min_size=1, max_size=50))
def test_jain_index_lies_between_one_over_n_and_one(values: list[float]) -> None:
    index = metrics.jain_index(values)
    assert 1 / len(values) - 1e-9 <= index <= 1 + 1e-9


def test_jain_index_rejects_empty_and_negative() -> None:
    with pytest.raises(ValueError, match="empty"):
        metrics.jain_index([])
    with pytest.raises(ValueError, match="non-negative"):
        metrics.jain_index([1.0, -1.0])


# --------------------------------------------------------------------------- percentiles


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=40), st.floats(0, 100))
def test_percentile_matches_numpy_linear(values: list[float], q: float) -> None:
    expected = np.percentile(np.array(values), q, method="linear")
    assert metrics.percentile(values, q) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_jct_percentiles_match_numpy_linear_on_a_random_workload() -> None:
    rng = np.random.default_rng(0)
    arrivals = rng.uniform(0, 100, size=25)
    jcts = rng.exponential(50, size=25)
    records = [
        make_record(i, arrival_s=a, first_start_s=a, finish_s=a + j, solo_duration_s=j)
        for i, (a, j) in enumerate(zip(arrivals, jcts, strict=True))
    ]
    finished = np.array([r.finish_s - r.arrival_s for r in records])
    stats = metrics.jct_stats(records)
    for q in (50, 95, 99):
        # "nearest" or "lower" would differ here: 25 samples put rank 0.95 * 24 = 22.8
        # between two order statistics.
        assert stats[f"p{q}_jct_s"] == pytest.approx(
            np.percentile(finished, q, method="linear"), rel=1e-12
        )


def test_percentile_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="empty"):
        metrics.percentile([], 50)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        metrics.percentile([1.0], 101)


# --------------------------------------------------------------------------- undefined values


def test_size_classes_are_nan_when_a_group_is_empty() -> None:
    small_only = [make_record(0, num_gpus=1), make_record(1, num_gpus=3, finish_s=20)]
    stats = metrics.size_class_stats(small_only)
    assert stats["num_large_jobs"] == 0
    assert math.isnan(stats["mean_jct_large_s"])
    assert stats["mean_jct_small_s"] == pytest.approx(15.0)  # (10 + 20) / 2
    large_only = metrics.size_class_stats([make_record(0, num_gpus=8)])
    assert large_only["mean_jct_large_s"] == pytest.approx(10.0)
    assert math.isnan(large_only["mean_jct_small_s"])


def test_overhead_share_is_nan_without_gpu_time() -> None:
    stats = metrics.overhead_stats([make_record(0, gpu_seconds=0.0)])
    assert math.isnan(stats["overhead_share"])
    assert stats["overhead_gpu_s"] == 0.0


# --------------------------------------------------------------------------- errors

RECORD_FUNCTIONS = [
    metrics.makespan_window,
    metrics.makespan_s,
    metrics.jct_stats,
    metrics.jct_cdf,
    metrics.queue_stats,
    metrics.slowdown_stats,
    metrics.size_class_stats,
    metrics.overhead_stats,
]


@pytest.mark.parametrize("function", RECORD_FUNCTIONS, ids=lambda f: f.__name__)
def test_empty_records_raise(function: object) -> None:
    with pytest.raises(ValueError, match="empty"):
        function([])  # type: ignore[operator]


def test_summarize_of_empty_records_raises() -> None:
    with pytest.raises(ValueError, match="at least one finished JobRecord"):
        metrics.summarize([], HAND_TIMELINE)


def test_inconsistent_records_raise() -> None:
    with pytest.raises(ValueError, match="more than once"):
        metrics.jct_stats([make_record(3), make_record(3)])
    with pytest.raises(ValueError, match="job 5: need arrival_s <= first_start_s"):
        metrics.jct_stats([make_record(5, arrival_s=4.0, first_start_s=2.0)])
    with pytest.raises(ValueError, match="solo_duration_s must be > 0"):
        metrics.slowdown_stats([make_record(6, solo_duration_s=0.0)])


def test_mismatched_timeline_shapes_raise() -> None:
    broken = dataclasses.replace(HAND_TIMELINE, allocated_gpus=np.zeros(3))
    with pytest.raises(ValueError, match="allocated_gpus"):
        metrics.summarize(HAND_RECORDS, broken)
    with pytest.raises(ValueError, match="mismatched"):
        metrics.gpu_allocation(broken, (0, 30))


def test_malformed_timeline_raises() -> None:
    with pytest.raises(ValueError, match="non-empty 1-D"):
        metrics.utilisation_series(_empty_timeline())
    backwards = busy_timeline([(0, 1), (10, 2), (5, 3)], end_s=20)
    with pytest.raises(ValueError, match="non-decreasing"):
        metrics.gpu_utilisation(backwards, (0, 20))
    with pytest.raises(ValueError, match="end_s"):
        metrics.gpu_utilisation(busy_timeline([(0, 1), (10, 2)], end_s=5), (0, 5))


def _empty_timeline() -> Timeline:
    empty = np.zeros(0)
    return Timeline(4, 128.0, 0.0, empty, empty, empty, empty, empty, empty, empty, empty)


def test_window_not_covered_by_timeline_raises() -> None:
    timeline = busy_timeline([(0, 2), (10, 4)], end_s=30)
    with pytest.raises(ValueError, match="covers"):
        metrics.gpu_utilisation(timeline, (0, 31))
    late_start = busy_timeline([(5, 2)], end_s=30)
    with pytest.raises(ValueError, match="covers"):
        metrics.gpu_utilisation(late_start, (0, 30))
    with pytest.raises(ValueError, match="start < end"):
        metrics.gpu_utilisation(timeline, (10, 10))


def test_time_average_rejects_values_of_the_wrong_length() -> None:
    timeline = busy_timeline([(0, 2), (10, 4)], end_s=30)
    with pytest.raises(ValueError, match="one entry per timeline row"):
        metrics.time_average(timeline, np.ones(3), (0, 30))
