"""Playing a saved pointer agent on another cluster and with other windows.

An observation of ``GPUShare-v0`` has one row per GPU and one per window slot, so its
shape, and SB3's check of it, ties a saved model to the cluster and windows it was trained
on. The pointer policies (:mod:`agents.policies`) are not tied to them: the GPU, pending
and running tables are pooled by row encoders shared by every row, the slots scored by
heads shared by every slot, so no weight of the actor depends on the number of GPUs or the
windows. Only the value MLP's first layer does, when it reads every slot's code (the
default ``critic="features"``); with ``critic="context"`` nothing does.

:func:`rebound_policy` builds the same policy for another env's spaces and loads the saved
weights into it: every weight whenever their shapes allow, and, for playing only, all but
that first value layer (the critic plays no part in choosing actions). The column layout
of each row (the observation options) must be the one the model was trained with.

What transfers is the network, not its competence: the per-row features are normalised by
the cluster (a job's GPUs by the cluster's, a GPU's node index by the node count), and a
policy has seen only the queues and loads of its training; docs/training.md says where
the shipped models stop transferring.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from agents.policies import STRATEGIES_PER_SLOT, SlotHead

__all__ = ["PLAY_ONLY_PARAMETERS", "NotPortableError", "rebound_policy"]

#: Parameters that may be left out of a policy rebound for playing: the weight of the
#: value MLP's first layer, sized by the windows when it reads every slot's code.
PLAY_ONLY_PARAMETERS: tuple[str, ...] = ("mlp_extractor.value_net.0.weight",)


class NotPortableError(ValueError):
    """A saved policy that cannot run with the spaces asked for, and why."""


def _same_spaces(policy: Any, observation_space: gym.Space, action_space: gym.Space) -> bool:
    return bool(
        policy.observation_space == observation_space and policy.action_space == action_space
    )


def rebound_policy(
    policy: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    *,
    for_training: bool = False,
) -> Any:
    """``policy`` built for ``observation_space`` / ``action_space``, with its weights.

    Args:
        policy: A loaded model's policy (``model.policy``).
        observation_space: The env's observation space.
        action_space: The env's action space.
        for_training: Every weight must carry over (the critic too), not only the actor's.

    Returns:
        ``policy`` itself if the spaces are its own, else a new policy of its class in
        evaluation mode.

    Raises:
        NotPortableError: The policy is not a pointer policy, the spaces are not
            ``GPUShare-v0``'s with the same row columns, or (``for_training``) the critic
            depends on the windows.
    """
    if _same_spaces(policy, observation_space, action_space):
        return policy
    if not isinstance(getattr(policy, "mlp_extractor", None), SlotHead):
        raise NotPortableError(
            f"{type(policy).__name__} is not a pointer policy (--extractor pointer): its "
            "weights are sized by the cluster and the windows it was trained with"
        )
    kwargs = dict(policy._get_constructor_parameters())
    # every weight is overwritten below (but a play-only one): no orthogonal init, whose
    # QR of a value layer as wide as 2,048 slot codes takes seconds
    kwargs.update(observation_space=observation_space, action_space=action_space, ortho_init=False)
    try:
        rebound = type(policy)(**kwargs)
    except (ValueError, KeyError) as error:
        raise NotPortableError(
            "the env's rows do not fit the policy (other observation options than its "
            f"training's?): {error}"
        ) from None
    head: SlotHead = rebound.mlp_extractor
    expected = STRATEGIES_PER_SLOT * head.pending_window + head.running_window + 1
    if getattr(action_space, "n", None) != expected:
        raise NotPortableError(
            f"the env's action space {action_space} does not match its windows "
            f"({head.pending_window} pending, {head.running_window} running: {expected} actions)"
        )
    saved, fresh = policy.state_dict(), rebound.state_dict()
    differ = [name for name, value in saved.items() if fresh[name].shape != value.shape]
    left_out = [name for name in differ if name in PLAY_ONLY_PARAMETERS]
    wrong = [name for name in differ if name not in PLAY_ONLY_PARAMETERS]
    if wrong:
        raise NotPortableError(
            "the env's rows have other columns than the model's (other observation options "
            "than its training's?): "
            + ", ".join(f"{n} {tuple(saved[n].shape)} -> {tuple(fresh[n].shape)}" for n in wrong)
        )
    if left_out and for_training:
        raise NotPortableError(
            "its value MLP reads every slot's code, so its first layer is sized by the "
            "windows (train with --critic context for a model whose every weight transfers)"
        )
    with torch.no_grad():
        rebound.load_state_dict({**saved, **{name: fresh[name] for name in left_out}})
    rebound.set_training_mode(False)
    return rebound
