"""One set of run arguments (``EnvConfig.run_args``) for the env's reset and headless
runs, and the sharing model a workload brings (an openb pod list: shares)."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest

from gpushare_env.envs.config import EnvConfig, RunArgs
from gpushare_env.sim.engine import Windows
from gpushare_env.workloads import WorkloadConfig
from gpushare_env.workloads.openb import shipped_pod_list_path
from gpushare_eval.runs import prepare_headless

POD_LIST = str(shipped_pod_list_path())


def test_the_run_arguments_are_the_config_s_settings() -> None:
    config = EnvConfig.from_any(
        {"pending_window": 5, "running_window": 3, "window_priority": 0.5, "max_decisions": 77,
         "max_time_s": 9.0, "auto_advance": False, "strategies": ["pack", "exclusive"],
         "max_suspends_per_job": 1}
    )  # fmt: skip
    args = config.run_args()
    assert isinstance(args, RunArgs)
    assert args.sim_config == config.sim_config()
    assert args.windows == Windows(5, 3, 0.5)
    assert args.strategies == ("pack", "exclusive")
    assert (args.auto_advance, args.max_time_s, args.decision_cap(10)) == (False, 9.0, 77)
    assert args.sharing == "memory"
    with pytest.raises(dataclasses.FrozenInstanceError):
        args.max_time_s = 1.0  # type: ignore[misc]
    options = args.episode_options(10, invalid_penalty=2.0)
    assert (options.decision_cap, options.max_time_s) == (77, 9.0)
    assert options.strategies == args.strategies
    assert (options.auto_advance, options.invalid_penalty) == (False, 2.0)
    assert EnvConfig().run_args().decision_cap(100) == 50 * 100 + 1000


def test_the_env_and_a_headless_run_take_the_same_arguments() -> None:
    settings = {"cluster": "tiny2", "num_jobs": 9, "pending_window": 4, "max_decisions": 50,
                "strategies": ["spread", "pack"]}  # fmt: skip
    env = gym.make("GPUShare-v0", config=settings)
    env.reset(seed=3)
    sim = env.unwrapped.simulator
    headless = prepare_headless(settings, seed=3)
    assert headless.args == env.unwrapped.config.run_args()
    assert (sim.config, sim.windows) == (headless.args.sim_config, headless.args.windows)
    assert len(sim.jobs) == len(headless.jobs)
    assert [sim.jobs[job.job_id].spec for job in headless.jobs] == headless.jobs
    with pytest.raises(ValueError, match=r"lack \['exclusive', 'min_frag'\]"):
        headless.make_policy("thesis")  # refused headless, as in this env
    assert headless.make_policy("random").allowed_strategies == ("spread", "pack")


def test_an_openb_pod_list_brings_the_shares_model() -> None:
    assert WorkloadConfig.from_any(POD_LIST).sharing() == "shares"
    assert WorkloadConfig.from_any("philly").sharing() is None
    assert EnvConfig.from_any({"workload": POD_LIST}).simulator.sharing == "shares"
    assert EnvConfig.from_any({"workload": POD_LIST, "sharing": "shares"}).simulator.sharing == (
        "shares"
    )
    nested = EnvConfig.from_any({"workload": POD_LIST, "simulator": {"interference": "measured"}})
    assert nested.simulator.sharing == "shares"
    assert EnvConfig.from_any(EnvConfig(), workload=POD_LIST).simulator.sharing == "shares"
    assert EnvConfig.from_any({"workload": "philly"}).simulator.sharing == "memory"
    config = EnvConfig.from_any({"workload": POD_LIST})
    assert EnvConfig.from_any(config.flat()) == config == EnvConfig.from_any(config.as_dict())


def test_a_sharing_model_contradicting_the_workload_s_is_refused() -> None:
    with pytest.raises(ValueError, match=r"EnvConfig.simulator.sharing: .* is an openb pod list"):
        EnvConfig.from_any({"workload": POD_LIST, "sharing": "memory"})
    with pytest.raises(ValueError, match="leave it unset"):
        gym.make("GPUShare-v0", config={"workload": POD_LIST, "simulator": {"sharing": "memory"}})
