"""Fuzzing the configurations: one setting of a valid config replaced by a value of any type.

Each config is either accepted, and then runs (an episode ends, a workload generates or
names the job and field it cannot hold), or refused with ``ValueError`` / ``TypeError``
naming the setting.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpushare_env.envs import GPUShareEnv
from gpushare_env.envs.config import EnvConfig
from gpushare_env.sim import ClusterConfig, SimConfig, Simulator, make_cluster
from gpushare_env.workloads import WorkloadConfig
from tests.fuzz.strategies import FUZZ, any_value
from tests.jobs import job

#: numpy overflow or an invalid value is a limit missing somewhere: fail on it
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

_BASE_ENV: dict[str, Any] = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 4}


def _nested(path: str, value: Any) -> dict[str, Any]:
    group, _, name = path.partition(".")
    return {group: {name: value}} if name else {group: value}


def _play(env: GPUShareEnv, max_steps: int = 400) -> None:
    """Play the first valid action until the episode ends; check it ends as documented."""
    _, info = env.reset(seed=0)
    terminated = truncated = False
    steps = 0
    while not (terminated or truncated) and steps < max_steps:
        valid = np.flatnonzero(info["action_mask"])
        action = int(valid[0]) if valid.size else 0
        *_, terminated, truncated, info = env.step(action)
        steps += 1
    if terminated:
        assert info["jobs_done"] == info["metrics"]["num_jobs"]
    elif truncated:
        assert info["truncated_by"] in ("decisions", "time", "deadlock")
    env.simulator.check_invariants()


@FUZZ
@given(path=st.sampled_from(EnvConfig.paths()), value=any_value())
def test_an_env_config_is_accepted_and_runs_or_names_the_setting(path: str, value: Any) -> None:
    spec = {**_BASE_ENV, **_nested(path, value)}
    try:
        config = EnvConfig.from_any(spec)
    except (ValueError, TypeError) as error:
        name = path.rpartition(".")[2]
        assert name in str(error), (path, value, str(error))
        assert str(error).startswith("EnvConfig"), str(error)
        return
    if config.num_jobs is not None and config.num_jobs > 20:
        return  # accepted; a long episode is not this test's business
    env = GPUShareEnv(config)
    try:
        _play(env)
    except ValueError as error:  # e.g. jobs of 8 GPUs on a 4-GPU cluster, all dropped
        assert "no job of the workload fits" in str(error), str(error)


_GROUP = {"nodes": 1, "gpus_per_node": 4, "gpu_type": "v100"}
_CLUSTER_KEYS = ("nodes", "gpus_per_node", "gpu_type", "memory_gib", "max_jobs_per_gpu", "name")


@FUZZ
@given(
    key=st.sampled_from([*_CLUSTER_KEYS, "groups", "bogus"]),
    value=any_value() | st.integers(-3, 70_000),
    grouped=st.booleans(),
    drop=st.booleans(),
)
def test_a_cluster_dict_is_accepted_or_names_the_key(
    key: str, value: Any, grouped: bool, drop: bool
) -> None:
    group: dict[str, Any] = dict(_GROUP)
    top: dict[str, Any] = {}
    target = group if key in _GROUP or key == "memory_gib" else top
    target[key] = value
    if drop and key in group:
        del group[key]  # a missing key
    spec = {"groups": [group], **top} if grouped else {**group, **top}
    if key == "groups":
        spec = {"groups": value}
    try:
        config = ClusterConfig.from_any(spec)
    except (ValueError, TypeError) as error:
        assert key in str(error) and str(error).startswith("cluster"), (spec, str(error))
        return
    cluster = make_cluster(config)
    assert 1 <= cluster.num_gpus <= 65_536
    if cluster.num_gpus <= 256:
        small = job(0, 0.0, 10, memory_gib=min(4.0, float(cluster.gpu_memory_gib.min())))
        sim = Simulator([small], cluster)
        sim.advance()
        sim.schedule(0, "pack")
        while not sim.done:
            sim.advance()
        sim.check_invariants()


_WORKLOAD_FIELDS = tuple(f for f in WorkloadConfig.fields() if f not in ("path", "kind"))


@FUZZ
@given(
    kind=st.sampled_from(["thesis", "philly"]),
    field=st.sampled_from(_WORKLOAD_FIELDS),
    value=any_value() | st.floats(1e-9, 1e9),
)
def test_a_workload_dict_is_accepted_and_generates_or_names_the_field(
    kind: str, field: str, value: Any
) -> None:
    try:
        config = WorkloadConfig.from_any({"kind": kind, field: value})
    except (ValueError, TypeError) as error:
        assert f"workload.{field}" in str(error), str(error)
        return
    try:
        jobs = config.generate(np.random.default_rng(0), num_jobs=5, cluster_gpus=16)
    except ValueError as error:
        # a combination beyond the limits (5 gaps of 1e9 s): the job and field are named
        assert re.match(r"job \d+: \w+ must be", str(error)) or "max_gpus" in str(error), str(error)
        return
    assert len(jobs) == 5


@FUZZ
@given(field=st.sampled_from([f.name for f in dataclasses.fields(SimConfig)]), value=any_value())
def test_a_sim_config_is_accepted_or_names_the_field(field: str, value: Any) -> None:
    try:
        config = SimConfig(**{field: value})
    except ValueError as error:
        assert str(error).startswith(f"SimConfig.{field} must be"), str(error)
        return
    sim = Simulator([job(0, 0.0, 30), job(1, 1.0, 30)], make_cluster("tiny"), config)
    while not sim.done:
        for job_id in sim.pending():
            if sim.find_placement(job_id, "pack") is not None:
                sim.schedule(job_id, "pack")
        sim.advance()
    sim.check_invariants()
    assert len(sim.records()) == 2


def test_numpy_scalars_are_taken_as_the_numbers_they_hold() -> None:
    config = EnvConfig.from_any(
        {
            "num_jobs": np.int64(300),
            "windows": {"pending": np.int32(8)},
            "reward": {"jct": np.float32(0.5)},
            "observation": {"drain": np.True_},
        }
    )
    assert (config.num_jobs, config.windows.pending) == (300, 8)
    assert type(config.num_jobs) is int and type(config.reward.jct) is float
    assert config.observation.drain is True
    assert ClusterConfig.from_any({"nodes": np.int64(2), "gpus_per_node": 4}).groups[0].nodes == 2
    with pytest.raises(ValueError, match=r"EnvConfig\.num_jobs must be None or an int"):
        EnvConfig.from_any({"num_jobs": True})  # bool is no int here
