"""Co-location interference: how fast each worker runs on a shared GPU.

The model is a pluggable strategy: the engine asks it for the speed factor of the workers
on one GPU whenever the set of computing workers there changes. Two implementations:

* ``LinearContention`` (default, DESIGN 3.3): with ``U`` the sum of the workers'
  intensities and ``k`` their number, each runs at ``min(1, 1/U) * (1 - alpha)**(k - 1)``
  of solo speed. Calibration: two ResNet-50 workers (u = 1) get 0.5 * 0.95 = 0.475 each
  (Gavel's V100 co-location measurements: 0.37-0.5 each, median pair throughput 1.37x);
  two light workers (u = 0.5) get 0.95 each, combined 1.9x (Lucid's light pairs, ~1.87x).
* ``NoInterference``: a toy whose answer is known by hand (always 1.0), for tests.

A pairwise table as in Gavel is a natural third implementation: ``factor`` receives the
models of the co-located workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["InterferenceModel", "LinearContention", "NoInterference"]


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
    """``min(1, 1/U) * (1 - alpha) ** (k - 1)`` (DESIGN 3.3).

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
