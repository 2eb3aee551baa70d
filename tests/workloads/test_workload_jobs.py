"""make_job, the vectorised builder, and fit_to_cluster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS, scaling_efficiency
from gpushare_env.workloads import (
    FitResult,
    TraceError,
    UnfitJobError,
    fit_to_cluster,
    make_job,
    memory_at_batch,
)
from gpushare_env.workloads.jobs import jobs_from_arrays


def test_make_job_rounds_iterations_from_the_catalog_step_time():
    # resnet50: 0.158 s/iter at batch 64; 4 GPUs: eff 0.95.
    # 1000 s * 0.95 / 0.158 = 6012.66 -> 6013 iterations.
    job = make_job(7, 12.5, 4, 1000.0, "resnet50")
    assert job.iterations == 6013
    assert job.iter_time_s == 0.158
    assert job.memory_gib == 8.0
    assert job.intensity == 1.0
    assert job.batch_size == 64
    assert job.solo_duration_s == pytest.approx(6013 * 0.158 / 0.95)
    assert abs(job.solo_duration_s - 1000.0) <= job.step_time_s / 2


def test_make_job_with_iterations_reproduces_the_duration():
    job = make_job(0, 0.0, 8, 3600.0, "vgg16", iterations=1234)
    assert job.iterations == 1234
    assert job.iter_time_s == pytest.approx(3600.0 * scaling_efficiency(8) / 1234)
    assert job.solo_duration_s == pytest.approx(3600.0, rel=1e-12)


def test_make_job_scales_step_time_and_memory_with_batch():
    # googlenet: 0.065 s, 1.8 GiB at batch 64. Batch 128: 0.13 s; 1.8 * (0.3 + 1.4) GiB.
    job = make_job(1, 0.0, 1, 130.0, "googlenet", batch_size=128)
    assert job.iter_time_s == pytest.approx(0.13)
    assert job.iterations == 1000
    assert job.memory_gib == pytest.approx(1.8 * 1.7)
    assert memory_at_batch("googlenet", 32) == pytest.approx(1.8 * 0.65)
    assert memory_at_batch("googlenet", 64) == 1.8


def test_make_job_short_job_gets_one_iteration():
    job = make_job(0, 0.0, 1, 0.01, "vgg16")
    assert job.iterations == 1


def test_make_job_with_both_step_time_and_iterations_checks_consistency():
    job = make_job(0, 0.0, 2, 100 * 0.2 / 0.96, "resnet50", iterations=100, iter_time_s=0.2)
    assert (job.iterations, job.iter_time_s) == (100, 0.2)
    with pytest.raises(ValueError, match="disagrees"):
        make_job(0, 0.0, 2, 50.0, "resnet50", iterations=100, iter_time_s=0.2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "bert"}, "unknown model 'bert'"),
        ({"duration_s": 0.0}, "duration_s must be finite, > 0 and <= 1e8 s"),
        ({"duration_s": float("nan")}, "duration_s must be finite, > 0 and <= 1e8 s"),
        ({"duration_s": 1e308}, "duration_s must be finite, > 0 and <= 1e8 s, got 1e"),
        ({"num_gpus": 0}, "num_gpus must be an int >= 1"),
        ({"num_gpus": True}, "num_gpus must be an int >= 1"),
        ({"batch_size": 0}, "batch_size must be an int >= 1"),
        ({"iterations": 0}, "iterations must be an int >= 1"),
        ({"arrival_s": -1.0}, "arrival_s must be >= 0"),
        ({"arrival_s": 1e308}, r"arrival_s must be >= 0 and <= 1e9, got 1e\+308"),
        ({"job_id": 2**63}, r"job_id must be >= 0 and <= 2\*\*63 - 1"),
        ({"memory_gib": 0.0}, "memory_gib must be finite and > 0"),
    ],
)
def test_make_job_rejects_bad_values(kwargs, message):
    args = {"job_id": 3, "arrival_s": 0.0, "num_gpus": 1, "duration_s": 10.0, "model": "vgg16"}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        make_job(**args)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.floats(0, 1e6, allow_nan=False),
            st.sampled_from([1, 2, 3, 4, 6, 8, 16, 64]),
            st.floats(1e-3, 1e8, allow_nan=False),
            st.integers(0, len(DEFAULT_MODELS) - 1),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_vectorised_builder_equals_make_job(rows):
    arrivals, gpus, durations, models = (np.array(column) for column in zip(*rows, strict=True))
    built = jobs_from_arrays(arrivals, gpus, durations, models, DEFAULT_MODELS)
    expected = sorted(
        (make_job(i, a, int(n), d, DEFAULT_MODELS[m]) for i, (a, n, d, m) in enumerate(rows)),
        key=lambda job: (job.arrival_s, job.job_id),
    )
    assert built == expected


def _job(job_id: int, num_gpus: int, memory_gib: float):
    return make_job(job_id, float(job_id), num_gpus, 100.0, "resnet50", memory_gib=memory_gib)


def test_fit_to_cluster_rejects_and_counts():
    jobs = [_job(0, 1, 8.0), _job(1, 32, 8.0), _job(2, 4, 20.0), _job(3, 16, 16.0)]
    result = fit_to_cluster(jobs, max_gpus=16, max_worker_mem_gib=16.0)
    assert isinstance(result, FitResult)
    assert [job.job_id for job in result.jobs] == [0, 3]
    assert result.rejected == {"too_many_gpus": 1, "too_much_memory": 1}
    assert result.rejected_ids == (1, 2)
    assert result.num_rejected == 2


def test_fit_to_cluster_error_mode_names_job_and_limit():
    jobs = [_job(0, 1, 8.0), _job(5, 4, 20.0)]
    with pytest.raises(UnfitJobError, match=r"job 5 .*memory_gib 20 > the largest GPU's 16 GiB"):
        fit_to_cluster(jobs, 16, 16.0, on_unfit="error")
    with pytest.raises(ValueError, match="on_unfit"):
        fit_to_cluster(jobs, 16, 16.0, on_unfit="drop")  # type: ignore[arg-type]


def test_fit_to_cluster_keeps_everything_that_fits():
    jobs = [_job(i, n, MODELS["resnet50"].memory_gib) for i, n in enumerate([1, 2, 4, 8])]
    result = fit_to_cluster(jobs, 8, 16.0)
    assert result.jobs == jobs
    assert result.num_rejected == 0


def test_trace_error_message_names_its_parts():
    error = TraceError("must be > 0", path="w.csv", line=4, field="duration_s")
    assert str(error) == "w.csv, line 4, field 'duration_s': must be > 0"
    assert isinstance(error, ValueError)
    assert (error.path, error.line, error.field) == ("w.csv", 4, "duration_s")
