"""``gpushare-evaluate --preset miso``: MISO's scenario headless on the simulator's MIG
model, its four policies against the artifact's stored averages, the oracle kept out of
the ranking, and the workload's own sharing model."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from gpushare_env.presets import EVALUATION_PRESETS
from gpushare_env.workloads import WorkloadConfig
from gpushare_env.workloads.miso import MISO_STORED_AVG_JCT_S
from gpushare_eval.cli import evaluate

#: The core's gaps to the stored averages (docs/mig.md): restarts as drawn (the oracle's is
#: the documented 5.6%), and as the artifact's 1 s step charges them.
TOLERANCE = {
    "miso": {"mig_full": 0.0, "mig_static": 0.01, "miso": 0.03, "mig_oracle": 0.06},
    "miso_steps": {"mig_full": 0.0, "mig_static": 0.01, "miso": 0.03, "mig_oracle": 0.03},
}


def test_the_preset_runs_the_four_policies_headless_within_their_gaps(tmp_path: Path) -> None:
    assert evaluate.main(["--preset", "miso", "--out", str(tmp_path), "--workers", "1"]) == 0
    with open(tmp_path / "runs.csv", encoding="utf-8") as handle:
        rows = {(row["workload"], row["policy"]): row for row in csv.DictReader(handle)}
    assert set(rows) == {(w, p) for w in TOLERANCE for p in MISO_STORED_AVG_JCT_S}
    for (workload, policy), row in rows.items():
        assert row["status"] == "complete" and row["mode"] == "headless"
        gap = float(row["mean_jct_s"]) / MISO_STORED_AVG_JCT_S[policy] - 1
        assert abs(gap) <= TOLERANCE[workload][policy], (workload, policy, gap)
        assert row["oracle"] == ("1" if policy == "mig_oracle" else "0")
    for workload in TOLERANCE:
        jct = {p: float(rows[workload, p]["mean_jct_s"]) for p in MISO_STORED_AVG_JCT_S}
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
    steps = WorkloadConfig.from_any("miso_steps").generate(0)
    assert steps[0].restart_s == 2.0  # ceil(2.06) - 1
    assert all(s.restart_s == math.ceil(j.restart_s) - 1 for s, j in zip(steps, jobs, strict=True))
