"""``GPUShare-v0`` under the MIG model: the observation part ``obs["mig"]`` (each GPU's
instances with room per profile and its unpartitioned slices), masks that know the
instances, a random policy that finishes on every MIG cluster preset, and the env's
refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import gpushare_env  # noqa: F401 - registers GPUShare-v0

STRATEGIES = ["exclusive", "pack", "spread", "min_frag", "mig_fit", "mig_largest"]


def _env(cluster: str, **config: object) -> gym.Env:
    return gym.make(
        "GPUShare-v0",
        config={"cluster": cluster, "sharing": "mig", "workload": "philly", "num_jobs": 40,
                "strategies": STRATEGIES, **config},
    )  # fmt: skip


@pytest.mark.parametrize("cluster", ["mig_tiny", "mig_medium", "miso"])
def test_a_random_policy_finishes_on_every_mig_preset(cluster: str) -> None:
    env = _env(cluster)
    obs, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    terminated = truncated = False
    while not (terminated or truncated):
        assert env.observation_space.contains(obs)
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, _, terminated, truncated, info = env.step(action)
    assert terminated and not truncated
    assert info["metrics"]["mean_jct_s"] > 0


def test_the_mig_part_shows_instances_with_room_and_unpartitioned_slices() -> None:
    env = _env("mig_tiny", num_jobs=4)
    obs, _ = env.reset(seed=0)
    columns = env.unwrapped._part_columns
    assert columns[-1] == "unpartitioned" and "free_7g.40gb" in columns
    table = obs["mig"].reshape(4, len(columns))
    whole = columns.index("free_7g.40gb")
    assert np.all(table[:, whole] == 1.0) and np.all(table[:, -1] == 0.0)
    sim = env.unwrapped._sim
    sim.repartition(0, [("3g.20gb", 4)])  # half of GPU 0 left unpartitioned
    table = env.unwrapped._observation()["mig"].reshape(4, len(columns))
    assert table[0, columns.index("free_3g.20gb")] == 0.5 and table[0, -1] == 0.5
    assert table[0, whole] == 0.0


def test_memory_and_shares_envs_have_no_mig_part() -> None:
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 4})
    assert "mig" not in env.observation_space.spaces


def test_an_env_without_mig_gpus_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"sharing 'mig': GPU 0 \(v100, 16 GiB\) has no MIG"):
        gym.make("GPUShare-v0", config={"cluster": "tiny", "sharing": "mig"}).reset(seed=0)


def test_the_env_plays_misos_scenario_to_the_end() -> None:
    env = gym.make(
        "GPUShare-v0",
        config={"cluster": "miso", "workload": "miso", "num_jobs": 100,
                "strategies": ["exclusive", "mig_fit", "mig_largest"]},
    )  # fmt: skip
    assert env.unwrapped.config.simulator.sharing == "mig"  # the workload's own model
    _, info = env.reset(seed=9)
    rng = np.random.default_rng(9)
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(
            int(rng.choice(np.flatnonzero(info["action_mask"])))
        )
        steps += 1
    assert terminated and info["metrics"]["mean_jct_s"] > 0 and steps >= 100
