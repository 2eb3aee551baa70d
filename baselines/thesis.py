"""``thesis``: the reference heuristic — sampling, shortest predicted remaining time first,
fragment reuse under an interference threshold, and suspend / resume against starvation.

The steps, as implemented here (with a table of the parameters: docs/baselines.md,
``thesis``):

1. **Sampling.** A job without a prediction first runs ``sample_iterations`` (a
   simulator setting) on whatever fits — on a fragment of a shared GPU if need be, since
   the run lasts seconds. Once sampled, its remaining time is predicted from the measured
   step time. What happens next is ``sample_then_suspend``: ``"always"`` suspends it (the
   thesis as written: every job pays a suspend and a resume overhead, 2-5 s + 5-50 s),
   ``"if_better_waits"`` (default) keeps it running unless it sampled on a placement
   below the interference thresholds or a waiting job with a much shorter predicted time
   needs its GPUs (step 4), ``"never"`` keeps it running.
2. **Queue order.** Waiting jobs are served shortest predicted remaining time first
   (SRPT; a suspended job's key includes its restart overhead). Jobs not yet sampled come
   first, in arrival order: their sampling run is short. A job without a prediction
   counts the median predicted length seen so far.
3. **Fragment reuse.** A job goes onto partly used GPUs when memory fits and the
   interference model (``SimView.speed_if_placed``, restarting tenants counted as
   computing) predicts that it runs at ``min_speed`` of solo speed or more and no
   co-located job drops below ``min_cotenant_speed``; otherwise onto idle GPUs
   (``exclusive``); otherwise it waits. The ``pack`` and ``min_frag`` candidates are
   compared and the faster taken. Work conservation: while some GPU is idle, a job that
   fits nowhere under those thresholds may still share down to ``idle_min_speed``, but
   never with a job started as urgent (step 4), whose pace sets the makespan.
4. **Preemption and anti-starvation.** When the first job in order cannot be placed, the
   policy looks for running jobs to suspend so that it gets whole GPUs (one node when
   possible, fewest suspensions, longest remaining first): any running job whose key is
   more than ``preempt_ratio`` times the waiting job's (SRPT with hysteresis), or, for an
   *urgent* job, any running job as wide or narrower. A job is urgent when it is
   *starving* — wide (``num_gpus >= large_gpus``) and waited ``starvation_factor`` times
   its predicted remaining time (and ``min_starvation_s``); it is then never preempted
   once started — or when it is on the critical path: its predicted remaining time is at
   least ``critical_path_factor`` times the time the whole cluster needs to drain all known
   work, so that starting it any later would stretch the makespan (pure SRPT would run it
   last, alone, on an otherwise idle cluster). At most ``max_starving`` jobs are served as
   starving at once (a job started as starving that still holds its GPUs takes a slot),
   the most starved first (``starving_order``: highest response ratio, (wait + remaining)
   / remaining) and ahead of critical jobs; the other starving jobs keep their SRPT place
   until a slot frees. The
   starving job that still cannot start gets a reservation (``reserve``): later jobs start
   only if they leave the GPUs it will get alone, are predicted to finish before those
   free up (EASY backfilling on predicted times) or (``backfill_victims``) are jobs it may
   suspend once its gang can open (backfilling with preemption). While victims
   checkpoint, nothing else is placed, so the gang goes to the job it was opened for.
5. **Resume.** Suspended jobs are ordinary waiting jobs with a prediction; they resume as
   soon as a fragment or idle GPUs can take them (steps 2-3).

Livelock guards: a job is suspended at most ``max_suspends`` times (sampling included),
jobs started as starving are never preempted, and a job about to finish (predicted
remaining time below ``protect_remaining_factor`` times its restart overhead) is never
preempted. SRPT keys only shrink while a job runs and stay fixed while it waits, so with
``preempt_ratio > 1`` two jobs cannot preempt each other in turn.

Suspension rules: every suspension also obeys the simulator's rules
(``SimView.can_suspend``: ``max_suspends_per_job``, ``min_service_s``). A job they forbid
is no victim (step 4 picks its gang among the others, or opens none), a sampled job they
forbid keeps running (step 1), and a victim that became forbidden while a gang opens is
passed over (the gang opens without it, or the opening is given up). Under the default
rules (budget 3 = ``max_suspends``, no quantum) they forbid nothing this policy would do.

Information: under ``duration_info="oracle"`` nothing is sampled (every job has a
prediction); under ``"none"`` nothing is ever predicted, so the order is by arrival and
nothing is preempted (fragment reuse and work conservation remain).

Source: J.-S. Tong, "A Heuristic Approach with Fine-Grained Scheduling Based on GPU
Sharing for Deep Learning Jobs", master's thesis, CYCU 2022 (advisor W.-C. Chung); W.-C.
Chung, J.-S. Tong, Z.-H. Chen, J. Supercomputing 81(2), 2025. Differences: the thesis's
thresholds and tie-breaks are not public; every one here is a named parameter whose
default was chosen by experiment on the thesis workload (``gpushare-evaluate --preset
thesis_headless``), confirmed on seeds 10-19 (both arrival modes) so as not to fit the
three reported seeds 0-2 alone. Additions of this implementation: the conditional
suspension after sampling (pays two overheads only when it helps), the critical-path
rule and the EASY reservation (SRPT alone gives the makespan away), work conservation
below the thresholds while GPUs idle, and the hysteresis and suspension caps against
livelock. What changing each parameter does, measured one at a time against these
defaults: docs/baselines.md, ``thesis``.

Real traces (``starving_order``, ``max_starving``, ``reserve="starving"``,
``backfill_victims``): the thesis says which job starves and what it may suspend, not how
several starving jobs share the cluster. Under sustained overload with wide jobs (replays
of Philly virtual clusters) the queue stays long for weeks, so every wide job passes the
starvation threshold. Served all at once and longest first, each suspending narrower
jobs, never preempted and holding a reservation, they would turn the order into
longest-first. So one starving job is served at a time (as EASY backfilling reserves for
one job), the most starved first (highest response ratio next, which still bounds every
starving job's wait), with a reservation for it alone that jobs it may suspend can use
meanwhile. The measurements per VC, and those of ``critical_preempts_critical``:
docs/baselines.md, ``thesis``, *Real traces: one starving job at a time*. A policy that
orders by predicted time needs to see the queue, so ``gpushare-evaluate`` gives the
baselines windows of 1024 on traces (docs/results.md, *The windows*).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.base import (
    Policy,
    can_advance,
    cheapest_gang,
    placement_speed,
    predicted_idle_at,
)
from gpushare_env.sim import ADVANCE, Decision, JobState, JobStatus, Schedule, SimView, Suspend

__all__ = ["ThesisHeuristic"]

_SAMPLE_MODES = ("always", "if_better_waits", "never")
_ORDERS = ("time", "gpu_time")
_RESERVE = ("all", "urgent", "starving", "none")
_STARVING_ORDERS = ("most_starved", "longest")
#: Statuses in which a job started as starving still holds its GPUs (a starvation slot).
_HOLDING = (JobStatus.RUNNING, JobStatus.SUSPENDING, JobStatus.RESUMING)
_INF = math.inf
_VICTIM_TAU_S = 600.0  # [s] victims with more remaining time are (slightly) preferred
_DRAIN_REFRESH_S = 60.0  # [s] longest reuse of the drain-time estimate


@dataclass(slots=True)
class _Waiting:
    """What one decision needs to know of a waiting job (computed once per call)."""

    job: JobState
    remaining_s: float  # [s] predicted remaining solo time (a prior when unknown)
    key: float  # SRPT key, smaller first
    urgent: bool  # starving wide job or on the critical path
    starving: bool  # wide and waited too long: once started, never preempted
    sampling_run: bool  # never ran and has no prediction yet: its next run samples it
    rank: tuple[float, ...]
    critical: bool = False  # on the critical path (urgent even when not served as starving)


def _response_ratio(job: JobState, remaining_s: float) -> float:
    """``(wait + remaining) / remaining``: how starved a waiting job is (the key of
    highest-response-ratio-next; waiting ``starvation_factor`` x its remaining time is a
    ratio of ``1 + starvation_factor``)."""
    return (job.total_wait_s + remaining_s) / max(remaining_s, 1.0)


class ThesisHeuristic(Policy):
    """The thesis's heuristic (steps 1-5 of the module docstring).

    Every default below was chosen by experiment on the thesis workload and confirmed on
    seeds 10-19 (both arrival modes, headless); what changing each one does:
    docs/baselines.md, ``thesis``.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Unused (deterministic policy).
        sample_then_suspend: ``"always"``, ``"if_better_waits"`` (default: the two
            overheads are paid only when a better job waits or the sampling placement is
            poor) or ``"never"`` (step 1).
        min_speed: Least predicted speed (fraction of solo) a job may get on a shared
            fragment. Default 0.7: admits light pairs (two GoogLeNets run at 0.79 each,
            1.6x the throughput of one) and rejects pairs with a heavy model (0.47-0.6
            each, 0.95-1.2x together), which stretch both jobs' JCT for little or no
            throughput (step 3).
        min_cotenant_speed: Least speed a co-located job may drop to when a job joins its
            GPU. Default 0.7, as ``min_speed`` (step 3).
        prefer_fragments: Try acceptable fragments before idle GPUs (default: keeps idle
            GPUs for wide jobs, the thesis's fragment reuse) (step 3).
        idle_min_speed: Work conservation: while some GPU is idle, a waiting job that
            fits nowhere under the thresholds may still share if it and its co-located
            jobs keep at least this speed. Default 0.5: slower than that, the pair gains
            no throughput over running in turn (``1`` disables) (step 3).
        order_by: SRPT key, ``"time"`` (default: predicted remaining seconds, what mean
            JCT rewards) or ``"gpu_time"`` (times the GPU count) (step 2).
        preempt_ratio: A running job is preempted for a waiting one only if its key is
            this many times larger. Default 2: the waiting job must be clearly shorter
            to be worth two overheads, and no pair can preempt each other in turn;
            ``inf`` disables SRPT preemption (step 4).
        large_gpus: Jobs with at least this many GPUs can starve for a gang. Default 2:
            every multi-GPU job needs a gang (step 4).
        starvation_factor: A wide job is urgent after waiting this many times its
            predicted remaining time. Default 10: a bound on the slowdown of wide jobs
            that SRPT with backfilling could otherwise delay without limit; lower values
            cost mean JCT on the thesis workload; ``inf`` disables (step 4).
        min_starvation_s: ...and at least this long. Default 1800 s: short wide jobs are
            served by SRPT anyway.  [s]
        starving_order: Which starving job is served first: ``"most_starved"``
            (default: highest response ratio, (wait + remaining) / remaining, as
            Brinch Hansen's HRRN; every starving job's ratio grows while it waits, so
            each is served in time) or ``"longest"`` (longest predicted remaining time
            first, as critical jobs; under sustained overload, when every wide job
            starves, the queue then runs longest first: Philly VC 2869ce, seeds 0-2, mean
            JCT 0.87 M s against 0.40 M s) (step 4).
        max_starving: Most jobs served as starving at once; a job started as starving
            that still holds its GPUs takes a slot, and the other starving jobs keep
            their SRPT place until one frees. Default 1: the rule's share of the cluster
            is bounded, as EASY backfilling reserves for one job (Philly VCs 2869ce and
            11cb48, seeds 0-2: mean JCT 0.40 M s and 88 k s against 0.50 M s and 92 k s
            without a cap); ``0`` for no cap (step 4).
        critical_path_factor: A job is urgent when its predicted remaining time is at
            least this times the estimated drain time of all known work. Default 0.9:
            starts the longest jobs a little before their last start time (1.0), to
            leave room for the gang they need; ``inf`` disables (step 4).
        critical_preempts_critical: A critical job may suspend a running job that is
            itself critical. Default ``True``; ``False`` spares it (as
            ``gandiva_critical_path`` never slices a critical job): mean JCT 9% shorter
            on Philly VC ee9e8c but 24% longer on b436b2 (seeds 0-2), and the thesis
            experiment's 1 s interval makespan 1.9% longer (step 4).
        reserve: Which job blocked at the head of the order gets a reservation (EASY
            backfilling on predicted times): ``"starving"`` (default: the job served as
            starving, whose wait the reservation bounds; a critical job may suspend any
            narrower job anyway), ``"urgent"`` (critical jobs too; with
            ``backfill_victims`` the same on the Philly VCs, but the thesis experiment's
            Poisson mean JCT is 1.4% / 4% longer on seeds 0-2 / 10-19),
            ``"all"`` (costs utilisation: every short wide job would hold GPUs idle) or
            ``"none"``.
        backfill_victims: A job may also start on reserved GPUs if the reserved job may
            suspend it once its gang can open: no wider, suspensions left under
            ``max_suspends`` and the simulator's rules (backfilling with preemption).
            Default ``True``: suspending costs seconds, idling the GPUs until the gang
            opens costs hours (Philly VC 2869ce: mean JCT 0.40 M s against 0.46 M s).
        max_suspends: Most suspensions of one job. Default 3 (sampling, one preemption,
            one more): the livelock guard.
        protect_remaining_factor: Never preempt a job whose predicted remaining time is
            below this times its restart overhead. Default 3: finishing is cheaper than
            a suspend-resume cycle.
    """

    name = "thesis"
    needs_strategies = ("exclusive", "pack", "spread", "min_frag")

    def __init__(
        self,
        env: Any = None,
        seed: int | None = 0,
        sample_then_suspend: str = "if_better_waits",
        min_speed: float = 0.7,
        min_cotenant_speed: float = 0.7,
        prefer_fragments: bool = True,
        idle_min_speed: float = 0.5,
        order_by: str = "time",
        preempt_ratio: float = 2.0,
        large_gpus: int = 2,
        starvation_factor: float = 10.0,
        min_starvation_s: float = 1800.0,
        starving_order: str = "most_starved",
        max_starving: int = 1,
        critical_path_factor: float = 0.9,
        critical_preempts_critical: bool = True,
        reserve: str = "starving",
        backfill_victims: bool = True,
        max_suspends: int = 3,
        protect_remaining_factor: float = 3.0,
    ) -> None:
        super().__init__(env, seed)
        if sample_then_suspend not in _SAMPLE_MODES:
            raise ValueError(
                f"thesis: sample_then_suspend must be one of {_SAMPLE_MODES}, "
                f"got {sample_then_suspend!r}"
            )
        if order_by not in _ORDERS:
            raise ValueError(f"thesis: order_by must be one of {_ORDERS}, got {order_by!r}")
        for label, value in (("min_speed", min_speed), ("min_cotenant_speed", min_cotenant_speed)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"thesis: {label} must be in [0, 1], got {value}")
        if preempt_ratio < 1.0:
            raise ValueError(f"thesis: preempt_ratio must be >= 1, got {preempt_ratio}")
        if max_suspends < 0:
            raise ValueError(f"thesis: max_suspends must be >= 0, got {max_suspends}")
        for label, flag in (
            ("critical_preempts_critical", critical_preempts_critical),
            ("backfill_victims", backfill_victims),
        ):
            if not isinstance(flag, bool):
                raise ValueError(f"thesis: {label} must be true or false, got {flag!r}")
        if starving_order not in _STARVING_ORDERS:
            raise ValueError(
                f"thesis: starving_order must be one of {_STARVING_ORDERS}, got {starving_order!r}"
            )
        if isinstance(max_starving, bool) or not isinstance(max_starving, int) or max_starving < 0:
            raise ValueError(f"thesis: max_starving must be an int >= 0, got {max_starving!r}")
        self.sample_then_suspend = sample_then_suspend
        self.min_speed = min_speed
        self.min_cotenant_speed = min_cotenant_speed
        self.prefer_fragments = prefer_fragments
        self.idle_min_speed = idle_min_speed
        self.order_by = order_by
        self.preempt_ratio = preempt_ratio
        self.large_gpus = large_gpus
        self.starvation_factor = starvation_factor
        self.min_starvation_s = min_starvation_s
        self.starving_order = starving_order
        self.max_starving = max_starving
        self.critical_path_factor = critical_path_factor
        if reserve not in _RESERVE:
            raise ValueError(f"thesis: reserve must be one of {_RESERVE}, got {reserve!r}")
        self.reserve = reserve
        self.critical_preempts_critical = critical_preempts_critical
        self.backfill_victims = backfill_victims
        self.max_suspends = max_suspends
        self.protect_remaining_factor = protect_remaining_factor
        self._reset_state()

    def params(self) -> dict[str, Any]:
        """Named parameters."""
        names = (
            "sample_then_suspend",
            "min_speed",
            "min_cotenant_speed",
            "prefer_fragments",
            "idle_min_speed",
            "order_by",
            "preempt_ratio",
            "large_gpus",
            "starvation_factor",
            "min_starvation_s",
            "starving_order",
            "max_starving",
            "critical_path_factor",
            "critical_preempts_critical",
            "reserve",
            "backfill_victims",
            "max_suspends",
            "protect_remaining_factor",
        )
        return {name: getattr(self, name) for name in names}

    def _reset_state(self) -> None:
        self._reviewed: set[int] = set()  # sampled jobs whose post-sampling step is done
        self._sampling_only: set[int] = set()  # placed below the thresholds, to sample
        self._protected: set[int] = set()  # started as starving: never preempted
        self._urgent_started: set[int] = set()  # started as urgent: nobody slows them
        self._opening_for: int | None = None  # waiting job a gang is being opened for
        self._opening_starving = False
        self._opening_urgent = False
        self._victims: list[int] = []  # jobs still to suspend for it
        self._durations: list[float] = []  # predicted solo durations seen (for the prior)
        self._prior_s: float | None = None
        self._drain_cache: tuple[float, float, tuple[int, ...]] = (-math.inf, 0.0, ())
        self._decision_drain: float | None = None  # ``_drain_s`` of the current call
        self._no_victims: tuple[Any, ...] | None = None  # last fruitless victim search
        # most suspensions of a job the simulator's rules let be suspended again, so far
        self._rules_allowed_suspends = -1
        self.urgent_starts = 0
        self.preemptions = 0

    # ================================================================ decide
    def decide(self, view: SimView) -> Decision:
        """One decision: post-sampling suspension, gang opening, placement, or advance."""
        self._decision_drain = None  # the state is fixed during one call
        running = self.visible_running(view)
        allowed = self.suspendable(view)  # the victims the suspension rules allow now
        for job_id in allowed:  # the rules' budget exceeds every count they allowed
            self._rules_allowed_suspends = max(
                self._rules_allowed_suspends, view.job(job_id).suspends
            )
        if view.duration_info == "sampled":
            decision = self._review_sampled(view, running, set(allowed))
            if decision is not None:
                return decision
        decision = self._continue_opening(view, set(allowed))
        if decision is not None:
            return decision
        pending = self.visible_pending(view)
        if not pending:
            return ADVANCE
        waiting = [self._waiting(view, job_id) for job_id in pending]
        if self.max_starving > 0:
            waiting = self._limit_starving(view, waiting)
        waiting.sort(key=lambda w: w.rank)
        memo: dict[tuple[Any, ...], Any] = {}
        head: _Waiting | None = None  # the first job in order that cannot start
        shadow_s, reserved = _INF, frozenset[int]()
        for candidate in waiting:
            placed = self._placement(view, candidate, memo)
            if placed is not None:
                strategy, gpus = placed
                if head is not None and not self._may_backfill(
                    view, head, candidate, gpus, shadow_s, reserved
                ):
                    continue
                if candidate.urgent:
                    self.urgent_starts += 1
                    self._urgent_started.add(candidate.job.job_id)
                if candidate.starving:
                    self._protected.add(candidate.job.job_id)
                return Schedule(candidate.job.job_id, strategy)
            if head is not None:
                continue
            head = candidate
            victims = self._find_victims(view, candidate, running, allowed)
            if victims:
                self._opening_for = candidate.job.job_id
                self._opening_starving = candidate.starving
                self._opening_urgent = candidate.urgent
                self._victims = victims[1:]
                self.preemptions += 1
                return Suspend(victims[0])
            if self._reserves_for(candidate):
                shadow_s, reserved = self._reservation(view, candidate)
        return self._advance_or_force(view, waiting)

    def _reserves_for(self, head: _Waiting) -> bool:
        """Does the blocked head of the order get a reservation (``reserve``)?"""
        if self.reserve == "all":
            return True
        if self.reserve == "urgent":
            return head.urgent
        return self.reserve == "starving" and head.starving

    def _may_backfill(
        self,
        view: SimView,
        head: _Waiting,
        candidate: _Waiting,
        gpus: tuple[int, ...],
        shadow_s: float,
        reserved: frozenset[int],
    ) -> bool:
        """EASY backfilling: a job may start behind a reserved one if it leaves the
        reservation's GPUs alone, is predicted to finish before it begins, or
        (``backfill_victims``) is a job the reserved one may suspend when its gang can
        open (backfilling with preemption)."""
        if not reserved.intersection(gpus) or candidate.sampling_run:
            return True  # sampling runs last seconds
        if self.backfill_victims and self._later_victim(head, candidate):
            return True
        job = candidate.job
        end_s = view.now_s + candidate.remaining_s / self.min_speed
        if job.status == JobStatus.SUSPENDED:
            end_s += job.resume_overhead_s
        return end_s <= shadow_s

    def _later_victim(self, head: _Waiting, candidate: _Waiting) -> bool:
        """Could the urgent ``head`` suspend ``candidate`` once it runs? It must be a
        victim step 4 would take (no wider; not critical if the head is only critical and
        ``critical_preempts_critical`` is off), have suspensions left under
        ``max_suspends``, and the simulator's rules must allow suspending a job with as
        many suspensions: they have let a job with at least as many be suspended this
        episode (their budget is not visible otherwise; it does not change)."""
        job = candidate.job
        if not head.urgent or job.num_gpus > head.job.num_gpus:
            return False
        if job.suspends >= self.max_suspends:
            return False
        if not head.starving and candidate.critical and not self.critical_preempts_critical:
            return False
        return job.suspends <= self._rules_allowed_suspends

    def _reservation(self, view: SimView, head: _Waiting) -> tuple[float, frozenset[int]]:
        """When and where ``head`` gets whole GPUs if running jobs finish as predicted.

        Returns:
            The shadow time and the GPUs reserved for ``head`` (one node if possible).
        """
        idle_at = predicted_idle_at(view, self._remaining)
        chosen = cheapest_gang(idle_at, self.node_gpus(view), head.job.num_gpus, total=False)
        if chosen is None:
            return _INF, frozenset()
        return float(idle_at[chosen].max()), frozenset(chosen)

    # ============================================================ step 1
    def _review_sampled(
        self, view: SimView, running: list[int], allowed: set[int]
    ) -> Decision | None:
        """Suspend jobs whose sampling run just ended, as ``sample_then_suspend`` says
        (``allowed``: the running jobs the suspension rules let it suspend; the others
        keep running)."""
        for job_id in running:
            if job_id in self._reviewed:
                continue
            job = view.job(job_id)
            if not job.sampled:
                continue
            self._reviewed.add(job_id)
            remaining = job.predicted_remaining_s
            if remaining is not None and job.suspends == 0:
                self._durations.append(remaining / max(1.0 - job.progress, 1e-9))
                self._prior_s = None
            sampled_badly = job_id in self._sampling_only
            self._sampling_only.discard(job_id)
            if self.sample_then_suspend == "never" or not self._suspendable(job):
                continue
            if job_id not in allowed:
                continue  # the suspension rules forbid it: the sampling run goes on
            if self.sample_then_suspend == "always" or sampled_badly:
                return Suspend(job_id)
        return None

    # ============================================================ step 2
    def _prior(self) -> float:
        """Predicted solo duration assumed for a job not yet sampled: the median seen.  [s]"""
        if self._prior_s is None:
            self._prior_s = float(np.median(self._durations)) if self._durations else 0.0
        return self._prior_s

    def _remaining(self, job: JobState) -> float:
        """Predicted remaining solo time, from the prior when unknown.  [s]"""
        remaining = job.predicted_remaining_s
        return self._prior() * (1.0 - job.progress) if remaining is None else remaining

    def _key(self, job: JobState, remaining_s: float) -> float:
        """SRPT key of a job (smaller first)."""
        if job.status == JobStatus.SUSPENDED:
            remaining_s += job.resume_overhead_s
        return remaining_s * job.num_gpus if self.order_by == "gpu_time" else remaining_s

    def _drain_s(self, view: SimView) -> float:
        """Time the cluster needs for all known remaining work at full use.  [s]

        An O(jobs) sum, so it is recomputed only when the jobs in the system or the
        running set change, or ``_DRAIN_REFRESH_S`` has passed; in between it is
        extrapolated at one second of drain per second.
        """
        now = view.now_s
        signature = (view.jobs_in_system, view.num_running, view.num_waiting)
        cached_at, cached, cached_signature = self._drain_cache
        if cached_signature == signature and now - cached_at < _DRAIN_REFRESH_S:
            return max(cached - (now - cached_at), 0.0)
        # every job's predicted remaining time, the prior's share when unknown (_remaining)
        drain = view.predicted_work_s(prior_s=self._prior()) / view.num_gpus
        self._drain_cache = (now, drain, signature)
        return drain

    def _drain_now(self, view: SimView) -> float:
        """``_drain_s`` once per ``decide`` call (every waiting job's rank asks for it).  [s]"""
        if self._decision_drain is None:
            self._decision_drain = self._drain_s(view)
        return self._decision_drain

    def _waiting(self, view: SimView, job_id: int) -> _Waiting:
        """The facts and the service rank of one waiting job."""
        job = view.job(job_id)
        predicted = job.predicted_remaining_s
        remaining = self._prior() * (1.0 - job.progress) if predicted is None else predicted
        key = self._key(job, remaining)
        sampling_run = (
            predicted is None
            and view.duration_info == "sampled"
            and job.status == JobStatus.PENDING
        )
        starving = critical = False
        if predicted is not None:
            starving = job.num_gpus >= self.large_gpus and job.total_wait_s >= max(
                self.min_starvation_s, self.starvation_factor * predicted
            )
            if math.isfinite(self.critical_path_factor):
                critical = predicted >= self.critical_path_factor * self._drain_now(view)
        return self._ranked(job, remaining, key, sampling_run, starving, critical)

    def _ranked(
        self,
        job: JobState,
        remaining: float,
        key: float,
        sampling_run: bool,
        starving: bool,
        critical: bool,
    ) -> _Waiting:
        """A waiting job's place in the order: urgent jobs first (starving ones most
        starved first, then critical ones longest first; under ``starving_order=
        "longest"`` all of them longest first), then sampling runs by arrival, then
        SRPT."""
        if starving and self.starving_order == "most_starved":
            rank: tuple[float, ...] = (
                0.0,
                -_response_ratio(job, remaining),
                job.arrival_s,
                job.job_id,
            )
        elif starving or critical:
            tier = 0.5 if self.starving_order == "most_starved" else 0.0
            rank = (tier, -remaining, job.arrival_s, job.job_id)
        elif sampling_run:
            rank = (1.0, job.arrival_s, 0.0, job.job_id)
        else:
            rank = (2.0, key, job.arrival_s, job.job_id)
        urgent = starving or critical
        return _Waiting(job, remaining, key, urgent, starving, sampling_run, rank, critical)

    def _limit_starving(self, view: SimView, waiting: list[_Waiting]) -> list[_Waiting]:
        """Serve at most ``max_starving`` jobs as starving at once: jobs started as
        starving that still hold their GPUs take their slots, the free ones go to the
        waiting starving jobs first in order (most starved), and the others keep their
        SRPT place (or their critical-path urgency) until a slot frees."""
        starved = sorted((w for w in waiting if w.starving), key=lambda w: w.rank)
        if not starved:
            return waiting
        free = max(self.max_starving - self._starving_served(view), 0)
        demoted = {w.job.job_id for w in starved[free:]}
        if not demoted:
            return waiting
        return [
            self._ranked(w.job, w.remaining_s, w.key, w.sampling_run, False, w.critical)
            if w.job.job_id in demoted
            else w
            for w in waiting
        ]

    def _starving_served(self, view: SimView) -> int:
        """Jobs started as starving that still hold their GPUs (finished ones are
        forgotten)."""
        served = 0
        for job_id in list(self._protected):
            status = view.job(job_id).status
            if status == JobStatus.FINISHED:
                self._protected.discard(job_id)
            elif status in _HOLDING:
                served += 1
        return served

    # ============================================================ step 3
    def _placement(
        self,
        view: SimView,
        candidate: _Waiting,
        memo: dict[tuple[Any, ...], Any],
    ) -> tuple[str, tuple[int, ...]] | None:
        """The strategy (and the GPUs it picks) to place a waiting job with now, or
        ``None`` (it waits).

        ``memo`` caches the answer by job shape for one cluster state (one ``decide``
        call), so a long queue costs O(shapes x G), not O(queue x G).
        """
        job = candidate.job
        shared, exclusive = view.fits(job.job_id)
        if not shared and not exclusive:
            return None
        shape = (
            job.num_gpus,
            job.memory_gib,
            job.intensity,
            job.cross_node_factor,
            *job.node_request,
        )
        if shape not in memo:
            memo[shape] = self._acceptable(view, job, shared, exclusive)
        placed = memo[shape]
        idle_gpus = view.num_gpus - view.cluster_totals()[1]  # GPUs - allocated
        if placed is None and shared and idle_gpus > 0 and self.idle_min_speed < 1.0:
            # GPUs idle while this job waits: accept more interference (work conservation)
            relaxed_shape = (*shape, "relaxed")
            if relaxed_shape not in memo:
                memo[relaxed_shape] = self._acceptable(view, job, shared, False, relaxed=True)
            relaxed = memo[relaxed_shape]
            if relaxed is not None and self._relaxed_ok(view, relaxed[1]):
                placed = relaxed
        if placed is None and shared and candidate.sampling_run:
            # a sampling run lasts seconds: any fragment will do; it is re-placed after
            gpus = view.find_placement(job.job_id, "pack")
            if gpus is not None:
                self._sampling_only.add(job.job_id)
                return "pack", gpus
        return placed

    def _relaxed_ok(self, view: SimView, gpus: tuple[int, ...]) -> bool:
        """A work-conserving placement must not slow a job started as urgent: the
        makespan depends on it (measured: such a pairing could stretch a whole episode
        by a fifth)."""
        if not self._urgent_started:
            return True
        return not any(j in self._urgent_started for g in gpus for j in view.gpu_jobs(g))

    def _acceptable(
        self, view: SimView, job: JobState, shared: bool, exclusive: bool, relaxed: bool = False
    ) -> tuple[str, tuple[int, ...]] | None:
        """A fragment under the interference thresholds, or idle GPUs, or ``None``.

        ``relaxed``: the work-conserving thresholds (``idle_min_speed``), also trying the
        ``spread`` placement (idle GPUs first, then the least loaded).
        """
        fragment: tuple[str, tuple[int, ...]] | None = None
        if relaxed:
            min_own, min_others = self.idle_min_speed, self.idle_min_speed
            strategies: tuple[str, ...] = ("pack", "min_frag", "spread")
        else:
            min_own, min_others = self.min_speed, self.min_cotenant_speed
            strategies = ("pack", "min_frag")
        if shared:
            best = -1.0
            for strategy in strategies:
                gpus = view.find_placement(job.job_id, strategy)
                if gpus is None:
                    continue
                own, others = placement_speed(view, job, gpus)
                if own >= min_own and others >= min_others and own > best:
                    best, fragment = own, (strategy, gpus)
        if self.prefer_fragments and fragment is not None:
            return fragment
        if exclusive:
            gpus = view.find_placement(job.job_id, "exclusive")
            if gpus is not None:
                return "exclusive", gpus
        return fragment

    # ============================================================ step 4
    def _suspendable(self, job: JobState) -> bool:
        """May this running job be suspended at all?"""
        return self._suspendable_remaining(job) is not None

    def _suspendable_remaining(self, job: JobState) -> float | None:
        """The predicted remaining time of a running job that may be suspended, else
        ``None``.  [s]"""
        if job.status != JobStatus.RUNNING or job.suspends >= self.max_suspends:
            return None
        if job.job_id in self._protected:
            return None
        remaining = job.predicted_remaining_s
        if remaining is None:
            return None  # still sampling: a few seconds from a prediction
        if remaining < self.protect_remaining_factor * job.resume_overhead_s:
            return None
        return remaining

    def _find_victims(
        self, view: SimView, candidate: _Waiting, running: list[int], allowed: list[int]
    ) -> list[int]:
        """Running jobs whose suspension frees whole GPUs for a waiting job, fewest first.

        Victims are taken from ``allowed`` (the visible running jobs the suspension rules
        let it suspend); the others keep their GPUs. O(running jobs); a search that found
        nothing is not repeated for the same job until the running set or the allowed set
        changes or a running job gets its prediction (running jobs' keys only shrink, so
        it would find nothing again).
        """
        job = candidate.job
        signature = (
            job.job_id,
            candidate.urgent,
            candidate.key,
            tuple(running),
            tuple(allowed),  # a job past its minimum service may become a victim
            tuple(view.in_transition()),
            len(self._reviewed),  # a job that finished sampling may become a victim
            # an arrival lengthens the drain, so fewer running jobs are critical (and spared)
            0 if self.critical_preempts_critical else view.jobs_in_system,
        )
        if signature == self._no_victims:
            return []
        victims = self._search_victims(view, candidate, allowed)
        self._no_victims = None if victims else signature
        return victims

    def _search_victims(self, view: SimView, candidate: _Waiting, allowed: list[int]) -> list[int]:
        """The uncached search behind ``_find_victims``, among the ``allowed`` jobs."""
        job = candidate.job
        weight = np.zeros(view.num_gpus)
        evictable: dict[int, JobState] = {}
        holders_left = view.holders.astype(np.int64)  # a copy
        if not candidate.urgent and not math.isfinite(self.preempt_ratio):
            return []
        # a critical job does not suspend another critical job: the makespan gains nothing
        critical_s = _INF
        if candidate.critical and not candidate.starving and not self.critical_preempts_critical:
            critical_s = self.critical_path_factor * self._drain_now(view)
        for job_id in allowed:
            other = view.job(job_id)
            other_remaining = self._suspendable_remaining(other)
            if other_remaining is None or other_remaining >= critical_s:
                continue
            other_key = self._key(other, other_remaining)
            if candidate.urgent:
                # measured: restricting these victims (to long ones, or to SRPT's rule)
                # saves some JCT but gives back most of the makespan the rule is for
                ok = other.num_gpus <= job.num_gpus or other_key > candidate.key
            else:
                ok = other_key > self.preempt_ratio * candidate.key
            if not ok:
                continue
            evictable[job_id] = other
            gpus = list(other.gpus)
            holders_left[gpus] -= 1
            # fewest suspensions first; among equals, the jobs with most time left
            weight[gpus] += 1.0 + 1.0 / (1.0 + other_remaining / _VICTIM_TAU_S)
        if not evictable:
            return []
        for job_id in view.in_transition():
            other = view.job(job_id)
            if other.status == JobStatus.SUSPENDING:
                holders_left[list(other.gpus)] -= 1
        cost = np.where(holders_left == 0, weight, _INF)
        chosen = cheapest_gang(cost, self.node_gpus(view), job.num_gpus)
        if chosen is None:
            return []
        chosen_set = set(chosen)
        return [j for j, other in evictable.items() if chosen_set.intersection(other.gpus)]

    def _continue_opening(self, view: SimView, allowed: set[int]) -> Decision | None:
        """Finish opening a gang: suspend the remaining victims, then place the job.

        A victim no longer running or visible, or one the suspension rules now forbid
        (not in ``allowed``), is passed over: if the gang does not open without it, the
        opening is given up once the other checkpoints complete (nothing waits for it).
        """
        target = self._opening_for
        if target is None:
            return None
        job = view.job(target)
        if target not in self.visible_pending(view):
            # placed meanwhile, or pushed out of the window by older waiting jobs
            self._opening_for, self._victims = None, []
            return None
        while self._victims:
            victim = self._victims.pop(0)
            if victim in allowed:
                return Suspend(victim)
        if view.fits(job.job_id)[1]:  # (shared, exclusive)
            self._opening_for = None
            if self._opening_starving:
                self._protected.add(target)
            if self._opening_urgent:
                self._urgent_started.add(target)
            return Schedule(target, "exclusive")
        if any(view.job(j).status == JobStatus.SUSPENDING for j in view.in_transition()):
            return ADVANCE  # the gang opens when the checkpoints complete
        self._opening_for = None  # could not open it: decide afresh
        return None

    def _advance_or_force(self, view: SimView, waiting: list[_Waiting]) -> Decision:
        """Let time run; if nothing is left to happen, place the first job that fits."""
        if can_advance(view):
            return ADVANCE
        for candidate in waiting:
            job = candidate.job
            shared, exclusive = view.fits(job.job_id)
            if exclusive:
                return Schedule(job.job_id, "exclusive")
            if shared:
                return Schedule(job.job_id, "pack")
        return ADVANCE
