"""MISO's scenario inputs: the shipped files, bad input with its file, line and key, the
per-profile speeds against the paper's figures, and the artifact's random draws."""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from gpushare_env.workloads import TraceError
from gpushare_env.workloads.miso import (
    A100_PARTITIONS,
    MIG_PROFILES,
    MISO_STORED_AVG_JCT_S,
    MisoJob,
    artifact_normalized_latencies,
    miso_arrivals,
    miso_generators,
    miso_jobs,
    miso_predicted_latencies,
    miso_scenario_draws,
    read_miso_job_models,
    read_miso_latencies,
    read_miso_trace,
    shipped_miso_path,
)

HEADER = "model,profile,mean_batch_latency_s,batches\n"
GOOD_ROWS = (
    "a_train1,7g.40gb,1.0,10\n"
    "a_train1,4g.20gb,1.25,10\n"
    "a_train1,3g.20gb,1.6,10\n"
    "a_train1,2g.10gb,2.0,10\n"
)


def _write(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- shipped data


def test_the_shipped_files_and_licence_are_there():
    for name in (
        "trace_100_sc_old.json",
        "job_models_experiment.json",
        "mig_mean_batch_latency.csv",
        "README.md",
        "LICENSE",
    ):
        assert shipped_miso_path(name).is_file(), name
    assert "MIT License" in shipped_miso_path("LICENSE").read_text()
    assert "Baolin Li" in shipped_miso_path("LICENSE").read_text()


def test_the_shipped_scenario_reads_whole():
    jobs = miso_jobs()
    assert [job.job_id for job in jobs] == list(range(100))
    assert jobs[0] == MisoJob(0, 61.0, "embedding_train128", jobs[0].batch_latency_s)
    assert jobs[99].model == "transformer_train16"
    assert min(job.duration_s for job in jobs) == 61.0
    assert max(job.duration_s for job in jobs) == pytest.approx(6082.14)
    assert statistics.mean(job.duration_s for job in jobs) == pytest.approx(763.8336)
    # the artifact truncates lengths to whole seconds (7 lengths are not whole)
    assert sum(not job.duration_s.is_integer() for job in jobs) == 7
    assert sum(job.artifact_duration_s for job in jobs) == 76380
    assert len({job.model for job in jobs}) == 30


def test_the_latency_table_has_32_kinds_and_their_fits():
    table = read_miso_latencies(shipped_miso_path("mig_mean_batch_latency.csv"))
    assert len(table) == 32  # 8 models x 4 batch sizes
    assert sum(len(profiles) for profiles in table.values()) == 145
    assert table["cyclegan_train1"]["1g.5gb"] == 0.5976
    no_1g = sorted(model for model, profiles in table.items() if "1g.5gb" not in profiles)
    assert len(no_1g) == 11  # the paper: 11 of the 32 jobs do not fit in 1g
    no_2g = sorted(model for model, profiles in table.items() if "2g.10gb" not in profiles)
    assert no_2g == ["bert_train6", "bert_train8", "cyclegan_train4", "transformer_train128"]
    assert all(set(MIG_PROFILES[2:]) <= set(profiles) for profiles in table.values())


# --------------------------------------------------------------------------- speeds


def test_median_speeds_are_the_papers():
    """MISO's published medians over its 32 jobs: 0.32 (1g), 0.47 (2g), 0.66 (3g),
    0.75 (4g), each over the jobs that fit (0.745 on 4g from the data)."""
    table = read_miso_latencies(shipped_miso_path("mig_mean_batch_latency.csv"))
    kinds = [MisoJob(i, 100.0, model, lat) for i, (model, lat) in enumerate(table.items())]
    published = {"1g.5gb": 0.32, "2g.10gb": 0.47, "3g.20gb": 0.66, "4g.20gb": 0.75}
    for profile, median in published.items():
        speeds = [s for job in kinds if (s := job.speed(profile)) is not None]
        assert statistics.median(speeds) == pytest.approx(median, abs=0.006), profile
    assert sum(job.speed("1g.5gb") is None for job in kinds) == 11
    assert sum(job.speed("2g.10gb") is not None for job in kinds) == 28


def test_speed_is_full_gpu_latency_over_profile_latency():
    job = miso_jobs()[0]  # embedding_train128
    lat = job.batch_latency_s
    assert job.speed("7g.40gb") == 1.0
    for profile in MIG_PROFILES:
        assert job.speed(profile) == lat["7g.40gb"] / lat[profile]
    assert job.speeds() == {p: job.speed(p) for p in MIG_PROFILES}
    assert job.smallest_profile == "1g.5gb"
    cyclegan = miso_jobs()[2]
    assert cyclegan.model == "cyclegan_train4"
    assert cyclegan.speed("1g.5gb") is None and cyclegan.speed("2g.10gb") is None
    assert not cyclegan.fits("2g.10gb") and cyclegan.fits("3g.20gb")
    assert cyclegan.smallest_profile == "3g.20gb"
    with pytest.raises(ValueError, match="unknown MIG profile"):
        job.speed("5g.25gb")


def test_artifact_normalised_latencies():
    job = miso_jobs()[0]
    table = artifact_normalized_latencies(job)
    # the artifact's perf_actual for job 0 (checked against its get_speedup)
    assert table == {
        "7g.40gb": 0.8947,
        "4g.20gb": 0.9737,
        "3g.20gb": 1.0,
        "2g.10gb": 1.2632,
        "1g.5gb": 1.9474,
    }
    for profile in MIG_PROFILES:
        artifact = 1 / (table[profile] / table["7g.40gb"])
        assert artifact == pytest.approx(job.speed(profile), abs=1e-3)


def test_a100_partitions():
    assert len(A100_PARTITIONS) == 18
    assert A100_PARTITIONS[0] == (7,) and A100_PARTITIONS[6] == (3, 2, 2)
    assert all(sum(p) <= 7 for p in A100_PARTITIONS)
    assert len(set(A100_PARTITIONS)) == 18


# --------------------------------------------------------------------------- draws


def test_arrivals_and_overheads_pin_the_artifact_seed_9():
    """These values were checked against the artifact's own generator
    (``Simulation.__init__`` of ``mps/scheduler/simulator/schemes.py`` in
    ``gajagajago/socc22-miso``, run with ``--seed 9 --exp_ovhd`` on these inputs): the
    arrival order, times and overheads of all 100 jobs, and the predicted latencies of all
    jobs, matched bit for bit (and for seeds 0, 1 and 123 too)."""
    draws = miso_arrivals()
    assert draws.order[:10] == (59, 78, 47, 34, 17, 23, 86, 0, 43, 64)
    assert draws.arrival_s[:10] == (35, 67, 97, 122, 146, 182, 216, 255, 286, 314)
    assert draws.overhead_s[:10] == (8.61, 5.7, 6.09, 7.19, 8.81, 1.99, 8.94, 4.29, 2.89, 2.79)
    assert draws.arrival_s[33:36] == (1036, 1091, 1152)  # gaps of mean 30 s end after 34 jobs
    assert draws.arrival_s[-1] == 4929
    assert sum(draws.arrival_s) == 215158
    assert sorted(draws.order) == list(range(100))
    assert list(draws.arrival_s) == sorted(draws.arrival_s)
    assert all(1 <= o <= 10 and round(o, 2) == o for o in draws.overhead_s)
    assert draws.arrival_of()[59] == 35


def test_predicted_latencies_pin_the_artifact_seed_9():
    """Checked against the artifact's ``get_speedup`` (``mps/scheduler/simulator/utils.py``)
    after its arrival draws, seed 9: the prediction error continues numpy's stream."""
    _, predicted = miso_scenario_draws()
    assert predicted[0]["7g.40gb"] == 0.9074207905054551
    assert predicted[0]["4g.20gb"] == 0.9902132773214162
    assert predicted[0]["1g.5gb"] == 1.9665571130140735
    assert set(predicted) == set(range(100))
    jobs = miso_jobs()
    for job in jobs:
        actual = artifact_normalized_latencies(job)
        assert list(predicted[job.job_id]) == list(actual)
        for profile, value in predicted[job.job_id].items():
            assert abs(value - actual[profile]) < 0.05


def test_draws_use_only_the_generators_given():
    py, nps = random.Random(9), np.random.RandomState(10)
    assert miso_arrivals(seed=12345, py_rng=py, np_rng=nps) == miso_arrivals(9)
    # the same generators, advanced as the artifact does, give the same predictions
    jobs = miso_jobs()
    py, nps = random.Random(9), np.random.RandomState(10)
    miso_arrivals(py_rng=py, np_rng=nps)
    assert miso_predicted_latencies(jobs, nps) == miso_scenario_draws(9, jobs)[1]
    assert miso_arrivals(1) != miso_arrivals(9)
    assert miso_arrivals(9) == miso_arrivals(9)
    # the artifact seeds Python's random with the seed, numpy's legacy one with seed + 1
    py, nps = miso_generators(9)
    assert py.getstate() == random.Random(9).getstate()
    assert np.array_equal(nps.get_state()[1], np.random.RandomState(10).get_state()[1])
    with pytest.raises(ValueError, match="seed"):
        miso_generators(True)


def test_arrival_rule_for_other_sizes():
    draws = miso_arrivals(3, num_jobs=7, interarrival_s=0)
    assert draws.arrival_s == (0,) * 7
    assert len(draws.overhead_s) == 7
    with pytest.raises(ValueError, match="num_jobs"):
        miso_arrivals(num_jobs=0)
    with pytest.raises(ValueError, match="interarrival_s"):
        miso_arrivals(interarrival_s=-1)
    with pytest.raises(ValueError, match="seed"):
        miso_arrivals(seed=-1)


def test_stored_results_table():
    assert MISO_STORED_AVG_JCT_S == {
        "mig_full": 2371.06,
        "mig_static": 1441.34,
        "miso": 1216.03,
        "mig_oracle": 1140.73,
    }
    # the paper's headline: 49% below no partitioning, 16% below the best static one
    miso = MISO_STORED_AVG_JCT_S["miso"]
    assert 1 - miso / MISO_STORED_AVG_JCT_S["mig_full"] == pytest.approx(0.49, abs=0.005)
    assert 1 - miso / MISO_STORED_AVG_JCT_S["mig_static"] == pytest.approx(0.16, abs=0.005)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        ('{\n  "0": 61.0,\n  "1": -3\n}\n', 3, "1", "finite number > 0"),
        ('{\n  "0": 61.0,\n  "x": 3\n}\n', 3, "x", "whole number >= 0"),
        ('{\n  "0": 61.0,\n  "1": "long"\n}\n', 3, "1", "number of seconds"),
        ('{\n  "0": 61.0,\n  "1": true\n}\n', 3, "1", "number of seconds"),
        ('{\n  "0": 61.0,\n  "0": 62.0\n}\n', 3, "0", "duplicate key"),
        ('{\n  "0": 61.0,\n  "00": 62.0\n}\n', 3, "00", "duplicate job id"),
        ('{\n  "0": 61.0,\n  "1": NaN\n}\n', 3, "1", "finite number > 0"),
    ],
)
def test_bad_trace_names_file_line_and_key(tmp_path, text, line, key, message):
    path = _write(tmp_path, text, "trace.json")
    with pytest.raises(TraceError, match=message) as caught:
        read_miso_trace(path)
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert caught.value.field == key


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{\n  "0": 61.0,\n', 3, "malformed JSON"),
        ("[61.0, 64.0]\n", 1, "one JSON object"),
        ("{}\n", 1, "no jobs"),
    ],
)
def test_malformed_json(tmp_path, text, line, message):
    path = _write(tmp_path, text, "trace.json")
    with pytest.raises(TraceError, match=message) as caught:
        read_miso_trace(path)
    assert caught.value.line == line
    assert str(path) in str(caught.value)


def test_bad_model_list(tmp_path):
    path = _write(tmp_path, '{\n  "0": "a_train1",\n  "1": ""\n}\n', "models.json")
    with pytest.raises(TraceError, match="non-empty string") as caught:
        read_miso_job_models(path)
    assert (caught.value.line, caught.value.field) == (3, "1")
    path = _write(tmp_path, '{\n  "0": 5\n}\n', "models.json")
    with pytest.raises(TraceError, match="non-empty string"):
        read_miso_job_models(path)


@pytest.mark.parametrize(
    ("rows", "line", "column", "message"),
    [
        ("a_train1,7g.40gb,1.0,10\na_train1,5g.25gb,1.0,10\n", 3, "profile", "unknown MIG"),
        ("a_train1,7g.40gb,0,10\n", 2, "mean_batch_latency_s", "finite number > 0"),
        ("a_train1,7g.40gb,fast,10\n", 2, "mean_batch_latency_s", "not a number"),
        ("a_train1,7g.40gb,inf,10\n", 2, "mean_batch_latency_s", "finite number > 0"),
        ("a_train1,7g.40gb,,10\n", 2, "mean_batch_latency_s", "missing value"),
        ("a_train1,7g.40gb,1.0,0\n", 2, "batches", "whole number >= 1"),
        (",7g.40gb,1.0,3\n", 2, "model", "missing value"),
        (GOOD_ROWS + "a_train1,2g.10gb,2.0,10\n", 6, "profile", "duplicate row"),
        ("a_train1,7g.40gb,1.0,10\na_train1,4g.20gb,1.2,10\n", 2, "profile", "3g.20gb"),
        (GOOD_ROWS.replace("2g.10gb", "1g.5gb"), 2, "profile", "not a larger one"),
    ],
)
def test_bad_latency_table_names_file_line_and_column(tmp_path, rows, line, column, message):
    path = _write(tmp_path, HEADER + rows, "lat.csv")
    with pytest.raises(TraceError, match=message) as caught:
        read_miso_latencies(path)
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert caught.value.field == column


def test_bad_latency_header_and_width(tmp_path):
    path = _write(tmp_path, "model,profile,latency\n", "lat.csv")
    with pytest.raises(TraceError, match="header must be") as caught:
        read_miso_latencies(path)
    assert (caught.value.line, caught.value.field) == (1, "header")
    path = _write(tmp_path, HEADER + "a_train1,7g.40gb,1.0\n", "lat.csv")
    with pytest.raises(TraceError, match="expected 4 columns") as caught:
        read_miso_latencies(path)
    assert caught.value.line == 2
    path = _write(tmp_path, "", "lat.csv")
    with pytest.raises(TraceError, match="empty"):
        read_miso_latencies(path)


def test_inputs_that_disagree(tmp_path):
    lat = _write(tmp_path, HEADER + GOOD_ROWS, "lat.csv")
    trace = _write(tmp_path, '{\n  "0": 61.0,\n  "1": 64.0\n}\n', "trace.json")
    models = _write(tmp_path, '{\n  "0": "a_train1",\n  "1": "b_train2"\n}\n', "models.json")
    with pytest.raises(TraceError, match="'b_train2' has no latencies") as caught:
        miso_jobs(trace, models, lat)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(models), 3, "1")
    models = _write(tmp_path, '{\n  "0": "a_train1",\n  "2": "a_train1"\n}\n', "models.json")
    with pytest.raises(TraceError, match="same job ids; only in the trace: 1"):
        miso_jobs(trace, models, lat)
    models = _write(tmp_path, '{\n  "0": "a_train1",\n  "1": "a_train1"\n}\n', "models.json")
    jobs = miso_jobs(trace, models, lat)
    assert [job.speed("1g.5gb") for job in jobs] == [None, None]
    assert jobs[1].speed("2g.10gb") == 0.5
