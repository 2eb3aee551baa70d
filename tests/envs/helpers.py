"""Shared helpers of the env tests: random masked actions and transcripts of episodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpushare_env.envs import GPUShareEnv
from gpushare_env.rollout import Step, rollout


def random_valid_action(info: dict[str, Any], rng: np.random.Generator) -> int:
    """A uniformly random valid action."""
    valid = np.flatnonzero(info["action_mask"])
    return int(valid[rng.integers(len(valid))])


class RandomValid:
    """A policy taking a uniformly random valid action (one ``rng.integers`` per step).

    Its ``predict`` takes ``action_masks``, so :func:`~gpushare_env.rollout.rollout` hands
    it the env's mask, as it does MaskablePPO.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        """A random action among ``action_masks``' valid ones."""
        assert action_masks is not None
        return np.asarray(random_valid_action({"action_mask": action_masks}, self.rng)), state


def transcript(
    env: GPUShareEnv, seed: int, steps: int, policy_seed: int = 0
) -> list[tuple[Any, ...]]:
    """Reset with ``seed`` and take up to ``steps`` random valid actions; the transcript:
    ``(obs, info)`` of the reset, then ``(action, obs, reward, terminated, truncated,
    info)`` per step."""
    taken: list[Step] = []
    policy = RandomValid(np.random.default_rng(policy_seed))
    episode = rollout(policy, env, seed=seed, max_steps=steps, callback=taken.append)
    assert taken, "no step taken"
    return [(taken[0].observation, episode.reset_info)] + [
        (s.action, s.next_observation, s.reward, s.terminated, s.truncated, s.info) for s in taken
    ]
