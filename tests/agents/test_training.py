"""Tiny end-to-end training runs: MaskablePPO, PPO, DQN, warm start, determinism, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from agents.bc import clone, collect_demonstrations, dagger
from agents.envs import make_env, make_vec_env
from agents.training import (
    TrainConfig,
    build_model,
    env_configs,
    load_model,
    prepare_torch,
    train,
)
from gpushare_env.rollout import Step, predict_action, rollout
from gpushare_eval.cards import lineage, markdown
from tests.agents.helpers import TINY_TRAINING

_TINY = TINY_TRAINING


def _config(tmp_path: Path, name: str, **overrides: Any) -> TrainConfig:
    return TrainConfig.from_any(**{**_TINY, "out": str(tmp_path / name), **overrides})


def _params(path: Path) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_model(path).policy.state_dict().items()}


@pytest.mark.slow
def test_maskable_ppo_trains_saves_loads_and_predicts_valid_actions(tmp_path: Path) -> None:
    config = _config(tmp_path, "mppo", timesteps=256, eval_seeds=(50,), eval_every=128)
    path = train(config)
    assert path.is_file() and (path.parent / "best_model.zip").is_file()
    record = json.loads((path.parent / "config.json").read_text())
    assert record["algo"] == "maskable_ppo"
    assert record["train"]["seed"] == 0 and record["env_config"]["cluster"] == "tiny"
    assert record["timesteps_done"] >= 256
    assert len(record["evaluations"]) >= 2  # at start, and at least once more
    assert (path.parent / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    model = load_model(path)
    assert type(model).__name__ == "MaskablePPO"
    env = make_env(env_configs(config)[0])

    def check(step: Step) -> None:
        mask = step.action_mask
        assert mask is not None and mask[step.action], f"masked-out action {step.action} predicted"
        assert not step.info["invalid"]

    episode = rollout(model, env, seed=123, max_steps=500, callback=check)
    assert episode.steps > 0


@pytest.mark.slow
def test_same_seed_same_steps_identical_parameters(tmp_path: Path) -> None:
    first = train(_config(tmp_path, "a", timesteps=128, bc_episodes=1, bc_epochs=1))
    second = train(_config(tmp_path, "b", timesteps=128, bc_episodes=1, bc_epochs=1))
    other = train(_config(tmp_path, "c", timesteps=128, bc_episodes=1, bc_epochs=1, seed=1))
    a, b, c = _params(first), _params(second), _params(other)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert any(not torch.equal(a[key], c[key]) for key in a)  # the seed matters


@pytest.mark.slow
def test_two_torch_threads_train_deterministically(tmp_path: Path) -> None:
    overrides = {"timesteps": 128, "bc_episodes": 1, "bc_epochs": 2, "torch_threads": 2}
    try:
        first = train(_config(tmp_path, "a", **overrides))
        assert torch.get_num_threads() == 2
        second = train(_config(tmp_path, "b", **overrides))
    finally:
        torch.set_num_threads(1)
    record = json.loads((first.parent / "config.json").read_text())
    assert record["train"]["torch_threads"] == 2
    a, b = _params(first), _params(second)
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.slow
def test_dummy_and_subprocess_envs_train_the_same_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vec_env`` changes where the envs run, not what they do."""
    import agents.training

    built: list[str] = []
    make = agents.training.make_vec_env

    def spy(*args: Any, **kwargs: Any) -> Any:
        vec = make(*args, **kwargs)
        built.append(type(vec.venv).__name__)
        return vec

    monkeypatch.setattr(agents.training, "make_vec_env", spy)
    # one torch thread for both: by default in-process envs get every core, and the
    # parameters repeat exactly only for the same thread count
    settings = {"n_envs": 2, "timesteps": 128, "torch_threads": 1}
    runs = {
        vec: _params(train(_config(tmp_path, vec, vec_env=vec, **settings)))
        for vec in ("dummy", "subproc")
    }
    assert built == ["InProcessVecEnv", "SubprocVecEnv"]
    for key, value in runs["dummy"].items():
        assert torch.equal(value, runs["subproc"][key]), key
    with pytest.raises(ValueError, match="vec_env"):
        _config(tmp_path, "x", vec_env="threads")


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_ppo_and_dqn_variants_run(tmp_path: Path, algo: str) -> None:
    config = _config(tmp_path, algo, algo=algo, timesteps=128, learning_starts=32)
    path = train(config)
    model = load_model(path)
    assert type(model).__name__ == algo.upper()
    env = make_env(env_configs(config)[0])
    obs, info = env.reset(seed=7)
    action = predict_action(model, obs, info["action_mask"])
    assert 0 <= action < env.action_space.n


@pytest.mark.slow
def test_perm_extractor_trains(tmp_path: Path) -> None:
    path = train(_config(tmp_path, "perm", extractor="perm", timesteps=64))
    model = load_model(path)
    assert type(model.policy.features_extractor).__name__ == "PermutationExtractor"


def test_perm_extractor_reads_the_optional_columns(tmp_path: Path) -> None:
    overrides = {"max_decisions": 300, "observe_held_time": True, "observe_placement": True}
    config = _config(tmp_path, "cols", extractor="perm", timesteps=64, env_overrides=overrides)
    extractor = load_model(train(config)).policy.features_extractor
    assert (extractor.pending_columns, extractor.running_columns) == (18, 19)
    overrides["observe_drain"] = True
    config = _config(tmp_path, "drain", extractor="perm", timesteps=64, env_overrides=overrides)
    extractor = load_model(train(config)).policy.features_extractor
    assert (extractor.pending_columns, extractor.running_columns) == (19, 20)
    overrides["observe_rivals"] = True  # running rows only
    config = _config(tmp_path, "rivals", extractor="perm", timesteps=64, env_overrides=overrides)
    extractor = load_model(train(config)).policy.features_extractor
    assert (extractor.pending_columns, extractor.running_columns) == (19, 22)


def test_nested_env_overrides_are_recorded_flat_and_reach_the_extractor(tmp_path: Path) -> None:
    nested = {
        "observation": {"held_time": True, "rivals": True},
        "limits": {"max_suspends_per_job": 2},
    }
    flat = {"observe_held_time": True, "observe_rivals": True, "max_suspends_per_job": 2}
    config = _config(tmp_path, "nested", extractor="perm", env_overrides=nested)
    assert env_configs(config) == env_configs(_config(tmp_path, "flat", env_overrides=flat))
    model = build_model(config, make_env(env_configs(config)[0]))
    assert model.policy.features_extractor.running_columns == 17 + 1 + 2


@pytest.mark.slow
def test_behaviour_cloning_imitates_the_heuristic(tmp_path: Path) -> None:
    config = _config(tmp_path, "bc")
    configs = env_configs(config)
    demos = collect_demonstrations(configs, [0, 1], "thesis", gamma=0.99, reward_scale=0.01)
    assert len(demos) == demos.masks.shape[0] == demos.returns.shape[0]
    assert demos.masks[np.arange(len(demos)), demos.actions].all()  # heuristic acts validly
    vec = make_vec_env(configs, config.envs.train_seeds, 1, 0, subprocess=False)
    model = build_model(config, vec)
    history = clone(model, demos, epochs=15, batch_size=32, learning_rate=3e-3)
    assert history[-1]["policy_loss"] < 0.5 * history[0]["policy_loss"]
    assert history[-1]["accuracy"] > 0.8
    # DAgger: the clone drives, the heuristic labels; the data grows, labels stay valid
    grown, steps = dagger(model, demos, configs, [2, 3], 2, 1, epochs=1, batch_size=32)
    assert len(steps) == 2 and grown.episodes == demos.episodes + 2
    assert len(grown) > len(demos)
    assert grown.masks[np.arange(len(grown)), grown.actions].all()
    vec.close()


@pytest.mark.slow
def test_suspend_weight_is_a_weighted_mean_that_pulls_the_clone_towards_suspends(
    tmp_path: Path,
) -> None:
    from agents.bc import masked_logits_and_values
    from agents.training import _action_weights

    config = _config(tmp_path, "w", bc_suspend_weight=4.0)
    weights = _action_weights(config)
    assert _action_weights(_config(tmp_path, "plain")) is None
    w, r = config.envs.pending_window, config.envs.running_window
    assert weights is not None and weights.shape == (4 * w + r + 1,)
    assert (weights[4 * w : 4 * w + r] == 4.0).all()
    assert weights[: 4 * w].sum() + weights[-1] == 4 * w + 1
    with pytest.raises(ValueError, match="bc_suspend_weight must be > 0, got 0"):
        _config(tmp_path, "bad", bc_suspend_weight=0.0)

    configs = env_configs(_config(tmp_path, "w", num_jobs=20))
    demos = collect_demonstrations(configs, [0, 1], "thesis", reward_scale=0.01)
    suspends = (demos.actions >= 4 * w) & (demos.actions < 4 * w + r)
    assert 0 < suspends.sum() < 0.5 * len(demos)  # rare, as in the runs that use it
    vec = make_vec_env(configs, config.envs.train_seeds, 1, 0, subprocess=False)

    def fitted(action_weights: np.ndarray | None) -> tuple[dict[str, torch.Tensor], float]:
        model = build_model(config, vec)
        clone(model, demos, epochs=2, batch_size=64, action_weights=action_weights)
        obs = {k: torch.as_tensor(v) for k, v in demos.observations.items()}
        with torch.no_grad():
            logits, _ = masked_logits_and_values(model, obs, torch.as_tensor(demos.masks))
        log_p = torch.log_softmax(logits, -1)[torch.arange(len(demos)), demos.actions]
        state = {k: v.clone() for k, v in model.policy.state_dict().items()}
        return state, float(log_p[torch.as_tensor(suspends)].mean())

    plain, plain_suspend = fitted(None)
    uniform, _ = fitted(np.full_like(weights, 3.0))  # a mean: uniform weights change nothing
    for key, value in plain.items():
        torch.testing.assert_close(uniform[key], value, rtol=1e-4, atol=1e-5)
    _, weighted_suspend = fitted(weights)
    assert weighted_suspend > plain_suspend  # the suspend labels are likelier
    vec.close()


@pytest.mark.slow
def test_dagger_after_cloning_refits_for_the_dagger_epochs(tmp_path: Path) -> None:
    config = _config(
        tmp_path, "dagger", timesteps=0, bc_episodes=1, bc_epochs=1, dagger_iterations=1,
        dagger_episodes=1, dagger_epochs=2,
    )  # fmt: skip
    record = json.loads((train(config).parent / "config.json").read_text())
    (step,) = record["dagger"]
    assert step["epoch"] == 1.0  # the last of 2 passes
    assert step["decisions"] > record["bc"]["decisions"] > 0
    assert (tmp_path / "dagger" / "dagger_1.zip").is_file()  # each iteration's clone
    # bc_model.zip is the plain clone, before DAgger refitted it
    plain, final = (
        _params(tmp_path / "dagger" / "bc_model.zip"),
        _params(tmp_path / "dagger" / "model.zip"),
    )
    assert any(not torch.equal(plain[k], final[k]) for k in plain)
    # DAgger goes on from a saved clone: not cloned again (bc_epochs 0), but refitted
    source = tmp_path / "dagger" / "model.zip"
    resumed = train(
        _config(
            tmp_path, "more", timesteps=0, resume=str(source), bc_episodes=1, bc_epochs=0,
            dagger_iterations=1, dagger_episodes=1, train_seeds=tuple(range(10, 20)),
        )
    )  # fmt: skip
    record = json.loads((resumed.parent / "config.json").read_text())
    assert record["resumed_from"] == str(source) and record["bc"]["history"] == []
    assert len(record["dagger"]) == 1
    before, after = _params(source), _params(resumed)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    # a shipped card lists both runs, first to last, and their summed time
    runs = lineage(record)
    first = json.loads((tmp_path / "dagger" / "config.json").read_text())
    assert [r["seconds"] for r in runs] == [first["seconds"]["total"], record["seconds"]["total"]]
    runs[0]["command"], runs[1]["command"] = ["gpushare-train", "--a"], ["gpushare-train", "--b"]
    card = markdown(
        "x", {"algo": "maskable_ppo", "seed": 1, "command": None, "lineage": runs,
              "env_config": {}, "recorded_evaluation": []},
    )  # fmt: skip
    assert "1. `gpushare-train --a`" in card and "2. `gpushare-train --b`" in card
    assert f"training time: {sum(r['seconds'] for r in runs):.0f} s" in card


def test_bad_config_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="algo"):
        _config(tmp_path, "x", algo="a2c")
    with pytest.raises(ValueError, match="torch_threads must be an int >= 1"):
        _config(tmp_path, "x", torch_threads=0)
    with pytest.raises(ValueError, match="dagger_epochs must be an int >= 0"):
        _config(tmp_path, "x", dagger_epochs=-1)
    with pytest.raises(ValueError, match=r"train_seeds include the test seeds \[1000\]"):
        _config(tmp_path, "x", train_seeds=(0, 1000))
    with pytest.raises(ValueError, match="disjoint"):
        _config(tmp_path, "x", eval_seeds=(1,))
    with pytest.raises(ValueError, match=r"bc_heuristic: .*allowed: .*min_speed"):
        _config(tmp_path, "x", bc_heuristic="thesis:min_sped=0.5")


def test_a_teacher_with_parameters_is_the_tuned_heuristic() -> None:
    configs = env_configs(_config(Path("unused"), "x"))
    default = collect_demonstrations(configs, [1], heuristic="thesis")
    tuned = collect_demonstrations(configs, [1], heuristic="thesis:sample_then_suspend=always")
    first = 4 * configs[0]["pending_window"]  # suspend actions: first .. first + R - 1
    last = first + configs[0]["running_window"]
    suspends = [int(((d.actions >= first) & (d.actions < last)).sum()) for d in (default, tuned)]
    assert suspends[1] > suspends[0]  # every sampled job is suspended once


@pytest.mark.slow
def test_cli_writes_model_and_recipe(tmp_path: Path) -> None:
    from gpushare_eval.cli.train import main

    out = tmp_path / "cli"
    status = main(
        [
            "--cluster", "tiny", "--workload", "thesis", "--num-jobs", "6",
            "--timesteps", "64", "--n-steps", "32", "--batch-size", "32", "--n-envs", "1",
            "--seed", "3", "--out", str(out), "--no-progress", "--eval-seeds", "60",
            "--eval-every", "1000", "--train-seeds", "0-3",
        ]
    )  # fmt: skip
    assert status == 0
    record = json.loads((out / "config.json").read_text())
    assert record["train"]["seed"] == 3 and record["train"]["num_jobs"] == 6
    assert record["command"][0] == "gpushare-train"
    resumed = tmp_path / "resumed"
    main(
        [
            "--cluster", "tiny", "--workload", "thesis", "--num-jobs", "6",
            "--timesteps", "64", "--n-steps", "32", "--batch-size", "32", "--n-envs", "1",
            "--out", str(resumed), "--no-progress", "--resume", str(out / "model.zip"),
            "--eval-seeds", "", "--train-seeds", "0-3",
        ]
    )  # fmt: skip
    assert load_model(resumed / "model.zip").num_timesteps >= 128


def test_cli_teacher_and_the_suspension_budget_bind_teacher_and_agent_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agents.bc
    from gpushare_eval.cli.train import build_parser, config_from_args

    args = build_parser().parse_args(
        [
            "--cluster", "tiny", "--workload", "thesis", "--bc-teacher", "gandiva",
            "--bc-lr", "3e-4", "--max-suspends-per-job", "2",
            "--env", '{"max_decisions": 500}', "--out", str(tmp_path / "x"),
        ]
    )  # fmt: skip
    config = config_from_args(args)
    assert config.imitation.bc_heuristic == "gandiva" and config.imitation.bc_learning_rate == 3e-4
    assert dict(config.envs.env_overrides) == {"max_decisions": 500, "max_suspends_per_job": 2}
    agent_config = env_configs(config)[0]
    assert agent_config["max_suspends_per_job"] == 2
    assert agent_config["max_decisions"] == 500
    # the teacher plays under the agent's rules (one env config for both, nothing
    # stripped): every label is an action the learner's mask allows
    budgets = []

    def recording_make_env(env_config: dict) -> Any:
        env = make_env(env_config)
        budgets.append(env.unwrapped.config.limits.max_suspends_per_job)
        return env

    monkeypatch.setattr(agents.bc, "make_env", recording_make_env)
    tight = {**agent_config, "num_jobs": 12, "max_suspends_per_job": 1}
    teacher = "tiresias:queue_thresholds_gpu_s=[60, 600]:lease_s=0"  # preempts often here
    demos = collect_demonstrations([tight], seeds=[0, 1], heuristic=teacher)
    assert budgets == [1, 1]
    assert demos.masks[np.arange(len(demos)), demos.actions].all()
    suspends = (demos.actions >= 4 * 16) & (demos.actions < demos.masks.shape[1] - 1)
    assert suspends.sum() > 0  # the teacher does suspend, within the budget


def test_cli_teacher_takes_the_shipped_teachers_names_and_refuses_their_gandiva_spellings(
    tmp_path: Path,
) -> None:
    from gpushare_eval.cli.train import build_parser, config_from_args

    teachers = {  # the schedule spelt as gandiva -> its name as a variant
        "gandiva:max_load=1.25:time_slice_s=600:order=srpt": (
            "gandiva_srpt:max_load=1.25:time_slice_s=600"
        ),
        "gandiva:max_load=1.25:time_slice_s=600:order=srpt:critical_path_factor=2.5:"
        "critical_path_scope=started:critical_path_protect=true:critical_path_consolidate=true": (
            "gandiva_critical_path:max_load=1.25:time_slice_s=600:critical_path_factor=2.5:"
            "critical_path_scope=started:critical_path_protect=true:critical_path_consolidate=true"
        ),
    }
    base = ["--cluster", "tiny", "--workload", "thesis", "--out", str(tmp_path / "x")]
    for old, new in teachers.items():
        config = config_from_args(build_parser().parse_args([*base, "--bc-teacher", new]))
        assert config.imitation.bc_heuristic == new
        with pytest.raises(ValueError, match=f"bc_heuristic: .*{re.escape(repr(new))}"):
            config_from_args(build_parser().parse_args([*base, "--bc-teacher", old]))


def test_learning_curve_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agents.curve import main as curve

    history = [
        {"timesteps": 0.0, "jct_ratio": 1.2, "makespan_ratio": 1.0, "suspends": 3.0, "best": 1.0},
        {"timesteps": 8000.0, "jct_ratio": 1.1, "makespan_ratio": 0.9, "suspends": 5.0},
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "evaluations.json").write_text(json.dumps({"reference": "thesis", "history": history}))
    out = tmp_path / "curve.png"
    assert curve([str(run), "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    (run / "evaluations.json").write_text(json.dumps({"history": [{"jct_ratio": 1.0}]}))
    assert curve([str(run)]) == 2
    assert "history[0] lacks ['timesteps']" in capsys.readouterr().err


def test_learning_curve_cli_compares_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.curve import main as curve

    for name, seeds in (("a", [500]), ("b", [500]), ("c", [501])):
        run = tmp_path / name
        run.mkdir()
        history = [{"timesteps": 0.0, "jct_ratio": 1.0, "suspends": 3.0}]
        data = {"reference": "thesis", "seeds": seeds, "history": history}
        (run / "evaluations.json").write_text(json.dumps(data))
    out = tmp_path / "compare.png"
    assert curve([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert curve([str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(out)]) == 2
    assert "validated differently" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # several runs need --out
        curve([str(tmp_path / "a"), str(tmp_path / "b")])


def test_truncated_episodes_are_never_compared(tmp_path: Path) -> None:
    """A truncated run covers only the finished jobs (a livelock looks fast): refused."""
    from agents.callbacks import HeuristicEvalCallback
    from gpushare_eval.cards import compare

    config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 8, "max_decisions": 5}
    with pytest.raises(RuntimeError, match=r"thesis truncated on 'thesis' seed 1 .*max_decisions"):
        compare("fifo", [config], [1], ["thesis"])
    with pytest.raises(RuntimeError, match="reference 'thesis' was truncated"):
        HeuristicEvalCallback([config], [1], eval_every=10, out_dir=tmp_path)
    table = compare("fifo", [{**config, "max_decisions": 1000}], [1], ["thesis"])
    assert table["thesis"]["agent"]["mean_jct_s"]["ratio_to_thesis"]["mean"] > 1.0


@pytest.mark.slow
def test_ship_writes_a_small_model_that_acts_like_the_source(tmp_path: Path) -> None:
    import zipfile

    from gpushare_eval.cards import ship

    source = train(_config(tmp_path, "run", timesteps=128))
    shipped = ship(source, "tiny_agent", test_seed=1000, zoo=tmp_path / "zoo")
    record = json.loads((tmp_path / "zoo" / "tiny_agent.json").read_text())
    assert record["recorded_evaluation"][0]["seed"] == 1000
    assert (tmp_path / "zoo" / "tiny_agent.md").is_file()
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(shipped) as b:
        trained = a.getinfo("policy.optimizer.pth").file_size
        fresh = b.getinfo("policy.optimizer.pth").file_size
    assert fresh < trained / 10  # Adam's moments are left behind
    original, copy = load_model(source), load_model(shipped)
    for key, value in original.policy.state_dict().items():
        assert torch.equal(value, copy.policy.state_dict()[key]), key


def test_cli_discount_reference_and_warmup_options(tmp_path: Path) -> None:
    from gpushare_eval.cli.train import build_parser, config_from_args

    argv = ["--cluster", "tiny", "--workload", "thesis", "--out", str(tmp_path / "x")]
    config = config_from_args(build_parser().parse_args(argv))
    assert config.algorithm.time_constant_h == 24.0 and config.envs.reward_reference is None
    assert config.algorithm.critic_warmup == 0
    args = build_parser().parse_args(
        [
            *argv, "--time-constant-h", "50", "--reward-reference", "thesis",
            "--critic-warmup", "4096", "--critic-warmup-lr", "1e-3",
        ]
    )  # fmt: skip
    config = config_from_args(args)
    assert config.algorithm.time_constant_h == 50.0 and config.envs.reward_reference == "thesis"
    assert (config.algorithm.critic_warmup, config.algorithm.critic_warmup_lr) == (4096, 1e-3)
    with pytest.raises(ValueError, match="reward_reference"):
        config_from_args(build_parser().parse_args([*argv, "--reward-reference", "nope"]))


def test_learning_curve_levels_are_the_heuristics_ratios_on_the_validation_seeds(
    tmp_path: Path,
) -> None:
    from agents.curve import heuristic_levels
    from agents.curve import main as curve
    from agents.evaluation import run_episode

    env_config = {"cluster": "tiny", "workload": "thesis", "num_jobs": 12}
    seeds = [500, 501]
    thesis_h = sum(run_episode("thesis", env_config, s)["mean_jct_s"] for s in seeds) / 2 / 3600
    run = tmp_path / "run"
    run.mkdir()
    history = [{"timesteps": 0.0, "jct_ratio": 1.1, "suspends": 2.0}]
    data = {"reference": "thesis", "seeds": seeds, "reference_mean_jct_h": thesis_h}
    (run / "evaluations.json").write_text(json.dumps({**data, "history": history}))
    (run / "config.json").write_text(json.dumps({"env_configs": [env_config]}))
    levels = heuristic_levels(run, ["thesis", "fifo"])
    assert levels["thesis"] == pytest.approx(1.0)
    assert levels["fifo"] > 1.0  # sequential, no sharing: slower than thesis here
    out = tmp_path / "curve.png"
    assert curve([str(run), "--out", str(out), "--heuristics", "fifo"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def _flat_parameters(model: Any) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.policy.parameters()])


def test_the_fused_adam_takes_the_steps_of_sb3s_adam(tmp_path: Path) -> None:
    """Only speed changes: the fused optimizer's parameters after several updates equal,
    to rounding, those of SB3's default Adam (a loop over the tensors, same eps)."""
    config = _config(tmp_path, "fused", timesteps=256)
    start, trained = [], []
    for fused in (True, False):
        model = build_model(config, make_vec_env(env_configs(config), (0, 1), 2, 0))
        optimizer = model.policy.optimizer
        assert optimizer.defaults["fused"] is True and optimizer.defaults["eps"] == 1e-5
        if not fused:
            model.policy.optimizer = torch.optim.Adam(
                model.policy.parameters(), lr=optimizer.defaults["lr"], eps=1e-5
            )
        start.append(_flat_parameters(model))
        model.learn(256)
        trained.append(_flat_parameters(model))
    assert torch.equal(start[0], start[1])
    assert (trained[0] - start[0]).abs().max() > 1e-3  # the updates moved the weights
    assert torch.allclose(trained[0], trained[1], atol=1e-5, rtol=0)


def test_prepare_torch_sets_the_threads_and_drops_distribution_checks(tmp_path: Path) -> None:
    threads, validate = torch.get_num_threads(), torch.distributions.Distribution._validate_args
    try:
        config = _config(tmp_path, "threads", torch_threads=1)
        assert prepare_torch(config) == 1 == torch.get_num_threads()
        assert torch.distributions.Distribution._validate_args is False
    finally:
        torch.set_num_threads(threads)
        torch.distributions.Distribution.set_default_validate_args(validate)


def test_a_card_names_each_config_and_replays_shipped_traces_from_any_clone(
    tmp_path: Path,
) -> None:
    from gpushare_env.workloads.real_traces import philly_vc_path
    from gpushare_eval.cards import config_label, portable_config

    trace = {"cluster": {"nodes": 4, "gpus_per_node": 8, "name": "4x8 v100, load 0.77"},
             "workload": {"path": str(philly_vc_path("2869ce")), "cut": "random"}}  # fmt: skip
    bigger = {"nodes": 16, "gpus_per_node": 8}
    generated = [{"cluster": "medium", "workload": "philly_heavy"},
                 {"cluster": bigger, "workload": "philly_heavy"}]  # fmt: skip
    configs = [*generated, trace]
    assert [config_label(c, configs) for c in configs] == [
        "philly_heavy on medium", "philly_heavy on 16x8",
        "2869ce.csv random runs on 4x8 v100, load 0.77",
    ]  # fmt: skip
    assert config_label(generated[0], generated[:1]) == "philly_heavy"  # one cluster: no suffix
    shipped = portable_config(trace)
    assert shipped["workload"] == {"path": "gpushare_env/workloads/data/philly_vc/2869ce.csv",
                                   "cut": "random"}  # fmt: skip
    elsewhere = {**trace, "workload": {"path": str(tmp_path / "mine.csv")}}
    assert portable_config(elsewhere) == elsewhere  # outside the repository: as given


def test_a_stopped_runs_time_is_its_kept_evaluations(tmp_path: Path) -> None:
    (tmp_path / "evaluations.json").write_text(json.dumps({"history": [
        {"wall_s": 80.0, "best": 1.0}, {"wall_s": 319.0, "best": 1.0}, {"wall_s": 900.0},
    ]}))  # fmt: skip
    record = {"command": ["gpushare-train"], "train": {"out": str(tmp_path)}}
    assert lineage(record)[0]["seconds"] == 319.0
