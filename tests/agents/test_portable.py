"""``agents.portable``: one pointer model file plays on every cluster and with any windows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sb3_contrib")

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO

import gpushare_env  # noqa: F401
from agents import ZOO_DIR
from agents.inference import EvalPredictor
from agents.portable import PLAY_ONLY_PARAMETERS, NotPortableError, rebound_policy
from agents.train_config import TrainConfig
from agents.training import build_model, load_model
from gpushare_env.rollout import rollout
from gpushare_env.sim.cluster import PRESETS
from gpushare_env.workloads import sized_cluster
from gpushare_env.workloads.csv_trace import read_csv_trace
from gpushare_env.workloads.real_traces import PHILLY_VC_TRACES, philly_vc_path
from gpushare_eval.plan import make_plan
from gpushare_eval.specs import PlanError

#: A shipped pointer model trained on ``medium`` with windows of 16 and no observation
#: options (its critic reads every slot's code: playable anywhere, not trainable).
MODEL = ZOO_DIR / "maskable_ppo_scratch_3m_heavy.zip"


#: The shipped general model: trained on three clusters and the six development traces,
#: with observation options (the runs below apply them, as gpushare-evaluate does).
GENERAL = ZOO_DIR / "maskable_ppo_dagger_general.zip"


@pytest.fixture(scope="module")
def model() -> Any:
    return load_model(MODEL)


@pytest.fixture(scope="module")
def general() -> tuple[Any, dict[str, Any]]:
    recorded = json.loads(GENERAL.with_suffix(".json").read_text())["env_config"]
    options = {k: v for k, v in recorded.items() if k.startswith("observe_")}
    assert options, "the general model was trained with observation options"
    return load_model(GENERAL), options


def _play(model: Any, config: dict[str, Any], seed: int = 3) -> Any:
    env = gym.make("GPUShare-v0", config=config)
    episode = rollout(EvalPredictor(model, env), env, seed=seed)
    env.close()
    return episode


@pytest.mark.parametrize("cluster", sorted(PRESETS))
def test_one_model_file_plays_on_every_cluster_preset(model: Any, cluster: str) -> None:
    for window in (16, 48):
        config = {"cluster": cluster, "workload": "philly_heavy", "num_jobs": 24,
                  "pending_window": window, "running_window": window}  # fmt: skip
        episode = _play(model, config)
        assert episode.invalid_actions == 0
        assert episode.terminated, "every job finished"
        assert episode.metrics["mean_jct_s"] > 0


@pytest.mark.parametrize("cluster", sorted(PRESETS))
def test_the_general_model_plays_on_every_cluster_preset(general: Any, cluster: str) -> None:
    model, options = general
    config = {"cluster": cluster, "workload": "philly_heavy", "num_jobs": 24,
              "pending_window": 1024, "running_window": 1024, **options}  # fmt: skip
    episode = _play(model, config)
    assert episode.invalid_actions == 0
    assert episode.terminated, "every job finished"


@pytest.mark.parametrize("trace", PHILLY_VC_TRACES)
def test_the_general_model_plays_every_real_trace_at_its_sized_cluster(
    general: Any, trace: str
) -> None:
    model, options = general
    path = philly_vc_path(trace)
    cluster = sized_cluster(read_csv_trace(path), 0.9)
    config = {"cluster": cluster, "workload": {"path": str(path), "cut": "random"},
              "num_jobs": 40, "pending_window": 1024, "running_window": 1024,
              **options}  # fmt: skip
    episode = _play(model, config)
    assert episode.invalid_actions == 0
    assert episode.terminated, "every job finished"


@pytest.mark.parametrize("trace", PHILLY_VC_TRACES)
def test_one_model_file_plays_every_real_trace_at_its_sized_cluster(model: Any, trace: str) -> None:
    path = philly_vc_path(trace)
    cluster = sized_cluster(read_csv_trace(path), 0.9)
    config = {"cluster": cluster, "workload": str(path), "num_jobs": 40,
              "pending_window": 1024, "running_window": 1024}  # fmt: skip
    with pytest.warns(UserWarning, match="first 40"):
        episode = _play(model, config)
    assert episode.invalid_actions == 0
    assert episode.terminated, "every job finished"


def test_on_its_own_spaces_the_policy_is_the_saved_one(model: Any) -> None:
    space = model.observation_space
    assert rebound_policy(model.policy, space, model.action_space) is model.policy


def test_rebinding_carries_every_actor_weight_and_the_same_decisions(model: Any) -> None:
    """On the model's own cluster and windows a rebound copy acts exactly as the saved
    policy; on another it carries every weight but the play-only first value layer."""
    env = gym.make("GPUShare-v0", config={"cluster": "medium", "workload": "philly_heavy",
                                          "num_jobs": 60})  # fmt: skip
    # a copy built anew for the same spaces (as for a different cluster) decides the same
    copy = rebound_policy(model.policy, env.observation_space, env.action_space)
    assert copy is model.policy
    obs, _ = env.reset(seed=5)
    mask = env.unwrapped.action_masks()
    wider = gym.make("GPUShare-v0", config={"cluster": "thesis", "workload": "philly_heavy",
                                            "num_jobs": 60, "pending_window": 40,
                                            "running_window": 40})  # fmt: skip
    other = rebound_policy(model.policy, wider.observation_space, wider.action_space)
    saved, carried = model.policy.state_dict(), other.state_dict()
    for name, value in saved.items():
        if name in PLAY_ONLY_PARAMETERS:
            assert carried[name].shape != value.shape
        else:
            assert torch.equal(carried[name], value), name
    before = EvalPredictor(model).predict(obs, action_masks=mask)[0]
    assert EvalPredictor(model, env).predict(obs, action_masks=mask)[0] == before
    env.close()
    wider.close()


def test_rebinding_refuses_other_row_columns_and_training_a_features_critic(model: Any) -> None:
    options = gym.make("GPUShare-v0", config={"cluster": "medium", "observe_rivals": True})
    with pytest.raises(NotPortableError, match=r"observation options.*running_columns=17"):
        rebound_policy(model.policy, options.observation_space, options.action_space)
    # another cluster, same windows: every weight carries, the critic's too
    other = gym.make("GPUShare-v0", config={"cluster": "thesis"})
    rebound = rebound_policy(
        model.policy, other.observation_space, other.action_space, for_training=True
    )
    assert rebound is not model.policy
    other = gym.make("GPUShare-v0", config={"cluster": "thesis", "pending_window": 32})
    with pytest.raises(NotPortableError, match="--critic context"):
        rebound_policy(model.policy, other.observation_space, other.action_space, for_training=True)


def test_a_context_critic_model_carries_every_weight(tmp_path: Path) -> None:
    config = TrainConfig.from_any({"cluster": "tiny", "workloads": ["thesis"], "num_jobs": 8,
                                   "critic": "context", "out": str(tmp_path)})  # fmt: skip
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
    model = build_model(config, env)
    assert isinstance(model, MaskablePPO)
    big = gym.make("GPUShare-v0", config={"cluster": "medium", "pending_window": 64,
                                          "running_window": 32})  # fmt: skip
    rebound = rebound_policy(model.policy, big.observation_space, big.action_space,
                             for_training=True)  # fmt: skip
    for name, value in model.policy.state_dict().items():
        assert torch.equal(rebound.state_dict()[name], value), name
    obs, _ = big.reset(seed=0)
    tensor, _ = rebound.obs_to_tensor(obs)
    with torch.no_grad():
        assert rebound.predict_values(tensor).shape == (1, 1)


def test_a_flat_model_is_not_portable(tmp_path: Path) -> None:
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
    flat = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=32, device="cpu")
    other = gym.make("GPUShare-v0", config={"cluster": "thesis", "num_jobs": 8})
    with pytest.raises(NotPortableError, match="not a pointer policy"):
        rebound_policy(flat.policy, other.observation_space, other.action_space)
    flat.save(tmp_path / "flat.zip")
    with pytest.raises(PlanError, match=r"--policies: .*not a pointer policy"):
        make_plan(policies=[str(tmp_path / "flat.zip")], seeds=[0], workers=1,
                  agent_windows="evaluation", window=32, out=tmp_path / "out")  # fmt: skip


def test_agent_windows_evaluation_gives_a_pointer_agent_the_runs_windows(tmp_path: Path) -> None:
    common = {"policies": ["thesis", str(MODEL)], "seeds": [0], "workers": 1, "window": 64,
              "out": tmp_path / "out"}  # fmt: skip
    trained = make_plan(**common)
    shared = make_plan(**common, agent_windows="evaluation")
    windows = {
        plan_name: {run.policy.label: run.env_config.get("pending_window") for run in plan.runs}
        for plan_name, plan in (("trained", trained), ("shared", shared))
    }
    assert windows["trained"] == {"thesis": 64, MODEL.stem: 16}
    assert windows["shared"] == {"thesis": 64, MODEL.stem: 64}
    assert any("rebound" in note for note in shared.notes)
    with pytest.raises(PlanError, match="--agent-windows"):
        make_plan(**common, agent_windows="mine")


def test_zero_gpu_rows_are_invisible_to_the_pointer_network(model: Any) -> None:
    plain = gym.make("GPUShare-v0", config={"cluster": "thesis", "num_jobs": 30})
    padded = gym.make("GPUShare-v0", config={"cluster": "thesis", "num_jobs": 30,
                                             "gpu_rows": 200})  # fmt: skip
    on_plain, on_padded = EvalPredictor(model, plain), EvalPredictor(model, padded)
    a, _ = plain.reset(seed=2)
    b, _ = padded.reset(seed=2)
    for _ in range(40):
        features = [
            p.policy.extract_features(p.policy.obs_to_tensor(o)[0], p.policy.features_extractor)
            for p, o in ((on_plain, a), (on_padded, b))
        ]
        assert torch.allclose(features[0], features[1], atol=1e-6)
        mask = plain.unwrapped.action_masks()
        action = on_plain.predict(a, action_masks=mask)[0]
        assert on_padded.predict(b, action_masks=mask)[0] == action
        a, _, done, _, _ = plain.step(action)
        b, _, _, _, _ = padded.step(action)
        if done:
            break


def test_training_on_several_clusters_pads_to_the_largest(tmp_path: Path) -> None:
    from agents.train_config import env_configs
    from agents.training import train
    from tests.agents.helpers import TINY_TRAINING

    settings = {"clusters": ["thesis"], "critic": "context", "n_envs": 2, "timesteps": 128}
    config = TrainConfig.from_any({**TINY_TRAINING, **settings, "out": str(tmp_path)})
    configs = env_configs(config)
    assert [c["cluster"] for c in configs] == ["tiny", "thesis"]
    assert {c["gpu_rows"] for c in configs} == {16}
    trained = load_model(train(config))
    assert trained.observation_space["gpus"].shape == (16 * 6,)
    episode = _play(trained, {"cluster": "medium", "workload": "thesis", "num_jobs": 10,
                              "max_decisions": 300})  # fmt: skip
    assert episode.invalid_actions == 0 and episode.done


def test_training_on_traces_gives_each_its_sized_cluster_and_random_runs(tmp_path: Path) -> None:
    from agents.train_config import env_configs, teachers, validation_configs
    from agents.training import train
    from tests.agents.helpers import TINY_TRAINING

    path = philly_vc_path("2869ce")  # 32 GPUs at load 0.9
    settings = {"traces": [str(path)], "critic": "context", "n_envs": 2, "timesteps": 128,
                "num_jobs": 12, "eval_seeds": (500,), "eval_every": 128, "bc_episodes": 2,
                "bc_epochs": 1, "bc_heuristic": "fifo_pack",
                "bc_trace_heuristic": "thesis"}  # fmt: skip
    config = TrainConfig.from_any({**TINY_TRAINING, **settings, "out": str(tmp_path)})
    configs = env_configs(config)
    whole = read_csv_trace(path, 0)
    assert [c["cluster"] for c in configs] == ["tiny", sized_cluster(whole, 0.9)]
    assert configs[1]["workload"] == {"path": str(path), "cut": "random"}
    assert {c["gpu_rows"] for c in configs} == {32} and configs[1]["num_jobs"] == 12
    assert validation_configs(config) == configs  # the workloads on cluster, and the trace
    assert teachers(config) == ["fifo_pack", "thesis"]  # one teacher per kind of data
    shipped = TrainConfig.from_any({**TINY_TRAINING, "traces": ["philly_vc"]})
    assert [c["workload"]["path"] for c in env_configs(shipped)[1:]] == [
        str(philly_vc_path(name)) for name in PHILLY_VC_TRACES
    ]
    longer = env_configs(TrainConfig.from_any({**TINY_TRAINING, **settings, "trace_jobs": 40}))
    assert [c["num_jobs"] for c in longer] == [12, 40]  # longer runs on the traces only
    trained = load_model(train(config))
    assert trained.observation_space["gpus"].shape == (32 * 6,)
    history = (tmp_path / "evaluations.json").read_text()
    assert '"jct_ratio"' in history  # validated on both envs
    recorded = json.loads((tmp_path / "config.json").read_text())
    assert recorded["bc"]["trace_heuristic"] == "thesis" and len(recorded["bc"]["seeds"]) == 2


def test_one_teacher_per_env_config_or_a_clear_error() -> None:
    from agents.bc import collect_demonstrations

    configs = [{"cluster": "tiny", "workload": "thesis", "num_jobs": 4}] * 2
    demos = collect_demonstrations(configs, [0, 1], ["fifo_pack", "fifo"])
    assert demos.episodes == 2 and len(demos.actions) > 0
    with pytest.raises(ValueError, match="1 teachers for 2 env configs"):
        collect_demonstrations(configs, [0], ["fifo"])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"traces": "philly_vc"}, "must be a list of trace paths"),
        ({"traces": ["philly"]}, "each must be a .csv / .json trace or 'philly_vc'"),
        ({"traces": ["philly_vc"], "num_jobs": None}, "need num_jobs"),
        ({"traces": ["philly_vc"], "trace_load": 0}, "trace_load"),
        ({"traces": ["philly_vc"], "trace_jobs": 0}, "trace_jobs"),
    ],
)
def test_bad_trace_settings_are_named(settings: dict[str, Any], message: str) -> None:
    from tests.agents.helpers import TINY_TRAINING

    with pytest.raises(ValueError, match=message):
        TrainConfig.from_any({**TINY_TRAINING, **settings})


def test_gpushare_train_names_a_missing_trace(tmp_path: Path, capsys: Any) -> None:
    from gpushare_eval.cli.train import main

    with pytest.raises(SystemExit) as stopped:
        main(["--trace", str(tmp_path / "nope.csv"), "--timesteps", "0", "--out", str(tmp_path)])
    assert stopped.value.code == 2
    assert "--trace: no such file" in capsys.readouterr().err


def test_a_cluster_summary_model_has_one_observation_for_every_cluster(tmp_path: Path) -> None:
    config = TrainConfig.from_any({"cluster": "tiny", "workloads": ["thesis"], "num_jobs": 8,
                                   "critic": "context", "out": str(tmp_path),
                                   "env_overrides": {"observe_cluster_summary": True}})  # fmt: skip
    env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8,
                                          "observe_cluster_summary": True})  # fmt: skip
    model = build_model(config, env)
    assert not hasattr(model.policy.features_extractor, "gpu_encoder")
    from agents.train_config import env_configs

    several = TrainConfig.from_any({**config.to_json(), "clusters": ["medium"]})
    assert [c.get("gpu_rows") for c in env_configs(several)] == [None, None]  # no padding
    for cluster in ("thesis", "mixed", {"nodes": 30, "gpus_per_node": 8}):
        other = gym.make(
            "GPUShare-v0", config={"cluster": cluster, "observe_cluster_summary": True}
        )
        assert other.observation_space == env.observation_space  # no shape is the cluster's
        play = {"cluster": cluster, "workload": "philly_heavy", "num_jobs": 16,
                "observe_cluster_summary": True, "max_decisions": 2000}  # fmt: skip
        episode = _play(model, play)
        assert episode.invalid_actions == 0 and episode.done
