"""``python -m scripts.plain_rl``: plain SB3 trained and measured against the yardsticks."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from gpushare_eval.cli import plain_rl

CONFIG = {"cluster": "tiny", "num_jobs": 6}


def test_it_writes_the_yardsticks_and_a_curve_of_every_seed(tmp_path, capsys) -> None:
    out = tmp_path / "plain.json"
    argv = [
        "--env",
        json.dumps(CONFIG),
        "--seeds",
        "0",
        "1",
        "--steps",
        "2048",
        "--every",
        "1024",
        "--test-seeds",
        "1000-1001",
        "--out",
        str(out),
    ]
    assert plain_rl.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["env"] == CONFIG and result["test_seeds"] == [1000, 1001]
    # the yardsticks are the heuristics' and the uniform policy's mean JCT on those seeds
    expected = plain_rl.mean_jct(lambda env: plain_rl.UniformMasked(0), CONFIG, [1000, 1001])
    assert result["yardsticks"]["uniform_random"] == pytest.approx(expected)
    assert set(result["yardsticks"]) == {*plain_rl.YARDSTICKS, "uniform_random"}
    for seed in (0, 1):
        points = [p for p in result["curve"] if p["seed"] == seed]
        assert [p["timesteps"] for p in points] == [0, 1024, 2048]  # SB3's rollouts: 2,048
        assert all(np.isfinite(p["jct_ratio"]) and p["jct_ratio"] > 0 for p in points)
    assert capsys.readouterr().out.count('"jct_ratio"') == 6


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--env", "{not json"], "--env must be a JSON object"),
        (["--env", "[1]"], "--env must be a JSON object"),
        (["--test-seeds", "a-b"], "--test-seeds: 'a-b' is not a seed or a range"),
        (["--steps", "0"], "--steps and --every must be >= 1"),
    ],
)
def test_bad_options_are_refused_naming_the_option(argv, message, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        plain_rl.main([*argv, "--out", str(tmp_path / "x.json")])
    assert message in capsys.readouterr().err
