"""Every baseline acts only through valid decisions, under every suspension rule and env
setting (issue 25).

The simulator's suspension rules (``SimConfig.max_suspends_per_job``, ``min_service_s``;
in the env ``limits``) bind every policy alike: the env masks the suspensions they forbid
and ``Simulator.suspend`` refuses them. A baseline reads them through
``SimView.can_suspend`` and falls back to its next choice, so:

* driven through ``GPUShare-v0`` with ``invalid_action="raise"`` (any masked action would
  raise), every baseline and variant terminates every episode, with budgets 0 and 1, a
  minimum service of 600 s, windows of 2 waiting / 1 running job, ``auto_advance`` off
  and on every cluster preset, on several seeds;
* headless, under the same rules, no baseline raises and every job finishes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, make_cluster
from gpushare_env.sim.cluster import PRESETS
from gpushare_env.workloads import fit_to_cluster, make_workload

#: Every baseline and variant, the variant with every rule on, and the settings that
#: suspend most: random suspending at one decision in five, thesis suspending every job
#: after its sampling run.
POLICIES = [
    *baselines.available(),
    *baselines.variants(),
    "gandiva_critical_path:critical_path_protect=true:critical_path_consolidate=true",
    "random:suspend_prob=0.2",
    "thesis:sample_then_suspend=always",
]

#: Policies that suspend jobs on a contended cluster when the rules let them.
PREEMPTIVE = set(POLICIES) - {"fifo", "fifo_pack", "min_frag", "random"}

#: Philly-style sizes and lengths (scaled to minutes) offered at twice the cluster's
#: capacity: queues form and the preemptive policies want to suspend.
WORKLOAD = {"preset": "philly", "load": 2.0, "duration_scale": 1.0 / 60.0}
NUM_JOBS = 40
SEEDS = (0, 1)

#: Env settings (on the ``thesis`` cluster unless they name one): the suspension rules
#: (budgets 0 and 1, a 600 s minimum service, both), windows that bind hard, decisions at
#: every event (``auto_advance`` off), and every cluster preset under a budget of 1.
SETTINGS: dict[str, dict[str, Any]] = {
    "budget_0": {"limits": {"max_suspends_per_job": 0}},
    "budget_1": {"limits": {"max_suspends_per_job": 1}},
    "min_service_600": {"limits": {"max_suspends_per_job": None, "min_service_s": 600.0}},
    "budget_1_min_service_600": {"limits": {"max_suspends_per_job": 1, "min_service_s": 600.0}},
    "windows_2_1": {
        "windows": {"pending": 2, "running": 1},
        "limits": {"max_suspends_per_job": 1, "min_service_s": 600.0},
    },
    "no_auto_advance": {"auto_advance": False, "limits": {"min_service_s": 600.0}},
    **{
        f"cluster_{name}": {"cluster": name, "limits": {"max_suspends_per_job": 1}}
        for name in PRESETS
    },
}


@pytest.fixture(scope="module")
def gym():
    gymnasium = pytest.importorskip("gymnasium")
    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    return gymnasium


def _suspensions_allowed(setting: dict[str, Any]) -> bool:
    return setting.get("limits", {}).get("max_suspends_per_job", 3) != 0


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", POLICIES)
def test_every_baseline_takes_only_valid_actions_under_every_env_setting(
    gym, name: str, setting: str
) -> None:
    spec = SETTINGS[setting]
    config = {
        "cluster": "thesis",
        "workload": WORKLOAD,
        "num_jobs": NUM_JOBS,
        "invalid_action": "raise",  # a masked action raises InvalidActionError
        **spec,
    }
    env = gym.make("GPUShare-v0", config=config)
    policy = baselines.make(name, env)
    budget = env.unwrapped.config.limits.max_suspends_per_job
    suspends = 0
    for seed in SEEDS:
        obs, info = env.reset(seed=seed)
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            action, _ = policy.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
        assert terminated and not truncated, f"{name} / {setting} / seed {seed}: {info}"
        assert info["invalid"] is False
        records = env.unwrapped.simulator.records()
        assert len(records) == info["metrics"]["num_jobs"] > 0
        if budget is not None:
            assert max(r.suspends for r in records) <= budget
        suspends += sum(r.suspends for r in records)
    env.close()
    if not _suspensions_allowed(spec):
        assert suspends == 0
    elif name in PREEMPTIVE and setting in ("budget_1", "min_service_600"):
        # the rules leave room: the policy still suspends (the test is not vacuous)
        assert suspends > 0, f"{name} never suspended under {setting}"


@pytest.fixture(scope="module")
def jobs_60() -> list:
    jobs = make_workload(WORKLOAD, np.random.default_rng(3), num_jobs=60, cluster_gpus=16)
    cluster = make_cluster("thesis")
    return fit_to_cluster(jobs, cluster.num_gpus, float(cluster.gpu_memory_gib.max())).jobs


@pytest.mark.parametrize(
    "rules",
    [
        {"max_suspends_per_job": 0},
        {"max_suspends_per_job": 1},
        {"max_suspends_per_job": 1, "min_service_s": 600.0},
        {"max_suspends_per_job": None, "min_service_s": 600.0},
    ],
    ids=["budget_0", "budget_1", "budget_1_min_service_600", "min_service_600"],
)
@pytest.mark.parametrize("name", POLICIES)
def test_no_baseline_raises_headless_under_the_suspension_rules(
    jobs_60: list, name: str, rules: dict[str, Any]
) -> None:
    # Simulator.suspend raises InvalidDecision for a suspension the rules forbid
    result = run_headless(
        jobs_60,
        make_cluster("thesis"),
        baselines.make(name),
        SimConfig(**rules),
        rng=np.random.default_rng(3),
    )
    assert len(result.records) == len(jobs_60)
    budget = rules["max_suspends_per_job"]
    if budget is not None:
        assert max(r.suspends for r in result.records) <= budget
