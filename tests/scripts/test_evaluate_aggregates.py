"""Aggregates across workloads with their uncertainty, against hand-computed values.

The hand case: two workloads (the strata) of two seeds each. Policy ``p`` scores
``a: {0: 2, 1: 8}``, ``b: {0: 1, 1: 4}``; the reference ``r`` scores ``a: {0: 4, 1: 4}``,
``b: {0: 1, 1: 2}``.

* geometric mean of ``p``: ``(2 * 8 * 1 * 4) ** (1/4) = 64 ** (1/4) = 2 sqrt(2)``;
* IQM of ``p``: sorted ``1, 2, 4, 8``, one cut at each end: ``(2 + 4) / 2 = 3``;
* P(``p`` beats ``r``): on ``a`` the pairs (2, 4) (2, 4) win, (8, 4) (8, 4) lose: 2/4;
  on ``b`` (1, 1) ties (1/2), (1, 2) wins, (4, 1) (4, 2) lose: 1.5/4; mean 0.4375.
* the bootstrap: each stratum's resample of two seeds is (0, 0), (0, 1), (1, 0) or
  (1, 1), each with probability 1/4, so the product of ``p``'s four resampled scores is
  4 with probability 1/16, 16 (4/16), 64 (6/16), 256 (4/16) or 1024 (1/16), and the
  geometric mean its fourth root. 1/16 > 2.5%: the 95% interval is
  ``[4 ** (1/4), 1024 ** (1/4)] = [sqrt(2), 4 sqrt(2)]``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from gpushare_eval.aggregate import (
    aggregate_scores,
    geometric_mean,
    interquartile_mean,
    probability_of_improvement,
    run_scores,
    stratified_bootstrap_ci,
)
from gpushare_eval.report import render_markdown, summarize_runs

P = {"a": {0: 2.0, 1: 8.0}, "b": {0: 1.0, 1: 4.0}}
R = {"a": {0: 4.0, 1: 4.0}, "b": {0: 1.0, 1: 2.0}}


def test_point_estimates_by_hand() -> None:
    pooled = np.array([2.0, 8.0, 1.0, 4.0])
    assert geometric_mean(pooled) == pytest.approx(2 * math.sqrt(2))
    assert interquartile_mean(pooled) == pytest.approx(3.0)
    # n = 5: floor(5/4) = 1 cut at each end; n < 4: nothing cut
    assert interquartile_mean(np.array([10.0, 1.0, 2.0, 3.0, 100.0])) == pytest.approx(5.0)
    assert interquartile_mean(np.array([1.0, 2.0, 9.0])) == pytest.approx(4.0)
    assert probability_of_improvement(P, R) == pytest.approx(0.4375)
    assert probability_of_improvement(R, P) == pytest.approx(1 - 0.4375)  # ties split
    assert probability_of_improvement(P, P) == pytest.approx(0.5)


def test_iqm_agrees_with_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    values = np.random.default_rng(3).lognormal(size=(7, 11))
    np.testing.assert_allclose(interquartile_mean(values), stats.trim_mean(values, 0.25, axis=-1))


def test_stratified_bootstrap_interval_by_hand() -> None:
    seeds = {"a": [0, 1], "b": [0, 1]}

    def gm(drawn: dict[str, np.ndarray]) -> np.ndarray:
        scores = [np.vectorize(P[w].__getitem__)(drawn[w]) for w in ("a", "b")]
        return geometric_mean(np.concatenate(scores, axis=1))

    low, high = stratified_bootstrap_ci(gm, seeds, np.random.default_rng(0), reps=4000)
    assert low == pytest.approx(math.sqrt(2))
    assert high == pytest.approx(4 * math.sqrt(2))
    # the resamples stay within their strata: never a seed another stratum lacks
    narrow = {"a": [0, 1], "b": [1]}

    def b_only(drawn: dict[str, np.ndarray]) -> np.ndarray:
        assert set(np.unique(drawn["b"])) == {1} and drawn["a"].shape == (50, 2)
        return np.zeros(50)

    assert stratified_bootstrap_ci(b_only, narrow, np.random.default_rng(1), reps=50) == (0, 0)


def test_aggregate_scores_by_hand_and_seeded() -> None:
    result = aggregate_scores({"p": P, "r": R}, reference="r", rng=np.random.default_rng(0))
    assert result is not None
    assert result["workloads"] == ["a", "b"] and result["seeds"] == {"a": [0, 1], "b": [0, 1]}
    p = result["policies"]["p"]
    assert p["runs"] == 4
    assert p["geometric_mean"]["estimate"] == pytest.approx(2 * math.sqrt(2))
    assert p["geometric_mean"]["ci_low"] == pytest.approx(math.sqrt(2))
    assert p["geometric_mean"]["ci_high"] == pytest.approx(4 * math.sqrt(2))
    assert p["iqm"]["estimate"] == pytest.approx(3.0)
    assert p["iqm"]["ci_low"] <= 3.0 <= p["iqm"]["ci_high"]
    assert p["p_beats_reference"]["estimate"] == pytest.approx(0.4375)
    assert 0.0 <= p["p_beats_reference"]["ci_low"] <= p["p_beats_reference"]["ci_high"] <= 1.0
    assert result["policies"]["r"]["p_beats_reference"] is None
    # the same seed gives the same intervals
    again = aggregate_scores({"p": P, "r": R}, reference="r", rng=np.random.default_rng(0))
    assert again == result


def test_one_seed_per_workload_gives_point_intervals() -> None:
    one = {"a": {0: 2.0}, "b": {0: 8.0}}
    result = aggregate_scores({"p": one}, reference=None, rng=np.random.default_rng(0))
    assert result is not None
    gm = result["policies"]["p"]["geometric_mean"]
    assert gm["estimate"] == gm["ci_low"] == gm["ci_high"] == pytest.approx(4.0)


def test_incomplete_or_missing_runs_leave_a_policy_out() -> None:
    incomplete = {"a": {0: 2.0, 1: None}, "b": {0: 1.0, 1: 4.0}}
    missing = {"a": {0: 2.0, 1: 8.0}}
    result = aggregate_scores(
        {"p": P, "q": incomplete, "s": missing, "r": R}, reference="r", rng=np.random.default_rng(0)
    )
    assert result is not None
    assert list(result["policies"]) == ["p", "r"]
    assert result["left_out"] == {
        "q": "incomplete or missing runs: a seed 1",
        "s": "did not run b",
    }
    # without a complete reference there is no probability of improvement
    no_ref = aggregate_scores(
        {"p": P, "q": incomplete}, reference="q", rng=np.random.default_rng(0)
    )
    assert no_ref is not None and no_ref["reference"] is None
    assert no_ref["policies"]["p"]["p_beats_reference"] is None


def _rows() -> list[dict[str, Any]]:
    """Runs whose scores are P and R: lower bounds 10 on ``a``, 100 on ``b``."""
    rows = []
    for policy, scores in (("p", P), ("thesis", R)):
        for workload, bound in (("a", 10.0), ("b", 100.0)):
            for seed, score in scores[workload].items():
                rows.append({"policy": policy, "workload": workload, "seed": seed,
                             "mean_jct_s": score * bound, "mean_solo_s": bound,
                             "status": "complete"})  # fmt: skip
    return rows


def test_run_scores_divide_by_each_runs_own_bound() -> None:
    rows = _rows()
    rows[0] = {**rows[0], "status": "truncated_time"}
    scores = run_scores(rows, lambda r: r["status"] == "complete")
    assert scores["p"]["a"] == {0: None, 1: pytest.approx(8.0)}
    assert scores["thesis"]["b"] == {0: pytest.approx(1.0), 1: pytest.approx(2.0)}


def test_summary_json_and_markdown_carry_the_aggregates() -> None:
    summary = summarize_runs(_rows(), ("mean_jct_s",))
    aggregates = summary["aggregates"]
    assert aggregates["reference"] == "thesis" and aggregates["bootstrap_seed"] == 0
    p = aggregates["policies"]["p"]
    assert p["geometric_mean"]["estimate"] == pytest.approx(2 * math.sqrt(2))
    assert p["iqm"]["estimate"] == pytest.approx(3.0)
    assert p["p_beats_reference"]["estimate"] == pytest.approx(0.4375)
    json.dumps(summary, allow_nan=False)  # summary.json is strict JSON
    text = render_markdown(summary)
    assert "## Across workloads: aggregates with 95% intervals" in text
    assert "| p | 4 | 2.83 [1.41, 5.66] | 3.00 [" in text
    assert "| thesis | 4 | " in text and "| — |" in text
    # one workload: no aggregates
    one = summarize_runs([r for r in _rows() if r["workload"] == "a"], ("mean_jct_s",))
    assert "aggregates" not in one


def test_interval_plot_is_written(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    from gpushare_eval.plots import plot_interval_estimates

    summary = summarize_runs(_rows(), ("mean_jct_s",))
    path = plot_interval_estimates(summary["aggregates"], tmp_path / "aggregates.png", "t")
    assert path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
