"""Training envs: every worker draws its episodes from the stream ``worker_seed`` names."""

from __future__ import annotations

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
