"""The reward relative to a reference heuristic, and the critic warm-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import baselines
from agents.envs import make_env
from agents.reference import JobsInSystem, MeanProfile, Plays, RelativeReward, reference_profile
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


def test_a_short_episode_is_measured_against_the_short_reference() -> None:
    """Under a curriculum (``reset(options={"num_jobs": n})``) the reference plays the
    same short episode, and the agent's plays of it are kept apart from the full ones."""
    plays = Plays(keep=1)
    env = RelativeReward(make_env(_CONFIG), _CONFIG, "thesis", plays)
    steps: list[Step] = []
    short = rollout(
        baselines.make("thesis", env), env, seed=1, options={"num_jobs": 4}, callback=steps.append
    )
    assert short.reset_info["num_jobs"] == 4
    raw = sum(s.info["reward_terms"]["jct"] for s in steps)
    assert raw < 0.0 and short.total_reward == pytest.approx(0.0, abs=1e-9)
    assert plays.reference(1, 4) is not None and plays.reference(1) is None


def test_relative_reward_needs_the_seed() -> None:
    env = RelativeReward(make_env(_CONFIG), _CONFIG, "thesis")
    with pytest.raises(ValueError, match="seed"):
        env.reset()


def test_mean_profile_by_hand() -> None:
    a = JobsInSystem(np.array([0.0, 5.0]), np.array([10.0, 20.0]))  # total 25, ends at 20
    b = JobsInSystem(np.array([0.0]), np.array([40.0]))  # total 40, ends at 40
    mean = MeanProfile([a, b])
    assert mean.total == pytest.approx(32.5) and mean.end_s == 40.0
    assert mean.integral(7.0) == pytest.approx((9.0 + 7.0) / 2)
    assert mean.busy(30.0) == pytest.approx((20.0 + 30.0) / 2)
    with pytest.raises(ValueError, match="at least one"):
        MeanProfile([])


def test_plays_keep_the_last_plays_of_each_seed() -> None:
    plays = Plays(keep=2)
    assert plays.reference(3) is None
    one, two, three = (JobsInSystem(np.array([0.0]), np.array([t])) for t in (10.0, 20.0, 60.0))
    for profile in (one, two, three):
        plays.add(3, profile)
    reference = plays.reference(3)
    assert reference is not None and reference.total == pytest.approx(40.0)  # (20 + 60) / 2
    assert plays.reference(4) is None and len(plays) == 2
    with pytest.raises(ValueError, match="keep"):
        Plays(keep=0)


def test_own_plays_replace_the_heuristic_as_the_reference() -> None:
    """A replay of the same policy on a seed it has played scores zero against itself;
    the first play is measured against the heuristic, and the added total stays a
    constant of the seed and the kept plays whatever the agent does."""
    plays = Plays(keep=1)
    env = RelativeReward(make_env(_CONFIG), _CONFIG, "thesis", plays)
    first = rollout(baselines.make("fifo", env), env, seed=4)
    alone = RelativeReward(make_env(_CONFIG), _CONFIG, "thesis")
    assert first.total_reward == pytest.approx(
        rollout(baselines.make("fifo", alone), alone, seed=4).total_reward
    )
    assert first.total_reward != pytest.approx(0.0, abs=1e-6)  # fifo is not thesis
    assert len(plays) == 1
    again = rollout(baselines.make("fifo", env), env, seed=4)
    plain = make_env(_CONFIG)
    raw = rollout(baselines.make("fifo", plain), plain, seed=4)
    assert abs(raw.total_reward) > 1.0
    assert again.total_reward == pytest.approx(0.0, abs=1e-9 * abs(raw.total_reward))
    # thesis measured against fifo's play: thesis's plain return minus fifo's
    other = rollout(baselines.make("thesis", env), env, seed=4)
    plain_thesis = rollout(baselines.make("thesis", plain), plain, seed=4)
    assert other.total_reward == pytest.approx(plain_thesis.total_reward - raw.total_reward)
    assert other.total_reward != pytest.approx(0.0, abs=1e-6)


def test_reference_plays_need_a_reference(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reference_plays"):
        TrainConfig.from_any(**_TINY, out=str(tmp_path), reference_plays=2)
    with pytest.raises(ValueError, match="reference_plays"):
        TrainConfig.from_any(
            **_TINY, out=str(tmp_path), reward_reference="thesis", reference_plays=-1
        )


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


@pytest.mark.slow
def test_training_with_own_plays_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added: list[int] = []
    add = Plays.add

    def spy(self: Plays, seed: int, profile: JobsInSystem, num_jobs: int | None) -> None:
        added.append(seed)
        add(self, seed, profile, num_jobs)

    monkeypatch.setattr(Plays, "add", spy)
    config = TrainConfig.from_any(
        **_TINY,
        out=str(tmp_path),
        timesteps=512,
        reward_reference="thesis",
        reference_plays=2,
        curriculum_jobs=3,
        curriculum_steps=256,
    )
    path = train(config)
    assert added and set(added) <= set(config.envs.train_seeds)  # finished episodes kept
    record = json.loads((path.parent / "config.json").read_text())
    assert record["train"]["reference_plays"] == 2
