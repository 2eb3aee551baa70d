"""``gpushare-bench`` and ``gpushare-train``: every bad option is a usage error.

Exit status 2, the usage line and ``prog: error: <the option and what is wrong>`` on
stderr, no traceback, and nothing run (each case would fail or run long otherwise).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpushare_eval.cli import benchmark

REPO = Path(__file__).resolve().parents[2]

BENCH_CASES = [
    (["--cluster", "bogus", "--jobs", "5"], "--cluster: unknown preset 'bogus'"),
    (["--policy", "bogus", "--jobs", "5"], "--policy: unknown policy 'bogus'"),
    (["--load", "-1"], "--load must be a finite number > 0, got -1.0"),
    (["--load", "nan"], "--load must be a finite number > 0, got nan"),
    (["--jobs", "0"], "--jobs must be >= 1"),
    (["--jobs", str(10**19)], "--jobs must be >= 1 and <= 10,000,000"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--env", "--steps", "0"], "--steps and --repeat must be >= 1"),
    (["--env", "--observe", "nonsense"], "--observe: unknown option(s) ['nonsense']"),
    (["--env", "--cluster", '{"nodes": -1}'], "--cluster: unknown preset"),
    (["--fork", "--steps", "30", "--forks", "11"], "--forks must be >= 1 and at most a third"),
    (["--fork", "--forks", "0"], "--forks must be >= 1 and at most a third of --steps"),
    (["--fork", "--observe", "nonsense"], "--observe: unknown option(s) ['nonsense']"),
    (["--train-loop", "--n-envs", "0"], "--n-envs, --rollout and --rollouts must be >= 1"),
    (["--train-loop", "--rollouts", "0"], "--n-envs, --rollout and --rollouts must be >= 1"),
    (["--train", "--timesteps", "0"], "--timesteps must be >= 1, got 0"),
]


@pytest.mark.parametrize(("argv", "words"), BENCH_CASES, ids=[" ".join(a) for a, _ in BENCH_CASES])
def test_gpushare_bench_refuses_a_bad_option_as_a_usage_error(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert benchmark.main(argv) == 2
    captured = capsys.readouterr()
    *usage, error = captured.err.splitlines()
    assert usage[0].startswith("usage: gpushare-bench")
    assert error.startswith("gpushare-bench: error: ") and words in error, error
    assert captured.out == "" and "Traceback" not in captured.err


def test_argparse_errors_of_both_commands_exit_2_without_a_traceback() -> None:
    for module, argv in (
        ("scripts.benchmark", ["--jobs", "many"]),
        ("scripts.train", ["--n-steps", "two"]),
    ):
        done = subprocess.run(
            [sys.executable, "-m", module, *argv],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr
        assert "invalid" in done.stderr and "Traceback" not in done.stderr


TRAIN_CASES = [
    (["--n-steps", "0"], "TrainConfig.algorithm.n_steps must be an int >= 1, got 0"),
    (["--learning-rate", "nan"], "TrainConfig.algorithm.learning_rate must be a finite number"),
    (["--gamma", "2"], "TrainConfig.algorithm.gamma must be a finite number >= 0 and <= 1"),
    (["--net-arch", "0,-3"], "TrainConfig.network.net_arch must be layer sizes"),
    (["--cluster", "bogus"], "EnvConfig.cluster: unknown preset 'bogus'"),
    (["--workload", "bogus"], "EnvConfig.workload: workload: 'bogus' is neither a preset"),
    (["--pending-window", "0"], "EnvConfig.windows.pending must be an int >= 1 and <= 1024"),
    (["--env", '{"bogus": 1}'], "EnvConfig: unknown key(s) ['bogus']"),
    (["--env", "[1]"], "argument --env: expected a JSON object"),
    (["--reward", "3"], "argument --reward: expected a JSON object"),
    (["--max-suspends-per-job", "-1"], "EnvConfig.limits.max_suspends_per_job must be None"),
    (["--train-seeds", "5-1"], "--train-seeds: empty range '5-1'"),
    (["--train-seeds", ""], "TrainConfig.envs.train_seeds must hold at least one seed"),
    (["--train-seeds", "0-99999999999"], "more than 1,000,000 seeds"),
    (["--reward-scale", "0"], "TrainConfig.envs.reward_scale must be a finite number > 0"),
    (["--dagger", "-1"], "TrainConfig.imitation.dagger_iterations must be an int >= 0"),
    (["--eval-every", "0"], "TrainConfig.evaluation.eval_every must be an int >= 1"),
    (["--teacher", "lookahead:budjet=10"], "bc_heuristic: policy 'lookahead': unknown param"),
    (["--teacher", "lookahead:budget=abc"], "lookahead: budget must be a number, got 'abc'"),
    (["--label-workers", "0"], "TrainConfig.imitation.label_workers must be an int >= 1"),
    (["--seed", "-1"], "TrainConfig.run.seed must be an int >= 0"),
    (["--seed", str(2**40)], "TrainConfig.run.seed must be <= 2**32 - 1"),
    (["--resume", "no/such/model.zip"], "--resume: no model file 'no/such/model.zip'"),
]


@pytest.mark.parametrize(("argv", "words"), TRAIN_CASES, ids=[" ".join(a) for a, _ in TRAIN_CASES])
def test_gpushare_train_refuses_a_bad_option_as_a_usage_error(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("stable_baselines3")
    from gpushare_eval.cli import train

    with pytest.raises(SystemExit) as caught:
        train.main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: gpushare-train") and "Traceback" not in err
    assert "gpushare-train: error: " in err and words in err, err


def test_gpushare_train_reads_a_trace_workload_before_building_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("stable_baselines3")
    from gpushare_eval.cli import train

    trace = tmp_path / "far.csv"
    trace.write_text("job_id,arrival_s,num_gpus,duration_s\n0,0,1,60\n1,1e308,1,60\n")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    for argv, words in (
        (["--cluster", "tiny", "--workload", str(trace)], "line 3, field 'arrival_s'"),
        (["--out", str(not_a_folder)], "is a file, not a folder"),
    ):
        with pytest.raises(SystemExit) as caught:
            train.main(argv)
        assert caught.value.code == 2
        assert words in capsys.readouterr().err
