"""``gpushare-evaluate`` end to end on tiny workloads: reproducibility, traces, bad arguments."""

from __future__ import annotations

import csv
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpushare_env.workloads import make_workload, write_csv_trace
from gpushare_eval.cli import evaluate
from gpushare_eval.plan import (
    agent_env_overrides,
    agent_recorded_rules,
    file_sha256,
    make_plan,
)
from gpushare_eval.report import RUN_COLUMNS
from gpushare_eval.runs import headless_setup
from gpushare_eval.specs import PolicySpec, RunSpec, WorkloadSpec

REPO = Path(__file__).resolve().parents[2]
# Heuristics with and without sharing plus the seeded random one: 3 x 2 x 2 = 12 runs.
TINY = ["--policies", "fifo", "fifo_pack", "random", "--num-jobs", "12", "--seeds", "0", "1"]
TINY += ["--workload", "thesis", "--workload", "thesis_poisson", "--cluster", "tiny"]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _without_wall(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in rows]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny command once, on one worker, with plots."""
    out = tmp_path_factory.mktemp("first")
    assert evaluate.main([*TINY, "--workers", "1", "--out", str(out), "--quiet"]) == 0
    return out


def test_runs_csv_has_the_documented_columns_and_one_row_per_run(first_run: Path) -> None:
    rows = _rows(first_run / "runs.csv")
    assert list(rows[0])[: len(RUN_COLUMNS)] == list(RUN_COLUMNS)
    keys = [(r["policy"], r["workload"], r["seed"]) for r in rows]
    assert keys == [
        (p, w, s)
        for p in ("fifo", "fifo_pack", "random")
        for w in ("thesis", "thesis_poisson")
        for s in ("0", "1")
    ]
    assert all(r["num_jobs"] == "12" and r["truncated"] == "0" for r in rows)
    assert all(float(r["wall_s"]) > 0 for r in rows)


def test_same_command_twice_gives_identical_results(first_run: Path, tmp_path: Path) -> None:
    argv = [*TINY, "--workers", "1", "--out", str(tmp_path), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 0
    first, again = _rows(first_run / "runs.csv"), _rows(tmp_path / "runs.csv")
    assert _without_wall(first) == _without_wall(again)
    assert [r["wall_s"] for r in first] != [r["wall_s"] for r in again]  # timing is real
    assert (first_run / "jobs.csv").read_text() == (tmp_path / "jobs.csv").read_text()
    assert json.loads((first_run / "summary.json").read_text()) == json.loads(
        (tmp_path / "summary.json").read_text()
    )


def test_two_workers_give_the_same_numbers_as_one(first_run: Path, tmp_path: Path) -> None:
    argv = [*TINY, "--workers", "2", "--out", str(tmp_path), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 0
    assert _without_wall(_rows(first_run / "runs.csv")) == _without_wall(
        _rows(tmp_path / "runs.csv")
    )
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["workers"] == 2


def test_outputs_summary_config_and_plots(first_run: Path) -> None:
    summary = json.loads((first_run / "summary.json").read_text())
    cell = summary["workloads"]["thesis"]["policies"]["fifo_pack"]["metrics"]["mean_jct_s"]
    jcts = [
        float(r["mean_jct_s"])
        for r in _rows(first_run / "runs.csv")
        if (r["policy"], r["workload"]) == ("fifo_pack", "thesis")
    ]
    assert cell["mean"] == pytest.approx(np.mean(jcts))
    assert cell["ratio_to_baseline"] is not None
    markdown = (first_run / "summary.md").read_text()
    assert "## Workload `thesis`" in markdown and "**" in markdown
    rules = "suspension rules, the same for every policy: at most 3 per job, no minimum service"
    assert rules in markdown
    plots = {p.name for p in (first_run / "plots").glob("*.png")}
    for workload in ("thesis", "thesis_poisson"):
        for kind in ("metrics", "jct_cdf", "utilisation"):
            assert f"{kind}_{workload}.png" in plots
        assert f"gantt_{workload}_fifo.png" in plots  # the baseline (no thesis here)
    assert all((first_run / "plots" / p).stat().st_size > 10_000 for p in plots)
    config = json.loads((first_run / "config.json").read_text())
    assert len(config["runs"]) == 12
    run = config["runs"][0]
    assert run["seed"] == 0 and run["reset"] == {"seed": 0}
    assert run["env_config"]["cluster"] == "tiny" and run["env_config"]["num_jobs"] == 12
    assert run["workload_resolved"]["kind"] == "thesis"
    assert run["policy_spec"]["params"] == {"seed": 0}


def test_one_run_reproduces_from_its_config_entry(first_run: Path, tmp_path: Path) -> None:
    config = json.loads((first_run / "config.json").read_text())
    entry = next(r for r in config["runs"] if r["policy"] == "random" and r["seed"] == 1)
    argv = shlex.split(entry["reproduce"])[1:]
    argv += ["--out", str(tmp_path), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 0
    (again,) = _without_wall(_rows(tmp_path / "runs.csv"))
    original = next(
        r
        for r in _without_wall(_rows(first_run / "runs.csv"))
        if (r["policy"], r["workload"], r["seed"]) == ("random", entry["workload"], "1")
    )
    assert again == original


def _write_trace(path: Path) -> list[int]:
    """A CSV trace of 9 jobs with scattered ids; returns the ids."""
    jobs = make_workload("thesis", np.random.default_rng(7), num_jobs=9, cluster_gpus=4)
    ids = [3, 5, 8, 13, 21, 34, 55, 89, 144]
    from dataclasses import replace

    write_csv_trace([replace(job, job_id=i) for job, i in zip(jobs, ids, strict=True)], path)
    return ids


def test_a_trace_gives_every_policy_exactly_its_jobs(tmp_path: Path) -> None:
    trace = tmp_path / "mine.csv"
    ids = _write_trace(trace)
    out = tmp_path / "out"
    argv = ["--trace", str(trace), "--cluster", "tiny", "--policies", "fifo", "fifo_pack"]
    argv += ["thesis", "--seeds", "0", "1", "--workers", "1", "--out", str(out), "--quiet"]
    argv += ["--no-plots"]
    assert evaluate.main(argv) == 0
    rows = _rows(out / "runs.csv")
    assert len(rows) == 6 and {r["workload"] for r in rows} == {"mine.csv"}
    assert all(r["num_jobs"] == "9" for r in rows)
    jobs = _rows(out / "jobs.csv")
    for policy in ("fifo", "fifo_pack", "thesis"):
        for seed in ("0", "1"):
            mine = [int(j["job_id"]) for j in jobs if (j["policy"], j["seed"]) == (policy, seed)]
            assert mine == ids, (policy, seed)
    config = json.loads((out / "config.json").read_text())
    assert config["runs"][0]["trace_sha256"] == file_sha256(trace)


def test_a_philly_json_trace_runs(tmp_path: Path) -> None:
    trace = tmp_path / "log.json"
    jobs = []
    for k in range(6):
        start = f"2017-10-03 0{k}:10:00"
        jobs.append(
            {
                "jobid": f"application_{k}",
                "status": "Pass",
                "submitted_time": f"2017-10-03 0{k}:00:00",
                "attempts": [
                    {
                        "start_time": start,
                        "end_time": f"2017-10-03 0{k}:40:00",
                        "detail": [{"ip": "m1", "gpus": ["gpu0"] * (1 + k % 2)}],
                    }
                ]
                if k != 4
                else [],  # no attempt: skipped by the reader
            }
        )
    trace.write_text(json.dumps(jobs))
    out = tmp_path / "out"
    argv = ["--trace", str(trace), "--cluster", "tiny", "--policies", "fifo", "fifo_pack"]
    argv += ["--seeds", "0", "--workers", "1", "--out", str(out), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 0
    rows = _rows(out / "runs.csv")
    assert [r["num_jobs"] for r in rows] == ["5", "5"]


def test_headless_runs_the_same_workload_as_the_env() -> None:
    import gymnasium as gym

    from gpushare_env.sim import Simulator

    for workload in ("thesis_poisson", "philly"):
        config = {"cluster": "tiny", "workload": workload, "num_jobs": 15}
        spec = RunSpec(
            index=0,
            policy=PolicySpec(label="fifo", name="fifo"),
            workload=WorkloadSpec(workload, workload, 15),
            seed=3,
            env_config=config,
            headless=True,
        )
        jobs, cluster, sim_config, noise_rng, _ = headless_setup(spec)
        headless = Simulator(jobs, cluster, sim_config, rng=noise_rng)
        env = gym.make("GPUShare-v0", config=config)
        env.reset(seed=3)
        in_env = env.unwrapped.simulator
        assert [j.spec for j in in_env.jobs.values()] == [j.spec for j in headless.jobs.values()]
        assert [j.noise for j in in_env.jobs.values()] == [j.noise for j in headless.jobs.values()]
        assert in_env.config == headless.config


def test_headless_runs_give_the_same_numbers_as_env_runs(tmp_path: Path) -> None:
    """Every baseline makes the same decisions headless (same windows) as in the env."""
    argv = ["--policies", "all", "--num-jobs", "15", "--seeds", "2", "--workers", "1"]
    argv += ["--workload", "thesis_poisson", "--cluster", "tiny", "--quiet"]
    assert evaluate.main([*argv, "--out", str(tmp_path / "env"), "--no-plots"]) == 0
    headless = [*argv, "--out", str(tmp_path / "headless"), "--headless", "--gantt", "fifo"]
    assert evaluate.main(headless) == 0
    in_env, alone = _rows(tmp_path / "env" / "runs.csv"), _rows(tmp_path / "headless" / "runs.csv")
    assert [r["mode"] for r in alone] == ["headless"] * 8
    skip = {"wall_s", "mode", "decisions"}
    for a, b in zip(in_env, alone, strict=True):
        assert {k: v for k, v in a.items() if k not in skip} == {
            k: v for k, v in b.items() if k not in skip
        }
    assert (tmp_path / "headless" / "plots" / "gantt_thesis_poisson_fifo.png").is_file()


def test_a_baseline_with_parameters_runs_under_its_own_label(tmp_path: Path) -> None:
    """``NAME:KEY=VALUE`` is a policy of its own: same runs as the keyword form."""
    variant = "tiresias:queue_thresholds_gpu_s=[60, 600]:promote_knob=0"
    argv = ["--policies", f"tiresias,{variant}", "--num-jobs", "15", "--seeds", "2"]
    argv += ["--workload", "thesis_poisson", "--cluster", "tiny", "--quiet", "--no-plots"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(tmp_path)]) == 0
    rows = _rows(tmp_path / "runs.csv")
    assert [r["policy"] for r in rows] == ["tiresias", variant]
    default, tuned = rows
    assert default["mean_jct_s"] != tuned["mean_jct_s"]  # the parameters took effect
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert variant in json.dumps(summary)
    runs = json.loads((tmp_path / "config.json").read_text())["runs"]
    assert runs[1]["policy_spec"]["params"] == {
        "seed": 2,  # the run's seed, as for every baseline
        "queue_thresholds_gpu_s": [60, 600],
        "promote_knob": 0,
    }


def test_variants_run_by_name_but_are_not_in_all(tmp_path: Path) -> None:
    """``gandiva_srpt`` and ``gandiva_critical_path`` (rule off: the same schedule) run."""
    off = "gandiva_critical_path:critical_path_factor=inf"
    argv = ["--policies", "gandiva", "gandiva_srpt", off, "--num-jobs", "15", "--seeds", "2"]
    argv += ["--workload", "thesis_poisson", "--cluster", "tiny", "--quiet", "--no-plots"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(tmp_path)]) == 0
    rows = _rows(tmp_path / "runs.csv")
    assert [r["policy"] for r in rows] == ["gandiva", "gandiva_srpt", off]
    assert rows[1]["mean_jct_s"] == rows[2]["mean_jct_s"]
    args = ["--policies", "all", "--num-jobs", "4", "--seeds", "0"]
    plan = evaluate.plan_from_args(evaluate.build_parser().parse_args(args))
    labels = [p.label for p in plan.policies if not p.is_agent]
    assert "gandiva" in labels and not set(labels) & {"gandiva_srpt", "gandiva_critical_path"}


def test_a_seed_in_the_name_wins_over_the_runs_seed(tmp_path: Path) -> None:
    argv = ["--policies", "random:seed=5", "--num-jobs", "6", "--seeds", "0", "1"]
    argv += ["--workload", "thesis", "--cluster", "tiny", "--quiet", "--no-plots"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "config.json").read_text())["runs"]
    assert [r["policy_spec"]["params"] for r in runs] == [{"seed": 5}, {"seed": 5}]


BAD_ARGUMENTS = {
    "unknown policy": ["--policies", "fifo", "nosuchpolicy"],
    "unknown parameter": ["--policies", "thesis:min_sped=0.5"],
    "bad parameter value": ["--policies", "thesis:min_speed=2"],
    "malformed parameters": ["--policies", "thesis:min_speed"],
    "old gandiva name": ["--policies", "gandiva:order=srpt"],
    "missing trace": ["--trace", "/no/such/trace.csv"],
    "negative seed": ["--seeds", "-1"],
    "bad seed": ["--seeds", "one"],
    "zero jobs": ["--num-jobs", "0"],
    "unknown cluster": ["--cluster", "huge"],
    "unknown workload": ["--workload", "nosuchworkload"],
    "missing model": ["--policies", "/no/such/model.zip"],
    "unknown option": ["--frobnicate"],
}


@pytest.mark.parametrize("argv", list(BAD_ARGUMENTS.values()), ids=list(BAD_ARGUMENTS))
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert evaluate.main([*argv, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpushare-evaluate: error: "), lines
    assert captured.out == ""
    assert not (tmp_path / "out").exists()


def test_a_malformed_trace_names_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("job_id,arrival_s,num_gpus,duration_s\n0,0,1,60\n1,5,two,60\n")
    assert evaluate.main(["--trace", str(trace), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "bad.csv" in line and "line 3" in line and "num_gpus" in line


def test_the_installed_command_fails_cleanly_in_a_fresh_process(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("job_id,arrival_s,num_gpus\n0,0,1\n")  # no duration_s column
    for argv in (["--seeds", "3", "-2"], ["--trace", str(trace)]):
        result = subprocess.run(
            [sys.executable, "-m", "scripts.evaluate", *argv],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.usefixtures("broken_fifo")
def test_a_crashing_policy_is_reported_and_the_others_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--policies", "fifo", "fifo_pack", "--num-jobs", "8", "--seeds", "0"]
    argv += ["--workload", "thesis", "--cluster", "tiny", "--workers", "1"]
    argv += ["--out", str(tmp_path), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 1
    assert [r["policy"] for r in _rows(tmp_path / "runs.csv")] == ["fifo_pack"]
    err = capsys.readouterr().err
    assert "1 run(s) failed (fifo/thesis/seed 0): RuntimeError: boom" in err
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["failed_runs"][0]["error"] == "RuntimeError: boom"


def test_the_default_plan_is_the_thesis_experiment() -> None:
    plan = evaluate.plan_from_args(evaluate.build_parser().parse_args([]))
    assert [w.label for w in plan.workloads] == ["thesis", "thesis_poisson"]
    assert plan.seeds == [0, 1, 2] and plan.cluster == "thesis"
    assert all(w.num_jobs == 100 for w in plan.workloads)
    baselines = [p.label for p in plan.policies if not p.is_agent]
    import baselines as registry

    assert baselines == registry.available()
    assert len(plan.runs) == len(plan.policies) * 2 * 3
    assert plan.out == Path("results") / "thesis"
    philly = evaluate.plan_from_args(evaluate.build_parser().parse_args(["--preset", "philly"]))
    assert philly.seeds == list(range(1000, 1010)) and philly.cluster == "medium"


def test_seed_syntax() -> None:
    assert evaluate.parse_seeds(["7,9", "0-3"]) == [0, 1, 2, 3, 7, 9]
    with pytest.raises(evaluate.UsageError, match=r"--seeds: seeds must be >= 0"):
        evaluate.parse_seeds(["-4"])
    with pytest.raises(evaluate.UsageError, match="--seeds: empty range"):
        evaluate.parse_seeds(["5-2"])
    with pytest.raises(evaluate.UsageError, match="--seeds: seed 2 is given twice"):
        evaluate.parse_seeds(["0-3", "2"])


@pytest.fixture(scope="module")
def tiny_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained MaskablePPO saved for the ``tiny`` cluster (loading is what is tested)."""
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import gpushare_env  # noqa: F401

    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=32, seed=0, device="cpu")
    path = tmp_path_factory.mktemp("agent") / "tiny_agent.zip"
    model.save(path)
    return path


def test_a_saved_agent_is_evaluated_with_masks(tiny_agent: Path, tmp_path: Path) -> None:
    # untrained, the agent may suspend and resume forever: a small cap ends such a run
    # (incomplete, which --allow-incomplete accepts)
    argv = ["--policies", "fifo", str(tiny_agent), "--num-jobs", "8", "--seeds", "0", "1"]
    argv += ["--workload", "thesis", "--cluster", "tiny", "--workers", "1"]
    argv += ["--out", str(tmp_path), "--quiet", "--no-plots", "--max-decisions", "300"]
    argv += ["--allow-incomplete"]
    assert evaluate.main(argv) == 0
    rows = _rows(tmp_path / "runs.csv")
    assert [r["policy"] for r in rows] == ["fifo", "fifo", "tiny_agent", "tiny_agent"]
    for row in rows:
        assert int(row["decisions"]) <= 300
        assert row["invalid_actions"] == "0"  # masked: never an invalid action
        assert row["status"] == "truncated_decisions" or row["num_jobs"] == "8"
    config = json.loads((tmp_path / "config.json").read_text())
    entry = next(r for r in config["runs"] if r["policy"] == "tiny_agent")
    assert entry["policy_spec"]["params"]["algorithm"] == "MaskablePPO"
    assert entry["policy_spec"]["params"]["sha256"] == file_sha256(tiny_agent)


def test_an_agent_for_another_cluster_is_a_usage_error(
    tiny_agent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--policies", str(tiny_agent), "--cluster", "thesis", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "observation space differs" in line


def test_trace_jobs_that_never_fit_are_counted(tmp_path: Path) -> None:
    trace = tmp_path / "big_job.csv"
    rows = ["job_id,arrival_s,num_gpus,duration_s", "0,0,1,600", "1,10,8,600", "2,20,2,600"]
    trace.write_text("\n".join(rows) + "\n")
    argv = ["--trace", str(trace), "--cluster", "tiny", "--policies", "fifo", "--seeds", "0"]
    argv += ["--workers", "1", "--out", str(tmp_path / "out"), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == 0
    (row,) = _rows(tmp_path / "out" / "runs.csv")
    assert (row["num_jobs"], row["rejected_jobs"]) == ("2", "1")  # 8 GPUs > tiny's 4
    assert "1 job(s) could never fit" in (tmp_path / "out" / "summary.md").read_text()


def test_agent_runs_with_the_keys_it_was_trained_with(tmp_path: Path) -> None:
    """Window sizes recorded beside a model reach its runs; the workload and cluster it
    was trained on do not (the evaluation decides those), nor the suspension rules (one
    set for every policy)."""
    model = tmp_path / "agent.zip"
    model.write_bytes(b"")
    recorded = {
        "env_config": {
            "pending_window": 8,
            "running_window": 4,
            "max_suspends_per_job": 5,
            "workload": "philly_heavy",
            "cluster": "medium",
        }
    }
    (tmp_path / "agent.json").write_text(json.dumps(recorded), encoding="utf-8")
    overrides = agent_env_overrides(model)
    assert overrides == {"pending_window": 8, "running_window": 4}
    assert agent_recorded_rules(model) == {"max_suspends_per_job": 5}


def test_an_agent_runs_under_the_evaluations_suspension_rules_and_the_notes_say_so(
    tiny_agent: Path, tmp_path: Path
) -> None:
    model = tmp_path / "agent.zip"
    model.write_bytes(tiny_agent.read_bytes())
    recorded = {"env_config": {"max_suspends_per_job": None, "time_scale_s": 60.0}}
    (tmp_path / "agent.json").write_text(json.dumps(recorded), encoding="utf-8")
    plan = make_plan(
        policies=["fifo", str(model)], cluster="tiny", workloads=["thesis"], num_jobs=8,
        seeds=[0], out=tmp_path / "out",
    )  # fmt: skip
    limits = {
        run.policy.label: (
            run.env_config.get("max_suspends_per_job", 3),
            run.env_config.get("time_scale_s", 3600.0),
        )
        for run in plan.runs
    }
    assert limits == {"fifo": (3, 3600.0), "agent": (3, 60.0)}  # its own time scale only
    assert any("agent runs with the env settings it was trained with: time_scale_s=60.0"
               in note for note in plan.notes)  # fmt: skip
    assert any("agent was trained under other suspension rules (max_suspends_per_job=None)"
               in note and "(max_suspends_per_job=3)" in note for note in plan.notes)  # fmt: skip


def test_the_summary_says_when_the_suspension_rules_differ_per_policy(tmp_path: Path) -> None:
    import dataclasses

    from gpushare_eval.outputs import _rules_line

    plan = make_plan(
        policies=["fifo", "thesis"], cluster="tiny", workloads=["thesis"], num_jobs=8,
        seeds=[0, 1], out=tmp_path,
    )  # fmt: skip
    assert _rules_line(plan) == (
        "- suspension rules, the same for every policy: at most 3 per job, no minimum "
        "service after a resume"
    )
    plan.runs = [
        dataclasses.replace(
            run, env_config={**run.env_config, "max_suspends_per_job": None, "min_service_s": 60}
        )
        if run.policy.label == "thesis"
        else run
        for run in plan.runs
    ]
    assert _rules_line(plan) == (
        "- **suspension rules differ per policy**: fifo: at most 3 per job, no minimum service "
        "after a resume; thesis: no budget, at least 60 s of computing after a resume"
    )


def test_agents_get_every_observation_option_they_were_trained_with(tmp_path: Path) -> None:
    from gpushare_env.envs.config import ObservationConfig, flat_keys

    options = list(flat_keys("observation"))
    assert len(options) == len(ObservationConfig.keys())
    assert len(options) >= 4
    model = tmp_path / "agent.zip"
    model.write_bytes(b"")
    recorded = {"env_config": {**dict.fromkeys(options, True), "workload": "philly_heavy"}}
    (tmp_path / "agent.json").write_text(json.dumps(recorded), encoding="utf-8")
    assert agent_env_overrides(model) == dict.fromkeys(options, True)


def test_a_headless_run_stopped_by_the_decision_cap_is_reported_truncated() -> None:
    from gpushare_eval.runs import execute_run

    def spec(**limits: int) -> RunSpec:
        config = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 15, **limits}
        return RunSpec(
            index=0,
            policy=PolicySpec(label="fifo", name="fifo"),
            workload=WorkloadSpec("thesis_poisson", "thesis_poisson", 15),
            seed=3,
            env_config=config,
            headless=True,
            record_gantt=True,
        )

    whole = execute_run(spec())
    assert whole.row["truncated"] == 0 and whole.row["status"] == "complete"
    assert whole.row["num_jobs"] == 15
    cap = int(whole.row["decisions"]) - 1  # the last decision is the one that finishes
    capped = execute_run(spec(max_decisions=cap))
    assert capped.row["truncated"] == 1 and capped.row["status"] == "truncated_decisions"
    assert capped.row["decisions"] == cap
    assert 0 < capped.row["num_jobs"] < 15
    assert capped.gantt is not None
