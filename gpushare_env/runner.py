"""Run a workload to completion headless (no gymnasium) with a scheduling policy."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import numpy as np

from gpushare_env.sim import (
    Cluster,
    Decision,
    InterferenceModel,
    JobRecord,
    JobSpec,
    SimConfig,
    Simulator,
    SimView,
    Timeline,
    Windows,
    apply_decision,
)
from gpushare_env.sim.engine import EpisodeOptions, truncation_reason

__all__ = ["RunResult", "SchedulingPolicy", "TruncatedBy", "run_headless"]

#: Why a run stopped with jobs left: its decision cap (``"decisions"``), its simulated-time
#: cap (``"time"``, the env's ``limits.max_time_s``), or no valid action left
#: (``"deadlock"``, the env only: a headless run raises instead). ``GPUShare-v0`` says it
#: in ``info["truncated_by"]`` on the step that truncates, a headless run in
#: ``RunResult.truncated_by``.
TruncatedBy = Literal["decisions", "time", "deadlock"]


class SchedulingPolicy(Protocol):
    """What the headless runner needs of a policy (every baseline provides it)."""

    name: str

    def reset(self, view: SimView) -> None:
        """Start a new episode on ``view`` (whose windows bound what it may address)."""
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
        steps: Decisions the policy made, ``ADVANCE`` included (what ``max_decisions``
            counts).
        truncated: The run stopped at ``max_decisions`` or ``max_time_s`` with jobs
            unfinished (``records`` and ``metrics`` then cover the jobs finished so far).
        truncated_by: Which cap stopped it (``"decisions"`` or ``"time"``), ``None`` if
            every job finished.
    """

    records: list[JobRecord]
    timeline: Timeline
    metrics: dict[str, Any]
    events: int
    decisions: int
    wall_s: float  # [s]
    steps: int = 0
    truncated: bool = False
    truncated_by: TruncatedBy | None = None


def run_headless(
    jobs: Sequence[JobSpec],
    cluster: Cluster,
    policy: SchedulingPolicy,
    config: SimConfig | None = None,
    interference: InterferenceModel | None = None,
    rng: np.random.Generator | None = None,
    max_events: int | None = None,
    *,
    windows: Windows | None = None,
    auto_advance: bool = True,
    max_decisions: int | None = None,
    max_time_s: float | None = None,
    max_decisions_per_instant: int | None = None,
    on_decision: Callable[[Simulator], None] | None = None,
) -> RunResult:
    """Simulate ``jobs`` on ``cluster`` until all finish, asking ``policy`` at every instant.

    Within one instant a policy can make only finitely many decisions (a placement uses up
    a waiting job, a suspension a running one, until time runs), so the loop always
    reaches the next event; ``max_events`` guards against a policy that never lets jobs
    finish (for example a suspend / resume ping-pong).

    Args:
        windows: The jobs the policy may address (``Windows``: sizes and priority share),
            the env's rule; default: every job (``EnvConfig.windows.windows()`` gives the
            env's).
        auto_advance: Ask the policy only at instants with a choice, letting time run
            through the others, as the env's ``auto_advance`` does (the same decisions are
            then asked and counted both ways). ``False``: ask at every instant.
        max_decisions: Stop after this many decisions (``ADVANCE`` included) even if jobs
            are left; the result is then ``truncated`` by ``"decisions"``. ``None``
            (default): no cap.
        max_time_s: Stop once simulated time reaches this, as the env's
            ``limits.max_time_s`` does (checked after every decision); the result is then
            ``truncated`` by ``"time"``. ``None`` (default): no cap.  # [s]
        max_decisions_per_instant: Raise after more than this many decisions in a row
            without letting time run. ``None`` (default): no check.
        on_decision: Called with the simulator after every decision (``ADVANCE``
            included), once the decision is carried out.

    Raises:
        RuntimeError: more than ``max_events`` events or ``max_decisions_per_instant``
            decisions at one instant (livelock), or the policy lets time run while
            nothing is left to happen and jobs wait (deadlock).
    """
    from gpushare_env.metrics import summarize_run

    start = time.perf_counter()
    episode = EpisodeOptions(auto_advance=auto_advance, max_time_s=max_time_s)
    sim = Simulator(jobs, cluster, config, interference, rng, windows=windows, episode=episode)
    view: SimView = sim  # what the policy may read of it
    policy.reset(view)
    if auto_advance:
        sim.settle()
    steps = in_a_row = 0
    truncated_by: TruncatedBy | None = None
    while not sim.done:
        # the core's rule (the env's too): the decision cap first, then the time cap
        truncated_by = cast(
            "TruncatedBy | None", truncation_reason(steps, max_decisions, sim.now_s, max_time_s)
        )
        if truncated_by is not None:
            break
        decision = policy.decide(view)
        events_before = sim.events_processed
        apply_decision(sim, decision)
        if auto_advance:
            sim.settle()
        steps += 1
        if sim.events_processed > events_before:  # time ran
            in_a_row = 0
            if max_events is not None and sim.events_processed > max_events:
                raise RuntimeError(
                    f"policy {policy.name!r}: {sim.events_processed} events and "
                    f"{sim.num_finished}/{len(sim.jobs)} jobs finished at t={sim.now_s:.1f}s "
                    f"(max_events={max_events}): livelock?"
                )
        else:
            in_a_row += 1
            if max_decisions_per_instant is not None and in_a_row > max_decisions_per_instant:
                raise RuntimeError(
                    f"policy {policy.name!r} made {in_a_row} decisions at "
                    f"t={sim.now_s:.3f}s without letting time run (livelock)"
                )
        if on_decision is not None:
            on_decision(sim)
    records = sim.records()
    timeline = sim.timeline()
    return RunResult(
        records=records,
        timeline=timeline,
        metrics=summarize_run(records, timeline),
        events=sim.events_processed,
        decisions=sim.decisions,
        wall_s=time.perf_counter() - start,
        steps=steps,
        truncated=truncated_by is not None,
        truncated_by=truncated_by,
    )
