"""Hand-computed scenarios: every number below is worked out in the comments.

Figures used (gpushare_env.sim.catalog): ResNet-50 0.158 s/iteration, 8 GiB, u = 1.0,
suspend 3 s, resume 20 s, cross-node factor 0.8; GoogLeNet 0.065 s/iteration, 1.8 GiB,
u = 0.6; V100 16 GiB, speed 1.0; eff(4) = 0.95; alpha = 0.05.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpushare_env.sim import (
    ClusterConfig,
    EventKind,
    InvalidDecision,
    JobSpec,
    JobStatus,
    NoInterference,
    SimConfig,
    Simulator,
    make_cluster,
)


def resnet(job_id: int, arrival_s: float = 0.0, gpus: int = 1, iterations: int = 1000) -> JobSpec:
    return JobSpec(job_id, arrival_s, "resnet50", 64, gpus, iterations, 8.0, 1.0, 0.158)


def googlenet(job_id: int, arrival_s: float = 0.0, iterations: int = 1000) -> JobSpec:
    return JobSpec(job_id, arrival_s, "googlenet", 64, 1, iterations, 1.8, 0.6, 0.065)


def run_until_done(sim: Simulator) -> None:
    while not sim.done:
        sim.advance()
        sim.check_invariants()


def finish_times(sim: Simulator) -> dict[int, float]:
    return {r.job_id: r.finish_s for r in sim.records()}


def test_one_job_alone():
    # 1000 iterations x 0.158 s = 158 s on one idle V100.
    sim = Simulator([resnet(0)], make_cluster("tiny"))
    assert [e.kind for e in sim.advance()] == [EventKind.ARRIVAL]
    sim.place(0, [2])
    run_until_done(sim)
    (record,) = sim.records()
    assert record.finish_s == pytest.approx(158.0, rel=1e-12)
    assert record.jct_s == pytest.approx(158.0, rel=1e-12)
    assert record.slowdown == pytest.approx(1.0, rel=1e-12)
    assert record.gpu_seconds == pytest.approx(158.0, rel=1e-12)
    assert record.queueing_delay_s == 0.0


def test_two_resnets_share_one_gpu_each_at_0_475():
    # U = 2, k = 2: each worker runs at min(1, 1/2) * (1 - 0.05) = 0.475 of solo speed,
    # so 1000 iterations take 158 / 0.475 = 332.6315789... s for both.
    sim = Simulator([resnet(0), resnet(1)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    assert sim.jobs[0].speed == pytest.approx(0.475)
    run_until_done(sim)
    assert finish_times(sim) == pytest.approx({0: 158 / 0.475, 1: 158 / 0.475}, rel=1e-12)


def test_staggered_sharing_rescheduled_completions():
    # Job 0 runs alone 0-50 s (50 s of its 158 s of solo work). Job 1 joins at 50 s: both
    # run at 0.475, so job 0's remaining 108 solo-seconds take 108 / 0.475 = 227.368 s and it
    # finishes at 277.368 s. Job 1 has then done 227.368 * 0.475 = 108 solo-seconds and its
    # remaining 50 s run alone: it finishes at 327.368 s.
    sim = Simulator([resnet(0), resnet(1, arrival_s=50.0)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [1])
    while sim.now_s < 50.0:
        sim.advance()
    sim.place(1, [1])
    run_until_done(sim)
    a = 50 + 108 / 0.475
    assert finish_times(sim) == pytest.approx({0: a, 1: a + 50}, rel=1e-12)


def test_job_spanning_two_nodes_pays_cross_node_factor():
    # Two nodes x 2 V100. A 4-worker ResNet-50 job: one step takes 0.158 / eff(4) =
    # 0.158 / 0.95 s alone in one node; across nodes its speed is x 0.8, so 1000 steps take
    # 1000 * 0.158 / 0.95 / 0.8 = 207.894736... s.
    sim = Simulator([resnet(0, gpus=4)], make_cluster("tiny2"))
    sim.advance()
    sim.place(0, [0, 1, 2, 3])
    run_until_done(sim)
    assert finish_times(sim)[0] == pytest.approx(1000 * 0.158 / 0.95 / 0.8, rel=1e-12)
    assert sim.records()[0].solo_duration_s == pytest.approx(1000 * 0.158 / 0.95, rel=1e-12)


def test_suspend_then_resume_elsewhere_with_both_overheads():
    # Job 0 (ResNet-50, 158 s of work) runs on GPU 0 from 0 s. At 100 s (job 1 arrives) it is
    # suspended: it holds GPU 0 for the 3 s checkpoint (no progress) and waits from 103 s.
    # Resumed at once on GPU 1 (a migration) it restarts for 20 s (123 s), then runs its
    # remaining 58 s: finish at 181 s. Overheads: (3 + 20) s x 1 GPU = 23 GPU-s; GPU time
    # held: 0-103 and 103-181 = 181 GPU-s. Job 1 (GoogLeNet, 1000 x 0.065 = 65 s) starts on
    # GPU 0 at 100 s beside the checkpointing job 0, which computes nothing: finish 165 s.
    sim = Simulator([resnet(0), googlenet(1, arrival_s=100.0)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [0])
    while sim.now_s < 100.0:
        sim.advance()
    sim.suspend(0)
    assert sim.jobs[0].status == JobStatus.SUSPENDING
    sim.place(1, [0])
    # job 1 is sampled at 100 + 20 x 0.065 = 101.3 s, then job 0's checkpoint ends at 103 s
    assert [e.kind for e in sim.advance()] == [EventKind.SAMPLED]
    assert sim.now_s == pytest.approx(101.3)
    events = sim.advance()
    assert events[0].kind == EventKind.SUSPEND_DONE and sim.now_s == pytest.approx(103.0)
    assert sim.jobs[0].status == JobStatus.SUSPENDED
    assert sim.pending() == [0]
    sim.place(0, [1])
    assert sim.jobs[0].status == JobStatus.RESUMING
    run_until_done(sim)
    assert finish_times(sim) == pytest.approx({0: 181.0, 1: 165.0}, rel=1e-12)
    record = next(r for r in sim.records() if r.job_id == 0)
    assert (record.suspends, record.resumes, record.migrations) == (1, 1, 1)
    assert record.overhead_gpu_seconds == pytest.approx(23.0)
    assert record.gpu_seconds == pytest.approx(181.0)


def test_resume_on_same_gpu_is_not_a_migration():
    # Same as above but resumed on GPU 0 again: 100 + 3 + 20 + 58 = 181 s, no migration.
    sim = Simulator([resnet(0), googlenet(1, arrival_s=100.0)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [0])
    while sim.now_s < 100.0:
        sim.advance()
    sim.suspend(0)
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [2])
    run_until_done(sim)
    record = next(r for r in sim.records() if r.job_id == 0)
    assert record.finish_s == pytest.approx(181.0)
    assert (record.suspends, record.resumes, record.migrations) == (1, 1, 0)


def test_memory_full_gpu_refuses_a_third_job():
    # Two 8 GiB ResNet-50 workers fill a 16 GiB V100: a 1.8 GiB GoogLeNet worker is refused.
    sim = Simulator([resnet(0), resnet(1), googlenet(2)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [3])
    sim.place(1, [3])
    with pytest.raises(InvalidDecision, match=r"job 2: GPU 3 has 0.00 GiB free.*memory"):
        sim.place(2, [3])
    assert sim.find_placement(2, "pack") != (3,)
    sim.place(2, [1])  # another GPU still takes it


def test_worker_slot_limit_refuses():
    cluster = make_cluster(
        ClusterConfig.from_any({"nodes": 1, "gpus_per_node": 1, "max_jobs_per_gpu": 2})
    )
    sim = Simulator([googlenet(0), googlenet(1), googlenet(2)], cluster)
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    with pytest.raises(InvalidDecision, match="max_jobs_per_gpu"):
        sim.place(2, [0])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.place(0, [0, 1]), "needs 1 GPU"),
        (lambda s: s.place(0, [9]), "does not exist"),
        (lambda s: s.suspend(0), "only a running job"),
        (lambda s: s.place(42, [0]), "no such job"),
    ],
)
def test_invalid_decisions_name_job_and_reason(call, message):
    sim = Simulator([resnet(0)], make_cluster("tiny"))
    sim.advance()
    with pytest.raises(InvalidDecision, match=message):
        call(sim)


def test_sampling_reveals_the_measured_iteration_time():
    # sample_iterations = 20: the step time becomes visible after 20 x 0.158 = 3.16 s.
    # The measured value is 0.158 * (1 + eps), eps the job's draw from N(0, 0.05) of the
    # generator passed in (one draw per job in id order).
    eps = np.random.default_rng(7).normal(0.0, 0.05, size=1)[0]
    sim = Simulator([resnet(0)], make_cluster("tiny"), rng=np.random.default_rng(7))
    sim.advance()
    sim.place(0, [0])
    assert sim.predicted_remaining_s(0) is None
    assert sim.measured_step_time_s(0) is None
    events = sim.advance()
    assert [e.kind for e in events] == [EventKind.SAMPLED]
    assert sim.now_s == pytest.approx(3.16, rel=1e-12)
    assert sim.measured_step_time_s(0) == pytest.approx(0.158 * (1 + eps), rel=1e-12)
    # remaining 980 iterations at the measured step time
    assert sim.predicted_remaining_s(0) == pytest.approx(980 * 0.158 * (1 + eps), rel=1e-9)


@pytest.mark.parametrize(("info", "expected"), [("oracle", 158.0), ("none", None)])
def test_duration_info_modes(info, expected):
    sim = Simulator([resnet(0)], make_cluster("tiny"), SimConfig(duration_info=info))
    sim.advance()
    assert sim.predicted_remaining_s(0) == (pytest.approx(expected) if expected else None)


def test_no_interference_toy_model_shares_for_free():
    # With NoInterference two ResNet-50 workers on one GPU each take 158 s.
    sim = Simulator([resnet(0), resnet(1)], make_cluster("tiny"), interference=NoInterference())
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    run_until_done(sim)
    assert finish_times(sim) == pytest.approx({0: 158.0, 1: 158.0})


def test_timeline_utilisation_of_two_shared_jobs():
    # Two ResNet-50 on GPU 0 of 4 for 332.63 s: compute in use min(1, 2) = 1 GPU of 4.
    sim = Simulator([resnet(0), resnet(1)], make_cluster("tiny"))
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    run_until_done(sim)
    timeline = sim.timeline()
    busy = timeline.compute_in_use[timeline.durations_s > 0]
    assert np.allclose(busy, 1.0)
    assert timeline.end_s == pytest.approx(158 / 0.475)


def test_bad_configs_are_rejected_with_the_field_named():
    with pytest.raises(ValueError, match="duration_info"):
        SimConfig(duration_info="psychic")
    with pytest.raises(ValueError, match=r"unknown keys.*allowed"):
        ClusterConfig.from_any({"nodes": 1, "gpus_per_nod": 4})
    with pytest.raises(ValueError, match="unknown preset"):
        ClusterConfig.from_any("huge")
    with pytest.raises(ValueError, match=r"job 0 can never fit .*num_gpus 8 > the cluster's 4"):
        Simulator([resnet(0, gpus=8)], make_cluster("tiny"))
    with pytest.raises(ValueError, match="duplicate"):
        Simulator([resnet(0), resnet(0)], make_cluster("tiny"))
    with pytest.raises(ValueError, match=r"iterations must be >= 1 and <= 2\*\*53"):
        resnet(0, iterations=0)
