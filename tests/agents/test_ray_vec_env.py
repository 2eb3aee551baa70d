"""``RayVecEnv`` steps exactly as ``DummyVecEnv`` for the same seeds, and trains."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'gpushare-env[ray]')")
pytest.importorskip("sb3_contrib")

from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from agents.envs import SeededEpisodes, make_env_fn  # noqa: E402
from agents.ray_vec_env import RayVecEnv  # noqa: E402

CONFIG = {"cluster": "tiny", "workload": "thesis", "num_jobs": 6}


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _fns() -> list[Any]:
    return [make_env_fn(CONFIG, [0, 1, 2], stream_seed=i, reward_scale=0.5) for i in range(2)]


def _assert_same(a: Any, b: Any, where: str = "") -> None:
    """Equal values, arrays element by element (NaN equal to NaN), dicts key by key."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=where)
        assert np.asarray(a).dtype == np.asarray(b).dtype, where
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, where


def test_ray_actors_step_as_dummy_vec_env(local_ray: None) -> None:
    dummy, remote = DummyVecEnv(_fns()), RayVecEnv(_fns())
    try:
        assert remote.observation_space == dummy.observation_space
        assert remote.action_space == dummy.action_space
        for vec in (dummy, remote):
            vec.seed(3)
        _assert_same(remote.reset(), dummy.reset(), "reset")
        _assert_same(remote.reset_infos, dummy.reset_infos, "reset_infos")
        rng = np.random.default_rng(0)
        episodes_done = 0
        for step in range(400):
            masks = np.stack(dummy.env_method("action_masks"))
            _assert_same(np.stack(remote.env_method("action_masks")), masks, f"mask {step}")
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            got, want = remote.step(actions), dummy.step(actions)
            _assert_same(list(got), list(want), f"step {step}")
            episodes_done += int(want[2].sum())
            if episodes_done >= 3:
                break
        assert episodes_done >= 3  # episode ends, terminal observations and resets compared
        _assert_same(remote.reset_infos, dummy.reset_infos, "reset_infos after")
        assert remote.get_attr("reward_scale") == [0.5, 0.5]
        remote.set_attr("reward_scale", 2.0, indices=[1])
        assert remote.get_attr("reward_scale") == [0.5, 2.0]
        assert remote.env_is_wrapped(SeededEpisodes) == [True, True]
    finally:
        dummy.close()
        remote.close()


def test_maskable_ppo_trains_on_ray_actors(local_ray: None) -> None:
    from sb3_contrib import MaskablePPO

    vec = RayVecEnv(_fns())
    try:
        model = MaskablePPO("MultiInputPolicy", vec, n_steps=16, batch_size=16, seed=0)
        model.learn(32)
        assert model.num_timesteps >= 32
    finally:
        vec.close()


def test_vec_env_ray_is_a_training_option(local_ray: None) -> None:
    from stable_baselines3.common.vec_env import VecMonitor

    from agents.envs import make_vec_env
    from gpushare_eval.cli.train import build_parser, config_from_args

    config = config_from_args(build_parser().parse_args(["--vec-env", "ray", "--n-envs", "2"]))
    assert config.envs.vec_env == "ray"
    vec = make_vec_env([CONFIG], [0, 1], n_envs=2, seed=0, ray=True)
    try:
        assert isinstance(vec, VecMonitor) and isinstance(vec.venv, RayVecEnv)
        assert vec.reset()["pending"].shape[0] == 2
    finally:
        vec.close()
