"""The env benchmark (``gpushare-bench --env``) runs and prints one parseable JSON line."""

from __future__ import annotations

import json

import pytest

from gpushare_env.envs.bench import env_benchmark
from scripts.benchmark import main


def test_env_benchmark_figures() -> None:
    record = env_benchmark("tiny", 6, 300, 0, workload="thesis")
    assert record["steps"] == 300 and record["episodes"] >= 1
    assert record["wall_s"] > 0
    assert record["steps_per_s"] == pytest.approx(300 / record["wall_s"], rel=0.01)


def test_cli_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--env", "--cluster", "tiny", "--jobs", "8", "--steps", "200", "--seed", "1"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {"steps", "episodes", "wall_s", "steps_per_s"} <= set(record)
    assert record["steps"] == 200 and record["cluster"] == "tiny" and record["jobs"] == 8


def test_repeat_reports_the_median_run(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--env", "--cluster", "tiny", "--jobs", "8", "--steps", "100", "--repeat", "3"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out.strip())
    runs = record["runs_steps_per_cpu_s"]
    assert record["repeats"] == 3 and len(runs) == 3
    assert record["steps_per_cpu_s"] == sorted(runs)[1]
    assert record["steps"] == 100


def test_bad_repeat_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--env", "--repeat", "0"]) == 2
    assert "--repeat" in capsys.readouterr().err


def test_observe_options_reach_the_env(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--env", "--cluster", "tiny", "--jobs", "8", "--steps", "100"]
    assert main([*argv, "--observe", "rivals", "held_time"]) == 0
    record = json.loads(capsys.readouterr().out.strip())
    assert record["observe"] == ["held_time", "rivals"]
    assert main([*argv, "--observe", "nonsense"]) == 2
    assert "--observe: unknown option(s) ['nonsense']" in capsys.readouterr().err
