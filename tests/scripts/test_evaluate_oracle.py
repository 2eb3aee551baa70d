"""Oracle runs in ``gpushare-evaluate``, and the progress of the runs in progress.

* A policy that sees the future (``Policy.oracle``: ``lookahead:oracle=true``) is marked
  ``oracle`` in ``runs.csv`` (every other run 0) and in ``config.json``; the summary keeps
  it out of every ranking (never best, out of the aggregates: its own are apart) and
  shows it last in every table, marked. Rows without the column, or with 0, give the
  summary of before.
* ``--resume`` takes a ``runs.csv`` written before the column, and ends with the same
  results as an uninterrupted evaluation.
* Progress: a run reports its finished jobs every interval at most (``JobProgress``),
  and the bar shows those of the runs in progress (``_RunningJobs``), in this process and
  from a pool's workers.
"""

from __future__ import annotations

import csv
import io
import json
import queue
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpushare_eval import runs
from gpushare_eval.cli import evaluate
from gpushare_eval.report import (
    HEADLINE_METRICS,
    ORACLE_MARK,
    is_oracle,
    render_markdown,
    render_ratio_table,
    summarize_runs,
)
from gpushare_eval.specs import EXTRA_COLUMNS, PolicySpec, RunSpec, WorkloadSpec
from tests.scripts.helpers import assert_same_results, csv_rows

ORACLE = "lookahead:oracle=true"


# ------------------------------------------------------------------ summary
def synthetic_rows(oracle: Any = None) -> list[dict[str, Any]]:
    """Three policies on two workloads, three seeds: ``bound`` has the lowest (best)
    value of every metric, then ``thesis``, then ``fifo``. ``oracle``: the ``oracle``
    column's value of ``bound`` (``None``: no column), the others' 0."""
    rows = []
    for rank, policy in enumerate(("fifo", "bound", "thesis")):
        level = {"bound": 1.0, "thesis": 2.0, "fifo": 3.0}[policy]
        for workload, scale in (("a", 100.0), ("b", 1000.0)):
            for seed in range(3):
                row: dict[str, Any] = {"policy": policy, "workload": workload, "seed": seed}
                for k, metric in enumerate(HEADLINE_METRICS):
                    row[metric] = scale * (level + 0.1 * seed + 0.01 * k + 0.001 * rank)
                row.update(status="complete", num_jobs=10, jobs_total=10, mean_solo_s=scale * 0.5)
                if oracle is not None:
                    row["oracle"] = oracle if policy == "bound" else 0
                rows.append(row)
    return rows


def summary_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return summarize_runs(rows, baseline="fifo", reference="thesis", bootstrap_reps=200)


@pytest.mark.parametrize("flag", [0, "0", "", False], ids=["0", "text0", "empty", "false"])
def test_without_an_oracle_the_summary_is_what_it_was(flag: Any) -> None:
    before = summary_of(synthetic_rows())
    after = summary_of(synthetic_rows(oracle=flag))
    assert json.dumps(after) == json.dumps(before)
    assert render_markdown(after) == render_markdown(before)
    assert render_ratio_table(after) == render_ratio_table(before)
    assert "oracle" not in json.dumps(before)


def test_is_oracle_reads_the_column_as_written_and_read_back() -> None:
    assert [is_oracle({"oracle": v}) for v in (1, "1", True, "true")] == [True] * 4
    assert [is_oracle({"oracle": v}) for v in (0, "0", "", None, False)] == [False] * 5
    assert not is_oracle({})


@pytest.mark.parametrize("flag", [1, "1"], ids=["int", "text"])
def test_an_oracle_is_never_ranked_and_is_shown_apart(flag: Any) -> None:
    summary = summary_of(synthetic_rows(oracle=flag))
    assert summary["oracle_policies"] == ["bound"]
    for entry in summary["workloads"].values():
        cells = entry["policies"]
        assert cells["bound"]["oracle"] is True and "oracle" not in cells["thesis"]
        for metric, info in summary["metrics"].items():
            best = {p for p, cell in cells.items() if cell["metrics"][metric]["best"]}
            # bound has every lowest value; the best among the others is thesis or fifo
            expected = "fifo" if info["higher_is_better"] else "thesis"
            assert best == {expected}, metric
        # its statistics are there: an upper bound to compare with
        assert cells["bound"]["metrics"]["mean_jct_s"]["vs_reference"]["mean"] < 0
    assert list(summary["aggregates"]["policies"]) == ["fifo", "thesis"]
    assert "bound" not in summary["aggregates"]["left_out"]
    apart = summary["oracle_aggregates"]
    assert list(apart["policies"]) == ["bound"] and apart["reference"] == "thesis"
    assert apart["policies"]["bound"]["p_beats_reference"]["estimate"] == 1.0
    # the others' figures do not depend on whether an oracle ran beside them
    fair = summary_of([r for r in synthetic_rows() if r["policy"] != "bound"])
    assert summary["aggregates"] == fair["aggregates"]

    markdown = render_markdown(summary)
    labelled = f"bound {ORACLE_MARK}"
    assert "**Oracle policies: `bound` see the future" in markdown
    assert "Across workloads: aggregates with 95% intervals of the oracle policies" in markdown
    table_rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    theirs = [line for line in table_rows if line.startswith(f"| {labelled} |")]
    assert len(theirs) == 2 + 2 * 3  # across workloads, its aggregates, 3 tables a workload
    assert all("**" not in line for line in theirs)  # never bold
    assert not any(line.startswith("| bound |") for line in table_rows)
    for section in markdown.split("\n## Workload ")[1:]:  # last in every table
        lines = section.splitlines()
        for k, line in enumerate(lines):
            if line.startswith(f"| {labelled} |"):
                assert k + 1 == len(lines) or not lines[k + 1].startswith("| "), line
    ratio = render_ratio_table(summary)
    assert ratio.count(f"| {labelled} |") == 2 and ratio.index("| thesis |") < ratio.index(labelled)


# ----------------------------------------------------------- an evaluation
COMMON = [
    "--policies", "thesis", ORACLE, "--workload", "thesis", "--cluster", "tiny",
    "--num-jobs", "10", "--seeds", "0-2", "--headless", "--workers", "1", "--quiet",
    "--no-plots",
]  # fmt: skip


@pytest.fixture(scope="module")
def with_an_oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oracle")
    assert evaluate.main([*COMMON, "--out", str(out)]) == 0
    return out


def test_an_oracle_run_is_marked_in_runs_csv_config_and_summary(with_an_oracle: Path) -> None:
    out = with_an_oracle
    header = (out / "runs.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[-1] == "oracle" == EXTRA_COLUMNS[-1]
    assert {(r["policy"], r["oracle"]) for r in csv_rows(out / "runs.csv")} == {
        ("thesis", "0"),
        (ORACLE, "1"),
    }
    entries = json.loads((out / "config.json").read_text(encoding="utf-8"))["runs"]
    assert {(e["policy"], e["oracle"]) for e in entries} == {("thesis", False), (ORACLE, True)}
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["oracle_policies"] == [ORACLE]
    cells = summary["workloads"]["thesis"]["policies"]
    assert cells[ORACLE]["oracle"] and not any(s["best"] for s in cells[ORACLE]["metrics"].values())
    assert f"| {ORACLE} {ORACLE_MARK} |" in (out / "summary.md").read_text(encoding="utf-8")


def test_resume_takes_a_runs_csv_written_before_the_oracle_column(
    with_an_oracle: Path, tmp_path: Path
) -> None:
    """An interrupted evaluation recorded by the harness before the column: its rows get
    the column from the plan (1 for the oracle run), the rest runs, and the results are
    an uninterrupted evaluation's."""
    out = tmp_path / "old"
    shutil.copytree(with_an_oracle, out)
    with open(out / "runs.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    kept = [rows[0], *(r for r in rows[1:] if r[2] != "2")]  # seed 2 not recorded yet
    assert len(kept) == 5 and {r[0] for r in kept[1:]} == {"thesis", ORACLE}
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(row[:-1] for row in kept)
    (out / "runs.csv").write_text(text.getvalue(), encoding="utf-8")
    assert evaluate.main([*COMMON, "--out", str(out)]) == 2  # holds an evaluation
    assert evaluate.main([*COMMON, "--out", str(out), "--resume"]) == 0
    assert_same_results(out, with_an_oracle)
    walls = {(r["policy"], r["seed"]): r["wall_s"] for r in csv_rows(with_an_oracle / "runs.csv")}
    resumed = csv_rows(out / "runs.csv")
    assert [r["wall_s"] == walls[(r["policy"], r["seed"])] for r in resumed] == [
        True, True, False, True, True, False,
    ]  # fmt: skip


# ------------------------------------------------------------------ progress
class _Clock:
    def __init__(self) -> None:
        self.now, self.reads = 0.0, 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


class _Sim:
    num_finished = 3
    jobs = range(10)


def test_a_run_reports_its_jobs_once_an_interval_at_most() -> None:
    clock, reports = _Clock(), []
    progress = runs.JobProgress(7, lambda *r: reports.append(r), interval_s=0.5, clock=clock)
    for _ in range(100):  # fast decisions: the clock is read less and less often
        progress(_Sim())
    assert reports == [] and clock.reads < 12 and progress.stride > 16
    clock.now = 0.49
    for _ in range(2000):
        progress(_Sim())
    assert reports == []
    clock.now = 0.6
    for _ in range(2000):
        progress(_Sim())
    assert reports == [(7, 3, 10)]  # once, a stride after the interval ended
    slow = runs.JobProgress(1, lambda *r: reports.append(r), interval_s=0.5, clock=clock)
    for _ in range(8):  # slow decisions, 0.3 s each: the clock is read every decision
        clock.now += 0.3
        slow(_Sim())
    assert slow.stride == 1 and [r for r in reports if r[0] == 1] == [(1, 3, 10)] * 4


class _Bar:
    def __init__(self) -> None:
        self.postfix, self.updates = "", 0
        self.shown: list[str] = []

    def update(self, count: int) -> None:
        self.updates += count

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text
        if refresh:
            self.shown.append(text)

    def close(self) -> None:
        pass


def test_the_bar_shows_the_jobs_of_the_runs_in_progress() -> None:
    bar = _Bar()
    running = runs._RunningJobs(bar, refresh_s=0.0)
    running.report(0, 5, 100)
    running.report(1, 20, 50)
    assert bar.shown == ["1 running: 5/100 jobs", "2 running: 25/150 jobs"]
    running.ended(0)  # drawn with the bar's next update
    assert bar.postfix == "1 running: 20/50 jobs" and len(bar.shown) == 2
    running.report(0, 99, 100)  # late: run 0 has ended
    running.ended(1)
    assert bar.postfix == "" and running.describe() == ""
    throttled = runs._RunningJobs(bar, refresh_s=3600.0)
    throttled.report(2, 1, 10)
    throttled.report(2, 2, 10)
    assert bar.shown[-1] == "1 running: 1/10 jobs" and throttled.describe().endswith("2/10 jobs")


def test_reports_from_workers_are_drained_from_their_queue() -> None:
    channel: queue.Queue[tuple[int, int, int]] = queue.Queue()
    for report in [(0, 1, 10), (1, 2, 20), (0, 3, 10)]:
        channel.put(report)
    seen: list[tuple[int, int, int]] = []
    runs._drain(channel, lambda *r: seen.append(r))
    assert seen == [(0, 1, 10), (1, 2, 20), (0, 3, 10)] and channel.empty()


@pytest.mark.parametrize("workers", [1, 2], ids=["in_process", "pool"])
def test_run_all_shows_the_jobs_finished_of_long_runs(
    workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    bar = _Bar()
    monkeypatch.setattr(runs, "_progress_bar", lambda total, enabled: bar)
    monkeypatch.setattr(runs, "PROGRESS_INTERVAL_S", 0.0)  # every decision reports
    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 40}
    specs = [
        RunSpec(i, PolicySpec("thesis", "thesis"), WorkloadSpec("thesis", "thesis", 40), i,
                config, headless=True, keep_jobs=False)
        for i in range(2)
    ]  # fmt: skip
    outputs = runs.run_all(specs, workers, progress=True)
    assert [o.error for o in outputs] == [None, None] and bar.updates == 2
    assert bar.shown and all(t.startswith(("1 running: ", "2 running: ")) for t in bar.shown)
    assert any(t.endswith(("/40 jobs", "/80 jobs")) for t in bar.shown)
    assert bar.postfix == "" and runs._reporter is None


def test_quiet_runs_report_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(runs, "JobProgress", lambda *a, **k: calls.append(a))
    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 5}
    spec = RunSpec(0, PolicySpec("fifo", "fifo"), WorkloadSpec("thesis", "thesis", 5), 0, config)
    assert runs.run_all([spec], 1, progress=False)[0].error is None
    assert calls == [] and runs._reporter is None


def test_the_plain_bar_shows_them_too_and_is_unchanged_without(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The line printed when tqdm is missing: the runs' jobs after the runs done; without
    reports, the line of before."""
    for reports in (True, False):
        bar = runs._PlainProgress(2, True)
        running = runs._RunningJobs(bar, refresh_s=0.0)
        if reports:
            running.report(0, 5, 100)
            running.ended(0)
        bar.update(1)
        bar.update(1)
        bar.close()
        err = capsys.readouterr().err
        if reports:
            assert "; 1 running: 5/100 jobs\r" in err
        else:
            assert err == (
                "\rgpushare-evaluate: 1/2 runs, 0 s, ~0 s left"
                "\rgpushare-evaluate: 2/2 runs, 0 s, ~0 s left\n"
            )
