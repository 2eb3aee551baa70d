"""Training on ``GPUShare-v0`` with RLlib's PPO and the action mask, for RLlib users.

RLlib's action-masking RLModule (``ray.rllib.examples.rl_modules.classes.
action_masking_rlm.ActionMaskingTorchRLModule``, from Ray's example
``rllib/examples/rl_modules/action_masking_rl_module.py``) reads a ``Dict`` observation
of two keys: ``"observations"`` (what the policy sees) and ``"action_mask"`` (1 for a
valid action). :class:`RllibMasked` turns the env into that shape: the env's ``Dict``
observation flattened to one ``Box``, its ``action_masks()`` as floats. Masked logits
are ``-inf``-like, so PPO never samples an invalid action.

Example (needs ``pip install 'gpushare-env[rllib]'``, which the ``dev`` extra includes; not in
the ``ray`` extra, since RLlib pins its own gymnasium and brings pandas and pyarrow)::

    from agents.rllib import ppo_config
    algo = ppo_config({"cluster": "tiny", "num_jobs": 20}).build_algo()
    for _ in range(10):
        result = algo.train()
    print(result["env_runners"]["episode_return_mean"])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

__all__ = ["RllibMasked", "make_rllib_env", "ppo_config"]


class RllibMasked(gym.ObservationWrapper[Any, Any, Any]):
    """``{"observations": flat Box, "action_mask": Box(0, 1, (A,))}`` observations.

    Args:
        env: A ``GPUShare-v0`` env (``Discrete`` actions, ``action_masks()``).
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        n = int(env.action_space.n)  # type: ignore[attr-defined]
        flat: Any = gym.spaces.flatten_space(env.observation_space)  # a Box for a Dict of Boxes
        self.observation_space = gym.spaces.Dict(
            {
                "observations": gym.spaces.Box(flat.low, flat.high, dtype=np.float32),
                "action_mask": gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
            }
        )

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        """The env's observation flattened, with its mask."""
        mask = self.env.unwrapped.action_masks()  # type: ignore[attr-defined]
        flat = gym.spaces.flatten(self.env.observation_space, observation)
        return {
            "observations": np.asarray(flat, dtype=np.float32),
            "action_mask": np.asarray(mask, dtype=np.float32),
        }

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step with an int action (RLlib hands numpy scalars)."""
        return super().step(int(action))


def make_rllib_env(env_config: Mapping[str, Any]) -> gym.Env[Any, Any]:
    """The env RLlib builds on each env runner: ``GPUShare-v0`` with ``env_config``,
    wrapped in :class:`RllibMasked`."""
    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    env = gym.make("GPUShare-v0", config=dict(env_config), disable_env_checker=True)
    return RllibMasked(env)


def ppo_config(
    env_config: Mapping[str, Any],
    *,
    num_env_runners: int = 0,
    train_batch_size: int = 256,
    minibatch_size: int = 64,
    num_epochs: int = 2,
    seed: int = 0,
) -> Any:
    """An RLlib ``PPOConfig`` on ``GPUShare-v0`` with the action-masking RLModule.

    ``num_env_runners=0`` samples in the driver; more runners are Ray actors (a cluster
    spreads them). Build it with ``.build_algo()`` and call ``.train()``. The same
    ``seed`` gives the same metrics and weights when sampling in the driver (tested).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    register_env("GPUShare-v0-rllib", make_rllib_env)
    return (
        PPOConfig()
        .environment("GPUShare-v0-rllib", env_config=dict(env_config))
        .env_runners(num_env_runners=num_env_runners)
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={"head_fcnet_hiddens": [64, 64], "head_fcnet_activation": "relu"},
            )
        )
        .debugging(seed=seed)
    )
