"""Sweeps: a policy grid in ``--policies``, env-setting grids with ``--sweep``, and the
tidy ``sweep.csv`` with a plot per swept parameter."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpushare_eval.cli import evaluate
from gpushare_eval.plan import make_plan
from gpushare_eval.specs import PlanError
from gpushare_eval.sweeps import expand_grid, parse_sweep, sweep_table


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_braces_expand_to_the_product_in_order() -> None:
    assert expand_grid("thesis") == ["thesis"]
    assert expand_grid("thesis:a={2,4,8}") == ["thesis:a=2", "thesis:a=4", "thesis:a=8"]
    assert expand_grid("g:a={1,2}:b={x,y}") == ["g:a=1:b=x", "g:a=1:b=y", "g:a=2:b=x", "g:a=2:b=y"]
    with pytest.raises(PlanError, match="empty value"):
        expand_grid("thesis:a={1,}")


def test_sweep_values_are_json_none_or_text() -> None:
    assert parse_sweep("max_suspends_per_job=1,3,None") == ("max_suspends_per_job", [1, 3, None])
    assert parse_sweep("cluster=tiny,small,tiny") == ("cluster", ["tiny", "small"])
    for bad in ("max_suspends_per_job", "=1,2", "key="):
        with pytest.raises(PlanError, match="--sweep"):
            parse_sweep(bad)


def test_a_policy_grid_and_an_env_grid_multiply() -> None:
    plan = make_plan(
        policies=["fifo", "thesis:max_suspends={2,4}"],
        workloads=["thesis"],
        cluster="tiny",
        seeds=[0],
        num_jobs=6,
        sweep=["max_suspends_per_job=1,None"],
    )
    assert [p.label for p in plan.policies] == ["fifo", "thesis:max_suspends=2",
                                                "thesis:max_suspends=4"]  # fmt: skip
    assert [w.label for w in plan.workloads] == [
        "thesis[max_suspends_per_job=1]",
        "thesis[max_suspends_per_job=None]",
    ]
    assert len(plan.runs) == 3 * 2
    settings = {r.workload.label: r.env_config["max_suspends_per_job"] for r in plan.runs}
    assert settings == {
        "thesis[max_suspends_per_job=1]": 1,
        "thesis[max_suspends_per_job=None]": None,
    }


def test_an_unknown_sweep_key_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--sweep", "max_suspend=1,2", "--policies", "fifo", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 2
    assert "--sweep" in capsys.readouterr().err


def test_sweep_csv_has_one_tidy_row_per_parameter_value_and_rest(tmp_path: Path) -> None:
    argv = ["--policies", "fifo", "thesis:max_suspends={2,4}", "--workload", "thesis"]
    argv += ["--cluster", "tiny", "--num-jobs", "8", "--seeds", "0", "1", "--workers", "1"]
    argv += ["--sweep", "max_suspends_per_job=1,None", "--quiet", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    table = _rows(tmp_path / "sweep.csv")
    keys = [(r["parameter"], r["value"], r["policy"], r["workload"]) for r in table]
    assert len(keys) == len(set(keys))
    assert {k[0] for k in keys} == {"thesis:max_suspends", "max_suspends_per_job"}
    grid = [k for k in keys if k[0] == "thesis:max_suspends"]
    assert [k[1] for k in grid] == ["2", "2", "4", "4"]
    assert all(r["runs"] == "2" for r in table)
    # a mean is the mean of its runs in runs.csv
    runs = _rows(tmp_path / "runs.csv")
    row = next(r for r in table if r["parameter"] == "max_suspends_per_job" and r["value"] == "1"
               and r["policy"] == "fifo")  # fmt: skip
    cell = ("fifo", "thesis[max_suspends_per_job=1]")
    jcts = [float(r["mean_jct_s"]) for r in runs if (r["policy"], r["workload"]) == cell]
    assert float(row["mean_jct_s"]) == pytest.approx(sum(jcts) / len(jcts))
    plots = sorted(p.name for p in (tmp_path / "plots").glob("sweep_*.png"))
    assert plots == ["sweep_max_suspends_per_job.png", "sweep_thesis_max_suspends.png"]
    assert "## Sweeps" in (tmp_path / "summary.md").read_text()


def test_no_sweep_no_sweep_table() -> None:
    rows = [{"policy": "fifo", "workload": "thesis", "status": "complete", "mean_jct_s": 1.0}]
    assert sweep_table(rows) == []
