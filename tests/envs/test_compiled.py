"""The compiled engine replays the Python reference bit for bit.

Both engines step the same episodes with the same actions, and every output must be
identical: observations (the float32 bytes), masks, rewards, every info entry and the
end-of-episode metrics. The policy takes random valid actions and, now and then, a
random unmasked one (an invalid action is a no-op with a penalty), so the cases cover
every action kind, every placement strategy (shared gangs included), suspensions and
resumptions, migrations, sampling, truncation and invalid actions.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from gpushare_env import compiled
from gpushare_env.envs import GPUShareEnv
from gpushare_env.envs.gpushare_env import InvalidActionError
from gpushare_env.rollout import rollout
from gpushare_env.sim.decisions import ADVANCE

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


def play_both(config: dict[str, Any], seed: int, max_steps: int, invalid_share: float) -> int:
    """Step both engines side by side; the number of steps taken."""
    python = GPUShareEnv(config)
    fast = GPUShareEnv({**config, "engine": "compiled"})
    rng = np.random.default_rng(seed)
    out_p = python.reset(seed=seed)
    out_c = fast.reset(seed=seed)
    assert_same(out_p, out_c, "reset")
    for step in range(max_steps):
        info = out_p[-1]
        if rng.random() < invalid_share:
            action = int(rng.integers(python.action_space.n))
        else:
            valid = np.flatnonzero(info["action_mask"])
            action = int(valid[rng.integers(len(valid))])
        assert (
            python.decode_action(action) == fast.decode_action(action)
            if (info["action_mask"][action])
            else True
        )
        out_p = python.step(action)
        out_c = fast.step(action)
        assert_same(out_p, out_c, f"step {step} (action {action})")
        if out_p[2] or out_p[3]:
            assert "metrics" in out_p[-1]
            return step + 1
    return max_steps


def test_the_extension_is_built() -> None:
    assert compiled.available(), compiled.build_error()


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_engine_replays_the_reference(case: str) -> None:
    config = CASES[case]
    max_steps = 2_500 if case in ("philly_cluster", "wide_nodes") else 40_000
    steps = play_both(config, seed=7, max_steps=max_steps, invalid_share=0.02)
    assert steps > 100


def test_whole_episode_and_a_second_reset() -> None:
    # the suspend cap keeps a random policy from suspending forever: episodes terminate
    config = {"cluster": "medium", "workload": "philly", "num_jobs": 80, "max_suspends_per_job": 1}
    python = GPUShareEnv(config)
    fast = GPUShareEnv({**config, "engine": "compiled"})
    for env in (python, fast):
        env.reset(seed=3)
    rng = np.random.default_rng(0)
    for episode in range(2):
        out_p = python.reset()  # the env's generator continues: a new workload
        out_c = fast.reset()
        assert_same(out_p, out_c, f"reset {episode}")
        done = False
        while not done:
            valid = np.flatnonzero(out_p[-1]["action_mask"])
            action = int(valid[rng.integers(len(valid))])
            out_p, out_c = python.step(action), fast.step(action)
            assert_same(out_p, out_c, f"episode {episode}")
            done = out_p[2] or out_p[3]
        assert out_p[2], "the episode should terminate (every job finished)"
        assert python.events_processed == fast.events_processed > 0


def test_what_needs_the_python_engine_says_so() -> None:
    config = {"cluster": "tiny", "workload": "philly", "num_jobs": 5, "engine": "compiled"}
    env = GPUShareEnv(config, render_mode="ansi")
    env.reset(seed=0)
    for read in (lambda: env.view, lambda: env.simulator, env.render):
        with pytest.raises(RuntimeError, match='engine="python"'):
            read()
    with pytest.raises(RuntimeError, match='engine="python"'):
        pickle.dumps(env)


def test_invalid_action_raise_mode() -> None:
    config = {"cluster": "tiny", "workload": "philly", "num_jobs": 10, "invalid_action": "raise"}
    messages = []
    for engine in ("python", "compiled"):
        env = GPUShareEnv({**config, "engine": engine})
        _, info = env.reset(seed=1)
        bad = int(np.flatnonzero(~info["action_mask"])[0])
        with pytest.raises(InvalidActionError) as error:
            env.step(bad)
        messages.append(str(error.value))
        with pytest.raises(InvalidActionError, match="outside Discrete"):
            env.step(env.action_space.n)
    assert messages[0] == messages[1]


def test_encode_decision_on_the_compiled_engine() -> None:
    env = GPUShareEnv({"cluster": "thesis", "workload": "thesis", "engine": "compiled"})
    _, info = env.reset(seed=0)
    for action in np.flatnonzero(info["action_mask"]):
        decision = env.decode_action(action)
        assert env.encode_decision(decision) == action
    assert env.encode_decision(ADVANCE) == env.action_space.n - 1


def test_gym_make_and_an_unknown_engine() -> None:
    env = gym.make("GPUShare-v0", config={"engine": "compiled"})
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    allowed = r"EnvConfig\.engine must be one of \['auto', 'python', 'compiled'\]"
    with pytest.raises(ValueError, match=allowed):
        GPUShareEnv(engine="numba")


@pytest.mark.parametrize("ask", ["view", "simulator", "render", "pickle"])
def test_auto_engine_switches_to_python_when_asked_for_its_objects(ask: str) -> None:
    """``auto`` runs compiled, replays on the Python engine when its objects are asked
    for, and the episode goes on exactly as on the reference."""
    config = {"cluster": "medium", "workload": "philly", "num_jobs": 60}
    reference = GPUShareEnv({**config, "engine": "python"}, render_mode="ansi")
    auto = GPUShareEnv(config, render_mode="ansi")
    assert auto.config.engine == "auto"
    rng = np.random.default_rng(5)
    out_r, out_a = reference.reset(seed=2), auto.reset(seed=2)
    for step in range(400):
        if step == 150:
            assert auto._core is not None  # compiled so far
            if ask == "view":
                assert auto.view.now_s == reference.view.now_s
            elif ask == "simulator":
                assert auto.simulator.decisions == reference.simulator.decisions
            elif ask == "render":
                assert auto.render() == reference.render()
            else:
                auto = pickle.loads(pickle.dumps(auto))
            assert auto._core is None  # the Python engine carries on
        valid = np.flatnonzero(out_r[-1]["action_mask"])
        action = int(valid[rng.integers(len(valid))])
        out_r, out_a = reference.step(action), auto.step(action)
        assert_same(out_r, out_a, f"step {step}")
        if out_r[2] or out_r[3]:
            break
    assert step >= 150


def test_auto_engine_drives_heuristics() -> None:
    import baselines

    config = {"cluster": "thesis", "workload": "thesis", "num_jobs": 40}
    metrics = []
    for engine in ("python", "auto"):
        env = GPUShareEnv({**config, "engine": engine})
        episode = rollout(baselines.make("thesis", env), env, seed=4)
        metrics.append(episode.metrics)
    assert_same(metrics[0], metrics[1], "metrics")
