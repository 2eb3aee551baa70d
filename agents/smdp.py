"""Time-based (SMDP) discounting for PPO on ``GPUShare-v0``.

The env is a semi-Markov decision process: several decisions may be taken at one
instant, and ``advance`` lets simulated time run to the next event, so the time between
two decisions ranges from zero to days. A discount per *decision* (SB3's ``gamma``)
then rewards behaviour that merely adds decisions: a suspend / resume pair pushes every
later cost two decisions further into the future, and so discounts it more, without
changing when anything happens. Discounting by *time* removes that incentive.

With a time constant ``tau``, a step that lets simulated time run by ``dt``
(``info["elapsed_s"]``) is discounted by ``exp(-dt / tau)``; decisions at the same
instant are not discounted against each other. GAE becomes

    delta_t = r_t + g_t * V(s_{t+1}) - V(s_t)
    A_t = delta_t + g_t * lambda * A_{t+1},     g_t = exp(-dt_t / tau)

(``lambda`` stays per decision: it trades bias for variance, it is not part of the
objective). ``SMDPDiscountCallback`` reads ``elapsed_s`` from the step's infos and hands
the factors to the rollout buffer before SB3 stores the step.

Limitation: SB3 bootstraps a *truncated* episode's last reward with its fixed ``gamma``
(``collect_rollouts``); training sets that ``gamma`` to 1, and with ``max_decisions``
high enough that episodes terminate (as the training presets do) it never applies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback

__all__ = ["SMDPDiscountCallback", "smdp_buffer_class"]


class _TimeDiscountMixin:
    """Per-step discount factors for a ``RolloutBuffer`` (see the module docstring)."""

    # attributes of the SB3 buffer this mixes into
    buffer_size: int
    n_envs: int
    pos: int
    gae_lambda: float
    rewards: np.ndarray
    values: np.ndarray
    episode_starts: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray

    def reset(self) -> None:
        #: discount of each stored step, and of the step about to be stored
        self.step_discounts = np.ones((self.buffer_size, self.n_envs), dtype=np.float32)
        self.next_discounts = np.ones(self.n_envs, dtype=np.float32)
        super().reset()  # type: ignore[misc]

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.step_discounts[self.pos] = self.next_discounts
        self.next_discounts = np.ones(self.n_envs, dtype=np.float32)
        super().add(*args, **kwargs)  # type: ignore[misc]

    def compute_returns_and_advantage(self, last_values: torch.Tensor, dones: np.ndarray) -> None:
        last = last_values.clone().cpu().numpy().flatten()
        advantage = np.zeros(self.n_envs, dtype=np.float32)
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                go_on = 1.0 - dones.astype(np.float32)
                next_values = last
            else:
                go_on = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            discount = self.step_discounts[step] * go_on
            delta = self.rewards[step] + discount * next_values - self.values[step]
            advantage = delta + discount * self.gae_lambda * advantage
            self.advantages[step] = advantage
        self.returns = self.advantages + self.values


class SMDPRolloutBuffer(_TimeDiscountMixin, RolloutBuffer):
    """``RolloutBuffer`` with per-step discounts."""


class SMDPDictRolloutBuffer(_TimeDiscountMixin, DictRolloutBuffer):
    """``DictRolloutBuffer`` with per-step discounts."""


class SMDPMaskableRolloutBuffer(_TimeDiscountMixin, MaskableRolloutBuffer):
    """``MaskableRolloutBuffer`` with per-step discounts."""


class SMDPMaskableDictRolloutBuffer(_TimeDiscountMixin, MaskableDictRolloutBuffer):
    """``MaskableDictRolloutBuffer`` with per-step discounts."""


_BUFFERS: dict[tuple[bool, bool], type[RolloutBuffer]] = {
    (False, False): SMDPRolloutBuffer,
    (False, True): SMDPDictRolloutBuffer,
    (True, False): SMDPMaskableRolloutBuffer,
    (True, True): SMDPMaskableDictRolloutBuffer,
}


def smdp_buffer_class(algo: str, dict_observations: bool = True) -> type[RolloutBuffer]:
    """The time-discounting rollout buffer for ``"maskable_ppo"`` or ``"ppo"``."""
    if algo not in ("maskable_ppo", "ppo"):
        raise ValueError(f"time discounting needs an on-policy algorithm (PPO), got {algo!r}")
    return _BUFFERS[(algo == "maskable_ppo", dict_observations)]


class SMDPDiscountCallback(BaseCallback):
    """Hand ``exp(-info["elapsed_s"] / time_constant_s)`` of each step to the rollout buffer.

    SB3 calls ``on_step`` after ``env.step`` and before it stores the step, so the
    factors land beside the step they belong to.

    Args:
        time_constant_s: ``tau`` in simulated seconds, > 0.
    """

    def __init__(self, time_constant_s: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        if not (math.isfinite(time_constant_s) and time_constant_s > 0):
            raise ValueError(f"time_constant_s must be a finite number > 0, got {time_constant_s}")
        self.time_constant_s = float(time_constant_s)

    def _on_training_start(self) -> None:
        buffer = getattr(self.model, "rollout_buffer", None)
        if not isinstance(buffer, _TimeDiscountMixin):
            raise TypeError(
                "SMDPDiscountCallback: the model's rollout buffer does not take per-step "
                "discounts; build the model with rollout_buffer_class=smdp_buffer_class(algo)"
            )

    def _on_step(self) -> bool:
        infos = self.locals["infos"]
        elapsed = np.array([info["elapsed_s"] for info in infos], dtype=np.float64)
        buffer: _TimeDiscountMixin = self.model.rollout_buffer  # type: ignore[attr-defined]
        buffer.next_discounts = np.exp(-elapsed / self.time_constant_s).astype(np.float32)
        return True
