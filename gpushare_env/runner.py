"""Run a workload to completion headless (no gymnasium) with a scheduling policy."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from gpushare_env.sim import (
    Advance,
    Cluster,
    Decision,
    InterferenceModel,
    JobRecord,
    JobSpec,
    SimConfig,
    Simulator,
    SimView,
    Timeline,
    apply_decision,
)

__all__ = ["RunResult", "SchedulingPolicy", "run_headless"]


class SchedulingPolicy(Protocol):
    """What the headless runner needs of a policy (every baseline provides it)."""

    name: str

    def reset(
        self, view: SimView, pending_window: int | None = None, running_window: int | None = None
    ) -> None:
        """Start a new episode on ``view``; windows are ``None`` when headless (unbounded)."""
        ...

    def decide(self, view: SimView) -> Decision:
        """The next decision at the current instant (``ADVANCE`` to let time run)."""
        ...


@dataclass(frozen=True, slots=True)
class RunResult:
    """Everything a headless run produced.

    Attributes:
        records: One record per finished job.
        timeline: The cluster timeline.
        metrics: ``gpushare_env.metrics.summarize`` of the run.
        events: Events processed.
        decisions: Place / suspend decisions carried out.
        wall_s: Wall-clock time of the run.  # [s]
    """

    records: list[JobRecord]
    timeline: Timeline
    metrics: dict[str, Any]
    events: int
    decisions: int
    wall_s: float  # [s]


def run_headless(
    jobs: Sequence[JobSpec],
    cluster: Cluster,
    policy: SchedulingPolicy,
    config: SimConfig | None = None,
    interference: InterferenceModel | None = None,
    rng: np.random.Generator | None = None,
    max_events: int | None = None,
) -> RunResult:
    """Simulate ``jobs`` on ``cluster`` until all finish, asking ``policy`` at every instant.

    Within one instant a policy can make only finitely many decisions (a placement uses up
    a waiting job, a suspension a running one, until time runs), so the loop always
    reaches the next event; ``max_events`` guards against a policy that never lets jobs
    finish (for example a suspend / resume ping-pong).

    Raises:
        RuntimeError: more than ``max_events`` events (livelock), or the policy lets time
            run while nothing is left to happen and jobs wait (deadlock).
    """
    from gpushare_env.metrics import summarize

    start = time.perf_counter()
    sim = Simulator(jobs, cluster, config, interference, rng)
    view = SimView(sim)
    policy.reset(view)
    while not sim.done:
        decision = policy.decide(view)
        if not isinstance(decision, Advance):
            apply_decision(sim, decision)
            continue
        sim.advance()
        if max_events is not None and sim.events_processed > max_events:
            raise RuntimeError(
                f"policy {policy.name!r}: {sim.events_processed} events and "
                f"{sim.num_finished}/{len(sim.jobs)} jobs finished at t={sim.now_s:.1f}s "
                f"(max_events={max_events}): livelock?"
            )
    records = sim.records()
    timeline = sim.timeline()
    return RunResult(
        records=records,
        timeline=timeline,
        metrics=summarize(records, timeline),
        events=sim.events_processed,
        decisions=sim.decisions,
        wall_s=time.perf_counter() - start,
    )
