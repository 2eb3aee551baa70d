"""The per-slot action head (``--extractor pointer``): layout, equivariance, training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.envs import make_env
from agents.policies import STRATEGIES_PER_SLOT, SlotHead, kind_mode
from agents.training import (
    POINTER_SLOT_DIM,
    TrainConfig,
    build_model,
    env_configs,
    load_model,
    train,
)
from gpushare_env.rollout import Step, rollout
from tests.agents.helpers import TINY_TRAINING


def _config(tmp_path: Path, name: str, **overrides: object) -> TrainConfig:
    return TrainConfig.from_any(
        **{**TINY_TRAINING, "extractor": "pointer", "out": str(tmp_path / name), **overrides}
    )


def _model(tmp_path: Path, algo: str = "maskable_ppo"):
    config = _config(tmp_path, algo, algo=algo)
    env = make_env(env_configs(config)[0])
    return build_model(config, env), env


def _permuted(obs: dict[str, np.ndarray], key: str, order: np.ndarray) -> dict[str, np.ndarray]:
    rows = obs[key].reshape(len(order), -1)
    return {**obs, key: rows[order].reshape(obs[key].shape)}


def _logits(model, obs: dict[str, np.ndarray]) -> torch.Tensor:
    tensors, _ = model.policy.obs_to_tensor(obs)
    with torch.no_grad():
        features = model.policy.extract_features(tensors)
        return model.policy.action_net(model.policy.mlp_extractor.forward_actor(features))[0]


def test_the_head_gives_one_logit_per_action(tmp_path: Path) -> None:
    model, env = _model(tmp_path)
    head = model.policy.mlp_extractor
    assert isinstance(head, SlotHead)
    assert head.code_dim == POINTER_SLOT_DIM
    obs, _ = env.reset(seed=3)
    assert _logits(model, obs).shape == (env.action_space.n,)
    assert env.action_space.n == STRATEGIES_PER_SLOT * head.pending_window + head.running_window + 1


def test_logits_move_with_their_slot(tmp_path: Path) -> None:
    """Swapping two rows of a table swaps their logits and leaves every other logit alone."""
    model, env = _model(tmp_path)
    head = model.policy.mlp_extractor
    # random rows, so that every slot differs (the env's valid column stays 1 or 0 per row)
    rng = np.random.default_rng(0)
    obs = {k: rng.random(v.shape, dtype=np.float32) for k, v in env.observation_space.items()}
    w, r = head.pending_window, head.running_window
    pending_order = np.arange(w)
    pending_order[[0, w - 1]] = pending_order[[w - 1, 0]]
    running_order = np.arange(r)
    running_order[[1, 2]] = running_order[[2, 1]]
    before = _logits(model, obs)
    after = _logits(
        model, _permuted(_permuted(obs, "pending", pending_order), "running", running_order)
    )
    place = STRATEGIES_PER_SLOT * w
    expected = torch.cat(
        [
            before[:place].reshape(w, STRATEGIES_PER_SLOT)[pending_order].flatten(),
            before[place : place + r][running_order],
            before[place + r :],
        ]
    )
    torch.testing.assert_close(after, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(before, after)  # the swapped slots really differ


def test_logits_start_near_uniform(tmp_path: Path) -> None:
    """The output layers start small, as SB3's action_net does (gain 0.01)."""
    model, env = _model(tmp_path)
    obs, _ = env.reset(seed=3)
    assert _logits(model, obs).abs().max() < 0.1


def test_suspend_bias_sets_every_suspend_logit_at_the_start(tmp_path: Path) -> None:
    config = _config(tmp_path, "bias", suspend_bias=-3.8)
    env = make_env(env_configs(config)[0])
    model = build_model(config, env)
    obs, _ = env.reset(seed=3)
    logits = _logits(model, obs)
    head = model.policy.mlp_extractor
    schedule = STRATEGIES_PER_SLOT * head.pending_window
    suspends = logits[schedule : schedule + head.running_window]
    assert torch.all((suspends + 3.8).abs() < 0.1)  # the bias, plus outputs of gain 0.01
    assert logits[:schedule].abs().max() < 0.1 and logits[-1].abs() < 0.1
    # saved with the model, and only when set (a model without a bias saves no such kwarg)
    assert model.policy._get_constructor_parameters()["suspend_bias"] == -3.8
    plain = build_model(_config(tmp_path, "plain"), env)
    assert "suspend_bias" not in plain.policy._get_constructor_parameters()
    with pytest.raises(ValueError, match="suspend_bias"):
        _config(tmp_path, "perm", extractor="perm", suspend_bias=-1.0)


def test_dqn_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"pointer.*not dqn"):
        _config(tmp_path, "dqn", algo="dqn")


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["maskable_ppo", "ppo"])
def test_pointer_trains_saves_loads_and_acts_validly(tmp_path: Path, algo: str) -> None:
    config = _config(tmp_path, algo, algo=algo, timesteps=128, bc_episodes=1, bc_epochs=2)
    path = train(config)
    record = json.loads((path.parent / "config.json").read_text())
    assert record["train"]["extractor"] == "pointer"
    model = load_model(path)
    assert isinstance(model.policy.mlp_extractor, SlotHead)
    assert model.policy.head_dim == 64
    assert model.policy.kind_mode  # built by gpushare-train: deterministic actions by kind
    env = make_env(env_configs(config)[0])

    def check(step: Step) -> None:
        if algo == "maskable_ppo":
            assert step.action_mask is not None and step.action_mask[step.action]
        else:  # PPO may pick an invalid action: the env takes it as a no-op
            assert 0 <= step.action < env.action_space.n

    rollout(model, env, seed=11, max_steps=200, callback=check)


def test_kind_mode_picks_the_likeliest_kind_then_its_likeliest_action() -> None:
    w, r = 2, 2  # actions: 8 schedules, 2 suspends, advance
    spread = torch.tensor([[0.1] * 8 + [0.0, 0.0] + [0.2]])  # schedules 0.8 in all
    assert kind_mode(spread, w, r).tolist() == [0]  # argmax would advance (0.2)
    assert int(spread.argmax()) == 10
    suspend = torch.tensor([[0.05] * 8 + [0.25, 0.3] + [0.05]])  # suspends 0.55
    advance = torch.tensor([[0.0] * 10 + [1.0]])
    assert kind_mode(torch.cat([spread, suspend, advance]), w, r).tolist() == [0, 9, 10]


def test_deterministic_actions_of_a_kind_mode_policy_are_its_kind_mode(tmp_path: Path) -> None:
    model, env = _model(tmp_path)
    assert model.policy.kind_mode
    obs, _ = env.reset(seed=3)
    masks = env.unwrapped.action_masks()
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    tensors, _ = model.policy.obs_to_tensor(obs)
    probs = model.policy.get_distribution(tensors, action_masks=masks).distribution.probs
    w, r = env.unwrapped.pending_window, env.unwrapped.running_window
    assert int(action) == int(kind_mode(probs, w, r)[0])
    model.policy.kind_mode = False  # earlier models: the plain argmax
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert int(action) == int(probs.argmax())
