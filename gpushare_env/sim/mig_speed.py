"""How fast a job runs on each MIG profile: memory fit, MISO's measured speeds and a mapping.

A job's *speed* on a MIG profile is its training throughput on one instance of that profile
relative to the whole GPU (the ``7g`` profile, or ``4g.24gb`` on an A30): 1 on the whole GPU,
less on a smaller instance. This module gives, for a job and a MIG GPU model, the speed on
every profile, or ``None`` where the job does not fit (:func:`job_speed_table`).

Fit (:func:`profile_fits`)
    A job fits a profile when one worker's memory is at most the profile's *usable* memory,
    :data:`USABLE_MEMORY_FRACTION` (0.95) of its nominal memory (the number in its name).
    The driver keeps part of an instance's memory: on an H100-80GB ``nvidia-smi mig -lgip``
    lists 9.75 GiB for ``1g.10gb`` (97.5%), 19.62 for ``1g.20gb`` and ``2g.20gb``, 39.50
    for ``3g.40gb`` and ``4g.40gb`` and 79.25 for ``7g.80gb`` (99%; the listing in J.
    Barrow's field notes, https://jbarrow.ai/field_notes/nvidia-mig/). No such listing for
    the A100 or the A30 was checked here: 0.95 is an assumption set below every listed
    share, so a job never fits where it would exceed the listed memory, and on the larger
    profiles the rest is headroom for the CUDA context.

Measured speeds (MISO's jobs)
    B. Li et al., "MISO: Exploiting Multi-Instance GPU Capability on Multi-Tenant GPU
    Clusters" (ACM SoCC 2022) measured 32 training jobs (8 models x 4 batch sizes, e.g.
    ``resnet_train64``) on every profile of an A100-40GB they fit in
    (``gpushare_env/workloads/data/miso``, read by :mod:`gpushare_env.workloads.miso`). A
    job is one of them when ``f"{model}_train{batch_size}"`` (or its ``model`` alone) names
    one. Its speed on a profile is its 7g.40gb batch latency over its batch latency there;
    the median over the 32 jobs is 0.320 on 1g.5gb (21 jobs fit), 0.474 on 2g.10gb (28),
    0.660 on 3g.20gb and 0.745 on 4g.20gb (the paper's 0.32 / 0.47 / 0.66 / 0.75). Two
    measurements are not monotone in the profile (``resnet_train64``: 1.004 on 3g.20gb,
    0.956 on 4g.20gb); the table uses for each profile the largest speed measured on it or
    on a profile it contains, at most 1 (the rule changes those two values to 1.0 and no
    other). The jobs that do not fit 1g.5gb or 2g.10gb are the ones MISO found out of
    memory there.

    On an A100-40GB a MISO job's speeds are the measured ones; ``1g.10gb`` (1 compute slice,
    10 GB, not measured) fits when 2g.10gb does, at the 1g.5gb speed when the job fits
    1g.5gb, else at the job's own curve (below) at 1/7 of the compute. On another MIG model
    the speeds are the job's own curve at each profile's compute fraction and the fit is
    :func:`profile_fits` of the job's ``memory_gib``.

Mapping (jobs that are not MISO's: Philly-style generated and real-trace jobs)
    An Amdahl curve in the profile's compute fraction ``c`` (its compute slices over the
    GPU's, 3/7 for ``3g``)::

        speed(c) = 1 / ((1 - share) + share / c)

    ``share`` is the part of a step's time that scales with the instance's compute; the rest
    (input pipeline, memory-bound and host work) does not. A job's own ``share`` is
    :func:`fit_compute_share` of its measurements; over MISO's 32 jobs it runs from 0.04
    (``mobilenet_train64``) to 0.87 (``cyclegan_train3``), and the curve is within 0.124 of
    every one of the job's own measured speeds (median error 0.031). For other jobs the
    share is :data:`GLOBAL_COMPUTE_SHARE` = 0.40: the median, over MISO's 113 measurements
    below 7g, of the share one measurement implies, ``(1/speed - 1) / (1/c - 1)`` (0.398,
    which is also the share of least total absolute error). Against MISO's measured speeds
    the global curve is off by (:func:`mapping_errors`):

    ========  =====  ========  =============  ============
    profile   curve  measured  median |error|  worst |error|
    ========  =====  ========  =============  ============
    1g.5gb    0.294  0.320     0.103          0.518
    2g.10gb   0.500  0.474     0.160          0.409
    3g.20gb   0.652  0.660     0.118          0.350
    4g.20gb   0.769  0.745     0.152          0.215
    ========  =====  ========  =============  ============

    (curve: the mapping's speed; measured: MISO's median over the jobs that fit). So the
    mapping reproduces the typical job but not a given one: speeds spread widely with the
    model and batch size (``mobilenet_train128`` keeps 0.71 of its speed on 1g.5gb,
    ``deepspeech2_train8`` 0.12), and nothing a generated job carries predicts where it
    lies in that spread. The catalog's compute intensity does not: its only model whose name
    MISO shares is ResNet (``resnet50``, intensity 1.0: it saturates a V100), while MISO's
    ResNet at batch 64 loses no speed on 3g.20gb of an A100 (share 0.08); the intensities
    are V100 figures, and one model cannot fit a relation. The mapping therefore does not
    use the intensity. It was fitted on an A100-40GB; on an A100-80GB, H100-80GB or A30 it
    assumes the same speed at the same compute fraction (not measured).

Multi-GPU jobs
    Each of a job's ``num_gpus`` workers runs on its own instance of the same profile; every
    worker has the same speed there, so the job's (its slowest worker's) is the table's.
    Communication between instances is not part of these speeds.

Unknown GPU models or profiles raise :class:`~gpushare_env.sim.mig.MigError`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import numpy as np

from gpushare_env.sim.mig import MigGpuModel, MigProfile, get_mig_model
from gpushare_env.sim.types import JobSpec

__all__ = [
    "GLOBAL_COMPUTE_SHARE",
    "MISO_GPU_MODEL",
    "USABLE_MEMORY_FRACTION",
    "ProfileFit",
    "amdahl_speed",
    "fit_compute_share",
    "job_speed_table",
    "mapping_errors",
    "miso_job_key",
    "miso_measured_speeds",
    "miso_speed_tables",
    "profile_fits",
    "usable_memory_gib",
    "why_unfit",
]

#: Share of a job's usable memory of a profile's nominal memory (5% headroom, see above).
USABLE_MEMORY_FRACTION: float = 0.95

#: The compute share of the mapping's curve: the median share of MISO's 113 measurements
#: below 7g.40gb (0.398), rounded.
GLOBAL_COMPUTE_SHARE: float = 0.40

#: The GPU model MISO measured on.
MISO_GPU_MODEL: str = "A100-40GB"


@dataclass(frozen=True)
class ProfileFit:
    """Whether a job fits a profile; ``reason`` says why not (empty when it fits).

    Truthy when the job fits.
    """

    fits: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.fits


def usable_memory_gib(profile: MigProfile) -> float:
    """The memory a job may use on ``profile``: :data:`USABLE_MEMORY_FRACTION` of its
    nominal memory.  [GiB]"""
    return profile.memory_gib * USABLE_MEMORY_FRACTION


def profile_fits(job_memory_gib: float, profile: MigProfile) -> ProfileFit:
    """Whether a worker needing ``job_memory_gib`` fits an instance of ``profile``.

    It fits when its memory is at most :func:`usable_memory_gib` of the profile; otherwise
    the reason names both.

    Raises:
        ValueError: ``job_memory_gib`` not a finite number > 0.
    """
    if (
        isinstance(job_memory_gib, bool)
        or not isinstance(job_memory_gib, (int, float))
        or not math.isfinite(job_memory_gib)
        or job_memory_gib <= 0
    ):
        raise ValueError(f"job memory must be a finite number > 0 GiB, got {job_memory_gib!r}")
    usable = usable_memory_gib(profile)
    if job_memory_gib <= usable:
        return ProfileFit(True)
    return ProfileFit(
        False,
        f"the job needs {job_memory_gib:g} GiB per worker; {profile.name} has "
        f"{profile.memory_gib:g} GiB, of which {usable:g} GiB usable "
        f"({USABLE_MEMORY_FRACTION:.0%})",
    )


def amdahl_speed(compute_fraction: float, share: float = GLOBAL_COMPUTE_SHARE) -> float:
    """Speed on an instance with ``compute_fraction`` of the GPU's compute:
    ``1 / ((1 - share) + share / compute_fraction)``.

    Raises:
        ValueError: ``compute_fraction`` not in (0, 1] or ``share`` not in [0, 1].
    """
    if not 0.0 < compute_fraction <= 1.0:
        raise ValueError(f"compute_fraction must be in (0, 1], got {compute_fraction!r}")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    return 1.0 / ((1.0 - share) + share / compute_fraction)


def fit_compute_share(points: Iterable[tuple[float, float]]) -> float:
    """The share in [0, 1] of :func:`amdahl_speed` that fits ``(compute fraction, speed)``
    points best: least squares on the speeds, the share to 1e-4 (a grid search).

    Raises:
        ValueError: No point, a compute fraction not in (0, 1] or a speed not > 0.
    """
    pts = list(points)
    if not pts:
        raise ValueError("no point to fit")
    for c, s in pts:
        if not 0.0 < c <= 1.0:
            raise ValueError(f"a compute fraction must be in (0, 1], got {c!r}")
        if not s > 0.0:
            raise ValueError(f"a speed must be > 0, got {s!r}")
    c_arr = np.array([c for c, _ in pts])[None, :]
    s_arr = np.array([s for _, s in pts])[None, :]
    grid = np.linspace(0.0, 1.0, 10_001)[:, None]
    model = 1.0 / ((1.0 - grid) + grid / c_arr)
    loss = ((model - s_arr) ** 2).sum(axis=1)
    return float(grid[int(np.argmin(loss)), 0])


# --------------------------------------------------------------------------- MISO's table


def _contains(big: MigProfile, small: MigProfile) -> bool:
    """Whether ``big`` has at least the compute slices and memory of ``small``."""
    return big.compute_slices >= small.compute_slices and big.memory_gib >= small.memory_gib


@cache
def miso_measured_speeds() -> Mapping[str, Mapping[str, float]]:
    """MISO's measured speeds, unmodified: job key (``"resnet_train64"``) -> profile of an
    A100-40GB it fits in -> its 7g.40gb batch latency / its batch latency there."""
    # Imported here: the simulation core does not otherwise depend on the workload readers.
    from gpushare_env.workloads.miso import MIG_PROFILES, read_miso_latencies, shipped_miso_path

    table = read_miso_latencies(shipped_miso_path("mig_mean_batch_latency.csv"))
    full = MIG_PROFILES[-1]  # 7g.40gb
    return MappingProxyType(
        {
            key: MappingProxyType({p: row[full] / lat for p, lat in row.items()})
            for key, row in table.items()
        }
    )


@cache
def miso_speed_tables() -> Mapping[str, Mapping[str, float]]:
    """MISO's measured speeds made monotone (module docstring): job key (``"resnet_train64"``)
    -> profile of an A100-40GB it fits in -> speed."""
    model = get_mig_model(MISO_GPU_MODEL)
    out: dict[str, Mapping[str, float]] = {}
    for key, row in miso_measured_speeds().items():
        measured = {model.profile(p): s for p, s in row.items()}
        out[key] = MappingProxyType(
            {
                p.name: min(1.0, max(s for q, s in measured.items() if _contains(p, q)))
                for p in measured
            }
        )
    return MappingProxyType(out)


@cache
def _miso_shares() -> Mapping[str, float]:
    model = get_mig_model(MISO_GPU_MODEL)
    return MappingProxyType(
        {
            key: fit_compute_share((model.compute_fraction(p), s) for p, s in row.items())
            for key, row in miso_measured_speeds().items()
        }
    )


def miso_job_key(job: JobSpec) -> str | None:
    """The MISO job ``job`` is (``f"{model}_train{batch_size}"``, or ``model`` when that names
    one), or ``None``."""
    tables = miso_measured_speeds()
    key = f"{job.model}_train{job.batch_size}"
    if key in tables:
        return key
    return job.model if job.model in tables else None


def mapping_errors(share: float = GLOBAL_COMPUTE_SHARE) -> dict[str, tuple[float, float]]:
    """The mapping's absolute error against MISO's measured speeds (unmodified), per
    profile below 7g.40gb: ``(median, worst)`` over the jobs that fit it."""
    model = get_mig_model(MISO_GPU_MODEL)
    errors: dict[str, list[float]] = {}
    for row in miso_measured_speeds().values():
        for p, s in row.items():
            c = model.compute_fraction(p)
            if c < 1.0:
                errors.setdefault(p, []).append(abs(s - amdahl_speed(c, share)))
    ordered = sorted(errors, key=lambda p: model.profile(p).compute_slices)
    return {p: (statistics.median(errors[p]), max(errors[p])) for p in ordered}


# --------------------------------------------------------------------------- per job


def job_speed_table(job: JobSpec, gpu_model: str | MigGpuModel) -> dict[str, float | None]:
    """Profile name -> the job's speed on one instance of it (``None``: it does not fit),
    for every profile of ``gpu_model``, in the model's order.

    MISO's measured speeds when the job is one of MISO's (:func:`miso_job_key`), else the
    mapping (module docstring). A multi-GPU job's workers each take an instance of the
    profile; the speed is the same.

    Raises:
        MigError: An unknown GPU model.
        ValueError: A job without GPUs (``num_gpus = 0``).
    """
    model = get_mig_model(gpu_model)
    if job.num_gpus < 1:
        raise ValueError(f"job {job.job_id} uses no GPU: it has no speed on a MIG instance")
    key = miso_job_key(job)
    if key is None:
        return {
            p.name: amdahl_speed(model.compute_fraction(p))
            if profile_fits(job.memory_gib, p)
            else None
            for p in model.profiles
        }
    share = _miso_shares()[key]
    if model.name != MISO_GPU_MODEL:
        return {
            p.name: amdahl_speed(model.compute_fraction(p), share)
            if profile_fits(job.memory_gib, p)
            else None
            for p in model.profiles
        }
    measured = miso_speed_tables()[key]
    table: dict[str, float | None] = {}
    for p in model.profiles:
        if p.name in measured:
            table[p.name] = measured[p.name]
            continue
        # 1g.10gb: the memory of 2g.10gb, the compute of 1g.5gb.
        same_memory = [q for q in model.profiles if q.memory_gib == p.memory_gib and q != p]
        if not any(q.name in measured for q in same_memory):
            table[p.name] = None
            continue
        same_compute = [
            q.name
            for q in model.profiles
            if q.compute_slices == p.compute_slices and q.name in measured
        ]
        speed = (
            measured[same_compute[0]]
            if same_compute
            else amdahl_speed(model.compute_fraction(p), share)
        )
        # never faster than a profile that contains it
        larger = [s for q, s in measured.items() if _contains(model.profile(q), p)]
        table[p.name] = min([speed, *larger])
    return table


def why_unfit(job: JobSpec, gpu_model: str | MigGpuModel, profile: str | MigProfile) -> str:
    """Why ``job`` does not fit ``profile`` of ``gpu_model`` (empty if it fits)."""
    model = get_mig_model(gpu_model)
    p = model.profile(profile)
    if job_speed_table(job, model)[p.name] is not None:
        return ""
    key = miso_job_key(job)
    if key is not None and model.name == MISO_GPU_MODEL:
        measured = {name for row in miso_speed_tables().values() for name in row}
        if p.name in measured:
            return (
                f"job {job.job_id} ({key}) ran out of memory on {p.name} in MISO's "
                f"measurements on an {MISO_GPU_MODEL}"
            )
        same = [
            q.name for q in model.profiles if q.memory_gib == p.memory_gib and q.name in measured
        ]
        return (
            f"job {job.job_id} ({key}) ran out of memory on {', '.join(same)} (the same "
            f"{p.memory_gib:g} GiB as {p.name}) in MISO's measurements on an {MISO_GPU_MODEL}"
        )
    return f"job {job.job_id}: " + profile_fits(job.memory_gib, p).reason
