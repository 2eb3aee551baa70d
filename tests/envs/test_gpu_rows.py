"""``gpu_rows`` (``windows.gpus``): ``obs["gpus"]`` padded with zero rows, nothing else moved."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gpushare_env  # noqa: F401


def test_padding_adds_zero_gpu_rows_and_changes_nothing_else() -> None:
    plain = gym.make("GPUShare-v0", config={"cluster": "thesis", "num_jobs": 20})
    padded = gym.make("GPUShare-v0", config={"cluster": "thesis", "num_jobs": 20, "gpu_rows": 64})
    assert padded.observation_space["gpus"].shape == (64 * 6,)
    assert padded.action_space == plain.action_space
    a, _ = plain.reset(seed=1)
    b, _ = padded.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(60):
        assert padded.observation_space.contains(b)
        assert np.array_equal(b["gpus"][: 16 * 6], a["gpus"])
        assert not b["gpus"][16 * 6 :].any()
        assert all(np.array_equal(a[key], b[key]) for key in a if key != "gpus")
        mask = plain.unwrapped.action_masks()
        assert np.array_equal(mask, padded.unwrapped.action_masks())
        action = int(rng.choice(np.flatnonzero(mask)))
        a, _, done, _, _ = plain.step(action)
        b, _, _, _, _ = padded.step(action)
        if done:
            break


def test_fewer_rows_than_gpus_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="gpu_rows=32 is fewer than the cluster's 64 GPUs"):
        gym.make("GPUShare-v0", config={"cluster": "medium", "gpu_rows": 32})
    with pytest.raises(ValueError, match=r"windows\.gpus must be None or an int"):
        gym.make("GPUShare-v0", config={"cluster": "medium", "gpu_rows": 0})
