"""``random``: a uniformly random valid decision, from the policy's own seeded generator.

At every decision point the policy lists the valid decisions among the addressable ones:
``Schedule(job, strategy)`` for every visible waiting job and every placement strategy
the setting offers (the env's ``strategies``, headless too) under which it fits now, and
``ADVANCE`` when some event is still to come; it then picks one uniformly. With
``suspend_prob > 0`` it instead, with that probability, suspends a uniformly chosen
visible running job the simulator's suspension rules allow suspending
(``SimView.can_suspend``; if there is none it picks among the other decisions), exercising
the whole action space, e.g. in tests.

Source: the usual lower-bound baseline of learned schedulers (e.g. Decima's and
DeepRM's random agents). Differences: suspensions are off by default (``random`` is
non-preemptive in docs/baselines.md, *At a glance*): a random policy that may suspend at
every decision point suspends nearly every job before time can run and never finishes a
long workload.
"""

from __future__ import annotations

from typing import Any

from baselines.base import Policy, can_advance
from gpushare_env.sim import ADVANCE, STRATEGIES, Decision, Schedule, SimView, Suspend

__all__ = ["RandomPolicy"]


class RandomPolicy(Policy):
    """Uniform over valid schedule decisions and advance; optional random suspensions.

    Args:
        env: The env for ``predict`` (``None`` headless).
        seed: Seed of the policy's generator (re-seeded at every ``reset``).
        suspend_prob: Probability of suspending a random visible running job at a decision
            point, in [0, 1). Default 0: see the module docstring.
    """

    name = "random"

    def __init__(self, env: Any = None, seed: int | None = 0, suspend_prob: float = 0.0) -> None:
        super().__init__(env, seed)
        if not 0.0 <= suspend_prob < 1.0:
            raise ValueError(f"random: suspend_prob must be in [0, 1), got {suspend_prob}")
        self.suspend_prob = suspend_prob

    def params(self) -> dict[str, Any]:
        """Named parameters."""
        return {"seed": self.seed, "suspend_prob": self.suspend_prob}

    def decide(self, view: SimView) -> Decision:
        """Pick uniformly among the valid decisions now."""
        if self.suspend_prob > 0.0 and self.rng.random() < self.suspend_prob:
            allowed = self.suspendable(view)
            if allowed:
                return Suspend(allowed[int(self.rng.integers(len(allowed)))])
        options: list[Decision] = []
        for job_id in self.visible_pending(view):
            shared, exclusive = view.fits(job_id)
            for strategy in STRATEGIES:
                if not self.may_use(strategy):
                    continue  # the setting's actions cannot carry it
                if exclusive if strategy == "exclusive" else shared:
                    options.append(Schedule(job_id, strategy))
        if can_advance(view) or not options:
            options.append(ADVANCE)
        return options[int(self.rng.integers(len(options)))]
