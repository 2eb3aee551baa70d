"""Evaluations beside training (``--eval-workers``): the same history and best model as
evaluations in the training process, and clear errors when they fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from agents.callbacks import CHECKPOINT_DIR, HeuristicEvalCallback, _Pending
from agents.training import TrainConfig, load_model, train
from tests.agents.helpers import TINY_TRAINING

#: What an evaluation beside training records differently: its own clock.
_CLOCKS = ("seconds", "wall_s")


def _history(run: Path) -> list[dict[str, Any]]:
    history = json.loads((run / "evaluations.json").read_text())["history"]
    return [{k: v for k, v in entry.items() if k not in _CLOCKS} for entry in history]


def _params(path: Path) -> dict[str, torch.Tensor]:
    return dict(load_model(path).policy.state_dict())


@pytest.mark.slow
def test_evaluating_beside_training_gives_the_same_history_and_best_model(
    tmp_path: Path,
) -> None:
    runs = {}
    for workers in (0, 1):
        config = TrainConfig.from_any(
            **{
                **TINY_TRAINING,
                "out": str(tmp_path / f"workers{workers}"),
                "timesteps": 256,
                "eval_seeds": (50, 51),
                "eval_every": 64,
                "eval_workers": workers,
                "torch_threads": 1,  # the default differs with the workers (a core each)
            }
        )
        runs[workers] = train(config).parent
    inline, beside = runs[0], runs[1]
    history = _history(inline)
    assert len(history) == 5  # at the start, every 64 steps, at the end
    assert _history(beside) == history
    for name in ("best_model.zip", "model.zip"):
        a, b = _params(inline / name), _params(beside / name)
        assert a.keys() == b.keys()
        for key in a:
            assert torch.equal(a[key], b[key]), (name, key)
    assert not (beside / CHECKPOINT_DIR).exists()  # every checkpoint taken in
    record = json.loads((beside / "config.json").read_text())
    assert record["train"]["eval_workers"] == 1
    assert record["seconds"]["evaluation_wait"] >= 0
    assert [e["timesteps"] for e in record["evaluations"]] == [e["timesteps"] for e in history]
    assert (beside / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"


def test_a_truncated_reference_fails_when_its_result_comes_in(tmp_path: Path) -> None:
    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 8, "max_decisions": 5}
    callback = HeuristicEvalCallback([config], [1], eval_every=10, out_dir=tmp_path, workers=1)
    try:
        with pytest.raises(RuntimeError, match="reference 'thesis' was truncated"):
            callback.finish()
    finally:
        callback.close()


def test_a_failed_evaluation_names_its_checkpoint(tmp_path: Path) -> None:
    from agents import eval_worker

    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 8}
    callback = HeuristicEvalCallback([config], [1], eval_every=10, out_dir=tmp_path, workers=1)
    try:
        pool = callback._pool
        assert pool is not None
        missing = tmp_path / "no_such_model.zip"
        future = pool.submit(eval_worker.score_checkpoint, str(missing), [config], [1])
        callback._pending.append(_Pending(64, missing, future))
        with pytest.raises(RuntimeError, match="scoring the model at 64 steps failed"):
            callback.finish()
    finally:
        callback.close()


def test_negative_workers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers must be >= 0"):
        HeuristicEvalCallback([{"cluster": "tiny"}], [1], 10, tmp_path, workers=-1)
    with pytest.raises(ValueError, match=r"eval_workers must be an int >= 0"):
        TrainConfig.from_any(**TINY_TRAINING, out=str(tmp_path), eval_workers=-1)


@pytest.mark.parametrize(
    ("settings", "threads"),
    [
        ({}, 1),  # one core for training, one for the evaluation process
        ({"eval_workers": 0}, 2),  # evaluating in the training process: every core
        ({"eval_seeds": ()}, 2),  # no evaluation
        ({"timesteps": 0}, 2),  # no RL, so no evaluation
        ({"eval_workers": 3}, 1),  # never below one
        ({"vec_env": "subproc"}, 1),  # the env processes take the other cores
        ({"torch_threads": 2}, 2),  # as given
    ],
)
def test_default_torch_threads_leave_a_core_per_evaluation_process(
    settings: dict[str, Any], threads: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agents import training

    monkeypatch.setattr(training.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    config = TrainConfig.from_preset(
        "philly_heavy", **{"out": str(tmp_path), "timesteps": 1000, **settings}
    )
    assert training.torch_threads_for(config) == threads


def test_deterministic_algorithms_without_the_compiler() -> None:
    import subprocess
    import sys

    code = (
        "import sys, torch; from agents.training import deterministic_algorithms; "
        "deterministic_algorithms(); "
        "print(torch.are_deterministic_algorithms_enabled(), 'torch._inductor' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False"]


def test_lean_actions_are_sb3s_to_the_bit() -> None:
    """The evaluation's lean path gives SB3's masked probabilities' kind-mode action."""
    import json as _json

    from agents.inference import EvalPredictor, lean_actions
    from agents.policies import kind_mode
    from gpushare_env.envs import make_env

    zoo = Path(__file__).resolve().parents[2] / "agents" / "zoo"
    model = load_model(zoo / "maskable_ppo_scratch_3m_heavy.zip")
    config = _json.loads((zoo / "maskable_ppo_scratch_3m_heavy.json").read_text())["env_config"]
    env = make_env(config)
    predictor = EvalPredictor(model)
    assert predictor._lean
    policy = predictor.policy
    observation, info = env.reset(seed=500)
    kinds = set()
    for _ in range(150):
        mask = info["action_mask"]
        lean = lean_actions(policy, observation, mask)
        tensors, _ = policy.obs_to_tensor(observation)
        with torch.no_grad():
            probs = policy.get_distribution(tensors, mask).distribution.probs
        expected = kind_mode(
            probs, policy.mlp_extractor.pending_window, policy.mlp_extractor.running_window
        )
        assert lean is not None and torch.equal(lean, expected)
        action, _ = predictor.predict(observation, action_masks=mask)
        assert int(action) == int(expected[0])
        kinds.add(int(action) < 4 * policy.mlp_extractor.pending_window)
        observation, _, terminated, truncated, info = env.step(int(action))
        if terminated or truncated:
            break
    assert kinds == {True, False}  # schedules and other kinds of action both met
    batch = {key: value[None] for key, value in observation.items()}
    assert lean_actions(policy, batch, info["action_mask"]) is None  # a batch: SB3's path
