"""``thesis`` under bursty overload with wide jobs: the rules added for real traces.

Hand-made schedules worked out in the comments, with the conventions of
``test_toy_schedules.py``: one synchronous step takes exactly 1 s alone (``iter_time_s``
is the scaling efficiency), so ``iterations`` is a job's solo length in seconds;
``NoInterference``; suspend / resume overheads 2 s / 5 s; oracle lengths (no sampling);
16 GiB workers fill a V100, so no two jobs share a GPU.
"""

from __future__ import annotations

import math

import pytest

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.seeding import episode_streams, trace_generator
from gpushare_env.sim import JobSpec, NoInterference, SimConfig, Windows, make_cluster
from gpushare_env.sim.catalog import scaling_efficiency
from gpushare_env.workloads import make_workload
from gpushare_env.workloads.real_traces import philly_vc_path
from tests.jobs import job as make_job

ORACLE = SimConfig(
    suspend_overhead_s=2.0, resume_overhead_s=5.0, sample_noise=0.0, duration_info="oracle"
)
NO_SUSPENSIONS = SimConfig(
    suspend_overhead_s=2.0,
    resume_overhead_s=5.0,
    sample_noise=0.0,
    duration_info="oracle",
    max_suspends_per_job=0,
)
FOUR_GPUS = "tiny"  # 1 node x 4 V100
#: The starvation rule alone: starving after waiting 1 x the predicted remaining time.
STARVATION_ONLY = {
    "starvation_factor": 1.0,
    "min_starvation_s": 0.0,
    "critical_path_factor": math.inf,
    "preempt_ratio": math.inf,
}


def job(job_id: int, arrival_s: float, seconds: int, gpus: int = 1) -> JobSpec:
    """A 16 GiB ResNet-50-like job of ``seconds`` solo length (1 s per step)."""
    return make_job(
        job_id, arrival_s, seconds, num_gpus=gpus, memory_gib=16.0,
        iter_time_s=scaling_efficiency(gpus),
    )  # fmt: skip


def run(jobs: list[JobSpec], config: SimConfig, **params: object) -> dict[int, object]:
    """Run ``jobs`` on 4 GPUs headless under ``thesis``; records by job id."""
    policy = baselines.make("thesis", **params)
    result = run_headless(jobs, make_cluster(FOUR_GPUS), policy, config, NoInterference())
    assert not result.truncated
    return {r.job_id: r for r in result.records}


def starts(records: dict[int, object], ids: list[int]) -> list[float]:
    return [records[i].first_start_s for i in ids]  # type: ignore[attr-defined]


# ------------------------------------------------------------- starving order
def three_starving_jobs() -> list[JobSpec]:
    """J0 holds all 4 GPUs 0-1000 and may not be suspended (the simulator's rules forbid
    every suspension). Three 4-GPU jobs wait for it: B (400 s, arrives 1), C (800 s,
    arrives 150), A (100 s, arrives 850). At 1000 each has waited at least its length, so
    all three are starving; their response ratios (wait + remaining) / remaining are
    B 1399 / 400 = 3.50, A 250 / 100 = 2.50, C 1650 / 800 = 2.06."""
    lengths = {0: (0, 1000), 1: (1, 400), 2: (150, 800), 3: (850, 100)}  # id: (arrival, s)
    return [job(i, arrival, seconds, gpus=4) for i, (arrival, seconds) in lengths.items()]


def test_the_most_starved_job_goes_first_then_srpt_until_its_slot_frees() -> None:
    # Default (most starved first, one at a time): B starts at 1000 (ratio 3.50) and ends
    # at 1400. Meanwhile A and C are not served as starving: SRPT. At 1400 both starve
    # again and A is the most starved ((550 + 100) / 100 = 6.5 against (1250 + 800) / 800
    # = 2.56): A 1400-1500, C 1500-2300.
    records = run(three_starving_jobs(), NO_SUSPENSIONS, **STARVATION_ONLY)
    assert starts(records, [1, 3, 2]) == pytest.approx([1000.0, 1400.0, 1500.0])


def test_starving_order_longest_serves_the_longest_starving_job_first() -> None:
    # starving_order="longest", max_starving=0 (no cap): C (800 s) 1000-1800,
    # then B (400 s) 1800-2200, then A 2200-2300. Mean JCT of the three: 1766 s against
    # 1400 s above (and 1300 s under SRPT alone, below).
    records = run(
        three_starving_jobs(),
        NO_SUSPENSIONS,
        **STARVATION_ONLY,
        starving_order="longest",
        max_starving=0,
    )
    assert starts(records, [2, 1, 3]) == pytest.approx([1000.0, 1800.0, 2200.0])
    # without the starvation rule SRPT serves them shortest first: A, B, C
    plain = run(
        three_starving_jobs(), NO_SUSPENSIONS, **{**STARVATION_ONLY, "starvation_factor": math.inf}
    )
    assert starts(plain, [3, 1, 2]) == pytest.approx([1000.0, 1100.0, 1500.0])


# ------------------------------------------------------------ one at a time
def two_starving_gangs() -> list[JobSpec]:
    """S0-S3 (1 GPU, 1000 s) fill the 4 GPUs at 0-3. L1 and L2 (2 GPUs, 400 s) arrive at
    4 and 5; at 410, when X (4 GPUs, 5000 s, never starving here) arrives, both have
    waited more than their 400 s: both are starving, L1 a little more (ratio 806 / 400
    against 805 / 400)."""
    small = [job(i, float(i), 1000) for i in range(4)]
    return [*small, job(4, 4, 400, gpus=2), job(5, 5, 400, gpus=2), job(6, 410, 5000, gpus=4)]


def test_one_starving_job_is_served_at_a_time() -> None:
    # At 410 L1 opens a gang: the two small jobs with most time left, S3 and S2, checkpoint
    # 410-412, and L1 runs 412-812, never preempted. L2 is not served as starving while
    # L1 runs (it keeps its SRPT place; SRPT preemption is off here), so S0 and S1 finish
    # undisturbed at 1000 and 1001; L2 starts when L1 frees its two GPUs, at 812.
    records = run(two_starving_gangs(), ORACLE, **STARVATION_ONLY)
    assert starts(records, [4, 5]) == pytest.approx([412.0, 812.0])
    assert [records[i].suspends for i in range(4)] == [0, 0, 1, 1]  # type: ignore[attr-defined]
    assert [records[i].finish_s for i in (0, 1)] == pytest.approx([1000.0, 1001.0])  # type: ignore[attr-defined]
    # max_starving=0 (no cap): L2 opens a second gang at once, suspending
    # S0 and S1 too (412-414): every small job is suspended, L2 runs 414-814.
    uncapped = run(two_starving_gangs(), ORACLE, **STARVATION_ONLY, max_starving=0)
    assert starts(uncapped, [4, 5]) == pytest.approx([412.0, 414.0])
    assert [uncapped[i].suspends for i in range(4)] == [1, 1, 1, 1]  # type: ignore[attr-defined]


# ------------------------------------------------- reservation and backfilling
def blocked_starving_job() -> list[JobSpec]:
    """B (3 GPUs, 500 s) runs from 0. L (2 GPUs, 1000 s) arrives at 1 and starves from
    101 (starvation factor 0.1), but B is no victim for it (wider, and shorter). X (1 GPU,
    1000 s) arrives at 102, when GPU 3 is idle."""
    return [job(0, 0, 500, gpus=3), job(1, 1, 1000, gpus=2), job(2, 102, 1000)]


def test_jobs_the_starving_job_may_suspend_backfill_onto_its_reservation() -> None:
    # L gets a reservation: GPU 3 and one of B's, free at 500 (the shadow time). X would
    # hold GPU 3 until 1102, past the shadow, so EASY backfilling turns it away
    # (backfill_victims=false): GPU 3 idles until 500, when L and X start together.
    rule = {**STARVATION_ONLY, "starvation_factor": 0.1}
    easy = run(blocked_starving_job(), ORACLE, **rule, backfill_victims=False)
    assert starts(easy, [1, 2]) == pytest.approx([500.0, 500.0])
    # By default X may use GPU 3: it is a job L could suspend (narrower, never suspended,
    # and the rules let such a job be suspended). It starts at 102 and L still starts at
    # the shadow time, on three GPUs B frees.
    preemptive = run(blocked_starving_job(), ORACLE, **rule)
    assert starts(preemptive, [1, 2]) == pytest.approx([500.0, 102.0])
    assert preemptive[2].suspends == 0  # type: ignore[attr-defined]
    # reserve="urgent" (critical jobs too) behaves as EASY here: L is urgent and starving
    urgent = run(blocked_starving_job(), ORACLE, **rule, reserve="urgent", backfill_victims=False)
    assert starts(urgent, [1, 2]) == pytest.approx([500.0, 500.0])


def test_the_starvation_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="starving_order"):
        baselines.make("thesis", starving_order="shortest")
    with pytest.raises(ValueError, match="max_starving"):
        baselines.make("thesis", max_starving=-1)
    with pytest.raises(ValueError, match="backfill_victims must be true or false"):
        baselines.make("thesis:backfill_victims=no")  # a string, not a boolean
    with pytest.raises(ValueError, match="reserve"):
        baselines.make("thesis", reserve="critical")


# ------------------------------------------------------------ a real excerpt
PHILLY_VC = philly_vc_path("2869ce")  # shipped with the package


@pytest.mark.slow
def test_on_a_real_overloaded_excerpt_the_starving_jobs_are_not_served_longest_first() -> None:
    # The first 200 jobs of Philly VC 2869ce (8- and 32-GPU jobs in bursts) on 32 V100s,
    # with the env's windows of 16: the queue stays long for weeks, so every wide job
    # passes the starvation threshold. Served longest first and all at once
    # (``before``: starving_order=longest, max_starving=0, reserve=urgent, no backfilling
    # onto the reservation), the starving jobs hold thesis at about 0.57 M s, against
    # fifo_pack's 0.70 M s; one at a time, most starved first (``now``: the defaults), it
    # is about 0.46 M s.
    jobs = make_workload(str(PHILLY_VC), trace_generator(), num_jobs=200, cluster_gpus=32)
    cluster = make_cluster({"nodes": 4, "gpus_per_node": 8, "gpu_type": "v100"})

    def mean_jct(spec: str) -> float:
        _, noise = episode_streams(0)
        result = run_headless(
            jobs, cluster, baselines.make(spec), SimConfig(), rng=noise,
            windows=Windows(16, 16),
        )  # fmt: skip
        assert not result.truncated
        return float(result.metrics["mean_jct_s"])

    packed = mean_jct("fifo_pack")
    before = mean_jct(
        "thesis:starving_order=longest:max_starving=0:reserve=urgent:backfill_victims=false"
    )
    now = mean_jct("thesis")
    assert now < 0.85 * before
    assert now < 0.75 * packed
