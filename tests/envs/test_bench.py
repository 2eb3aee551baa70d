"""The env benchmark (``gpushare-bench --env``, and ``--fork`` beside it) runs and prints one
parseable JSON line."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from gpushare_env.envs.bench import env_benchmark
from gpushare_eval.cli.benchmark import main


def test_env_benchmark_counts_the_steps_it_takes_and_times_them_within_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the env's own steps and episode ends, counted beside the benchmark's counters
    from gpushare_env.envs import bench

    counted = {"steps": 0, "ends": 0, "terminated": 0}

    class CountingEnv(bench.GPUShareEnv):
        def step(self, action: Any) -> Any:
            result = super().step(action)
            counted["steps"] += 1
            counted["ends"] += bool(result[2] or result[3])
            counted["terminated"] += bool(result[2])
            return result

    monkeypatch.setattr(bench, "GPUShareEnv", CountingEnv)
    wall, cpu = time.perf_counter(), time.process_time()
    record = env_benchmark("tiny", 6, 300, 0, workload="thesis")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert record["steps"] == counted["steps"] == 300
    assert record["episodes"] == counted["ends"] >= 1  # 6 jobs take far fewer than 300 steps
    assert record["episodes_terminated"] == counted["terminated"]
    # what it times lies within the call, by the test's own clocks (rounded to 1e-6 s,
    # the rates to 0.1 step/s)
    assert 0 < record["wall_s"] <= wall + 1e-6 and 0 < record["cpu_s"] <= cpu + 1e-6
    assert record["steps_per_s"] >= 300 / wall - 0.05
    assert record["steps_per_cpu_s"] >= 300 / cpu - 0.05


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


def test_fork_mode_prints_one_json_line_with_its_keys(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--fork", "--cluster", "tiny", "--jobs", "8", "--steps", "300", "--forks", "20"]
    assert main([*argv, "--seed", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    keys = {"fork_us", "sim_fork_us", "belief_fork_us", "step_us", "fork_in_steps"}
    assert keys | {"sim_fork_in_steps", "belief_fork_in_steps", "step_mean_us"} <= set(record)
    assert record["mode"] == "fork" and record["steps"] == 300 and record["forks"] == 20
    assert all(record[key] > 0 for key in keys)
    assert record["fork_in_steps"] == round(record["fork_us"] / record["step_us"], 2)
    assert record["episodes"] >= 1  # 8 jobs take far fewer than 300 steps
    assert main([*argv, "--repeat", "2"]) == 0
    repeated = json.loads(capsys.readouterr().out.strip())
    assert repeated["repeats"] == 2 and len(repeated["runs_fork_in_steps"]) == 2
