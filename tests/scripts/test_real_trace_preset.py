"""The real-trace benchmark: ``philly_vc`` presets, ``--cluster load=X``, and every policy
through the harness on excerpts of real Philly traces."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import baselines
from agents import ZOO_DIR
from gpushare_env.presets import EVALUATION_PRESETS, PHILLY_VC_LOAD
from gpushare_env.workloads import (
    PHILLY_VC_TRACES,
    offered_load,
    philly_vc_path,
    read_csv_trace,
    write_csv_trace,
)
from gpushare_eval.cli import evaluate
from gpushare_eval.plan import make_plan
from gpushare_eval.specs import PlanError

HEURISTICS = [*baselines.available(), *baselines.variants()]
ZOO = Path(ZOO_DIR)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def excerpts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The first 100 jobs of two real traces: wide (8 and 32 GPUs on a 32-GPU cluster)
    and mixed (1-16 GPUs)."""
    folder = tmp_path_factory.mktemp("excerpts")
    paths = []
    for name in ("2869ce", "ee9e8c"):
        path = folder / f"{name}_100.csv"
        write_csv_trace(read_csv_trace(philly_vc_path(name))[:100], path)
        paths.append(path)
    return paths


def test_philly_vc_preset_runs_every_shipped_trace_whole_on_a_sized_cluster() -> None:
    plan = make_plan(preset="philly_vc", policies=["fifo"], headless=True)
    assert [w.label for w in plan.workloads] == [f"{n}.csv" for n in PHILLY_VC_TRACES]
    assert plan.seeds == list(EVALUATION_PRESETS["philly_vc"].seeds)
    for workload in plan.workloads:
        jobs = read_csv_trace(philly_vc_path(workload.label))
        assert workload.num_jobs is None and workload.size == len(jobs)  # whole trace
        cluster = workload.cluster
        assert cluster is not None
        gpus = cluster["nodes"] * cluster["gpus_per_node"]
        widest = max(j.num_gpus for j in jobs)
        assert offered_load(jobs, gpus) <= PHILLY_VC_LOAD
        assert gpus >= widest
        runs = [r for r in plan.runs if r.workload.label == workload.label]
        assert {json.dumps(r.env_config["cluster"], sort_keys=True) for r in runs} == {
            json.dumps(cluster, sort_keys=True)
        }


def test_philly_vc_medium_keeps_the_64_gpu_cluster() -> None:
    plan = make_plan(preset="philly_vc_medium", policies=["fifo"], headless=True)
    assert len(plan.workloads) == len(PHILLY_VC_TRACES)
    assert all(w.cluster is None and w.num_jobs is None for w in plan.workloads)
    assert {r.env_config["cluster"] for r in plan.runs} == {"medium"}


def test_load_rule_refuses_generated_workloads() -> None:
    with pytest.raises(PlanError, match=r"--cluster load=0.9: sizes a cluster per trace.*'philly'"):
        make_plan(preset="philly", cluster="load=0.9", policies=["fifo"])
    with pytest.raises(PlanError, match=r"--cluster: .*'load=big': expected load=<number>"):
        make_plan(preset="philly_vc", cluster="load=big", policies=["fifo"])


def test_every_heuristic_finishes_real_excerpts_headless(
    excerpts: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ["--policies", *HEURISTICS, "--cluster", "load=0.9", "--seeds", "0", "--headless"]
    for path in excerpts:
        argv += ["--trace", str(path)]
    argv += ["--out", str(out), "--quiet", "--no-plots", "--workers", "2"]
    assert evaluate.main(argv) == 0
    rows = _rows(out / "runs.csv")
    assert sorted({r["policy"] for r in rows}) == sorted(HEURISTICS)
    for row in rows:
        assert row["truncated"] == "0", row["policy"]
        assert row["num_jobs"] == "100", (row["policy"], row["workload"])
        assert row["cluster"].startswith(("5x8 v100", "7x8 v100"))
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "`2869ce_100.csv` ran on its own cluster: 7 nodes x 8 v100 = 56 GPUs" in summary
    assert "## Across workloads: mean JCT / lower bound" in summary
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["cluster"]["rule"] == "load=0.9"


@pytest.mark.slow
def test_every_policy_and_shipped_agent_finishes_a_real_excerpt_in_the_env(
    excerpts: list[Path], tmp_path: Path
) -> None:
    """The env path, with a shipped agent (its observation fits ``medium``)."""
    out = tmp_path / "out"
    agent = ZOO / "maskable_ppo_finetune_pointer_rivals_heavy.zip"  # the best shipped agent
    argv = ["--policies", "all", str(agent), "--cluster", "medium", "--seeds", "0"]
    argv += ["--trace", str(excerpts[0]), "--out", str(out), "--quiet", "--no-plots"]
    assert evaluate.main([*argv, "--workers", "2"]) == 0
    rows = _rows(out / "runs.csv")
    assert sorted(r["policy"] for r in rows) == sorted([*baselines.available(), agent.stem])
    for row in rows:
        assert row["truncated"] == "0" and row["num_jobs"] == "100", row["policy"]
        assert row["invalid_actions"] == "0", row["policy"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "0-99999999999"], "--seeds: '0-99999999999' makes more than 1,000,000"),
        (["--num-jobs", "99999999999"], "--num-jobs: at most 10,000,000 jobs"),
    ],
)
def test_huge_seed_ranges_and_job_counts_are_usage_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = evaluate.main([*argv, "--policies", "fifo", "--out", str(tmp_path / "o")])
    assert code == 2
    assert message in capsys.readouterr().err


def test_headless_drops_a_job_no_gpu_of_a_mixed_cluster_holds_as_the_env_does(
    tmp_path: Path,
) -> None:
    from gpushare_env.sim import make_cluster
    from gpushare_env.workloads import make_job

    cluster = make_cluster("mixed")
    big = float(cluster.gpu_memory_gib.max())
    # 12 workers that each need more memory than any GPU but the 8 largest offers
    wide = make_job(0, 0.0, 12, 600.0, "resnet50", memory_gib=big * 0.95)
    path = tmp_path / "mixed.csv"
    write_csv_trace([wide, make_job(1, 5.0, 1, 600.0, "resnet50")], path)
    rows = {}
    for mode in ([], ["--headless"]):
        out = tmp_path / f"out{len(mode)}"
        argv = ["--trace", str(path), "--cluster", "mixed", "--policies", "fifo_pack"]
        argv += ["--seeds", "0", "--out", str(out), "--quiet", "--no-plots", *mode]
        assert evaluate.main(argv) == 0
        (rows[len(mode)],) = _rows(out / "runs.csv")
    assert rows[0]["rejected_jobs"] == rows[1]["rejected_jobs"] == "1"
    assert rows[0]["mean_jct_s"] == rows[1]["mean_jct_s"]


@pytest.mark.parametrize("option", ["--reference", "--baseline"])
def test_a_reference_or_baseline_that_is_not_evaluated_is_a_usage_error(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--policies", "fifo", "fifo_pack", option, "sjf_pack", "--out", str(tmp_path / "o")]
    assert evaluate.main([*argv, "--preset", "thesis", "--seeds", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{option}: 'sjf_pack' is not among the evaluated policies (fifo, fifo_pack)" in err
    assert not (tmp_path / "o").exists()  # refused before the folder is touched


def test_the_default_reference_may_be_absent_from_the_policies() -> None:
    from gpushare_eval.plan import make_plan

    plan = make_plan(preset="thesis", policies=["fifo_pack", "sjf_pack"], seeds=[0])
    assert (plan.reference, plan.baseline) == ("thesis", "fifo")  # tables left out, no error
    plan = make_plan(preset="thesis", policies=["fifo_pack", "sjf_pack"], seeds=[0],
                     reference="sjf_pack", baseline="fifo_pack")  # fmt: skip
    assert (plan.reference, plan.baseline) == ("sjf_pack", "fifo_pack")


def _windows(run: object) -> tuple[object, object]:
    config = run.env_config  # type: ignore[attr-defined]
    return config.get("pending_window"), config.get("running_window")


def test_baselines_see_a_whole_real_queue_and_the_env_default_on_generated_workloads(
    excerpts: list[Path],
) -> None:
    from gpushare_eval.plan import TRACE_WINDOW

    plan = make_plan(preset="thesis", traces=[str(excerpts[0])], workloads=["philly"],
                     policies=["fifo", "thesis"], seeds=[0])  # fmt: skip
    by_workload = {r.workload.label: _windows(r) for r in plan.runs}
    assert by_workload == {"philly": (None, None), excerpts[0].name: (TRACE_WINDOW,) * 2}
    assert any("first 1024 waiting and running jobs" in note for note in plan.notes)
    plan = make_plan(preset="thesis", traces=[str(excerpts[0])], workloads=["philly"],
                     policies=["thesis"], seeds=[0], window=32)  # fmt: skip
    assert {_windows(r) for r in plan.runs} == {(32, 32)}
    assert not any("waiting and running jobs" in note for note in plan.notes)


def test_saved_agents_keep_the_windows_they_were_trained_with(excerpts: list[Path]) -> None:
    agent = ZOO / "maskable_ppo_bc_medium.zip"
    plan = make_plan(preset="philly", traces=[str(excerpts[1])], cluster="medium",
                     policies=["thesis", str(agent)], seeds=[0])  # fmt: skip
    windows = {r.policy.label: _windows(r) for r in plan.runs}
    assert windows == {"thesis": (1024, 1024), agent.stem: (16, 16)}


@pytest.mark.parametrize("text", ["0", "1025", "many"])
def test_a_window_out_of_range_is_a_usage_error(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--policies", "fifo", "--window", text, "--out", str(tmp_path / "o")]
    assert evaluate.main([*argv, "--preset", "thesis", "--seeds", "0"]) == 2
    assert "--window: expected an integer" in capsys.readouterr().err


def test_an_agent_that_recorded_no_windows_keeps_the_env_default_ones() -> None:
    from gpushare_eval.plan import run_config
    from gpushare_eval.specs import PolicySpec

    base = {"cluster": "medium", "pending_window": 1024, "running_window": 1024}
    bare = PolicySpec(label="mine", path="/m/mine.zip")  # an SB3 model saved by hand
    recorded = PolicySpec(label="zoo", path="/m/zoo.zip", env_overrides={"pending_window": 8})
    heuristic = PolicySpec(label="thesis", name="thesis")
    assert run_config(base, bare) == {"cluster": "medium"}  # its observation: the default
    assert run_config(base, recorded) == {"cluster": "medium", "pending_window": 8}
    assert run_config(base, heuristic) == base
