"""RLlib's PPO with the action mask on ``GPUShare-v0`` (``agents.rllib``).

The wrapper is tested always; the training only with RLlib installed
(``pip install 'ray[rllib]'``: not in CI's install, it pins its own gymnasium, pandas
and pyarrow).
"""

from __future__ import annotations

import numpy as np
import pytest

from agents.rllib import make_rllib_env

CONFIG = {"cluster": "tiny", "workload": "thesis", "num_jobs": 6}


def test_the_wrapper_gives_rllib_s_masked_observation() -> None:
    env = make_rllib_env(CONFIG)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for _ in range(200):
        mask = obs["action_mask"]
        np.testing.assert_array_equal(mask, env.unwrapped.action_masks().astype(np.float32))
        action = np.int64(np.flatnonzero(mask)[0])  # RLlib hands numpy integers
        obs, _, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    assert terminated or truncated


@pytest.mark.slow
def test_rllib_ppo_trains_with_the_mask() -> None:
    pytest.importorskip("ray.rllib.algorithms.ppo", reason="RLlib is not installed "
                        "(pip install 'ray[rllib]'); not part of CI's install")  # fmt: skip
    pytest.importorskip("pandas", reason="RLlib's dependencies are not installed")
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        from agents.rllib import ppo_config

        algo = ppo_config(CONFIG, train_batch_size=64, minibatch_size=32, num_epochs=1).build_algo()
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
        algo.stop()
    finally:
        ray.shutdown()
