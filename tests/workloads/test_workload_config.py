"""WorkloadConfig validation and make_workload's three kinds of spec."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gpushare_env.workloads import (
    WORKLOAD_PRESETS,
    TraceError,
    WorkloadConfig,
    make_job,
    make_workload,
    philly_workload,
    thesis_workload,
    write_csv_trace,
)


@pytest.mark.parametrize("name", sorted(WORKLOAD_PRESETS))
def test_every_preset_generates_sorted_jobs(name):
    jobs = make_workload(name, np.random.default_rng(0), num_jobs=50)
    assert len(jobs) == 50
    keys = [(j.arrival_s, j.job_id) for j in jobs]
    assert keys == sorted(keys)
    assert make_workload(name, np.random.default_rng(0), num_jobs=50) == jobs


def test_presets_equal_the_generators():
    assert make_workload("thesis", 0) == thesis_workload(rng=0)
    assert make_workload("thesis_poisson", 0) == thesis_workload(rng=0, arrival="poisson")
    assert make_workload("philly", 0, num_jobs=300) == philly_workload(300, 0)
    assert make_workload("philly_parametric", 0, num_jobs=300) == philly_workload(
        300, 0, duration_model="parametric"
    )
    assert make_workload("philly_bursty", 0, num_jobs=300) == philly_workload(
        300, 0, arrival="bursty"
    )


def test_dict_with_preset_and_overrides():
    half = make_workload({"preset": "philly", "load": 0.4, "num_jobs": 200}, 1)
    full = make_workload({"preset": "philly", "num_jobs": 200}, 1)
    assert [j.num_gpus for j in half] == [j.num_gpus for j in full]
    np.testing.assert_allclose([j.arrival_s for j in half], [2 * j.arrival_s for j in full])


def test_cluster_gpus_caps_sizes_and_sets_the_load_base():
    jobs = make_workload("philly", 0, num_jobs=2000, cluster_gpus=4)
    assert max(j.num_gpus for j in jobs) == 4
    assert jobs == philly_workload(2000, 0, max_gpus=4, num_cluster_gpus=4)


def test_unknown_keys_are_rejected_with_the_allowed_ones():
    with pytest.raises(ValueError, match=r"unknown keys \['lod'\]; allowed: .*'load'"):
        make_workload({"kind": "philly", "lod": 0.5}, 0)


def test_unknown_preset_lists_the_presets():
    with pytest.raises(ValueError, match=r"neither a preset \(\['miso', 'miso_steps', 'philly'"):
        make_workload("phily", 0)
    with pytest.raises(ValueError, match=r"workload.preset must be one of"):
        WorkloadConfig.from_any({"preset": "nope"})


@pytest.mark.parametrize(
    ("values", "field", "allowed"),
    [
        ({"kind": "gavel"}, "kind", "one of ['thesis', 'philly', 'trace', 'miso']"),
        ({"restart": "steps"}, "restart", "'drawn' unless kind is 'miso'"),
        ({"kind": "miso", "restart": "later"}, "restart", "one of ['drawn', 'steps']"),
        ({"num_jobs": 0}, "num_jobs", "an int >= 1"),
        ({"num_jobs": 2.5}, "num_jobs", "an int >= 1"),
        ({"arrival": "bursty"}, "arrival", "['interval', 'poisson'] for kind 'thesis'"),
        ({"kind": "philly", "arrival": "interval"}, "arrival", "['poisson', 'bursty']"),
        ({"interval_s": 0}, "interval_s", "> 0"),
        ({"load": -1.0}, "load", ">= 1e-6 and <= 1e6"),
        ({"load": 1e307}, "load", ">= 1e-6 and <= 1e6"),
        ({"load": float("inf")}, "load", "finite"),
        ({"mean_gap_s": 0.0}, "mean_gap_s", "> 0"),
        ({"duration_scale": "fast"}, "duration_scale", "> 0"),
        ({"max_duration_quantile": 1.5}, "max_duration_quantile", "(0, 1]"),
        ({"num_cluster_gpus": 0}, "num_cluster_gpus", ">= 1"),
        ({"max_gpus": True}, "max_gpus", ">= 1"),
        ({"duration_model": "weibull"}, "duration_model", "'empirical' or 'parametric'"),
        ({"models": ["resnet50", "bert"]}, "models", "non-empty list"),
        ({"models": []}, "models", "non-empty list"),
        ({"kind": "trace"}, "path", ".csv"),
        ({"kind": "trace", "path": "jobs.txt"}, "path", ".json"),
        ({"path": "jobs.csv", "kind": "thesis"}, "path", "None unless kind is 'trace'"),
        ({"window_start": "tuesday"}, "window_start", "2017-10-03 04:21:55"),
    ],
)
def test_bad_values_name_the_field_and_its_range(values, field, allowed):
    with pytest.raises(ValueError) as caught:
        WorkloadConfig.from_any(values)
    message = str(caught.value)
    assert f"workload.{field} must be" in message
    assert allowed in message


def test_config_is_frozen():
    config = WorkloadConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.load = 0.1  # type: ignore[misc]


def test_every_field_is_documented():
    doc = WorkloadConfig.__doc__ or ""
    for name in WorkloadConfig.fields():
        assert f"        {name}:" in doc, name


def test_csv_trace_by_path_string_and_dict(tmp_path):
    jobs = [make_job(i, 10.0 * i, 1 + i % 2, 100.0 + i, "vgg16") for i in range(6)]
    path = tmp_path / "jobs.csv"
    write_csv_trace(jobs, path)
    assert make_workload(str(path), 0) == jobs
    assert make_workload(path, 0) == jobs
    assert make_workload({"path": str(path)}, 0, num_jobs=4) == jobs[:4]


def test_duration_gpus_csv_by_path(tmp_path):
    path = tmp_path / "sizes.csv"
    path.write_text("duration_s,num_gpus\n3600,1\n7200,8\n600,2\n")
    jobs = make_workload({"path": str(path), "mean_gap_s": 5.0}, 3)
    assert [j.num_gpus for j in jobs] == [1, 8, 2]
    assert jobs[0].arrival_s == 0.0
    assert jobs == make_workload({"path": str(path), "mean_gap_s": 5.0}, 3)


def test_json_trace_with_window(tmp_path):
    log = [
        {
            "jobid": f"app_{i}",
            "status": "Pass",
            "submitted_time": f"2017-10-03 0{i}:00:00",
            "attempts": [
                {
                    "start_time": f"2017-10-03 0{i}:00:00",
                    "end_time": f"2017-10-03 0{i}:30:00",
                    "detail": [{"ip": "m1", "gpus": ["gpu0"]}],
                }
            ],
        }
        for i in range(5)
    ]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    jobs = make_workload(
        {
            "path": str(path),
            "window_start": "2017-10-03 01:00:00",
            "window_end": "2017-10-03 04:00",
        },
        0,
    )
    assert [j.arrival_s for j in jobs] == [0.0, 3600.0, 7200.0]


def test_missing_trace_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        make_workload(str(tmp_path / "missing.csv"), 0)
