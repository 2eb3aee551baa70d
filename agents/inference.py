"""Playing a saved agent: SB3's ``predict`` without its per-call overhead.

SB3's ``predict`` puts the policy in evaluation mode at every call, walking every module of
the network (``nn.Module.train(False)``): on a 2,000-job trace that walk is about a quarter
of an agent episode's time. :class:`EvalPredictor` sets the mode once and then does what
``predict`` does: observation to tensor, the policy's ``_predict`` under ``no_grad``, the
action back to numpy. The networks here have no dropout or batch norm, so the mode changes
no output; the shipped models' replays (``tests/agents/test_zoo.py``) check that every
action is the same. For one observation of a masked pointer policy acting by kind
(``gpushare-train``'s default models, and its periodic evaluation) it goes further
(:func:`lean_actions`): the same tensor operations as SB3's masked distribution, without
building three ``Categorical`` objects per step, so the same probabilities to the bit.
Given the env it will play, a pointer agent trained on another cluster or with other
windows is rebound to it (:mod:`agents.portable`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3.common.preprocessing import preprocess_obs

from gpushare_env.rollout import takes_action_masks

__all__ = ["EvalPredictor", "for_play", "lean_actions", "play_predictor"]


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
        from agents.policies import MaskableSlotPolicy

        self._lean = (
            isinstance(self.policy, MaskableSlotPolicy)
            and self.policy.kind_mode
            and isinstance(self.policy.action_net, torch.nn.Identity)
            and isinstance(observation_shapes(self.policy), dict)
        )

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
        if self._lean and deterministic and action_masks is not None:
            actions = lean_actions(policy, observation, action_masks)
            if actions is not None:
                return actions.numpy().reshape(policy.action_space.shape), state
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


def observation_shapes(policy: Any) -> dict[str, tuple[int, ...]] | None:
    """The shape of each key of a policy's ``Dict`` observation space of ``float32``
    boxes (``None``: another space)."""
    import gymnasium as gym

    space = policy.observation_space
    if not isinstance(space, gym.spaces.Dict):
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for key, box in space.spaces.items():
        if not (isinstance(box, gym.spaces.Box) and box.dtype == np.float32):
            return None
        shapes[key] = tuple(box.shape)
    return shapes


def lean_actions(policy: Any, observation: Any, action_masks: Any) -> torch.Tensor | None:
    """The deterministic action of a masked pointer policy acting by kind, for one
    observation: ``policy._predict(obs, deterministic=True, action_masks=...)``'s value
    (``None`` if ``observation`` is not one ``Dict`` observation of its space).

    The same operations as SB3's path (``obs_to_tensor``, the features and the actor's
    logits, then ``MaskableCategorical``: the logits normalised, the masked ones set to
    -1e8, normalised again, softmax) on the same tensors, so the same probabilities to the
    bit and the same :func:`agents.policies.kind_mode` action; without the checks and the
    three distribution objects SB3 builds per call.  # (1,)
    """
    from agents.policies import kind_mode

    shapes = observation_shapes(policy)
    if shapes is None or not isinstance(observation, dict) or observation.keys() != shapes.keys():
        return None
    tensors: dict[str, torch.Tensor] = {}
    for key, shape in shapes.items():
        value = np.asarray(observation[key])
        if value.shape != shape:  # a batch of observations: SB3's own path
            return None
        tensors[key] = torch.as_tensor(value.reshape((1, *shape)))
    with torch.no_grad():
        inputs = preprocess_obs(tensors, policy.observation_space, policy.normalize_images)
        features = policy.pi_features_extractor(inputs)
        logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
        logits = logits.view(-1, policy.action_dist.action_dim)
        logits = logits - logits.logsumexp(dim=-1, keepdim=True)  # Categorical(logits=...)
        masks = torch.as_tensor(action_masks, dtype=torch.bool).reshape(logits.shape)
        masked = torch.where(masks, logits, torch.tensor(-1e8, dtype=logits.dtype))
        masked = masked - masked.logsumexp(dim=-1, keepdim=True)
        probs = torch.nn.functional.softmax(masked, dim=-1)
        head = policy.mlp_extractor
        return kind_mode(probs, head.pending_window, head.running_window)
