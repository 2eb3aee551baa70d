"""``agents.saved.algorithm_of`` and ``agents.load_model``: the algorithm comes from the
saved file itself, for the evaluation harness and training alike."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

import gymnasium as gym
from sb3_contrib import MaskablePPO
from stable_baselines3 import DQN, PPO

import gpushare_env  # noqa: F401
from agents import ZOO_DIR
from agents.saved import algorithm_of
from agents.training import load_model
from gpushare_eval.runs import agent_algorithm


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
    folder = tmp_path_factory.mktemp("saved")
    paths = {}
    for name, cls, kwargs in (
        ("maskable_ppo", MaskablePPO, {"n_steps": 32, "batch_size": 32}),
        ("ppo", PPO, {"n_steps": 32, "batch_size": 32}),
        ("dqn", DQN, {"buffer_size": 100, "learning_starts": 0}),
    ):
        model = cls("MultiInputPolicy", env, seed=0, device="cpu", **kwargs)
        # a name that says otherwise: only the file's content counts
        paths[name] = folder / f"{'dqn' if name != 'dqn' else 'maskable_ppo'}_{name}.zip"
        model.save(paths[name])
    return paths


def test_the_algorithm_is_read_from_the_file(saved: dict[str, Path]) -> None:
    names = {"maskable_ppo": "MaskablePPO", "ppo": "PPO", "dqn": "DQN"}
    for algo, path in saved.items():
        assert algorithm_of(path) == algo
        assert agent_algorithm(str(path)) == names[algo]
        assert type(load_model(path)).__name__ == names[algo]


def test_every_shipped_model_is_maskable_ppo() -> None:
    # five of them use the project's MaskableSlotPolicy, four sb3-contrib's own policy
    zips = sorted(ZOO_DIR.glob("*.zip"))
    assert zips
    assert {algorithm_of(path) for path in zips} == {"maskable_ppo"}


def test_a_file_that_is_not_a_model_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "notes.zip"
    bad.write_text("not a zip")
    with pytest.raises(ValueError, match=r"notes\.zip: not a stable-baselines3 model"):
        algorithm_of(bad)
    with pytest.raises(ValueError, match=r"missing\.zip: no such model file"):
        algorithm_of(tmp_path / "missing.zip")


def test_the_eval_predictor_acts_as_predict_does(saved: dict[str, Path]) -> None:
    # the same actions as SB3's predict, for the masked and the unmasked algorithms
    import numpy as np

    from agents.inference import EvalPredictor

    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
    for algo, path in saved.items():
        model = load_model(path)
        fast = EvalPredictor(model)
        obs, info = env.reset(seed=3)
        for _ in range(20):
            mask = info["action_mask"]
            if algo == "maskable_ppo":
                expected, _ = model.predict(obs, deterministic=True, action_masks=mask)
                got, _ = fast.predict(obs, deterministic=True, action_masks=mask)
            else:
                expected, _ = model.predict(obs, deterministic=True)
                got, _ = fast.predict(obs, deterministic=True, action_masks=mask)
            assert np.array_equal(got, expected), algo
            obs, _, terminated, truncated, info = env.step(int(got))
            if terminated or truncated:
                obs, info = env.reset(seed=4)
