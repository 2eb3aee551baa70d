"""Decisions a policy hands to the simulator, and the one function that applies them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpushare_env.sim.engine import Event, Simulator

__all__ = [
    "ADVANCE",
    "Advance",
    "Decision",
    "Repartition",
    "Schedule",
    "Suspend",
    "apply_decision",
]


@dataclass(frozen=True, slots=True)
class Schedule:
    """Place a waiting job (pending, or suspended = resume) with a named strategy."""

    job_id: int
    strategy: str


@dataclass(frozen=True, slots=True)
class Suspend:
    """Checkpoint a running job; it waits again afterwards."""

    job_id: int


@dataclass(frozen=True, slots=True)
class Repartition:
    """Re-partition a MIG GPU (``sharing = "mig"``) into ``instances``, each ``(profile,
    start memory slice[, reserved job ids[, MPS-shared]])``; the instances jobs hold stay
    (``Simulator.repartition``)."""

    gpu: int
    instances: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True, slots=True)
class Advance:
    """Let time run to the next event."""


ADVANCE = Advance()

Decision = Schedule | Suspend | Repartition | Advance


def apply_decision(sim: Simulator, decision: Decision) -> list[Event]:
    """Carry out one decision; returns the events an ``Advance`` processed (else ``[]``).

    Raises:
        InvalidDecision: the decision is not valid now.
    """
    if isinstance(decision, Schedule):
        sim.schedule(decision.job_id, decision.strategy)
        return []
    if isinstance(decision, Suspend):
        sim.suspend(decision.job_id)
        return []
    if isinstance(decision, Repartition):
        sim.repartition(decision.gpu, decision.instances)
        return []
    if isinstance(decision, Advance):
        return sim.advance()
    raise TypeError(f"not a decision: {decision!r}")
