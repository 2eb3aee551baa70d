"""A headless run and an env run of the same heuristic under the same settings agree.

The harness runs heuristics either through ``GPUShare-v0`` or on the simulator directly
(``--headless``). Both take every episode setting from one env config, so no setting can
be honoured by one path only: hypothesis draws configurations (windows and their priority
share, suspension rules, caps, prediction, interference, the sharing model, the placement
strategies, clusters and workloads) and every heuristic must give the same metrics both
ways, to the last digit, or be refused both ways with the same message (a heuristic that
needs a strategy the setting lacks, or another sharing model).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, Windows, make_cluster
from gpushare_env.sim.engine import DURATION_INFO
from gpushare_env.sim.interference import INTERFERENCE_MODELS
from gpushare_env.sim.placement import MIG_RULES, SHARE_RULES, STRATEGIES
from gpushare_env.sim.setting_table import SHARING_MODELS
from gpushare_env.workloads import WorkloadConfig, make_workload
from gpushare_env.workloads.openb import shipped_pod_list_path
from gpushare_eval.runs import execute_run_safely
from gpushare_eval.specs import PolicySpec, RunSpec, WorkloadSpec

POLICIES = [*baselines.available(), *baselines.variants()]

#: The placement strategies of a setting: the default ones (most draws: every heuristic
#: plays), or some of them in any order (a heuristic needing a missing one is refused,
#: ``random`` picks among those given).
memory_strategies = st.one_of(
    st.just(list(STRATEGIES)),
    st.permutations(STRATEGIES),
    st.lists(st.sampled_from(STRATEGIES), min_size=1, max_size=4, unique=True),
)

#: The sharing models of the presets without MIG GPUs (mig: ``mig_configs`` below).
MEMORY_OR_SHARES = tuple(name for name in SHARING_MODELS if name != "mig")

configs = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(["tiny", "tiny2", "thesis", "mixed"]),
        "workload": st.sampled_from(["thesis_poisson", "philly_heavy", "thesis"]),
        "num_jobs": st.integers(4, 60),
        "pending_window": st.integers(1, 12),
        "running_window": st.integers(1, 12),
        "window_priority": st.sampled_from([0.0, 0.25, 0.5, 1.0]),
        "max_suspends_per_job": st.one_of(st.none(), st.integers(0, 4)),
        "min_service_s": st.sampled_from([0.0, 300.0, 3600.0]),
        "duration_info": st.sampled_from(DURATION_INFO),
        "interference": st.sampled_from(INTERFERENCE_MODELS),
        "sharing": st.sampled_from(MEMORY_OR_SHARES),
        "sample_iterations": st.sampled_from([0, 50]),
        "auto_advance": st.booleans(),
        "max_decisions": st.one_of(st.none(), st.integers(5, 60)),
        "strategies": memory_strategies,
    }
)


#: openb's tasks (CPU-only ones among them) on a small cluster of openb's kinds of node,
#: where they queue, or on presets without node limits: every heuristic and FGD's rules,
#: under the shares model.
OPENB_CLUSTER = {
    "groups": [
        {"nodes": 3, "gpus_per_node": 2, "gpu_type": "v100", "model": "T4",
         "cpu_milli": 32_000, "memory_mib": 131_072},
        {"nodes": 1, "gpus_per_node": 8, "gpu_type": "v100", "model": "G2",
         "cpu_milli": 96_000, "memory_mib": 393_216},
    ],
    "max_jobs_per_gpu": 64,
}  # fmt: skip
OPENB_POLICIES = [*POLICIES, *baselines.share_policies()]
#: Under the shares model the strategies may add FGD's rules (in any order among them).
share_strategies = st.tuples(
    memory_strategies, st.lists(st.sampled_from(SHARE_RULES), max_size=3, unique=True)
).flatmap(lambda drawn: st.permutations([*drawn[0], *drawn[1]]))
openb_configs = st.tuples(
    configs,
    st.sampled_from([OPENB_CLUSTER, "tiny2", "thesis"]),
    share_strategies,
    st.sampled_from([None, "shares"]),
).map(
    lambda drawn: {
        **{k: v for k, v in drawn[0].items() if k != "sharing"},
        "cluster": drawn[1],  # tiny2 and thesis: nodes without CPU or memory limits
        "workload": {"path": str(shipped_pod_list_path()), "cut": "random"},
        "strategies": drawn[2],
        # the pod list's own model when not given (``WorkloadConfig.sharing``)
        **({"sharing": drawn[3]} if drawn[3] else {}),
    }
)


#: Philly-style jobs on MIG clusters under the mig model (MIG needs A100s: the presets
#: mig_tiny and miso): every heuristic and MISO's baselines, MIG's rules among the
#: strategies.
MIG_CLUSTERS = ["mig_tiny", "miso"]
mig_strategies = st.tuples(
    memory_strategies, st.lists(st.sampled_from(MIG_RULES), max_size=2, unique=True)
).flatmap(lambda drawn: st.permutations([*drawn[0], *drawn[1]]))
mig_configs = st.tuples(configs, st.sampled_from(MIG_CLUSTERS), mig_strategies).map(
    lambda drawn: {**drawn[0], "cluster": drawn[1], "strategies": drawn[2], "sharing": "mig"}
)
#: (those that re-partition run headless only: the env refuses them, tested below)
MIG_POLICIES = [
    *POLICIES,
    *(name for name in baselines.mig_policies() if not baselines.needs_repartition(name)),
]


def examples(count: int) -> Any:
    """Hypothesis settings of the tests below: ``count`` derandomized examples."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        derandomize=True,
    )


def _row(policy: str, config: dict[str, Any], seed: int, headless: bool) -> dict[str, Any]:
    """The run's ``runs.csv`` row, or ``{"error": message}`` if it was refused."""
    spec = RunSpec(
        index=0,
        policy=PolicySpec(label=policy, name=policy, params={"seed": seed}),
        workload=WorkloadSpec("workload", config["workload"], config["num_jobs"]),
        seed=seed,
        env_config=config,
        headless=headless,
        keep_jobs=False,
    )
    output = execute_run_safely(spec)
    if output.error is not None:
        return {"error": output.error}
    return {k: v for k, v in output.row.items() if k not in ("mode", "wall_s")}


@examples(200)
@given(config=configs, policy=st.sampled_from(POLICIES), seed=st.integers(0, 10_000))
def test_every_heuristic_gives_the_same_metrics_headless_and_in_the_env(
    config: dict[str, Any], policy: str, seed: int
) -> None:
    _assert_same_both_ways(policy, config, seed)


@examples(40)
@given(config=openb_configs, policy=st.sampled_from(OPENB_POLICIES), seed=st.integers(0, 10_000))
def test_openb_tasks_with_and_without_gpus_give_the_same_metrics_headless_and_in_the_env(
    config: dict[str, Any], policy: str, seed: int
) -> None:
    _assert_same_both_ways(policy, config, seed)


@examples(40)
@given(config=mig_configs, policy=st.sampled_from(MIG_POLICIES), seed=st.integers(0, 10_000))
def test_mig_runs_give_the_same_metrics_headless_and_in_the_env(
    config: dict[str, Any], policy: str, seed: int
) -> None:
    _assert_same_both_ways(policy, config, seed)


def test_a_policy_that_repartitions_is_refused_in_the_env_and_runs_headless() -> None:
    config = {"cluster": "mig_tiny", "workload": "philly_heavy", "num_jobs": 12,
              "sharing": "mig", "strategies": ["exclusive", "mig_largest"]}  # fmt: skip
    assert "re-partition action" in _row("mig_static", config, 0, headless=False)["error"]
    row = _row("mig_static", config, 0, headless=True)
    assert (row["status"], row["jobs_total"], row["jobs_unfinished"]) == ("complete", 12, 0)


def test_the_openb_runs_hold_cpu_only_tasks() -> None:
    """The case above exercises jobs without GPUs: random cuts of the pod list hold them;
    they hold no GPU time and, once placed, run at their solo speed."""
    workload = WorkloadConfig.from_any({"path": str(shipped_pod_list_path()), "cut": "random"})
    jobs = workload.generate(np.random.default_rng(0), num_jobs=12)
    assert 0 < sum(job.num_gpus == 0 for job in jobs) < len(jobs)
    config = SimConfig(sharing="shares")
    result = run_headless(jobs, make_cluster(OPENB_CLUSTER), baselines.make("fifo_pack"), config)
    cpu_only = [r for r in result.records if r.num_gpus == 0]
    assert cpu_only and all(r.gpu_seconds == 0.0 for r in cpu_only)
    for r in cpu_only:  # fifo_pack never suspends
        assert r.finish_s - r.first_start_s == pytest.approx(r.solo_duration_s)
    assert {r.job_id for r in result.records} == {job.job_id for job in jobs}


def _assert_same_both_ways(policy: str, config: dict[str, Any], seed: int) -> None:
    in_env = _row(policy, config, seed, headless=False)
    headless = _row(policy, config, seed, headless=True)
    if "error" in in_env or "error" in headless:  # refused: both ways, for the same reason
        assert in_env == headless, f"{policy} under {config}, seed {seed}"
        assert _refused(policy, config), in_env["error"]
        return
    differ = {
        key: (in_env[key], headless.get(key))
        for key in in_env
        if not _same(in_env[key], headless.get(key))
    }
    assert not differ, f"{policy} under {config}, seed {seed}: env vs headless {differ}"


def _refused(policy: str, config: dict[str, Any]) -> bool:
    """Whether the setting lacks what ``policy`` declares it needs (its refusal is
    expected)."""
    strategies = config.get("strategies", STRATEGIES)
    return any(s not in strategies for s in baselines.needs_strategies(policy))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def test_a_priority_share_changes_headless_runs_as_it_changes_env_runs() -> None:
    """The case that once differed: a window of 4 with every slot by least attained
    service; headless honoured only the window's size. Both paths move away from the
    share-0 figure, to the same one."""
    base = {"cluster": "thesis", "workload": "philly_heavy", "num_jobs": 60, "pending_window": 4}
    by_arrival = _row("thesis", base, 0, headless=True)["mean_jct_s"]
    shared = {**base, "window_priority": 1.0}
    env_jct = _row("thesis", shared, 0, headless=False)["mean_jct_s"]
    headless_jct = _row("thesis", shared, 0, headless=True)["mean_jct_s"]
    assert env_jct == headless_jct != by_arrival


def test_a_priority_share_without_a_bounded_window_is_refused() -> None:
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=4, cluster_gpus=4)
    with pytest.raises(ValueError, match="needs a bounded pending window"):
        run_headless(
            jobs, make_cluster("tiny"), baselines.make("fifo"), SimConfig(),
            windows=Windows(pending=None, priority=0.5),
        )  # fmt: skip
