"""The suspension rules (a budget per job, a quantum after a resume) and the charge of a
truncated episode: what makes the env explorable by a learner.

- A uniform random masked policy finishes every episode of every preset.
- The valid decisions of an episode are at most ``(4 + 4 S)`` per job (``S`` the budget):
  a job is started once and resumed at most ``S`` times, suspended at most ``S`` times,
  and every ``advance`` processes at least one of its at most ``3 + 2 S`` events
  (arrival, sampling done, ``S`` suspends and ``S`` resumes done, finish).
- The mask, ``Simulator.suspend`` and ``SimView.can_suspend`` are one rule.
- A truncated episode's last step charges the sequential cost of the unfinished jobs.
"""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import numpy as np
import pytest

import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.presets import EVALUATION_PRESETS
from gpushare_env.sim import InvalidDecision, JobStatus, SimConfig, Simulator, make_cluster
from tests.jobs import job


def play_random(env: gym.Env, seed: int) -> tuple[int, int, bool, bool, dict]:
    """A uniform random masked policy: (valid decisions, suspends, terminated, truncated,
    last info)."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    inner = env.unwrapped
    first_suspend = 4 * inner.pending_window
    decisions = suspends = 0
    while True:
        mask = inner.action_masks()
        action = int(rng.choice(np.flatnonzero(mask)))
        suspends += first_suspend <= action < inner.action_space.n - 1
        _, _, terminated, truncated, info = env.step(action)
        decisions += 1
        if terminated or truncated:
            return decisions, suspends, terminated, truncated, info


EPISODES = [
    (preset.name, workload, preset.cluster, preset.num_jobs)
    for preset in EVALUATION_PRESETS.values()
    for workload in preset.workloads
]


@pytest.mark.parametrize(("preset", "workload", "cluster", "num_jobs"), EPISODES)
def test_a_random_masked_policy_finishes_every_preset_episode(
    preset: str, workload: str, cluster: str, num_jobs: int
) -> None:
    env = gym.make(
        "GPUShare-v0", config={"cluster": cluster, "workload": workload, "num_jobs": num_jobs}
    )
    budget = env.unwrapped.config.limits.max_suspends_per_job
    assert budget == 3  # the default rules
    for seed in (0, 1, 2):
        decisions, suspends, terminated, truncated, info = play_random(env, seed)
        assert terminated and not truncated, (preset, workload, seed, info["jobs_done"])
        jobs = len(env.unwrapped.simulator.jobs)
        assert decisions <= (4 + 4 * budget) * jobs
        assert suspends <= budget * jobs


@pytest.mark.parametrize("cluster", ["tiny", "tiny2", "thesis", "medium", "mixed"])
@pytest.mark.parametrize("budget", [0, 1, 2])
def test_decisions_per_job_are_bounded_by_the_budget(cluster: str, budget: int) -> None:
    workload = {"preset": "philly", "load": 2.0, "duration_scale": 1.0 / 60.0}
    env = gym.make(
        "GPUShare-v0",
        config={
            "cluster": cluster,
            "workload": workload,
            "num_jobs": 60,
            "windows": {"pending": 4, "running": 4},
            "limits": {"max_suspends_per_job": budget},
        },
    )
    for seed in (0, 1):
        decisions, suspends, terminated, _, _ = play_random(env, seed)
        jobs = len(env.unwrapped.simulator.jobs)
        assert terminated
        assert decisions <= (4 + 4 * budget) * jobs
        assert suspends <= budget * jobs
        per_job = [state.suspends for state in env.unwrapped.simulator.jobs.values()]
        assert max(per_job) <= budget


def test_the_mask_the_view_and_the_simulator_apply_one_rule() -> None:
    env = gym.make(
        "GPUShare-v0",
        config={
            "cluster": "thesis",
            "workload": "thesis",
            "num_jobs": 40,
            "limits": {"max_suspends_per_job": 2, "min_service_s": 300.0},
        },
    )
    inner = env.unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=3)
    first_suspend = 4 * inner.pending_window
    checked = refused = 0
    done = False
    while not done:
        mask = inner.action_masks()
        sim = inner.simulator
        for slot, job_id in enumerate(sim.running(inner.running_window)):
            allowed = bool(mask[first_suspend + slot])
            assert inner.view.can_suspend(job_id) == allowed
            if not allowed and refused < 5:  # the simulator refuses it, naming the rule
                with pytest.raises(InvalidDecision, match=r"max_suspends_per_job|min_service_s"):
                    copy.deepcopy(sim).suspend(job_id)
                refused += 1
            checked += 1
        action = int(rng.choice(np.flatnonzero(mask)))
        _, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert terminated
    assert checked > 100 and refused > 0


def test_a_resumed_job_serves_its_quantum_before_the_next_suspension() -> None:
    jobs = [job(0, 0.0, 10_000), job(1, 0.0, 50), job(2, 0.0, 150)]
    config = SimConfig(sample_iterations=0, min_service_s=100.0)
    sim = Simulator(jobs, make_cluster("tiny"), config)
    sim.advance()  # the arrivals
    sim.schedule(0, "exclusive")
    assert sim.can_suspend(0)  # a first run has no quantum
    sim.suspend(0)
    sim.advance()  # suspended
    sim.schedule(0, "exclusive")
    sim.advance()  # resumed: computing again from now
    assert sim.jobs[0].status == JobStatus.RUNNING
    resumed_at = sim.now_s
    assert not sim.can_suspend(0)
    with pytest.raises(InvalidDecision, match=r"min_service_s=100"):
        sim.suspend(0)
    sim.schedule(1, "exclusive")
    sim.schedule(2, "exclusive")
    sim.advance()  # job 1 finishes 50 s after the resume
    assert sim.now_s == pytest.approx(resumed_at + 50.0)
    assert not sim.can_suspend(0)
    sim.advance()  # job 2 finishes 150 s after it
    assert sim.now_s == pytest.approx(resumed_at + 150.0)
    assert sim.can_suspend(0)
    sim.suspend(0)


def test_the_budget_counts_every_suspension() -> None:
    jobs = [job(0, 0.0, 10_000)]
    config = SimConfig(sample_iterations=0, max_suspends_per_job=1)
    sim = Simulator(jobs, make_cluster("tiny"), config)
    sim.advance()
    sim.schedule(0, "exclusive")
    sim.suspend(0)
    sim.advance()
    sim.schedule(0, "exclusive")
    sim.advance()
    assert not sim.can_suspend(0)
    with pytest.raises(InvalidDecision, match=r"already suspended 1 time.*max_suspends_per_job=1"):
        sim.suspend(0)


def sequential_cost(sim: Simulator) -> tuple[float, float]:
    """The unfinished jobs run one at a time from now, alone, in arrival order."""
    now = sim.now_s
    t = now
    jct = 0.0
    for state in sorted(sim.jobs.values(), key=lambda s: (s.spec.arrival_s, s.job_id)):
        if state.status == JobStatus.FINISHED:
            continue
        start = max(now, state.spec.arrival_s)
        t = max(t, start)
        left = state.spec.iterations - sim.progress_of(state.job_id)
        t += left * state.spec.step_time_s
        if state.status in (JobStatus.SUSPENDED, JobStatus.SUSPENDING):
            t += state.resume_overhead_s
        jct += t - start
    return jct, t - now


def test_a_truncated_episode_is_charged_the_sequential_cost_of_its_unfinished_jobs() -> None:
    scale = 3600.0
    env = gym.make(
        "GPUShare-v0",
        config={
            "cluster": "thesis",
            "workload": "thesis_poisson",
            "num_jobs": 60,
            "reward": {"jct": 1.0, "makespan": 1.0, "time_scale_s": scale},
            "limits": {"max_decisions": 80},
        },
    )
    inner = env.unwrapped
    rng = np.random.default_rng(1)
    env.reset(seed=0)
    jct_sum = makespan_sum = 0.0
    while True:
        mask = inner.action_masks()
        _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        jct_sum += info["reward_terms"]["jct"]
        makespan_sum += info["reward_terms"]["makespan"]
        if terminated or truncated:
            break
    assert truncated and not terminated
    sim = inner.simulator
    jct_left, makespan_left = sequential_cost(sim)
    assert sim.truncation_cost() == pytest.approx((jct_left, makespan_left), rel=1e-9)
    assert jct_left > 0
    # the episode's jct return: time spent so far by every job, plus the charge
    spent = sum(
        min(sim.now_s, state.finish_s if state.status == JobStatus.FINISHED else math.inf)
        - state.spec.arrival_s
        for state in sim.jobs.values()
        if state.spec.arrival_s <= sim.now_s
    )
    assert jct_sum == pytest.approx(-(spent + jct_left) / scale, rel=1e-6)
    first_arrival = min(state.spec.arrival_s for state in sim.jobs.values())
    assert makespan_sum == pytest.approx(
        -(sim.now_s - first_arrival + makespan_left) / scale, rel=1e-6
    )
