"""Co-location interference: how fast each worker runs on a shared GPU.

The model is a pluggable strategy: the engine asks it for the speed factor of the workers
on one GPU whenever the set of computing workers there changes. Two implementations:

* ``LinearContention`` (default; docs/model.md, *What is modelled*): with ``U`` the sum
  of the workers' intensities and ``k`` their number, each runs at
  ``min(1, 1/U) * (1 - alpha)**(k - 1)`` of solo speed. Calibration: two ResNet-50
  workers (u = 1) get 0.5 * 0.95 = 0.475 each (Gavel's V100 co-location measurements:
  0.37-0.5 each, median pair throughput 1.37x); two light workers (u = 0.5) get 0.95
  each, combined 1.9x (Lucid's light pairs, ~1.87x).
* ``MeasuredContention``: Gavel's measured pair throughputs (``gpushare_env.sim.gavel``),
  asymmetric, so each worker on a GPU has its own factor: a job sharing a GPU with others
  runs at ``1 / (1 + sum of e_ij)`` of its solo speed, where ``e_ij = 1 / f_ij - 1`` is the
  extra time partner ``j`` costs it and ``f_ij`` is the measured fraction of solo throughput
  it keeps beside ``j``. Two workers: exactly the measured pair; k > 2: the extra times
  add up. A pair without a measurement takes the analytic pair's ``e``; a GPU where no
  pair is measured takes ``LinearContention``'s factor. Models run at their measured
  speed on each measured GPU type (K80, P100, V100) instead of one speed per type.
  Runs in C; chosen by ``SimConfig.interference`` (``"measured"``, ``"measured_exact"``).
* ``NoInterference``: a toy whose answer is known by hand (always 1.0), for tests.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpushare_env.sim.catalog import GPU_TYPES, MODELS
from gpushare_env.sim.core_inputs import MeasuredTables

__all__ = [
    "GAVEL_GPU",
    "INTERFERENCE_MODELS",
    "InterferenceModel",
    "LinearContention",
    "MeasuredContention",
    "NoInterference",
    "measured_contention",
]

#: The values of ``SimConfig.interference``: the analytic model, Gavel's measurements with
#: a proxy job type for every catalog model, or with same-architecture matches only.
INTERFERENCE_MODELS: tuple[str, ...] = ("analytic", "measured", "measured_exact")
#: The Gavel GPU type whose pair measurements each catalog GPU type uses: itself where
#: measured, else the measured type nearest in catalog speed (p40 0.5, 1080ti 0.52 and
#: 2080ti 0.73 -> P100 0.57; v100_32g and a100 -> V100). Solo speeds per model are taken
#: from the table only on the measured types themselves (k80, p100, v100).
GAVEL_GPU: dict[str, str] = {
    "v100": "v100",
    "v100_32g": "v100",
    "a100": "v100",
    "p100": "p100",
    "p40": "p100",
    "1080ti": "p100",
    "2080ti": "p100",
    "k80": "k80",
}


class InterferenceModel(Protocol):
    """Speed factor of each worker on one GPU, given the workers computing there.

    An implementation whose factor ignores the models may set ``uses_models = False``;
    the engine then skips collecting the co-located model names.
    """

    def factor(self, load: float, count: int, models: Sequence[str]) -> float:
        """Return the fraction of solo speed each worker on the GPU gets.

        Args:
            load: Sum of the workers' intensities ``U_g``.
            count: Number of computing workers ``k_g`` (>= 1).
            models: Model names of those workers (for table-based models).
        """
        ...


@dataclass(frozen=True, slots=True)
class LinearContention:
    """``min(1, 1/U) * (1 - alpha) ** (k - 1)``: the analytic sharing model.

    Attributes:
        alpha: Per-extra-worker context-switch / cache penalty, in [0, 1).
        uses_models: False: the factor depends on load and count only.
    """

    alpha: float = 0.05
    uses_models: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.alpha < 1:
            raise ValueError(f"interference: alpha must be in [0, 1), got {self.alpha}")

    def factor(self, load: float, count: int, models: Sequence[str] = ()) -> float:
        """Fraction of solo speed of each worker on a GPU with ``load`` and ``count``
        (the engine's own rule, ``contention_factor`` in the compiled core)."""
        from gpushare_env.compiled._core import linear_contention

        return float(linear_contention(load, count, self.alpha))


@dataclass(frozen=True, slots=True)
class NoInterference:
    """Sharing is free: every worker runs at solo speed (a toy for tests)."""

    uses_models: bool = False

    def factor(self, load: float, count: int, models: Sequence[str] = ()) -> float:
        """Always 1.0."""
        return 1.0


@dataclass(frozen=True, slots=True)
class MeasuredContention:
    """Gavel's measured co-location pairs, per worker (the module docstring's rule).

    Build it with :func:`measured_contention`. The engine runs the rule in C from the
    tables :meth:`core_tables` lays out.

    Attributes:
        mapping: Catalog model -> Gavel job type; models not in it have no measurement.
        extra: Gavel GPU type -> ``(model, partner) -> e``, the extra time per unit of
            solo time ``partner`` costs ``model`` sharing that GPU type, for every pair
            of mapped models measured as sharing (pairs that could not are absent).
        solo_speed: Measured GPU type -> model -> its solo speed there relative to a V100.
        alpha: ``LinearContention``'s penalty, for unmeasured pairs and GPUs.
        name: The ``SimConfig.interference`` value it stands for.
    """

    mapping: Mapping[str, str]
    extra: Mapping[str, Mapping[tuple[str, str], float]]
    solo_speed: Mapping[str, Mapping[str, float]]
    alpha: float = 0.05
    name: str = "measured"
    uses_models: bool = field(default=True, repr=False)

    def core_tables(
        self, model_names: Sequence[str], gpu_types: Sequence[str], gpu_speed: Sequence[float]
    ) -> MeasuredTables:
        """The core's flat tables for models indexed as ``model_names`` on a cluster whose
        GPUs have types ``gpu_types`` and catalog speeds ``gpu_speed``: ``pair_extra``
        (tables x models x models, -1 where unmeasured), ``gpu_table`` (per GPU, its
        table's index) and ``gpu_model_speed`` (GPU x model: the model's speed there)."""
        tables = sorted(self.extra)
        m = len(model_names)
        pair_extra = [-1.0] * (len(tables) * m * m)
        for t, gavel_gpu in enumerate(tables):
            measured = self.extra[gavel_gpu]
            for i, model in enumerate(model_names):
                for j, partner in enumerate(model_names):
                    value = measured.get((model, partner))
                    if value is not None:
                        pair_extra[(t * m + i) * m + j] = value
        gpu_table = [tables.index(GAVEL_GPU[gpu]) for gpu in gpu_types]
        gpu_model_speed: list[float] = []
        for gpu, speed in zip(gpu_types, gpu_speed, strict=True):
            measured_speed = self.solo_speed.get(gpu, {})
            gpu_model_speed.extend(float(measured_speed.get(mo, speed)) for mo in model_names)
        return MeasuredTables(
            num_models=m,
            pair_extra=tuple(pair_extra),
            gpu_table=tuple(gpu_table),
            gpu_model_speed=tuple(gpu_model_speed),
        )

    def factor(self, load: float, count: int, models: Sequence[str] = ()) -> float:
        """Refused: under measured pairs each worker has its own factor (the engine
        applies it; ``SimView.speed_if_placed`` predicts it)."""
        raise TypeError(
            "MeasuredContention has no per-GPU factor: each worker has its own "
            "(use SimView.speed_if_placed)"
        )


@functools.cache
def measured_contention(proxies: bool = True, alpha: float = 0.05) -> MeasuredContention:
    """The measured model from the shipped Gavel table (read once per process).

    Args:
        proxies: Map every catalog model to a Gavel job type
            (``gavel.CATALOG_PROXIES``, ``"measured"``); False: same-architecture
            matches only (``gavel.CATALOG_TO_GAVEL``, ``"measured_exact"``), the other
            models' pairs stay analytic.
        alpha: ``LinearContention``'s penalty for what is not measured.
    """
    from gpushare_env.sim import gavel

    table = gavel.load_colocation()
    mapping = dict(gavel.CATALOG_PROXIES if proxies else gavel.CATALOG_TO_GAVEL)
    extra: dict[str, dict[tuple[str, str], float]] = {}
    solo_speed: dict[str, dict[str, float]] = {}
    v100 = table.gpu_types["v100"].solo
    for gpu in sorted(table.gpu_types):
        pairs: dict[tuple[str, str], float] = {}
        for model, job in mapping.items():
            for partner, partner_job in mapping.items():
                pair = table.normalised(gpu, job, partner_job)
                if pair is not None and pair.own > 0:
                    pairs[(model, partner)] = 1.0 / min(1.0, pair.own) - 1.0
        extra[gpu] = pairs
        solo = table.gpu_types[gpu].solo
        solo_speed[gpu] = {model: solo[job] / v100[job] for model, job in mapping.items()}
    for model in mapping:
        if model not in MODELS:
            raise ValueError(f"measured interference: {model!r} is not a catalog model")
    for gpu in GPU_TYPES:
        if GAVEL_GPU.get(gpu) not in table.gpu_types:
            raise ValueError(f"measured interference: GPU type {gpu!r} has no measured table")
    return MeasuredContention(
        mapping=mapping,
        extra=extra,
        solo_speed=solo_speed,
        alpha=alpha,
        name="measured" if proxies else "measured_exact",
    )
