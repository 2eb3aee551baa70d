"""SMDP (time-based) discounting: GAE with per-step factors, the callback, training wiring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback

from agents.envs import make_vec_env
from agents.smdp import SMDPDiscountCallback, SMDPRolloutBuffer, smdp_buffer_class
from agents.training import TrainConfig, build_model, env_configs, train
from gpushare_env.rollout import Step, rollout
from tests.agents.helpers import TINY_TRAINING

_OBS = spaces.Box(-1.0, 1.0, (2,), np.float32)
_ACT = spaces.Discrete(3)


def _fill(buffer: RolloutBuffer, rng: np.random.Generator, starts: np.ndarray, discounts=None):
    size, n_envs = starts.shape
    for t in range(size):
        if discounts is not None:
            buffer.next_discounts = discounts[t].astype(np.float32)  # type: ignore[attr-defined]
        buffer.add(
            rng.random((n_envs, 2), dtype=np.float32),
            rng.integers(0, 3, (n_envs, 1)),
            rng.normal(size=n_envs).astype(np.float32),
            starts[t],
            torch.as_tensor(rng.normal(size=n_envs).astype(np.float32)),
            torch.zeros(n_envs),
        )


def _gae(buffer_cls: type[RolloutBuffer], gamma: float, discounts=None) -> np.ndarray:
    size, n_envs = 12, 3
    starts = np.zeros((size, n_envs), dtype=np.float32)
    starts[0] = 1.0
    starts[5, 1] = starts[9, 2] = 1.0  # episodes end mid-rollout
    buffer = buffer_cls(size, _OBS, _ACT, device="cpu", gae_lambda=0.9, gamma=gamma, n_envs=n_envs)
    _fill(buffer, np.random.default_rng(0), starts, discounts)
    buffer.compute_returns_and_advantage(
        torch.as_tensor(np.array([0.5, -1.0, 2.0], dtype=np.float32)), np.array([0, 1, 0])
    )
    return np.concatenate([buffer.advantages, buffer.returns])


@pytest.mark.parametrize("gamma", [1.0, 0.9, 0.5])
def test_constant_discounts_give_sb3s_gae(gamma: float) -> None:
    discounts = np.full((12, 3), gamma)
    expected = _gae(RolloutBuffer, gamma)
    got = _gae(SMDPRolloutBuffer, 0.123, discounts)  # the buffer's own gamma is unused
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_per_step_discounts_change_the_advantages() -> None:
    discounts = np.random.default_rng(1).uniform(0.3, 1.0, (12, 3))
    got = _gae(SMDPRolloutBuffer, 1.0, discounts)
    assert not np.allclose(got, _gae(RolloutBuffer, 1.0))
    # steps not yet told their discount count 1: the default is "no time passed"
    np.testing.assert_allclose(_gae(SMDPRolloutBuffer, 0.5), _gae(RolloutBuffer, 1.0), rtol=1e-5)


def test_buffer_class_by_algorithm() -> None:
    assert smdp_buffer_class("maskable_ppo").__name__ == "SMDPMaskableDictRolloutBuffer"
    assert smdp_buffer_class("ppo", dict_observations=False) is SMDPRolloutBuffer
    with pytest.raises(ValueError, match="on-policy"):
        smdp_buffer_class("dqn")
    with pytest.raises(ValueError, match="time_constant_s"):
        SMDPDiscountCallback(0.0)


_TINY = {**TINY_TRAINING, "n_envs": 2, "vec_env": "dummy", "n_epochs": 1}


def test_config_checks_the_time_constant(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="time_constant_h"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), time_constant_h=0.0)
    with pytest.raises(ValueError, match="dqn"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), algo="dqn", time_constant_h=1.0)


class _Elapsed(BaseCallback):
    """Records each step's ``elapsed_s`` (runs before the buffer stores the step)."""

    def __init__(self) -> None:
        super().__init__()
        self.elapsed: list[list[float]] = []

    def _on_rollout_start(self) -> None:
        self.elapsed = []

    def _on_step(self) -> bool:
        self.elapsed.append([info["elapsed_s"] for info in self.locals["infos"]])
        return True


def test_training_discounts_each_step_by_its_elapsed_time(tmp_path: Path) -> None:
    tau_h = 0.05
    config = TrainConfig.from_any(**_TINY, out=str(tmp_path), time_constant_h=tau_h)
    vec = make_vec_env(
        env_configs(config), config.envs.train_seeds, config.envs.n_envs, config.run.seed
    )
    model = build_model(config, vec)
    assert type(model.rollout_buffer).__name__ == "SMDPMaskableDictRolloutBuffer"
    recorder = _Elapsed()
    model.learn(64 * 2, callback=[recorder, SMDPDiscountCallback(tau_h * 3600.0)])
    elapsed = np.array(recorder.elapsed)
    assert elapsed.shape == (64, 2) and (elapsed >= 0).all()
    expected = np.exp(-elapsed / (tau_h * 3600.0))
    np.testing.assert_allclose(model.rollout_buffer.step_discounts, expected, rtol=1e-6)
    # both kinds of step occur: decisions at one instant and steps that let time run
    assert (elapsed == 0).any() and (elapsed > 0).any()
    vec.close()


def test_without_the_callback_training_refuses(tmp_path: Path) -> None:
    config = TrainConfig.from_any(**_TINY, out=str(tmp_path), time_constant_h=None)
    vec = make_vec_env(
        env_configs(config), config.envs.train_seeds, config.envs.n_envs, config.run.seed
    )
    model = build_model(config, vec)  # an ordinary buffer
    with pytest.raises(TypeError, match="rollout_buffer_class"):
        model.learn(64, callback=SMDPDiscountCallback(3600.0))
    vec.close()


@pytest.mark.slow
def test_resuming_with_a_time_constant_switches_the_buffer(tmp_path: Path) -> None:
    first = train(
        TrainConfig.from_any(**_TINY, out=str(tmp_path / "a"), timesteps=128, time_constant_h=None)
    )
    resumed = train(
        TrainConfig.from_any(
            **_TINY, out=str(tmp_path / "b"), timesteps=128, resume=str(first), time_constant_h=1.0
        )
    )
    from agents.training import load_model

    model = load_model(resumed)
    assert model.gamma == 1.0  # only SB3's truncation bootstrap reads it
    assert model.rollout_buffer_class.__name__ == "SMDPMaskableDictRolloutBuffer"
    # and back: resuming without a time constant restores the per-decision discount
    again = train(
        TrainConfig.from_any(
            **_TINY,
            out=str(tmp_path / "c"),
            timesteps=128,
            resume=str(resumed),
            time_constant_h=None,
        )
    )
    model = load_model(again)
    assert model.gamma == 0.99
    assert model.rollout_buffer_class.__name__ == "MaskableDictRolloutBuffer"


def test_demonstration_returns_are_discounted_by_time() -> None:
    import baselines
    from agents.bc import collect_demonstrations
    from agents.envs import make_env

    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 6}
    tau = 1800.0
    demos = collect_demonstrations([config], [3], "thesis", reward_scale=0.5, time_constant_s=tau)
    # the same episode by hand: rewards and sojourn times of the heuristic's steps
    env = make_env(config)
    steps: list[Step] = []
    rollout(baselines.make("thesis", env), env, seed=3, callback=steps.append)
    rewards = [0.5 * step.reward for step in steps]
    elapsed = [step.info["elapsed_s"] for step in steps]
    expected, running = [], 0.0
    for r, dt in zip(reversed(rewards), reversed(elapsed), strict=True):
        running = r + np.exp(-dt / tau) * running
        expected.append(running)
    np.testing.assert_allclose(demos.returns, expected[::-1], rtol=1e-5)
    per_decision = collect_demonstrations([config], [3], "thesis", gamma=0.99, reward_scale=0.5)
    assert not np.allclose(per_decision.returns, demos.returns)
