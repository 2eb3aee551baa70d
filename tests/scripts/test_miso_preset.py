"""``gpushare-evaluate --preset miso``: MISO's scenario headless on the simulator's MIG
model, its four policies against the artifact's stored averages, the oracle kept out of
the ranking, and the workload's own sharing model."""

from __future__ import annotations

import csv
from pathlib import Path

from gpushare_env.presets import EVALUATION_PRESETS
from gpushare_env.workloads import WorkloadConfig
from gpushare_env.workloads.miso import MISO_STORED_AVG_JCT_S
from gpushare_eval.cli import evaluate

#: The core's continuous-time gaps to the stored averages (docs/mig.md); the oracle's is
#: the documented 5.6%.
TOLERANCE = {"mig_full": 0.0, "mig_static": 0.01, "miso": 0.03, "mig_oracle": 0.06}


def test_the_preset_runs_the_four_policies_headless_within_their_gaps(tmp_path: Path) -> None:
    assert evaluate.main(["--preset", "miso", "--out", str(tmp_path), "--workers", "1"]) == 0
    with open(tmp_path / "runs.csv", encoding="utf-8") as handle:
        rows = {row["policy"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(MISO_STORED_AVG_JCT_S)
    for policy, row in rows.items():
        assert row["status"] == "complete" and row["mode"] == "headless"
        gap = float(row["mean_jct_s"]) / MISO_STORED_AVG_JCT_S[policy] - 1
        assert abs(gap) <= TOLERANCE[policy], (policy, gap)
    assert [rows[p]["oracle"] for p in ("mig_oracle", "miso")] == ["1", "0"]
    jct = {p: float(rows[p]["mean_jct_s"]) for p in rows}
    assert jct["mig_oracle"] < jct["miso"] < jct["mig_static"] < jct["mig_full"]


def test_the_miso_workload_is_the_artifacts_and_needs_mig() -> None:
    preset = EVALUATION_PRESETS["miso"]
    assert (preset.cluster, preset.headless, dict(preset.simulator)["sharing"]) == (
        "miso",
        True,
        "mig",
    )
    workload = WorkloadConfig.from_any("miso")
    assert workload.sharing() == "mig"
    jobs = workload.generate(0)
    assert len(jobs) == 100 and jobs == workload.generate(123)  # the artifact's seed, not ours
    assert jobs[0].arrival_s == 35.0 and jobs[0].restart_s == 2.06
