"""Training envs: every worker draws its episodes from the stream ``worker_seed`` names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.envs import make_env_fn, make_vec_env
from gpushare_env.seeding import worker_seed

CONFIG = {"cluster": "tiny", "workload": "thesis", "num_jobs": 4}
SEEDS = list(range(30))


def _first_seed(stream: int) -> int:
    """The first episode seed a worker whose cycle is shuffled by ``stream`` plays."""
    return [int(s) for s in np.random.default_rng(stream).permutation(SEEDS)][-1]


@pytest.mark.parametrize("run_seed", [0, 5])
def test_workers_follow_worker_seed_whoever_seeds_them(run_seed: int) -> None:
    vec = make_vec_env([CONFIG], SEEDS, n_envs=3, seed=run_seed, subprocess=False)
    try:
        vec.reset()  # SB3 passes its own seeds to this first reset
        played = [info["episode_seed"] for info in vec.venv.reset_infos]  # under VecMonitor
    finally:
        vec.close()
    expected = [_first_seed(worker_seed(run_seed, i)) for i in range(3)]
    assert played == expected
    # a worker reset without a seed draws from the stream it was built with: the same
    alone = [make_env_fn(CONFIG, SEEDS, worker_seed(run_seed, i))() for i in range(3)]
    assert [env.reset()[1]["episode_seed"] for env in alone] == expected
    assert len(set(expected)) > 1  # the workers do not play in lock step


def test_in_process_vec_env_steps_as_dummy_vec_env_does() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.envs import InProcessVecEnv

    config = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 4}
    fns = [make_env_fn(config, [0, 1, 2], worker_seed(0, i)) for i in range(3)]
    ours, theirs = InProcessVecEnv(fns), DummyVecEnv(fns)
    ours.seed(0)
    theirs.seed(0)
    a, b = ours.reset(), theirs.reset()
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(200):
        masks = np.stack(ours.env_method("action_masks"))
        np.testing.assert_array_equal(masks, np.stack(theirs.env_method("action_masks")))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        ours.step_async(actions)
        theirs.step_async(actions)
        (a, ra, da, ia), (b, rb, db, ib) = ours.step_wait(), theirs.step_wait()
        for key in b:
            np.testing.assert_array_equal(a[key], b[key])
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(da, db)
        assert [sorted(i) for i in ia] == [sorted(i) for i in ib]
        for mine, theirs_info in zip(ia, ib, strict=True):
            if "terminal_observation" in theirs_info:
                episodes += 1
                for key, value in theirs_info["terminal_observation"].items():
                    np.testing.assert_array_equal(mine["terminal_observation"][key], value)
        # the observations handed out are copies: the next step does not change them
        kept = {key: value.copy() for key, value in a.items()}
        ours.step_async(actions * 0 + ours.envs[0].unwrapped.action_space.n - 1)
        theirs.step_async(actions * 0 + theirs.envs[0].unwrapped.action_space.n - 1)
        ours.step_wait(), theirs.step_wait()
        for key in kept:
            np.testing.assert_array_equal(a[key], kept[key])
    assert episodes >= 3  # episode ends and auto-resets were compared


def test_curriculum_grows_episodes_in_ten_stages_to_full() -> None:
    from agents.envs import SeededEpisodes, make_env

    env = SeededEpisodes(
        make_env({"cluster": "tiny", "num_jobs": 30}), [0, 1], 0, 1.0, (10, 30, 100)
    )
    sizes = []
    for steps in (0, 9, 10, 55, 99, 100, 500):
        env.steps = steps
        sizes.append(env.episode_jobs())
    assert sizes == [10, 10, 12, 20, 28, None, None]  # None: the env's own 30
    env.steps = 50
    _, info = env.reset()
    assert info["num_jobs"] == 20
    env.steps = 100
    _, info = env.reset()
    assert info["num_jobs"] == 30
    with pytest.raises(ValueError, match="curriculum"):
        SeededEpisodes(make_env({"cluster": "tiny"}), [0], 0, 1.0, (30, 30, 10))


def test_curriculum_config_is_checked(tmp_path: Path) -> None:
    from agents.training import TrainConfig
    from tests.agents.helpers import TINY_TRAINING

    base = {**TINY_TRAINING, "out": str(tmp_path)}
    with pytest.raises(ValueError, match=r"curriculum_jobs.*below num_jobs"):
        TrainConfig.from_any(**base, curriculum_jobs=8)  # num_jobs is 8
    with pytest.raises(ValueError, match="curriculum_jobs"):
        TrainConfig.from_any(**base, curriculum_jobs=0)
    with pytest.raises(ValueError, match="curriculum_steps"):
        TrainConfig.from_any(**base, curriculum_jobs=4, curriculum_steps=0)
    assert TrainConfig.from_any(**base, curriculum_jobs=4).envs.curriculum_jobs == 4
