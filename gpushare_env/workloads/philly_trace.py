"""Reader of the Microsoft Philly ``cluster_job_log`` (JSON), streaming, with a time window.

The log (``msr-fiddle/philly-traces``; Jeon et al., USENIX ATC 2019) is one JSON list of
jobs, each like::

    {"jobid": "application_1506638472019_10238", "status": "Pass",
     "submitted_time": "2017-10-03 04:21:55", "user": "...", "vc": "...",
     "attempts": [{"start_time": "2017-10-03 04:22:01", "end_time": "2017-10-03 06:40:12",
                   "detail": [{"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}]}

How a job becomes a ``JobSpec``:

* an attempt is *usable* when it has a start and an end time (not missing, ``null`` or
  ``"None"``), ends no earlier than it starts, and holds at least one GPU (summed over
  its ``detail`` entries' ``gpus`` lists);
* duration = the sum of the usable attempts' lengths (the GPU-time the job really ran;
  its solo exclusive duration as far as the trace can tell); GPU count = that of the
  last usable attempt;
* arrival = ``submitted_time`` minus the window's start (or, without one, minus the
  earliest selected submission); models are a seeded draw, as for CSV traces;
* jobs without a usable attempt are skipped and counted by reason (see
  :class:`TraceLoad`); structural errors (not a list, a field of the wrong type, an
  unparsable time, anything but whitespace after the list's closing ``]``) raise
  :class:`~.jobs.TraceError` naming file, job index and ``jobid``, and field, and so does
  a kept job beyond the limits of ``gpushare_env.sim.limits`` (an arrival more than 1e9 s
  after the first, a duration over 1e8 s, more than 65,536 GPUs).

The full log is about 1 GB, too big for ``json.load`` (its Python objects would take
several times that). It is read as a stream instead, with the standard library only: one
job at a time is decoded from a buffer of about 1 MiB, so memory holds one job's text
plus a small tuple per selected job, never the whole document. Only the
``submitted_time`` of a job outside the window is examined. On a synthetic 108 MB log of
120k jobs this took 1.9 s for a one-day window and 4.1 s for everything, at about 110 MB
peak memory for the whole process: expect roughly 20-40 s per GB.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    number_text,
)
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.jobs import TraceError, jobs_from_arrays, spawn_streams

__all__ = ["SKIP_REASONS", "TraceLoad", "iter_json_array", "parse_time", "read_philly_job_log"]

PathLike = str | os.PathLike[str]
TimeLike = datetime | str | None

#: Why a job can be skipped; keys of :attr:`TraceLoad.skipped`.
SKIP_REASONS: dict[str, str] = {
    "no_attempts": "the job has no attempt at all",
    "missing_times": "no attempt has both a start and an end time",
    "zero_gpus": "every attempt with both times holds no GPU",
    "end_before_start": "every timed attempt with GPUs ends before it starts",
    "zero_duration": "the usable attempts last 0 s in total",
}

_CHUNK_CHARS = 1 << 20  # read size [characters]
_MAX_JOB_CHARS = 64 << 20  # one job's text longer than this is taken for malformed JSON
_WHITESPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class TraceLoad:
    """Jobs read from a trace, with what was left out and why.

    Attributes:
        jobs: The jobs, ids ``0..J-1`` in submission order, sorted by ``(arrival_s, job_id)``.
        source_ids: The trace's ``jobid`` of each job, aligned with ``jobs``.
        skipped: Unusable jobs per reason (keys of :data:`SKIP_REASONS`).
        not_selected: Usable or unexamined jobs left out by choice, per reason:
            ``"outside_window"``, ``"status"`` (filtered by ``statuses``) and
            ``"beyond_max_jobs"``.
        origin: The time ``arrival_s = 0`` stands for (``None`` when no job was kept).
        path: The file read.
    """

    jobs: list[JobSpec]
    source_ids: tuple[str, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)
    not_selected: dict[str, int] = field(default_factory=dict)
    origin: datetime | None = None
    path: str = ""

    @property
    def num_skipped(self) -> int:
        """Total unusable jobs."""
        return sum(self.skipped.values())


def parse_time(value: TimeLike, what: str = "time") -> datetime | None:
    """Parse ``"2017-10-03 04:21:55"`` (any ISO 8601 form) into a naive datetime.

    ``None``, ``""`` and ``"None"`` (the log's marker for a missing time) give ``None``.
    Times with a UTC offset are converted to naive UTC so that they compare with the log's.

    Raises:
        ValueError: The text is not a time, or the value is neither str nor datetime.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text in ("", "None", "null"):
            return None
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(
                f"{what}: cannot parse {value!r} as a time like '2017-10-03 04:21:55'"
            ) from None
    else:
        raise ValueError(f"{what}: expected a time string, got {type(value).__name__}")
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def iter_json_array(path: PathLike) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, value)`` for each element of the JSON list in ``path``, streaming.

    Raises:
        TraceError: The file cannot be read, is not a JSON list, or is malformed (naming
            the line and the element's index).
    """
    decoder = json.JSONDecoder()
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise TraceError(f"cannot open: {error.strerror}", path=path) from None
    with handle:
        buffer = ""
        pos = 0
        eof = False
        line_base = 1  # line number of buffer[0]

        def fill() -> None:
            nonlocal buffer, pos, eof, line_base
            line_base += buffer.count("\n", 0, pos)
            buffer = buffer[pos:]
            pos = 0
            try:
                chunk = handle.read(_CHUNK_CHARS)
            except UnicodeDecodeError as error:
                raise TraceError(f"not UTF-8 text: {error}", path=path) from None
            if chunk:
                buffer += chunk
            else:
                eof = True

        def skip_whitespace() -> None:
            nonlocal pos
            while True:
                match = _WHITESPACE.match(buffer, pos)
                pos = match.end() if match else pos
                if pos < len(buffer) or eof:
                    return
                fill()

        def line_at(position: int) -> int:
            return line_base + buffer.count("\n", 0, position)

        fill()
        skip_whitespace()
        if pos >= len(buffer):
            raise TraceError("the file is empty; expected a JSON list of jobs", path=path, line=1)
        if buffer[pos] != "[":
            raise TraceError(
                f"expected a JSON list of jobs ('['), found {buffer[pos]!r}",
                path=path,
                line=line_at(pos),
            )
        pos += 1
        skip_whitespace()

        def check_end() -> None:
            """After the list's closing ']' only whitespace may follow: anything else (a
            second list, a job after a stray ']') would otherwise be dropped unread."""
            nonlocal pos
            pos += 1
            skip_whitespace()
            if pos < len(buffer):
                raise TraceError(
                    f"unexpected {buffer[pos : pos + 20]!r} after the list's closing ']' "
                    f"(after {index} job(s)); a JSON trace is one list of jobs",
                    path=path,
                    line=line_at(pos),
                )

        index = 0
        if buffer[pos : pos + 1] == "]":
            check_end()
            return
        while True:
            while True:
                try:
                    value, end = decoder.raw_decode(buffer, pos)
                except json.JSONDecodeError as error:
                    if eof or len(buffer) - pos > _MAX_JOB_CHARS:
                        raise TraceError(
                            f"malformed JSON: {error.msg}",
                            path=path,
                            line=line_at(error.pos),
                            job=f"#{index}",
                        ) from None
                    fill()
                    continue
                if not isinstance(value, (dict, list)) and not eof:
                    # A scalar cut by the chunk's edge decodes short ("2.5e3" as "2.5"):
                    # unless a separator follows, read on and decode it again.
                    after = _WHITESPACE.match(buffer, end)
                    following = after.end() if after else end
                    cut = following >= len(buffer) or buffer[following] not in ",]"
                    if cut and len(buffer) - pos <= _MAX_JOB_CHARS:
                        fill()
                        continue
                break
            yield index, value
            index += 1
            pos = end
            skip_whitespace()
            token = buffer[pos : pos + 1]
            if token == "]":
                check_end()
                return
            if token != ",":
                where = "the end of the file" if not token else repr(token)
                raise TraceError(
                    f"expected ',' or ']' after job #{index - 1}, found {where}",
                    path=path,
                    line=line_at(pos),
                )
            pos += 1
            skip_whitespace()


def _time_field(value: Any, path: PathLike, job: str, name: str) -> datetime | None:
    try:
        return parse_time(value, name)
    except ValueError as error:
        message = str(error).removeprefix(f"{name}: ")
        raise TraceError(message, path=path, job=job, field=name) from None


def _gpu_count(attempt: dict[str, Any], path: PathLike, job: str, where: str) -> int:
    detail = attempt.get("detail")
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise TraceError(
            f"expected a list, got {type(detail).__name__}", path=path, job=job,
            field=f"{where}.detail",
        )  # fmt: skip
    total = 0
    for position, entry in enumerate(detail):
        if not isinstance(entry, dict):
            raise TraceError(
                f"expected an object, got {type(entry).__name__}", path=path, job=job,
                field=f"{where}.detail[{position}]",
            )  # fmt: skip
        gpus = entry.get("gpus")
        if gpus is None:
            continue
        if not isinstance(gpus, list):
            raise TraceError(
                f"expected a list, got {type(gpus).__name__}", path=path, job=job,
                field=f"{where}.detail[{position}].gpus",
            )  # fmt: skip
        total += len(gpus)
    return total


def _usable_run(attempts: list[Any], path: PathLike, job: str) -> tuple[float, int] | str:
    """``(duration_s, num_gpus)`` from the usable attempts, or the reason there is none."""
    if not attempts:
        return "no_attempts"
    duration_s = 0.0
    num_gpus = 0
    timed = with_gpus = False
    for position, attempt in enumerate(attempts):
        where = f"attempts[{position}]"
        if not isinstance(attempt, dict):
            raise TraceError(
                f"expected an object, got {type(attempt).__name__}", path=path, job=job,
                field=where,
            )  # fmt: skip
        start = _time_field(attempt.get("start_time"), path, job, f"{where}.start_time")
        end = _time_field(attempt.get("end_time"), path, job, f"{where}.end_time")
        gpus = _gpu_count(attempt, path, job, where)
        if start is None or end is None:
            continue
        timed = True
        if gpus == 0:
            continue
        with_gpus = True
        if end < start:
            continue
        duration_s += (end - start).total_seconds()
        num_gpus = gpus
    if not timed:
        return "missing_times"
    if not with_gpus:
        return "zero_gpus"
    if num_gpus == 0:
        return "end_before_start"
    if duration_s <= 0:
        return "zero_duration"
    return duration_s, num_gpus


def _check_limits(
    kept: list[tuple[datetime, int, str, int, float]],
    arrivals: np.ndarray,
    num_gpus: np.ndarray,
    durations: np.ndarray,
    path: PathLike,
) -> None:
    """Refuse the first kept job beyond ``gpushare_env.sim.limits``, naming it and the field."""
    checks = (
        (
            arrivals,
            MAX_ARRIVAL_S,
            "submitted_time",
            "arrives {:g} s after the first job kept (or the window's start), more than "
            f"{number_text(MAX_ARRIVAL_S)} s: a window keeps a part of a long trace",
        ),
        (num_gpus, MAX_CLUSTER_GPUS, "attempts", f"holds {{}} GPUs, more than {MAX_CLUSTER_GPUS}"),
        (
            durations,
            MAX_DURATION_S,
            "attempts",
            f"ran {{:g}} s in total (x duration_scale), more than {number_text(MAX_DURATION_S)} s",
        ),
    )
    for values, limit, field_name, message in checks:
        beyond = np.flatnonzero(values > limit)
        if beyond.size:
            first = int(beyond[0])
            _, index, source_id, _, _ = kept[first]
            raise TraceError(
                message.format(values[first].item()),
                path=path,
                job=f"#{index} ({source_id})",
                field=field_name,
            )


def read_philly_job_log(
    path: PathLike,
    rng: np.random.Generator | int = 0,
    *,
    window: tuple[TimeLike, TimeLike] | None = None,
    max_jobs: int | None = None,
    statuses: Collection[str] | None = None,
    models: Sequence[str] = DEFAULT_MODELS,
    duration_scale: float = 1.0,
) -> TraceLoad:
    """Read Philly's ``cluster_job_log`` (format and rules in the module docstring).

    Args:
        path: The JSON file.
        rng: Generator or seed for the models (one draw per kept job, in order).
        window: ``(start, end)``: keep jobs submitted at or after ``start`` and before
            ``end``; either may be ``None`` (open). Datetimes or strings such as
            ``"2017-10-03 00:00:00"``.
        max_jobs: Keep only the earliest ``max_jobs`` usable jobs of the window.
        statuses: Keep only jobs whose ``status`` is one of these (e.g. ``{"Pass"}``);
            ``None`` keeps all.
        models: Models to draw from, uniformly.
        duration_scale: Multiplies every duration (arrivals are kept).

    Returns:
        The jobs and the skip and selection counts.

    Raises:
        TraceError: Malformed JSON or a field of the wrong type, naming file, job and field.
        ValueError: A bad argument (unparsable window, ``max_jobs`` < 1, unknown model).
    """
    start, end = (None, None) if window is None else window
    window_start = parse_time(start, "window start")
    window_end = parse_time(end, "window end")
    if window_start and window_end and window_end <= window_start:
        raise ValueError(f"window end {window_end} must be after its start {window_start}")
    if max_jobs is not None and max_jobs < 1:
        raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models must be a non-empty list of {sorted(MODELS)}, got {models!r}")
    if not duration_scale > 0:
        raise ValueError(f"duration_scale must be > 0, got {duration_scale}")
    allowed_status = None if statuses is None else frozenset(statuses)

    skipped: dict[str, int] = {}
    not_selected: dict[str, int] = {}
    kept: list[tuple[datetime, int, str, int, float]] = []  # submitted, index, id, gpus, s
    for index, item in iter_json_array(path):
        if not isinstance(item, dict):
            raise TraceError(
                f"expected a job object, got {type(item).__name__}", path=path, job=f"#{index}"
            )
        raw_id = item.get("jobid")
        if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
            problem = "missing" if raw_id is None else f"expected a string, got {raw_id!r}"
            raise TraceError(problem, path=path, job=f"#{index}", field="jobid")
        job = f"#{index} ({raw_id})"
        submitted = _time_field(item.get("submitted_time"), path, job, "submitted_time")
        if submitted is None:
            raise TraceError("missing", path=path, job=job, field="submitted_time")
        if (window_start and submitted < window_start) or (window_end and submitted >= window_end):
            not_selected["outside_window"] = not_selected.get("outside_window", 0) + 1
            continue
        status = item.get("status")
        if status is not None and not isinstance(status, str):
            raise TraceError(
                f"expected a string, got {status!r}", path=path, job=job, field="status"
            )
        if allowed_status is not None and status not in allowed_status:
            not_selected["status"] = not_selected.get("status", 0) + 1
            continue
        attempts = item.get("attempts")
        if attempts is None:
            attempts = []
        if not isinstance(attempts, list):
            raise TraceError(
                f"expected a list, got {type(attempts).__name__}",
                path=path,
                job=job,
                field="attempts",
            )
        run = _usable_run(attempts, path, job)
        if isinstance(run, str):
            skipped[run] = skipped.get(run, 0) + 1
            continue
        duration_s, num_gpus = run
        kept.append((submitted, index, str(raw_id), num_gpus, duration_s))

    kept.sort()
    if max_jobs is not None and len(kept) > max_jobs:
        not_selected["beyond_max_jobs"] = len(kept) - max_jobs
        del kept[max_jobs:]
    if not kept:
        return TraceLoad([], (), skipped, not_selected, None, str(path))
    origin = window_start if window_start is not None else kept[0][0]
    arrivals = np.array([(row[0] - origin).total_seconds() for row in kept])
    num_gpus_array = np.array([row[3] for row in kept], dtype=np.int64)
    durations = np.array([row[4] for row in kept]) * duration_scale
    _check_limits(kept, arrivals, num_gpus_array, durations, path)
    model_index = spawn_streams(rng)["models"].integers(len(models), size=len(kept))
    jobs = jobs_from_arrays(arrivals, num_gpus_array, durations, model_index, models)
    return TraceLoad(
        jobs=jobs,
        source_ids=tuple(row[2] for row in kept),
        skipped=skipped,
        not_selected=not_selected,
        origin=origin,
        path=str(path),
    )
