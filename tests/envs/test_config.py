"""Configuration: defaults, dict / dataclass equivalence, and clear rejections."""

from __future__ import annotations

import gymnasium as gym
import pytest

import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.envs import (
    EnvConfig,
    GPUShareEnv,
    InvalidActionError,
    LimitsConfig,
    RewardConfig,
)
from gpushare_env.sim.decisions import Schedule, Suspend


def test_defaults_are_documented_quick_episode() -> None:
    config = EnvConfig()
    assert (config.cluster, config.workload, config.num_jobs) == ("thesis", "thesis", 100)
    assert (config.windows.pending, config.windows.running) == (16, 16)
    assert config.reward == RewardConfig(jct=1.0, invalid=1.0)
    assert config.invalid_action == "noop"
    assert config.decision_cap(100) == 50 * 100 + 1000


def test_dict_and_dataclass_and_kwargs_agree() -> None:
    as_dict = GPUShareEnv({"cluster": "tiny", "num_jobs": 7, "reward": {"makespan": 0.5}})
    as_config = GPUShareEnv(
        EnvConfig(cluster="tiny", num_jobs=7, reward=RewardConfig(makespan=0.5))
    )
    as_kwargs = GPUShareEnv(cluster="tiny", num_jobs=7, reward={"makespan": 0.5})
    assert as_dict.config == as_config.config == as_kwargs.config
    made = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 7})
    assert made.unwrapped.config.num_jobs == 7


def test_unknown_key_lists_allowed_and_suggests() -> None:
    with pytest.raises(ValueError, match="unknown key") as error:
        EnvConfig.from_any({"pendng_window": 8})
    message = str(error.value)
    assert "pending_window" in message and "running_window" in message
    assert "did you mean 'pending_window'" in message
    with pytest.raises(ValueError, match="unknown key"):
        gym.make("GPUShare-v0", config={"clutser": "tiny"})


def test_unknown_reward_component_lists_allowed() -> None:
    with pytest.raises(ValueError, match=r"reward: unknown key.*'starvation'"):
        EnvConfig.from_any({"reward": {"jtc": 1.0}})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("pending_window", 0, r"EnvConfig\.windows\.pending must be an int in \[1, 1024\]"),
        ("running_window", 2000, r"EnvConfig\.windows\.running must be an int in \[1, 1024\]"),
        ("running_window", 2.0, r"EnvConfig\.windows\.running must be an int"),
        ("num_jobs", 0, r"EnvConfig\.num_jobs must be None or an int >= 1"),
        ("time_scale_s", 0.0, r"EnvConfig\.reward\.time_scale_s must be a finite number > 0"),
        ("invalid_action", "ignore", r"invalid_action must be one of \['noop', 'raise'\]"),
        (
            "invalid_penalty",
            -1.0,
            r"EnvConfig\.reward\.invalid_penalty must be a finite number >= 0",
        ),
        ("duration_info", "exact", r"EnvConfig\.simulator\.duration_info must be one of"),
        ("sample_iterations", -1, r"EnvConfig\.simulator\.sample_iterations must be an int >= 0"),
        ("sample_noise", 1.0, r"EnvConfig\.simulator\.sample_noise must be a number in \[0, 1\)"),
        ("max_decisions", 0, r"EnvConfig\.limits\.max_decisions must be None or an int >= 1"),
        ("max_time_s", -5, r"EnvConfig\.limits\.max_time_s must be None or a number > 0"),
        ("auto_advance", 1, r"EnvConfig\.auto_advance must be True or False"),
        ("on_unfit", "drop", r"EnvConfig\.on_unfit must be one of"),
        ("cluster", "huge", r"EnvConfig.cluster: unknown preset 'huge'"),
        ("cluster", {"nodes": 2, "gpu": "v100"}, r"cluster: unknown keys \['gpu'\]"),
        ("workload", "phily", r"EnvConfig.workload: .*neither a preset"),
        ("workload", {"kind": "thesis", "jobz": 3}, r"EnvConfig.workload: .*unknown keys"),
        ("jobs", [], r"jobs must be None or a non-empty sequence of JobSpec"),
        ("reward", {"jct": float("nan")}, r"EnvConfig\.reward\.jct must be a finite number"),
    ],
)
def test_bad_values_name_field_and_range(key: str, value: object, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        EnvConfig.from_any({key: value})


def test_bad_render_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GPUShareEnv(render_mode="human")


def test_reset_rejects_unknown_options() -> None:
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 3})
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['job'\]"):
        env.reset(seed=0, options={"job": []})


def test_max_suspends_per_job_masks_suspend_after_the_cap() -> None:
    env = gym.make(
        "GPUShare-v0",
        config={
            "cluster": "tiny",
            "num_jobs": 3,
            "max_suspends_per_job": 1,
            "invalid_action": "raise",
            "running_window": 2,
            "pending_window": 2,
        },
    ).unwrapped
    env.reset(seed=0)
    first = env.view.pending(1)[0]
    env.step(env.encode_decision(Schedule(first, "exclusive")))
    suspend = env.encode_decision(Suspend(first))
    assert env.action_masks()[suspend]  # never suspended yet: allowed
    env.step(suspend)
    # run until the job is back in the pending window, then resume and run it again
    while env.view.job(first).status.name != "RUNNING":
        if first in env.view.pending(2):
            env.step(env.encode_decision(Schedule(first, "exclusive")))
        else:
            env.step(env.encode_decision(env.decode_action(env.action_space.n - 1)))
    assert env.view.job(first).suspends == 1
    suspend = env.encode_decision(Suspend(first))
    assert not env.action_masks()[suspend]  # capped
    with pytest.raises(InvalidActionError, match="max_suspends_per_job"):
        env.step(suspend)


def test_max_suspends_per_job_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="max_suspends_per_job"):
        EnvConfig(limits=LimitsConfig(max_suspends_per_job=-1))
