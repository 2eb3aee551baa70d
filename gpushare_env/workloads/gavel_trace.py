"""Reader of the Gavel project's Philly replays, and a command line that writes them as CSV.

Gavel (``stanford-futuredata/gavel``, MIT) replays each virtual cluster (VC) of Microsoft's
Philly trace as ``scheduler/traces/msr/seed=0/<vc>.trace``: one job per line, seven
tab-separated fields::

    job_type  command  num_steps_arg  needs_data_dir  total_steps  arrival_s  scale_factor

and measures each job type's isolated throughput in
``scheduler/simulation_throughputs.json`` as
``{gpu_type: {"(job_type, scale_factor)": {"null": steps per second, ...}}}`` (the other
keys of an entry are throughputs when colocated with another job).

How a line becomes a job, the rule the shipped ``data/philly_vc/*.csv`` files were made by:

* ``job_id`` is the job's 0-based position in the trace (its line index: Gavel's files
  have no blank lines; a blank line here is skipped and takes no id);
* ``arrival_s`` is the trace's arrival, as it is (Gavel's replays start at 0);
* ``num_gpus`` is the scale factor;
* ``duration_s = round(total_steps / throughput, 1)``, the job's length on dedicated
  GPUs of type ``gpu_type`` (V100-seconds by default), ``throughput`` being the isolated
  steps per second of ``(job_type, scale_factor)``, or, when that scale factor was never
  measured (A3C on 4 GPUs, say), of ``(job_type, 1)``.

Gavel's job types are synthetic (Gavel drew them; Philly records no model) and are not
kept: as for any CSV trace, each job's model is a seeded draw from the catalog. Bad input
raises :class:`~.jobs.TraceError` naming the file, the line (the first line is line 1) and
the field; values beyond ``gpushare_env.sim.limits`` are refused as the CSV reader
refuses them.

Convert a VC's replay (the files come from Gavel's repository)::

    python -m gpushare_env.workloads.gavel_trace 0e4a51.trace simulation_throughputs.json \\
        -o 0e4a51.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    MAX_ITERATIONS,
    is_finite,
    is_int,
    range_text,
)
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.csv_trace import _parse_float, _parse_int  # the CSV reader's cells
from gpushare_env.workloads.jobs import TraceError, jobs_from_arrays, spawn_streams
from gpushare_env.workloads.real_traces import offered_load

__all__ = [
    "GAVEL_FIELDS",
    "GavelReplay",
    "convert_gavel_trace",
    "main",
    "read_gavel_trace",
    "write_replay_csv",
]

PathLike = str | os.PathLike[str]

#: The fields of a line of a Gavel replay, in order (the names its errors use).
GAVEL_FIELDS: tuple[str, ...] = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_s",
    "scale_factor",
)
#: The columns :func:`write_replay_csv` writes: those of the shipped ``philly_vc`` files.
REPLAY_COLUMNS: tuple[str, ...] = ("job_id", "arrival_s", "num_gpus", "duration_s")
#: GPUs the command line reports the offered load on (the ``medium`` cluster's 8x8).
REPORT_GPUS = 64


@dataclass(frozen=True, slots=True)
class GavelReplay:
    """A Gavel replay in the four-column form of the shipped ``philly_vc`` CSV files.

    Attributes:
        job_id: Position of each job in the trace, in file order.  (J,) int64
        arrival_s: Submission times, as the trace gives them.  (J,) [s]
        num_gpus: Scale factors.  (J,) int64
        duration_s: Solo durations on the chosen GPU type, rounded to 0.1 s.  (J,) [s]
        fallback_jobs: Jobs whose scale factor had no measured throughput, timed with
            the scale-factor-1 figure.
        truncated: Whether the trace has more jobs than ``max_jobs`` kept.
    """

    job_id: np.ndarray  # (J,) int64
    arrival_s: np.ndarray  # (J,) [s]
    num_gpus: np.ndarray  # (J,) int64
    duration_s: np.ndarray  # (J,) [s]
    fallback_jobs: int
    truncated: bool

    def __len__(self) -> int:
        return int(self.job_id.shape[0])


def _load_throughputs(path: PathLike, gpu_type: str) -> dict[str, Any]:
    """The ``gpu_type`` table of a Gavel throughputs file: ``{"(type, scale)": entry}``."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise TraceError(f"cannot open: {error.strerror}", path=path) from None
    except json.JSONDecodeError as error:
        raise TraceError(f"malformed JSON: {error.msg}", path=path, line=error.lineno) from None
    except UnicodeDecodeError as error:
        raise TraceError(f"not UTF-8 text: {error}", path=path) from None
    if not isinstance(document, dict):
        raise TraceError(
            f"expected a JSON object keyed by GPU type, got {type(document).__name__}", path=path
        )
    if gpu_type not in document:
        raise TraceError(
            f"no throughputs for GPU type {gpu_type!r}; the file has {sorted(document)}",
            path=path,
        )
    table = document[gpu_type]
    if not isinstance(table, dict):
        raise TraceError(
            f"expected an object of job types, got {type(table).__name__}",
            path=path,
            field=gpu_type,
        )
    return table


def _isolated_throughput(table: dict[str, Any], key: str) -> float | str | None:
    """The isolated throughput of ``key`` (steps per second), ``None`` if not measured, or
    what is wrong with its entry (a text) when it is not a finite ``"null"`` number > 0."""
    if key not in table:
        return None
    entry = table[key]
    value: Any = entry.get("null") if isinstance(entry, dict) else None
    if is_finite(value) and value > 0:
        return float(value)
    return "missing" if value is None else repr(value)


def convert_gavel_trace(
    trace_path: PathLike,
    throughputs_path: PathLike,
    gpu_type: str = "v100",
    max_jobs: int | None = 2000,
) -> GavelReplay:
    """Turn a Gavel replay into the four columns of the shipped CSV traces (module docstring).

    Args:
        trace_path: Gavel's ``<vc>.trace``.
        throughputs_path: Gavel's ``simulation_throughputs.json``.
        gpu_type: The throughputs file's GPU type the durations are measured on.
        max_jobs: Keep the first ``max_jobs`` jobs (the shipped files keep 2000); ``None``
            keeps all. Lines after them are not read.

    Returns:
        The jobs in file order.

    Raises:
        TraceError: Naming file, line and field: a line without 7 fields, a non-integer
            ``total_steps`` or ``scale_factor``, a bad arrival, values beyond the limits
            (``total_steps`` 1 to 2**53, ``scale_factor`` 1 to 65536, arrival 0 to 1e9 s,
            duration > 0 to 1e8 s after rounding), a job type without a throughput at
            its scale factor or at 1, a zero (or negative, or not finite) throughput, a
            throughputs file without ``gpu_type``, an empty trace.
        ValueError: ``max_jobs`` that is neither ``None`` nor an int >= 1.
    """
    if max_jobs is not None and not (is_int(max_jobs) and max_jobs >= 1):
        raise ValueError(f"max_jobs must be None or an int >= 1, got {max_jobs!r}")
    table = _load_throughputs(throughputs_path, gpu_type)
    known: dict[str, float | str | None] = {}  # key -> throughput, looked up once per key

    def throughput(key: str, line: int) -> float | None:
        if key not in known:
            known[key] = _isolated_throughput(table, key)
        rate = known[key]
        if isinstance(rate, str):
            raise TraceError(
                f"{os.fspath(throughputs_path)} gives {key} on {gpu_type} an isolated "
                f"throughput ('null') of {rate}; it must be a finite number > 0 (steps/s)",
                path=trace_path,
                line=line,
                field="job_type",
            )
        return rate

    arrivals: list[float] = []
    gpus: list[int] = []
    durations: list[float] = []
    fallback_jobs = 0
    truncated = False
    try:
        handle = open(trace_path, encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise TraceError(f"cannot open: {error.strerror}", path=trace_path) from None
    with handle:
        try:
            for line, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                if max_jobs is not None and len(durations) >= max_jobs:
                    truncated = True
                    break
                fields = text.rstrip("\r\n").split("\t")
                if len(fields) != len(GAVEL_FIELDS):
                    raise TraceError(
                        f"expected {len(GAVEL_FIELDS)} tab-separated fields "
                        f"({', '.join(GAVEL_FIELDS)}), got {len(fields)}",
                        path=trace_path,
                        line=line,
                    )
                job_type = fields[0]
                steps = _parse_int(fields[4], trace_path, line, "total_steps", 1, MAX_ITERATIONS)
                arrival = _parse_float(
                    fields[5], trace_path, line, "arrival_s", 0.0, False, MAX_ARRIVAL_S
                )
                scale = _parse_int(fields[6], trace_path, line, "scale_factor", 1, MAX_CLUSTER_GPUS)
                # Gavel keys its table by str() of the tuple, quotes and all
                rate = throughput(str((job_type, scale)), line)
                if rate is None:
                    rate = throughput(str((job_type, 1)), line)
                    if rate is None:
                        raise TraceError(
                            f"job type {job_type!r} has no throughput on {gpu_type} in "
                            f"{os.fspath(throughputs_path)} at scale factor {scale} or 1",
                            path=trace_path,
                            line=line,
                            field="job_type",
                        )
                    fallback_jobs += 1
                duration = round(steps / rate, 1)
                if not 0 < duration <= MAX_DURATION_S:
                    raise TraceError(
                        f"{steps} steps at {rate!r} steps/s on {gpu_type} give "
                        f"{duration!r} s (rounded to 0.1 s); a duration must be "
                        f"{range_text(0, MAX_DURATION_S, low_open=True)} s",
                        path=trace_path,
                        line=line,
                        field="total_steps",
                    )
                arrivals.append(arrival)
                gpus.append(scale)
                durations.append(duration)
        except UnicodeDecodeError as error:
            raise TraceError(f"not UTF-8 text: {error}", path=trace_path) from None
    if not durations:
        raise TraceError("no jobs: the file is empty or blank", path=trace_path, line=1)
    return GavelReplay(
        job_id=np.arange(len(durations), dtype=np.int64),
        arrival_s=np.asarray(arrivals, dtype=np.float64),
        num_gpus=np.asarray(gpus, dtype=np.int64),
        duration_s=np.asarray(durations, dtype=np.float64),
        fallback_jobs=fallback_jobs,
        truncated=truncated,
    )


def replay_jobs(
    replay: GavelReplay,
    rng: np.random.Generator | int = 0,
    *,
    models: Sequence[str] = DEFAULT_MODELS,
) -> list[JobSpec]:
    """The jobs of a replay, as :func:`~.csv_trace.read_csv_trace` reads its CSV form.

    Models are drawn as that reader draws them (job ``i``'s from the ``"models"`` stream's
    ``i``-th draw), so for the same ``rng`` the jobs are equal.
    """
    if not models or any(m not in MODELS for m in models):
        raise ValueError(f"models must be a non-empty list of {sorted(MODELS)}, got {models!r}")
    model_index = spawn_streams(rng)["models"].integers(len(models), size=len(replay))
    return jobs_from_arrays(
        replay.arrival_s,
        replay.num_gpus,
        replay.duration_s,
        model_index,
        models,
        job_ids=replay.job_id,
    )


def read_gavel_trace(
    trace_path: PathLike,
    throughputs_path: PathLike,
    gpu_type: str = "v100",
    max_jobs: int | None = 2000,
    *,
    rng: np.random.Generator | int = 0,
    models: Sequence[str] = DEFAULT_MODELS,
) -> list[JobSpec]:
    """Read a Gavel Philly replay as jobs (the conversion: the module docstring).

    The jobs equal what :func:`~.csv_trace.read_csv_trace` gives for the CSV file that
    :func:`write_replay_csv` writes of the same replay, with the same ``rng`` and
    ``models``: for the six shipped VCs, the shipped files.

    Args:
        trace_path: Gavel's ``scheduler/traces/msr/seed=0/<vc>.trace``.
        throughputs_path: Gavel's ``scheduler/simulation_throughputs.json``.
        gpu_type: GPU type of the throughputs the durations come from.
        max_jobs: Keep the first ``max_jobs`` jobs; ``None`` keeps all.
        rng: Generator or seed for the models (Gavel's job types are not kept).
        models: Models to draw from, uniformly.

    Returns:
        Jobs with the trace's positions as ids, sorted by ``(arrival_s, job_id)``.

    Raises:
        TraceError: As :func:`convert_gavel_trace`, naming file, line and field.
    """
    replay = convert_gavel_trace(trace_path, throughputs_path, gpu_type, max_jobs)
    return replay_jobs(replay, rng, models=models)


def write_replay_csv(replay: GavelReplay, path: PathLike) -> None:
    """Write a replay as a CSV trace of columns ``job_id, arrival_s, num_gpus, duration_s``.

    The form of the shipped ``data/philly_vc`` files, byte for byte: Python's ``csv``
    defaults (``\\r\\n`` line ends) and floats as ``repr`` writes them. Why not
    :func:`~.csv_trace.write_csv_trace`: it writes a ``JobSpec``'s every column, and its
    ``duration_s`` is the job's ``iterations x step time``, within half a step of the
    trace's duration but not equal to it. These four columns are the trace's own values,
    and :func:`~.csv_trace.read_csv_trace` reads them back as :func:`read_gavel_trace`'s
    jobs.
    """
    rows = zip(
        replay.job_id.tolist(),
        replay.arrival_s.tolist(),
        replay.num_gpus.tolist(),
        replay.duration_s.tolist(),
        strict=True,
    )
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\r\n")
        writer.writerow(REPLAY_COLUMNS)
        writer.writerows(rows)


def _max_jobs_option(text: str) -> int | None:
    """``--max-jobs``: an int >= 1, or ``all``."""
    if text.strip().lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 1 or 'all', got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (or 'all'), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line's options."""
    parser = argparse.ArgumentParser(
        prog="python -m gpushare_env.workloads.gavel_trace",
        description="Convert a Philly VC replay of the Gavel project "
        "(scheduler/traces/msr/seed=0/<vc>.trace, with scheduler/simulation_throughputs.json) "
        "into a workload CSV (job_id, arrival_s, num_gpus, duration_s) as the shipped "
        "philly_vc traces are.",
    )
    parser.add_argument("trace", help="Gavel's <vc>.trace (tab-separated, one job a line)")
    parser.add_argument("throughputs", help="Gavel's simulation_throughputs.json")
    parser.add_argument("-o", "--out", required=True, help="the CSV file to write")
    parser.add_argument(
        "--gpu-type",
        default="v100",
        help="GPU type of the throughputs the durations are measured on (default: v100)",
    )
    parser.add_argument(
        "--max-jobs",
        type=_max_jobs_option,
        default=2000,
        metavar="N",
        help="keep the first N jobs, or 'all' (default: 2000, as the shipped traces)",
    )
    return parser


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the command line; returns the exit status (2: a bad option or input).

    Nothing is written unless the whole trace converts.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.path.isdir(args.out):
        return _usage_error(parser, f"-o: {args.out!r} is a folder, not a file")
    try:
        replay = convert_gavel_trace(args.trace, args.throughputs, args.gpu_type, args.max_jobs)
    except TraceError as error:
        return _usage_error(parser, str(error))
    try:
        write_replay_csv(replay, args.out)
    except OSError as error:
        return _usage_error(parser, f"-o: cannot write {args.out!r}: {error.strerror}")
    load = offered_load(replay_jobs(replay), REPORT_GPUS)
    kept = f"the first {len(replay)} of the trace" if replay.truncated else "the whole trace"
    print(f"wrote {len(replay)} jobs to {args.out} ({kept})")
    if replay.fallback_jobs:
        print(
            f"{replay.fallback_jobs} job(s) had no throughput measured at their scale "
            f"factor and were timed at scale factor 1"
        )
    shown = f"{load:.2f}" if math.isfinite(load) else "inf (every job arrives at once)"
    print(f"offered load on {REPORT_GPUS} GPUs: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
