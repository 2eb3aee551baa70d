"""The reward relative to a reference heuristic, and the critic warm-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import baselines
from agents.envs import make_env
from agents.reference import JobsInSystem, RelativeReward, reference_profile
from agents.training import TrainConfig, load_model, train
from gpushare_env.rollout import Step, rollout
from tests.agents.helpers import TINY_TRAINING


def test_jobs_in_system_integral_by_hand() -> None:
    # job a in [0, 10), job b in [5, 20): 1 job, then 2, then 1
    profile = JobsInSystem(np.array([0.0, 5.0]), np.array([10.0, 20.0]))
    assert profile.integral(-1.0) == 0.0
    assert profile.integral(5.0) == pytest.approx(5.0)
    assert profile.integral(7.0) == pytest.approx(9.0)
    assert profile.integral(10.0) == pytest.approx(15.0)
    assert profile.integral(30.0) == pytest.approx(25.0)
    assert profile.total == pytest.approx(25.0)  # = the sum of the JCTs, 10 + 15
    assert [profile.busy(t) for t in (-1.0, 4.0, 25.0)] == [0.0, 4.0, 20.0]
    with pytest.raises(ValueError, match="arrival before its finish"):
        JobsInSystem(np.array([3.0]), np.array([1.0]))
    with pytest.raises(ValueError, match=">= 1 job"):
        JobsInSystem(np.array([]), np.array([]))


_WEIGHTS = {"jct": 1.0, "makespan": 3.0, "invalid": 1.0}
_CONFIG: dict[str, Any] = {
    "cluster": "tiny",
    "workload": "thesis_poisson",
    "num_jobs": 10,
    "reward": _WEIGHTS,
}


def _play(policy_name: str, seed: int, reference: str) -> tuple[float, float, float]:
    """(sum of wrapped rewards, sum of raw rewards, reset time) of one episode."""
    env = RelativeReward(make_env(_CONFIG), _CONFIG, reference)
    steps: list[Step] = []
    episode = rollout(baselines.make(policy_name, env), env, seed=seed, callback=steps.append)
    raw = 0.0
    for step in steps:
        raw += sum(step.info["reward_terms"][k] * w for k, w in _WEIGHTS.items())
    assert episode.terminated
    return episode.total_reward, raw, episode.reset_info["time_s"]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_reference_itself_scores_zero(seed: int) -> None:
    wrapped, raw, _ = _play("thesis", seed, "thesis")
    assert raw < -1.0  # the plain jct reward is far from zero
    assert wrapped == pytest.approx(0.0, abs=1e-9 * abs(raw))


def test_the_added_total_does_not_depend_on_the_policy() -> None:
    profile = reference_profile(_CONFIG, 2, "thesis")
    totals = []
    for name in ("fifo", "sjf_pack", "gandiva"):
        wrapped, raw, reset_s = _play(name, 2, "thesis")
        added = wrapped - raw
        jobs = profile.total - profile.integral(reset_s)
        span = profile.end_s - max(reset_s, profile.start_s)
        assert added == pytest.approx((jobs + 3.0 * span) / 3600.0)
        totals.append(added)
    assert max(totals) == pytest.approx(min(totals))


def test_relative_reward_needs_the_seed() -> None:
    env = RelativeReward(make_env(_CONFIG), _CONFIG, "thesis")
    with pytest.raises(ValueError, match="seed"):
        env.reset()


_TINY = {**TINY_TRAINING, "vec_env": "dummy", "extractor": "flat"}


def test_config_checks_reference_and_warmup(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reward_reference"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), reward_reference="no_such_policy")
    with pytest.raises(ValueError, match="critic_warmup"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), algo="dqn", critic_warmup=10)
    with pytest.raises(ValueError, match="critic_warmup"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), critic_warmup=-1)


@pytest.mark.slow
def test_critic_warmup_trains_only_the_value_head(tmp_path: Path) -> None:
    start = train(TrainConfig.from_any(**_TINY, out=str(tmp_path / "a"), timesteps=0))
    warmed = train(
        TrainConfig.from_any(
            **_TINY,
            out=str(tmp_path / "b"),
            timesteps=128,
            critic_warmup=128,
            resume=str(start),
            reward_reference="thesis",
        )
    )
    before = load_model(start).policy.state_dict()
    after = load_model(warmed).policy.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed, "the value head did not learn"
    assert all(k.startswith(("value_net.", "mlp_extractor.value_net.")) for k in changed), changed
    assert any(k.startswith("value_net.") for k in changed)
    # after the warm-up everything trains again
    more = train(
        TrainConfig.from_any(**_TINY, out=str(tmp_path / "c"), timesteps=128, resume=str(warmed))
    )
    final = load_model(more).policy.state_dict()
    assert not torch.equal(after["action_net.weight"], final["action_net.weight"])
