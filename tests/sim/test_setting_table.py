"""Each setting declared once (``gpushare_env.sim.setting_table``), and every config a view
of the declarations: each field of the env's groups, of ``EnvConfig`` and of ``SimConfig``
is one declared setting, and each setting one field (the training's env settings:
``tests/agents/test_train_config.py``)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from gpushare_env.envs.config import _GROUPS, FLAT_KEYS, EnvConfig
from gpushare_env.sim import SimConfig
from gpushare_env.sim.setting_table import (
    _DECLARED,
    SETTINGS,
    env_settings,
    index_settings,
    setting,
    sim_settings,
)
from gpushare_env.sim.settings import Choice, Flag, Given, Int, Real, Setting, declared_fields

#: Every default as it was before the settings were declared in one table (the figures of
#: the README, docs and zoo rest on them): a changed default is a behaviour change
#: (``GPUShare-v1``), never a side effect of an edit to the table.
_DEFAULTS: dict[str, Any] = {
    "cluster": "thesis",
    "workload": "thesis",
    "num_jobs": None,
    "jobs": None,
    "windows.pending": 16,
    "windows.running": 16,
    "windows.gpus": None,
    "windows.priority": 0.0,
    "observation.held_time": False,
    "observation.placement": False,
    "observation.drain": False,
    "observation.rivals": False,
    "observation.cluster_summary": False,
    "reward.jct": 1.0,
    "reward.makespan": 0.0,
    "reward.utilisation": 0.0,
    "reward.slowdown": 0.0,
    "reward.starvation": 0.0,
    "reward.overhead": 0.0,
    "reward.invalid": 1.0,
    "reward.delay": 0.0,
    "reward.time_scale_s": 3600.0,
    "reward.invalid_penalty": 0.1,
    "limits.max_decisions": None,
    "limits.max_time_s": None,
    "limits.max_suspends_per_job": 3,
    "limits.min_service_s": 0.0,
    "simulator.duration_info": "sampled",
    "simulator.sample_iterations": 20,
    "simulator.sample_noise": 0.05,
    "simulator.suspend_overhead_s": None,
    "simulator.resume_overhead_s": None,
    "simulator.mig_operation_s": 0.15,
    "simulator.interference": "analytic",
    "simulator.sharing": "memory",
    "simulator.target_workload": "popular",
    "simulator.cross_node_factor": None,
    "simulator.record_timeline": True,
    "invalid_action": "noop",
    "auto_advance": True,
    "on_unfit": "reject",
    "strategies": ("exclusive", "pack", "spread", "min_frag"),
}


def test_every_setting_is_declared_exactly_once() -> None:
    paths = [entry.path for entry in _DECLARED]
    assert len(paths) == len(set(paths)) == len(SETTINGS)
    assert list(SETTINGS) == paths
    own_keys = [entry.flat for entry in _DECLARED if entry.flat and entry.flat != "reward"]
    assert len(own_keys) == len(set(own_keys))  # no two settings share a key but the weights
    # the index refuses a second declaration, and a flat key given to two groups
    with pytest.raises(ValueError, match=r"'windows\.pending' is declared twice"):
        index_settings((*_DECLARED, setting("windows.pending")))
    twin = dataclasses.replace(setting("limits.max_time_s"), path="limits.max_time2_s")
    with pytest.raises(ValueError, match="flat key 'max_time_s' is given to"):
        index_settings((*_DECLARED, twin))
    loose = dataclasses.replace(setting("limits.max_time_s"), path="limits.other", flat=None)
    with pytest.raises(ValueError, match="exposes it without a flat key"):
        index_settings((*_DECLARED, loose))
    named = dataclasses.replace(setting("limits.max_time_s"), path="limits.other", flat="windows")
    with pytest.raises(ValueError, match="flat key 'windows' is given to"):
        index_settings((*_DECLARED, named))


def test_the_defaults_are_unchanged_in_every_view() -> None:
    assert {path: entry.default for path, entry in SETTINGS.items()} == _DEFAULTS
    config = EnvConfig()
    for entry in env_settings():
        assert config.value(entry.path) == entry.default, entry.path
    for entry in sim_settings():
        assert getattr(SimConfig(), entry.name) == entry.default, entry.name
    assert config.sim_config() == SimConfig()


def _env_fields() -> dict[str, Setting]:
    """``EnvConfig``'s settings by the path their field sits at, each field once."""
    out: dict[str, Setting] = {}
    for f in dataclasses.fields(EnvConfig):
        if f.name in _GROUPS:
            for name, entry in declared_fields(_GROUPS[f.name]):
                out[f"{f.name}.{name}"] = entry
        else:
            out[f.name] = f.metadata["setting"]
    return out


def test_every_config_field_is_one_declared_setting_and_back() -> None:
    # EnvConfig: every field a group or a declared setting, at the path it declares
    by_field = _env_fields()
    for f in dataclasses.fields(EnvConfig):
        assert f.name in _GROUPS or "setting" in f.metadata, f.name
    for key, group in _GROUPS.items():
        assert all("setting" in f.metadata for f in dataclasses.fields(group)), key
    assert {path: entry.path for path, entry in by_field.items()} == {p: p for p in by_field}
    assert list(by_field) == [entry.path for entry in env_settings()] == list(EnvConfig.paths())
    # SimConfig: every field a declared setting of its name, every sim setting a field
    sim_fields = declared_fields(SimConfig)
    assert len(sim_fields) == len(dataclasses.fields(SimConfig))
    assert all(name == entry.name and entry.sim for name, entry in sim_fields)
    assert sorted(entry.path for _, entry in sim_fields) == sorted(
        entry.path for entry in sim_settings()
    )


def test_the_flat_keys_are_made_from_the_declarations() -> None:
    for entry in env_settings():
        target = FLAT_KEYS[str(entry.flat)]
        assert target == (entry.path if entry.flat != "reward" else "reward"), entry.path
    assert set(FLAT_KEYS) == {entry.flat for entry in env_settings()}
    assert not any(entry.flat for entry in SETTINGS.values() if not entry.env)


def _refused(entry: Setting) -> list[Any]:
    """Values ``entry`` refuses, from what it allows."""
    allowed = entry.allowed
    values: list[Any] = ["x", [1], True if not isinstance(allowed, Flag) else 1]
    if not allowed.optional:
        values.append(None)
    if isinstance(allowed, Int):
        values += [allowed.low - 1, 2.0]
        if allowed.high is not None:
            values.append(allowed.high + 1)
    if isinstance(allowed, Real):
        values += [math.nan] + ([math.inf] if allowed.finite else [])
        if allowed.low > -math.inf:
            values.append(allowed.low if allowed.low_open else allowed.low - 1)
        if allowed.high < math.inf:
            values.append(allowed.high if allowed.high_open else allowed.high * 2 + 1)
    if isinstance(allowed, Choice):
        values.append(allowed.options[0].upper())
    return values


@pytest.mark.parametrize(
    "path", [p for p, e in SETTINGS.items() if not isinstance(e.allowed, Given)]
)
def test_every_view_refuses_a_bad_value_naming_its_path_and_range(path: str) -> None:
    """The env (by its path, in both forms) and ``SimConfig`` (by its name) refuse the same
    values with the same allowed range, the one the declaration gives."""
    entry = SETTINGS[path]
    allowed = entry.allowed_text()
    for value in _refused(entry):
        if entry.env:
            group, _, name = path.partition(".")
            owner = f"EnvConfig.{group}" if name else "EnvConfig"
            with pytest.raises(ValueError) as error:
                EnvConfig.from_any({str(entry.flat): value} if entry.flat != "reward" else
                                   {"reward": {entry.name: value}})  # fmt: skip
            assert str(error.value) == f"{owner}.{entry.name} must be {allowed}, got {value!r}"
        if entry.sim:
            with pytest.raises(ValueError) as error:
                SimConfig(**{entry.name: value})
            assert str(error.value) == f"SimConfig.{entry.name} must be {allowed}, got {value!r}"


def test_numpy_scalars_are_stored_plain_in_every_view() -> None:
    config = SimConfig(sample_iterations=np.int32(5), sample_noise=np.float32(0.5),
                       record_timeline=np.False_, max_suspends_per_job=np.int64(2))  # fmt: skip
    assert (config.sample_iterations, config.max_suspends_per_job) == (5, 2)
    assert type(config.sample_iterations) is int and type(config.sample_noise) is float
    assert config.record_timeline is False
    assert SimConfig(sample_noise=-0.0).sample_noise == 0.0  # numpy's normal refuses -0.0
    assert math.copysign(1.0, SimConfig(sample_noise=-0.0).sample_noise) == 1.0
    assert (
        math.copysign(1.0, EnvConfig.from_any({"sample_noise": -0.0}).sim_config().sample_noise)
        == 1.0
    )


def test_the_env_sets_every_simulator_setting_it_exposes() -> None:
    config = EnvConfig.from_any({"max_suspends_per_job": None, "min_service_s": 60,
                                 "interference": "measured", "sample_iterations": 3})  # fmt: skip
    sim = config.sim_config()
    assert (sim.max_suspends_per_job, sim.min_service_s, sim.interference) == (None, 60, "measured")
    assert sim.sample_iterations == 3
    # the two headless-only settings stay at the simulator's defaults
    assert (sim.cross_node_factor, sim.record_timeline) == (None, True)


def test_a_docstring_lists_every_declared_setting() -> None:
    for cls in (*_GROUPS.values(), EnvConfig, SimConfig):
        doc = cls.__doc__ or ""
        assert "Attributes:" in doc, cls.__name__
        for name, entry in declared_fields(cls):
            assert f"        {name}: " in doc, (cls.__name__, name)
            assert f"default ``{entry.default!r}``" in " ".join(doc.split())
