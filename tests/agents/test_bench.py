"""The training benchmark (``gpushare-bench --train``) runs and prints one parseable line."""

from __future__ import annotations

import json

import pytest

from scripts.benchmark import main


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_train_benchmark_prints_one_json_line(
    vec_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--train", "--preset", "thesis", "--n-envs", "2", "--vec-env", vec_env]
    assert main([*argv, "--rollout", "128", "--rollouts", "1", "--extractor", "flat"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {"steps", "wall_s", "steps_per_s", "cpu_s"} <= set(record)
    assert record["steps"] == 128 and record["n_envs"] == 2 and record["vec_env"] == vec_env
    assert record["steps_per_s"] == pytest.approx(128 / record["wall_s"], rel=0.01)


def test_a_rollout_that_does_not_split_over_the_envs_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--train", "--n-envs", "3", "--rollout", "128"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "rollout (128) must be a multiple of n_envs (3)" in line
