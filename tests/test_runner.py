"""The headless runner: whole workloads to completion, deterministic per seed."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.fifo_pack import FifoPack
from gpushare_env.runner import run_headless
from gpushare_env.sim import SimConfig, make_cluster
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
    # (checkpoints and restarts take seconds) but no job ever finishes.
    c = make_cluster("tiny")
    jobs = make_workload("thesis", np.random.default_rng(0), num_jobs=3, cluster_gpus=4)
    with pytest.raises(RuntimeError, match="livelock"):
        run_headless(jobs, c, Stubborn(), max_events=200)
