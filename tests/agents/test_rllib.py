"""RLlib's PPO with the action mask on ``GPUShare-v0`` (``agents.rllib``).

The wrapper is tested always; the training needs RLlib (``pip install 'gpushare-env[rllib]'``,
part of the ``dev`` extra, so CI runs it) and skips, saying so, without it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from agents.rllib import make_rllib_env
from gpushare_env.envs import InvalidActionError

# invalid_action="raise": an action outside the mask raises instead of being a penalised
# no-op, so a training run that ends proves that no invalid action reached the env
CONFIG = {"cluster": "tiny", "workload": "thesis", "num_jobs": 6, "invalid_action": "raise"}
ITERATIONS = 3
BATCH = 64  # env steps per iteration; an episode here is about 65 steps


def test_the_wrapper_gives_rllib_s_masked_observation() -> None:
    env = make_rllib_env(CONFIG)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    masked_out = 0
    for _ in range(200):
        mask = obs["action_mask"]
        np.testing.assert_array_equal(mask, env.unwrapped.action_masks().astype(np.float32))
        masked_out += int((mask == 0).sum())
        action = np.int64(np.flatnonzero(mask)[0])  # RLlib hands numpy integers
        obs, _, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            break
    assert terminated or truncated
    assert masked_out > 0  # the mask rules actions out, so honouring it is not trivial


def test_an_action_outside_the_mask_raises() -> None:
    """What the training test relies on: the env refuses a masked-out action."""
    env = make_rllib_env(CONFIG)
    obs, _ = env.reset(seed=0)
    invalid = np.int64(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(InvalidActionError):
        env.step(invalid)


def _train(seed: int) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """``ITERATIONS`` PPO iterations sampled in the driver; each result's env-runner
    metrics and the final module weights."""
    from agents.rllib import ppo_config

    config = ppo_config(CONFIG, train_batch_size=BATCH, minibatch_size=32, num_epochs=1, seed=seed)
    algo = config.build_algo()
    try:
        metrics = [dict(algo.train()["env_runners"]) for _ in range(ITERATIONS)]
        weights = {k: np.asarray(v).copy() for k, v in algo.get_module().state_dict().items()}
    finally:
        algo.stop()
    return metrics, weights


@pytest.mark.slow
# RLlib registers its env wrapper with gymnasium at each build: harmless the second time
@pytest.mark.filterwarnings("ignore:.*Overriding environment rllib-single-agent-env")
def test_rllib_ppo_trains_with_the_mask_reproducibly() -> None:
    """A few iterations: no invalid action, finite episode metrics, and the same seed
    gives the same metrics and weights (one CPU, sampling in the driver)."""
    pytest.importorskip(
        "ray.rllib.algorithms.ppo",
        reason="RLlib is not installed: pip install 'gpushare-env[rllib]' (in the dev extra)",
    )
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        metrics, weights = _train(seed=0)
        again, weights_again = _train(seed=0)
    finally:
        ray.shutdown()
    last = metrics[-1]
    assert last["num_env_steps_sampled_lifetime"] == ITERATIONS * BATCH
    assert last.get("num_env_step_failures_lifetime", 0) == 0  # the env never raised
    assert last["num_episodes_lifetime"] >= 1
    for name in ("episode_return_mean", "episode_len_mean"):
        assert math.isfinite(last[name]), name
    assert last["episode_len_mean"] > 0
    keys = ("episode_return_mean", "episode_len_mean", "num_episodes_lifetime")
    assert [[m.get(k) for k in keys] for m in again] == [[m.get(k) for k in keys] for m in metrics]
    assert weights_again.keys() == weights.keys()
    for name, value in weights.items():
        np.testing.assert_array_equal(weights_again[name], value, err_msg=name)
