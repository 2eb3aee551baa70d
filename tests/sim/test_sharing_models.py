"""A sharing model is one class (``gpushare_env.sim.sharing``) and one dispatch entry in
the compiled core: the registry, each model's columns, and the places that branch on it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gpushare_env.sim  # noqa: F401 - the simulator first: it loads the compiled core
from gpushare_env.compiled._core import C_ENUMS
from gpushare_env.sim.cluster import make_cluster
from gpushare_env.sim.setting_table import SHARING_MODELS as SETTING_NAMES
from gpushare_env.sim.sharing import (
    SHARING_MODELS,
    MemorySharing,
    RequestedShares,
    SharingModel,
    sharing_model,
)
from gpushare_env.sim.types import GPU_MILLI, JobSpec, Request

ROOT = Path(__file__).resolve().parents[2]
#: The most places in the package's code that may branch on the sharing model: 12 for
#: two models; the third (mig) brought its dispatch entries (fit's part beyond capacity,
#: occupy and release, the unfit text, the mask's search across nodes): 13 today, each
#: listed in docs/design/layout.md.
MAX_BRANCHES = 13
#: A condition on the model: a comparison with one model's code or name, or a read of a
#: property a model class sets (in a condition). Comparing a policy's needs with the
#: configured model (``sharing != needed``) names no model: a new model adds no branch.
_BRANCH = re.compile(
    r"[!=]=\s*(\"shares\"|\"memory\"|SHARING_[A-Z]+\b)"
    r"|\b(if|elif|and|or|not)\b.*\b(gpus|sim_in|model|sharing|self)\."
    r"(one_node_gangs|node_limits|share_rules|mig_rules|free_capacity_fits)\b"
)


def _job(job_id: int, num_gpus: int = 1, request: Request | None = None) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        arrival_s=0.0,
        model="resnet50",
        batch_size=32,
        num_gpus=num_gpus,
        iterations=100,
        memory_gib=6.0,
        intensity=0.7,
        iter_time_s=0.1,
        request=request,
    )


def test_registry_is_the_settings_choices_and_the_cores_codes() -> None:
    assert tuple(SHARING_MODELS) == SETTING_NAMES
    assert {name: m.code for name, m in SHARING_MODELS.items()} == C_ENUMS["SHARING"]
    for name, model in SHARING_MODELS.items():
        assert isinstance(model, SharingModel) and model.name == name
        assert sharing_model(name) is model


def test_unknown_model_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"sharing: unknown sharing model 'mps'.*memory"):
        sharing_model("mps")


def test_memory_columns_hold_memory_and_no_node_demand() -> None:
    jobs = [_job(1), _job(2, num_gpus=2)]
    columns = MemorySharing().demand_columns(jobs, ("V100",))
    assert columns.demand == (6.0, 6.0) and columns.intensity == (0.7, 0.7)
    assert columns.cpu_milli == (0.0, 0.0) and columns.model_mask == (-1, -1)
    assert columns.kinds == ()


def test_shares_columns_hold_the_request() -> None:
    request = Request(cpu_milli=4000, gpu_milli=250, host_memory_mib=1024, gpu_models=("T4",))
    jobs = [_job(1, request=request), _job(2)]  # no request: a whole GPU
    columns = RequestedShares().demand_columns(jobs, ("T4", "V100"))
    assert columns.demand == (250.0, float(GPU_MILLI))
    assert columns.intensity == (0.25, 1.0)
    assert columns.cpu_milli == (4000.0, 0.0) and columns.host_memory_mib == (1024.0, 0.0)
    assert columns.model_mask == (0b01, -1)
    assert columns.kinds == ((4000, 250, 1, ("T4",)), (0, 1000, 1, ()))


def test_capacity_and_unfit_reason_follow_the_model() -> None:
    cluster = make_cluster({"nodes": 2, "gpus_per_node": 4, "gpu_type": "v100"})
    memory_desc = np.sort(cluster.gpu_memory_gib)[::-1]
    np.testing.assert_array_equal(MemorySharing().gpu_capacity(cluster), cluster.gpu_memory_gib)
    assert set(RequestedShares().gpu_capacity(cluster)) == {float(GPU_MILLI)}
    gang = _job(1, num_gpus=6)  # two nodes of 4: memory spans them, shares may not
    assert MemorySharing().unfit_reason(gang, cluster, memory_desc) is None
    reason = RequestedShares().unfit_reason(gang, cluster, memory_desc)
    assert reason is not None and reason[0] == "too_many_gpus"


def test_few_places_branch_on_the_sharing_model() -> None:
    """The core's four dispatches (fit, occupy/release, encode, the unfit message) and a
    handful of one-node-gang and rule checks; a new model adds a class, not branches."""
    places = []
    for package in ("gpushare_env", "baselines", "agents", "gpushare_eval"):
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in (".py", ".pyx", ".pxi"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if _BRANCH.search(code):
                    places.append(f"{path.relative_to(ROOT)}:{number}: {code.strip()}")
    assert places, "the pattern finds the core's dispatches"
    assert len(places) <= MAX_BRANCHES, "\n".join(places)
