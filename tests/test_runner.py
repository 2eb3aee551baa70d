"""The headless runner: whole workloads to completion, deterministic per seed."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.fifo_pack import FifoPack
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, Windows, make_cluster
from gpushare_env.workloads import make_workload


def run(seed: int, workload: str = "thesis", cluster: str = "thesis"):
    c = make_cluster(cluster)
    jobs = make_workload(workload, np.random.default_rng(seed), num_jobs=40)
    return run_headless(jobs, c, FifoPack(), SimConfig(), rng=np.random.default_rng(seed))


def test_same_seed_identical_records_different_seed_differs():
    a, b, c = run(0), run(0), run(1)
    assert a.records == b.records
    assert a.metrics == pytest.approx(b.metrics, nan_ok=True)
    assert a.records != c.records


def test_all_jobs_finish_and_metrics_are_consistent():
    result = run(3, "philly", "medium")
    assert len(result.records) == 40
    m = result.metrics
    assert m["num_jobs"] == 40
    assert 0.0 < m["gpu_util"] <= m["gpu_alloc"] <= 1.0
    assert m["makespan_s"] >= max(r.jct_s for r in result.records) - 1e-6
    assert result.events >= 2 * 40  # an arrival and a completion per job at least


def test_runner_stops_a_suspend_resume_ping_pong():
    class Stubborn(FifoPack):
        name = "stubborn"

        def decide(self, view):
            from gpushare_env.sim import Suspend

            running = view.running(1)
            if running:
                return Suspend(running[0])
            return super().decide(view)

    # Every running job is suspended at once and resumed as soon as it waits: time runs
    # (checkpoints and restarts take seconds) but no job ever finishes. (Without the
    # suspension budget: under the default one, the 4th suspension of a job would raise.)
    c = make_cluster("tiny")
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=3, cluster_gpus=4)
    with pytest.raises(RuntimeError, match="livelock"):
        run_headless(jobs, c, Stubborn(), SimConfig(max_suspends_per_job=None), max_events=200)


def test_max_decisions_truncates_and_on_decision_sees_every_decision():
    c = make_cluster("thesis")
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=40)
    seen: list[float] = []

    def count(sim):
        seen.append(sim.now_s)

    full = run_headless(jobs, c, FifoPack(), SimConfig(), rng=np.random.default_rng(0))
    assert not full.truncated
    assert full.steps >= full.decisions  # ADVANCE counts as a step, not as a decision
    capped = run_headless(
        jobs,
        c,
        FifoPack(),
        SimConfig(),
        rng=np.random.default_rng(0),
        max_decisions=full.steps - 1,  # the last decision is the one that finishes the run
        on_decision=count,
    )
    assert capped.truncated and capped.truncated_by == "decisions"
    assert full.truncated_by is None
    assert capped.steps == full.steps - 1
    assert len(seen) == full.steps - 1  # once per decision, ADVANCE included
    assert seen == sorted(seen)
    assert len(capped.records) < len(jobs)
    # A cap the run never reaches changes nothing.
    seen.clear()
    roomy = run_headless(
        jobs,
        c,
        FifoPack(),
        SimConfig(),
        rng=np.random.default_rng(0),
        max_decisions=full.steps,
        on_decision=count,
    )
    assert not roomy.truncated
    assert roomy.records == full.records
    assert roomy.steps == full.steps == len(seen)


def test_max_time_s_truncates_as_the_envs_time_cap_does():
    c = make_cluster("thesis")
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=40)
    full = run_headless(jobs, c, FifoPack(), SimConfig(), rng=np.random.default_rng(0))
    last_finish = max(r.finish_s for r in full.records)
    cap_s = last_finish / 2
    seen: list[float] = []
    capped = run_headless(
        jobs,
        c,
        FifoPack(),
        SimConfig(),
        rng=np.random.default_rng(0),
        max_time_s=cap_s,
        on_decision=lambda sim: seen.append(sim.now_s),
    )
    assert capped.truncated and capped.truncated_by == "time"
    assert seen[-1] >= cap_s > seen[-2]  # stopped at the first decision past the cap
    assert 0 < len(capped.records) < len(jobs)
    assert all(r.finish_s <= seen[-1] for r in capped.records)
    # a cap the run never reaches changes nothing
    roomy = run_headless(
        jobs, c, FifoPack(), SimConfig(), rng=np.random.default_rng(0), max_time_s=2 * last_finish
    )
    assert roomy.truncated_by is None and roomy.records == full.records


def test_windows_bound_what_the_policy_sees_and_decisions_per_instant_are_capped():
    class Recording(FifoPack):
        def decide(self, view):
            self.seen.append((len(self.visible_pending(view)), len(self.visible_running(view))))
            return super().decide(view)

    c = make_cluster("tiny")
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=12, cluster_gpus=4)
    policy = Recording()
    policy.seen = []
    run_headless(jobs, c, policy, windows=Windows(pending=3, running=2))
    assert max(p for p, _ in policy.seen) == 3 and max(r for _, r in policy.seen) == 2
    policy.seen = []
    run_headless(jobs, c, policy)  # unbounded: a longer queue is seen whole
    assert max(p for p, _ in policy.seen) > 3

    # The first placement is already one decision too many at t=0 for a cap of 0.
    with pytest.raises(RuntimeError, match="without letting time run"):
        run_headless(jobs, c, FifoPack(), max_decisions_per_instant=0)
