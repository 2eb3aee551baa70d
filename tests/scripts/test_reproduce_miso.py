"""``gpushare-reproduce-miso``: the table of MISO's four policies by engine beside the
artifact's stored averages, its CSV and plots, and bad options as usage errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpushare_env.workloads.miso import MISO_STORED_AVG_JCT_S
from gpushare_eval.cli import reproduce_miso

ENGINES = ("artifact rules", "core", "core, step overheads")


def test_the_table_holds_every_policy_and_engine_within_the_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert reproduce_miso.main(["--out", str(tmp_path)]) == 0
    with open(tmp_path / "miso.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["policy"], r["engine"]) for r in rows] == [
        (p, e) for p in reproduce_miso.ARTIFACT_POLICIES for e in ENGINES
    ]
    jct = {(r["policy"], r["engine"]): float(r["avg_jct_s"]) for r in rows}
    for policy, stored in MISO_STORED_AVG_JCT_S.items():
        assert jct[policy, "artifact rules"] == stored  # the artifact's rules: exact
    for engine in ENGINES:
        order = [jct[p, engine] for p in ("mig_oracle", "miso", "mig_static", "mig_full")]
        assert order == sorted(order) and len(set(order)) == 4, engine
    printed = capsys.readouterr().out
    assert "| miso | core | 1216.52 | 1216.03 | +0.04% |" in printed
    assert (tmp_path / "miso_table.md").read_text(encoding="utf-8").strip() in printed
    pytest.importorskip("matplotlib")
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        f"miso_partitions_{p}.png" for p in reproduce_miso.ARTIFACT_POLICIES
    )


def test_a_bad_seed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        reproduce_miso.main(["--seed", "-1"])
    assert exit_info.value.code == 2
    assert "--seed: must be >= 0, got -1" in capsys.readouterr().err
