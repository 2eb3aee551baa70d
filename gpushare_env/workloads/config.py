"""``WorkloadConfig``: one validated description of a workload, and ``make_workload``.

A workload is named by a preset (``"thesis"``, ``"thesis_poisson"``, ``"philly"``,
``"philly_parametric"``, ``"philly_bursty"``), a dict of :class:`WorkloadConfig` fields
(optionally ``{"preset": name, ...overrides}``), or the path of a trace file (``.csv`` or
``.json``). :func:`make_workload` turns any of them, with a generator, into jobs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_env.sim.catalog import DEFAULT_MODELS, MODELS
from gpushare_env.sim.limits import (
    MAX_ARRIVAL_S,
    MAX_CLUSTER_GPUS,
    MAX_DURATION_S,
    MAX_JOBS,
)
from gpushare_env.sim.settings import (
    is_finite,
    is_int,
    is_real,
    plain,
    range_text,
    unknown_keys_error,
)
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.csv_trace import (
    read_csv_header,
    read_csv_trace,
    read_duration_gpus_csv,
)
from gpushare_env.workloads.generators import (
    PHILLY_CLUSTER_GPUS,
    THESIS_DURATION_SCALE,
    THESIS_MAX_DURATION_QUANTILE,
    THESIS_MEAN_GAP_S,
    philly_workload,
    thesis_workload,
)
from gpushare_env.workloads.jobs import as_generator, random_run
from gpushare_env.workloads.openb import is_openb_pod_list, openb_jobs
from gpushare_env.workloads.philly_trace import parse_time, read_philly_job_log

__all__ = ["WORKLOAD_PRESETS", "WorkloadConfig", "make_workload"]

_log = logging.getLogger(__name__)

_KINDS = ("thesis", "philly", "trace", "miso")
_ARRIVALS = {
    "thesis": ("interval", "poisson"),
    "philly": ("poisson", "bursty"),
    "trace": ("poisson",),  # only (duration_s, num_gpus) CSVs need arrivals drawn
    "miso": ("artifact",),  # MISO's artifact's own draws (gpushare_env.workloads.miso)
}
_DEFAULT_ARRIVAL = {
    "thesis": "interval",
    "philly": "poisson",
    "trace": "poisson",
    "miso": "artifact",
}
_DEFAULT_NUM_JOBS = 100
#: How kind ``miso`` charges a restart (``gpushare_env.workloads.miso.miso_job_specs``):
#: the drawn overhead, or what the artifact's 1 s step makes of it.
RESTART_RULES: tuple[str, ...] = ("drawn", "steps")
#: The sharing model a generated kind's jobs are written for.
_SHARING_OF = {"miso": "mig"}
_TRACE_SUFFIXES = (".csv", ".json")
_CUTS = ("first", "random")
#: Offered loads allowed (1e307 would make the mean gap between arrivals 0 s, 1e-320 inf).
MIN_LOAD, MAX_LOAD = 1e-6, 1e6


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    """What workload to generate or load. Frozen; every field is checked on creation.

    Fields that do not apply to the ``kind`` are ignored (a trace has its own GPU counts).

    Attributes:
        kind: ``"thesis"`` (the thesis's 100-job generator), ``"philly"`` (Philly-style
            stream at a target load), ``"trace"`` (read ``path``) or ``"miso"`` (MISO's
            100-job scenario as its artifact draws it, seed 9, for ``sharing = "mig"``;
            the episode's seed draws nothing of it).
        num_jobs: Jobs to generate, >= 1 and <= 1e7; for a trace, the most to keep (earliest
            first). ``None``: 100 for generators, the whole trace for traces.
        arrival: Arrival process, ``None`` for the kind's default. ``thesis``:
            ``"interval"`` (default) or ``"poisson"``; ``philly``: ``"poisson"`` (default)
            or ``"bursty"`` (Philly-shaped gaps); ``trace``: ``"poisson"``, used only for
            CSVs without arrival times.
        interval_s: Gap of ``"interval"`` arrivals, > 0 and <= 1e9.  [s]
        mean_gap_s: Mean gap of Poisson or bursty arrivals, > 0 and <= 1e9. ``None``: 60 s for
            ``thesis``; for ``philly`` and arrival-less traces, derived from ``load``.  [s]
        load: Target offered load, >= 1e-6 and <= 1e6: expected GPU-seconds requested per
            second over the cluster's GPUs (1.0 fills it exactly without sharing).
        num_cluster_gpus: GPUs the load refers to, >= 1. ``None``: the ``cluster_gpus``
            given to :func:`make_workload`, else 2,048 (the ``philly`` cluster).
        duration_model: ``"empirical"`` (Philly's quantile table) or ``"parametric"``
            (Gavel's fit).
        duration_scale: Multiplies every job length, > 0 and <= 1e8. ``None``: 1/60 for ``thesis``
            (a Philly hour becomes a minute), 1.0 otherwise.
        max_duration_quantile: Draw lengths below this quantile only, in (0, 1] (an openb
            pod list: leave out its tasks longer than this quantile of theirs). ``None``:
            0.95 for ``thesis`` (drops the weeks-long tail), 1.0 for ``philly``.
        models: Models drawn uniformly for each job (and for trace rows naming none);
            non-empty, each a key of ``MODELS``.
        max_gpus: Largest GPU count generated, >= 1 (counts are drawn conditioned on it;
            an openb pod list: its tasks asking for more are left out, the others arriving
            as they would with them).
            ``None``: no limit, except ``cluster_gpus`` when given to :func:`make_workload`.
        path: Trace file (``.csv`` or ``.json``); required for and only for ``"trace"``.
        window_start: For JSON traces, keep jobs submitted at or after this time, e.g.
            ``"2017-10-03 00:00:00"``; arrival 0 is this time.
        window_end: For JSON traces, keep jobs submitted before this time.
        cut: Which ``num_jobs`` jobs of a trace an episode plays: ``"first"`` (the
            earliest, the same every episode) or ``"random"`` (a run of ``num_jobs``
            consecutive jobs, by arrival, from a start drawn per episode from the
            episode's generator; arrivals shifted so the run starts at 0): episodes cut
            from a whole trace with its real arrivals, for training. Traces only.
        repeat: Play an openb pod list this many times in a row, >= 1 (each copy one
            arrival span plus the mean gap after the previous; with ``load``, the
            arrivals of the whole offer it): with ``max_duration_quantile`` and ``load``,
            a cluster kept busy long enough for placement to matter (``openb_jobs``).
            Openb pod lists only.
        restart: How kind ``"miso"`` charges a job's restart from a checkpoint:
            ``"drawn"`` (default, its drawn overhead ``o``) or ``"steps"`` (``ceil(o) -
            1``, what the artifact's 1 s step makes of it; ``miso_job_specs``).
    """

    kind: str = "thesis"
    num_jobs: int | None = None
    arrival: str | None = None
    interval_s: float = 1.0  # [s]
    mean_gap_s: float | None = None  # [s]
    load: float = 0.8
    num_cluster_gpus: int | None = None
    duration_model: str = "empirical"
    duration_scale: float | None = None
    max_duration_quantile: float | None = None
    models: tuple[str, ...] = DEFAULT_MODELS
    max_gpus: int | None = None
    path: str | None = None
    window_start: str | None = None
    window_end: str | None = None
    cut: str = "first"
    repeat: int = 1
    restart: str = "drawn"

    def __post_init__(self) -> None:
        for name in self.fields():  # numpy scalars as Python values (plain JSON when recorded)
            object.__setattr__(self, name, plain(getattr(self, name)))
        if isinstance(self.models, (list, tuple)):
            object.__setattr__(self, "models", tuple(self.models))
        if isinstance(self.path, os.PathLike):
            object.__setattr__(self, "path", os.fspath(self.path))
        problems = []

        def bad(name: str, allowed: str) -> None:
            problems.append(f"workload.{name} must be {allowed}, got {getattr(self, name)!r}")

        if self.kind not in _KINDS:
            bad("kind", f"one of {list(_KINDS)}")
        if self.num_jobs is not None and not (
            is_int(self.num_jobs) and 1 <= self.num_jobs <= MAX_JOBS
        ):
            bad("num_jobs", f"None or an int {range_text(1, MAX_JOBS)}")
        arrivals = _ARRIVALS.get(self.kind, ())
        if self.arrival is not None and arrivals and self.arrival not in arrivals:
            bad("arrival", f"None or one of {list(arrivals)} for kind {self.kind!r}")
        if not (is_real(self.load) and MIN_LOAD <= self.load <= MAX_LOAD):
            bad("load", f"a finite number {range_text(MIN_LOAD, MAX_LOAD)}")
        # a gap or a scale beyond the limits would put every job past them
        for name, high, optional in (
            ("interval_s", MAX_ARRIVAL_S, False),
            ("mean_gap_s", MAX_ARRIVAL_S, True),
            ("duration_scale", MAX_DURATION_S, True),
        ):
            value = getattr(self, name)
            if (value is not None or not optional) and not (is_finite(value) and 0 < value <= high):
                allowed = f"a number {range_text(0, high, low_open=True)}"
                bad(name, f"None or {allowed}" if optional else allowed)
        if self.max_duration_quantile is not None and not (
            is_real(self.max_duration_quantile) and 0 < self.max_duration_quantile <= 1
        ):
            bad("max_duration_quantile", "None or a number in (0, 1]")
        for name in ("num_cluster_gpus", "max_gpus"):
            value = getattr(self, name)
            if value is not None and not (is_int(value) and value >= 1):
                bad(name, "None or an int >= 1")
        if self.duration_model not in ("empirical", "parametric"):
            bad("duration_model", "'empirical' or 'parametric'")
        if (
            not isinstance(self.models, tuple)
            or not self.models
            or any(m not in MODELS for m in self.models)
        ):
            bad("models", f"a non-empty list of {sorted(MODELS)}")
        if self.kind == "trace":
            if not isinstance(self.path, str) or Path(self.path).suffix.lower() not in (
                _TRACE_SUFFIXES
            ):
                bad("path", f"a file name ending in one of {list(_TRACE_SUFFIXES)}")
        elif self.path is not None:
            bad("path", "None unless kind is 'trace'")
        if not (is_int(self.repeat) and 1 <= self.repeat <= MAX_JOBS):
            bad("repeat", f"an int {range_text(1, MAX_JOBS)}")
        elif self.repeat != 1 and self.kind != "trace":
            bad("repeat", "1 unless kind is 'trace' (an openb pod list)")
        if self.restart not in RESTART_RULES:
            bad("restart", f"one of {list(RESTART_RULES)}")
        elif self.restart != "drawn" and self.kind != "miso":
            bad("restart", "'drawn' unless kind is 'miso'")
        if self.cut not in _CUTS:
            bad("cut", f"one of {list(_CUTS)}")
        elif self.cut != "first" and self.kind != "trace":
            bad("cut", "'first' unless kind is 'trace'")
        for name in ("window_start", "window_end"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                if not isinstance(value, str):
                    raise ValueError
                parse_time(value)
            except ValueError:
                bad(name, "None or a time such as '2017-10-03 04:21:55'")
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The field names, the keys a dict spec may use (besides ``"preset"``)."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_any(
        cls, spec: str | os.PathLike[str] | Mapping[str, Any] | WorkloadConfig
    ) -> WorkloadConfig:
        """Build from a preset name, a trace path, a dict, or return a config unchanged.

        A dict holds field names, and optionally ``"preset"``: the preset to start from,
        whose fields the others override. A string that is not a preset must name a
        ``.csv`` or ``.json`` file.

        Raises:
            ValueError: Unknown preset or key (the allowed ones are listed) or a bad value
                (the field and its allowed range are named).
        """
        if isinstance(spec, WorkloadConfig):
            return spec
        if isinstance(spec, (str, os.PathLike)):
            text = os.fspath(spec)
            if isinstance(spec, str) and text in WORKLOAD_PRESETS:
                return WORKLOAD_PRESETS[text]
            if Path(text).suffix.lower() in _TRACE_SUFFIXES:
                return cls(kind="trace", path=text)
            raise ValueError(
                f"workload: {text!r} is neither a preset ({sorted(WORKLOAD_PRESETS)}) nor a "
                f"trace file ending in one of {list(_TRACE_SUFFIXES)}"
            )
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"workload: expected a preset name, a trace path or a dict, "
                f"got {type(spec).__name__}"
            )
        allowed = ("preset", *cls.fields())
        unknown = sorted(set(spec) - set(allowed))
        if unknown:
            raise unknown_keys_error("workload", unknown, sorted(allowed), suggest=False)
        values = dict(spec)
        base = cls()
        if "preset" in values:
            preset = values.pop("preset")
            if preset not in WORKLOAD_PRESETS:
                raise ValueError(
                    f"workload.preset must be one of {sorted(WORKLOAD_PRESETS)}, got {preset!r}"
                )
            base = WORKLOAD_PRESETS[preset]
        if "path" in values and "kind" not in values:
            values["kind"] = "trace"
        return dataclasses.replace(base, **values)

    def sharing(self) -> str | None:
        """The sharing model (``SimConfig.sharing``) this workload's jobs are written for:
        ``"shares"`` for an openb pod list (its tasks request GPU shares, CPU and host
        memory: the requested-shares model), ``None`` for the others (either model).

        ``EnvConfig`` takes it when no sharing model is chosen, and refuses a chosen one
        that contradicts it.
        """
        return _SHARING_OF.get(self.kind, self._trace_sharing())

    def _trace_sharing(self) -> str | None:
        if self.kind == "trace" and self.path is not None and is_openb_pod_list(self.path):
            return "shares"
        return None

    def describe_sharing(self) -> str:
        """Why this workload needs its sharing model, for messages (``""``: it needs
        none)."""
        if self.sharing() is None:
            return ""
        if self.kind in _SHARING_OF:
            return f"workload kind {self.kind!r} runs on MIG instances (sharing='mig')"
        return (
            f"{Path(str(self.path)).name} is an openb pod list: its tasks request GPU "
            "shares (the requested-shares model, sharing='shares')"
        )

    def generate(
        self,
        rng: np.random.Generator | int,
        num_jobs: int | None = None,
        cluster_gpus: int | None = None,
    ) -> list[JobSpec]:
        """Generate or load the jobs; see :func:`make_workload`."""
        if num_jobs is not None and not (is_int(num_jobs) and 1 <= num_jobs <= MAX_JOBS):
            raise ValueError(
                f"num_jobs must be None or an int {range_text(1, MAX_JOBS)}, got {num_jobs!r}"
            )
        if cluster_gpus is not None and not (
            is_int(cluster_gpus) and 1 <= cluster_gpus <= MAX_CLUSTER_GPUS
        ):
            raise ValueError(
                f"cluster_gpus must be None or an int {range_text(1, MAX_CLUSTER_GPUS)}, "
                f"got {cluster_gpus!r}"
            )
        count = num_jobs if num_jobs is not None else self.num_jobs
        max_gpus = self.max_gpus
        if cluster_gpus is not None:
            max_gpus = cluster_gpus if max_gpus is None else min(max_gpus, cluster_gpus)
        arrival = self.arrival or _DEFAULT_ARRIVAL[self.kind]
        num_cluster_gpus = self.num_cluster_gpus or cluster_gpus or PHILLY_CLUSTER_GPUS
        if self.kind == "thesis":
            return thesis_workload(
                count or _DEFAULT_NUM_JOBS,
                rng=rng,
                arrival=arrival,  # type: ignore[arg-type]
                interval_s=self.interval_s,
                mean_gap_s=self.mean_gap_s or THESIS_MEAN_GAP_S,
                duration_model=self.duration_model,  # type: ignore[arg-type]
                duration_scale=(
                    THESIS_DURATION_SCALE if self.duration_scale is None else self.duration_scale
                ),
                max_duration_quantile=(
                    THESIS_MAX_DURATION_QUANTILE
                    if self.max_duration_quantile is None
                    else self.max_duration_quantile
                ),
                models=self.models,
                max_gpus=max_gpus,
            )
        if self.kind == "philly":
            return philly_workload(
                count or _DEFAULT_NUM_JOBS,
                rng,
                duration_model=self.duration_model,  # type: ignore[arg-type]
                arrival=arrival,  # type: ignore[arg-type]
                load=self.load,
                num_cluster_gpus=num_cluster_gpus,
                mean_gap_s=self.mean_gap_s,
                duration_scale=1.0 if self.duration_scale is None else self.duration_scale,
                max_duration_quantile=(
                    1.0 if self.max_duration_quantile is None else self.max_duration_quantile
                ),
                models=self.models,
                max_gpus=max_gpus,
            )
        if self.kind == "miso":  # the artifact's scenario: its own seed, not the episode's
            from gpushare_env.workloads.miso import MISO_SEED, miso_job_specs

            jobs = miso_job_specs(MISO_SEED, restart=self.restart)
            return jobs if count is None else jobs[:count]
        # an openb pod list's arrivals offer ``load`` to a known cluster, else keep their times
        known = self.num_cluster_gpus or cluster_gpus
        if self.cut == "random":
            generator = as_generator(rng)
            whole = self._load_trace(generator, None, num_cluster_gpus, known)
            return random_run(whole, count, generator)
        return self._load_trace(rng, count, num_cluster_gpus, known)

    def _load_trace(
        self,
        rng: np.random.Generator | int,
        count: int | None,
        num_cluster_gpus: int,
        known_cluster_gpus: int | None,
    ) -> list[JobSpec]:
        assert self.path is not None  # checked in __post_init__
        scale = 1.0 if self.duration_scale is None else self.duration_scale
        if is_openb_pod_list(self.path):
            read = openb_jobs(
                self.path,
                load=self.load if known_cluster_gpus else None,
                num_cluster_gpus=known_cluster_gpus,
                max_jobs=count,
                max_gpus=self.max_gpus,
                max_duration_quantile=self.max_duration_quantile,
                repeat=self.repeat,
            )
            _log.info("%s: %s", self.path, read.describe())
            return read.jobs
        if self.repeat != 1:
            raise ValueError(
                f"workload.repeat applies to openb pod lists only, got {self.repeat!r} for "
                f"{self.path!r}"
            )
        if Path(self.path).suffix.lower() == ".json":
            load = read_philly_job_log(
                self.path,
                rng,
                window=(self.window_start, self.window_end),
                max_jobs=count,
                models=self.models,
                duration_scale=scale,
            )
            if load.skipped or load.not_selected:
                _log.info(
                    "%s: kept %d jobs; skipped %s; not selected %s",
                    self.path,
                    len(load.jobs),
                    load.skipped,
                    load.not_selected,
                )
            return load.jobs
        if set(read_csv_header(self.path)) <= {"duration_s", "num_gpus", "model"}:
            return read_duration_gpus_csv(
                self.path,
                rng,
                load=self.load,
                num_cluster_gpus=num_cluster_gpus,
                mean_gap_s=self.mean_gap_s,
                duration_scale=scale,
                models=self.models,
                max_jobs=count,
            )
        jobs = read_csv_trace(self.path, rng, models=self.models, duration_scale=scale)
        return jobs if count is None else jobs[:count]


#: The named workloads (names are part of the API).
WORKLOAD_PRESETS: dict[str, WorkloadConfig] = {
    "thesis": WorkloadConfig(kind="thesis", arrival="interval"),
    "thesis_poisson": WorkloadConfig(kind="thesis", arrival="poisson"),
    "philly": WorkloadConfig(kind="philly", arrival="poisson"),
    "philly_parametric": WorkloadConfig(
        kind="philly", arrival="poisson", duration_model="parametric"
    ),
    "philly_bursty": WorkloadConfig(kind="philly", arrival="bursty"),
    # heavy load (2.5x the default 0.8): queues build up, so scheduling has headroom
    "philly_heavy": WorkloadConfig(kind="philly", arrival="poisson", load=2.0),
    # MISO's scenario (SoCC'22): its 100 jobs, arrivals and overheads as its artifact draws
    # them (seed 9), for the mig sharing model on A100s (the cluster preset miso)
    "miso": WorkloadConfig(kind="miso"),
    # the same, each restart charged as the artifact's 1 s step charges it
    "miso_steps": WorkloadConfig(kind="miso", restart="steps"),
}


def make_workload(
    spec: str | os.PathLike[str] | Mapping[str, Any] | WorkloadConfig,
    rng: np.random.Generator | int,
    num_jobs: int | None = None,
    cluster_gpus: int | None = None,
) -> list[JobSpec]:
    """Generate or load a workload.

    Args:
        spec: A preset name, a trace path (``.csv``/``.json``), a dict of
            :class:`WorkloadConfig` fields (optionally with ``"preset"``), or a config.
        rng: Parent generator or seed; per-purpose streams are spawned from it.
        num_jobs: Overrides the config's ``num_jobs``.
        cluster_gpus: GPUs of the cluster the jobs will run on: generated GPU counts are
            drawn conditioned on fitting it, and it is the default ``num_cluster_gpus`` for
            load targets. Trace jobs are not filtered here; pass them through
            :func:`~gpushare_env.workloads.jobs.fit_to_cluster` to reject (and count) the
            ones that cannot fit.

    Returns:
        Jobs sorted by ``(arrival_s, job_id)``.

    Raises:
        ValueError: A bad spec (unknown preset or key, a value out of range).
        TraceError: A bad trace file, naming file, line or job, and field.
    """
    return WorkloadConfig.from_any(spec).generate(rng, num_jobs=num_jobs, cluster_gpus=cluster_gpus)
