"""Configuration: defaults, dict / dataclass equivalence, and clear rejections."""

from __future__ import annotations

import gymnasium as gym
import pytest

import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.envs import (
    FLAT_KEYS,
    EnvConfig,
    GPUShareEnv,
    InvalidActionError,
    LimitsConfig,
    ObservationConfig,
    RewardConfig,
    SimulatorConfig,
    WindowsConfig,
)
from gpushare_env.sim.decisions import Schedule, Suspend
from tests.jobs import job


def test_defaults_are_documented_quick_episode() -> None:
    config = EnvConfig()
    # num_jobs None: the workload's own count, 100 jobs for the thesis generator
    assert (config.cluster, config.workload, config.num_jobs) == ("thesis", "thesis", None)
    _, info = GPUShareEnv(config).reset(seed=0)
    assert info["num_jobs"] == 100 and "trace_cut" not in info
    assert (config.windows.pending, config.windows.running) == (16, 16)
    assert config.reward == RewardConfig(jct=1.0, invalid=1.0)
    assert config.invalid_action == "noop"
    assert config.decision_cap(100) == 50 * 100 + 1000


def test_dict_and_dataclass_and_kwargs_agree() -> None:
    as_dict = GPUShareEnv({"cluster": "tiny", "num_jobs": 7, "reward": {"makespan": 0.5}})
    as_config = GPUShareEnv(
        EnvConfig(cluster="tiny", num_jobs=7, reward=RewardConfig(makespan=0.5))
    )
    as_kwargs = GPUShareEnv(cluster="tiny", num_jobs=7, reward={"makespan": 0.5})
    assert as_dict.config == as_config.config == as_kwargs.config
    made = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 7})
    assert made.unwrapped.config.num_jobs == 7


def test_unknown_key_lists_allowed_and_suggests() -> None:
    with pytest.raises(ValueError, match="unknown key") as error:
        EnvConfig.from_any({"pendng_window": 8})
    message = str(error.value)
    assert "pending_window" in message and "running_window" in message
    assert "did you mean 'pending_window'" in message
    with pytest.raises(ValueError, match="unknown key"):
        gym.make("GPUShare-v0", config={"clutser": "tiny"})


def test_unknown_reward_component_lists_allowed() -> None:
    with pytest.raises(ValueError, match=r"reward: unknown key.*'starvation'"):
        EnvConfig.from_any({"reward": {"jtc": 1.0}})


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "pending_window",
            0,
            r"EnvConfig\.windows\.pending must be an int >= 1 and <= 1024, got 0",
        ),
        (
            "running_window",
            2000,
            r"EnvConfig\.windows\.running must be an int >= 1 and <= 1024, got 2000",
        ),
        ("running_window", 2.0, r"EnvConfig\.windows\.running must be an int"),
        ("num_jobs", 0, r"EnvConfig\.num_jobs must be None or an int >= 1"),
        ("time_scale_s", 0.0, r"EnvConfig\.reward\.time_scale_s must be a finite number >= 1e-6"),
        ("invalid_action", "ignore", r"invalid_action must be one of \['noop', 'raise'\]"),
        (
            "invalid_penalty",
            -1.0,
            r"EnvConfig\.reward\.invalid_penalty must be a finite number >= 0",
        ),
        ("duration_info", "exact", r"EnvConfig\.simulator\.duration_info must be one of"),
        (
            "sample_iterations",
            -1,
            r"EnvConfig\.simulator\.sample_iterations must be an int >= 0 and <= 2\*\*31 - 1",
        ),
        (
            "sample_noise",
            1.0,
            r"EnvConfig\.simulator\.sample_noise must be a finite number >= 0 and < 1, got 1\.0",
        ),
        (
            "max_suspends_per_job",
            -1,
            r"EnvConfig\.limits\.max_suspends_per_job must be None or an int >= 0 and <= "
            r"2\*\*31 - 1, got -1",
        ),
        (
            "max_decisions",
            0,
            r"EnvConfig\.limits\.max_decisions must be None or an int >= 1 and <= 2\*\*62",
        ),
        ("max_time_s", -5, r"EnvConfig\.limits\.max_time_s must be None or a number > 0"),
        ("auto_advance", 1, r"EnvConfig\.auto_advance must be True or False"),
        ("on_unfit", "drop", r"EnvConfig\.on_unfit must be one of"),
        ("cluster", "huge", r"EnvConfig.cluster: unknown preset 'huge'"),
        ("cluster", {"nodes": 2, "gpu": "v100"}, r"cluster: unknown keys \['gpu'\]"),
        ("workload", "phily", r"EnvConfig.workload: .*neither a preset"),
        ("workload", {"kind": "thesis", "jobz": 3}, r"EnvConfig.workload: .*unknown keys"),
        ("jobs", [], r"jobs must be None or a non-empty sequence of JobSpec"),
        ("reward", {"jct": float("nan")}, r"EnvConfig\.reward\.jct must be a finite number"),
    ],
)
def test_bad_values_name_field_and_range(key: str, value: object, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        EnvConfig.from_any({key: value})
    # the nested form names the same path
    with pytest.raises(ValueError, match=expected):
        EnvConfig.from_any(_nested(key, value))


def test_bad_render_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        GPUShareEnv(render_mode="human")


def test_reset_rejects_unknown_options() -> None:
    env = GPUShareEnv({"cluster": "tiny", "num_jobs": 3})
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['job'\]"):
        env.reset(seed=0, options={"job": []})


def test_reset_num_jobs_plays_the_shorter_episode_of_the_seed() -> None:
    long = GPUShareEnv({"cluster": "tiny", "num_jobs": 12})
    short = GPUShareEnv({"cluster": "tiny", "num_jobs": 5})
    _, info = long.reset(seed=3, options={"num_jobs": 5})
    _, expected = short.reset(seed=3)
    assert info["num_jobs"] == expected["num_jobs"] == 5
    assert long.simulator.core.specs == short.simulator.core.specs
    _, info = long.reset(seed=3)  # the option holds for one episode only
    assert info["num_jobs"] == 12
    for bad, message in ((0, ">= 1"), (2.5, "an int"), (True, "an int")):
        with pytest.raises(ValueError, match=message):
            long.reset(seed=0, options={"num_jobs": bad})
    spec = long.simulator.core.specs[0]
    with pytest.raises(ValueError, match="generated workload only"):
        long.reset(seed=0, options={"num_jobs": 2, "jobs": [spec]})


def test_max_suspends_per_job_masks_suspend_after_the_cap() -> None:
    env = gym.make(
        "GPUShare-v0",
        config={
            "cluster": "tiny",
            "num_jobs": 3,
            "max_suspends_per_job": 1,
            "invalid_action": "raise",
            "running_window": 2,
            "pending_window": 2,
        },
    ).unwrapped
    env.reset(seed=0)
    first = env.view.pending(1)[0]
    env.step(env.encode_decision(Schedule(first, "exclusive")))
    suspend = env.encode_decision(Suspend(first))
    assert env.action_masks()[suspend]  # never suspended yet: allowed
    env.step(suspend)
    # run until the job is back in the pending window, then resume and run it again
    while env.view.job(first).status.name != "RUNNING":
        if first in env.view.pending(2):
            env.step(env.encode_decision(Schedule(first, "exclusive")))
        else:
            env.step(env.encode_decision(env.decode_action(env.action_space.n - 1)))
    assert env.view.job(first).suspends == 1
    suspend = env.encode_decision(Suspend(first))
    assert not env.action_masks()[suspend]  # capped
    with pytest.raises(InvalidActionError, match="max_suspends_per_job"):
        env.step(suspend)


def test_max_suspends_per_job_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="max_suspends_per_job"):
        EnvConfig(limits=LimitsConfig(max_suspends_per_job=-1))


# ------------------------------------------------------------------ nested and flat forms
def _nested(key: str, value: object) -> dict[str, object]:
    """``{flat key: value}`` in the nested form (``{"windows": {"pending": value}}``)."""
    group, _, name = FLAT_KEYS[key].partition(".")
    return {group: {name: value}} if name else {group: value}


#: A value other than the default for every flat key (every setting of the nested form).
_NON_DEFAULT: dict[str, object] = {
    "cluster": "tiny",
    "workload": "philly",
    "num_jobs": 7,
    "jobs": (job(0, 0.0, 10), job(1, 5.0, 20, num_gpus=2)),
    "pending_window": 8,
    "running_window": 4,
    "gpu_rows": 12,
    "window_priority": 0.25,
    "reward": {
        "jct": 0.5,
        "makespan": 2.0,
        "utilisation": 0.1,
        "slowdown": 0.2,
        "starvation": 0.3,
        "overhead": 0.4,
        "invalid": 3.0,
        "delay": 0.6,
    },
    "time_scale_s": 60.0,
    "invalid_action": "raise",
    "invalid_penalty": 0.5,
    "duration_info": "oracle",
    "sample_iterations": 5,
    "sample_noise": 0.0,
    "suspend_overhead_s": 62.0,
    "resume_overhead_s": 0.0,
    "mig_operation_s": 0.5,
    "interference": "measured",
    "sharing": "shares",
    "target_workload": "gpu_demand",
    "max_decisions": 500,
    "max_time_s": 100.0,
    "auto_advance": False,
    "on_unfit": "error",
    "strategies": ("pack", "min_frag"),
    "max_suspends_per_job": 5,
    "min_service_s": 60.0,
    "observe_held_time": True,
    "observe_placement": True,
    "observe_drain": True,
    "observe_rivals": True,
    "observe_cluster_summary": True,
}


def test_every_setting_has_one_flat_key_and_the_table_knows_them_all() -> None:
    assert set(_NON_DEFAULT) == set(FLAT_KEYS)
    paths = set(FLAT_KEYS.values()) - {"reward"}
    weights = {f"reward.{name}" for name in RewardConfig().weights_by_name()}
    assert paths | weights == set(EnvConfig.paths())
    assert len(set(FLAT_KEYS.values())) == len(FLAT_KEYS)  # no two keys set one setting


def test_nested_and_flat_forms_give_equal_configs() -> None:
    nested = EnvConfig.from_any({"windows": {"pending": 8}, "observation": {"rivals": True}})
    flat = EnvConfig.from_any({"pending_window": 8, "observe_rivals": True})
    assert nested == flat
    assert (nested.windows.pending, nested.observation.rivals) == (8, True)
    made = gym.make(
        "GPUShare-v0", config={"windows": {"pending": 8}, "observation": {"rivals": True}}
    )
    assert made.unwrapped.config == flat
    # every setting at once, each form
    everything = EnvConfig.from_any(_NON_DEFAULT)
    nested_everything: dict[str, object] = {}
    for key, value in _NON_DEFAULT.items():
        for group, settings in _nested(key, value).items():
            if isinstance(settings, dict) and group not in ("cluster", "workload"):
                nested_everything.setdefault(group, {}).update(settings)
            else:
                nested_everything[group] = settings
    assert EnvConfig.from_any(nested_everything) == everything
    assert everything.as_dict() == nested_everything
    # the groups as instances, and the constructor with dicts
    built = EnvConfig(
        windows=WindowsConfig(pending=8),
        observation={"rivals": True},
    )
    assert built == flat


@pytest.mark.parametrize("key", list(FLAT_KEYS))
def test_flat_nested_flat_round_trip(key: str) -> None:
    value = _NON_DEFAULT[key]
    config = EnvConfig.from_any({key: value})
    assert config != EnvConfig()
    assert config.flat()[key] == value
    assert config.flat() == {**EnvConfig().flat(), key: value}
    assert list(config.flat()) == list(FLAT_KEYS)
    nested = config.as_dict()
    assert EnvConfig.from_any(nested) == config
    assert EnvConfig.from_any(nested).flat() == config.flat()
    assert EnvConfig.from_any(config.flat()) == config
    assert EnvConfig.from_any(config) is config
    assert EnvConfig.from_any(_nested(key, value)) == config
    assert EnvConfig.flatten(_nested(key, value)) == {key: value}


def test_mixing_the_forms_for_one_setting_names_both() -> None:
    with pytest.raises(ValueError, match=r"'pending_window' and 'windows.pending' both set"):
        EnvConfig.from_any({"pending_window": 8, "windows": {"pending": 8}})
    with pytest.raises(ValueError, match=r"'windows.pending' and 'pending_window' both set"):
        EnvConfig.from_any({"windows": {"pending": 8}, "pending_window": 8})
    with pytest.raises(ValueError, match=r"'reward.time_scale_s' and 'time_scale_s'"):
        EnvConfig.from_any({"reward": {"time_scale_s": 60.0}, "time_scale_s": 60.0})
    with pytest.raises(ValueError, match=r"'observation=ObservationConfig\(...\)' and "
                       r"'observe_rivals' both set observation.rivals"):  # fmt: skip
        EnvConfig.from_any({"observation": ObservationConfig(), "observe_rivals": True})
    with pytest.raises(ValueError, match=r"both set limits\.max_decisions"):
        GPUShareEnv(max_decisions=10, limits={"max_decisions": 10})
    # different settings may come in different forms
    mixed = EnvConfig.from_any({"windows": {"pending": 8}, "running_window": 4,
                                "reward": {"makespan": 1.0}, "time_scale_s": 60.0})  # fmt: skip
    assert (mixed.windows.pending, mixed.windows.running) == (8, 4)
    assert (mixed.reward.makespan, mixed.reward.time_scale_s) == (1.0, 60.0)


@pytest.mark.parametrize(
    ("group", "allowed"),
    [
        ("windows", WindowsConfig),
        ("observation", ObservationConfig),
        ("reward", RewardConfig),
        ("limits", LimitsConfig),
        ("simulator", SimulatorConfig),
    ],
)
def test_unknown_nested_key_lists_the_allowed_ones(group: str, allowed: type) -> None:
    with pytest.raises(ValueError, match=rf"EnvConfig\.{group}: unknown key\(s\) \['nope'\]"):
        EnvConfig.from_any({group: {"nope": 1}})
    try:
        gym.make("GPUShare-v0", config={group: {"nope": 1}})
    except ValueError as error:
        assert f"allowed: {sorted(allowed.keys())}" in str(error)
    else:  # pragma: no cover
        pytest.fail("an unknown nested key was accepted")
    with pytest.raises(ValueError, match=r"'pendng' -> did you mean 'pending'\?"):
        EnvConfig.from_any({"windows": {"pendng": 8}})
    with pytest.raises(TypeError, match=rf"EnvConfig\.{group} must be a dict or a "):
        EnvConfig.from_any({group: 8})


def test_unknown_top_level_key_lists_nested_and_flat_keys() -> None:
    with pytest.raises(ValueError, match="unknown key") as error:
        EnvConfig.from_any({"window": {"pending": 8}})
    message = str(error.value)
    for key in (*EnvConfig.keys(), *FLAT_KEYS):
        assert repr(key) in message, key
    assert "did you mean 'windows'" in message


def test_keyword_overrides_take_flat_keys_and_win_setting_by_setting() -> None:
    env = GPUShareEnv({"windows": {"pending": 8, "running": 2}}, pending_window=4)
    assert (env.config.windows.pending, env.config.windows.running) == (4, 2)
    assert env.pending_window == 4
    base = EnvConfig(cluster="tiny", observation=ObservationConfig(held_time=True))
    env = GPUShareEnv(base, observe_rivals=True, time_scale_s=60.0)
    assert env.config.observation == ObservationConfig(held_time=True, rivals=True)
    assert env.config.reward.time_scale_s == 60.0 and env.config.cluster == "tiny"
    assert EnvConfig.from_any(base, windows={"running": 3}).windows == WindowsConfig(16, 3)


def test_the_simulator_group_accepts_what_the_simulator_accepts() -> None:
    """Its ranges are ``SimConfig``'s (reused, not copied): each value is accepted by one
    exactly when by the other."""
    from gpushare_env.sim import SimConfig

    for name, values in {
        "sample_noise": [-0.1, 0.0, 0.5, 0.999, 1.0, float("nan")],
        "sample_iterations": [-1, 0, 3],
        "duration_info": ["none", "sampled", "oracle", "exact"],
    }.items():
        for value in values:
            try:
                SimConfig(**{name: value})
            except ValueError:
                with pytest.raises(ValueError, match=f"EnvConfig.simulator.{name} must be"):
                    SimulatorConfig(**{name: value})
            else:
                assert getattr(SimulatorConfig(**{name: value}).sim_config(), name) == value
    with pytest.raises(ValueError, match="sample_iterations must be an int"):
        SimulatorConfig(sample_iterations=2.5)  # SimConfig itself would take it


def test_every_shipped_zoo_config_builds() -> None:
    """Every env config recorded beside a shipped agent (flat keys) builds, round-trips,
    and gives the observation and action spaces the agent was trained on."""
    import json
    import zipfile

    from stable_baselines3.common.save_util import json_to_data

    from agents import ZOO_DIR

    records = sorted(ZOO_DIR.glob("*.json"))
    assert records
    for path in records:
        record = json.loads(path.read_text(encoding="utf-8"))
        configs = [record["env_config"]]
        configs += [entry["env_config"] for entry in record.get("recorded_evaluation", [])]
        for recorded in configs:
            config = EnvConfig.from_any(recorded)
            assert EnvConfig.from_any(config.flat()) == config
            assert EnvConfig.from_any(config.as_dict()) == config
            assert {k: v for k, v in config.flat().items() if k in recorded} == recorded
            for key, value in recorded.items():  # each flat key reached its nested setting
                group, _, name = FLAT_KEYS[key].partition(".")
                setting = getattr(config, group)
                assert (getattr(setting, name) if name else setting) == value, key
        with zipfile.ZipFile(path.with_suffix(".zip")) as archive:
            saved = json_to_data(archive.read("data").decode("utf-8"))
        env = GPUShareEnv(record["env_config"])
        assert env.observation_space == saved["observation_space"], path.name
        assert env.action_space == saved["action_space"], path.name


def test_config_table_lists_every_setting_with_its_flat_key() -> None:
    from gpushare_env.envs.spec import CONFIG_DOCS, config_rows, env_spec_markdown

    rows = config_rows()
    assert [row[0] for row in rows] == list(EnvConfig.paths()) == list(CONFIG_DOCS)
    table = env_spec_markdown()
    assert "| `windows.pending` | `pending_window` | `16` |" in table
    assert "| `reward.makespan` | `reward` (`makespan`) | `0.0` |" in table
    for key in FLAT_KEYS:
        assert f"| `{key}`" in table, key
