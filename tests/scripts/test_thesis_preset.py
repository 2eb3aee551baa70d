"""The thesis experiment is a preset of ``gpushare-evaluate`` (``thesis_headless``): it
prints the README's table to the digit, its ratios are ratios of the runs' means, and the
zoo cards measure their numbers with the same runs."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from gpushare_eval.cards import compare
from gpushare_eval.cli import evaluate
from gpushare_eval.report import render_ratio_table, summarize_runs
from tests.scripts.helpers import csv_rows

REPO = Path(__file__).resolve().parents[2]

#: The table's columns after the policy, as the README writes them.
COLUMNS = 7


def _table_rows(lines: list[str]) -> dict[str, list[str]]:
    """``{policy: cells}`` of the markdown table rows among ``lines`` (header excluded)."""
    rows = {}
    for line in lines:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] != "policy" and len(cells) == COLUMNS + 1:
            rows[cells[0]] = cells[1:]
    return rows


def _section(text: str, heading: str) -> list[str]:
    """The lines of ``text`` from ``heading`` to the next blank line after its table."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if heading in line)
    body = []
    for line in lines[start + 1 :]:
        if body and not line.startswith("|"):
            break
        if line.startswith("|"):
            body.append(line)
    return body


@pytest.fixture(scope="module")
def thesis_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """``gpushare-evaluate --preset thesis_headless`` (in this process): its stdout and
    output folder."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("thesis_headless")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        argv = ["--preset", "thesis_headless", "--workers", "1", "--no-plots"]
        assert evaluate.main([*argv, "--out", str(out)]) == 0
    return printed.getvalue(), out


def test_the_preset_prints_the_readme_and_results_tables_to_the_digit(
    thesis_table: tuple[str, Path],
) -> None:
    printed, out = thesis_table
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    results = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    interval = _table_rows(_section(printed, "**Workload `thesis`**"))
    poisson = _table_rows(_section(printed, "**Workload `thesis_poisson`**"))
    assert list(interval) == [
        "fifo", "tiresias", "fifo_pack", "sjf_pack", "gandiva", "min_frag", "random", "thesis",
        "fifo:max_jobs=1",
    ]  # fmt: skip
    assert _table_rows(_section(readme, "### The thesis experiment")) == interval
    assert _table_rows(_section(results, "**Arrivals 1 s apart**")) == interval
    assert _table_rows(_section(results, "**Poisson arrivals**")) == poisson
    # the same table heads summary.md, and the runs were headless with every job in view
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert _table_rows(_section(summary, "**Workload `thesis_poisson`**")) == poisson
    rows = csv_rows(out / "runs.csv")
    assert len(rows) == 54 and {row["mode"] for row in rows} == {"headless"}


def test_the_tables_ratios_are_ratios_of_the_runs_means(thesis_table: tuple[str, Path]) -> None:
    # recomputed from runs.csv, without the harness's statistics
    printed, out = thesis_table
    rows = csv_rows(out / "runs.csv")

    def mean(policy: str, metric: str) -> float:
        return statistics.fmean(
            float(r[metric]) for r in rows if r["policy"] == policy and r["workload"] == "thesis"
        )

    table = _table_rows(_section(printed, "**Workload `thesis`**"))
    for policy, cells in table.items():
        assert cells[0] == f"{mean(policy, 'makespan_s'):,.0f}"
        assert cells[1] == f"{mean(policy, 'mean_jct_s'):,.0f}"
        assert cells[2] == f"{mean(policy, 'gpu_util'):.3f}"
        assert cells[3] == f"{mean(policy, 'gpu_util') / mean('fifo', 'gpu_util'):.2f}x"
        assert cells[4] == f"{mean('fifo', 'makespan_s') / mean(policy, 'makespan_s'):.2f}x"
        assert cells[5] == f"{mean('fifo', 'mean_jct_s') / mean(policy, 'mean_jct_s'):.2f}x"
        assert cells[6] == f"{mean(policy, 'suspends'):.0f}"


def test_the_ratio_table_by_hand() -> None:
    # fifo: makespans 100 and 300 (mean 200), JCT 50, util 0.4; fast: makespan 100, JCT 20,
    # util 0.5; late: one complete run and one truncated one (left out, flagged)
    metrics = ("makespan_s", "mean_jct_s", "gpu_util", "suspends")

    def row(policy: str, seed: int, makespan: float, jct: float, util: float, **extra: object):
        return {"policy": policy, "workload": "w", "seed": seed, "makespan_s": makespan,
                "mean_jct_s": jct, "gpu_util": util, "suspends": 3.0, **extra}  # fmt: skip

    rows = [
        row("fifo", 0, 100.0, 50.0, 0.4),
        row("fifo", 1, 300.0, 50.0, 0.4),
        row("fast", 0, 100.0, 20.0, 0.5),
        row("fast", 1, 100.0, 20.0, 0.5),
        row("late", 0, 400.0, 100.0, 0.2),
        row("late", 1, 1.0, 1.0, 1.0, status="truncated_time"),
    ]
    text = render_ratio_table(summarize_runs(rows, metrics))
    table = _table_rows(text.splitlines())
    assert text.splitlines()[0] == "**Workload `w`** (mean over seeds 0, 1)"
    assert table["fifo"] == ["200", "50", "0.400", "1.00x", "1.00x", "1.00x", "3"]
    assert table["fast"] == ["100", "20", "0.500", "1.25x", "2.00x", "2.50x", "3"]
    # only seed 0 counts for `late`, and the ratio pairs it with fifo's seed 0
    assert table["late ⚠ incomplete (1/2 runs)"] == [
        "400 †", "100 †", "0.200 †", "0.50x", "0.25x", "0.50x", "3 †",
    ]  # fmt: skip
    no_baseline = render_ratio_table(summarize_runs(rows[2:4], metrics))
    assert _table_rows(no_baseline.splitlines())["fast"][3:6] == ["n/a", "n/a", "n/a"]


def test_the_preset_runs_through_the_env_with_the_same_numbers(tmp_path: Path) -> None:
    argv = ["--preset", "thesis_headless", "--policies", "thesis", "fifo:max_jobs=1"]
    argv += ["--seeds", "0", "--num-jobs", "24", "--workers", "1", "--no-plots", "--quiet"]
    assert evaluate.main([*argv, "--out", str(tmp_path / "headless")]) == 0
    assert evaluate.main([*argv, "--env", "--out", str(tmp_path / "env")]) == 0
    headless = csv_rows(tmp_path / "headless" / "runs.csv")
    env = csv_rows(tmp_path / "env" / "runs.csv")
    assert {r["mode"] for r in headless} == {"headless"} and {r["mode"] for r in env} == {"env"}
    keys = ("policy", "workload", "mean_jct_s", "makespan_s", "suspends", "decisions")
    assert [[r[k] for k in keys] for r in env] == [[r[k] for k in keys] for r in headless]


def test_a_saved_agent_or_both_modes_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = REPO / "agents" / "zoo" / "maskable_ppo_bc_thesis.zip"
    argv = ["--preset", "thesis_headless", "--out", str(tmp_path / "x"), "--quiet"]
    assert evaluate.main([*argv, "--policies", "thesis", str(agent)]) == 2
    assert "take heuristics only; drop the .zip policies" in capsys.readouterr().err
    assert evaluate.main([*argv, "--headless", "--env"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_card_measures_its_runs_as_gpushare_evaluate_does(tmp_path: Path) -> None:
    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 8, "max_decisions": 1000}
    card = compare("fifo", [config], [1, 2], ["thesis", "random"])["thesis"]
    argv = ["--policies", "thesis", "random", "fifo", "--workload", "thesis", "--cluster", "tiny"]
    argv += ["--num-jobs", "8", "--seeds", "1", "2", "--workers", "1", "--no-plots", "--quiet"]
    assert evaluate.main([*argv, "--out", str(tmp_path / "evaluated")]) == 0
    rows = csv_rows(tmp_path / "evaluated" / "runs.csv")
    for label, policy in (("thesis", "thesis"), ("random", "random"), ("agent", "fifo")):
        for key in ("mean_jct_s", "makespan_s"):
            evaluated = [float(r[key]) for r in rows if r["policy"] == policy]
            assert card[label][key]["per_seed"] == evaluated, (label, key)
    ratio = card["agent"]["mean_jct_s"]["ratio_to_thesis"]["mean"]
    fifo, thesis = card["agent"]["mean_jct_s"]["per_seed"], card["thesis"]["mean_jct_s"]["per_seed"]
    assert ratio == pytest.approx((fifo[0] / thesis[0] + fifo[1] / thesis[1]) / 2)
