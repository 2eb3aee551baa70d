"""The one engine, end to end through the env: deterministic, self-consistent, and
everything a user reads of an episode (view, simulator, render, pickles) is the live state.

Each case plays random valid actions and, now and then, a random unmasked one (an invalid
action is a no-op with a penalty), so together they cover every action kind, every
placement strategy (shared gangs included, and the numpy placement the core calls on
nodes wider than 128 GPUs), suspensions and resumptions, migrations, sampling, truncation
and invalid actions. Two envs with the same seed and actions must give identical outputs
(observations by their float32 bytes, masks, rewards, every info entry, the metrics); the
simulator's invariants hold after every step; every valid action is one the simulator
accepts.
"""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from gpushare_env.envs import GPUShareEnv
from gpushare_env.envs.gpushare_env import InvalidActionError
from gpushare_env.sim.decisions import ADVANCE, Schedule, Suspend
from gpushare_env.sim.types import JobStatus

CASES: dict[str, dict[str, Any]] = {
    "medium_philly": {"cluster": "medium", "workload": "philly", "num_jobs": 150},
    "mixed_cluster": {"cluster": "mixed", "workload": "philly", "num_jobs": 120},
    "thesis_caps_held_time": {
        "cluster": "thesis",
        "workload": "thesis",
        "num_jobs": 60,
        "max_suspends_per_job": 1,
        "observe_held_time": True,
        "reward": {name: 1.0 for name in ("jct", "makespan", "utilisation", "slowdown")}
        | {"starvation": 0.5, "overhead": 0.25, "invalid": 2.0},
    },
    "no_auto_advance": {
        "cluster": "tiny2",
        "workload": "philly",
        "num_jobs": 40,
        "auto_advance": False,
        "max_time_s": 400_000.0,
    },
    "duration_none": {
        "cluster": "tiny",
        "workload": "philly",
        "num_jobs": 40,
        "duration_info": "none",
    },
    "duration_oracle_small_windows": {
        "cluster": "medium",
        "workload": "philly_bursty",
        "num_jobs": 100,
        "duration_info": "oracle",
        "pending_window": 2,
        "running_window": 3,
    },
    "decision_cap": {
        "cluster": "thesis",
        "workload": "thesis",
        "num_jobs": 50,
        "max_decisions": 300,
    },
    "philly_cluster": {"cluster": "philly", "workload": "philly", "num_jobs": 300},
    "mixed_every_observe_option": {
        "cluster": "mixed",
        "workload": "philly",
        "num_jobs": 120,
        "observe_held_time": True,
        "observe_placement": True,
        "observe_drain": True,
        "observe_rivals": True,
    },
    # nodes wider than 128 GPUs: shared gangs take the Python placement, on the C arrays
    "wide_nodes": {
        "cluster": {
            "groups": [
                {"nodes": 1, "gpus_per_node": 130, "gpu_type": "v100"},
                {"nodes": 2, "gpus_per_node": 2, "gpu_type": "p100"},
            ],
            "max_jobs_per_gpu": 2,
        },
        "workload": "philly",
        "num_jobs": 120,
        "observe_placement": True,
        "observe_drain": True,
        "observe_rivals": True,
    },
}


def assert_same(a: Any, b: Any, where: str) -> None:
    """Exact equality of nested outputs (arrays by dtype and bytes, NaN equal to NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        if not np.array_equal(a, b):
            diff = np.flatnonzero(a != b)[:5]
            raise AssertionError(f"{where}: differs at {diff}: {a[diff]} != {b[diff]}")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), f"{where}: {a} != {b}"
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def play_twice(config: dict[str, Any], seed: int, max_steps: int, invalid_share: float) -> int:
    """Step two envs of the same config side by side and check the engine's consistency
    along the way; the number of steps taken."""
    env = GPUShareEnv(config)
    twin = GPUShareEnv(config)
    rng = np.random.default_rng(seed)
    out = env.reset(seed=seed)
    assert_same(out, twin.reset(seed=seed), "reset")
    sim = env.simulator
    for step in range(max_steps):
        info = out[-1]
        if rng.random() < invalid_share:
            action = int(rng.integers(env.action_space.n))
        else:
            valid = np.flatnonzero(info["action_mask"])
            action = int(valid[rng.integers(len(valid))])
        if info["action_mask"][action]:
            decision = env.decode_action(action)
            if isinstance(decision, Schedule):
                assert sim.find_placement(decision.job_id, decision.strategy) is not None
            elif isinstance(decision, Suspend):
                assert sim.jobs[decision.job_id].status == JobStatus.RUNNING
        out = env.step(action)
        assert_same(out, twin.step(action), f"step {step} (action {action})")
        if step % 7 == 0:
            sim.check_invariants()
        if out[2] or out[3]:
            assert "metrics" in out[-1]
            return step + 1
    return max_steps


def test_the_extension_is_built() -> None:
    from gpushare_env.compiled import _core

    assert hasattr(_core, "Core")


@pytest.mark.parametrize("case", sorted(CASES))
def test_episodes_are_deterministic_and_consistent(case: str) -> None:
    config = CASES[case]
    max_steps = 2_500 if case in ("philly_cluster", "wide_nodes") else 8_000
    steps = play_twice(config, seed=7, max_steps=max_steps, invalid_share=0.02)
    assert steps > 100


def test_whole_episode_and_a_second_reset() -> None:
    # the suspend cap keeps a random policy from suspending forever: episodes terminate
    config = {"cluster": "medium", "workload": "philly", "num_jobs": 80, "max_suspends_per_job": 1}
    env = GPUShareEnv(config)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    workloads = []
    for _ in range(2):
        out = env.reset()  # the env's generator continues: a new workload
        workloads.append([j.spec for j in env.simulator.jobs.values()])
        done = False
        while not done:
            valid = np.flatnonzero(out[-1]["action_mask"])
            out = env.step(int(valid[rng.integers(len(valid))]))
            done = out[2] or out[3]
        assert out[2], "the episode should terminate (every job finished)"
        assert out[-1]["metrics"]["num_jobs"] == 80
        assert env.events_processed > 0
    assert workloads[0] != workloads[1]


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_copy_mid_episode_carries_on_exactly(copier: str) -> None:
    """The view, simulator and render read the live episode; a copy taken mid-episode
    (the core replays its operations) goes on exactly as the original."""
    config = {"cluster": "medium", "workload": "philly", "num_jobs": 60}
    env = GPUShareEnv(config, render_mode="ansi")
    rng = np.random.default_rng(5)
    out = env.reset(seed=2)
    for _ in range(150):
        valid = np.flatnonzero(out[-1]["action_mask"])
        out = env.step(int(valid[rng.integers(len(valid))]))
    assert env.view.now_s == env.simulator.now_s == out[-1]["time_s"] > 0
    text = env.render()
    assert isinstance(text, str) and "pending window" in text
    clone = pickle.loads(pickle.dumps(env)) if copier == "pickle" else copy.deepcopy(env)
    assert clone.render() == text
    assert clone.view.now_s == env.view.now_s
    assert clone.view.free_memory_gib.tolist() == env.view.free_memory_gib.tolist()
    for _ in range(300):
        valid = np.flatnonzero(out[-1]["action_mask"])
        action = int(valid[rng.integers(len(valid))])
        out = env.step(action)
        assert_same(out, clone.step(action), "after the copy")
        # the clone's view follows its own core, not the original's
        assert clone.view.free_memory_gib.tolist() == env.view.free_memory_gib.tolist()
        if out[2] or out[3]:
            break


def test_invalid_action_raise_mode() -> None:
    config = {"cluster": "tiny", "workload": "philly", "num_jobs": 10, "invalid_action": "raise"}
    env = GPUShareEnv(config)
    _, info = env.reset(seed=1)
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    with pytest.raises(InvalidActionError, match=f"action {bad}"):
        env.step(bad)
    with pytest.raises(InvalidActionError, match="outside Discrete"):
        env.step(env.action_space.n)


def test_encode_decision_round_trip() -> None:
    env = GPUShareEnv({"cluster": "thesis", "workload": "thesis"})
    _, info = env.reset(seed=0)
    for action in np.flatnonzero(info["action_mask"]):
        decision = env.decode_action(action)
        assert env.encode_decision(decision) == action
    assert env.encode_decision(ADVANCE) == env.action_space.n - 1


def test_gym_make_and_the_removed_engine_key() -> None:
    env = gym.make("GPUShare-v0")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    with pytest.raises(ValueError, match="'engine' key was removed"):
        GPUShareEnv(engine="compiled")


def test_heuristics_on_the_env_match_the_headless_simulator() -> None:
    """The same policy objects give the same schedule through the env as headless."""
    import baselines
    from gpushare_env.runner import run_headless
    from gpushare_env.sim import SimConfig

    config = {"cluster": "thesis", "workload": "thesis", "num_jobs": 40}
    env = GPUShareEnv(config)
    policy = baselines.make("fifo_pack", env)
    obs, _ = env.reset(seed=4)
    jobs = [j.spec for j in env.simulator.jobs.values()]
    done = False
    while not done:
        action, _ = policy.predict(obs)
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert terminated
    headless = run_headless(jobs, env.cluster, baselines.make("fifo_pack"), SimConfig())
    assert headless.metrics["num_jobs"] == info["metrics"]["num_jobs"] == 40
    # fifo_pack reads no prediction, so the measurement noise (drawn differently) is moot
    for key in ("mean_jct_s", "makespan_s", "gpu_util"):
        assert headless.metrics[key] == info["metrics"][key], key
