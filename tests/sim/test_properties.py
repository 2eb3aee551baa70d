"""Property tests over random workloads and random valid decision sequences."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpushare_env.sim import (
    MODELS,
    STRATEGIES,
    ClusterConfig,
    JobSpec,
    JobStatus,
    Simulator,
    make_cluster,
)

MODEL_NAMES = ("resnet50", "vgg16", "inception_v3", "googlenet")


@st.composite
def workloads(draw, max_jobs: int = 10, max_gpus: int = 4):
    n = draw(st.integers(1, max_jobs))
    jobs = []
    t = 0.0
    for i in range(n):
        t += draw(st.sampled_from([0.0, 0.5, 3.0, 40.0]))
        model = MODELS[draw(st.sampled_from(MODEL_NAMES))]
        jobs.append(
            JobSpec(
                job_id=i,
                arrival_s=t,
                model=model.name,
                batch_size=model.batch_size,
                num_gpus=draw(st.sampled_from([g for g in (1, 2, 4) if g <= max_gpus])),
                iterations=draw(st.integers(1, 600)),
                memory_gib=model.memory_gib,
                intensity=model.intensity,
                iter_time_s=model.iter_time_s,
            )
        )
    return jobs


def random_run(sim: Simulator, rng: np.random.Generator, suspend_prob: float) -> list[float]:
    """Drive ``sim`` with random valid decisions; return the times seen at each step."""
    times = [sim.now_s]
    suspends_left = 3 * len(sim.jobs)  # bounded, so the run terminates
    for _ in range(20_000):
        if sim.done:
            break
        options: list[tuple[str, int, str]] = []
        for job_id in sim.pending():
            for strategy in STRATEGIES:
                if sim.find_placement(job_id, strategy) is not None:
                    options.append(("place", job_id, strategy))
        if suspends_left > 0 and rng.random() < suspend_prob:
            options += [("suspend", j, "") for j in sim.running() if sim.can_suspend(j)]
        if sim.next_event_time() is not None:
            options.append(("advance", -1, ""))
        assert options, "no valid decision: the simulator is stuck"
        kind, job_id, strategy = options[int(rng.integers(len(options)))]
        if kind == "place":
            sim.schedule(job_id, strategy)
        elif kind == "suspend":
            sim.suspend(job_id)
            suspends_left -= 1
        else:
            sim.advance()
        sim.check_invariants()
        assert sim.now_s >= times[-1], "time went back"
        times.append(sim.now_s)
    return times


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workloads(), seed=st.integers(0, 2**16), suspend_prob=st.sampled_from([0.0, 0.3]))
def test_random_valid_decisions_keep_invariants(jobs, seed, suspend_prob):
    sim = Simulator(jobs, make_cluster("tiny2"), rng=np.random.default_rng(seed))
    random_run(sim, np.random.default_rng(seed), suspend_prob)
    # every job finished exactly once, with all of its iterations done
    assert sim.done
    ids = [r.job_id for r in sim.records()]
    assert sorted(ids) == sorted(j.job_id for j in jobs)
    for job in sim.jobs.values():
        assert job.status == JobStatus.FINISHED
        assert job.progress == 1.0 and job.iterations_done == job.spec.iterations
    for record in sim.records():
        assert record.arrival_s <= record.first_start_s <= record.finish_s
        # a job can never beat its solo time on V100s (speed factor <= 1)
        assert record.jct_s >= record.solo_duration_s * (1 - 1e-9)
        assert record.suspends == record.resumes


def greedy_until_done(sim: Simulator, strategy: str) -> None:
    """A work-conserving policy: place every waiting job that fits, then advance."""
    while not sim.done:
        for job_id in sim.pending():
            if sim.find_placement(job_id, strategy) is not None:
                sim.schedule(job_id, strategy)
        sim.check_invariants()
        sim.advance()


@settings(max_examples=40, deadline=None)
@given(jobs=workloads(max_jobs=12), strategy=st.sampled_from(STRATEGIES))
def test_work_conserving_policy_finishes_every_job(jobs, strategy):
    sim = Simulator(jobs, make_cluster("tiny2"))
    greedy_until_done(sim, strategy)
    assert sorted(r.job_id for r in sim.records()) == sorted(j.job_id for j in jobs)


@settings(max_examples=40, deadline=None)
@given(jobs=workloads(max_jobs=12))
def test_big_enough_cluster_nobody_waits(jobs):
    # One idle GPU per worker of every job, all in one node: no job ever queues.
    total = sum(j.num_gpus for j in jobs)
    cluster = make_cluster(ClusterConfig.from_any({"nodes": 1, "gpus_per_node": total}))
    sim = Simulator(jobs, cluster)
    greedy_until_done(sim, "exclusive")
    for record in sim.records():
        assert record.queueing_delay_s == 0.0
        assert record.queued_s == 0.0
        # alone in one node: exactly the solo duration
        assert abs(record.jct_s - record.solo_duration_s) <= 1e-6 * record.solo_duration_s


@settings(max_examples=30, deadline=None)
@given(jobs=workloads(max_jobs=8), seed=st.integers(0, 1000))
def test_same_decisions_same_records(jobs, seed):
    def once():
        sim = Simulator(jobs, make_cluster("tiny2"), rng=np.random.default_rng(seed))
        random_run(sim, np.random.default_rng(seed), 0.2)
        return sim.records()

    assert once() == once()
