"""gpushare-evaluate on an openb pod list: the shares model by itself, and the same
figures through the env and headless."""

from __future__ import annotations

import pytest

from gpushare_env.envs import EnvConfig
from gpushare_env.sim.placement import SHARE_RULES
from gpushare_env.workloads.openb import shipped_pod_list_path
from gpushare_eval.plan import PlanError, make_plan
from gpushare_eval.runs import execute_run
from gpushare_eval.specs import PolicySpec, RunSpec, WorkloadSpec


def test_the_harness_runs_an_openb_pod_list_under_the_shares_model(tmp_path):
    plan = make_plan(
        policies=["fifo_pack"],
        traces=[str(shipped_pod_list_path())],
        cluster="alibaba_openb",
        seeds=[0],
        num_jobs=50,
        headless=True,
    )
    config = EnvConfig.from_any(plan.runs[0].env_config)
    assert config.simulator.sharing == "shares"
    assert any("requested-shares model" in note for note in plan.notes)


#: A small cluster of openb's kinds of node (14 GPUs), where its tasks queue.
SMALL_OPENB = {
    "groups": [
        {"nodes": 3, "gpus_per_node": 2, "gpu_type": "v100", "model": "T4",
         "cpu_milli": 104_000, "memory_mib": 524_288},
        {"nodes": 1, "gpus_per_node": 8, "gpu_type": "v100", "model": "G2",
         "cpu_milli": 96_000, "memory_mib": 393_216},
    ],
    "max_jobs_per_gpu": 64,
}  # fmt: skip


def _run(policy: str, headless: bool) -> dict[str, object]:
    trace = str(shipped_pod_list_path())
    config = {"cluster": SMALL_OPENB, "workload": trace, "num_jobs": 150, "sharing": "shares",
              "pending_window": 32, "running_window": 32}  # fmt: skip
    if policy.startswith("share_"):
        config["strategies"] = ["exclusive", "pack", "spread", "min_frag", policy]
    spec = RunSpec(
        index=0,
        policy=PolicySpec(label=policy, name=policy, params={"seed": 0}),
        workload=WorkloadSpec("openb", trace, 150),
        seed=0,
        env_config=config,
        headless=headless,
        keep_jobs=False,
    )
    output = execute_run(spec)
    assert output.error is None, output.error
    return {k: v for k, v in output.row.items() if k not in ("mode", "wall_s")}


@pytest.mark.parametrize("policy", ["thesis", "min_frag", "gandiva", *SHARE_RULES])
def test_openb_jobs_give_the_same_metrics_headless_and_in_the_env(policy):
    in_env, headless = _run(policy, headless=False), _run(policy, headless=True)
    assert in_env["jobs_total"] == 150 and in_env["status"] == "complete"
    assert float(in_env["mean_queue_s"]) > 0  # the tasks contend: decisions matter
    assert in_env == headless


def test_the_six_rules_schedule_differently_over_time():
    runs = {rule: _run(rule, headless=True) for rule in SHARE_RULES}
    assert len({row["mean_jct_s"] for row in runs.values()}) >= 3  # random, share_fgd, the rest


def test_the_harness_gives_the_rules_their_strategy_and_refuses_the_memory_model():
    plan = make_plan(
        policies=["fifo_pack", "share_all"],
        traces=[str(shipped_pod_list_path())],
        cluster="alibaba_openb",
        seeds=[0],
        num_jobs=50,
        headless=True,
    )
    strategies = {run.policy.label: run.env_config.get("strategies") for run in plan.runs}
    assert strategies["fifo_pack"] is None
    assert strategies["share_fgd"] == ["exclusive", "pack", "spread", "min_frag", "share_fgd"]
    assert len(plan.runs) == 7
    with pytest.raises(PlanError, match="share_packing place requested shares, and workload"):
        make_plan(policies=["share_packing"], workloads=["philly"], seeds=[0], num_jobs=5)
