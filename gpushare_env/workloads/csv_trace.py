"""The CSV workload format, and a loader for (duration, GPU count) samples.

A workload CSV has a header row and one row per job:

========== ======== ==========================================================
column     required meaning
========== ======== ==========================================================
job_id     yes      unique integer, >= 0 and <= 2**63 - 1
arrival_s  yes      submission time, >= 0 and <= 1e9 [s]
num_gpus   yes      workers, one per GPU, integer >= 1 and <= 65536
duration_s yes      solo exclusive duration on V100s in one node, > 0, <= 1e8 [s]
model      no       key of ``gpushare_env.sim.catalog.MODELS``; a seeded draw
                    from ``models`` when the column or the cell is empty
batch_size no       per-worker batch, integer >= 1 and <= 2**31 - 1 (default:
                    the model's)
iterations no       total steps, integer >= 1 and <= 2**53 (default: from
                    the duration)
memory_gib no       per-worker memory, > 0 [GiB] (default: scaled from the catalog)
iter_time_s no      solo step time of one worker on a V100, >= 1e-6, <= 1e8 [s]
intensity  no       GPU intensity in (0, 1] (default: the model's)
========== ======== ==========================================================

The bounds are those of ``gpushare_env.sim.limits`` (why: its docstring; every bad input
and its error: ``docs/bad_input.md``).

How the optional columns turn into a ``JobSpec`` is :func:`~.jobs.make_job`. The last two
columns (``iter_time_s``, ``intensity``) let :func:`write_csv_trace` write any job and
read it back equal: ``duration_s = iterations * iter_time_s / eff(n)`` alone would lose
the last bit of ``iter_time_s`` to rounding in about one job in seven. Blank lines
are ignored; any other problem raises :class:`~.jobs.TraceError` naming the file, the
line (the header is line 1) and the column.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Sequence

import numpy as np

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_BATCH_SIZE,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    MAX_ITERATIONS,
    MAX_JOB_ID,
    MIN_ITER_TIME_S,
    number_text,
    range_text,
)
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.distributions import poisson_arrivals
from gpushare_env.workloads.jobs import TraceError, jobs_from_arrays, make_job, spawn_streams

__all__ = [
    "CSV_COLUMNS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "read_csv_header",
    "read_csv_trace",
    "read_duration_gpus_csv",
    "write_csv_trace",
]

REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "arrival_s", "num_gpus", "duration_s")
OPTIONAL_COLUMNS: tuple[str, ...] = (
    "model",
    "batch_size",
    "iterations",
    "memory_gib",
    "iter_time_s",
    "intensity",
)
CSV_COLUMNS: tuple[str, ...] = REQUIRED_COLUMNS + OPTIONAL_COLUMNS

PathLike = str | os.PathLike[str]


def _parse_int(
    text: str, path: PathLike, line: int, column: str, minimum: int, maximum: int
) -> int:
    if not text:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    try:
        value = int(text)
    except ValueError:
        raise TraceError(
            f"cannot parse {text!r} as an integer", path=path, line=line, field=column
        ) from None
    if not minimum <= value <= maximum:
        raise TraceError(
            f"must be {range_text(minimum, maximum)}, got {value}",
            path=path,
            line=line,
            field=column,
        )
    return value


def _parse_float(
    text: str,
    path: PathLike,
    line: int,
    column: str,
    minimum: float,
    strict: bool,
    maximum: float | None = None,
) -> float:
    """A finite number ``>= minimum`` (``> minimum`` if ``strict``) and ``<= maximum``."""
    if not text:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    try:
        value = float(text)
    except ValueError:
        raise TraceError(
            f"cannot parse {text!r} as a number", path=path, line=line, field=column
        ) from None
    if not math.isfinite(value):
        raise TraceError(f"must be finite, got {text!r}", path=path, line=line, field=column)
    if (
        value < minimum
        or (strict and value == minimum)
        or (maximum is not None and value > maximum)
    ):
        raise TraceError(
            f"must be {range_text(minimum, maximum, low_open=strict)}, got {value!r}",
            path=path,
            line=line,
            field=column,
        )
    return value


def _check_model_name(text: str, path: PathLike, line: int) -> str:
    if text not in MODELS:
        raise TraceError(
            f"unknown model {text!r}; allowed: {sorted(MODELS)}",
            path=path,
            line=line,
            field="model",
        )
    return text


def _rows(
    path: PathLike, required: Sequence[str], optional: Sequence[str]
) -> Iterable[tuple[int, dict[str, str]]]:
    """Yield ``(line, {column: stripped text})`` per non-blank row after checking the header."""
    try:
        handle = open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise TraceError(f"cannot open: {error.strerror}", path=path) from None
    with handle:
        reader = csv.reader(handle, strict=True)  # a stray quote is an error, not a guess
        try:
            header = next(reader, None)
            while header is not None and not any(cell.strip() for cell in header):
                header = next(reader, None)  # leading blank lines
            if header is None:
                raise TraceError(
                    f"the file is empty; expected a header with columns {list(required)}",
                    path=path,
                    line=1,
                )
            header_line = reader.line_num
            columns = [name.strip() for name in header]
            allowed = list(required) + list(optional)
            for index, name in enumerate(columns):
                if name not in allowed:
                    raise TraceError(
                        f"unknown column; allowed: {allowed}", path=path, line=header_line,
                        field=name,
                    )  # fmt: skip
                if name in columns[:index]:
                    raise TraceError("duplicate column", path=path, line=header_line, field=name)
            for name in required:
                if name not in columns:
                    raise TraceError(
                        f"missing required column (header has {columns})",
                        path=path,
                        line=header_line,
                        field=name,
                    )
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(columns):
                    raise TraceError(
                        f"expected {len(columns)} fields ({columns}), got {len(row)}",
                        path=path,
                        line=reader.line_num,
                    )
                yield (
                    reader.line_num,
                    {name: cell.strip() for name, cell in zip(columns, row, strict=True)},
                )
        except csv.Error as error:
            raise TraceError(f"malformed CSV: {error}", path=path, line=reader.line_num) from None
        except UnicodeDecodeError as error:
            raise TraceError(f"not UTF-8 text: {error}", path=path) from None


def read_csv_header(path: PathLike) -> tuple[str, ...]:
    """The column names of a CSV file's header (first non-blank row), stripped.

    Raises:
        TraceError: The file cannot be read or is empty.
    """
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            for row in csv.reader(handle, strict=True):
                if any(cell.strip() for cell in row):
                    return tuple(cell.strip() for cell in row)
    except OSError as error:
        raise TraceError(f"cannot open: {error.strerror}", path=path) from None
    except (csv.Error, UnicodeDecodeError) as error:
        raise TraceError(f"malformed CSV: {error}", path=path, line=1) from None
    raise TraceError("the file is empty; expected a header", path=path, line=1)


def read_csv_trace(
    path: PathLike,
    rng: np.random.Generator | int = 0,
    *,
    models: Sequence[str] = DEFAULT_MODELS,
    duration_scale: float = 1.0,
) -> list[JobSpec]:
    """Read a workload CSV (format in the module docstring).

    Args:
        path: The file.
        rng: Generator or seed for the models of rows that name none. Row ``i``'s draw
            depends only on the seed and ``i``, not on which other rows name a model.
        models: Models to draw from, uniformly.
        duration_scale: Multiplies every ``duration_s`` and ``iter_time_s`` (given
            iteration counts and arrivals are kept).

    Returns:
        Jobs with the trace's ids, sorted by ``(arrival_s, job_id)``.

    Raises:
        TraceError: Naming file, line and column: empty file, missing or unknown column,
            unparsable number, value out of range (negative arrival, duration <= 0,
            ``num_gpus`` < 1, ...), duplicate ``job_id``, unknown model, no rows.
    """
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models must be a non-empty list of {sorted(MODELS)}, got {models!r}")
    parsed: list[tuple[int, dict[str, str]]] = list(_rows(path, REQUIRED_COLUMNS, OPTIONAL_COLUMNS))
    if not parsed:
        raise TraceError("no jobs: the file has a header but no rows", path=path, line=2)
    draws = spawn_streams(rng)["models"].integers(len(models), size=len(parsed)).tolist()
    first_line: dict[int, int] = {}
    jobs: list[JobSpec] = []
    for index, (line, row) in enumerate(parsed):
        job_id = _parse_int(row["job_id"], path, line, "job_id", 0, MAX_JOB_ID)
        if job_id in first_line:
            raise TraceError(
                f"duplicate job_id {job_id} (first on line {first_line[job_id]})",
                path=path,
                line=line,
                field="job_id",
            )
        first_line[job_id] = line
        arrival = _parse_float(
            row["arrival_s"], path, line, "arrival_s", 0.0, strict=False, maximum=MAX_ARRIVAL_S
        )
        num_gpus = _parse_int(row["num_gpus"], path, line, "num_gpus", 1, MAX_CLUSTER_GPUS)
        # given iterations and step time fix the job (its duration is only checked against
        # them), and JobSpec bounds the duration they imply; else this one is bounded
        determined = bool(row.get("iterations", "") and row.get("iter_time_s", ""))
        duration = _parse_float(
            row["duration_s"], path, line, "duration_s", 0.0, strict=True,
            maximum=None if determined else MAX_DURATION_S,
        )  # fmt: skip
        model_text = row.get("model", "")
        model = _check_model_name(model_text, path, line) if model_text else models[draws[index]]
        intensity = None
        if text := row.get("intensity", ""):
            intensity = _parse_float(text, path, line, "intensity", 0.0, strict=True, maximum=1.0)
        batch_size = iterations = memory_gib = iter_time_s = None
        if text := row.get("batch_size", ""):
            batch_size = _parse_int(text, path, line, "batch_size", 1, MAX_BATCH_SIZE)
        if text := row.get("iterations", ""):
            iterations = _parse_int(text, path, line, "iterations", 1, MAX_ITERATIONS)
        if text := row.get("memory_gib", ""):
            memory_gib = _parse_float(text, path, line, "memory_gib", 0.0, strict=True)
        if text := row.get("iter_time_s", ""):
            iter_time_s = duration_scale * _parse_float(
                text, path, line, "iter_time_s", MIN_ITER_TIME_S, strict=False,
                maximum=MAX_DURATION_S,
            )  # fmt: skip
        try:
            jobs.append(
                make_job(
                    job_id,
                    arrival,
                    num_gpus,
                    duration * duration_scale,
                    model,
                    batch_size,
                    iterations=iterations,
                    memory_gib=memory_gib,
                    iter_time_s=iter_time_s,
                    intensity=intensity,
                )
            )
        except TraceError:
            raise
        except ValueError as error:  # a combination JobSpec rejects
            message = str(error).removeprefix(f"job {job_id}: ")
            first_word = message.split(" ", 1)[0]
            raise TraceError(
                message,
                path=path,
                line=line,
                job=job_id,
                field=first_word if first_word in CSV_COLUMNS else None,
            ) from None
    return sorted(jobs, key=lambda job: (job.arrival_s, job.job_id))


def write_csv_trace(jobs: Iterable[JobSpec], path: PathLike) -> None:
    """Write jobs as a workload CSV with every column; :func:`read_csv_trace` reads them back.

    Floats are written with ``repr`` (the shortest text that parses back to the same
    float), so reading the file gives back equal ``JobSpec`` objects.

    Raises:
        ValueError: A job whose model is not in the catalog (the reader would refuse it).
    """
    rows = []
    for job in jobs:
        if job.model not in MODELS:
            raise ValueError(f"job {job.job_id}: unknown model {job.model!r}")
        rows.append(
            (
                str(job.job_id),
                repr(float(job.arrival_s)),
                str(job.num_gpus),
                repr(float(job.solo_duration_s)),
                job.model,
                str(job.batch_size),
                str(job.iterations),
                repr(float(job.memory_gib)),
                repr(float(job.iter_time_s)),
                repr(float(job.intensity)),
            )
        )
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows)


def read_duration_gpus_csv(
    path: PathLike,
    rng: np.random.Generator | int,
    *,
    load: float = 0.8,
    num_cluster_gpus: int = 2048,
    mean_gap_s: float | None = None,
    duration_scale: float = 1.0,
    models: Sequence[str] = DEFAULT_MODELS,
    max_jobs: int | None = None,
) -> list[JobSpec]:
    """Load samples of ``(duration_s, num_gpus)`` (and optionally ``model``) as a workload.

    Made for ``shared/data/philly_duration_gpus.csv`` (Philly's job lengths and sizes as
    Gavel extracted them): rows become jobs ``0..J-1`` in file order, arriving by a
    seeded Poisson process whose mean gap offers ``load`` to ``num_cluster_gpus`` GPUs,
    computed from these rows' own mean GPU-seconds. Models are drawn as for
    :func:`read_csv_trace`. The arrival and model draws use separate child streams.

    Args:
        path: The file, with columns ``duration_s, num_gpus`` and optionally ``model``.
        rng: Parent generator or seed.
        load: Target offered load, > 0.
        num_cluster_gpus: GPUs the load refers to.
        mean_gap_s: Mean gap; overrides ``load`` when given.  [s]
        duration_scale: Multiplies every duration.
        models: Models to draw from, uniformly.
        max_jobs: Keep only the first ``max_jobs`` rows.

    Raises:
        TraceError: As :func:`read_csv_trace`, naming file, line and column.
    """
    if max_jobs is not None and max_jobs < 1:
        raise ValueError(f"max_jobs must be >= 1, got {max_jobs}")
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models must be a non-empty list of {sorted(MODELS)}, got {models!r}")
    durations: list[float] = []
    gpus: list[int] = []
    named: list[str] = []
    for line, row in _rows(path, ("duration_s", "num_gpus"), ("model",)):
        if max_jobs is not None and len(durations) >= max_jobs:
            break
        duration = _parse_float(
            row["duration_s"], path, line, "duration_s", 0.0, strict=True, maximum=MAX_DURATION_S
        )
        if not duration * duration_scale <= MAX_DURATION_S:
            raise TraceError(
                f"{duration!r} x duration_scale {duration_scale!r} must be <= "
                f"{number_text(MAX_DURATION_S)} s",
                path=path,
                line=line,
                field="duration_s",
            )
        durations.append(duration)
        gpus.append(_parse_int(row["num_gpus"], path, line, "num_gpus", 1, MAX_CLUSTER_GPUS))
        model_text = row.get("model", "")
        named.append(_check_model_name(model_text, path, line) if model_text else "")
    if not durations:
        raise TraceError("no jobs: the file has a header but no rows", path=path, line=2)
    streams = spawn_streams(rng)
    duration_s = np.asarray(durations) * duration_scale
    num_gpus = np.asarray(gpus, dtype=np.int64)
    if mean_gap_s is None:
        if not load > 0 or num_cluster_gpus < 1:
            raise ValueError(
                f"load must be > 0 and num_cluster_gpus >= 1, got {load}, {num_cluster_gpus}"
            )
        mean_gap_s = float(np.mean(num_gpus * duration_s)) / (load * num_cluster_gpus)
    elif not mean_gap_s > 0:
        raise ValueError(f"mean_gap_s must be > 0, got {mean_gap_s}")
    arrivals = poisson_arrivals(len(durations), mean_gap_s, streams["arrivals"])
    names = list(models) + sorted({name for name in named if name} - set(models))
    drawn = streams["models"].integers(len(models), size=len(durations))
    model_index = np.array(
        [names.index(name) if name else int(d) for name, d in zip(named, drawn, strict=True)],
        dtype=np.int64,
    )
    return jobs_from_arrays(arrivals, num_gpus, duration_s, model_index, names)
