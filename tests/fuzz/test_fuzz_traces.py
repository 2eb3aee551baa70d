"""Fuzzing the trace readers: malformed and extreme CSV and Philly JSON text.

Every file either loads whole (one job per row, or every list element accounted for as
a job, a skip or a job left out by choice) or raises ``TraceError`` naming the file and
where; the env reads a trace the same way, with the same error.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpushare_env.envs import GPUShareEnv
from gpushare_env.seeding import trace_generator
from gpushare_env.workloads import TraceError, make_workload, read_csv_trace, read_philly_job_log
from tests.fuzz.strategies import (
    FUZZ,
    VALID_CELLS,
    data_rows,
    fuzzed_csv_text,
    fuzzed_json_text,
    valid_csv_rows,
)

#: numpy overflow or an invalid value is a limit missing somewhere: fail on it
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _write(folder: str, name: str, text: str) -> Path:
    path = Path(folder) / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _check_trace_error(error: TraceError, path: Path) -> None:
    """A trace error names the file, and where in it unless the file as a whole is bad."""
    message = str(error)
    assert message.startswith(str(path)), message
    whole_file = ("cannot open", "not UTF-8", "the file is empty", "no jobs")
    if not any(reason in message for reason in whole_file):
        assert error.line is not None or error.job is not None, message


@FUZZ
@given(text=fuzzed_csv_text())
def test_a_csv_trace_loads_every_row_or_names_the_bad_one(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, "trace.csv", text)
        try:
            jobs = read_csv_trace(path)
        except TraceError as error:
            _check_trace_error(error, path)
            if error.field is not None:  # a cell's problem names its column and line
                assert error.line is not None and f"field {error.field!r}" in str(error)
            return
        header, rows = data_rows(text)
        assert len(jobs) == len(rows)  # no row silently dropped
        column = header.index("job_id")
        assert sorted(job.job_id for job in jobs) == sorted(int(row[column]) for row in rows)


@FUZZ
@given(
    columns=st.lists(st.sampled_from(sorted(VALID_CELLS)[1:]), unique=True, max_size=4),
    data=st.data(),
)
def test_a_csv_trace_of_valid_rows_at_the_limits_loads_whole(
    columns: list[str], data: st.DataObject
) -> None:
    header = ("job_id", "arrival_s", "num_gpus", "duration_s", *columns)
    header = tuple(dict.fromkeys(header))  # arrival_s etc. may be drawn twice
    rows = data.draw(valid_csv_rows(header))
    text = "\n".join(",".join(row) for row in [list(header), *rows]) + "\n"
    with tempfile.TemporaryDirectory() as folder:
        jobs = read_csv_trace(_write(folder, "trace.csv", text))
    by_id = {job.job_id: job for job in jobs}
    assert sorted(by_id) == sorted(int(row[0]) for row in rows)
    for row in rows:
        job = by_id[int(row[0])]
        assert (job.arrival_s, job.num_gpus) == (float(row[1]), int(row[2]))
        # make_job's documented rounding: within half a step, and at least one step
        duration_s = float(row[3])
        if job.iterations > 1:
            assert abs(job.solo_duration_s - duration_s) <= job.step_time_s / 2 * (1 + 1e-9)
        else:
            assert duration_s <= job.step_time_s * 1.5 * (1 + 1e-9)


@FUZZ
@given(text=fuzzed_json_text())
def test_a_json_trace_accounts_for_every_job_or_names_the_problem(text: str) -> None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None  # malformed: the reader must refuse it, not keep what came before
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, "log.json", text)
        try:
            load = read_philly_job_log(path)
        except TraceError as error:
            _check_trace_error(error, path)
            return
    assert isinstance(document, list), f"accepted text json.loads refuses: {text!r}"
    accounted = len(load.jobs) + load.num_skipped + sum(load.not_selected.values())
    assert accounted == len(document)  # nothing after a stray ']' or a cut is lost
    assert len(load.source_ids) == len(load.jobs)


@FUZZ
@given(text=fuzzed_csv_text(), json_text=fuzzed_json_text(), use_json=st.booleans())
def test_the_env_reads_a_trace_as_the_headless_path_does(
    text: str, json_text: str, use_json: bool
) -> None:
    name, content = ("log.json", json_text) if use_json else ("trace.csv", text)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, name, content)
        try:
            expected = make_workload(str(path), trace_generator())
        except (TraceError, ValueError) as error:
            expected_error: Exception | None = error
        else:
            expected_error = None
        env = GPUShareEnv({"cluster": "thesis", "workload": str(path)})
        if expected_error is not None:
            with pytest.raises(type(expected_error)) as raised:
                env.reset(seed=0)
            assert str(raised.value) == str(expected_error)
            return
        if not expected:  # an empty trace: nothing to run, said so
            with pytest.raises(ValueError, match="no job"):
                env.reset(seed=0)
            return
        try:
            _, info = env.reset(seed=0)
        except ValueError as error:  # every job too large for the cluster
            assert "no job of the workload fits" in str(error)
            return
        # every job of the trace is in the episode or counted as rejected, by id
        assert info["trace_jobs"] == len(expected)
        assert info["num_jobs"] + info["rejected_jobs"] == len(expected)
        assert len(info["rejected_job_ids"]) == info["rejected_jobs"]
