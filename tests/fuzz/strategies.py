"""Hypothesis strategies and settings shared by the fuzz tests: malformed and extreme input.

Every fuzz test asserts one of two outcomes for what it throws at the project: a clear
error of the documented type naming the field (docs/bad_input.md), or a run whose
invariants hold. The budget is small (``FUZZ``): tens of examples each, small workloads,
and a deadline per example that turns a hang into a failure.
"""

from __future__ import annotations

import csv
import io
import json
import os
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_DURATION_S,
    MAX_JOB_ID,
)
from gpushare_env.workloads.csv_trace import CSV_COLUMNS

#: The fuzz budget: small enough for the whole suite to stay well within its time on two
#: cores; the deadline is a hang detector (generous, for a loaded machine), not a speed test.
#: ``GPUSHARE_FUZZ_EXAMPLES=2000 pytest tests/fuzz`` digs deeper, locally.
FUZZ = settings(
    max_examples=int(os.environ.get("GPUSHARE_FUZZ_EXAMPLES", "40")),
    deadline=timedelta(seconds=20),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ----------------------------------------------------------------- numbers and text

#: Text that is no number of any column, or one beyond every limit.
BAD_CELLS: tuple[str, ...] = (
    "",
    "   ",
    "abc",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "-1",
    "0",
    "-0.0",
    "1.5",
    "1e3",
    "0x10",
    "true",
    "None",
    str(2**63),
    str(2**64 + 1),
    "9" * 40,
    "1e-320",
    "5e-324",
    "1,5",
    '"',
    "1 2",
    "\u00e9",
)


def _float_text(low: float, high: float) -> st.SearchStrategy[str]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False).map(repr)


#: Valid text of each CSV column, extremes of the documented limits included.
VALID_CELLS: dict[str, st.SearchStrategy[str]] = {
    "arrival_s": st.sampled_from(["0", "0.0", repr(MAX_ARRIVAL_S)]) | _float_text(0, MAX_ARRIVAL_S),
    "num_gpus": st.integers(1, 8).map(str),
    "duration_s": st.sampled_from(["1e-3", repr(MAX_DURATION_S)])
    | _float_text(1e-3, MAX_DURATION_S),
    "model": st.sampled_from(["", *sorted(MODELS)]),
    "batch_size": st.sampled_from(["", "1", "64", str(2**31 - 1)]),
    "memory_gib": st.sampled_from(["", "0.5", "8", "16", "1e-3"]),
    "intensity": st.sampled_from(["", "1", "0.5", "1e-6"]),
}

#: Every column a workload CSV may have (the reader's own list), and a few it may not.
COLUMNS: tuple[str, ...] = CSV_COLUMNS
ODD_COLUMNS: tuple[str, ...] = ("jobid", "Arrival_s", "gpus", "", "duration_s ")


def job_ids() -> st.SearchStrategy[int]:
    """Job ids with the edges: 0, 2**63 - 1 (the largest allowed)."""
    return st.sampled_from([0, 1, MAX_JOB_ID]) | st.integers(0, MAX_JOB_ID)


@st.composite
def valid_csv_rows(draw: st.DrawFn, columns: tuple[str, ...]) -> list[list[str]]:
    """1-6 rows every value of which is within the limits, with unique job ids."""
    ids = draw(st.lists(job_ids(), min_size=1, max_size=6, unique=True))
    rows = []
    for job_id in ids:
        row = []
        for column in columns:
            if column == "job_id":
                row.append(str(job_id))
            else:
                row.append(draw(VALID_CELLS[column]))
        rows.append(row)
    return rows


@st.composite
def fuzzed_csv_text(draw: st.DrawFn) -> str:
    """CSV text: a header (required columns, some optional, maybe odd or missing ones) and
    rows mixing valid cells, bad cells and wrong field counts; sometimes raw corruption."""
    optional = draw(st.lists(st.sampled_from(COLUMNS[4:]), unique=True, max_size=3))
    header = ["job_id", "arrival_s", "num_gpus", "duration_s", *optional]
    if draw(st.booleans()):
        header = draw(st.permutations(header))
    if draw(st.integers(0, 9)) == 0:
        header.remove(draw(st.sampled_from(header)))
    if draw(st.integers(0, 9)) == 0:
        header.append(draw(st.sampled_from(ODD_COLUMNS)))
    rows = []
    for _ in range(draw(st.integers(0, 5))):
        row = []
        for column in header:
            good = VALID_CELLS.get(column, st.integers(0, 50).map(str))
            if column == "job_id":
                good = job_ids().map(str)
            cell = draw(good) if draw(st.integers(0, 4)) else draw(st.sampled_from(BAD_CELLS))
            row.append(cell)
        if draw(st.integers(0, 14)) == 0:
            row = row[:-1] if row and draw(st.booleans()) else [*row, "extra"]
        rows.append(row)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        if draw(st.integers(0, 9)) == 0:
            buffer.write("\n")  # a blank line, which the reader skips
        writer.writerow(row)
    text = buffer.getvalue()
    mutation = draw(st.integers(0, 9))
    if mutation == 0 and text:  # cut anywhere
        text = text[: draw(st.integers(0, len(text)))]
    elif mutation == 1:  # an unbalanced quote or a stray byte
        position = draw(st.integers(0, len(text)))
        text = text[:position] + draw(st.sampled_from(['"', "\x00", "\r", ",,"])) + text[position:]
    return text


def data_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The header (stripped) and the non-blank rows after it, as the reader counts them
    (for the no-loss check: a trace that loads holds exactly one job per such row)."""
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in row)]
    return [cell.strip() for cell in rows[0]], rows[1:]


# ----------------------------------------------------------------- Philly JSON

_ORIGIN = datetime(2017, 10, 3)


def _time_text(seconds: float) -> str:
    return (_ORIGIN + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


@st.composite
def philly_job(draw: st.DrawFn, index: int) -> dict[str, Any]:
    """A job of the Philly log: usually well formed, sometimes with a field of the wrong
    type, a missing or unusable time, no GPUs, or an arrival beyond the limits."""
    submitted = draw(st.integers(0, 10**7))
    attempts = []
    for _ in range(draw(st.integers(0, 2))):
        start = submitted + draw(st.integers(0, 1000))
        end = start + draw(st.integers(-10, 10**5))
        gpus = [f"gpu{i}" for i in range(draw(st.integers(0, 4)))]
        attempts.append(
            {
                "start_time": draw(st.sampled_from([_time_text(start), None, "None"])),
                "end_time": _time_text(end),
                "detail": [{"ip": "m1", "gpus": gpus}],
            }
        )
    job: dict[str, Any] = {
        "jobid": draw(st.sampled_from([f"application_{index}", index])),
        "status": draw(st.sampled_from(["Pass", "Killed", "Failed"])),
        "submitted_time": _time_text(submitted),
        "attempts": attempts,
    }
    fault = draw(st.integers(0, 11))
    if fault == 0:
        job["submitted_time"] = draw(st.sampled_from([None, 5, "yesterday", "2017-13-45"]))
    elif fault == 1:
        job["attempts"] = draw(st.sampled_from(["many", 3, {"a": 1}]))
    elif fault == 2:
        job["jobid"] = draw(st.sampled_from([None, True, 1.5, ["x"]]))
    elif fault == 3 and attempts:
        attempts[0]["detail"] = draw(st.sampled_from(["m1", [3], [{"gpus": "gpu0"}]]))
    elif fault == 4:
        job["submitted_time"] = _time_text(2 * MAX_ARRIVAL_S)  # past the arrival limit
    elif fault == 5:
        return draw(st.sampled_from([[], "job", 7, None]))  # type: ignore[no-any-return]
    return job


@st.composite
def fuzzed_json_text(draw: st.DrawFn) -> str:
    """A Philly log as text: a list of jobs, then maybe corrupted (cut, a stray ']' or ',',
    text after the list, a second list)."""
    jobs = [draw(philly_job(i)) for i in range(draw(st.integers(0, 5)))]
    text = json.dumps(jobs, indent=draw(st.sampled_from([None, 1])))
    mutation = draw(st.integers(0, 7))
    position = draw(st.integers(0, len(text)))
    if mutation == 0:
        text = text[:position]
    elif mutation == 1:
        text = text[:position] + "]" + text[position:]
    elif mutation == 2:
        text = (
            text[:position] + draw(st.sampled_from([",", "[", "{", "x", "\x0c"])) + text[position:]
        )
    elif mutation == 3:
        text = text + draw(st.sampled_from(["\n", " ]", ",{}", "[]", "\n{}\n", "\t \n"]))
    elif mutation == 4:
        text = text + text
    return text


# ----------------------------------------------------------------- values of any type


def any_value() -> st.SearchStrategy[Any]:
    """A value of any type a config or an action might be handed by mistake."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.sampled_from([0, 1, -1, 2**31, 2**63, 10**20]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.5, 1e-320, 1e308, float("nan"), float("inf")]),
        st.text(max_size=6),
        st.sampled_from(["3", "tiny", "thesis", "noop", "", "1e3"]),
        st.builds(np.int64, st.integers(-(2**63), 2**63 - 1)),
        st.builds(np.float32, st.floats(-1e6, 1e6, allow_nan=False)),
        st.just(np.True_),
        st.lists(st.integers(0, 4), max_size=2),
        st.dictionaries(st.sampled_from(["a", "nodes"]), st.integers(-2, 4), max_size=2),
    )
