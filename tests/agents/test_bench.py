"""The training benchmark (``gpushare-bench --train``) runs and prints one parseable line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpushare_eval.cli.benchmark import main


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_train_benchmark_prints_one_json_line(
    vec_env: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # SB3's default logger would make this folder (an SB3-<date> one in the temporary
    # directory without the variable): the benchmark logs nowhere
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))
    argv = [
        "--train-loop",
        "--preset",
        "thesis",
        "--n-envs",
        "2",
        "--vec-env",
        vec_env,
        "--no-reference",
    ]
    outer = time.perf_counter()
    assert main([*argv, "--rollout", "128", "--rollouts", "1", "--extractor", "flat"]) == 0
    outer = time.perf_counter() - outer
    assert not (tmp_path / "sb3").exists()
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {"steps", "wall_s", "steps_per_s", "cpu_s"} <= set(record)
    assert record["steps"] == 128 and record["n_envs"] == 2 and record["vec_env"] == vec_env
    # what it times lies within the call, by the test's own clock (wall_s rounded to the
    # millisecond, steps_per_s to 0.1)
    assert 0 < record["wall_s"] <= outer + 5e-4
    assert record["steps_per_s"] >= 128 / outer - 0.05


def test_a_rollout_that_does_not_split_over_the_envs_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--train-loop", "--n-envs", "3", "--rollout", "128"]) == 2
    *usage, line = capsys.readouterr().err.splitlines()
    assert usage[0].startswith("usage: gpushare-bench")
    assert line.startswith("gpushare-bench: error: ")
    assert "rollout (128) must be a multiple of n_envs (3)" in line


def test_further_training_settings_are_set_by_flat_key(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "--train-loop",
        "--preset",
        "thesis",
        "--n-envs",
        "2",
        "--rollout",
        "128",
        "--no-reference",
    ]
    settings = ["--set", "net_arch=[32,32]", "--set", "n_epochs=1", "--set", "batch_size=64"]
    assert main([*argv, "--rollouts", "1", "--extractor", "flat", *settings]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["net_arch"], record["n_epochs"], record["batch_size"]) == ([32, 32], 1, 64)


@pytest.mark.parametrize(
    ("setting", "message"),
    [("net_arch", "expected KEY=VALUE"), ("no_such_key=1", "no_such_key")],
)
def test_a_bad_setting_is_a_usage_error(
    setting: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--train-loop", "--set", setting]) == 2
    assert message in capsys.readouterr().err


def test_sb3_default_log_folder_is_the_suites_own_and_removed_afterwards() -> None:
    # tests/conftest.py: every learn() without tensorboard_log logs into one folder of the
    # suite's own, removed at the end, instead of leaving an SB3-<date> folder each time
    import os
    import tempfile

    from stable_baselines3.common.logger import configure

    folder = Path(configure(format_strings=[""]).dir)
    assert folder == Path(os.environ["SB3_LOGDIR"])
    assert folder.parent == Path(tempfile.gettempdir())
    assert folder.name.startswith("gpushare-tests-sb3-")


def test_the_cartpole_yardstick_runs_in_the_same_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--train-loop", "--preset", "thesis", "--n-envs", "2", "--rollout", "128"]
    assert main([*argv, "--rollouts", "1", "--extractor", "flat"]) == 0
    record = json.loads(capsys.readouterr().out)
    cartpole = record["cartpole"]
    assert (cartpole["env"], cartpole["algo"], cartpole["steps"]) == ("CartPole-v1", "ppo", 2048)
    assert cartpole["torch_threads"] == record["torch_threads"]
    assert record["ratio_to_cartpole"] == pytest.approx(
        record["steps_per_s"] / cartpole["steps_per_s"], rel=0.01
    )


def test_vec_env_mode_times_each_vec_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # gpushare-bench --vec-envs (Ray's start-up is left out here: DummyVecEnv and
    # SubprocVecEnv only)
    from gpushare_eval.cli import bench_distributed

    monkeypatch.setattr(bench_distributed, "VEC_ENVS", ("dummy", "subproc"))
    assert main(["--vec-envs", "--reps", "1", "--vec-steps", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert [(r["vec_env"], r["n_envs"]) for r in records] == [
        ("dummy", 2), ("subproc", 2), ("dummy", 4), ("subproc", 4)
    ]  # fmt: skip
    assert all(r["steps_per_s"] > 0 for r in records)
    assert "| 4 | `subproc` |" in "\n".join(lines)
    assert main(["--vec-envs", "--reps", "0"]) == 2


_TINY_RUN = (
    "--cluster tiny --workload thesis --num-jobs 8 --n-envs 2 --n-steps 32 --batch-size 32 "
    "--n-epochs 1 --train-seeds 0-3 --eval-seeds 500 --eval-every 64"
)


@pytest.mark.slow
def test_train_mode_times_whole_runs_beside_whole_cartpole_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--train", "--preset", "thesis", "--timesteps", "128", "--repeat", "2"]
    outer = time.perf_counter()
    assert main([*argv, "--train-options", _TINY_RUN]) == 0
    outer = time.perf_counter() - outer
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record["mode"] == "train" and record["timesteps"] == 128 and record["repeat"] == 2
    assert len(record["runs"]) == 2 and len(record["cartpole"]["runs_wall_s"]) == 2
    run = record["runs"][0]
    assert run["evaluations"] == 3  # at the start, at 64 steps, at the end
    assert 0 < run["seconds"]["total"] < run["wall_s"]  # the process's own clock lies within
    # each wall is rounded to 0.01 s: four of them may sum up to 0.02 s over the true total
    walls = [r["wall_s"] for r in record["runs"]] + record["cartpole"]["runs_wall_s"]
    assert sum(walls) < outer + 0.005 * len(walls)
    ratios = [
        c / r["wall_s"]
        for c, r in zip(record["cartpole"]["runs_wall_s"], record["runs"], strict=True)
    ]
    assert record["ratio_to_cartpole"] == pytest.approx(
        sorted(ratios)[0] / 2 + sorted(ratios)[1] / 2, rel=0.01
    )
    assert captured.err.count("gpushare-train run") == 2 and captured.err.count("CartPole run") == 2


def test_train_mode_reports_a_run_that_fails(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--train", "--timesteps", "128", "--no-reference"]
    assert main([*argv, "--train-options", "--n-envs 0"]) == 1
    err = capsys.readouterr().err
    assert "gpushare_eval.cli.train" in err and "exited with 2" in err and "n_envs" in err
