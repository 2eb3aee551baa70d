"""Forks of ``GPUShare-v0`` (``env.unwrapped.fork()``).

The same actions on a fork and on its original give bit-identical observations, rewards,
``terminated`` / ``truncated``, infos and final ``info["metrics"]``, equal to those of a
fresh env reset on the same seed that took every action from the start; stepping one
never changes the other; a fork can itself be forked. Hypothesis draws the episodes
(``tests.forks.configs``: small presets, both sharing models, every interference model,
with the env's observation options), the instant of the fork (some where a job is
mid-sampling, suspending or resuming) and the random valid actions.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpushare_env.envs import GPUShareEnv
from tests.forks import (
    EVERY_STRATEGY,
    INSTANTS,
    assert_same,
    at_instant,
    configs,
    shares_of,
    sim_snapshot,
)
from tests.test_headless_matches_env import examples

#: Steps a drawn episode may take at most (the small ones take a few hundred).
MAX_STEPS = 1500

#: The env's options on top of an episode's settings: what it observes, its caps.
env_configs = st.tuples(
    configs,
    st.fixed_dictionaries(
        {
            "observe_held_time": st.booleans(),
            "observe_placement": st.booleans(),
            "observe_drain": st.booleans(),
            "observe_rivals": st.booleans(),
            "observe_cluster_summary": st.booleans(),
            "max_decisions": st.one_of(st.none(), st.integers(20, 200)),
        }
    ),
    st.booleans(),
).map(
    lambda drawn: {
        **drawn[0],
        **drawn[1],
        # FGD's rules (and their caches) or MIG's among the actions under their model
        **(
            {"strategies": list(EVERY_STRATEGY[drawn[0]["sharing"]])}
            if drawn[2] and drawn[0]["sharing"] in EVERY_STRATEGY
            else {}
        ),
    }
)


def random_action(info: dict[str, Any], rng: np.random.Generator) -> int:
    valid = np.flatnonzero(info["action_mask"])
    return int(valid[rng.integers(len(valid))])


def unwrapped(env: gym.Env[Any, Any]) -> GPUShareEnv:
    inner = env.unwrapped
    assert isinstance(inner, GPUShareEnv)
    return inner


def state(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """What an env holds between steps: its observation, its generator, its clock and
    whether it is over, and everything its simulator shows (``sim_snapshot``: the mask,
    ``now_s``, every job's state, the records, ...)."""
    inner = unwrapped(env)
    assert inner._sim is not None
    return {
        "observation": inner._observation(),
        "generator": inner.np_random.bit_generator.state,
        "clock": (inner._now_s, inner._over),
        "sim": sim_snapshot(inner._sim),
    }


class Episode:
    """A reference episode: a fresh env reset on ``seed`` takes random valid actions to
    the end; its actions, each step's output ``(obs, reward, terminated, truncated,
    info)`` and the instants its states were at (before each step)."""

    def __init__(self, config: dict[str, Any], seed: int, action_seed: int) -> None:
        self.config, self.seed = config, seed
        env = GPUShareEnv(config)
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(action_seed)
        self.actions: list[int] = []
        self.outputs: list[tuple[Any, ...]] = []
        self.instants: list[set[str]] = []
        self.start = state(env)
        while len(self.actions) < MAX_STEPS:
            assert env._sim is not None
            self.instants.append({name for name in INSTANTS if at_instant(env._sim, name)})
            action = random_action(info, rng)
            output = env.step(action)
            self.actions.append(action)
            self.outputs.append(output)
            info = output[4]
            if output[2] or output[3]:
                break
        self.end = state(env)

    def __len__(self) -> int:
        return len(self.actions)

    def played(self, count: int) -> gym.Env[Any, Any]:
        """A fresh env (``gym.make``: wrapped) reset on the seed, after ``count`` actions."""
        env = gym.make("GPUShare-v0", config=self.config)
        env.reset(seed=self.seed)
        for action in self.actions[:count]:
            env.step(action)
        return env

    def check(self, env: gym.Env[Any, Any], start: int, stop: int | None, what: str) -> None:
        """Take actions ``start:stop`` on ``env`` (at action ``start``): every output must be
        the reference's bit for bit; at the end, the whole state too."""
        stop = len(self) if stop is None else stop
        for i in range(start, stop):
            output = env.step(self.actions[i])
            assert_same(output, self.outputs[i], f"{what}: step {i}")
        if stop == len(self):
            assert "metrics" in self.outputs[-1][4] or len(self) == MAX_STEPS
            assert_same(state(env), self.end, f"{what} at the end")


def check_forks(episode: Episode, k: int, j: int) -> None:
    """Fork at step ``k`` and the fork at step ``j``: the original, the fork and the fork
    of the fork end the episode as the reference does."""
    original = episode.played(k)
    fork = unwrapped(original).fork()
    assert_same(state(fork), state(original), "the fork when taken")
    episode.check(fork, k, j, "the fork")
    fork_of_fork = fork.fork()
    assert_same(state(fork_of_fork), state(fork), "the fork of the fork when taken")
    episode.check(original, k, None, "the original")
    episode.check(fork, j, None, "the fork")
    episode.check(fork_of_fork, j, None, "the fork of the fork")


def two_points(episode: Episode, first: float, second: float) -> tuple[int, int]:
    assume(len(episode) > 0)
    k = min(int(first * len(episode)), len(episode) - 1)
    return k, k + int(second * (len(episode) - k))


@examples(20)
@given(
    config=env_configs, seed=st.integers(0, 10_000), action_seed=st.integers(0, 10_000),
    first=shares_of, second=shares_of,
)  # fmt: skip
def test_a_fork_steps_as_the_unforked_episode(
    config: dict[str, Any], seed: int, action_seed: int, first: float, second: float
) -> None:
    episode = Episode(config, seed, action_seed)
    k, j = two_points(episode, first, second)
    check_forks(episode, k, j)


@examples(15)
@given(
    config=env_configs, seed=st.integers(0, 10_000), instant=st.sampled_from(INSTANTS),
    pick=st.integers(0, 10**6), later=shares_of,
)  # fmt: skip
def test_a_fork_mid_sampling_suspension_or_resumption_steps_as_the_unforked_episode(
    config: dict[str, Any], seed: int, instant: str, pick: int, later: float
) -> None:
    episode = Episode({**config, "sample_iterations": 50}, seed, seed)
    at = [i for i, found in enumerate(episode.instants) if instant in found]
    assume(at)
    k = at[pick % len(at)]
    inner = unwrapped(episode.played(k))
    assert inner._sim is not None and at_instant(inner._sim, instant)
    check_forks(episode, k, k + int(later * (len(episode) - k)))


@examples(10)
@given(config=env_configs, seed=st.integers(0, 10_000), first=shares_of)
def test_stepping_a_fork_never_changes_its_original_nor_the_other_way(
    config: dict[str, Any], seed: int, first: float
) -> None:
    episode = Episode(config, seed, seed)
    k, _ = two_points(episode, first, 0.0)
    original = episode.played(k)
    fork = unwrapped(original).fork()
    before = state(original)
    rng = np.random.default_rng(seed + 1)  # other actions than the original's
    info = {"action_mask": unwrapped(fork)._sim.action_mask}  # type: ignore[union-attr]
    for _ in range(MAX_STEPS):
        *_, terminated, truncated, info = fork.step(random_action(info, rng))
        if terminated or truncated:
            break
    fork.np_random.random(8)  # its generator moves, not the original's
    assert_same(state(original), before, "the original after its fork played out")
    ended = state(fork)
    episode.check(original, k, None, "the original")
    assert_same(state(fork), ended, "the fork after its original played out")
    # a reset fork plays a new episode; its original's state stays
    fork.reset(seed=seed + 1)
    assert_same(state(original), episode.end, "the original after its fork was reset")


def test_a_fork_copies_the_generator() -> None:
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 5})
    env.reset(seed=3)
    fork = unwrapped(env).fork()
    assert fork.np_random is not unwrapped(env).np_random
    drawn = fork.np_random.random(4)
    assert np.array_equal(drawn, env.np_random.random(4))
    assert not np.array_equal(fork.np_random.random(4), drawn)


def test_a_fork_needs_an_episode_and_an_ended_fork_is_over() -> None:
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 3})
    with pytest.raises(RuntimeError, match=r"reset\(\) before fork\(\)"):
        env.fork()
    episode = Episode({"cluster": "tiny", "num_jobs": 3}, 0, 0)
    ended = unwrapped(episode.played(len(episode))).fork()
    with pytest.raises(RuntimeError, match="the episode is over"):
        ended.step(0)
    assert_same(state(ended), episode.end, "a fork of an ended episode")
