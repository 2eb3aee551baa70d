"""The shipped agent loads, fits the env it was trained for, and replays its recorded numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import baselines
from agents import ZOO_DIR
from gpushare_env.presets import PHILLY_TEST_SEEDS, PHILLY_TRAIN_SEED_POOL
from gpushare_eval.cards import RECORDED_KEYS, card_run
from gpushare_eval.runs import execute_run

_RECORDS = sorted(ZOO_DIR.glob("*.json"))


def test_a_model_is_shipped() -> None:
    assert _RECORDS, f"no shipped agent in {ZOO_DIR}"
    for record_path in _RECORDS:
        model = record_path.with_suffix(".zip")
        assert model.is_file(), f"{record_path.name} has no model beside it"
        assert model.stat().st_size < 5 * 2**20, "a shipped model must stay small"
        record = json.loads(record_path.read_text())
        assert record["command"] and isinstance(record["seed"], int)
        assert not set(record["train"]["train_seeds"]) & set(PHILLY_TEST_SEEDS)
        assert not set(record["train"]["eval_seeds"]) & set(PHILLY_TEST_SEEDS)
        assert set(record["train"]["train_seeds"]) <= set(PHILLY_TRAIN_SEED_POOL)
        for run in record.get("lineage", []):  # every run that made it, if it resumed
            assert run["command"] and set(run["train_seeds"]) <= set(PHILLY_TRAIN_SEED_POOL)


def _recorded_policies(record: dict) -> list[str]:
    """Every heuristic a shipped record names: its teacher and reward reference (in the
    training config and in each command that made it) and the baselines it was compared
    with."""
    names = [record["train"].get("bc_heuristic"), record["train"].get("reward_reference")]
    names.append(record.get("bc", {}).get("heuristic"))
    for run in [record, *record.get("lineage", [])]:
        command = run.get("command") or []
        names += [
            command[i + 1]
            for i, arg in enumerate(command[:-1])
            if arg in ("--teacher", "--bc-teacher", "--reward-reference")
        ]
    for table in (record.get("comparison") or {}).get("table", {}).values():
        names += [name for name in table if name != "agent"]
    return [name for name in names if name]


@pytest.mark.parametrize("record_path", _RECORDS, ids=[p.stem for p in _RECORDS])
def test_every_policy_a_card_names_is_built_by_that_name(record_path: Path) -> None:
    # A card's teacher and baselines are what a reader re-runs: each name must build, and
    # a renamed policy's old name must not linger in the card (the record lists renames).
    record = json.loads(record_path.read_text())
    card = record_path.with_suffix(".md").read_text()
    for name in _recorded_policies(record):
        if name.partition(":")[0] in baselines.ALIASES:  # an old name, kept readable
            with pytest.warns(FutureWarning, match="is now named"):
                baselines.make(name)
        else:
            baselines.make(name)
        assert name in card, name
    for old, new in record.get("renamed_policies", {}).items():
        with pytest.raises(ValueError, match=re.escape(new)):  # says what it became
            baselines.make(old)
        assert new in _recorded_policies(record)
        assert card.count(old) == 1, old  # only in the card's list of renames


@pytest.mark.slow
@pytest.mark.parametrize("record_path", _RECORDS, ids=[p.stem for p in _RECORDS])
def test_shipped_model_reproduces_its_recorded_evaluation(record_path: Path) -> None:
    # replayed as the card was measured: the harness's run of the shipped file
    record = json.loads(record_path.read_text())
    entry = record["recorded_evaluation"][0]  # one test seed, the first workload
    assert entry["seed"] in PHILLY_TEST_SEEDS
    row = execute_run(
        card_run(record_path.with_suffix(".zip"), entry["env_config"], entry["seed"])
    ).row
    assert row["status"] == "complete"
    for key in RECORDED_KEYS:
        if key in entry["metrics"]:
            assert row[key] == entry["metrics"][key], key


def test_card_intervals_are_the_evaluation_harness_intervals():
    # one CI rule for cards and summary.md: the exact t quantile, also beyond 30 seeds
    # (where a normal 1.96 would be about 2 % too narrow at 40 seeds)
    from gpushare_eval.cards import _mean_ci95
    from gpushare_eval.stats import mean_ci

    values = [float(v) for v in np.random.default_rng(0).normal(10.0, 2.0, size=40)]
    card = _mean_ci95(values)
    harness = mean_ci(values)
    assert card == {"mean": harness.mean, "ci95": harness.half_width}
    normal = 1.96 * harness.std / np.sqrt(len(values))
    assert card["ci95"] > normal * 1.02
    assert _mean_ci95([3.0]) == {"mean": 3.0, "ci95": 0.0}
