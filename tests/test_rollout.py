"""The one episode loop (``gpushare_env.rollout``) and the seeding rules it relies on."""

from __future__ import annotations

import itertools
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import baselines
import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.envs import GPUShareEnv
from gpushare_env.rollout import Step, predict_action, rollout, takes_action_masks
from gpushare_env.seeding import episode_streams, policy_seed, trace_generator
from gpushare_env.sim import Simulator, make_cluster
from gpushare_env.workloads import WorkloadConfig, fit_to_cluster

TINY = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 10}


class MaskedRandom:
    """A random valid action, from the mask ``predict`` is given (like MaskablePPO)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.masks: list[np.ndarray] = []

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, Any]:
        assert action_masks is not None
        self.masks.append(action_masks.copy())
        valid = np.flatnonzero(action_masks)
        return np.asarray(valid[self.rng.integers(len(valid))]), state


class AlwaysZero:
    """Action 0 whatever the state (no masks): invalid whenever slot 0 cannot be placed."""

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic=True
    ) -> tuple[np.ndarray, Any]:
        return np.zeros(1, dtype=np.int64), state  # shaped like a vectorised SB3 action


def _hand_written_loop(policy: Any, env: gym.Env, seed: int) -> tuple[list[int], float, dict, int]:
    """An episode loop written out: reset, then predict (with the masks when the policy
    takes them) and step until the episode ends."""
    obs, info = env.reset(seed=seed)
    actions, total, invalid = [], 0.0, 0
    terminated = truncated = False
    while not (terminated or truncated):
        if takes_action_masks(policy):
            action, _ = policy.predict(
                obs, deterministic=True, action_masks=env.unwrapped.action_masks()
            )
        else:
            action, _ = policy.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(int(action))
        total += float(reward)
        invalid += bool(info["invalid"])
    return actions, total, info, invalid


@pytest.mark.parametrize("name", ["thesis", "tiresias", "masked_random"])
def test_rollout_plays_the_same_episode_as_a_hand_written_loop(name: str) -> None:
    results = []
    for loop in ("hand_written", "rollout"):
        env = gym.make("GPUShare-v0", config=TINY)
        policy = MaskedRandom(3) if name == "masked_random" else baselines.make(name, env)
        if loop == "hand_written":
            actions, total, info, invalid = _hand_written_loop(policy, env, seed=4)
        else:
            steps: list[Step] = []
            episode = rollout(policy, env, seed=4, callback=steps.append)
            actions = [s.action for s in steps]
            total, info, invalid = episode.total_reward, episode.info, episode.invalid_actions
            assert episode.steps == len(actions) and episode.terminated and episode.done
            assert episode.metrics == info["metrics"] and episode.seed == 4
        results.append((actions, total, info["metrics"], invalid))
    assert results[0] == results[1]
    assert results[0][2]["num_jobs"] == 10


def test_the_callback_sees_every_step_once_in_order() -> None:
    env = GPUShareEnv(TINY)
    steps: list[Step] = []
    policy = MaskedRandom(0)
    episode = rollout(policy, env, seed=1, callback=steps.append)
    assert [s.index for s in steps] == list(range(episode.steps))
    assert episode.steps > 10
    for before, after in itertools.pairwise(steps):
        assert after.observation is before.next_observation
        assert not (before.terminated or before.truncated)
    assert steps[-1].terminated and steps[-1].info is episode.info
    assert sum(s.reward for s in steps) == pytest.approx(episode.total_reward)
    # the masks the policy was given are the ones the steps report, and each action fits
    assert all(np.array_equal(s.action_mask, m) for s, m in zip(steps, policy.masks, strict=True))
    assert all(s.action_mask is not None and s.action_mask[s.action] for s in steps)
    assert episode.suspends == int(episode.metrics["suspends"])


def test_the_env_cap_is_reported_as_truncation() -> None:
    env = GPUShareEnv({**TINY, "max_decisions": 7})
    episode = rollout(AlwaysZero(), env, seed=0)
    assert episode.truncated and not episode.terminated and episode.steps == 7
    assert episode.invalid_actions > 0  # slot 0 empty or full: a penalised no-op
    assert "metrics" in episode.info  # the env reports what finished


def test_max_steps_stops_an_unfinished_episode() -> None:
    env = GPUShareEnv(TINY)
    calls: list[int] = []
    episode = rollout(
        MaskedRandom(0), env, seed=1, max_steps=5, callback=lambda s: calls.append(s.index)
    )
    assert episode.steps == 5 and calls == [0, 1, 2, 3, 4]
    assert not episode.done and episode.metrics == {} and episode.suspends is None
    assert rollout(MaskedRandom(0), env, seed=1, max_steps=0).steps == 0


def test_masks_only_for_policies_that_take_them() -> None:
    env = gym.make("GPUShare-v0", config=TINY)
    heuristic = baselines.make("fifo", env)
    assert takes_action_masks(MaskedRandom(0)) and not takes_action_masks(heuristic)
    obs, info = env.reset(seed=0)
    mask = info["action_mask"]
    assert predict_action(heuristic, obs, mask) == predict_action(heuristic, obs)
    masked = MaskedRandom(0)
    action = predict_action(masked, obs, mask)
    assert mask[action] and masked.masks[0].tolist() == mask.tolist()
    assert predict_action(AlwaysZero(), obs, mask) == 0  # (1,)-shaped actions become ints


def test_a_wrapped_env_and_an_unseeded_reset() -> None:
    """Through a wrapper; ``seed=None`` continues the env's generator as ``reset()`` does."""
    env = gym.make("GPUShare-v0", config=TINY)
    twin = gym.make("GPUShare-v0", config=TINY)
    first = rollout(baselines.make("fifo_pack", env), env, seed=9)
    second = rollout(baselines.make("fifo_pack", env), env, seed=None)
    twin.reset(seed=9)
    twin.reset()
    jobs = [j.spec for j in env.unwrapped.simulator.jobs.values()]
    assert jobs == [j.spec for j in twin.unwrapped.simulator.jobs.values()]
    assert first.metrics != second.metrics and second.seed is None
    assert first.reset_info["rejected_jobs"] == 0


# ------------------------------------------------------------------------ seeding
@pytest.mark.parametrize("workload", ["thesis_poisson", "philly"])
def test_episode_streams_draw_what_reset_draws(workload: str) -> None:
    env = GPUShareEnv({"cluster": "tiny", "workload": workload, "num_jobs": 12})
    env.reset(seed=7)
    cluster = make_cluster("tiny")
    jobs_rng, noise_rng = episode_streams(7)
    jobs = WorkloadConfig.from_any(workload).generate(jobs_rng, num_jobs=12, cluster_gpus=4)
    fit = fit_to_cluster(jobs, cluster.num_gpus, float(cluster.gpu_memory_gib.max()))
    headless = Simulator(fit.jobs, cluster, rng=noise_rng)
    in_env = env.simulator
    assert [j.spec for j in in_env.jobs.values()] == [j.spec for j in headless.jobs.values()]
    assert [j.noise for j in in_env.jobs.values()] == [j.noise for j in headless.jobs.values()]


def test_trace_and_policy_seeds() -> None:
    assert trace_generator().random() == np.random.default_rng(0).random()
    assert policy_seed(np.int64(12)) == 12 and isinstance(policy_seed(np.int64(12)), int)
