"""``lookahead``: a rollout scheduler over any heuristic (planning on forks).

A rollout algorithm (D. P. Bertsekas, J. N. Tsitsiklis and C. Wu, "Rollout algorithms for
combinatorial optimization", J. Heuristics 3, 1997): at each decision it takes its base
heuristic's decision and the decisions other heuristics propose now (the candidates),
plays each one on a fork of the simulator and finishes the episode from there with the
base heuristic, and acts on the candidate whose rollout scores best. Ties, and decisions
where every candidate is the base's, go to the base, so with no alternatives it is its base
decision for decision.

**What a rollout may see.** By default each rollout runs on a *belief* fork
(``Simulator.fork(belief=True)``): the jobs that have arrived and no future ones, each
job's length as the scheduler knows it under ``simulator.duration_info`` (the sampled
prediction once sampled, a prior before). The planner therefore never reads true lengths
or the trace's future. ``oracle=True`` rolls out on full forks instead, which see both:
the clairvoyant bound, marked ``oracle`` in the evaluation's records and kept out of its
fair tables.

**The score.** Every rollout of one decision runs the base to the same simulated time,
``horizon`` times the belief's typical job length after now (``Simulator.fork``'s prior:
the median known solo duration), or until the jobs in the system now have all finished;
the score is the objective over those jobs at that time: ``mean_jct`` (default) sums their
finish times, a job unfinished at the horizon counted as finishing after its remaining
solo time; ``makespan`` takes the latest.

**Cost.** Each decision with more than one distinct candidate costs one fork and one
rollout per candidate (docs/baselines.md, *lookahead*, has the measured cost per decision);
decisions where the candidates agree cost the candidates' ``decide`` calls only.

**Proposals from outside.** ``suggest(decision)`` adds one more candidate to the next
decision only: a learned policy's action, so the search starts from the network as
expert iteration's does (T. Anthony, Z. Tian and D. Barber, "Thinking Fast and Slow with
Deep Learning and Tree Search", NeurIPS 2017). It is rolled out like any other proposal
and wins only by the same margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from baselines.base import Policy, can_advance
from gpushare_env.sim import SimView
from gpushare_env.sim.decisions import ADVANCE, Advance, Decision, Schedule, apply_decision
from gpushare_env.sim.engine import BELIEF_DEFAULT_PRIOR_S

__all__ = ["DEFAULT_ALTERNATIVES", "OBJECTIVES", "Lookahead"]

#: The heuristics whose proposals are the default candidates beside the base's.
DEFAULT_ALTERNATIVES: tuple[str, ...] = ("gandiva", "sjf_pack", "tiresias", "fifo_pack")

#: How often (decisions) a rollout on a full fork checks whether the jobs it is scored on
#: have all finished (a belief's episode ends with them).
_ORACLE_CHECK = 32

#: The objectives a rollout may score (the episode's metric over the current jobs).
OBJECTIVES: tuple[str, ...] = ("mean_jct", "makespan")


class Lookahead(Policy):
    """Roll out each candidate decision under the base heuristic; act on the best.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Seed of the base's and the alternatives' generators.
        base: The heuristic that decides by default and finishes every rollout, as
            ``baselines.make`` names it (parameters allowed: ``"thesis:max_suspends=6"``;
            in a spec, in brackets: ``lookahead:base=[thesis:max_suspends=6]``).
            Default ``"thesis"``.
        alternatives: Heuristics whose decisions are the other candidates (names as
            ``base``; ``[]``: none, which makes this policy its base). Default
            ``DEFAULT_ALTERNATIVES``. A proposal the setting's actions cannot express
            (a strategy outside the env's ``strategies``, headless too) is left out.
        advance: Also try letting time run (``ADVANCE``) when the base acts. Default
            False.
        horizon: How far each rollout runs, in typical job lengths (the belief's prior,
            ``Simulator.fork``); ``None`` (default): until the jobs in the system now
            have finished.
        max_rollout_decisions: Decisions a rollout makes at most (a guard on its cost;
            one cut short is scored at the time it reached). Default 2,000.
        budget: Rollout decisions allowed per decision, on average over the episode: a
            decision is planned only while the rollouts so far made at most ``budget``
            times as many decisions as the episode (``None``: no limit). This bounds a
            run's cost at about ``1 + budget`` times its base's. Default 20.
        margin: Act on another candidate only if its rollout's total completion time
            (of the jobs in the system now) is below the base's by more than this share
            of the base's: a guard against acting on the belief's noise. Default 0.01.
        objective: ``"mean_jct"`` or ``"makespan"`` (``OBJECTIVES``). Default
            ``"mean_jct"``.
        oracle: Roll out on full forks, which see future arrivals and true lengths: the
            clairvoyant bound, marked ``oracle``. Default False (belief forks).
        prior_s: A belief's solo duration of a job of unknown length (``None``: the
            simulator's rule, ``Simulator.fork``).  [s]
    """

    name = "lookahead"

    def __init__(
        self,
        env: Any = None,
        seed: int | None = 0,
        *,
        base: str = "thesis",
        alternatives: Sequence[str] = DEFAULT_ALTERNATIVES,
        advance: bool = False,
        horizon: float | None = None,
        max_rollout_decisions: int = 2000,
        budget: float | None = 20.0,
        margin: float = 0.01,
        objective: str = "mean_jct",
        oracle: bool = False,
        prior_s: float | None = None,
    ) -> None:
        super().__init__(env, seed)
        from baselines import make  # the registry imports this module

        if isinstance(alternatives, str):  # from a spec: "[gandiva,sjf_pack]" or "gandiva"
            alternatives = [a.strip() for a in alternatives.strip("[]").split(",") if a.strip()]
        for name, flag in (("advance", advance), ("oracle", oracle)):
            if not isinstance(flag, bool):
                raise ValueError(f"lookahead: {name} must be true or false, got {flag!r}")
        for name, number in (("budget", budget), ("margin", margin), ("prior_s", prior_s)):
            if number is not None and not _is_number(number):
                raise ValueError(f"lookahead: {name} must be a number, got {number!r}")
        if horizon is not None and not _is_number(horizon):
            raise ValueError(
                f"lookahead: horizon must be a positive number or None, got {horizon!r}"
            )
        if objective not in OBJECTIVES:
            raise ValueError(
                f"lookahead: objective must be one of {list(OBJECTIVES)}, got {objective!r}"
            )
        if horizon is not None and not (
            isinstance(horizon, (int, float)) and math.isfinite(horizon) and horizon > 0
        ):
            raise ValueError(
                f"lookahead: horizon must be a positive number or None, got {horizon!r}"
            )
        if not (isinstance(max_rollout_decisions, int) and max_rollout_decisions >= 1):
            raise ValueError(
                f"lookahead: max_rollout_decisions must be a whole number >= 1, "
                f"got {max_rollout_decisions!r}"
            )
        if prior_s is not None and not (math.isfinite(prior_s) and prior_s > 0):
            raise ValueError(
                f"lookahead: prior_s must be a positive number of seconds, got {prior_s!r}"
            )
        if base.startswith("[") and base.endswith("]"):  # from a spec: "[thesis:k=v]"
            base = base[1:-1]
        self.base_spec = base
        self.alternative_specs = tuple(alternatives)
        self.base = make(base, seed=seed)
        if isinstance(self.base, Lookahead):
            raise ValueError("lookahead: the base must be a heuristic, not another lookahead")
        self.needs_strategies = self.base.needs_strategies  # its decisions are the base's
        self.alternatives = [make(spec, seed=seed) for spec in self.alternative_specs]
        if any(isinstance(policy, Lookahead) for policy in self.alternatives):
            raise ValueError("lookahead: the alternatives must be heuristics, not planners")
        self.try_advance = bool(advance)
        self.horizon = None if horizon is None else float(horizon)
        self.max_rollout_decisions = max_rollout_decisions
        if budget is not None and not (math.isfinite(budget) and budget >= 0):
            raise ValueError(f"lookahead: budget must be a number >= 0 or None, got {budget!r}")
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError(f"lookahead: margin must be a number >= 0, got {margin!r}")
        self.budget = budget
        self.margin = float(margin)
        self.objective = objective
        self.oracle = bool(oracle)
        self.prior_s = prior_s
        #: Decisions taken, and those where a candidate other than the base's won.
        self.decisions = 0
        self.deviations = 0
        #: Decisions that rolled candidates out, the rollouts run and their decisions.
        self.planned = 0
        self.rollouts = 0
        self.rollout_decisions = 0
        #: Decisions where a suggested proposal (``suggest``) won.
        self.suggestions_taken = 0
        self._suggested: Decision | None = None
        #: The chosen rollout's score, to be the base's at the next decision of the same
        #: instant: ``(now_s, events_processed, decisions carried out, end_s, score)``.
        self._carry: tuple[float, int, int, float, tuple[float, float]] | None = None

    def params(self) -> dict[str, Any]:
        return {
            "base": self.base_spec,
            "alternatives": list(self.alternative_specs),
            "advance": self.try_advance,
            "horizon": self.horizon,
            "max_rollout_decisions": self.max_rollout_decisions,
            "budget": self.budget,
            "margin": self.margin,
            "objective": self.objective,
            "oracle": self.oracle,
            "prior_s": self.prior_s,
        }

    def _reset_state(self) -> None:
        view = self._view
        assert view is not None
        self.base.reset(view)
        for policy in self.alternatives:
            policy.reset(view)
        self.decisions = self.deviations = self.planned = self.rollouts = 0
        self.rollout_decisions = self.suggestions_taken = 0
        self._carry = None  # a suggestion made before the first decision is kept

    def suggest(self, decision: Decision) -> None:
        """Add ``decision`` to the next decision's candidates (and to no later one): a
        proposal from outside the heuristics, e.g. a learned policy's action in the same
        state. A decision the setting's actions cannot express is left out."""
        self._suggested = decision

    # ------------------------------------------------------------------ deciding
    def decide(self, view: SimView) -> Decision:
        base = self.base.decide(view)
        candidates = [base]
        for policy in self.alternatives:
            proposal = policy.decide(view)
            if proposal not in candidates and self._expressible(proposal):
                candidates.append(proposal)
        suggested, self._suggested = self._suggested, None
        if suggested is not None and suggested not in candidates and self._expressible(suggested):
            candidates.append(suggested)
        if self.try_advance and not isinstance(base, Advance) and can_advance(view):
            candidates.append(ADVANCE)
        self.decisions += 1
        if len(candidates) == 1:
            return base
        if self.budget is not None and self.rollout_decisions > self.budget * self.decisions:
            return base
        self.planned += 1
        sim: Any = view
        key = (sim.now_s, sim.events_processed, sim.core.sim_decisions)
        carry = self._carry
        if carry is not None and carry[:3] == key:
            # the same instant, nothing happened but the last decision: the base's
            # rollout from here is the rest of the one that chose it
            end_s, base_score = carry[3], carry[4]
        else:
            end_s = (
                math.inf
                if self.horizon is None
                else sim.now_s + self.horizon * self._typical_s(view)
            )
            base_score = self._rollout(view, base, end_s)
        best, best_score = base, base_score
        for candidate in candidates[1:]:
            score = self._rollout(view, candidate, end_s)
            if score[0] < best_score[0]:
                best, best_score = candidate, score
        total, arrivals = base_score
        if best is not base and base_score[0] - best_score[0] <= self.margin * (total - arrivals):
            best, best_score = base, base_score  # within the margin: the base's
        if best is not base:
            self.deviations += 1
            if best is suggested:
                self.suggestions_taken += 1
        self._carry = (key[0], key[1], key[2] + 1, end_s, best_score)
        return best

    def _expressible(self, decision: Decision) -> bool:
        """Whether the setting's actions can carry ``decision`` (the env's
        ``strategies``, headless too; always when no setting restricts them)."""
        return not isinstance(decision, Schedule) or self.may_use(decision.strategy)

    def _typical_s(self, view: SimView) -> float:
        """The belief's typical solo duration of a job now (its prior).  [s]"""
        if self.prior_s is not None:
            return self.prior_s
        return float(view.core.belief_prior(BELIEF_DEFAULT_PRIOR_S))  # type: ignore[attr-defined]

    def _rollout(self, view: SimView, first: Decision, end_s: float) -> tuple[float, float]:
        """The objective at ``end_s`` after ``first`` and the base's decisions on a fork,
        and the sum of the arrival times of the jobs it is over."""
        sim = view.fork(belief=not self.oracle, prior_s=self.prior_s)  # type: ignore[attr-defined]
        core = sim.core
        if isinstance(first, Advance) and sim.next_event_time() is None:
            self.rollouts += 1
            return math.inf, 0.0  # nothing the belief knows of is left to happen
        since, arrived = sim.num_finished, sim.num_arrived
        policy = self.base.clone()
        policy._view = sim
        self.rollouts += 1
        apply_decision(sim, first)
        core.settle_until(end_s)
        made = 0
        while not core.done:
            if made == self.max_rollout_decisions:  # cut short: scored where it got to
                end_s = sim.now_s
                break
            next_s = sim.next_event_time()
            beyond = next_s is None or next_s > end_s
            if beyond and not core.has_choice:
                break
            decision = policy.decide(sim)
            if beyond and isinstance(decision, Advance):
                break
            apply_decision(sim, decision)
            core.settle_until(end_s)
            made += 1
            if (
                self.oracle
                and made % _ORACLE_CHECK == 0
                and not core.outcome(since, arrived, sim.now_s)[3]
            ):
                break  # a full fork goes on with later jobs: the current ones are done
        self.rollout_decisions += made + 1
        at = sim.now_s if core.done else max(sim.now_s, end_s)
        _, finish_sum, finish_max, left, remaining, arrivals = core.outcome(since, arrived, at)
        if self.objective == "makespan":
            latest = max(finish_max, at + remaining if left else -math.inf)
            return latest, 0.0
        return finish_sum + left * at + remaining, arrivals


def _is_number(value: object) -> bool:
    """A real number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
