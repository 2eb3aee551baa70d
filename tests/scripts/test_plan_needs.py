"""The plan derives each baseline's env settings and refusals from what the policy
declares (``baselines.env_overrides``, ``baselines.needs_sharing``), and a workload's
sharing model from the workload (an openb pod list: shares)."""

from __future__ import annotations

import pytest

from gpushare_env.envs import EnvConfig
from gpushare_env.sim.placement import STRATEGIES
from gpushare_env.workloads.openb import shipped_pod_list_path
from gpushare_eval.plan import PlanError, make_plan

POD_LIST = str(shipped_pod_list_path())


def _plan(policies: list[str], **options: object):
    return make_plan(policies=policies, traces=[POD_LIST], cluster="alibaba_openb", seeds=[0],
                     num_jobs=20, headless=True, **options)  # fmt: skip


def test_a_rule_with_parameters_gets_its_strategy_too():
    plan = _plan(["share_fgd:seed=3", "thesis:max_suspends=1"])
    strategies = {run.policy.label: run.env_config.get("strategies") for run in plan.runs}
    assert strategies == {"share_fgd:seed=3": [*STRATEGIES, "share_fgd"],
                          "thesis:max_suspends=1": None}  # fmt: skip


def test_the_plan_leaves_the_sharing_model_to_the_workload():
    plan = _plan(["fifo_pack"])
    assert "sharing" not in plan.runs[0].env_config  # the pod list brings it
    assert EnvConfig.from_any(plan.runs[0].env_config).simulator.sharing == "shares"
    with pytest.raises(PlanError, match=r"--sweep: .* is an openb pod list"):
        _plan(["fifo_pack"], sweep=["sharing=memory"])
    swept = make_plan(policies=["share_fgd"], workloads=["thesis"], seeds=[0], num_jobs=5,
                      sweep=["sharing=shares"])  # fmt: skip
    assert EnvConfig.from_any(swept.runs[0].env_config).simulator.sharing == "shares"


def test_the_old_name_fgd_plays_min_frag_with_a_note():
    plan = make_plan(policies=["fgd"], workloads=["thesis"], seeds=[0], num_jobs=5)
    assert [(p.label, p.name) for p in plan.policies] == [("fgd", "min_frag")]
    assert any("'fgd' is now named 'min_frag'" in note for note in plan.notes)
