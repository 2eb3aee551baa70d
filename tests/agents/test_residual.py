"""Acting on top of a heuristic (``agents.residual``): the proposal in the observation,
accept-or-override, and the floor: an agent that always accepts plays the heuristic's run."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import baselines
import gpushare_env  # noqa: F401 (registers GPUShare-v0)
from agents.evaluation import run_episode
from agents.residual import (
    PROPOSAL_KEY,
    HeuristicProposals,
    ResidualPredictor,
    is_residual,
    residual_base,
)
from agents.training import TrainConfig, build_model, env_configs, load_model
from gpushare_env.rollout import rollout
from gpushare_env.seeding import policy_seed
from tests.agents.helpers import TINY_TRAINING

#: Two small configs: a shared medium cluster under Philly-style load, and the thesis jobs
#: on the 4-GPU cluster (many suspensions).
CONFIGS: list[dict[str, Any]] = [
    {"cluster": "medium", "workload": "philly_heavy", "num_jobs": 60},
    {"cluster": "tiny", "workload": "thesis", "num_jobs": 20},
]


class Accept:
    """Always plays the proposal, read off the observation (any SB3-style predictor)."""

    def predict(self, obs: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[np.ndarray, Any]:  # fmt: skip
        return np.asarray(int(np.argmax(obs[PROPOSAL_KEY]))), state


class AcceptAction:
    """Always plays the accept action (the last one) of ``accept_action=True``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def predict(self, obs: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = True) -> tuple[np.ndarray, Any]:  # fmt: skip
        return np.asarray(self.n - 1), state


def _heuristic_alone(name: str, config: dict[str, Any], seed: int) -> dict[str, Any]:
    env = gym.make("GPUShare-v0", config=config)
    return rollout(baselines.make(name, env, seed=policy_seed(seed)), env, seed=seed).metrics


@pytest.mark.parametrize("config", CONFIGS, ids=["medium", "tiny"])
@pytest.mark.parametrize("base", ["thesis", "gandiva", "random"])
@pytest.mark.parametrize("seed", [0, 7])
def test_always_accepting_plays_exactly_the_heuristics_run(
    base: str, config: dict[str, Any], seed: int
) -> None:
    alone = _heuristic_alone(base, config, seed)
    wrapped = HeuristicProposals(gym.make("GPUShare-v0", config=config), base)
    accepted = rollout(Accept(), wrapped, seed=seed).metrics
    assert accepted == alone  # every metric, to the digit
    extra = HeuristicProposals(gym.make("GPUShare-v0", config=config), base, accept_action=True)
    assert rollout(AcceptAction(extra.action_space.n), extra, seed=seed).metrics == alone


def test_overriding_changes_the_run_and_is_reported() -> None:
    config = CONFIGS[0]
    env = HeuristicProposals(gym.make("GPUShare-v0", config=config), "thesis")
    obs, info = env.reset(seed=0)
    overrides = 0
    done = False
    while not done:
        mask = env.action_masks()
        proposal = int(np.argmax(obs[PROPOSAL_KEY]))
        others = [a for a in np.flatnonzero(mask) if a != proposal]
        # advance whenever thesis would schedule: a lazier scheduler
        advance = env.action_space.n - 1
        action = advance if advance in others and overrides < 30 else proposal
        overrides += action != proposal
        obs, _, terminated, truncated, info = env.step(action)
        assert info["accepted"] == (action == proposal)
        done = terminated or truncated
    assert overrides > 0
    assert info["metrics"] != _heuristic_alone("thesis", config, 0)


def test_the_proposal_is_a_valid_action_and_the_masks_are_the_envs() -> None:
    env = HeuristicProposals(gym.make("GPUShare-v0", config=CONFIGS[1]), "thesis")
    plain = gym.make("GPUShare-v0", config=CONFIGS[1])
    assert env.action_space == plain.action_space
    assert env.observation_space[PROPOSAL_KEY].shape == (plain.action_space.n,)
    obs, info = env.reset(seed=3)
    steps = 0
    while True:
        onehot = obs[PROPOSAL_KEY]
        assert obs in env.observation_space
        assert onehot.sum() == 1.0 and env.action_masks()[int(np.argmax(onehot))]
        assert np.array_equal(info["action_mask"], env.action_masks())
        assert info["proposal"] == int(np.argmax(onehot))
        obs, _, terminated, truncated, info = env.step(info["proposal"])
        steps += 1
        if terminated or truncated:
            break
    assert steps > 20 and obs[PROPOSAL_KEY].sum() == 0.0 and info["proposal"] is None
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    extra = HeuristicProposals(gym.make("GPUShare-v0", config=CONFIGS[1]), accept_action=True)
    extra.reset(seed=3)
    assert extra.action_space.n == plain.action_space.n + 1
    assert extra.action_masks().shape == (extra.action_space.n,) and extra.action_masks()[-1]


def test_bad_options_are_named() -> None:
    env = gym.make("GPUShare-v0", config=CONFIGS[1])
    with pytest.raises(ValueError, match="unknown policy 'thesys'"):
        HeuristicProposals(env, "thesys")
    with pytest.raises(ValueError, match="accept_action must be a bool"):
        HeuristicProposals(env, "thesis", accept_action=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a 'proposal' key already"):
        HeuristicProposals(HeuristicProposals(env))
    with pytest.raises(ValueError, match="pointer extractor"):
        TrainConfig.from_any(TINY_TRAINING, residual="thesis", extractor="flat")
    with pytest.raises(ValueError, match="no behaviour cloning"):
        TrainConfig.from_any(TINY_TRAINING, residual="thesis", bc_episodes=2)
    with pytest.raises(ValueError, match=r"residual.*unknown policy"):
        TrainConfig.from_any(TINY_TRAINING, residual="nope")
    with pytest.raises(ValueError, match="accept_bias"):
        TrainConfig.from_any(TINY_TRAINING, residual="thesis", accept_bias=0.0)
    with pytest.raises(ValueError, match="select_by"):
        TrainConfig.from_any(TINY_TRAINING, select_by="median")


def test_plain_maskable_ppo_trains_on_the_accept_action_with_masks() -> None:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = HeuristicProposals(gym.make("GPUShare-v0", config=CONFIGS[1]), accept_action=True)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(total_timesteps=64)
    obs, _ = env.reset(seed=1)
    masks = get_action_masks(model.get_env())[0]
    assert masks.shape == (env.action_space.n,) and masks[-1]
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]


@pytest.fixture(scope="module")
def untrained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, dict[str, Any]]:
    """An untrained residual pointer model on ``tiny`` (saved and loaded back)."""
    out = tmp_path_factory.mktemp("residual")
    config = TrainConfig.from_any(
        TINY_TRAINING, residual="thesis", critic="context", out=str(out), env_overrides={}
    )
    from agents.envs import make_vec_env

    configs = env_configs(config)
    vec = make_vec_env(configs, (0,), 1, 0, subprocess=False, residual="thesis")
    model = build_model(config, vec)
    model.save(out / "residual.zip")
    vec.close()
    return load_model(out / "residual.zip"), out / "residual.zip", configs[0]


def test_an_untrained_residual_policy_is_its_heuristic(untrained: Any) -> None:
    model, _, config = untrained
    assert is_residual(model) and residual_base(model) == "thesis"
    assert model.policy.accept_bias == 8.0
    for seed in (0, 5):
        assert run_episode(model, config, seed) == run_episode("thesis", config, seed)
    env = gym.make("GPUShare-v0", config=config)
    player = ResidualPredictor(model, env)
    episode = rollout(player, env, seed=0)
    assert player.proposals == player.accepted == episode.steps and not player.overrides


def test_on_wide_windows_the_untrained_agent_is_still_its_heuristic(untrained: Any) -> None:
    """Rebound to windows of 256 (hundreds of valid actions), the deterministic action is
    still the proposal: decoded by kind, the mass of the many startable jobs outweighed a
    proposed advance or suspend (mean JCT 1.18x and 1.24x thesis's on these seeds)."""
    model, _, _ = untrained
    wide = {"cluster": "medium", "workload": "philly_heavy", "num_jobs": 100,
            "pending_window": 256, "running_window": 256}  # fmt: skip
    for seed in (0, 1):
        assert run_episode(model, wide, seed) == run_episode("thesis", wide, seed)


def test_playing_and_training_see_the_same_decisions(untrained: Any) -> None:
    """The predictor on the plain env and the policy on the wrapper choose alike, also with
    sampled actions (a stochastic policy drawn from one seeded stream)."""
    import torch

    model, _, config = untrained
    runs = []
    for wrapped in (False, True):
        torch.manual_seed(0)
        env = gym.make("GPUShare-v0", config=config)
        if wrapped:
            env = HeuristicProposals(env, "thesis")
            player: Any = model
        else:
            player = ResidualPredictor(model, env)
        episode = rollout(player, env, seed=2, deterministic=False)
        runs.append(episode.metrics)
    assert runs[0] == runs[1]


def test_a_residual_agent_refuses_to_play_without_its_env(untrained: Any) -> None:
    from agents.inference import for_play

    model, _, _ = untrained
    with pytest.raises(ValueError, match="needs the env"):
        for_play(model)
    with pytest.raises(ValueError, match="not a residual model"):
        residual_base(object())


def test_gpushare_evaluate_plays_a_saved_residual_agent(untrained: Any, tmp_path: Path) -> None:
    """The harness plays it like any saved agent, on other windows too (rebound), and an
    untrained one matches its heuristic run for run."""
    from gpushare_eval.cli import evaluate

    _, path, _ = untrained
    argv = ["--policies", "thesis", str(path), "--workload", "thesis", "--cluster", "tiny",
            "--num-jobs", "12", "--seeds", "0", "1", "--workers", "1", "--window", "8",
            "--agent-windows", "evaluation", "--no-plots", "--quiet"]  # fmt: skip
    argv += ["--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    with open(tmp_path / "runs.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_policy: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: r["seed"]):
        by_policy.setdefault(row["policy"], []).append(row["mean_jct_s"])
    assert len(by_policy) == 2 and len(set(map(tuple, by_policy.values()))) == 1, by_policy


@pytest.mark.slow
def test_training_a_residual_agent_keeps_the_worst_validation_model(tmp_path: Path) -> None:
    import json

    from agents.training import train

    config = TrainConfig.from_any(
        TINY_TRAINING, residual="thesis", critic="context", reward_reference="thesis",
        select_by="worst", eval_seeds=(500, 501), eval_every=64, timesteps=128,
        out=str(tmp_path),
    )  # fmt: skip
    train(config)
    record = json.loads((tmp_path / "evaluations.json").read_text())
    first = record["history"][0]
    assert record["select_by"] == "worst"
    assert first["jct_ratio"] == first["worst_jct_ratio"] == 1.0  # the untrained agent is thesis
    best = min(record["history"], key=lambda h: h["score"])
    assert best["score"] == best["worst_jct_ratio"] and best.get("best") == 1.0
    saved = load_model(tmp_path / "best_model.zip")
    assert residual_base(saved) == "thesis"
