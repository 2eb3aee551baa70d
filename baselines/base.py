"""The one interface every baseline implements, and helpers the policies share.

A baseline decides from the simulator's read-only ``SimView`` (``decide``). The same
object drives the headless runner (``gpushare_env.runner.run_headless``) and, bound to a
``GPUShare-v0`` env, acts through the env's action space with stable-baselines3's
``predict`` protocol, so one evaluation loop serves heuristics and learned agents.

Windows: only the pending window's waiting jobs (the first ``W`` by arrival, or with a
priority share some of them by least attained service) and the first ``R`` running jobs
(by start) are addressable, in the env and headless alike. A policy therefore reads jobs
through ``visible_pending`` / ``visible_running``: the simulator's windows
(``SimView.pending_window``, ``SimView.running_window``; unbounded unless the run sets
them), the one rule that the env's actions address too.

Suspension rules: the simulator allows a suspension only under its rules
(``SimConfig.max_suspends_per_job``, ``min_service_s``; in the env, ``limits``), and the
env's mask, ``Simulator.suspend`` and ``SimView.can_suspend`` apply the same one. A
policy picks its victims among ``suspendable`` (the visible running jobs
``can_suspend`` allows), so it never takes a decision the rules forbid: when its
preferred victim is not allowed it takes its next choice, or does not suspend.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gpushare_env.sim import Decision, JobState, JobStatus, SimView
from gpushare_env.sim.placement import MIG_RULES, SHARE_RULES

__all__ = [
    "Policy",
    "can_advance",
    "cheapest_gang",
    "committed_load",
    "placement_speed",
    "predicted_idle_at",
    "refusal",
    "sharing_needed",
]


class Policy:
    """Base class: subclasses set ``name`` and implement ``decide``.

    Args:
        env: A ``GPUShare-v0`` env (wrapped or not) the policy acts in through ``predict``;
            ``None`` for headless use.
        seed: Seed of the policy's own generator (only ``random`` draws from it).
    """

    name = "policy"

    #: True for a policy that sees what a scheduler cannot know (future arrivals, true
    #: job lengths: a planner on full forks, ``lookahead:oracle=true``): an upper bound,
    #: which the evaluation marks ``oracle`` in ``runs.csv`` and keeps out of its
    #: rankings. A subclass (or an instance) that may see the future sets it.
    oracle: bool = False

    #: The placement strategies the policy's decisions may use, each of which it needs
    #: (an env whose ``strategies`` lack one cannot carry its decisions, so
    #: ``baselines.make`` refuses it there, in the env and headless alike). A policy that
    #: picks among the strategies it is allowed (``allowed_strategies``) needs none. A
    #: subclass sets it; an instance whose needs depend on its parameters (``lookahead``,
    #: its base's) sets its own.
    needs_strategies: tuple[str, ...] = ()

    #: The policy re-partitions MIG GPUs (``Repartition`` decisions): it runs headless;
    #: ``GPUShare-v0`` has no re-partition action, so ``baselines.make`` refuses it there.
    needs_repartition: bool = False

    def __init__(self, env: Any = None, seed: int | None = 0) -> None:
        self.env = env
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._view: SimView | None = None
        #: The strategies the setting it plays in offers (the env's ``strategies``;
        #: headless, those ``baselines.make`` was given), ``None``: any strategy.
        self.allowed_strategies: tuple[str, ...] | None = (
            _strategies_of(env) if env is not None else None
        )

    @property
    def needs_sharing(self) -> str | None:
        """The sharing model the policy needs (``SimConfig.sharing``): ``"shares"`` if a
        strategy it needs places requested shares (``gpushare_env.sim.placement.
        SHARE_RULES``, which the simulator refuses under the memory model), else
        ``None`` (either model)."""
        return sharing_needed(self.needs_strategies)

    def may_use(self, strategy: str) -> bool:
        """Whether the setting the policy plays in offers ``strategy`` (its decisions
        with it can be carried out: always when no setting restricts it)."""
        return self.allowed_strategies is None or strategy in self.allowed_strategies

    def reset(self, view: SimView) -> None:
        """Start an episode on ``view`` (its windows bound what is visible).

        Subclasses that keep per-episode state clear it in ``_reset_state``. The policy's
        generator is re-seeded, so every episode of a seeded policy draws the same stream
        on the same workload.
        """
        self._view = view
        self.rng = np.random.default_rng(self.seed)
        self._reset_state()

    def _reset_state(self) -> None:
        """Clear per-episode state (a hook for subclasses; the base keeps none)."""

    def decide(self, view: SimView) -> Decision:
        """The next decision at the current instant."""
        raise NotImplementedError

    # ------------------------------------------------------------ visibility
    def visible_pending(self, view: SimView) -> list[int]:
        """Waiting jobs (pending and suspended) this policy may place: the pending window,
        in arrival order."""
        return view.pending_window()

    def visible_running(self, view: SimView) -> list[int]:
        """Running jobs this policy may address, in the order they (re)started (those it
        may suspend now: ``suspendable``)."""
        return view.running_window()

    def suspendable(self, view: SimView) -> list[int]:
        """Visible running jobs the simulator's suspension rules allow suspending now
        (``SimView.can_suspend``), in the order they (re)started: the only victims a
        policy may choose."""
        return [job_id for job_id in self.visible_running(view) if view.can_suspend(job_id)]

    def node_gpus(self, view: SimView) -> np.ndarray:
        """GPUs of each node, -1 padded (the cluster's, ``SimView.node_gpus``).  # (N, M)"""
        return view.node_gpus

    def params(self) -> dict[str, Any]:
        """The policy's named parameters (for reports); subclasses add theirs."""
        return {}

    def clone(self) -> Policy:
        """A copy with its own per-episode state, to play on in a fork (a planner's
        rollout, ``baselines.lookahead``): the sets, lists and dicts the policy keeps
        are copied (they hold job ids, times and other immutable values), as is its
        generator. A subclass that keeps mutable values inside them overrides this."""
        other = copy.copy(self)
        state = other.__dict__
        for key, value in state.items():
            if isinstance(value, (set, list, dict)):
                state[key] = value.copy()
            elif isinstance(value, np.random.Generator):
                state[key] = copy.deepcopy(value)
        return other

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    # ----------------------------------------------------- SB3 predict protocol
    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]:
        """SB3-style ``predict``: reads the bound env's view and returns an action index.

        The observation is not decoded: the policy reads the same state through the env's
        read-only view (``env.unwrapped.view``) and encodes its decision with
        ``env.unwrapped.encode_decision``, so it can only address the env's windows.
        """
        if self.env is None:
            raise RuntimeError(f"{self.name}: predict() needs the env given to baselines.make")
        env = self.env.unwrapped
        view = env.view
        if self._view is not view:
            self.reset(view)
        action = env.encode_decision(self.decide(view))
        return np.asarray(action), state


#: What a policy needing a sharing model does, for ``refusal``'s message.
_PLACES = {"shares": "places requested shares", "mig": "places jobs on MIG instances"}


def sharing_needed(strategies: Sequence[str]) -> str | None:
    """The sharing model placing with ``strategies`` needs: ``"shares"`` if one of them
    places requested shares (``gpushare_env.sim.placement.SHARE_RULES``), ``"mig"`` if
    one places on MIG instances (``MIG_RULES``), else ``None`` (any model)."""
    if any(s in SHARE_RULES for s in strategies):
        return "shares"
    return "mig" if any(s in MIG_RULES for s in strategies) else None


def _strategies_of(env: Any) -> tuple[str, ...] | None:
    """The strategies of a ``GPUShare-v0`` env's actions (``None``: it says none)."""
    strategies = getattr(env.unwrapped, "strategies", None)
    return None if strategies is None else tuple(strategies)


def refusal(policy: Policy, strategies: Sequence[str] | None, sharing: str | None) -> str | None:
    """Why ``policy`` cannot play in a setting offering ``strategies`` under the sharing
    model ``sharing`` (``None``: not restricted), or ``None`` if it can: a strategy it
    needs (``Policy.needs_strategies``) is missing, or it needs another sharing model
    (``Policy.needs_sharing``)."""
    if strategies is not None:
        missing = [s for s in policy.needs_strategies if s not in strategies]
        if missing:
            wanted = [*strategies, *missing]
            return (
                f"policy {policy.name!r} places with {list(policy.needs_strategies)}, and "
                f"the env's strategies {list(strategies)} lack {missing}: it could not "
                f"carry out its decisions (give strategies={wanted})"
            )
    needed = policy.needs_sharing
    if sharing is not None and needed is not None and sharing != needed:
        return (
            f"policy {policy.name!r} {_PLACES.get(needed, 'places jobs')}: it needs "
            f"simulator.sharing = {needed!r}, got {sharing!r}"
        )
    return None


def predicted_idle_at(view: SimView, remaining: Callable[[JobState], float]) -> np.ndarray:
    """When each GPU is predicted to be free of every job on it (``now`` if idle), if
    running jobs keep their current speed and ``remaining`` predicts their remaining solo
    time; a suspending job frees its GPUs after its checkpoint, a resuming one after its
    restart and remaining time.  # (G,) [s]"""
    now = view.now_s
    idle_at = np.full(view.num_gpus, now)
    for job_id in view.running():
        job = view.job(job_id)
        end = now + remaining(job) / max(job.speed, 0.05)
        gpus = list(job.gpus)
        idle_at[gpus] = np.maximum(idle_at[gpus], end)
    for job_id in view.in_transition():
        job = view.job(job_id)
        if job.status == JobStatus.SUSPENDING:
            end = now + job.suspend_overhead_s
        else:
            end = now + job.resume_overhead_s + remaining(job)
        gpus = list(job.gpus)
        idle_at[gpus] = np.maximum(idle_at[gpus], end)
    return idle_at


def can_advance(view: SimView) -> bool:
    """True if letting time run is valid now (some event is still to come)."""
    return view.next_event_time() is not None


def placement_speed(view: SimView, job: JobState, gpus: tuple[int, ...]) -> tuple[float, float]:
    """Predicted speeds if ``job`` joined ``gpus``: (its own, slowest co-located job's).

    ``SimView.speed_if_placed`` counting restarting tenants as computing, plus the job's
    cross-node penalty when ``gpus`` span nodes (the simulator applies it to the job's
    own rate).
    """
    own, others = view.speed_if_placed(job.job_id, gpus, include_resuming=True)
    nodes = view.gpu_node[list(gpus)]
    if len(gpus) > 1 and bool(np.any(nodes != nodes[0])):
        own *= job.cross_node_factor
    return own, others


def committed_load(view: SimView) -> np.ndarray:
    """Compute load ``U_g`` of each GPU counting restarting jobs as computing.  # (G,)

    ``SimView.load`` counts computing workers only; a job that is resuming holds its GPUs
    and computes a few seconds later, so packing decisions must count it already.
    """
    load = np.array(view.load, dtype=np.float64)
    for job_id in view.in_transition():
        job = view.job(job_id)
        if job.status == JobStatus.RESUMING:
            load[list(job.gpus)] += job.intensity
    return load


def cheapest_gang(
    cost: np.ndarray, node_gpus: np.ndarray, n: int, total: bool = True
) -> list[int] | None:
    """``n`` GPUs of least total cost (``total=False``: least largest cost), inside one
    node when possible (``None``: every choice has an infinite cost).

    Args:
        cost: Cost of each GPU.  # (G,)
        node_gpus: GPUs of each node, -1 padded.  # (N, M)
        n: GPUs wanted.
        total: Score a choice by its summed (else its largest) cost.
    """
    padded = np.append(cost, math.inf)[node_gpus]  # (N, M); padding reads inf
    if n <= padded.shape[1]:
        order = np.argsort(padded, axis=1, kind="stable")[:, :n]  # (N, n)
        lowest = np.take_along_axis(padded, order, axis=1)
        score = lowest.sum(axis=1) if total else lowest.max(axis=1)
        node = int(np.argmin(score))
        if math.isfinite(float(score[node])):
            return sorted(int(g) for g in node_gpus[node, order[node]])
    order = np.argsort(cost, kind="stable")[:n]
    if len(order) < n or not np.all(np.isfinite(cost[order])):
        return None
    return sorted(int(x) for x in order)
