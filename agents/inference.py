"""Playing a saved agent: SB3's ``predict`` without its per-call overhead.

SB3's ``predict`` puts the policy in evaluation mode at every call, walking every module of
the network (``nn.Module.train(False)``): on a 2,000-job trace that walk is about a quarter
of an agent episode's time. :class:`EvalPredictor` sets the mode once and then does what
``predict`` does: observation to tensor, the policy's ``_predict`` under ``no_grad``, the
action back to numpy. The networks here have no dropout or batch norm, so the mode changes
no output; the shipped models' replays (``tests/agents/test_zoo.py``) check that every
action is the same. Given the env it will play, a pointer agent trained on another cluster
or with other windows is rebound to it (:mod:`agents.portable`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gpushare_env.rollout import takes_action_masks

__all__ = ["EvalPredictor", "for_play", "play_predictor"]


class EvalPredictor:
    """``predict`` of an SB3 model for episodes that only play it (no training between).

    Args:
        model: A loaded MaskablePPO, PPO or DQN model.
        env: The env it will play (``None``: one with the model's own spaces); a pointer
            policy is rebound to its spaces if they differ (``agents.portable``).

    Raises:
        agents.portable.NotPortableError: ``env``'s spaces differ from the model's and its
            policy cannot be rebound to them.
    """

    def __init__(self, model: Any, env: Any = None) -> None:
        self.model = model
        self.policy = model.policy
        if env is not None:
            from agents.portable import rebound_policy

            self.policy = rebound_policy(self.policy, env.observation_space, env.action_space)
        self.policy.set_training_mode(False)
        # MaskablePPO's policy takes the env's mask; PPO's and DQN's do not
        self._masked = takes_action_masks(self.policy)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """The action for ``observation`` (the mask is used where the model takes one)."""
        policy = self.policy
        obs_tensor, vectorized = policy.obs_to_tensor(observation)
        with torch.no_grad():
            if self._masked:
                actions = policy._predict(
                    obs_tensor, deterministic=deterministic, action_masks=action_masks
                )
            else:
                actions = policy._predict(obs_tensor, deterministic=deterministic)
        result = actions.cpu().numpy().reshape((-1, *policy.action_space.shape))
        return (result if vectorized else result.squeeze(axis=0)), state


def play_predictor(model: Any, env: Any) -> Any:
    """What plays a loaded SB3 ``model`` in ``env``: :class:`EvalPredictor`, or for a
    residual model (one that observes a base heuristic's proposal)
    :class:`agents.residual.ResidualPredictor`, which asks the heuristic itself."""
    from agents.residual import ResidualPredictor, is_residual

    if is_residual(model):
        return ResidualPredictor(model, env)
    return EvalPredictor(model, env)


def for_play(policy: Any, env: Any = None) -> Any:
    """:func:`play_predictor` for an SB3 model (``EvalPredictor(policy)`` without an env),
    anything else (a heuristic) as it is.

    Raises:
        ValueError: a residual model without the env it plays in.
    """
    from stable_baselines3.common.base_class import BaseAlgorithm

    if not isinstance(policy, BaseAlgorithm):
        return policy
    if env is None:
        from agents.residual import is_residual

        if is_residual(policy):
            raise ValueError("for_play: a residual model needs the env it plays in")
        return EvalPredictor(policy)
    return play_predictor(policy, env)
