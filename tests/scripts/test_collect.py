"""``gpushare-collect`` writes Minari datasets that read back, rebuild their env and clone.

A small dataset (``thesis`` on the 4-GPU ``tiny`` cluster, 8 jobs, seeds 0-1) goes to a
temporary ``MINARI_DATASETS_PATH``; the test reads it back with Minari, rebuilds the env
with ``recover_environment()`` and replays the recorded actions from the recorded seeds
(the same observations, masks and rewards come out), checks every action against its
recorded mask, and clones it with ``gpushare-train --bc-dataset``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

if sys.version_info < (3, 11):  # pragma: no cover - Minari 0.5 needs Python 3.11
    pytest.skip("Minari needs Python >= 3.11", allow_module_level=True)
minari = pytest.importorskip("minari", reason="pip install 'gpushare-env[minari]' (dev has it)")

from agents.datasets import INFO_KEYS, demonstrations_from_dataset  # noqa: E402
from gpushare_eval.cli import collect  # noqa: E402

DATASET = "gpushare/tiny-thesis-v0"
SETUP = ["--cluster", "tiny", "--workload", "thesis", "--num-jobs", "8", "--quiet"]


@pytest.fixture
def datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary Minari folder holding ``DATASET`` (thesis, seeds 0-1)."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    code = collect.main(["--policy", "thesis", *SETUP, "--episodes", "2",
                         "--dataset-id", DATASET, "--author", "tests"])  # fmt: skip
    assert code == 0
    return tmp_path / "minari"


def test_dataset_reads_back_with_its_env_and_legal_actions(datasets: Path) -> None:
    dataset = minari.load_dataset(DATASET)
    assert dataset.total_episodes == 2
    assert dataset.storage.metadata["algorithm_name"] == "thesis"
    assert dataset.storage.metadata["author"] == {"tests"}
    spec = dataset.spec.env_spec
    assert spec.id == "GPUShare-v0"
    assert spec.kwargs["config"]["cluster"] == "tiny" and spec.kwargs["config"]["num_jobs"] == 8
    env = dataset.recover_environment()
    assert env.spec.kwargs == spec.kwargs
    for seed, episode in zip((0, 1), dataset.iterate_episodes(), strict=True):
        steps = len(episode.actions)
        assert set(episode.infos) == set(INFO_KEYS)
        masks = episode.infos["action_mask"]
        assert masks.dtype == bool and masks.shape == (steps + 1, env.action_space.n)
        actions = np.asarray(episode.actions)
        assert masks[np.arange(steps), actions].all(), "an action its recorded mask forbids"
        assert episode.terminations[-1] and not episode.truncations.any()
        # the recovered env, reset with the episode's seed and fed its actions, replays it
        observation, info = env.reset(seed=seed)
        np.testing.assert_array_equal(info["action_mask"], masks[0])
        for t in range(steps):
            for key, value in observation.items():
                np.testing.assert_array_equal(value, episode.observations[key][t], err_msg=key)
            observation, reward, terminated, _truncated, info = env.step(int(actions[t]))
            assert reward == pytest.approx(episode.rewards[t])
            np.testing.assert_array_equal(info["action_mask"], masks[t + 1])
            assert info["elapsed_s"] == pytest.approx(episode.infos["elapsed_s"][t + 1])
        assert terminated
    env.close()


def test_demonstrations_from_the_dataset(datasets: Path) -> None:
    dataset = minari.load_dataset(DATASET)
    demos = demonstrations_from_dataset(DATASET, gamma=0.5, reward_scale=2.0)
    assert len(demos) == dataset.total_steps and demos.episodes == 2
    first = next(dataset.iterate_episodes())
    steps = len(first.actions)
    np.testing.assert_array_equal(demos.actions[:steps], first.actions)
    np.testing.assert_array_equal(demos.masks[:steps], first.infos["action_mask"][:steps])
    # the last decision's return is its scaled reward; the one before adds half of it
    rewards = 2.0 * np.asarray(first.rewards, dtype=float)
    assert demos.returns[steps - 1] == pytest.approx(rewards[-1], rel=1e-6)
    assert demos.returns[steps - 2] == pytest.approx(rewards[-2] + 0.5 * rewards[-1], rel=1e-6)
    # a learner with other spaces is refused, naming the shapes
    env = dataset.recover_environment()
    other = env.observation_space
    from gymnasium import spaces

    wider = spaces.Dict({**other.spaces, "gpus": spaces.Box(0, 1, (48,), np.float32)})
    with pytest.raises(ValueError, match="not the learner's"):
        demonstrations_from_dataset(DATASET, observation_space=wider)
    with pytest.raises(ValueError, match="no local Minari dataset 'gpushare/none-v0'"):
        demonstrations_from_dataset("gpushare/none-v0")


def test_train_clones_from_the_dataset(datasets: Path, tmp_path: Path) -> None:
    from gpushare_eval.cli import train

    out = tmp_path / "run"
    code = train.main([
        "--cluster", "tiny", "--workload", "thesis", "--num-jobs", "8", "--n-envs", "1",
        "--n-steps", "64", "--batch-size", "32", "--train-seeds", "0-3", "--eval-seeds", "",
        "--timesteps", "0", "--bc-dataset", DATASET, "--bc-epochs", "6", "--no-progress",
        "--vec-env", "dummy", "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    record: dict[str, Any] = json.loads((out / "config.json").read_text())
    assert record["bc"]["dataset"] == DATASET and record["bc"]["seeds"] == []
    assert record["bc"]["decisions"] == minari.load_dataset(DATASET).total_steps
    history = record["bc"]["history"]
    assert history[-1]["policy_loss"] < history[0]["policy_loss"]
    assert (out / "bc_model.zip").is_file()


def test_a_saved_agent_plays_as_in_gpushare_evaluate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sb3_contrib")
    from agents import ZOO_DIR

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    model = ZOO_DIR / "maskable_ppo_bc_thesis.zip"
    code = collect.main(["--policy", str(model), "--preset", "thesis", "--workload", "thesis",
                         "--num-jobs", "6", "--seeds", "3", "--quiet",
                         "--dataset-id", "gpushare/agent-v0"])  # fmt: skip
    assert code == 0
    dataset = minari.load_dataset("gpushare/agent-v0")
    assert dataset.total_episodes == 1
    assert dataset.storage.metadata["algorithm_name"] == "maskable_ppo_bc_thesis"
    episode = next(dataset.iterate_episodes())
    masks = episode.infos["action_mask"]
    assert masks[np.arange(len(episode.actions)), episode.actions].all()


def test_bad_requests_fail_before_anything_is_written(
    datasets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the dataset exists: refused without --force, replaced with it
    assert collect.main(["--policy", "fifo", *SETUP, "--episodes", "1",
                         "--dataset-id", DATASET]) == 1  # fmt: skip
    assert "exists (--force replaces it)" in capsys.readouterr().err
    assert collect.main(["--policy", "fifo", *SETUP, "--episodes", "1", "--force",
                         "--dataset-id", DATASET]) == 0  # fmt: skip
    assert minari.load_dataset(DATASET).total_episodes == 1
    # the thesis preset has two workloads: a dataset holds one env
    assert collect.main(["--policy", "thesis", "--preset", "thesis", "--episodes", "1",
                         "--dataset-id", "gpushare/two-v0"]) == 2  # fmt: skip
    assert "one workload per dataset" in capsys.readouterr().err
    assert collect.main(["--policy", "nope", *SETUP, "--dataset-id", "gpushare/x-v0"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
    assert "gpushare/two-v0" not in minari.list_local_datasets()
