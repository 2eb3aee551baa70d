"""Inputs of MISO's simulated scenario: 100 jobs on A100-40GB GPUs partitioned with MIG.

MISO (B. Li et al., "MISO: Exploiting Multi-Instance GPU Capability on Multi-Tenant GPU
Clusters", ACM SoCC 2022) evaluates its scheduler in a simulator on 8 A100-40GB GPUs. This
module reads the scenario's shipped inputs (``data/miso/README.md``: the source, its MIT
licence and how the files were made) and draws its random parts exactly as the paper's
artifact does, so that a simulation of the same rules can be compared with the artifact's
stored results. The rules themselves are in ``docs/design/miso_protocol.md``.

>>> jobs = miso_jobs()
>>> len(jobs), jobs[0].model, jobs[0].duration_s
(100, 'embedding_train128', 61.0)
>>> round(jobs[0].speed("3g.20gb"), 4), jobs[2].speed("1g.5gb")  # cyclegan_train4: no 1g
(0.8947, None)
>>> draws = miso_arrivals()
>>> draws.order[:4], draws.arrival_s[:4], draws.overhead_s[:2]
((59, 78, 47, 34), (35, 67, 97, 122), (8.61, 5.7))

Randomness comes only from the generators passed in, or from ones created from ``seed``
the way the artifact seeds its global ones: Python's ``random.Random(seed)`` and numpy's
legacy ``RandomState(seed + 1)``.

Bad input raises :class:`~.jobs.TraceError` (a ``ValueError``) naming the file, the line
(the CSV header is line 1; in a JSON file, the line of the key) and the key or column:
malformed JSON or CSV, a non-object JSON file, a job id that is not a whole number
``>= 0``, a duplicate key, a length that is not a finite number ``> 0``, an empty or
unknown model, a job whose model has no latencies, an unknown MIG profile, a latency that
is not a finite number ``> 0``, a batch count that is not a whole number ``>= 1``, a
model without a 7g.40gb, 4g.20gb or 3g.20gb latency, a model that fits a profile but not a
larger one, job ids that are not the same in the trace and the model list.
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from itertools import pairwise
from pathlib import Path

import numpy as np

from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.config import RESTART_RULES
from gpushare_env.workloads.jobs import TraceError

__all__ = [
    "A100_PARTITIONS",
    "LATENCY_COLUMNS",
    "MIG_PROFILES",
    "MISO_ERROR_MEAN",
    "MISO_ERROR_STD",
    "MISO_INTERARRIVAL_S",
    "MISO_NUM_GPUS",
    "MISO_SEED",
    "MISO_STORED_AVG_JCT_S",
    "PROFILE_SLICES",
    "RESTART_RULES",
    "MisoArrivals",
    "MisoJob",
    "artifact_normalized_latencies",
    "miso_arrivals",
    "miso_generators",
    "miso_job_specs",
    "miso_jobs",
    "miso_predicted_latencies",
    "miso_scenario_draws",
    "read_miso_job_models",
    "read_miso_latencies",
    "read_miso_trace",
    "shipped_miso_path",
]

PathLike = str | os.PathLike[str]

#: The MIG profiles of an A100-40GB, smallest first.
MIG_PROFILES: tuple[str, ...] = ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")

#: Compute slices (of 7) of each profile.
PROFILE_SLICES: dict[str, int] = {
    "1g.5gb": 1,
    "2g.10gb": 2,
    "3g.20gb": 3,
    "4g.20gb": 4,
    "7g.40gb": 7,
}

#: The whole-GPU profile: a job's speed is relative to it.
_FULL = "7g.40gb"

#: The three largest profiles; the artifact normalises latencies by their maximum.
_NORMALISING = ("7g.40gb", "4g.20gb", "3g.20gb")

#: The 18 ways the artifact partitions one A100 (``mps/scheduler/partition_code.json``),
#: in its order, each a list of slice sizes in position order. Its searches keep the first
#: best partition in this order, so the order breaks ties.
A100_PARTITIONS: tuple[tuple[int, ...], ...] = (
    (7,),
    (2, 1, 4),
    (1, 1, 1, 4),
    (3, 3),
    (2, 1, 3),
    (1, 1, 1, 3),
    (3, 2, 2),
    (3, 2, 1, 1),
    (3, 1, 1, 2),
    (3, 1, 1, 1, 1),
    (2, 1, 2, 2),
    (2, 1, 2, 1, 1),
    (2, 1, 1, 1, 2),
    (1, 1, 1, 2, 1, 1),
    (1, 1, 1, 1, 1, 2),
    (2, 1, 1, 1, 1, 1),
    (1, 2, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, 1, 1),
)

#: The seed of the artifact's stored results for this scenario.
MISO_SEED = 9
#: GPUs in the scenario (A100-40GB).
MISO_NUM_GPUS = 8
#: The artifact's ``--arrival``: mean gap [s] after the first third of the jobs (half before).
MISO_INTERARRIVAL_S = 60
#: The artifact's predictor error: mean and standard deviation of its magnitude, in units
#: of the normalised latency (see :func:`miso_predicted_latencies`).
MISO_ERROR_MEAN = 0.016
MISO_ERROR_STD = 0.0016 * 2

#: The artifact's stored average job completion time [s] of each policy for this scenario
#: (seed 9, these shipped inputs, 8 GPUs, 30 s of profiling), from
#: ``mps/scheduler/experiment/logs_sc_results/<full|static|miso|oracle>/JCT.json`` of
#: ``gajagajago/socc22-miso``; rerunning the artifact's code reproduces all four.
MISO_STORED_AVG_JCT_S: dict[str, float] = {
    "mig_full": 2371.06,
    "mig_static": 1441.34,
    "miso": 1216.03,
    "mig_oracle": 1140.73,
}

#: Header of ``mig_mean_batch_latency.csv``.
LATENCY_COLUMNS: tuple[str, ...] = ("model", "profile", "mean_batch_latency_s", "batches")

_DATA = ("data", "miso")
_TRACE = "trace_100_sc_old.json"
_MODELS = "job_models_experiment.json"
_LATENCIES = "mig_mean_batch_latency.csv"


def shipped_miso_path(name: str) -> Path:
    """A shipped file of ``data/miso``: ``trace_100_sc_old.json``,
    ``job_models_experiment.json``, ``mig_mean_batch_latency.csv``, ``README.md`` or
    ``LICENSE``."""
    root = resources.files("gpushare_env.workloads").joinpath(*_DATA, name)
    return Path(str(root))


@dataclass(frozen=True)
class MisoJob:
    """One job of the scenario.

    Attributes:
        job_id: The trace's job id (0-99).
        duration_s: Length alone on a whole A100 (7g.40gb), as in the trace. The
            artifact's simulator uses :attr:`artifact_duration_s`.
        model: The model and batch size it trains, e.g. ``"resnet_train64"``.
        batch_latency_s: Mean time of one training batch [s] on each profile the job fits
            in (the others are absent).
    """

    job_id: int
    duration_s: float
    model: str
    batch_latency_s: Mapping[str, float] = field(repr=False)

    @property
    def artifact_duration_s(self) -> int:
        """The length as the artifact's simulator takes it: truncated to whole seconds."""
        return int(self.duration_s)

    def fits(self, profile: str) -> bool:
        """Whether the job fits in ``profile`` (does not run out of memory there)."""
        _check_profile(profile)
        return profile in self.batch_latency_s

    @property
    def smallest_profile(self) -> str:
        """The smallest profile the job fits in."""
        return next(p for p in MIG_PROFILES if p in self.batch_latency_s)

    def speed(self, profile: str) -> float | None:
        """Speed on ``profile`` relative to a whole GPU: 7g.40gb latency / its latency.

        ``None`` when the job does not fit there.
        """
        _check_profile(profile)
        latency = self.batch_latency_s.get(profile)
        if latency is None:
            return None
        return self.batch_latency_s[_FULL] / latency

    def speeds(self) -> dict[str, float | None]:
        """:meth:`speed` on every profile, smallest profile first."""
        return {profile: self.speed(profile) for profile in MIG_PROFILES}


@dataclass(frozen=True)
class MisoArrivals:
    """The artifact's random draws for one seed: arrival order, times and overheads.

    Attributes:
        order: Job ids in arrival order.
        arrival_s: Arrival time [s] of each job of ``order`` (whole seconds, non-decreasing;
            the first job arrives after one gap, not at 0).
        overhead_s: Checkpoint-and-restart overhead [s] of each job, indexed by job id
            (U(1, 10) rounded to 2 decimals).
    """

    order: tuple[int, ...]
    arrival_s: tuple[int, ...]
    overhead_s: tuple[float, ...]

    def arrival_of(self) -> dict[int, int]:
        """Job id -> arrival time [s]."""
        return dict(zip(self.order, self.arrival_s, strict=True))


def miso_generators(seed: int = MISO_SEED) -> tuple[random.Random, np.random.RandomState]:
    """The two generators the artifact seeds for ``seed``: Python's ``random`` with
    ``seed`` and numpy's legacy ``RandomState`` with ``seed + 1``. Every draw of the
    scenario comes from them, in the order of :func:`miso_scenario_draws`."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    return random.Random(int(seed)), np.random.RandomState(int(seed) + 1)


def miso_arrivals(
    seed: int = MISO_SEED,
    *,
    num_jobs: int = 100,
    interarrival_s: float = MISO_INTERARRIVAL_S,
    py_rng: random.Random | None = None,
    np_rng: np.random.RandomState | None = None,
) -> MisoArrivals:
    """Arrival order, arrival times and checkpoint overheads, drawn as the artifact does.

    The artifact (``Simulation.__init__`` in ``mps/scheduler/simulator/schemes.py``) seeds
    Python's ``random`` with ``seed`` and numpy's legacy generator with ``seed + 1``, then:

    1. shuffles the job ids with ``random.sample(ids, len(ids))``;
    2. walks the shuffled ids, drawing each gap with ``np.random.poisson(mean)``: ``mean``
       is ``interarrival_s / 2`` while fewer than ``int(num_jobs / 3) + 1`` jobs have
       arrived (the first 34 of 100), ``interarrival_s`` after; the first job arrives after
       one gap;
    3. draws each job's overhead, in job-id order, as ``round(random.uniform(1, 10), 2)``.

    Args:
        seed: Seeds the generators that are not passed in: ``random.Random(seed)`` and
            ``numpy.random.RandomState(seed + 1)``.
        num_jobs: Jobs 0 to ``num_jobs - 1``.
        interarrival_s: The artifact's ``--arrival``.
        py_rng: Python generator for the shuffle and the overheads (advanced in place).
        np_rng: Numpy legacy generator for the gaps (advanced in place; the artifact then
            draws its prediction errors from it, see :func:`miso_predicted_latencies`).
    """
    if isinstance(num_jobs, bool) or not isinstance(num_jobs, int) or num_jobs < 1:
        raise ValueError(f"miso_arrivals: num_jobs must be an int >= 1, got {num_jobs!r}")
    if isinstance(interarrival_s, bool) or not (
        isinstance(interarrival_s, (int, float)) and math.isfinite(interarrival_s)
    ):
        raise ValueError(
            f"miso_arrivals: interarrival_s must be a finite number, got {interarrival_s!r}"
        )
    if interarrival_s < 0:
        raise ValueError(f"miso_arrivals: interarrival_s must be >= 0, got {interarrival_s}")
    if py_rng is None or np_rng is None:
        seeded_py, seeded_np = miso_generators(seed)
        py_rng = seeded_py if py_rng is None else py_rng
        np_rng = seeded_np if np_rng is None else np_rng
    py, nps = py_rng, np_rng
    ids = list(range(num_jobs))
    order = py.sample(ids, len(ids))
    first_third = int(num_jobs / 3)
    times: list[int] = []
    now = 0
    for _ in order:
        mean = interarrival_s / 2 if len(times) <= first_third else interarrival_s
        now += int(nps.poisson(mean))
        times.append(now)
    overheads = tuple(round(py.uniform(1, 10), 2) for _ in ids)
    return MisoArrivals(order=tuple(order), arrival_s=tuple(times), overhead_s=overheads)


def artifact_normalized_latencies(job: MisoJob) -> dict[str, float]:
    """The job's latencies as the artifact's simulator holds them (``perf_actual``).

    Each latency divided by the largest of the 7g.40gb, 4g.20gb and 3g.20gb latencies and
    rounded to 4 decimals (``np.round``), keyed by profile, largest profile first. The
    artifact's speed on a profile is ``1 / (table[profile] / table["7g.40gb"])``, which
    differs from :meth:`MisoJob.speed` by the rounding only (under 1e-3).
    """
    profiles = [p for p in reversed(MIG_PROFILES) if p in job.batch_latency_s]
    values = np.asarray([job.batch_latency_s[p] for p in profiles])
    normalised = np.round(values / values[:3].max(), 4)
    return {p: float(v) for p, v in zip(profiles, normalised, strict=True)}


def miso_predicted_latencies(
    jobs: Sequence[MisoJob],
    np_rng: np.random.RandomState,
    *,
    error_mean: float = MISO_ERROR_MEAN,
    error_std: float = MISO_ERROR_STD,
) -> dict[int, dict[str, float]]:
    """MISO's predicted latencies (``perf_pred``), with the artifact's prediction error.

    For each job in the given order (the artifact's: the model file's, job 0 first), with
    ``n`` the number of profiles it fits in: ``e = np_rng.normal(error_mean, error_std, n)``,
    then each ``e`` is negated where ``np_rng.random(n) > 0.5``, and the prediction is
    :func:`artifact_normalized_latencies` plus ``e``, largest profile first. ``np_rng`` must
    be in the state :func:`miso_arrivals` leaves it in to reproduce the artifact.
    """
    predicted: dict[int, dict[str, float]] = {}
    for job in jobs:
        actual = artifact_normalized_latencies(job)
        values = np.asarray(list(actual.values()))
        error = np_rng.normal(error_mean, error_std, len(values))
        error = np.where(np_rng.random(len(error)) > 0.5, -error, error)
        predicted[job.job_id] = {p: float(v) for p, v in zip(actual, values + error, strict=True)}
    return predicted


def miso_scenario_draws(
    seed: int = MISO_SEED,
    jobs: Sequence[MisoJob] | None = None,
    *,
    interarrival_s: float = MISO_INTERARRIVAL_S,
    error_mean: float = MISO_ERROR_MEAN,
    error_std: float = MISO_ERROR_STD,
) -> tuple[MisoArrivals, dict[int, dict[str, float]]]:
    """All of the artifact's draws for ``seed``, in its order: arrivals, overheads, then
    predicted latencies. ``jobs`` defaults to :func:`miso_jobs`."""
    scenario_jobs = miso_jobs() if jobs is None else list(jobs)
    py, nps = miso_generators(seed)
    arrivals = miso_arrivals(
        num_jobs=len(scenario_jobs), interarrival_s=interarrival_s, py_rng=py, np_rng=nps
    )
    predicted = miso_predicted_latencies(
        scenario_jobs, nps, error_mean=error_mean, error_std=error_std
    )
    return arrivals, predicted


# --------------------------------------------------------------------------- readers


def miso_jobs(
    trace: PathLike | None = None,
    models: PathLike | None = None,
    latencies: PathLike | None = None,
) -> list[MisoJob]:
    """The scenario's jobs, by job id: the shipped files unless others are given.

    Raises:
        TraceError: Bad input (see the module docstring), or a job whose model has no
            latencies, or job ids that differ between the trace and the model list.
    """
    trace_path = shipped_miso_path(_TRACE) if trace is None else Path(trace)
    models_path = shipped_miso_path(_MODELS) if models is None else Path(models)
    latency_path = shipped_miso_path(_LATENCIES) if latencies is None else Path(latencies)
    durations = read_miso_trace(trace_path)
    job_models = read_miso_job_models(models_path)
    table = read_miso_latencies(latency_path)
    if set(durations) != set(job_models):
        only_trace = sorted(set(durations) - set(job_models))
        only_models = sorted(set(job_models) - set(durations))
        raise TraceError(
            "the trace and the model list must have the same job ids; "
            f"only in the trace: {_few(only_trace)}, only in the model list: {_few(only_models)}",
            path=models_path,
            field="job id",
        )
    jobs = []
    for job_id in sorted(durations):
        model = job_models[job_id]
        if model not in table:
            raise TraceError(
                f"model {model!r} has no latencies in {latency_path}",
                path=models_path,
                line=_key_line(models_path, str(job_id)),
                job=job_id,
                field=str(job_id),
            )
        jobs.append(MisoJob(job_id, durations[job_id], model, table[model]))
    return jobs


def miso_job_specs(
    seed: int = MISO_SEED, jobs: Sequence[MisoJob] | None = None, *, restart: str = "drawn"
) -> list[JobSpec]:
    """The scenario as the simulator's jobs, for ``sharing = "mig"`` on A100-40GB GPUs.

    Each job arrives when the artifact's draws for ``seed`` say (:func:`miso_arrivals`),
    runs its :attr:`~MisoJob.artifact_duration_s` on a whole A100 (one iteration a second:
    ``iter_time_s`` is the ``a100`` type's speed, 2.0), restarts from a checkpoint in its
    drawn overhead (``restart_s``), and is MISO's job by name (``model`` and
    ``batch_size`` spell ``resnet_train64``), so its speed on each profile is MISO's
    measurement (``gpushare_env.sim.mig_speed.job_speed_table``). ``memory_gib`` is the
    usable memory of the smallest profile it fits (it decides nothing on an A100-40GB).
    ``restart="steps"`` charges each restart ``ceil(o) - 1`` s, as the artifact's 1 s
    step does, instead of the drawn ``o``.
    """
    if restart not in RESTART_RULES:
        raise ValueError(f"miso_job_specs: restart must be one of {RESTART_RULES}, got {restart!r}")
    from gpushare_env.sim.catalog import GPU_TYPES
    from gpushare_env.sim.mig import get_mig_model
    from gpushare_env.sim.mig_speed import MISO_GPU_MODEL, usable_memory_gib

    scenario = miso_jobs() if jobs is None else list(jobs)
    arrivals = miso_arrivals(seed, num_jobs=len(scenario))
    arrival_of = arrivals.arrival_of()
    a100 = get_mig_model(MISO_GPU_MODEL)
    speed = GPU_TYPES["a100"].speed
    specs = []
    for job in scenario:
        model, _, batch = job.model.rpartition("_train")
        smallest = min((a100.profile(p) for p in job.batch_latency_s), key=lambda p: p.memory_gib)
        specs.append(
            JobSpec(
                job_id=job.job_id,
                arrival_s=float(arrival_of[job.job_id]),
                model=model,
                batch_size=int(batch),
                num_gpus=1,
                iterations=job.artifact_duration_s,
                memory_gib=usable_memory_gib(smallest),
                intensity=1.0,
                iter_time_s=float(speed),
                restart_s=(
                    arrivals.overhead_s[job.job_id]
                    if restart == "drawn"
                    else float(math.ceil(arrivals.overhead_s[job.job_id]) - 1)
                ),
            )
        )
    return sorted(specs, key=lambda s: (s.arrival_s, s.job_id))


def read_miso_trace(path: PathLike) -> dict[int, float]:
    """Job id -> length [s] from a trace like ``trace_100_sc_old.json``."""
    data = _json_object(path)
    durations: dict[int, float] = {}
    for key, value in data.items():
        job_id = _job_id(path, key, durations)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TraceError(
                f"the length must be a number of seconds, got {value!r}",
                path=path,
                line=_key_line(path, key),
                field=key,
            )
        if not math.isfinite(value) or value <= 0:
            raise TraceError(
                f"the length must be a finite number > 0, got {value!r}",
                path=path,
                line=_key_line(path, key),
                field=key,
            )
        durations[job_id] = float(value)
    return durations


def read_miso_job_models(path: PathLike) -> dict[int, str]:
    """Job id -> model and batch size (``"resnet_train64"``) from a file like
    ``job_models_experiment.json``."""
    data = _json_object(path)
    models: dict[int, str] = {}
    for key, value in data.items():
        job_id = _job_id(path, key, models)
        if not isinstance(value, str) or not value.strip():
            raise TraceError(
                f"the model must be a non-empty string, got {value!r}",
                path=path,
                line=_key_line(path, key),
                field=key,
            )
        models[job_id] = value
    return models


def read_miso_latencies(path: PathLike) -> dict[str, dict[str, float]]:
    """Model -> profile -> mean batch latency [s] from ``mig_mean_batch_latency.csv``.

    Each model must have 7g.40gb, 4g.20gb and 3g.20gb; a model that fits a profile must fit
    every larger one.
    """
    table: dict[str, dict[str, float]] = {}
    first_line: dict[str, int] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header_seen = False
        for record in reader:
            line = reader.line_num
            if not header_seen:
                found = tuple(cell.strip() for cell in record)
                if found != LATENCY_COLUMNS:
                    raise TraceError(
                        f"the header must be {', '.join(LATENCY_COLUMNS)}; "
                        f"got {', '.join(found) or '(empty)'}",
                        path=path,
                        line=line,
                        field="header",
                    )
                header_seen = True
                continue
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(LATENCY_COLUMNS):
                raise TraceError(
                    f"expected {len(LATENCY_COLUMNS)} columns, got {len(record)}",
                    path=path,
                    line=line,
                )
            model, profile, latency_text, batches_text = (cell.strip() for cell in record)
            if not model:
                raise TraceError(
                    "missing value (the cell is empty)", path=path, line=line, field="model"
                )
            if profile not in PROFILE_SLICES:
                raise TraceError(
                    f"unknown MIG profile {profile!r}; expected one of {', '.join(MIG_PROFILES)}",
                    path=path,
                    line=line,
                    field="profile",
                )
            latency = _positive_float(path, line, "mean_batch_latency_s", latency_text)
            _whole_at_least_one(path, line, "batches", batches_text)
            profiles = table.setdefault(model, {})
            first_line.setdefault(model, line)
            if profile in profiles:
                raise TraceError(
                    f"duplicate row for model {model!r} on {profile}",
                    path=path,
                    line=line,
                    field="profile",
                )
            profiles[profile] = latency
        if not header_seen:
            raise TraceError("the file is empty (no header)", path=path, line=1, field="header")
    for model, profiles in table.items():
        missing = [p for p in _NORMALISING if p not in profiles]
        if missing:
            raise TraceError(
                f"model {model!r} has no latency on {', '.join(missing)} "
                "(every model must fit in 3g.20gb and larger)",
                path=path,
                line=first_line[model],
                field="profile",
            )
        fitting = [p in profiles for p in MIG_PROFILES]
        if any(fit and not larger for fit, larger in pairwise(fitting)):
            raise TraceError(
                f"model {model!r} fits a profile but not a larger one: {sorted(profiles)}",
                path=path,
                line=first_line[model],
                field="profile",
            )
    return {
        model: {p: table[model][p] for p in MIG_PROFILES if p in table[model]} for model in table
    }


# --------------------------------------------------------------------------- helpers


def _check_profile(profile: str) -> None:
    if profile not in PROFILE_SLICES:
        raise ValueError(
            f"unknown MIG profile {profile!r}; expected one of {', '.join(MIG_PROFILES)}"
        )


def _json_object(path: PathLike) -> dict[str, object]:
    """The JSON object in ``path``, keys in file order; duplicate keys are an error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"not UTF-8 text ({exc.reason})", path=path) from exc

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in items:
            if key in result:
                raise TraceError(
                    f"duplicate key {key!r}", path=path, line=_key_line(path, key, nth=2), field=key
                )
            result[key] = value
        return result

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise TraceError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    if not isinstance(data, dict):
        raise TraceError(
            f"the file must hold one JSON object (job id -> value), got {type(data).__name__}",
            path=path,
            line=1,
        )
    if not data:
        raise TraceError("the file lists no jobs", path=path, line=1)
    return data


def _job_id(path: PathLike, key: str, seen: Mapping[int, object]) -> int:
    text = key.strip()
    if not text.isascii() or not text.isdigit():
        raise TraceError(
            f"a job id must be a whole number >= 0, got {key!r}",
            path=path,
            line=_key_line(path, key),
            field=key,
        )
    job_id = int(text)
    if job_id in seen:
        raise TraceError(
            f"duplicate job id {job_id} (key {key!r})",
            path=path,
            line=_key_line(path, key),
            field=key,
        )
    return job_id


def _key_line(path: PathLike, key: str, nth: int = 1) -> int | None:
    """1-based line of the ``nth`` occurrence of ``"key":`` in a JSON file, if found."""
    needle = json.dumps(key)
    seen = 0
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, text in enumerate(lines, start=1):
        position = text.find(needle)
        while position >= 0:
            if text[position + len(needle) :].lstrip().startswith(":"):
                seen += 1
                if seen == nth:
                    return number
            position = text.find(needle, position + 1)
    return None


def _positive_float(path: PathLike, line: int, column: str, text: str) -> float:
    if not text:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"not a number: {text!r}", path=path, line=line, field=column) from None
    if not math.isfinite(value) or value <= 0:
        raise TraceError(
            f"must be a finite number > 0, got {text}", path=path, line=line, field=column
        )
    return value


def _whole_at_least_one(path: PathLike, line: int, column: str, text: str) -> int:
    if not text:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise TraceError(
            f"must be a whole number >= 1, got {text!r}", path=path, line=line, field=column
        )
    return int(text)


def _few(values: Iterable[int], limit: int = 5) -> str:
    items = list(values)
    shown = ", ".join(str(v) for v in items[:limit])
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return (shown + more) or "none"
