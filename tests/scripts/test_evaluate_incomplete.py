"""``gpushare-evaluate`` never passes off an incomplete run: it is flagged in ``runs.csv``,
left out of every statistic and plot, named on stderr, and makes the exit status 3 (0
with ``--allow-incomplete``); a trace cut by ``--num-jobs`` is said to be."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gpushare_env.workloads import make_workload, write_csv_trace
from gpushare_eval.cli import evaluate
from gpushare_eval.runs import execute_run
from gpushare_eval.specs import PolicySpec, RunSpec, WorkloadSpec

POLICIES = ("fifo", "fifo_pack", "thesis")
SEEDS = ("0", "1", "2")
TINY = ["--policies", *POLICIES, "--num-jobs", "12", "--seeds", *SEEDS, "--workload", "thesis"]
TINY += ["--cluster", "tiny", "--workers", "1"]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def uncapped(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """The runs.csv rows of the tiny evaluation without a binding decision cap."""
    out = tmp_path_factory.mktemp("uncapped")
    assert evaluate.main([*TINY, "--out", str(out), "--quiet", "--no-plots"]) == 0
    rows = _rows(out / "runs.csv")
    assert all(r["status"] == "complete" and r["jobs_unfinished"] == "0" for r in rows)
    return rows


@pytest.fixture(scope="module")
def cap(uncapped: list[dict[str, str]]) -> int:
    """A decision cap that every fifo and fifo_pack run and thesis's shortest run stay
    within, but thesis's other runs exceed (the run whose last decision is the cap's
    completes: it ends terminated, not truncated)."""
    decisions = {(r["policy"], r["seed"]): int(r["decisions"]) for r in uncapped}
    thesis = sorted(decisions[("thesis", s)] for s in SEEDS)
    others = max(d for (p, _), d in decisions.items() if p != "thesis")
    assert others <= thesis[0] < thesis[1], decisions  # the set-up this test needs
    return thesis[0]


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory, cap: int) -> tuple[Path, int, str, str]:
    """The same evaluation with the cap, plots and console table on: (folder, exit status,
    stdout, stderr); module-scoped, so captured by hand rather than with ``capsys``."""
    out = tmp_path_factory.mktemp("capped")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = evaluate.main([*TINY, "--out", str(out), "--max-decisions", str(cap)])
    return out, status, stdout.getvalue(), stderr.getvalue()


def _truncated_seeds(uncapped: list[dict[str, str]], cap: int) -> list[str]:
    return [r["seed"] for r in uncapped if r["policy"] == "thesis" and int(r["decisions"]) > cap]


def test_a_capped_run_is_flagged_in_runs_csv(
    capped: tuple[Path, int, str, str], uncapped: list[dict[str, str]], cap: int
) -> None:
    out, _, _, _ = capped
    rows = _rows(out / "runs.csv")
    truncated = _truncated_seeds(uncapped, cap)
    assert len(truncated) == 2
    for row in rows:
        if row["policy"] == "thesis" and row["seed"] in truncated:
            assert row["status"] == "truncated_decisions", row
            assert row["truncated"] == "1" and int(row["decisions"]) == cap
            assert row["jobs_total"] == "12"
            assert int(row["jobs_unfinished"]) == 12 - int(row["num_jobs"]) > 0
        else:
            assert (row["status"], row["jobs_total"], row["jobs_unfinished"]) == (
                "complete", "12", "0",
            )  # fmt: skip
            assert row["num_jobs"] == "12"


def test_the_statistics_use_complete_runs_only(
    capped: tuple[Path, int, str, str], uncapped: list[dict[str, str]], cap: int
) -> None:
    out, _, _, _ = capped
    rows = _rows(out / "runs.csv")
    summary = json.loads((out / "summary.json").read_text())
    cells = summary["workloads"]["thesis"]["policies"]
    truncated = _truncated_seeds(uncapped, cap)
    (complete_seed,) = set(SEEDS) - set(truncated)

    def jct(policy: str, seed: str) -> float:
        return next(
            float(r["mean_jct_s"]) for r in rows if (r["policy"], r["seed"]) == (policy, seed)
        )

    thesis = cells["thesis"]
    assert (thesis["n"], thesis["runs"]) == (1, 3)
    assert thesis["incomplete_seeds"] == sorted(int(s) for s in truncated)
    mean = thesis["metrics"]["mean_jct_s"]["mean"]
    assert mean == pytest.approx(jct("thesis", complete_seed))
    naive = np.mean([jct("thesis", s) for s in SEEDS])
    assert not math.isclose(mean, naive)  # the truncated runs would have changed it
    assert not any(m["best"] for m in thesis["metrics"].values())
    # a complete run is the same as without the cap
    again = next(r for r in uncapped if (r["policy"], r["seed"]) == ("thesis", complete_seed))
    assert jct("thesis", complete_seed) == float(again["mean_jct_s"])
    # fifo is paired with thesis (the reference) on thesis's complete seed only
    paired = cells["fifo"]["metrics"]["mean_jct_s"]["vs_reference"]
    assert paired["n"] == 1
    assert paired["mean"] == pytest.approx(
        jct("fifo", complete_seed) - jct("thesis", complete_seed)
    )
    assert cells["fifo"]["metrics"]["mean_jct_s"]["mean"] == pytest.approx(
        np.mean([jct("fifo", s) for s in SEEDS])  # fifo completed every seed
    )
    ratio = thesis["metrics"]["mean_jct_s"]["ratio_to_baseline"]
    assert ratio == pytest.approx(jct("thesis", complete_seed) / jct("fifo", complete_seed))
    statuses = {(r["policy"], str(r["seed"])): r["status"] for r in summary["runs"]}
    assert statuses == {(r["policy"], r["seed"]): r["status"] for r in rows}


def test_summary_md_lists_the_incomplete_runs_and_flags_the_policy(
    capped: tuple[Path, int, str, str], uncapped: list[dict[str, str]], cap: int
) -> None:
    out, _, stdout, _ = capped
    markdown = (out / "summary.md").read_text()
    assert "## ⚠ Incomplete runs: left out of every statistic" in markdown
    rows = {r["seed"]: r for r in _rows(out / "runs.csv") if r["policy"] == "thesis"}
    for seed in _truncated_seeds(uncapped, cap):
        assert (
            f"- **thesis / thesis / seed {seed}: truncated_decisions (stopped by the decision "
            f"cap), finished {rows[seed]['num_jobs']} of 12 jobs**"
        ) in markdown
    assert "| thesis ⚠ incomplete (1/3 runs) |" in markdown
    assert "Lower bound of `mean_jct_s`" in markdown
    assert "| thesis ⚠ incomplete (1/3 runs) |" in stdout  # the console table too
    assert "| fifo |" in stdout


def test_the_plots_leave_incomplete_runs_out(
    capped: tuple[Path, int, str, str], uncapped: list[dict[str, str]], cap: int
) -> None:
    out, _, _, _ = capped
    gantt = {p.name for p in (out / "plots").glob("gantt_*.png")}
    first_seed_truncated = "0" in _truncated_seeds(uncapped, cap)
    # the Gantt views are of the first seed; an incomplete first run has none
    assert ("gantt_thesis_thesis.png" in gantt) is not first_seed_truncated
    assert "gantt_thesis_fifo.png" in gantt
    assert (out / "plots" / "metrics_thesis.png").is_file()


def test_an_incomplete_run_makes_the_exit_status_3_and_is_named_on_stderr(
    capped: tuple[Path, int, str, str],
) -> None:
    _, status, _, stderr = capped
    assert status == evaluate.EXIT_INCOMPLETE == 3
    assert "WARNING: 2 of 9 run(s) INCOMPLETE" in stderr
    assert "policies with incomplete runs: thesis; see summary.md; exit status 3" in stderr


def test_allow_incomplete_exits_0_and_still_flags(
    tmp_path: Path, cap: int, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*TINY, "--out", str(tmp_path), "--max-decisions", str(cap), "--quiet"]
    assert evaluate.main([*argv, "--no-plots", "--allow-incomplete"]) == 0
    err = capsys.readouterr().err
    assert "WARNING: 2 of 9 run(s) INCOMPLETE" in err  # even with --quiet
    assert "accepted (--allow-incomplete): exit status 0" in err
    statuses = [r["status"] for r in _rows(tmp_path / "runs.csv")]
    assert statuses.count("truncated_decisions") == 2
    assert "## ⚠ Incomplete runs" in (tmp_path / "summary.md").read_text()


@pytest.mark.usefixtures("broken_fifo")
def test_a_crash_wins_over_an_incomplete_run(tmp_path: Path, cap: int) -> None:
    argv = [*TINY, "--out", str(tmp_path), "--max-decisions", str(cap), "--quiet", "--no-plots"]
    assert evaluate.main(argv) == evaluate.EXIT_FAILED == 1


def test_the_exit_statuses_are_in_the_help() -> None:
    text = evaluate.build_parser().format_help()
    assert "Exit status:" in text and "--allow-incomplete" in text
    assert "  3  a run stopped with jobs unfinished" in text


@pytest.mark.parametrize("headless", [False, True], ids=["env", "headless"])
def test_a_run_stopped_by_the_time_cap_is_truncated_time(headless: bool) -> None:
    """The harness's command line has no time cap, but a run's env config can set one
    (``limits.max_time_s``); both modes stop there and say so."""

    def spec(**limits: float) -> RunSpec:
        config = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 15, **limits}
        return RunSpec(
            index=0,
            policy=PolicySpec(label="fifo", name="fifo", params={"seed": 3}),
            workload=WorkloadSpec("thesis_poisson", "thesis_poisson", 15),
            seed=3,
            env_config=config,
            headless=headless,
        )

    whole = execute_run(spec()).row
    assert (whole["status"], whole["jobs_unfinished"]) == ("complete", 0)
    capped = execute_run(spec(max_time_s=whole["makespan_s"] / 4)).row
    assert capped["status"] == "truncated_time"
    assert capped["truncated"] == 1 and capped["jobs_total"] == 15
    assert capped["jobs_unfinished"] == 15 - capped["num_jobs"] > 0


def _trace(path: Path, jobs: int) -> Path:
    write_csv_trace(make_workload("thesis", np.random.default_rng(7), num_jobs=jobs,
                                  cluster_gpus=4), path)  # fmt: skip
    return path


def test_a_trace_cut_by_num_jobs_is_said_in_the_log_and_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path / "long.csv", 20)
    argv = ["--trace", str(trace), "--cluster", "tiny", "--policies", "fifo", "--seeds", "0"]
    argv += ["--workers", "1", "--no-plots"]
    line = "trace long.csv: first 8 of 20 jobs (--num-jobs)"
    assert evaluate.main([*argv, "--num-jobs", "8", "--out", str(tmp_path / "cut")]) == 0
    assert f"gpushare-evaluate: note: {line}" in capsys.readouterr().err
    assert f"- note: {line}" in (tmp_path / "cut" / "summary.md").read_text()
    (row,) = _rows(tmp_path / "cut" / "runs.csv")
    assert (row["num_jobs"], row["jobs_total"], row["status"]) == ("8", "8", "complete")
    # without --num-jobs: the whole trace, and no such line
    assert evaluate.main([*argv, "--out", str(tmp_path / "whole")]) == 0
    assert "note: trace" not in capsys.readouterr().err
    (row,) = _rows(tmp_path / "whole" / "runs.csv")
    assert (row["num_jobs"], row["jobs_total"], row["status"]) == ("20", "20", "complete")
    assert "note: trace" not in (tmp_path / "whole" / "summary.md").read_text()
