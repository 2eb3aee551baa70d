"""Acting on top of a heuristic: the heuristic proposes, the agent accepts or overrides.

Every learned scheduler of this project learned the whole decision, from scratch or from a
clone, and none kept a heuristic as a floor. Here a base heuristic (default ``thesis``)
proposes its action at every decision, the observation shows the proposal, and the agent
accepts it or chooses another action (the accept-or-override interface of SchedInspector:
Zhang et al., "SchedInspector: A Batch Job Scheduling Inspector Using Reinforcement
Learning", HPDC 2022). An agent that always accepts plays exactly the heuristic's run.

* :class:`HeuristicProposals` is a Gymnasium wrapper of ``GPUShare-v0`` (any agent, plain
  stable-baselines3 included): it adds the key ``"proposal"`` to the ``Dict``
  observation, a one-hot over the env's ``A`` actions of the base heuristic's action now
  (all zero on a final observation). The action space stays the env's (choosing the
  proposed index accepts), or with ``accept_action=True`` it is ``Discrete(A + 1)``,
  whose last action accepts (one output a plain ``MultiInputPolicy`` can learn). Its
  ``action_masks()`` and ``info["action_mask"]`` are the env's (plus ``True`` for the
  accept action); ``info["proposal"]`` is the proposed action index of the next
  observation and ``info["accepted"]`` whether the step's action was the proposal.
* The pointer policies (``agents.policies``) with ``accept_bias`` read the proposal as a
  prior on their logits: ``logits + accept_bias x proposal``; ``gpushare-train
  --residual thesis`` trains such a policy (``agents.training``). At its start the policy
  accepts with a probability of about ``e^b / (e^b + valid actions)`` and its
  deterministic action is the proposal: the run of the heuristic.
* :class:`ResidualPredictor` plays a saved residual agent on a plain ``GPUShare-v0`` env
  (``gpushare-evaluate``, the validation during training): it asks the base heuristic
  for the proposal itself, on the env's own read-only view, so the env is the one every
  other policy plays in.

The base heuristic reads the state through the env's read-only view
(``env.unwrapped.view``), as it does when it plays alone; the agent acts only through the
env's actions. A heuristic whose proposal was overridden sees the state the agent's action
left; heuristics keep no plan that an override would break beyond their next decision.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from gpushare_env.seeding import policy_seed

__all__ = [
    "PROPOSAL_KEY",
    "HeuristicProposals",
    "Proposer",
    "ResidualPredictor",
    "is_residual",
    "proposal_space",
    "residual_base",
    "with_proposal",
]

#: The observation key of the base heuristic's proposal (a one-hot over the env's actions).
PROPOSAL_KEY = "proposal"


def proposal_space(observation_space: gym.Space, num_actions: int) -> spaces.Dict:
    """``observation_space`` (a ``GPUShare-v0`` ``Dict``) with the proposal key added.

    Raises:
        ValueError: not a ``Dict`` space, or it has a proposal key already.
    """
    if not isinstance(observation_space, spaces.Dict):
        raise ValueError(f"proposal_space: needs a Dict observation space, got {observation_space}")
    if PROPOSAL_KEY in observation_space.spaces:
        raise ValueError(f"proposal_space: the space has a {PROPOSAL_KEY!r} key already")
    box = spaces.Box(0.0, 1.0, shape=(int(num_actions),), dtype=np.float32)
    return spaces.Dict({**observation_space.spaces, PROPOSAL_KEY: box})


def with_proposal(observation: Mapping[str, Any], action: int | None, num_actions: int) -> dict:
    """``observation`` with the proposal key: a one-hot of ``action`` over
    ``num_actions`` (all zero for ``None``, a final observation)."""
    onehot = np.zeros(num_actions, dtype=np.float32)
    if action is not None:
        onehot[action] = 1.0
    return {**observation, PROPOSAL_KEY: onehot}


class Proposer:
    """The base heuristic of a ``GPUShare-v0`` env, asked for its action.

    Args:
        env: The env (wrapped or not); the heuristic reads ``env.unwrapped.view``.
        base: A heuristic name ``baselines.make`` takes (``available()``, ``variants()``,
            with parameters or not).
        seed: Seed of the heuristic's generator (only ``random`` draws from it); its
            ``reset`` re-seeds it at every episode.

    Raises:
        ValueError: ``base`` names no heuristic.
    """

    def __init__(self, env: Any, base: str = "thesis", seed: int | None = 0) -> None:
        import baselines

        if not isinstance(base, str) or not base.strip():
            raise ValueError(f"Proposer: base must be a heuristic name, got {base!r}")
        self.env = env
        self.base = base
        self.policy = baselines.make(base, env, seed=seed)

    def reseed(self, seed: int | None) -> None:
        """Seed the heuristic as the evaluation harness seeds it for an episode seed
        (``policy_seed``); ``None`` keeps its seed."""
        if seed is not None:
            self.policy.seed = policy_seed(seed)

    def propose(self) -> int:
        """The heuristic's action in the env's current state (an index of its actions)."""
        action, _ = self.policy.predict(None)
        return int(action)


class HeuristicProposals(gym.Wrapper[dict[str, Any], Any, dict[str, Any], Any]):
    """``GPUShare-v0`` with a base heuristic's proposal in the observation (see the module).

    Args:
        env: A ``GPUShare-v0`` env (wrapped or not, e.g. by ``agents.reference.RelativeReward``).
        base: The base heuristic, a name ``baselines.make`` takes (default ``thesis``).
        accept_action: Add an action ``A`` that plays the proposal (``Discrete(A + 1)``);
            ``False``: the env's actions, the proposal's index accepts it.

    Raises:
        ValueError: ``base`` names no heuristic, or the env's spaces are not
            ``GPUShare-v0``'s (a ``Dict`` observation, a ``Discrete`` action space).
    """

    def __init__(self, env: gym.Env[Any, Any], base: str = "thesis", accept_action: bool = False):
        super().__init__(env)
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(
                f"HeuristicProposals: needs a Discrete action space, got {env.action_space}"
            )
        if not isinstance(accept_action, bool):
            raise ValueError(
                f"HeuristicProposals: accept_action must be a bool, got {accept_action!r}"
            )
        self.num_env_actions = int(env.action_space.n)
        self.accept_action = accept_action
        self.observation_space = proposal_space(env.observation_space, self.num_env_actions)
        if accept_action:
            self.action_space = spaces.Discrete(self.num_env_actions + 1)
        self.proposer = Proposer(env, base)
        self.base = base
        self._proposal: int | None = None

    @property
    def proposal(self) -> int | None:
        """The proposed action of the current state (``None`` once the episode is over)."""
        return self._proposal

    def _mask(self, mask: np.ndarray) -> np.ndarray:
        return np.append(mask, True) if self.accept_action else mask

    def action_masks(self) -> np.ndarray:
        """The valid actions: the env's, and the accept action if any.  # (A [+ 1],) bool"""
        return self._mask(self.env.unwrapped.action_masks())  # type: ignore[attr-defined]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the env, seed the heuristic for the episode (as the harness seeds it),
        and propose."""
        obs, info = self.env.reset(seed=seed, options=options)
        self.proposer.reseed(seed)
        self._proposal = self.proposer.propose()
        info = {**info, "proposal": self._proposal}
        if "action_mask" in info:
            info["action_mask"] = self._mask(info["action_mask"])
        return with_proposal(obs, self._proposal, self.num_env_actions), info

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Play ``action`` (the accept action plays the proposal), then propose again."""
        if self._proposal is None:
            raise RuntimeError(
                "HeuristicProposals: call reset() first (or after the episode ended)"
            )
        index = self.env.unwrapped.action_index(action)  # type: ignore[attr-defined]
        if self.accept_action and index == self.num_env_actions:
            index = self._proposal
        accepted = index == self._proposal
        obs, reward, terminated, truncated, info = self.env.step(index)
        self._proposal = None if terminated or truncated else self.proposer.propose()
        info["proposal"] = self._proposal
        info["accepted"] = accepted
        if "action_mask" in info:
            info["action_mask"] = self._mask(info["action_mask"])
        return (
            with_proposal(obs, self._proposal, self.num_env_actions),
            reward,
            terminated,
            truncated,
            info,
        )


def is_residual(model: Any) -> bool:
    """True if ``model`` (an SB3 model or policy) observes a heuristic's proposal."""
    space = getattr(model, "observation_space", None)
    return isinstance(space, spaces.Dict) and PROPOSAL_KEY in space.spaces


def residual_base(model: Any) -> str:
    """The base heuristic a residual model was trained on (its policy's ``residual_base``).

    Raises:
        ValueError: the model is not residual or records no base.
    """
    policy = getattr(model, "policy", model)
    base = getattr(policy, "residual_base", None)
    if not is_residual(model) or not isinstance(base, str):
        raise ValueError(
            "not a residual model: it observes no heuristic proposal or names no base heuristic"
        )
    return base


class ResidualPredictor:
    """Play a saved residual agent on a plain ``GPUShare-v0`` env (no wrapper).

    At every call it asks the base heuristic for its proposal on the env's current state,
    adds it to the observation and lets the agent choose (deterministically by default);
    the env must be the one passed here, as the heuristic reads its view.

    Args:
        model: A loaded residual MaskablePPO or PPO model (:func:`is_residual`).
        env: The env it plays in; a pointer policy is rebound to its windows and cluster
            (``agents.portable``).
        base_seed: Seed of the base heuristic's generator (only ``random`` draws).

    Raises:
        ValueError: ``model`` is not residual.
        agents.portable.NotPortableError: the policy cannot play with ``env``'s spaces.
    """

    def __init__(self, model: Any, env: Any, base_seed: int | None = 0) -> None:
        from agents.inference import EvalPredictor

        self.base = residual_base(model)
        self.env = env
        self.num_actions = int(env.action_space.n)
        self.proposer = Proposer(env, self.base, seed=base_seed)
        spaces_ = proposal_space(env.observation_space, self.num_actions)
        self.agent = EvalPredictor(model, _SpacesOf(spaces_, env.action_space))
        self.proposals = 0  # decisions asked
        self.accepted = 0  # of which the agent played the proposal
        #: Overrides by (proposed kind, chosen kind), kinds ``schedule``, ``suspend``,
        #: ``advance`` (over every episode this predictor played).
        self.overrides: Counter[tuple[str, str]] = Counter()

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """The agent's action on ``observation`` with the heuristic's proposal added."""
        proposal = self.proposer.propose()
        obs = with_proposal(observation, proposal, self.num_actions)
        action, state = self.agent.predict(
            obs, state, episode_start, deterministic=deterministic, action_masks=action_masks
        )
        self.proposals += 1
        chosen = int(action)
        if chosen == proposal:
            self.accepted += 1
        else:
            self.overrides[(self._kind(proposal), self._kind(chosen))] += 1
        return action, state

    def _kind(self, action: int) -> str:
        """``schedule``, ``suspend`` or ``advance``: the kind of an action index."""
        suspends_from = self.num_actions - 1 - int(self.env.unwrapped.config.windows.running)
        if action < suspends_from:
            return "schedule"
        return "suspend" if action < self.num_actions - 1 else "advance"


class _SpacesOf:
    """An object with the given spaces (what ``EvalPredictor`` reads of an env)."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
