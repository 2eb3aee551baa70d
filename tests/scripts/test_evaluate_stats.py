"""The evaluation's statistics, summary, Gantt lanes and plots, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpushare_env.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEEDS,
)
from gpushare_eval.gantt import GpuInterval, PlacementRecorder, assign_lanes
from gpushare_eval.plots import downsample_steps
from gpushare_eval.report import (
    across_workloads,
    render_across_workloads,
    render_markdown,
    summarize_runs,
)
from gpushare_eval.stats import (
    mean_ci,
    paired_difference,
    ratio_of_means,
    t_cdf,
    t_quantile,
)

# Two-sided 95% critical values t_{0.975, df} from a printed Student-t table (6 decimals).
T_TABLE_975 = {
    1: 12.706205,
    2: 4.302653,
    3: 3.182446,
    4: 2.776445,
    5: 2.570582,
    9: 2.262157,
    10: 2.228139,
    29: 2.045230,
    30: 2.042272,
    100: 1.983972,
}


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE_975.items()))
def test_t_quantile_matches_the_printed_table(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=2e-6)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=2e-6)


def test_t_distribution_closed_forms() -> None:
    # df = 1 is Cauchy: F(t) = 1/2 + atan(t)/pi; df = 2: F(t) = 1/2 + t / (2 sqrt(2 + t^2))
    for t in (-3.0, -0.4, 0.0, 0.7, 5.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-12)
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-12)
    for p in (0.6, 0.9, 0.975, 0.995):
        assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), 1e-10)


def test_t_quantile_agrees_with_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 7, 19, 60, 500):
        for p in (0.9, 0.95, 0.975, 0.995):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9)


def test_mean_ci_by_hand() -> None:
    # 10, 12, 14: mean 12, s = 2, half-width t_{.975,2} * 2 / sqrt(3)
    ci = mean_ci([10.0, 12.0, 14.0])
    assert (ci.n, ci.mean, ci.std) == (3, 12.0, 2.0)
    assert ci.half_width == pytest.approx(4.302653 * 2 / math.sqrt(3), abs=1e-5)
    assert ci.low == pytest.approx(12 - 4.968275, abs=1e-5)
    # one value: a mean but no interval; NaNs are dropped; nothing: all NaN
    single = mean_ci([5.0, math.nan])
    assert single.n == 1 and single.mean == 5.0 and math.isnan(single.half_width)
    assert math.isnan(mean_ci([]).mean)
    # a 90% interval is narrower: t_{0.95, 2} = 2.919986
    assert mean_ci([10.0, 12.0, 14.0], 0.9).half_width == pytest.approx(
        2.919986 * 2 / math.sqrt(3), abs=1e-5
    )


def test_paired_difference_by_hand() -> None:
    # sjf - thesis per seed: -10, -5, +2; mean -13/3; s^2 = 72.6667 / 2 = 36.3333
    diff = paired_difference([40.0, 65.0, 62.0], [50.0, 70.0, 60.0])
    assert diff.n == 3
    assert diff.mean == pytest.approx(-13 / 3)
    standard_error = math.sqrt(109 / 3) / math.sqrt(3)
    assert diff.half_width == pytest.approx(4.302653 * standard_error, abs=1e-5)
    assert diff.t_stat == pytest.approx((-13 / 3) / standard_error)
    # df = 2: two-sided p = 1 - |t| / sqrt(2 + t^2)
    t = diff.t_stat
    assert diff.p_value == pytest.approx(1 - abs(t) / math.sqrt(2 + t * t), abs=1e-12)
    assert diff.reference_mean == pytest.approx(60.0)
    assert diff.relative == pytest.approx((-13 / 3) / 60.0)
    assert not diff.significant  # the interval [-19.3, 10.6] holds 0
    # a constant, non-zero difference is certain; unequal lengths are refused
    constant = paired_difference([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert constant.mean == 1.0 and constant.half_width == 0.0 and constant.significant
    with pytest.raises(ValueError, match="equal length"):
        paired_difference([1.0], [1.0, 2.0])


def test_ratio_of_means() -> None:
    assert ratio_of_means([50.0, 70.0, 60.0], [100.0, 110.0, 120.0]) == pytest.approx(60 / 110)
    assert math.isnan(ratio_of_means([1.0], [0.0, 0.0]))


def _tiny_rows() -> list[dict[str, object]]:
    """Three policies x three seeds of one workload, two metrics."""
    values = {
        "fifo": ([100.0, 110.0, 120.0], [0.2, 0.3, 0.4]),
        "sjf_pack": ([40.0, 65.0, 62.0], [0.5, 0.6, 0.7]),
        "thesis": ([50.0, 70.0, 60.0], [0.6, 0.7, 0.8]),
    }
    rows: list[dict[str, object]] = []
    for policy, (jct, util) in values.items():
        for seed in range(3):
            rows.append(
                {
                    "policy": policy,
                    "workload": "w",
                    "seed": seed,
                    "mean_jct_s": jct[seed],
                    "gpu_util": util[seed],
                }
            )
    return rows


def test_summary_numbers_match_hand_computed_values() -> None:
    summary = summarize_runs(_tiny_rows(), ("mean_jct_s", "gpu_util"))
    cells = summary["workloads"]["w"]["policies"]
    assert summary["workloads"]["w"]["seeds"] == [0, 1, 2]
    fifo = cells["fifo"]["metrics"]["mean_jct_s"]
    assert fifo["mean"] == pytest.approx(110.0)
    assert fifo["half_width"] == pytest.approx(4.302653 * 10 / math.sqrt(3), abs=1e-4)
    assert fifo["ci_low"] == pytest.approx(110 - 24.841377, abs=1e-4)
    assert fifo["ratio_to_baseline"] == pytest.approx(1.0)
    thesis = cells["thesis"]["metrics"]["mean_jct_s"]
    assert thesis["ratio_to_baseline"] == pytest.approx(60 / 110)
    assert thesis["vs_reference"] is None
    paired = cells["sjf_pack"]["metrics"]["mean_jct_s"]["vs_reference"]
    assert paired["n"] == 3
    assert paired["mean"] == pytest.approx(-13 / 3)
    assert paired["half_width"] == pytest.approx(4.302653 * math.sqrt(109 / 9), abs=1e-4)
    # fifo - thesis per seed: 50, 40, 60 -> mean 50, s 10
    assert cells["fifo"]["metrics"]["mean_jct_s"]["vs_reference"]["mean"] == pytest.approx(50)
    # best: lowest JCT (sjf_pack, mean 55.67), highest utilisation (thesis, 0.7)
    best_jct = {p for p, c in cells.items() if c["metrics"]["mean_jct_s"]["best"]}
    best_util = {p for p, c in cells.items() if c["metrics"]["gpu_util"]["best"]}
    assert best_jct == {"sjf_pack"} and best_util == {"thesis"}


def test_paired_differences_use_only_shared_seeds() -> None:
    rows = [r for r in _tiny_rows() if not (r["policy"] == "sjf_pack" and r["seed"] == 1)]
    summary = summarize_runs(rows, ("mean_jct_s",))
    paired = summary["workloads"]["w"]["policies"]["sjf_pack"]["metrics"]["mean_jct_s"]
    assert paired["n"] == 2
    assert paired["vs_reference"]["n"] == 2
    assert paired["vs_reference"]["mean"] == pytest.approx((-10 + 2) / 2)


def test_summary_rejects_duplicate_runs() -> None:
    rows = _tiny_rows()
    with pytest.raises(ValueError, match="more than once"):
        summarize_runs([*rows, rows[0]], ("mean_jct_s",))


def test_markdown_marks_the_best_values_and_lists_every_table() -> None:
    summary = summarize_runs(_tiny_rows(), ("mean_jct_s", "gpu_util"))
    text = render_markdown(summary)
    lines = text.splitlines()
    sjf = next(line for line in lines if line.startswith("| sjf_pack |"))
    assert "**55.67 ± " in sjf  # best JCT in bold
    thesis = next(line for line in lines if line.startswith("| thesis |"))
    assert "**0.700 ± 0.248**" in thesis  # best utilisation: 0.7 ± 4.302653 * 0.1 / sqrt(3)
    assert "### Ratio of means to `fifo`" in text and "0.55×" in text
    assert "### Paired difference to `thesis`" in text
    assert "-4.33 ± 14.97 (-7.2%)" in text
    table_only = render_markdown(summary, main_table_only=True)
    assert "Ratio" not in table_only and "| fifo |" in table_only


def test_assign_lanes_by_hand() -> None:
    intervals = [
        GpuInterval(1, 0, 0.0, 10.0, "run"),
        GpuInterval(2, 0, 2.0, 5.0, "run"),
        GpuInterval(3, 0, 5.0, 8.0, "run"),  # starts as job 2 ends: reuses its lane
        GpuInterval(4, 0, 6.0, 9.0, "run"),
        GpuInterval(5, 1, 0.0, 1.0, "run"),
    ]
    assert assign_lanes(intervals, 3) == [0, 1, 1, 2, 0]
    with pytest.raises(ValueError, match="overlap on GPU 0"):
        assign_lanes(intervals, 2)


def test_recorder_matches_the_records_of_a_headless_run() -> None:
    """Without suspensions every job holds its GPUs exactly from first start to finish."""
    import baselines
    from gpushare_env.sim import Simulator, SimView, apply_decision, make_cluster
    from gpushare_env.workloads import make_workload

    cluster = make_cluster("tiny")
    jobs = make_workload("thesis", np.random.default_rng(4), num_jobs=12, cluster_gpus=4)
    sim = Simulator(jobs, cluster)
    view: SimView = sim
    policy = baselines.make("fifo_pack")
    policy.reset(view)
    recorder = PlacementRecorder()
    while not sim.done:
        apply_decision(sim, policy.decide(view))
        recorder.observe(sim)
    intervals = recorder.finish(sim.now_s)
    assign_lanes(intervals, cluster.max_jobs_per_gpu)  # never more than 4 jobs per GPU
    for record in sim.records():
        mine = [i for i in intervals if i.job_id == record.job_id]
        assert len(mine) == record.num_gpus
        assert {i.start_s for i in mine} == {record.first_start_s}
        assert {i.end_s for i in mine} == {record.finish_s}


def test_downsample_keeps_the_time_average() -> None:
    rng = np.random.default_rng(0)
    times = np.concatenate([[0.0], np.cumsum(rng.exponential(1.0, 9999))])
    values = rng.random(10_000)
    t, v = downsample_steps(times, values, max_points=100)
    assert t.size == 100 and t[0] == times[0] and t[-1] == pytest.approx(times[-1])
    exact = np.sum(values[:-1] * np.diff(times))
    assert np.sum(v[:-1] * np.diff(t)) == pytest.approx(exact, rel=1e-9)
    short_t, short_v = downsample_steps(times[:10], values[:10])
    assert np.array_equal(short_t, times[:10]) and np.array_equal(short_v, values[:10])


def test_presets_keep_train_and_test_seeds_apart() -> None:
    assert not set(PHILLY_TRAIN_SEEDS) & set(PHILLY_TEST_SEEDS)
    philly = EVALUATION_PRESETS["philly"]
    assert philly.seeds == PHILLY_TEST_SEEDS and philly.cluster == "medium"
    thesis = EVALUATION_PRESETS["thesis"]
    assert (thesis.seeds, thesis.num_jobs, thesis.cluster) == ((0, 1, 2), 100, "thesis")
    assert thesis.workloads == ("thesis", "thesis_poisson")


def test_summary_reports_the_solo_time_lower_bound_per_workload() -> None:
    rows = _tiny_rows()
    assert "jct_lower_bound_s" not in summarize_runs(rows, ("mean_jct_s",))["workloads"]["w"]
    solo = [30.0, 40.0, 50.0]  # per seed, the same for every policy
    for row in rows:
        row["mean_solo_s"] = solo[int(row["seed"])]  # type: ignore[call-overload]
    summary = summarize_runs(rows, ("mean_jct_s",))
    bound = summary["workloads"]["w"]["jct_lower_bound_s"]
    assert bound["n"] == 3 and bound["mean"] == pytest.approx(40.0)
    assert bound["half_width"] == pytest.approx(4.302653 * 10 / math.sqrt(3), abs=1e-4)
    text = render_markdown(summary, main_table_only=True)
    assert "Lower bound of `mean_jct_s`" in text and "40.00 ± 24.84" in text


def _rows_with_incomplete_runs() -> list[dict[str, object]]:
    """Four policies x three seeds; two runs stopped with jobs unfinished, whose JCT over
    the jobs that did finish looks better than any complete run's."""
    jct = {
        "fifo": [100.0, 110.0, 120.0],
        "sjf_pack": [40.0, 5.0, 62.0],  # seed 1 truncated: 5.0 over its 40 short jobs
        "thesis": [50.0, 70.0, 1.0],  # seed 2 truncated by the time cap
        "tiresias": [90.0, 95.0, 100.0],
    }
    incomplete = {("sjf_pack", 1): "truncated_decisions", ("thesis", 2): "truncated_time"}
    solo = [30.0, 40.0, 50.0]  # the jobs' mean solo time per seed, over all 100 jobs
    rows: list[dict[str, object]] = []
    for policy, values in jct.items():
        for seed, value in enumerate(values):
            status = incomplete.get((policy, seed), "complete")
            finished = 100 if status == "complete" else 40
            rows.append(
                {
                    "policy": policy,
                    "workload": "w",
                    "seed": seed,
                    "mean_jct_s": value,
                    "status": status,
                    "num_jobs": finished,
                    "jobs_total": 100,
                    # over the finished jobs only: wrong for an incomplete run
                    "mean_solo_s": solo[seed] if status == "complete" else 1.0,
                }
            )
    return rows


def test_statistics_leave_incomplete_runs_out_and_list_them() -> None:
    summary = summarize_runs(_rows_with_incomplete_runs(), ("mean_jct_s",))
    cells = summary["workloads"]["w"]["policies"]
    sjf = cells["sjf_pack"]
    assert (sjf["n"], sjf["runs"], sjf["incomplete_seeds"]) == (2, 3, [1])
    assert sjf["metrics"]["mean_jct_s"]["mean"] == pytest.approx((40 + 62) / 2)
    assert cells["thesis"]["metrics"]["mean_jct_s"]["mean"] == pytest.approx(60.0)
    assert cells["fifo"]["incomplete_seeds"] == []
    # best among the complete policies only: tiresias (95), not sjf_pack's partial 51
    best = {p for p, c in cells.items() if c["metrics"]["mean_jct_s"]["best"]}
    assert best == {"tiresias"}
    # paired with the reference (thesis, complete on seeds 0 and 1) where both completed
    fifo_diff = cells["fifo"]["metrics"]["mean_jct_s"]["vs_reference"]
    assert fifo_diff["n"] == 2 and fifo_diff["mean"] == pytest.approx((50 + 40) / 2)
    sjf_diff = sjf["metrics"]["mean_jct_s"]["vs_reference"]
    assert sjf_diff["n"] == 1 and sjf_diff["mean"] == pytest.approx(40 - 50)  # seed 0 only
    # ratios to the baseline (fifo) over the seeds where both completed
    thesis_ratio = cells["thesis"]["metrics"]["mean_jct_s"]["ratio_to_baseline"]
    assert thesis_ratio == pytest.approx(((50 + 70) / 2) / ((100 + 110) / 2))
    assert sjf["metrics"]["mean_jct_s"]["ratio_to_baseline"] == pytest.approx(51 / 110)
    # the lower bound from complete runs only: the mean solo time of seeds 0-2
    assert summary["workloads"]["w"]["jct_lower_bound_s"]["mean"] == pytest.approx(40.0)
    statuses = {(r["policy"], r["seed"]): r["status"] for r in summary["runs"]}
    assert len(statuses) == 12
    assert {k: v for k, v in statuses.items() if v != "complete"} == {
        ("sjf_pack", 1): "truncated_decisions",
        ("thesis", 2): "truncated_time",
    }
    assert (
        next(r for r in summary["runs"] if r["policy"] == "sjf_pack" and r["seed"] == 1)[
            "jobs_finished"
        ]
        == 40
    )


def test_the_markdown_flags_incomplete_runs_in_every_table_and_lists_them() -> None:
    summary = summarize_runs(_rows_with_incomplete_runs(), ("mean_jct_s",))
    text = render_markdown(summary)
    assert "## ⚠ Incomplete runs: left out of every statistic" in text
    assert (
        "- **sjf_pack / w / seed 1: truncated_decisions (stopped by the decision cap), "
        "finished 40 of 100 jobs**" in text
    )
    assert "- **thesis / w / seed 2: truncated_time (stopped by the simulated-time cap)" in text
    rows = [line for line in text.splitlines() if line.startswith("| sjf_pack")]
    assert len(rows) == 3  # means, ratios, paired differences: flagged in each
    assert all(row.startswith("| sjf_pack ⚠ incomplete (2/3 runs)") for row in rows)
    assert "51.00 ± " in rows[0] and rows[0].endswith("† |") and "**" not in rows[0]
    assert "[1 of 3 seeds]" in rows[2]  # paired with the reference on one seed only
    assert "| tiresias | **95.00 ± " in text
    console = render_markdown(summary, main_table_only=True)
    assert "| sjf_pack ⚠ incomplete (2/3 runs) |" in console
    assert "Lower bound of `mean_jct_s`" in console and "40.00 ± 24.84" in console


def test_rows_without_a_status_are_complete_unless_truncated() -> None:
    from gpushare_eval.report import RunStatus, run_status

    assert run_status({"truncated": "0"}) is RunStatus.COMPLETE
    assert run_status({}) is RunStatus.COMPLETE
    assert run_status({"truncated": "1"}) is RunStatus.UNFINISHED
    assert run_status({"status": "truncated_time", "truncated": 1}) is RunStatus.TRUNCATED_TIME
    with pytest.raises(ValueError, match="unknown run status 'partial'"):
        run_status({"status": "partial"})


def test_across_workloads_divides_by_each_lower_bound_and_takes_the_geometric_mean() -> None:
    rows = _rows_with_incomplete_runs()  # workload "w": lower bound 40 (complete runs)
    for row in _rows_with_incomplete_runs():
        if row["policy"] in ("fifo", "thesis", "tiresias"):
            # workload "v": every run complete, JCT 4x the bound of 10
            rows.append({**row, "workload": "v", "mean_jct_s": 40.0, "mean_solo_s": 10.0,
                         "status": "complete", "num_jobs": 100})  # fmt: skip
    summary = summarize_runs(rows, ("mean_jct_s",))
    table = across_workloads(summary)
    assert table is not None and table["workloads"] == ["w", "v"]
    fifo = table["policies"]["fifo"]
    assert fifo["per_workload"] == {"w": pytest.approx(110 / 40), "v": pytest.approx(4.0)}
    assert fifo["overall"] == pytest.approx(math.sqrt(110 / 40 * 4.0))
    # thesis: incomplete on "w" (seed 2), so no ratio there and no overall figure
    assert table["policies"]["thesis"]["per_workload"]["w"] is None
    assert table["policies"]["thesis"]["overall"] is None
    # sjf_pack ran on "w" only (and incompletely)
    assert table["policies"]["sjf_pack"]["per_workload"] == {"w": None, "v": None}
    text = "\n".join(render_across_workloads(table))
    assert "| fifo | 2.75 | **4.00** | 3.32 |" in text  # a tie: every 4.00 is best
    assert "| tiresias | **2.38** | **4.00** | **3.08** |" in text  # 95/40; sqrt(2.375 * 4)
    assert "| thesis | n/a | **4.00** | n/a |" in text
    assert "## Across workloads" in render_markdown(summary)
    # one workload: nothing to compare across
    assert across_workloads(summarize_runs(_rows_with_incomplete_runs(), ("mean_jct_s",))) is None
