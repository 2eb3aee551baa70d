"""``TrainConfig`` in groups: nested and flat forms, the flat table, checks naming the path,
and ``gpushare-train``'s generated options (a recorded command line with every flag, the
zoo's recorded commands, ``--help``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agents import ZOO_DIR
from agents.training import (
    FLAT_KEYS,
    GROUPS,
    AlgorithmConfig,
    EnvsConfig,
    ImitationConfig,
    RunConfig,
    TrainConfig,
    env_configs,
)
from gpushare_eval.cli.train import build_parser, config_from_args
from tests.agents.helpers import TINY_TRAINING

ZOO = ZOO_DIR


def _cli(*argv: str) -> TrainConfig:
    return config_from_args(build_parser().parse_args(list(argv)))


def test_the_flat_table_covers_every_setting_once() -> None:
    paths = [
        f"{name}.{f.name}" for name, group in GROUPS.items() for f in dataclasses.fields(group)
    ]
    assert sorted(FLAT_KEYS.values()) == sorted(paths)
    assert len(FLAT_KEYS) == 66


def test_nested_flat_and_mixed_forms_are_equal() -> None:
    flat = {**TINY_TRAINING, "algo": "ppo", "bc_epochs": 3, "seed": 4, "net_arch": [32]}
    nested = {
        "algorithm": {"algo": "ppo", "n_steps": 64, "batch_size": 32, "n_epochs": 2},
        "network": {"net_arch": (32,)},
        "envs": {
            "cluster": "tiny",
            "workloads": ["thesis"],
            "num_jobs": 8,
            "n_envs": 1,
            "train_seeds": (0, 1, 2, 3),
            "env_overrides": {"max_decisions": 300},
        },
        "imitation": {"bc_epochs": 3},
        "evaluation": {"eval_seeds": ()},
        "run": {"seed": 4, "progress_bar": False},
    }
    from_flat = TrainConfig.from_any(flat)
    assert from_flat == TrainConfig.from_any(nested)
    assert from_flat == TrainConfig.from_any({**nested, "bc_epochs": 3} | {"imitation": {}})
    assert from_flat == TrainConfig(
        algorithm=AlgorithmConfig(algo="ppo", n_steps=64, batch_size=32, n_epochs=2),
        network={"net_arch": [32]},  # type: ignore[arg-type]  # a dict of a group is accepted
        envs=EnvsConfig(
            cluster="tiny", workloads=("thesis",), num_jobs=8, n_envs=1,
            train_seeds=(0, 1, 2, 3), env_overrides={"max_decisions": 300},
        ),
        imitation=ImitationConfig(bc_epochs=3),
        evaluation={"eval_seeds": ()},  # type: ignore[arg-type]
        run=RunConfig(seed=4, progress_bar=False),
    )  # fmt: skip
    assert from_flat.imitation.bc_epochs == 3 and from_flat.network.net_arch == (32,)
    # both forms round-trip, and the flat one keeps the recorded key order
    assert TrainConfig.from_any(from_flat.flat()) == from_flat
    assert TrainConfig.from_any(from_flat.as_dict()) == from_flat
    assert list(from_flat.to_json()) == list(FLAT_KEYS)
    assert TrainConfig.from_any(json.loads(json.dumps(from_flat.to_json()))) == from_flat
    # overrides win over the spec, in either form
    assert TrainConfig.from_any(flat, imitation={"bc_epochs": 7}).imitation.bc_epochs == 7
    assert TrainConfig.from_any(nested, bc_epochs=7).imitation.bc_epochs == 7
    assert TrainConfig.from_any(from_flat, seed=9).run.seed == 9
    assert TrainConfig() == TrainConfig.from_any({})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"bc_epochs": -1}, r"TrainConfig\.imitation\.bc_epochs must be an int >= 0, got -1"),
        ({"imitation": {"dagger_epochs": -2}}, r"TrainConfig\.imitation\.dagger_epochs must be"),
        ({"bc_suspend_weight": 0}, r"TrainConfig\.imitation\.bc_suspend_weight must be > 0"),
        ({"bc_heuristic": "nope"}, r"TrainConfig\.imitation\.bc_heuristic: "),
        ({"algo": "a2c"}, r"TrainConfig\.algorithm\.algo must be one of \['maskable_ppo'"),
        ({"time_constant_h": -1.0}, r"TrainConfig\.algorithm\.time_constant_h must be None or"),
        ({"algo": "dqn", "critic_warmup": 5}, r"TrainConfig\.algorithm\.critic_warmup needs"),
        ({"extractor": "cnn"}, r"TrainConfig\.network\.extractor must be one of"),
        ({"algo": "dqn", "extractor": "pointer"}, r"TrainConfig\.network\.extractor 'pointer'"),
        ({"n_envs": 0}, r"TrainConfig\.envs\.n_envs must be an int >= 1, got 0"),
        ({"vec_env": "threads"}, r"TrainConfig\.envs\.vec_env must be one of"),
        ({"workloads": ()}, r"TrainConfig\.envs\.workloads must name at least one"),
        ({"reward_reference": "nope"}, r"TrainConfig\.envs\.reward_reference: "),
        ({"train_seeds": (1000,)}, r"TrainConfig\.envs\.train_seeds include the test seeds"),
        ({"eval_seeds": (1001,)}, r"TrainConfig\.evaluation\.eval_seeds include the test"),
        ({"eval_seeds": (0,)}, r"TrainConfig\.evaluation\.eval_seeds must be disjoint"),
        ({"timesteps": -1}, r"TrainConfig\.run\.timesteps must be an int >= 0"),
        ({"torch_threads": 0}, r"TrainConfig\.run\.torch_threads must be an int >= 1"),
        ({"n_steps": 0}, r"TrainConfig\.algorithm\.n_steps must be an int >= 1, got 0"),
        ({"learning_rate": float("nan")}, r"TrainConfig\.algorithm\.learning_rate must be a"),
        ({"gamma": 2}, r"TrainConfig\.algorithm\.gamma must be a finite number >= 0 and <= 1"),
        ({"net_arch": (64, 0)}, r"TrainConfig\.network\.net_arch must be layer sizes"),
        ({"cluster": "huge"}, r"TrainConfig\.envs: EnvConfig\.cluster: unknown preset 'huge'"),
        ({"workloads": ("nope",)}, r"TrainConfig\.envs: EnvConfig\.workload: workload: 'nope'"),
        ({"pending_window": 0}, r"TrainConfig\.envs: EnvConfig\.windows\.pending must be"),
        ({"env_overrides": {"nope": 1}}, r"TrainConfig\.envs: EnvConfig: unknown key\(s\)"),
        ({"train_seeds": ()}, r"TrainConfig\.envs\.train_seeds must hold at least one seed"),
        ({"train_seeds": (-1,)}, r"TrainConfig\.envs\.train_seeds must be >= 0, got -1"),
        ({"reward_scale": 0.0}, r"TrainConfig\.envs\.reward_scale must be a finite number > 0"),
        ({"dagger_episodes": 0}, r"TrainConfig\.imitation\.dagger_episodes must be an int >= 1"),
        ({"eval_every": 0}, r"TrainConfig\.evaluation\.eval_every must be an int >= 1"),
        ({"seed": -1}, r"TrainConfig\.run\.seed must be an int >= 0, got -1"),
        ({"seed": 2**32}, r"TrainConfig\.run\.seed must be <= 2\*\*32 - 1"),
        ({"out": ""}, r"TrainConfig\.run\.out must be a folder name"),
    ],
)
def test_bad_values_name_their_path(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig.from_any(overrides)


def test_unknown_and_doubled_keys_are_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'bc_epoch'; allowed: the groups \["):
        TrainConfig.from_any(bc_epoch=3)
    with pytest.raises(ValueError, match=r"TrainConfig\.imitation: unknown keys \['epochs'\]"):
        TrainConfig.from_any(imitation={"epochs": 3})
    with pytest.raises(ValueError, match=r"allowed: \['bc_episodes', 'bc_epochs'"):
        ImitationConfig.from_any({"epochs": 3})
    with pytest.raises(ValueError, match=r"TrainConfig\.imitation\.bc_epochs given twice"):
        TrainConfig.from_any({"bc_epochs": 3, "imitation": {"bc_epochs": 4}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        TrainConfig().run.seed = 1  # type: ignore[misc]


#: A command line with every flag of ``gpushare-train``'s first, hand-written parser, each
#: off its default, and the flat config that parser made of it (recorded): the generated
#: options parse it to the same config.
_EVERY_OLD_FLAG = [
    "--algo", "ppo", "--preset", "thesis", "--cluster", "tiny2", "--workload", "philly",
    "--workload", "thesis", "--num-jobs", "50", "--pending-window", "8", "--running-window", "4",
    "--timesteps", "1000", "--n-envs", "3", "--vec-env", "dummy", "--seed", "7", "--out", "o",
    "--extractor", "perm", "--bc-warmstart", "5", "--bc-epochs", "2", "--bc-lr", "5e-4",
    "--bc-teacher", "gandiva", "--dagger", "2", "--dagger-episodes", "3", "--dagger-epochs", "4",
    "--bc-suspend-weight", "2.5", "--train-seeds", "0-9,20", "--eval-seeds", "500",
    "--eval-every", "100", "--learning-rate", "3e-4", "--n-steps", "64", "--batch-size", "32",
    "--n-epochs", "3", "--clip-range", "0.2", "--target-kl", "0.05", "--gamma", "0.9",
    "--time-constant-h", "10", "--ent-coef", "0.01", "--reward-scale", "0.1",
    "--reward-reference", "thesis", "--critic-warmup", "100", "--critic-warmup-lr", "1e-3",
    "--reward", '{"jct": 1, "makespan": 0.1}', "--max-suspends-per-job", "3",
    "--env", '{"max_decisions": 500}', "--torch-threads", "2", "--no-progress",
]  # fmt: skip
_EVERY_OLD_FLAG_CONFIG: dict[str, Any] = {
    "algo": "ppo", "batch_size": 32, "bc_episodes": 5, "bc_epochs": 2, "bc_heuristic": "gandiva",
    "bc_trace_heuristic": None, "bc_learning_rate": 0.0005, "bc_suspend_weight": 2.5,
    "bc_dataset": None,
    "buffer_size": 50000,
    "clip_range": 0.2, "cluster": "tiny2", "critic_warmup": 100, "critic_warmup_lr": 0.001,
    "dagger_episodes": 3, "dagger_epochs": 4, "dagger_iterations": 2,
    "deterministic_torch": True, "ent_coef": 0.01,
    "env_overrides": {
        "max_decisions": 500, "max_suspends_per_job": 3, "reward": {"jct": 1, "makespan": 0.1},
    },
    "eval_every": 100, "eval_seeds": [500], "eval_workers": 1, "exploration_final_eps": 0.02,
    "exploration_fraction": 0.2, "extractor": "perm", "gae_lambda": 0.95, "gamma": 0.9,
    "learning_rate": 0.0003, "learning_starts": 1000, "n_envs": 3, "n_epochs": 3,
    "n_steps": 64, "net_arch": [64, 64], "num_jobs": 50, "out": "o", "pending_window": 8,
    "progress_bar": False, "resume": None, "reward_reference": "thesis",
    "reference_plays": 0, "curriculum_jobs": None, "curriculum_steps": 1000000,
    "reward_scale": 0.1, "suspend_bias": 0.0, "critic": "features", "clusters": [],
    "traces": [], "trace_load": 0.9, "trace_jobs": None, "running_window": 4, "seed": 7,
    "target_kl": 0.05,
    "time_constant_h": 10.0,
    "timesteps": 1000, "torch_threads": 2, "train_seeds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 20],
    "vec_env": "dummy", "verbose": 0, "workloads": ["philly", "thesis"],
    "accept_bias": 8.0, "residual": None, "select_by": "mean",  # later settings, at defaults
    "label_workers": 1, "bc_sharing_heuristic": None, "teacher_proposals": False,
}  # fmt: skip


def test_the_recorded_command_line_parses_to_its_recorded_config() -> None:
    config = _cli(*_EVERY_OLD_FLAG)
    assert json.loads(json.dumps(config.to_json())) == _EVERY_OLD_FLAG_CONFIG
    assert config.imitation.dagger_iterations == 2 and config.envs.workloads == ("philly", "thesis")
    # no flag: the preset and the dataclass defaults
    default = _cli()
    assert default == TrainConfig.from_preset("philly")
    assert (default.algorithm.n_steps, default.envs.n_envs, default.run.timesteps) == (
        64,
        32,
        200_000,
    )
    assert default.run.progress_bar and default.run.torch_threads is None
    assert _cli("--eval-seeds", "").evaluation.eval_seeds == ()
    assert _cli("--target-kl", "none").algorithm.target_kl is None


def test_the_zoo_commands_remake_their_recorded_train_configs() -> None:
    cards = sorted(ZOO.glob("*.json"))
    assert cards
    for card in cards:
        record = json.loads(card.read_text(encoding="utf-8"))
        recorded = TrainConfig.from_any(record["train"])  # the flat form
        remade = _cli(*record["command"][1:])
        assert remade == recorded, card.name
        assert json.loads(json.dumps(remade.to_json())) == {
            **json.loads(json.dumps(TrainConfig.from_any(record["train"]).to_json())),
            **record["train"],
        }, card.name


def test_help_lists_one_group_per_config_group_with_its_options() -> None:
    text = build_parser().format_help()
    starts = [text.index(f"\n{name} (TrainConfig.{name}):\n") for name in GROUPS]
    assert starts == sorted(starts)
    ends = [*starts[1:], len(text)]
    sections = {name: text[a:b] for name, a, b in zip(GROUPS, starts, ends, strict=True)}
    expected = {
        "algorithm": ["--algo", "--learning-rate", "--gamma", "--time-constant-h", "--target-kl"],
        "network": ["--extractor", "--net-arch"],
        "envs": ["--cluster", "--workload", "--env", "--train-seeds", "--reward", "--n-envs"],
        "imitation": ["--bc-warmstart", "--bc-teacher", "--bc-lr", "--dagger ", "--dagger-epochs"],
        "evaluation": ["--eval-seeds", "--eval-every"],
        "run": ["--timesteps", "--seed", "--out", "--resume", "--torch-threads", "--no-progress"],
    }
    for group, flags in expected.items():
        for flag in flags:
            assert flag in sections[group], (group, flag)
    assert "Passes of behaviour cloning. (default: 10)" in " ".join(sections["imitation"].split())


def test_every_setting_has_a_generated_option() -> None:
    dests = {action.dest for action in build_parser()._actions}
    assert set(FLAT_KEYS.values()) <= dests


def test_dqn_takes_its_own_defaults_where_ppos_do_not_apply() -> None:
    dqn = _cli("--algo", "dqn")
    assert (dqn.algorithm.time_constant_h, dqn.network.extractor) == (None, "flat")
    ppo = _cli("--algo", "maskable_ppo")
    assert (ppo.algorithm.time_constant_h, ppo.network.extractor) == (24.0, "pointer")
    assert _cli("--algo", "dqn", "--extractor", "perm").network.extractor == "perm"
    with pytest.raises(ValueError, match="time_constant_h needs PPO"):
        _cli("--algo", "dqn", "--time-constant-h", "10")


def test_a_trace_trains_whole_unless_num_jobs_is_given(tmp_path: Path) -> None:
    # the preset's episode size (300) is for its generators, not for a trace
    trace = str(tmp_path / "jobs.csv")
    assert _cli("--workload", trace).envs.num_jobs is None
    assert env_configs(_cli("--workload", trace))[0]["num_jobs"] is None
    assert _cli("--workload", trace, "--num-jobs", "50").envs.num_jobs == 50
    assert _cli("--workload", "philly_heavy").envs.num_jobs == 300
    assert _cli().envs.num_jobs == 300


def test_numpy_and_other_real_numbers_are_recorded_as_plain_json() -> None:
    # one toolkit (gpushare_env.sim.settings.plain): a Fraction or a numpy scalar given to a
    # config is stored as the Python number, so config.json stays plain JSON
    from fractions import Fraction

    import numpy as np

    from agents.train_config import TrainConfig
    from gpushare_env.envs.config import EnvConfig

    train = TrainConfig.from_any({"learning_rate": Fraction(1, 1000), "n_steps": np.int64(64)})
    assert json.loads(json.dumps(train.flat()))["learning_rate"] == 0.001
    assert type(train.algorithm.n_steps) is int
    env = EnvConfig.from_any({"time_scale_s": np.longdouble(2), "pending_window": np.int32(8)})
    assert type(env.reward.time_scale_s) is float and type(env.windows.pending) is int


def test_the_env_settings_are_the_env_declarations() -> None:
    """The training's env settings are declared settings of the env (its windows at the
    env's defaults; the cluster and the episode size at training's own), and reach the
    env configs by their flat keys."""
    from agents.train_config import EnvsConfig, env_configs
    from gpushare_env.sim.setting_table import SETTINGS
    from gpushare_env.sim.settings import declared_fields

    declared = {name: entry.path for name, entry in declared_fields(EnvsConfig)}
    assert declared == {
        "cluster": "cluster",
        "num_jobs": "num_jobs",
        "pending_window": "windows.pending",
        "running_window": "windows.running",
    }
    assert all(SETTINGS[path].flat == name for name, path in declared.items())
    envs = EnvsConfig()
    assert (envs.pending_window, envs.running_window) == (16, 16)  # the env's
    assert (envs.cluster, envs.num_jobs) == ("medium", 300)  # training's own
    config = TrainConfig.from_any({"pending_window": 8, "clusters": ["tiny"]})
    for env in env_configs(config):
        assert (env["pending_window"], env["running_window"], env["num_jobs"]) == (8, 16, 300)
    assert [env["cluster"] for env in env_configs(config)] == ["medium"] * 2 + ["tiny"] * 2
    with pytest.raises(ValueError, match=r"EnvConfig\.windows\.running must be an int >= 1"):
        TrainConfig.from_any({"running_window": 0})
