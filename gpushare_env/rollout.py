"""The one episode loop: a policy plays one seeded episode of a Gymnasium env.

Every place that plays whole episodes calls :func:`rollout`: the evaluation harness
(``gpushare_eval.runs``: ``gpushare-evaluate`` and the zoo cards), the training-time
validation (``agents.evaluation``, for the callbacks and learning curves), behaviour
cloning (``agents.bc``), the reward reference (``agents.reference``), the env benchmark
(``gpushare_env.envs.bench``) and the tests. A policy is anything
with stable-baselines3's ``predict(observation, state=None, episode_start=None,
deterministic=True) -> (action, state)``: the heuristics of ``baselines`` and every SB3
model. A policy whose ``predict`` also takes ``action_masks`` (MaskablePPO) gets the
env's mask of valid actions; the others (PPO, DQN, the heuristics, which read the env's
view) do not, and an invalid action is then the env's business (a counted no-op).

What happens inside an episode is seen through ``callback``, called once per step with
the :class:`Step` (nothing is patched into the env or the simulator)::

    episode = rollout(baselines.make("thesis", env), env, seed=0)
    episode.metrics["mean_jct_s"], episode.steps, episode.truncated

Seeds: ``rollout(..., seed=s)`` resets the env with ``reset(seed=s)``; what the seed
means is in :mod:`gpushare_env.seeding`.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = ["Episode", "PolicyPredictor", "Step", "predict_action", "rollout", "takes_action_masks"]

# ``episode_start`` as SB3 passes it for one env (recurrent policies read it)
_FIRST = np.ones(1, dtype=bool)
_LATER = np.zeros(1, dtype=bool)


class PolicyPredictor(Protocol):
    """stable-baselines3's ``PolicyPredictor`` protocol (``predict`` only)."""

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[Any, Any]:
        """The action for ``observation`` and the next recurrent state."""
        ...


@dataclass(frozen=True, slots=True)
class Step:
    """One step of an episode, as the callback sees it right after ``env.step``.

    Attributes:
        index: The step's number in its episode, from 0.
        observation: The observation the action was chosen on.
        action_mask: The valid actions of that state (``info["action_mask"]``), or
            ``None`` for an env without masks.  # (A,) bool
        action: The action taken (an index of the env's ``Discrete`` space).
        reward: The reward of the step.
        next_observation: The observation after it.
        terminated: The episode ended (every job finished).
        truncated: The env cut the episode short (a decision or time cap).
        info: The step's ``info`` (``info["metrics"]`` on the last step).
    """

    index: int
    observation: Any
    action_mask: np.ndarray | None  # (A,) bool
    action: int
    reward: float
    next_observation: Any
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Episode:
    """What one call of :func:`rollout` played.

    Attributes:
        seed: The seed the env was reset with (``None``: the env's generator went on).
        steps: Steps taken (the env's decisions).
        total_reward: Sum of the rewards (undiscounted).
        terminated: The last step ended the episode (every job finished).
        truncated: The env cut it short (its decision or time cap). Neither flag set:
            ``max_steps`` ran out first and the episode is unfinished.
        invalid_actions: Steps whose action was invalid (``info["invalid"]``: a no-op).
        reset_info: The ``info`` of ``reset`` (``rejected_jobs``, ``num_jobs``, ...).
        info: The ``info`` of the last step (of ``reset`` if no step was taken).
    """

    seed: int | None
    steps: int
    total_reward: float
    terminated: bool
    truncated: bool
    invalid_actions: int
    reset_info: dict[str, Any]
    info: dict[str, Any]

    @property
    def done(self) -> bool:
        """True if the env ended the episode (terminated or truncated)."""
        return self.terminated or self.truncated

    @property
    def metrics(self) -> dict[str, Any]:
        """The env's ``info["metrics"]`` of the ended episode (empty if unfinished)."""
        return dict(self.info.get("metrics") or {})

    @property
    def suspends(self) -> int | None:
        """Suspensions completed in the episode (``None`` if the env reported none)."""
        value = self.metrics.get("suspends")
        return None if value is None else int(value)


def takes_action_masks(policy: Any) -> bool:
    """True if ``policy.predict`` accepts ``action_masks`` (MaskablePPO does; PPO does not)."""
    try:
        parameters = inspect.signature(policy.predict).parameters
    except (TypeError, ValueError):  # a builtin without a signature: no masks
        return False
    return "action_masks" in parameters


def _action_index(action: Any) -> int:
    """The index of a ``Discrete`` action as SB3 returns it (a 0-d or 1-element array).

    Raises:
        TypeError: not one integer (a float, a bool, a string, several values): a
            policy's output is never rounded into an action.
    """
    array = np.asarray(action)
    if array.size != 1 or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(
            f"a policy's action must be one integer (an int, a numpy integer or a 1-element "
            f"integer array), got {action!r}"
        )
    return int(array.reshape(-1)[0])


def predict_action(
    policy: Any, observation: Any, action_mask: np.ndarray | None = None, deterministic: bool = True
) -> int:
    """One action of ``policy`` on ``observation``, with the mask if its ``predict`` takes one.

    For a single decision outside an episode loop (a test, a DAgger driver); a whole
    episode is :func:`rollout`.
    """
    if action_mask is not None and takes_action_masks(policy):
        action, _ = policy.predict(
            observation, deterministic=deterministic, action_masks=action_mask
        )
    else:
        action, _ = policy.predict(observation, deterministic=deterministic)
    return action if type(action) is int else _action_index(action)


def rollout(
    policy: PolicyPredictor,
    env: Any,
    *,
    seed: int | None,
    options: Mapping[str, Any] | None = None,
    deterministic: bool = True,
    max_steps: int | None = None,
    callback: Callable[[Step], None] | None = None,
) -> Episode:
    """Reset ``env`` with ``seed`` and let ``policy`` act until the episode ends.

    Each step asks ``policy.predict(observation, state, episode_start, deterministic)``
    (plus ``action_masks=`` for policies that take it, see :func:`takes_action_masks`),
    steps the env with the action as an ``int`` and then calls ``callback``. The env is
    left as the last step left it (its ``simulator`` and ``view`` describe the end of the
    episode); closing it is the caller's business.

    Args:
        policy: Anything with SB3's ``predict`` (a heuristic bound to ``env``, a model).
        env: A ``GPUShare-v0`` env, wrapped or not (any Gymnasium env with a
            ``Discrete`` action space; masks come from ``info["action_mask"]``, else
            from ``env.unwrapped.action_masks()``).
        seed: ``env.reset(seed=seed)``; ``None`` continues the env's generator.
        options: ``env.reset(options=...)`` (e.g. ``{"jobs": [...]}`` to replay a list).
        deterministic: Passed to ``predict`` (the heuristics are deterministic anyway).
        max_steps: Stop after this many steps even if the episode goes on (``None``: no
            limit); the episode is then neither terminated nor truncated.
        callback: Called with every :class:`Step`, once per step, right after it.

    Returns:
        The :class:`Episode`: steps, total reward, how it ended, the final ``info``.
    """
    takes_masks = takes_action_masks(policy)
    predict: Callable[..., tuple[Any, Any]] = policy.predict  # masks are not in the protocol
    observation, reset_info = env.reset(
        seed=seed, options=None if options is None else dict(options)
    )
    info: dict[str, Any] = reset_info
    state: Any = None
    steps = invalid = 0
    limit = sys.maxsize if max_steps is None else max_steps
    total_reward = 0.0
    terminated = truncated = False
    # (the per-step work is kept small: the compiled env steps in about 10 us)
    while not (terminated or truncated) and steps < limit:
        mask = info.get("action_mask")
        start = _FIRST if steps == 0 else _LATER
        if takes_masks:
            if mask is None:
                mask = env.unwrapped.action_masks()
            raw, state = predict(
                observation, state, start, deterministic=deterministic, action_masks=mask
            )
        else:
            raw, state = predict(observation, state, start, deterministic=deterministic)
        action = raw if type(raw) is int else _action_index(raw)
        next_observation, reward, terminated, truncated, info = env.step(action)
        if type(reward) is not float:
            reward = float(reward)
        total_reward += reward
        if info.get("invalid"):
            invalid += 1
        if callback is not None:
            step = Step(steps, observation, mask, action, reward, next_observation,
                        terminated, truncated, info)  # fmt: skip
            callback(step)
        observation = next_observation
        steps += 1
    return Episode(
        seed=seed,
        steps=steps,
        total_reward=total_reward,
        terminated=bool(terminated),
        truncated=bool(truncated),
        invalid_actions=invalid,
        reset_info=reset_info,
        info=info,
    )
