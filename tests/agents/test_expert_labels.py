"""Labelling for imitation: ``lookahead`` as the teacher, labels in worker processes (the
same for any number), labels per second recorded, and each round's labels kept so that a
restarted run goes on from the first round not labelled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.bc import Demonstrations, load_demonstrations, save_demonstrations
from agents.training import TrainConfig, labels_dir, load_model
from gpushare_eval.cli.train import build_parser, config_from_args, main

pytest.importorskip("sb3_contrib")

#: Two cloned episodes and two DAgger rounds of two episodes on ``tiny``, no RL.
_RUN = [
    "--cluster", "tiny", "--workload", "thesis", "--num-jobs", "8", "--n-envs", "1",
    "--n-steps", "64", "--batch-size", "32", "--eval-seeds", "", "--train-seeds", "0-5",
    "--timesteps", "0", "--bc-warmstart", "2", "--bc-epochs", "1", "--dagger", "2",
    "--dagger-episodes", "2", "--dagger-epochs", "1", "--teacher", "lookahead:budget=10",
    "--env", '{"max_decisions": 300}', "--no-progress",
]  # fmt: skip

_ROUNDS = ("bc", "dagger_1", "dagger_2")


def _labels(out: Path) -> dict[str, Demonstrations]:
    return {name: load_demonstrations(out / "labels" / f"{name}.npz") for name in _ROUNDS}


def _same(a: Demonstrations, b: Demonstrations) -> bool:
    return (
        a.observations.keys() == b.observations.keys()
        and all(np.array_equal(a.observations[k], b.observations[k]) for k in a.observations)
        and np.array_equal(a.masks, b.masks)
        and np.array_equal(a.actions, b.actions)
        and np.array_equal(a.returns, b.returns)
        and a.episodes == b.episodes
        and np.allclose(a.mean_jct_s, b.mean_jct_s, equal_nan=True)
    )


def _params(path: Path) -> dict[str, torch.Tensor]:
    return dict(load_model(path).policy.state_dict())


@pytest.mark.slow
def test_lookahead_labels_the_same_in_one_or_two_workers_and_a_restart_resumes(
    tmp_path: Path,
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([*_RUN, "--out", str(one)]) == 0
    assert main([*_RUN, "--label-workers", "2", "--out", str(two)]) == 0
    first, second = _labels(one), _labels(two)
    for name in _ROUNDS:
        assert len(first[name]) > 0 and _same(first[name], second[name]), name
        labels = first[name]
        assert labels.masks[np.arange(len(labels)), labels.actions].all()  # valid labels
    record = json.loads((two / "config.json").read_text())
    assert record["train"]["bc_heuristic"] == "lookahead:budget=10"
    assert record["train"]["label_workers"] == 2
    bc = record["bc"]["labelling"]
    assert bc["labels"] == len(first["bc"]) and bc["labels_per_s"] > 0 and not bc["labels_loaded"]
    assert [r["labels"] for r in record["dagger"]] == [
        len(first["dagger_1"]),
        len(first["dagger_2"]),
    ]
    assert all(r["labels_per_s"] > 0 for r in record["dagger"])
    assert record["dagger_labelling"]["labels_per_s"] > 0
    # the same clone for any number of workers
    final = _params(one / "model.zip")
    assert all(torch.equal(final[k], v) for k, v in _params(two / "model.zip").items())

    # a run stopped after round 1's labels: the restart reads the cloned and round 1's
    # labels back, labels round 2 only, and ends with the same clone
    (one / "labels" / "dagger_2.npz").unlink()
    (one / "model.zip").unlink()
    assert main([*_RUN, "--out", str(one)]) == 0
    record = json.loads((one / "config.json").read_text())
    assert record["bc"]["labelling"]["labels_loaded"]
    assert [r["labels_loaded"] for r in record["dagger"]] == [1.0, 0.0]
    assert _same(_labels(one)["dagger_2"], second["dagger_2"])
    assert all(torch.equal(final[k], v) for k, v in _params(one / "model.zip").items())


def test_labels_are_kept_only_for_the_same_labelling_settings(tmp_path: Path) -> None:
    base = {"cluster": "tiny", "workloads": ("thesis",), "num_jobs": 8, "out": str(tmp_path)}
    config = TrainConfig.from_any(**base, bc_episodes=2, dagger_iterations=1)
    folder = labels_dir(config, [{"cluster": "tiny"}])
    (folder / "bc.npz").write_bytes(b"kept")
    # more DAgger rounds, more workers, other RL steps: the labels so far still hold
    for change in ({"dagger_iterations": 3}, {"label_workers": 2}, {"timesteps": 5}):
        again = TrainConfig.from_any(**base, bc_episodes=2, **{"dagger_iterations": 1, **change})
        assert labels_dir(again, [{"cluster": "tiny"}]) == folder
        assert (folder / "bc.npz").is_file(), change
    # another teacher: labelled afresh
    other = TrainConfig.from_any(**base, bc_episodes=2, bc_heuristic="lookahead:budget=5")
    labels_dir(other, [{"cluster": "tiny"}])
    assert not (folder / "bc.npz").exists()


def test_saved_labels_read_back_whole(tmp_path: Path) -> None:
    demos = Demonstrations(
        observations={"pending": np.arange(6, dtype=np.float32).reshape(3, 2)},
        masks=np.array([[True, False], [True, True], [False, True]]),
        actions=np.array([0, 1, 1], dtype=np.int64),
        returns=np.array([0.5, 0.25, 0.0], dtype=np.float32),
        episodes=2,
        mean_jct_s=[10.0, float("nan")],
    )
    path = tmp_path / "labels" / "bc.npz"
    save_demonstrations(demos, path)
    assert [p.name for p in path.parent.iterdir()] == ["bc.npz"]  # no partial file left
    back = load_demonstrations(path)
    assert _same(demos, back)
    assert back.actions.dtype == np.int64 and back.masks.dtype == bool


def test_teacher_is_the_documented_name_of_bc_teacher() -> None:
    base = ["--cluster", "tiny", "--workload", "thesis"]
    for flag in ("--teacher", "--bc-teacher"):
        args = build_parser().parse_args([*base, flag, "lookahead:budget=10"])
        assert config_from_args(args).imitation.bc_heuristic == "lookahead:budget=10"
    assert config_from_args(build_parser().parse_args(base)).imitation.label_workers == 1
    assert "--teacher HEURISTIC, --bc-teacher HEURISTIC" in build_parser().format_help()


class _FirstValid:
    """A driver that takes the first valid action (a stand-in for a network)."""

    def predict(self, observation, state=None, episode_start=None, deterministic=True,
                action_masks=None):  # fmt: skip
        return np.asarray(int(np.flatnonzero(action_masks)[0])), state


def test_with_proposals_lookahead_also_rolls_out_the_driver_s_action() -> None:
    from agents.bc import collect_demonstrations

    config = [{"cluster": "tiny2", "workload": "philly_heavy", "num_jobs": 30}]
    driver, seeds = _FirstValid(), [1, 2]
    plain = "lookahead:alternatives=[]:margin=0"  # its base (thesis) unless told more
    thesis = collect_demonstrations(config, seeds, "thesis", driver=driver)
    alone = collect_demonstrations(config, seeds, plain, driver=driver)
    proposed = collect_demonstrations(config, seeds, plain, driver=driver, propose=True)
    ignored = collect_demonstrations(config, seeds, "thesis", driver=driver, propose=True)
    # the same states (the driver plays); a teacher without suggest ignores proposals
    assert np.array_equal(proposed.masks, thesis.masks)
    assert np.array_equal(alone.actions, thesis.actions)
    assert np.array_equal(ignored.actions, thesis.actions)
    # each label is the base's or the driver's, and the driver's won somewhere
    first = np.array([int(np.flatnonzero(mask)[0]) for mask in proposed.masks])
    other = proposed.actions != thesis.actions
    assert other.any()
    assert np.array_equal(proposed.actions[other], first[other])


def test_the_shares_teacher_labels_the_envs_under_the_shares_model() -> None:
    from agents.train_config import env_configs, teachers

    openb = str(
        Path(__file__).parents[2]
        / "gpushare_env/workloads/data/alibaba_openb/openb_pod_list_default.csv"
    )
    config = TrainConfig.from_any(
        cluster="tiny", workloads=("thesis",), num_jobs=8, traces=(openb,), trace_jobs=50,
        bc_heuristic="lookahead", bc_trace_heuristic="thesis",
        bc_sharing_heuristic="shares=fifo_pack",
    )  # fmt: skip
    assert teachers(config, env_configs(config)) == ["lookahead", "fifo_pack"]
    without = TrainConfig.from_any(
        cluster="tiny", workloads=("thesis",), num_jobs=8, traces=(openb,), trace_jobs=50,
        bc_trace_heuristic="thesis",
    )  # fmt: skip
    assert teachers(without) == ["thesis", "thesis"]


def test_the_rounds_curve_replays_each_round_and_the_teacher(tmp_path: Path) -> None:
    from agents import rounds
    from agents.evaluation import run_episode
    from gpushare_eval.decision_speed import decision_speed

    out = tmp_path / "run"
    assert main([*_RUN, "--out", str(out)]) == 0
    assert rounds.main([str(out), "--seeds", "500,501"]) == 0
    curve = json.loads((out / "rounds.json").read_text())
    assert [r["round"] for r in curve["rounds"]] == [1, 2]  # not resumed: no round 0
    assert curve["teachers"] == ["lookahead:budget=10"] and curve["seeds"] == [500, 501]
    config = json.loads((out / "config.json").read_text())["env_configs"][0]
    thesis = [run_episode("thesis", config, s)["mean_jct_s"] for s in (500, 501)]
    second = load_model(out / "dagger_2.zip")
    played = [run_episode(second, config, s)["mean_jct_s"] for s in (500, 501)]
    assert curve["thesis_s"] == [thesis]
    assert curve["rounds"][1]["ratios"] == [[p / t for p, t in zip(played, thesis, strict=True)]]
    assert curve["rounds"][1]["worst"] == max(p / t for p, t in zip(played, thesis, strict=True))
    teacher = [run_episode("lookahead:budget=10", config, s)["mean_jct_s"] for s in (500, 501)]
    assert curve["teacher_s"] == [teacher]
    assert (out / "rounds.png").stat().st_size > 0
    # time per decision on the states the agent visits: every decision of its episode
    speed = decision_speed(out / "dagger_2.zip", "lookahead:budget=10", config, 500)
    assert speed["decisions"] == run_episode(second, config, 500)["decisions"]
    assert speed["agent_mean_ms"] > 0 and speed["teacher_mean_ms"] > 0
    assert speed["speedup_mean"] == pytest.approx(speed["teacher_mean_ms"] / speed["agent_mean_ms"])


def test_the_rounds_curve_names_a_folder_that_is_not_a_run(tmp_path: Path, capsys) -> None:
    from agents import rounds

    assert rounds.main([str(tmp_path)]) == 2
    assert "no run config" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value", ["fifo_pack", "gpu=fifo_pack", "shares=", "shares=no_such_policy"]
)
def test_a_bad_sharing_teacher_is_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(ValueError, match="bc_sharing_heuristic"):
        TrainConfig.from_any(cluster="tiny", bc_sharing_heuristic=value)
