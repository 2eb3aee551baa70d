"""The CSV workload format: reading, writing, round trips and every kind of bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.limits import MIN_ITER_TIME_S
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads import (
    TraceError,
    make_job,
    philly_workload,
    read_csv_trace,
    thesis_workload,
    write_csv_trace,
)
from gpushare_env.workloads.csv_trace import CSV_COLUMNS


def _write(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_required_columns_and_draws_models_by_seed(tmp_path):
    path = _write(
        tmp_path,
        "job_id,arrival_s,num_gpus,duration_s\n"
        "10,5.0,2,600\n"
        "\n"  # blank lines are ignored
        "11,0.5,1,60.5\n"
        "12,5.0,8,3600\n",
    )
    jobs = read_csv_trace(path, rng=1)
    # sorted by (arrival, id), trace ids kept
    assert [(j.job_id, j.arrival_s, j.num_gpus) for j in jobs] == [
        (11, 0.5, 1),
        (10, 5.0, 2),
        (12, 5.0, 8),
    ]
    assert all(j.model in DEFAULT_MODELS for j in jobs)
    for job, duration in zip(jobs, (60.5, 600.0, 3600.0), strict=True):
        assert abs(job.solo_duration_s - duration) <= job.step_time_s / 2
    assert read_csv_trace(path, rng=1) == jobs
    drawn = [[j.model for j in read_csv_trace(path, rng=seed)] for seed in range(8)]
    assert len({tuple(models) for models in drawn}) > 1  # the seed matters


def test_optional_columns_are_used(tmp_path):
    path = _write(
        tmp_path,
        "job_id,arrival_s,num_gpus,duration_s,model,batch_size,iterations,memory_gib\n"
        "0,0,4,1000,vgg16,32,500,3.5\n"
        "1,1,1,100,resnet50,,,\n",
    )
    first, second = read_csv_trace(path)
    assert (first.model, first.batch_size, first.iterations, first.memory_gib) == (
        "vgg16",
        32,
        500,
        3.5,
    )
    assert first.solo_duration_s == pytest.approx(1000.0, rel=1e-12)
    assert second == make_job(1, 1.0, 1, 100.0, "resnet50")


def test_a_model_named_in_one_row_does_not_change_other_rows_draws(tmp_path):
    header = "job_id,arrival_s,num_gpus,duration_s,model\n"
    plain = _write(tmp_path, header + "0,0,1,100,\n1,1,1,100,\n2,2,1,100,\n", "a.csv")
    named = _write(tmp_path, header + "0,0,1,100,alexnet\n1,1,1,100,\n2,2,1,100,\n", "b.csv")
    models_plain = [j.model for j in read_csv_trace(plain, rng=4)]
    models_named = [j.model for j in read_csv_trace(named, rng=4)]
    assert models_named[0] == "alexnet"
    assert models_named[1:] == models_plain[1:]


def test_write_then_read_round_trips_generated_workloads(tmp_path):
    for jobs in (thesis_workload(rng=0), philly_workload(2000, 1, duration_scale=0.01)):
        path = tmp_path / "round.csv"
        write_csv_trace(jobs, path)
        assert read_csv_trace(path) == jobs
        header = path.read_text().splitlines()[0]
        assert header == ",".join(CSV_COLUMNS)


@st.composite
def job_strategy(draw: st.DrawFn) -> JobSpec:
    """Any job within the limits: a given iteration count keeps the step time it implies
    at or above MIN_ITER_TIME_S (the efficiency of any GPU count is at least 0.5)."""
    duration_s = draw(st.floats(1e-3, 1e8, allow_nan=False))
    most_iterations = max(1, min(10**7, int(duration_s * 0.5 / MIN_ITER_TIME_S)))
    return make_job(
        job_id=draw(st.integers(0, 10**9)),
        arrival_s=draw(st.floats(0, 1e7, allow_nan=False)),
        num_gpus=draw(st.sampled_from([1, 2, 3, 4, 8, 12, 32])),
        duration_s=duration_s,
        model=draw(st.sampled_from(sorted(MODELS))),
        batch_size=draw(st.none() | st.integers(1, 512)),
        iterations=draw(st.none() | st.integers(1, most_iterations)),
        memory_gib=draw(st.none() | st.floats(0.01, 80, allow_nan=False)),
        intensity=draw(st.none() | st.floats(0.01, 1.0, allow_nan=False)),
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=st.lists(job_strategy(), min_size=1, max_size=20, unique_by=lambda job: job.job_id))
def test_round_trip_is_exact_for_any_jobs(tmp_path, jobs):
    path = tmp_path / "any.csv"
    write_csv_trace(jobs, path)
    assert read_csv_trace(path) == sorted(jobs, key=lambda j: (j.arrival_s, j.job_id))


def test_duration_scale_shortens_jobs(tmp_path):
    path = _write(tmp_path, "job_id,arrival_s,num_gpus,duration_s,iterations\n0,3,1,1000,100\n")
    (job,) = read_csv_trace(path, duration_scale=0.5)
    assert job.iterations == 100
    assert job.arrival_s == 3.0
    assert job.solo_duration_s == pytest.approx(500.0)


HEADER = "job_id,arrival_s,num_gpus,duration_s,model\n"

BAD_INPUTS = [
    # (name, text, line, field, words in the message)
    ("empty file", "", 1, None, "empty"),
    ("header only", HEADER, 2, None, "no jobs"),
    ("missing column", "job_id,arrival_s,num_gpus\n0,0,1\n", 1, "duration_s", "missing"),
    ("unknown column", "job_id,arrival_s,num_gpus,duration_s,gpu\n", 1, "gpu", "allowed"),
    ("unparsable number", HEADER + "0,0,1,10,vgg16\n1,zero,1,10,vgg16\n", 3, "arrival_s", "parse"),
    ("unparsable int", HEADER + "0,0,1.5,10,vgg16\n", 2, "num_gpus", "integer"),
    ("negative duration", HEADER + "0,0,1,-5,vgg16\n", 2, "duration_s", "> 0"),
    ("zero duration", HEADER + "0,0,1,0,vgg16\n", 2, "duration_s", "> 0"),
    ("infinite duration", HEADER + "0,0,1,inf,vgg16\n", 2, "duration_s", "finite"),
    ("negative arrival", HEADER + "0,-1,1,5,vgg16\n", 2, "arrival_s", ">= 0"),
    ("zero gpus", HEADER + "0,0,1,5,vgg16\n\n1,0,0,5,vgg16\n", 4, "num_gpus", ">= 1"),
    ("negative job id", HEADER + "-3,0,1,5,vgg16\n", 2, "job_id", ">= 0"),
    ("duplicate job id", HEADER + "7,0,1,5,vgg16\n7,1,1,5,vgg16\n", 3, "job_id", "first on line 2"),
    ("unknown model", HEADER + "0,0,1,5,bert\n", 2, "model", "allowed"),
    ("too few fields", HEADER + "0,0,1,5\n", 2, None, "expected 5 fields"),
    (
        "bad memory",
        "job_id,arrival_s,num_gpus,duration_s,memory_gib\n0,0,1,5,-2\n",
        2,
        "memory_gib",
        "> 0",
    ),
    (
        "bad intensity",
        "job_id,arrival_s,num_gpus,duration_s,intensity\n0,0,1,5,1.5\n",
        2,
        "intensity",
        "> 0 and <= 1",
    ),
    ("job id of 2**63", HEADER + "9223372036854775808,0,1,5,vgg16\n", 2, "job_id", "<= 2**63 - 1"),
    ("duration of 1e308", HEADER + "0,0,1,1e308,vgg16\n", 2, "duration_s", "<= 1e8"),
    ("arrival of 1e308", HEADER + "0,1e308,1,5,vgg16\n", 2, "arrival_s", "<= 1e9"),
    ("empty cell", HEADER + "0,,1,5,vgg16\n", 2, "arrival_s", "missing value"),
    ("too many gpus", HEADER + "0,0,70000,5,vgg16\n", 2, "num_gpus", "<= 65536"),
    (
        "huge batch",
        "job_id,arrival_s,num_gpus,duration_s,batch_size\n0,0,1,5,99999999999\n",
        2,
        "batch_size",
        "<= 2**31 - 1",
    ),
    (
        "tiny step time",
        "job_id,arrival_s,num_gpus,duration_s,iter_time_s\n0,0,1,5,1e-9\n",
        2,
        "iter_time_s",
        ">= 1e-6",
    ),
    (
        "too many iterations",
        "job_id,arrival_s,num_gpus,duration_s,iterations\n0,0,1,5,10000000000\n",
        2,
        "iter_time_s",
        ">= 1e-6",
    ),
    (
        "inconsistent step time",
        "job_id,arrival_s,num_gpus,duration_s,iterations,iter_time_s\n0,0,1,5,10,2\n",
        2,
        None,
        "disagrees",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_names_file_line_and_field(tmp_path, text, line, field, words):
    path = _write(tmp_path, text, "bad_trace.csv")
    with pytest.raises(TraceError) as caught:
        read_csv_trace(path)
    message = str(caught.value)
    assert "bad_trace.csv" in message
    assert f"line {line}" in message
    assert caught.value.line == line
    if field is not None:
        assert f"field {field!r}" in message
        assert caught.value.field == field
    assert words in message


def test_missing_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.csv.*cannot open"):
        read_csv_trace(tmp_path / "nope.csv")


def test_writer_refuses_unknown_models(tmp_path):
    job = make_job(0, 0.0, 1, 10.0, "vgg16")
    bogus = type(job)(**{**{f: getattr(job, f) for f in job.__slots__}, "model": "bert"})
    with pytest.raises(ValueError, match="unknown model 'bert'"):
        write_csv_trace([bogus], tmp_path / "x.csv")


def test_reader_is_deterministic_with_a_generator(tmp_path):
    path = _write(tmp_path, "job_id,arrival_s,num_gpus,duration_s\n0,0,1,10\n1,0,1,10\n")
    first = read_csv_trace(path, rng=np.random.default_rng(3))
    assert first == read_csv_trace(path, rng=np.random.default_rng(3))
    assert first == read_csv_trace(path, rng=3)
