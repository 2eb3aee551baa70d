"""The Philly cluster_job_log reader on small handmade logs."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

import gpushare_env.workloads.philly_trace as philly_trace
from gpushare_env.workloads import TraceError, TraceLoad, make_job, read_philly_job_log
from gpushare_env.workloads.philly_trace import iter_json_array


def _attempt(start, end, *gpu_lists):
    return {
        "start_time": start,
        "end_time": end,
        "detail": [{"ip": f"m{i}", "gpus": list(g)} for i, g in enumerate(gpu_lists)],
    }


JOBS = [
    {  # 2 GPUs on one machine, 1 h
        "jobid": "application_a",
        "status": "Pass",
        "submitted_time": "2017-10-03 04:00:00",
        "user": "u1",
        "vc": "vc1",
        "attempts": [_attempt("2017-10-03 04:00:05", "2017-10-03 05:00:05", ["gpu0", "gpu1"])],
    },
    {  # retried: 30 min on 1 GPU, then 2 h on 4 GPUs over two machines; an unstarted try
        "jobid": "application_b",
        "status": "Killed",
        "submitted_time": "2017-10-03 04:30:00",
        "attempts": [
            _attempt("2017-10-03 04:31:00", "2017-10-03 05:01:00", ["gpu3"]),
            _attempt(
                "2017-10-03 06:00:00", "2017-10-03 08:00:00", ["gpu0", "gpu1"], ["gpu2", "gpu3"]
            ),
            _attempt(None, None, ["gpu0"]),
        ],
    },
    {  # never ran
        "jobid": "application_c",
        "status": "Failed",
        "submitted_time": "2017-10-03 04:10:00",
        "attempts": [],
    },
    {  # times recorded as the string "None"
        "jobid": "application_d",
        "status": "Failed",
        "submitted_time": "2017-10-03 04:20:00",
        "attempts": [_attempt("None", "None", ["gpu0"])],
    },
    {  # ran but no GPU recorded
        "jobid": "application_e",
        "status": "Pass",
        "submitted_time": "2017-10-03 04:40:00",
        "attempts": [_attempt("2017-10-03 04:41:00", "2017-10-03 04:50:00")],
    },
    {  # 8 GPUs, 10 min, submitted a day later
        "jobid": "application_f",
        "status": "Pass",
        "submitted_time": "2017-10-04 00:00:00",
        "attempts": [
            _attempt("2017-10-04 00:00:00", "2017-10-04 00:10:00", [f"gpu{i}" for i in range(8)])
        ],
    },
    {  # end before start
        "jobid": "application_g",
        "status": "Pass",
        "submitted_time": "2017-10-03 04:50:00",
        "attempts": [_attempt("2017-10-03 05:00:00", "2017-10-03 04:55:00", ["gpu1"])],
    },
]


@pytest.fixture
def log_path(tmp_path):
    path = tmp_path / "cluster_job_log"
    path.write_text(json.dumps(JOBS, indent=1))
    return path


def test_reads_usable_jobs_and_counts_the_rest(log_path):
    load = read_philly_job_log(log_path, rng=0)
    assert isinstance(load, TraceLoad)
    assert load.source_ids == ("application_a", "application_b", "application_f")
    assert [j.job_id for j in load.jobs] == [0, 1, 2]
    assert [j.arrival_s for j in load.jobs] == [0.0, 1800.0, 72000.0]
    assert [j.num_gpus for j in load.jobs] == [2, 4, 8]
    for job, hours in zip(load.jobs, (1.0, 2.5, 1 / 6), strict=True):
        assert abs(job.solo_duration_s - hours * 3600) <= job.step_time_s / 2
    assert load.skipped == {
        "no_attempts": 1,
        "missing_times": 1,
        "zero_gpus": 1,
        "end_before_start": 1,
    }
    assert load.num_skipped == 4
    assert load.not_selected == {}
    assert load.origin == datetime(2017, 10, 3, 4, 0, 0)
    assert load.jobs == read_philly_job_log(log_path, rng=0).jobs


def test_job_equals_make_job_of_its_facts(log_path):
    load = read_philly_job_log(log_path, rng=5)
    job = load.jobs[1]
    assert job == make_job(1, 1800.0, 4, 2.5 * 3600, job.model)


def test_window_selects_by_submission_and_sets_the_origin(log_path):
    load = read_philly_job_log(
        log_path, window=("2017-10-03 04:15:00", datetime(2017, 10, 3, 5, 0, 0))
    )
    assert load.source_ids == ("application_b",)
    assert load.jobs[0].arrival_s == 15 * 60.0  # from the window start, not the job
    assert load.origin == datetime(2017, 10, 3, 4, 15)
    assert load.not_selected == {"outside_window": 3}  # a, c, f
    assert load.skipped == {"missing_times": 1, "zero_gpus": 1, "end_before_start": 1}


def test_open_ended_window_and_max_jobs(log_path):
    load = read_philly_job_log(log_path, window=("2017-10-03 04:25:00", None), max_jobs=1)
    assert load.source_ids == ("application_b",)
    assert load.not_selected == {"outside_window": 3, "beyond_max_jobs": 1}


def test_status_filter(log_path):
    load = read_philly_job_log(log_path, statuses={"Pass"})
    assert load.source_ids == ("application_a", "application_f")
    assert load.not_selected == {"status": 3}


def test_empty_window_gives_no_jobs(log_path):
    load = read_philly_job_log(log_path, window=("2018-01-01", "2018-02-01"))
    assert load.jobs == []
    assert load.origin is None
    assert load.not_selected == {"outside_window": len(JOBS)}


def test_streaming_across_tiny_chunks_gives_the_same_result(log_path, monkeypatch):
    expected = read_philly_job_log(log_path, rng=2)
    monkeypatch.setattr(philly_trace, "_CHUNK_CHARS", 7)
    assert read_philly_job_log(log_path, rng=2) == expected
    assert [index for index, _ in iter_json_array(log_path)] == list(range(len(JOBS)))


def test_stream_reads_scalars_cut_by_a_chunk_edge(tmp_path, monkeypatch):
    path = tmp_path / "numbers.json"
    path.write_text("[ 123456789 , 2.5e3,\n[1, 2]]")
    monkeypatch.setattr(philly_trace, "_CHUNK_CHARS", 3)
    assert list(iter_json_array(path)) == [(0, 123456789), (1, 2500.0), (2, [1, 2])]


def _bad(tmp_path, content, name="bad_log.json"):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=1))
    return path


def _job(**changes):
    job = json.loads(json.dumps(JOBS[0]))
    job.update(changes)
    return job


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("", ["empty"]),
        ('{"jobid": 1}', ["expected a JSON list", "line 1"]),
        (json.dumps(JOBS[:2])[:-40], ["malformed JSON", "job #1"]),
        (f"[{json.dumps(JOBS[0])}\n {json.dumps(JOBS[1])}]", ["expected ',' or ']'", "line 2"]),
        ([JOBS[0], 5], ["job #1", "expected a job object"]),
        ([_job(jobid=None)], ["job #0", "field 'jobid'", "missing"]),
        ([_job(submitted_time="yesterday")], ["#0 (application_a)", "'submitted_time'", "parse"]),
        ([_job(submitted_time=None)], ["field 'submitted_time'", "missing"]),
        ([JOBS[0], _job(attempts="none")], ["job #1 (application_a)", "field 'attempts'"]),
        ([_job(attempts=[5])], ["field 'attempts[0]'", "expected an object"]),
        (
            [_job(attempts=[{"start_time": 7, "end_time": None}])],
            ["field 'attempts[0].start_time'", "expected a time string"],
        ),
        (
            [_job(attempts=[{"start_time": None, "end_time": None, "detail": {"gpus": []}}])],
            ["field 'attempts[0].detail'", "expected a list"],
        ),
        (
            [_job(attempts=[{"detail": [{"ip": "m1", "gpus": "gpu0"}]}])],
            ["field 'attempts[0].detail[0].gpus'", "expected a list"],
        ),
        ([_job(status=3)], ["field 'status'"]),
    ],
    ids=[
        "empty",
        "not a list",
        "truncated",
        "missing comma",
        "not an object",
        "no jobid",
        "bad submitted_time",
        "no submitted_time",
        "attempts not a list",
        "attempt not an object",
        "time not a string",
        "detail not a list",
        "gpus not a list",
        "status not a string",
    ],
)
def test_malformed_logs_raise_trace_errors_naming_file_job_and_field(tmp_path, content, words):
    path = _bad(tmp_path, content)
    with pytest.raises(TraceError) as caught:
        read_philly_job_log(path)
    message = str(caught.value)
    assert "bad_log.json" in message
    for word in words:
        assert word in message


def test_truncated_file_error_gives_a_line(tmp_path):
    path = _bad(tmp_path, json.dumps(JOBS, indent=1)[:-30])
    with pytest.raises(TraceError) as caught:
        read_philly_job_log(path)
    assert caught.value.line is not None and caught.value.line > 10


def test_bad_arguments(log_path):
    with pytest.raises(ValueError, match="window start"):
        read_philly_job_log(log_path, window=("soon", None))
    with pytest.raises(ValueError, match="after its start"):
        read_philly_job_log(log_path, window=("2017-10-04", "2017-10-03"))
    with pytest.raises(ValueError, match="max_jobs"):
        read_philly_job_log(log_path, max_jobs=0)


@pytest.mark.parametrize(
    ("text", "line", "after"),
    [
        ("[{job}], {job}]", 1, "after 1 job(s)"),  # a stray ']' closes the list early
        ("[{job}]\n[{job}]\n", 2, "after 1 job(s)"),  # two lists
        ("[{job}] trailing", 1, "after 1 job(s)"),
        ("[] {job}", 1, "after 0 job(s)"),
    ],
    ids=["stray bracket", "two lists", "trailing text", "empty list then more"],
)
def test_nothing_after_the_closing_bracket_is_dropped_silently(tmp_path, text, line, after):
    path = _bad(tmp_path, text.replace("{job}", json.dumps(_job())))
    with pytest.raises(TraceError, match=r"after the list's closing '\]'") as caught:
        read_philly_job_log(path)
    assert caught.value.line == line and after in str(caught.value)
    _bad(tmp_path, json.dumps([_job()]) + "\n \t\n")  # trailing whitespace is fine
    assert len(read_philly_job_log(tmp_path / "bad_log.json").jobs) == 1


def test_a_job_beyond_the_limits_is_refused_naming_it(tmp_path):
    far = _job(jobid="application_far", submitted_time="2050-01-01 00:00:00")
    far["attempts"] = [_attempt("2050-01-01 00:00:05", "2050-01-01 01:00:05", ["gpu0"])]
    with pytest.raises(TraceError) as caught:
        read_philly_job_log(_bad(tmp_path, [_job(), far]))
    assert caught.value.field == "submitted_time" and caught.value.job == "#1 (application_far)"
    assert "more than 1e9 s" in str(caught.value)
    # a window that starts near it keeps it
    load = read_philly_job_log(tmp_path / "bad_log.json", window=("2049-12-31", None))
    assert load.source_ids == ("application_far",)
