"""Rewards on hand-computed episodes, and the episode sums of every reward term.

The scripted episodes run on ``tiny`` (one node of four 16 GiB V100s) with jobs whose
step time is 1 s (so a job of ``n`` iterations lasts ``n`` s alone), ``T = 10 s``, every
reward weight 1 and ``sample_iterations = 0`` (no sampling events). Co-location follows
the analytic sharing model (docs/model.md, *What is modelled*): two workers of intensity
1 on one GPU each run at ``min(1, 1/2) * 0.95 = 0.475`` of solo speed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpushare_env.envs import REWARD_COMPONENTS, GPUShareEnv, InvalidActionError
from gpushare_env.rollout import Step, rollout
from gpushare_env.sim import Schedule, Suspend
from gpushare_env.sim.placement import ALL_STRATEGIES
from tests.envs.helpers import RandomValid
from tests.jobs import job

ALL_ONE = dict.fromkeys(REWARD_COMPONENTS, 1.0)
W = 4  # pending window of the scripted episodes
R = 4  # running window
SUSPEND_0 = 4 * W  # suspend running slot 0
ADVANCE_ACTION = 4 * W + R


def scripted_env(jobs: list, **overrides: object) -> GPUShareEnv:
    config = {
        "cluster": "tiny",
        "jobs": jobs,
        "pending_window": W,
        "running_window": R,
        "time_scale_s": 10.0,
        "reward": ALL_ONE,
        "sample_iterations": 0,
        "invalid_penalty": 0.5,
    }
    config.update(overrides)
    return GPUShareEnv(config)


def check_step(result: tuple, expected: dict[str, float]) -> None:
    """The step's terms equal ``expected`` (others 0) and the reward is their sum."""
    _, reward, *_, info = result
    terms = info["reward_terms"]
    for name in REWARD_COMPONENTS:
        assert terms[name] == pytest.approx(expected.get(name, 0.0), abs=1e-9), name
    assert reward == pytest.approx(sum(expected.values()), abs=1e-9)


def test_sharing_episode_by_hand() -> None:
    # A: 100 it from t=0; B: 50 it from t=10; B joins A's GPU with "pack".
    env = scripted_env([job(0, 0.0, 100), job(1, 10.0, 50)])
    _, info = env.reset(seed=0)
    assert info["time_s"] == 0.0  # auto-advanced to A's arrival
    # 1) schedule A exclusive: no time passes
    check_step(env.step(env.encode_decision(Schedule(0, "exclusive"))), {})
    # 2) advance to B's arrival at t=10: A alone on 1 of 4 GPUs
    #    jct -1*10/10, makespan -10/10, util (1/4)*10/10, slowdown -10/100
    check_step(
        env.step(ADVANCE_ACTION),
        {"jct": -1.0, "makespan": -1.0, "utilisation": 0.25, "slowdown": -0.1},
    )
    # 3) pack B onto A's GPU (8 + 8 GiB fits 16 exactly): both at 0.475 it/s
    result = env.step(env.encode_decision(Schedule(1, "pack")))
    check_step(result, {})
    assert env.view.job(1).gpus == env.view.job(0).gpus == (0,)
    assert env.view.job(1).speed == pytest.approx(0.475)
    # 4) advance: B's 50 it take 50 / 0.475 = 105.263 s -> B done at 115.263; meanwhile
    #    A did 50 more of its 100 it (10 alone before). Over those 105.263 s:
    #    jct -2*dt/10, makespan -dt/10, util (min(1, U=2)/4)*dt/10 (one GPU busy),
    #    slowdown -(1/100 + 1/50)*dt
    dt = 50 / 0.475
    check_step(
        env.step(ADVANCE_ACTION),
        {
            "jct": -2 * dt / 10,
            "makespan": -dt / 10,
            "utilisation": 0.25 * dt / 10,
            "slowdown": -(1 / 100 + 1 / 50) * dt,
            # delay: 2 jobs in the system making 2 x 0.475 solo seconds of progress a second
            "delay": -(2 - 2 * 0.475) * dt / 10,
        },
    )
    assert env.view.now_s == pytest.approx(10 + dt)
    # 5) A alone again at speed 1: its last 40 it take 40 s -> done at 155.263 (no delay
    #    term: A runs at solo speed)
    result = env.step(ADVANCE_ACTION)
    check_step(
        result,
        {"jct": -4.0, "makespan": -4.0, "utilisation": 0.25 * 4.0, "slowdown": -0.4},
    )
    _, _, terminated, truncated, info = result
    assert terminated and not truncated
    end = 10 + dt + 40
    # total JCT = 155.263 + 105.263: the jct terms summed to -(that) / T = -26.05
    assert info["metrics"]["mean_jct_s"] == pytest.approx((end + dt) / 2)
    assert info["metrics"]["makespan_s"] == pytest.approx(end)


def test_suspend_resume_invalid_episode_by_hand() -> None:
    # A: 100 it from t=0 (resnet50: suspend 3 s, resume 20 s); B: 10 it from t=50.
    env = scripted_env([job(0, 0.0, 100), job(1, 50.0, 10)])
    env.reset(seed=0)
    # 1) schedule A exclusive at t=0
    check_step(env.step(0), {})
    # 2) suspend A: it checkpoints for 3 s holding its GPU; nothing else can happen, so
    #    the env auto-advances to t=3 (A waits again). Over 3 s: jct -0.3, makespan -0.3,
    #    no compute (delay -0.3), slowdown -3/100, overhead -(1 GPU)*3/10
    result = env.step(env.encode_decision(Suspend(0)))
    check_step(
        result,
        {"jct": -0.3, "makespan": -0.3, "slowdown": -0.03, "overhead": -0.3, "delay": -0.3},
    )
    assert result[-1]["time_s"] == 3.0 and env.view.job(0).suspended
    # 3) an invalid action (no job runs in slot 0): a no-op costing invalid_penalty
    result = env.step(SUSPEND_0)
    check_step(result, {"invalid": -0.5})
    assert result[-1]["invalid"] and result[-1]["time_s"] == 3.0
    # 4) advance to B's arrival at t=50 while A waits: starvation is the integral of A's
    #    wait, (47^2 / 2) / 10^2 = 11.045; jct -4.7, makespan -4.7, slowdown -0.47, delay -4.7
    check_step(
        env.step(ADVANCE_ACTION),
        {
            "jct": -4.7,
            "makespan": -4.7,
            "slowdown": -0.47,
            "starvation": -(47**2 / 2) / 100,
            "delay": -4.7,
        },
    )
    # 5) B (slot 1, it arrived after A) exclusive; 6) resume A exclusive: 20 s restart
    check_step(env.step(env.encode_decision(Schedule(1, "exclusive"))), {})
    check_step(env.step(env.encode_decision(Schedule(0, "exclusive"))), {})
    # 7) advance: B finishes at 60; then only A's restart is left, auto-advanced to 70.
    #    [50, 60]: jct -2, makespan -1, util 0.25, slowdown -(1/100 + 1/10)*10, overhead -1,
    #    delay -1 (B computes at solo speed, A restarts)
    #    [60, 70]: jct -1, makespan -1, slowdown -0.1, overhead -1, delay -1
    check_step(
        env.step(ADVANCE_ACTION),
        {
            "jct": -3.0,
            "makespan": -2.0,
            "utilisation": 0.25,
            "slowdown": -1.2,
            "overhead": -2.0,
            "delay": -2.0,
        },
    )
    # 8) advance: A's 100 it from t=70 to 170
    result = env.step(ADVANCE_ACTION)
    check_step(
        result,
        {"jct": -10.0, "makespan": -10.0, "utilisation": 2.5, "slowdown": -1.0},
    )
    assert result[2]  # terminated
    records = {r.job_id: r for r in env.simulator.records()}
    assert records[0].finish_s == 170.0 and records[0].overhead_gpu_seconds == 23.0


def test_invalid_action_raise_mode() -> None:
    env = scripted_env([job(0, 0.0, 100)], invalid_action="raise")
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="suspends running slot 0"):
        env.step(SUSPEND_0)
    with pytest.raises(InvalidActionError, match="outside Discrete"):
        env.step(10_000)
    with pytest.raises(InvalidActionError, match="only 1 job"):
        env.step(4 * 3 + 1)  # pack the job of pending slot 3: the slot is empty
    env.step(0)  # the valid action still works after the errors


class _RareSuspends:
    """Random valid actions, suspending rarely (or never): else episodes never end."""

    def __init__(self, rng: np.random.Generator, allow_suspend: bool, first_suspend: int):
        self.rng, self.allow_suspend, self.first_suspend = rng, allow_suspend, first_suspend

    def predict(self, obs, state=None, episode_start=None, deterministic=True, action_masks=None):
        mask = action_masks.copy()
        if not self.allow_suspend or self.rng.random() < 0.9:
            mask[self.first_suspend : -1] = False
        valid = np.flatnonzero(mask)
        return np.asarray(valid[self.rng.integers(len(valid))]), state


def _episode_sums(env: GPUShareEnv, seed: int, allow_suspend: bool) -> tuple[dict, GPUShareEnv]:
    sums = dict.fromkeys(REWARD_COMPONENTS, 0.0)
    sums["elapsed_s"] = 0.0

    def add(step: Step) -> None:
        for name, value in step.info["reward_terms"].items():
            sums[name] += value
        assert step.info["elapsed_s"] >= 0.0
        sums["elapsed_s"] += step.info["elapsed_s"]

    policy = _RareSuspends(np.random.default_rng(seed), allow_suspend, 4 * env.pending_window)
    episode = rollout(policy, env, seed=seed, callback=add)
    assert "elapsed_s" not in episode.reset_info  # a reset is not a step
    # the sojourn times add up to the clock
    sums["elapsed_s"] -= episode.info["time_s"] - episode.reset_info["time_s"]
    assert episode.terminated
    sums["reward"] = episode.total_reward
    return sums, env


@pytest.mark.parametrize("seed", [0, 1])  # both episodes suspend jobs (overhead > 0)
def test_episode_sums_match_the_metrics(seed: int) -> None:
    scale = 600.0
    env = GPUShareEnv(
        {
            "cluster": "tiny",
            "workload": "thesis_poisson",
            "num_jobs": 12,
            "time_scale_s": scale,
            "reward": ALL_ONE,
            "invalid_penalty": 0.0,
        }
    )
    sums, env = _episode_sums(env, seed, allow_suspend=True)
    records = env.simulator.records()
    assert len(records) == 12
    # jct: minus the total job completion time, scaled
    assert sums["jct"] == pytest.approx(-sum(r.jct_s for r in records) / scale, rel=1e-9)
    first = min(r.arrival_s for r in records)
    last = max(r.finish_s for r in records)
    assert sums["makespan"] == pytest.approx(-(last - first) / scale, rel=1e-9)
    assert sums["slowdown"] == pytest.approx(-sum(r.slowdown for r in records), rel=1e-9)
    # delay: minus the time lost to waiting, sharing and overheads
    lost_s = sum(r.jct_s - r.solo_duration_s for r in records)
    assert lost_s > 0
    assert sums["delay"] == pytest.approx(-lost_s / scale, rel=1e-9)
    lost = sum(r.overhead_gpu_seconds for r in records)
    assert lost > 0
    assert sums["overhead"] == pytest.approx(-lost / scale, rel=1e-9, abs=1e-12)
    util = env.simulator.timeline()
    busy = float(np.sum(util.compute_in_use * util.durations_s)) / util.num_gpus
    assert sums["utilisation"] == pytest.approx(busy / scale, rel=1e-9)
    assert sums["reward"] == pytest.approx(sum(sums[name] for name in REWARD_COMPONENTS))
    assert sums["elapsed_s"] == pytest.approx(0.0, abs=1e-6)


def test_starvation_sum_without_suspensions() -> None:
    # one waiting stint per job: the starvation terms sum to -sum (wait / T)^2 / 2
    scale = 600.0
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 15, "time_scale_s": scale, "reward": ALL_ONE})
    sums, env = _episode_sums(env, 3, allow_suspend=False)
    expected = -sum((r.queued_s / scale) ** 2 / 2 for r in env.simulator.records())
    assert expected < 0  # someone waited
    assert sums["starvation"] == pytest.approx(expected, rel=1e-9)


def test_default_reward_is_jct_only() -> None:
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 6})

    def check(step: Step) -> None:
        terms = step.info["reward_terms"]
        assert step.reward == terms["jct"] + terms["invalid"]

    episode = rollout(RandomValid(np.random.default_rng(0)), env, seed=4, callback=check)
    assert not math.isnan(episode.metrics["mean_jct_s"])


@pytest.mark.parametrize("cluster", ["tiny", "mixed"])
def test_delay_sums_to_the_jct_term_plus_the_solo_work_also_when_truncated(cluster) -> None:
    # Every solo second of work is done during the episode or charged at its cut, so over
    # any episode delay - jct = (sum of solo durations of all jobs) / T; on ``mixed`` jobs
    # on faster GPUs than V100s make progress faster than solo.
    scale = 600.0
    config = {"cluster": cluster, "workload": "philly", "num_jobs": 20, "time_scale_s": scale}
    for limits in ({}, {"max_decisions": 15}):
        env = GPUShareEnv({**config, "reward": ALL_ONE, "limits": limits})
        sums = dict.fromkeys(REWARD_COMPONENTS, 0.0)

        def add(step: Step, sums: dict = sums) -> None:
            for name, value in step.info["reward_terms"].items():
                sums[name] += value

        episode = rollout(RandomValid(np.random.default_rng(1)), env, seed=2, callback=add)
        assert episode.truncated == bool(limits)
        solo = sum(job.spec.solo_duration_s for job in env.simulator.jobs.values())
        assert sums["delay"] - sums["jct"] == pytest.approx(solo / scale, rel=1e-9)


def test_an_enum_the_core_numbers_otherwise_is_refused_at_import_naming_both() -> None:
    from gpushare_env.sim.engine import check_core_enums

    for name, order in (("REWARD_COMPONENTS", REWARD_COMPONENTS), ("STRATEGIES", ALL_STRATEGIES)):
        check_core_enums(name, order)  # the shipped core agrees
        swapped = (order[1], order[0], *order[2:])
        with pytest.raises(ImportError, match=f"numbers {name} as .*, Python as .*rebuild"):
            check_core_enums(name, swapped)
    with pytest.raises(ImportError, match="numbers REWARD_COMPONENTS"):
        check_core_enums("REWARD_COMPONENTS", REWARD_COMPONENTS[:-1])


def test_the_core_computes_one_term_per_reward_component_and_refuses_other_counts() -> None:
    from gpushare_env.compiled._core import REWARD_TERMS

    assert len(REWARD_COMPONENTS) == REWARD_TERMS
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 3})
    env._weights = env._weights[:-1]  # what a stale caller of the engine would pass
    with pytest.raises(ValueError, match=f"expected {REWARD_TERMS} .* got {REWARD_TERMS - 1}"):
        env.reset(seed=0)
