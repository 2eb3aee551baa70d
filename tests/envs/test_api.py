"""The Gymnasium / SB3 contract of GPUShare-v0: checkers, registration, determinism,
copies, vectorisation, rendering, the action codec and the documented layout."""

from __future__ import annotations

import copy
import importlib
import pickle
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence

import gpushare_env
from gpushare_env.envs import (
    FLAT_KEYS,
    FRAG_FEATURES,
    GLOBAL_FEATURES,
    GPU_FEATURES,
    PENDING_FEATURES,
    REWARD_COMPONENTS,
    RUNNING_FEATURES,
    EnvConfig,
    GPUShareEnv,
    env_spec_markdown,
)
from gpushare_env.envs.observation import CLUSTER_FEATURES
from gpushare_env.rollout import rollout
from gpushare_env.sim import ADVANCE, STRATEGIES, Schedule, SimView, Suspend
from tests.envs.helpers import RandomValid, random_valid_action, transcript
from tests.jobs import job

SMALL = {"cluster": "thesis", "num_jobs": 12}

#: Warnings the checkers may emit that are known to be harmless, each with its reason.
#: Everything else is an error. (Currently none is needed: keep entries justified.)
ALLOWED_WARNINGS: tuple[tuple[type[Warning], str, str], ...] = (
    # (category, message regex, reason)
)


@contextmanager
def warnings_as_errors() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for category, pattern, _reason in ALLOWED_WARNINGS:
            warnings.filterwarnings("ignore", message=pattern, category=category)
        yield


# --------------------------------------------------------------------- checkers
@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_gymnasium_check_env(render_mode: str | None) -> None:
    env = gym.make("GPUShare-v0", config=SMALL, render_mode=render_mode).unwrapped
    with warnings_as_errors():
        check_env(env)  # also renders every declared mode through env.spec


def test_sb3_check_env() -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make("GPUShare-v0", config=SMALL).unwrapped
    with warnings_as_errors():
        sb3_check_env(env, warn=True)


def test_gymnasium_check_env_fails_on_a_broken_space() -> None:
    # the checker is not vacuous: an observation outside its space is caught
    env = GPUShareEnv(SMALL)
    env.observation_space["global"] = gym.spaces.Box(0.0, 0.5, shape=(15,), dtype=np.float32)
    with pytest.raises(AssertionError):
        check_env(env, skip_render_check=True)


# ----------------------------------------------------------------- registration
def test_make_with_module_prefix_in_a_fresh_interpreter() -> None:
    code = (
        "import gymnasium as gym, sys\n"
        "assert 'gpushare_env' not in sys.modules\n"
        "env = gym.make('gpushare_env:GPUShare-v0', config={'cluster': 'tiny', 'num_jobs': 3})\n"
        "env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "GPUShareEnv"


def test_registration_is_idempotent() -> None:
    with warnings_as_errors():  # gymnasium warns when an id is registered twice
        importlib.reload(gpushare_env)
        importlib.reload(gpushare_env)
    assert gym.spec("GPUShare-v0").entry_point == "gpushare_env.envs.gpushare_env:GPUShareEnv"
    env = gym.make("GPUShare-v0")
    assert env.unwrapped.config == EnvConfig()


# -------------------------------------------------------------------- determinism
def test_same_seed_same_actions_identical() -> None:
    first = transcript(GPUShareEnv(SMALL), seed=7, steps=150)
    second = transcript(GPUShareEnv(SMALL), seed=7, steps=150)
    assert len(first) == len(second) > 100
    assert data_equivalence(first, second, exact=True)


def test_different_seeds_differ() -> None:
    one, two = GPUShareEnv(SMALL), GPUShareEnv(SMALL)
    first = transcript(one, seed=1, steps=20)
    second = transcript(two, seed=2, steps=20)
    assert not data_equivalence(first, second)
    assert _workload(one) != _workload(two)


def _workload(env: GPUShareEnv) -> list:
    return sorted((j.spec for j in env.simulator.jobs.values()), key=lambda s: s.job_id)


def test_same_seed_same_workload_whatever_happened_before() -> None:
    # evaluation resets every policy's env with reset(seed=s) and needs identical jobs
    played = GPUShareEnv(SMALL)
    transcript(played, seed=3, steps=40)
    played.reset()  # an unseeded reset draws a new workload...
    other = _workload(played)
    played.reset(seed=5)
    fresh = GPUShareEnv(SMALL)
    fresh.reset(seed=5)
    assert _workload(played) == _workload(fresh)  # ...a seeded one is reproducible
    assert other != _workload(fresh)


def test_fixed_jobs_from_options_and_config() -> None:
    jobs = [job(0, 0.0, 30), job(1, 5.0, 20, num_gpus=2)]
    env = GPUShareEnv({"cluster": "tiny"})
    _, info = env.reset(seed=0, options={"jobs": jobs})
    assert info["num_jobs"] == 2 and _workload(env) == jobs
    env = GPUShareEnv({"cluster": "tiny", "jobs": jobs})
    env.reset(seed=1)
    assert _workload(env) == jobs
    env.reset(seed=2)
    assert _workload(env) == jobs


def test_a_trace_is_replayed_identically(tmp_path) -> None:
    from gpushare_env.workloads import write_csv_trace

    path = tmp_path / "trace.csv"
    jobs = [job(i, float(3 * i), 40 + i, num_gpus=1 + i % 2) for i in range(6)]
    write_csv_trace(jobs, path)
    env = GPUShareEnv({"cluster": "tiny", "workload": str(path), "num_jobs": None})
    _, info = env.reset(seed=0)
    first = _workload(env)
    env.reset(seed=1)
    assert info["num_jobs"] == 6 and _workload(env) == first == jobs


def test_jobs_that_never_fit_are_rejected_and_counted() -> None:
    jobs = [job(0, 0.0, 30), job(1, 1.0, 30, num_gpus=8), job(2, 2.0, 30, memory_gib=20.0)]
    _, info = GPUShareEnv({"cluster": "tiny"}).reset(seed=0, options={"jobs": jobs})
    assert info["num_jobs"] == 1 and info["rejected_jobs"] == 2
    with pytest.raises(ValueError, match="can never fit"):
        GPUShareEnv({"cluster": "tiny", "on_unfit": "error"}).reset(options={"jobs": jobs})


# ------------------------------------------------------------- copies mid-episode
@pytest.mark.parametrize("clone", [pickle.loads, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_copy_mid_episode_continues_identically(clone) -> None:
    env = GPUShareEnv(SMALL)
    episode = rollout(RandomValid(np.random.default_rng(0)), env, seed=11, max_steps=60)
    assert episode.steps == 60 and not episode.done
    info = episode.info
    twin = clone(pickle.dumps(env)) if clone is pickle.loads else clone(env)
    assert twin.view is not env.view
    np.testing.assert_array_equal(twin.view.free_memory_gib, env.view.free_memory_gib)
    actions = np.random.default_rng(1)
    for _ in range(400):
        action = random_valid_action(info, actions)
        original = env.step(action)
        copied = twin.step(action)
        assert data_equivalence(original, copied, exact=True)
        info = original[-1]
        # the copy's view follows its own simulator, not a frozen snapshot
        np.testing.assert_array_equal(twin.view.load, twin.simulator.gpus.load)
        if original[2] or original[3]:
            break
    # and the next (unseeded) episode draws the same workload in both
    assert data_equivalence(env.reset(), twin.reset(), exact=True)


# ---------------------------------------------------------------- vectorisation
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode: str) -> None:
    envs = gym.make_vec(
        "GPUShare-v0",
        num_envs=4,
        vectorization_mode=mode,
        config={"cluster": "tiny", "num_jobs": 4},
    )
    try:
        obs, info = envs.reset(seed=0)
        assert obs["gpus"].shape == (4, 4 * len(GPU_FEATURES))
        rng = np.random.default_rng(0)
        episodes = 0
        for _ in range(60):
            actions = [
                int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0
                for mask in info["action_mask"]
            ]
            obs, rewards, terminated, truncated, info = envs.step(np.asarray(actions))
            assert rewards.shape == (4,)
            episodes += int(np.sum(terminated | truncated))
        assert episodes > 0  # autoreset was exercised
    finally:
        envs.close()


def _make_env(seed: int):
    def thunk() -> gym.Env:
        # the module prefix imports (and so registers) the package in the worker process
        env = gym.make("gpushare_env:GPUShare-v0", config={"cluster": "tiny", "num_jobs": 4})
        env.reset(seed=seed)
        return env

    return thunk


def test_sb3_subproc_vec_env_action_masks() -> None:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    # "fork" keeps the test quick (forkserver workers re-import torch for SB3: ~8 s)
    vec = SubprocVecEnv([_make_env(i) for i in range(2)], start_method="fork")
    try:
        vec.seed(0)
        obs = vec.reset()
        assert set(obs) == {"gpus", "frag_hist", "pending", "running", "global"}
        for _ in range(20):
            masks = vec.env_method("action_masks")
            assert len(masks) == 2 and all(m.dtype == bool and m.any() for m in masks)
            actions = np.array([int(np.flatnonzero(m)[-1]) for m in masks])
            _, _, _, infos = vec.step(actions)
            for m, info in zip(vec.env_method("action_masks"), infos, strict=True):
                if "terminal_observation" not in info:
                    np.testing.assert_array_equal(m, info["action_mask"])
    finally:
        vec.close()


@pytest.mark.slow
def test_maskable_ppo_trains_a_few_steps() -> None:
    from sb3_contrib import MaskablePPO

    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 4})
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0)
    model.learn(total_timesteps=64)
    obs, info = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=info["action_mask"], deterministic=True)
    assert info["action_mask"][int(action)]


# ------------------------------------------------------------------- interface
def test_view_codec_and_masks_agree() -> None:
    env = GPUShareEnv(SMALL)
    _, info = env.reset(seed=0)
    assert isinstance(env.view, SimView)
    first_view = env.view
    rng = np.random.default_rng(0)
    for _ in range(80):
        mask = env.action_masks()
        np.testing.assert_array_equal(mask, info["action_mask"])
        mask[:] = False  # a copy: the env's own mask is untouched
        assert env.action_masks().any()
        for action in np.flatnonzero(info["action_mask"]):
            decision = env.decode_action(action)
            assert env.encode_decision(decision) == action
        _, _, terminated, truncated, info = env.step(random_valid_action(info, rng))
        if terminated or truncated:
            break
    env.reset(seed=1)
    assert env.view is not first_view  # a new episode, a new view (policies reset)


def test_codec_layout_and_errors() -> None:
    env = GPUShareEnv({**SMALL, "pending_window": 3, "running_window": 2})
    env.reset(seed=0)
    assert env.action_space.n == 3 * 4 + 2 + 1
    assert env.encode_decision(ADVANCE) == 14 and env.decode_action(14) == ADVANCE
    first = env.view.pending(1)[0]
    for s, name in enumerate(STRATEGIES):
        assert env.encode_decision(Schedule(first, name)) == s
    with pytest.raises(ValueError, match="not in the pending window"):
        env.encode_decision(Schedule(10_000, "pack"))
    with pytest.raises(ValueError, match=r"strategy 'best' is not one of this env's actions"):
        env.encode_decision(Schedule(first, "best"))
    with pytest.raises(ValueError, match="not in the running window"):
        env.encode_decision(Suspend(first))
    with pytest.raises(ValueError, match="outside Discrete"):
        env.decode_action(15)
    with pytest.raises(TypeError, match="not a decision"):
        env.encode_decision("advance")  # type: ignore[arg-type]


def test_smdp_decision_points() -> None:
    # with auto_advance the agent is never asked when advance is its only choice
    env = GPUShareEnv(SMALL)
    entries = transcript(env, seed=0, steps=300)
    for entry in entries:
        mask = entry[-1]["action_mask"]
        done = len(entry) > 2 and (entry[3] or entry[4])
        assert done or mask[:-1].any()
    # without it, such states are shown (e.g. right after reset: nothing has arrived)
    env = GPUShareEnv({**SMALL, "auto_advance": False})
    _, info = env.reset(seed=0)
    assert info["time_s"] == 0.0 and not info["action_mask"][:-1].any()


def test_truncation_caps() -> None:
    env = GPUShareEnv({**SMALL, "max_decisions": 5})
    entries = transcript(env, seed=0, steps=50)
    *_, terminated, truncated, info = entries[-1]
    assert len(entries) == 6 and truncated and not terminated
    assert set(info["metrics"]) >= {"mean_jct_s", "gpu_util", "makespan_s"}
    env = GPUShareEnv({**SMALL, "max_time_s": 120.0})
    *_, truncated, info = transcript(env, seed=0, steps=10_000)[-1]
    assert truncated and info["time_s"] >= 120.0
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)


def test_render_modes() -> None:
    env = GPUShareEnv(SMALL, render_mode="ansi")
    env.reset(seed=0)
    env.step(0)
    text = env.render()
    assert isinstance(text, str)
    assert re.search(r"node +0: \[", text) and "pending window" in text and "running window" in text
    env = GPUShareEnv(SMALL, render_mode="rgb_array")
    env.reset(seed=0)
    before = env.render()
    env.step(0)
    after = env.render()
    assert before.dtype == np.uint8 and before.shape == (4 * 26 + 2, 4 * 26 + 2, 3)
    assert not np.array_equal(before, after)  # the placed job shows


# ----------------------------------------------------------------- documentation
def test_every_feature_is_documented() -> None:
    doc = GPUShareEnv.__doc__ or ""
    for section in (
        "Description",
        "Action Space",
        "Observation Space",
        "Rewards",
        "Starting State",
        "Episode End",
        "Arguments",
        "Version History",
    ):
        assert f"## {section}" in doc
    table = env_spec_markdown()
    names = GPU_FEATURES + CLUSTER_FEATURES + FRAG_FEATURES + PENDING_FEATURES + RUNNING_FEATURES
    for name in (*names, *GLOBAL_FEATURES, *REWARD_COMPONENTS, *EnvConfig.paths(), *FLAT_KEYS):
        assert f"``{name}``" in doc, name
        assert f"`{name}`" in table, name


def test_observation_layout_matches_the_features() -> None:
    env = GPUShareEnv({**SMALL, "pending_window": 5, "running_window": 3})
    obs, _ = env.reset(seed=0)
    sizes = {key: box.shape[0] for key, box in env.observation_space.spaces.items()}
    assert sizes == {
        "gpus": 16 * len(GPU_FEATURES),
        "frag_hist": len(FRAG_FEATURES),
        "pending": 5 * len(PENDING_FEATURES),
        "running": 3 * len(RUNNING_FEATURES),
        "global": len(GLOBAL_FEATURES),
    }
    assert obs["frag_hist"].sum() == pytest.approx(1.0)


def test_the_env_reference_shows_the_generated_tables() -> None:
    """docs/env.md's observation, reward and configuration tables are the ones built from
    the feature registry and the configs (regenerate with ``env_spec_markdown()``)."""
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "env.md").read_text()
    rows = [line for line in env_spec_markdown().splitlines() if line.startswith("| ")]
    assert len(rows) > 60  # every observation column, reward term and configuration key
    missing = [row for row in rows if row not in doc]
    assert not missing, missing[:3]
