"""Each baseline on a toy workload whose schedule is worked out by hand in the comments.

Conventions that make the arithmetic exact: a job's ``iter_time_s`` is set to its
scaling efficiency ``eff(n)`` (1.0 for one GPU, 0.95 for four), so one synchronous step
takes exactly 1 s alone and ``iterations`` is the job's solo length in seconds; the
interference model is ``NoInterference`` unless sharing speeds matter; suspend and resume
overheads are fixed by ``SimConfig`` (2 s and 5 s); sampling noise is 0. V100 GPUs have
16 GiB.
"""

from __future__ import annotations

import math

import pytest

import baselines
from gpushare_env.runner import run_headless
from gpushare_env.sim import (
    ADVANCE,
    JobSpec,
    NoInterference,
    Schedule,
    SimConfig,
    Simulator,
    SimView,
    Suspend,
    apply_decision,
    make_cluster,
)
from gpushare_env.sim.catalog import scaling_efficiency
from tests.jobs import job as make_job

CONFIG = SimConfig(suspend_overhead_s=2.0, resume_overhead_s=5.0, sample_noise=0.0)
ORACLE = SimConfig(
    suspend_overhead_s=2.0, resume_overhead_s=5.0, sample_noise=0.0, duration_info="oracle"
)
ONE_GPU = {"nodes": 1, "gpus_per_node": 1, "gpu_type": "v100"}
TWO_GPUS = {"nodes": 1, "gpus_per_node": 2, "gpu_type": "v100"}
FOUR_GPUS = "tiny"  # 1 node x 4 V100


def job(
    job_id: int,
    arrival_s: float,
    seconds: int,
    gpus: int = 1,
    memory_gib: float = 8.0,
    intensity: float = 1.0,
) -> JobSpec:
    """A ResNet-50-like job of ``seconds`` solo length (1 s per step, see module doc)."""
    return make_job(
        job_id, arrival_s, seconds, num_gpus=gpus, memory_gib=memory_gib,
        intensity=intensity, iter_time_s=scaling_efficiency(gpus),
    )  # fmt: skip


def run(
    name: str, jobs: list[JobSpec], cluster: object, config: SimConfig = CONFIG, **params: object
):
    """Run ``jobs`` headless with the named policy; records by job id."""
    result = run_headless(
        jobs, make_cluster(cluster), baselines.make(name, **params), config, NoInterference()
    )
    return {r.job_id: r for r in result.records}


# ------------------------------------------------------------------------ fifo
def test_fifo_blocks_behind_a_large_head_job() -> None:
    # 4 GPUs. J0 (1 GPU, 100 s) starts at 0. J1 (4 GPUs) arrives at 1 and needs all four:
    # it heads the queue until J0 ends at 100, then runs 100-200. J2 (1 GPU, 10 s) arrives
    # at 2; three GPUs are idle but it may not pass J1: it starts at 200, ends at 210.
    jobs = [job(0, 0, 100), job(1, 1, 100, gpus=4), job(2, 2, 10)]
    records = run("fifo", jobs, FOUR_GPUS)
    assert [records[i].first_start_s for i in range(3)] == [0.0, 100.0, 200.0]
    assert records[2].finish_s == pytest.approx(210.0)
    # the same workload under fifo_pack: J2 backfills at once (ends at 12)
    packed = run("fifo_pack", jobs, FOUR_GPUS)
    assert packed[2].first_start_s == 2.0
    assert packed[2].finish_s == pytest.approx(12.0)


# ------------------------------------------------------------------- fifo_pack
def test_fifo_pack_backfills_onto_fragments() -> None:
    # 4 GPUs of 16 GiB. J0 (4 GPUs x 8 GiB, 100 s) leaves 8 GiB free on every GPU.
    # J1 (1 x 8 GiB) at t=1 fits a fragment: pack puts it on a GPU J0 uses, it starts at 1.
    # J2 (4 x 8 GiB) at t=2 now fits only on three GPUs: it waits until J0 ends at 100.
    # J3 (1 x 4 GiB, 10 s) at t=3 passes J2 onto a fragment (backfill): starts at 3.
    # Without interference J1 ends at 101 and J2 runs 100-200 on J0's GPUs.
    jobs = [
        job(0, 0, 100, gpus=4),
        job(1, 1, 100),
        job(2, 2, 100, gpus=4),
        job(3, 3, 10, memory_gib=4.0),
    ]
    records = run("fifo_pack", jobs, FOUR_GPUS)
    assert records[1].first_start_s == 1.0
    assert records[3].first_start_s == 3.0
    assert records[3].finish_s == pytest.approx(13.0)
    assert records[2].first_start_s == 100.0
    assert records[2].finish_s == pytest.approx(200.0)
    # fifo on the same workload: J1 waits for J0 (runs 100-200), J2 needs four idle GPUs
    # so it waits for J1 (200-300), and J3 may not pass it (300-310)
    fifo = run("fifo", jobs, FOUR_GPUS)
    assert [fifo[i].first_start_s for i in range(4)] == [0.0, 100.0, 200.0, 300.0]


# -------------------------------------------------------------------- sjf_pack
def test_sjf_pack_orders_by_predicted_time_with_oracle_lengths() -> None:
    # One 16 GiB GPU and 16 GiB jobs: one job at a time. J0 (50 s) starts at 0; J1 (300 s),
    # J2 (100 s), J3 (200 s) arrive at 1, 2, 3. Shortest first: J2 50-150, J3 150-350,
    # J1 350-650. fifo_pack serves them by arrival instead: J1 50-350, J2, J3.
    jobs = [
        job(0, 0, 50, memory_gib=16.0),
        job(1, 1, 300, memory_gib=16.0),
        job(2, 2, 100, memory_gib=16.0),
        job(3, 3, 200, memory_gib=16.0),
    ]
    records = run("sjf_pack", jobs, ONE_GPU, ORACLE)
    assert [records[i].finish_s for i in range(4)] == pytest.approx([50, 650, 150, 350])
    fifo = run("fifo_pack", jobs, ONE_GPU, ORACLE)
    assert [fifo[i].finish_s for i in range(4)] == pytest.approx([50, 350, 450, 650])


def test_sjf_pack_sample_mode_samples_every_job_then_orders_by_prediction() -> None:
    # sample_iterations = 10 (10 s per sampling run), suspend 2 s, resume 5 s, no noise.
    # J0 (50 s) starts at 0, is sampled at 10 and suspended (waits from 12, 40 s left).
    # J1, J2, J3 (300, 100, 200 s) arrived at 1-3 and each gets a sampling run in arrival
    # order: J1 12-22 (+2 s suspend), J2 24-34, J3 36-46, all suspended by 48.
    # Then shortest predicted first, each resume paying 5 s: J0 48 + 5 + 40 = 93;
    # J2 93 + 5 + 90 = 188; J3 188 + 5 + 190 = 383; J1 383 + 5 + 290 = 678.
    config = SimConfig(
        suspend_overhead_s=2.0, resume_overhead_s=5.0, sample_noise=0.0, sample_iterations=10
    )
    jobs = [
        job(0, 0, 50, memory_gib=16.0),
        job(1, 1, 300, memory_gib=16.0),
        job(2, 2, 100, memory_gib=16.0),
        job(3, 3, 200, memory_gib=16.0),
    ]
    records = run("sjf_pack", jobs, ONE_GPU, config, unsampled="sample")
    assert [records[i].first_start_s for i in range(4)] == [0.0, 12.0, 24.0, 36.0]
    assert [records[i].finish_s for i in range(4)] == pytest.approx([93, 678, 188, 383])
    assert all(records[i].suspends == 1 for i in range(4))


# tiresias: its hand-made schedules are in test_tiresias.py


# ---------------------------------------------------------------------- thesis
def test_thesis_opens_a_gang_for_a_starved_large_job_and_resumes_the_small_ones() -> None:
    # 4 GPUs of 16 GiB, 16 GiB workers (no sharing), oracle lengths (no sampling).
    # Four 1-GPU jobs S0-S3 (1000 s) start at 0-3 and fill the cluster. L (4 GPUs, 600 s)
    # arrives at 4. SRPT alone would not preempt (S's ~1000 s < 2 x 600 s), but L is wide
    # and starving once it has waited 1 x its 600 s. The next event is X's arrival at 650
    # (1 GPU, 10 s): L has waited 646 s, so S0-S3 are suspended (650-652) and L starts at
    # 652 on the opened gang, ending at 1252. Then X (10 s) and the S jobs resume, shortest
    # first: X 1252-1262 (first start), S jobs (about 350 s left, + 5 s restart) on the
    # remaining three GPUs at 1252 and the fourth at 1262.
    jobs = [job(i, float(i), 1000, memory_gib=16.0) for i in range(4)]
    jobs += [job(4, 4, 600, gpus=4, memory_gib=16.0), job(5, 650, 10, memory_gib=16.0)]
    records = run(
        "thesis",
        jobs,
        FOUR_GPUS,
        ORACLE,
        starvation_factor=1.0,
        min_starvation_s=0.0,
        critical_path_factor=math.inf,
    )
    assert [records[i].suspends for i in range(4)] == [1, 1, 1, 1]
    assert records[4].first_start_s == pytest.approx(652.0)
    assert records[4].finish_s == pytest.approx(1252.0)
    assert records[5].first_start_s == pytest.approx(1252.0)
    # small jobs resume after L: 3 at 1252, the last when X ends at 1262
    resumed = sorted(records[i].finish_s - (1000 - (650 - i)) - 5 for i in range(4))
    assert resumed == pytest.approx([1252.0, 1252.0, 1252.0, 1262.0])
    # without the starvation rule L waits for the small jobs. X (10 s) still preempts by
    # SRPT the small job with most time left, S3 (353 s left at 650): S3 checkpoints
    # 650-652, X runs 652-662, S3 resumes 662 + 5 s and ends at 1020, and only then are
    # four GPUs idle for L: 1020-1620.
    plain = run(
        "thesis",
        jobs,
        FOUR_GPUS,
        ORACLE,
        starvation_factor=math.inf,
        critical_path_factor=math.inf,
    )
    assert [plain[i].suspends for i in range(4)] == [0, 0, 0, 1]
    assert plain[5].first_start_s == pytest.approx(652.0)
    assert plain[3].finish_s == pytest.approx(1020.0)
    assert plain[4].first_start_s == pytest.approx(1020.0)


def test_thesis_ranks_a_job_suspended_twice_by_its_current_prediction() -> None:
    # One 16 GiB GPU, 16 GiB jobs (no sharing), oracle lengths, the decisions before the
    # last one taken by hand. A (1000 s) runs from 0; B (400 s) arrives at 100, when A is
    # suspended (100-102) with 900 s left: thesis would serve B first (400 s < 900 s + 5 s
    # restart). A resumes instead (102-107, running from 107) and is suspended again when
    # C (10,000 s) arrives at 700 (700-702), with 900 - 593 = 307 s left: now A comes
    # first (307 s + 5 s < 400 s). The prediction read must be the current one, not the
    # one of A's first suspension.
    jobs = [
        job(0, 0, 1000, memory_gib=16.0),
        job(1, 100, 400, memory_gib=16.0),
        job(2, 700, 10_000, memory_gib=16.0),
    ]
    sim = Simulator(jobs, make_cluster(ONE_GPU), ORACLE, NoInterference())
    view: SimView = sim
    policy = baselines.make("thesis", critical_path_factor=math.inf)
    policy.reset(view)
    sim.advance()  # A arrives
    sim.place(0, [0])
    while view.now_s < 100.0:
        sim.advance()  # A's sampling mark at 20 s, then B arrives
    sim.suspend(0)
    sim.advance()  # A checkpointed
    assert view.now_s == pytest.approx(102.0)
    assert view.job(0).predicted_remaining_s == pytest.approx(900.0)
    decision = policy.decide(view)
    assert isinstance(decision, Schedule) and decision.job_id == 1
    sim.place(0, [0])  # A resumes instead
    while view.now_s < 700.0:
        sim.advance()  # A restarted, then C arrives
    sim.suspend(0)
    sim.advance()  # A checkpointed a second time
    assert view.now_s == pytest.approx(702.0)
    assert view.job(0).predicted_remaining_s == pytest.approx(307.0)
    decision = policy.decide(view)
    assert isinstance(decision, Schedule) and decision.job_id == 0


# -------------------------------------------------------------------- min_frag
def test_min_frag_picks_the_placement_that_leaves_least_fragmentation() -> None:
    # Two 16 GiB GPUs. J0, J1 (4 GiB) sit on GPU 0 (8 GiB free), J2 (4 GiB) on GPU 1
    # (12 GiB free). J3 (6 GiB) must go to one of them. The workload's worker memories
    # (the FGD reference) are 4, 4, 4, 6 and four of 1 GiB (J4-J7, arriving later).
    # GPU 0 after J3: 2 GiB free, unusable by the 4 jobs of 4-6 GiB: fragment 2 x 4/8 = 1.
    # GPU 1 after J3: 6 GiB free, usable by every worker: fragment 0. Both are 0 before.
    # min_frag picks GPU 1; best fit (pack) picks GPU 0 (2 GiB left < 6 GiB).
    jobs = [job(i, 0, 100, memory_gib=4.0) for i in range(3)]
    jobs.append(job(3, 0, 100, memory_gib=6.0))
    jobs += [job(4 + i, 1000, 10, memory_gib=1.0) for i in range(4)]
    chosen = {}
    for name in ("min_frag", "fifo_pack"):
        sim = Simulator(jobs, make_cluster(TWO_GPUS), CONFIG, NoInterference())
        view: SimView = sim
        sim.advance()  # the arrivals at t=0
        sim.place(0, [0])
        sim.place(1, [0])
        sim.place(2, [1])
        policy = baselines.make(name)
        policy.reset(view)
        decision = policy.decide(view)
        assert isinstance(decision, Schedule) and decision.job_id == 3
        apply_decision(sim, decision)
        chosen[name] = view.job(3).gpus
        assert policy.decide(view) == ADVANCE
    assert chosen == {"min_frag": (1,), "fifo_pack": (0,)}


# ---------------------------------------------------------------------- random
def test_random_draws_only_valid_decisions_and_is_reproducible() -> None:
    # Two 16 GiB GPUs, one 16 GiB job running on GPU 0, two waiting: the only valid
    # schedule decisions put a waiting job on GPU 1 (any strategy would), plus advance.
    jobs = [job(0, 0, 100, memory_gib=16.0), job(1, 0, 50), job(2, 0, 50, gpus=2)]
    draws = []
    for _ in range(2):
        sim = Simulator(jobs, make_cluster(TWO_GPUS), CONFIG, NoInterference())
        view: SimView = sim
        sim.advance()
        sim.place(0, [0])
        policy = baselines.make("random", seed=3, suspend_prob=0.3)
        policy.reset(view)
        seen = []
        for _ in range(30):
            decision = policy.decide(view)
            if isinstance(decision, Schedule):
                assert decision.job_id == 1  # job 2 needs two GPUs: never valid here
            elif isinstance(decision, Suspend):
                assert decision.job_id == 0
            seen.append(decision)
        draws.append(seen)
    assert draws[0] == draws[1]
    assert {type(d).__name__ for d in draws[0]} == {"Schedule", "Suspend", "Advance"}


# --------------------------------------------------------------------- gandiva
def test_gandiva_packs_by_intensity_and_time_slices_same_size_jobs() -> None:
    # Packing, one 16 GiB GPU: J0 (u 0.6) runs from 0; J1 (u 0.4) at 1 joins it (load
    # 1.0 <= 1); J2 (u 0.4) at 2 would make the load 1.4: it waits until J1 ends at 101,
    # then joins J0 (load 1.0).
    jobs = [
        job(0, 0, 300, memory_gib=2.0, intensity=0.6),
        job(1, 1, 100, memory_gib=2.0, intensity=0.4),
        job(2, 2, 100, memory_gib=2.0, intensity=0.4),
    ]
    records = run("gandiva", jobs, ONE_GPU)
    assert [records[i].first_start_s for i in range(3)] == [0.0, 1.0, 101.0]
    # Time-slicing (slice 600 s), one GPU, 16 GiB workers: J0 (2000 s) runs from 0, J1
    # (100 s) waits from 1. At J2's arrival (700) J1 has waited 699 >= 600 and J0 has run
    # 700 >= 600: J0 is suspended (700-702) and J1 takes the GPU: 702-802. At 802 the
    # longest waiting job goes first: J2 (since 700) before J0 (since 702): 802-852. J0
    # resumes at 852, restarts for 5 s and ends at 857 + 1300 = 2157.
    jobs = [job(0, 0, 2000, memory_gib=16.0), job(1, 1, 100, memory_gib=16.0)]
    jobs.append(job(2, 700, 50, memory_gib=16.0))
    records = run("gandiva", jobs, ONE_GPU, time_slice_s=600.0)
    assert records[0].suspends == 1
    assert records[1].first_start_s == pytest.approx(702.0)
    assert records[2].first_start_s == pytest.approx(802.0)
    assert records[0].finish_s == pytest.approx(2157.0)


# ------------------------------------------------------------------ gandiva_srpt
def test_gandiva_srpt_order_serves_and_slices_for_the_shortest_job() -> None:
    # One GPU, oracle lengths, slice 600 s; 16 GiB workers take the whole GPU. J0 (2000 s)
    # runs from 0; J1 (1500 s) waits from 1, J2 (100 s) from 2. At J3's arrival (700) the
    # shortest waiting job, J2, has waited 698 >= 600 and J0 (1300 s left, longer than
    # J2) has run a slice: J0 is suspended (700-702), J2 runs 702-802. At 802 J0 (1300 s
    # left) goes before J1 (1500 s): it restarts for 5 s and ends at 807 + 1300 = 2107
    # (no event falls after a full slice of it); then J1 2107-3607, then J3 (5000 s).
    jobs = [job(0, 0, 2000, memory_gib=16.0), job(1, 1, 1500, memory_gib=16.0)]
    jobs += [job(2, 2, 100, memory_gib=16.0), job(3, 700, 5000, memory_gib=16.0)]
    records = run("gandiva_srpt", jobs, ONE_GPU, ORACLE, time_slice_s=600.0)
    assert [records[i].first_start_s for i in range(4)] == [0.0, 2107.0, 702.0, 3607.0]
    assert records[0].finish_s == pytest.approx(2107.0) and records[0].suspends == 1
    # Gandiva's round robin gives the slice to the longest waiting job, J1
    records = run("gandiva", jobs, ONE_GPU, ORACLE, time_slice_s=600.0)
    assert records[1].first_start_s == pytest.approx(702.0)
    with pytest.raises(ValueError, match="order"):
        baselines.make("gandiva", order="lifo")


# --------------------------------------------------------- gandiva_critical_path
# The tests below that serve every critical job first name scope "all" (the default is
# "started").
def test_gandiva_critical_path_serves_the_longest_job_and_never_slices_it() -> None:
    # One GPU, oracle lengths, slice 600 s, SRPT order. J0 (3000 s) runs from 0, J1
    # (1000 s) waits from 1. At J2's arrival (700, 1200 s) J1 has waited 699 >= 600 and
    # J0 (2300 s left) is longer: plain SRPT slices J0 out. With factor 0.5, the drain
    # time is (2300 + 1000 + 1200) / 1 = 4500 s and J0's 2300 s >= 2250 s puts it on the
    # critical path: it keeps the GPU. At 3000 the drain is 2200 s, so J2 (1200 s >=
    # 1100 s) is critical and goes before the shorter J1: J2 3000-4200, J1 4200-5200.
    jobs = [job(0, 0, 3000, memory_gib=16.0), job(1, 1, 1000, memory_gib=16.0)]
    jobs += [job(2, 700, 1200, memory_gib=16.0)]
    plain = run("gandiva_srpt", jobs, ONE_GPU, ORACLE, time_slice_s=600.0)
    assert plain[0].suspends == 1 and plain[1].first_start_s == pytest.approx(702.0)
    records = run(
        "gandiva_critical_path", jobs, ONE_GPU, ORACLE, time_slice_s=600.0,
        critical_path_factor=0.5, critical_path_scope="all",
    )  # fmt: skip
    assert records[0].suspends == 0 and records[0].finish_s == pytest.approx(3000.0)
    assert [records[i].first_start_s for i in (2, 1)] == [3000.0, 4200.0]
    assert records[1].finish_s == pytest.approx(5200.0)
    # the rule needs SRPT order: plain gandiva refuses it, naming the policy that has it
    with pytest.raises(ValueError, match="order='srpt'"):
        baselines.make("gandiva", critical_path_factor=0.9)
    with pytest.raises(ValueError, match="critical_path_factor must be > 0"):
        baselines.make("gandiva_critical_path", critical_path_factor=0.0)


def test_gandiva_critical_path_scope_started_resumes_critical_jobs_first() -> None:
    # The jobs of the test above. Factor 0.6: at 700 the drain time is 4500 s and J0's
    # 2300 s < 2700 s, so SRPT slices J0 out for J1 (suspended 700-702, J1 702-1702). At
    # 1702 the drain is 2300 + 1200 = 3500 s and suspended J0 (2300 s >= 2100 s) is
    # critical: it resumes before the shorter J2, restarts for 5 s and ends at 1707 + 2300
    # = 4007; J2 4007-5207. Plain SRPT serves J2 first (1702-2902), J0 ends at 5207.
    jobs = [job(0, 0, 3000, memory_gib=16.0), job(1, 1, 1000, memory_gib=16.0)]
    jobs += [job(2, 700, 1200, memory_gib=16.0)]
    srpt = {"time_slice_s": 600.0}
    plain = run("gandiva_srpt", jobs, ONE_GPU, ORACLE, **srpt)
    assert plain[2].first_start_s == pytest.approx(1702.0)
    assert plain[0].finish_s == pytest.approx(5207.0)
    started = {"critical_path_factor": 0.6, "critical_path_scope": "started"}
    records = run("gandiva_critical_path", jobs, ONE_GPU, ORACLE, **srpt, **started)
    assert records[0].suspends == 1 and records[1].first_start_s == pytest.approx(702.0)
    assert records[0].finish_s == pytest.approx(4007.0)
    assert records[2].first_start_s == pytest.approx(4007.0)
    # Factor 0.5: J0 is critical while it runs and keeps the GPU (both scopes). At 3000
    # J2 (1200 s >= 1100 s) is critical but never ran, so under "started" it keeps its
    # SRPT place behind J1: J1 3000-4000, J2 4000-5200 (under "all", J2 goes first).
    started["critical_path_factor"] = 0.5
    records = run("gandiva_critical_path", jobs, ONE_GPU, ORACLE, **srpt, **started)
    assert records[0].suspends == 0 and records[0].finish_s == pytest.approx(3000.0)
    assert [records[i].first_start_s for i in (1, 2)] == [3000.0, 4000.0]
    # "started" is the default scope
    default_scope = {"critical_path_factor": 0.5}
    assert run("gandiva_critical_path", jobs, ONE_GPU, ORACLE, **srpt, **default_scope) == records
    with pytest.raises(ValueError, match="critical_path_scope must be 'all' or 'started'"):
        baselines.make("gandiva_critical_path", critical_path_factor=1.0, critical_path_scope="x")


def test_gandiva_critical_path_protect_keeps_others_off_a_critical_job() -> None:
    # One GPU, oracle lengths, SRPT, factor 0.5, max_load 1.25; 8 GiB workers of
    # intensity 0.5, so two fit on the GPU (load 1.0). J0 (3000 s) runs from 0; J1
    # (1000 s) arrives at 1. The drain time is then 2999 + 1000 s and J0's 2999 s >=
    # 0.5 x 3999 s makes it critical. Without protection J1 shares the GPU at 1 (no
    # interference here, so it ends at 1001). With it, J1 may not join J0's GPU, nor slice
    # J0 out (critical): it waits for J0's end at 3000 and runs 3000-4000.
    jobs = [job(0, 0, 3000, intensity=0.5), job(1, 1, 1000, intensity=0.5)]
    rule = {
        "time_slice_s": 600.0, "max_load": 1.25, "critical_path_factor": 0.5,
        "critical_path_scope": "all",
    }  # fmt: skip
    shared = run("gandiva_critical_path", jobs, ONE_GPU, ORACLE, **rule)
    assert shared[1].first_start_s == pytest.approx(1.0)
    protected = run(
        "gandiva_critical_path", jobs, ONE_GPU, ORACLE, **rule, critical_path_protect=True
    )
    assert protected[0].finish_s == pytest.approx(3000.0) and protected[0].suspends == 0
    assert protected[1].first_start_s == pytest.approx(3000.0)
    assert protected[1].finish_s == pytest.approx(4000.0)
    with pytest.raises(ValueError, match="critical_path_protect needs a critical_path_factor"):
        baselines.make(
            "gandiva_critical_path", critical_path_factor=math.inf, critical_path_protect=True
        )


def test_gandiva_critical_path_consolidate_gathers_a_critical_job_on_one_node() -> None:
    # 2 nodes x 2 GPUs, oracle lengths, SRPT, factor 0.5. At 0: J0 (100 s) on GPU 0, J1
    # (10000 s) on GPU 1, J2 (500 s) on GPU 2. J3 (2 GPUs, 3000 s, critical) arrives at 1
    # and gets GPUs 0 and 3 when J0 ends at 100: across nodes, at 0.8 of its speed.
    # Gandiva's migration (step 1) needs a node with two idle GPUs, which never comes while
    # J1 runs: J3 ends at 100 + 3000 / 0.8 = 3850, and J4 (arrives 200) takes GPU 2 at
    # 500. With consolidation, node 1 frees up first (J2 ends at 500, J1 at 10000), so
    # GPU 2 is kept for J3: at 500 J3 checkpoints (2 s, 400 x 0.8 = 320 s done), J4 may
    # not take GPU 2 meanwhile, and at 502 J3 resumes on GPUs 2-3 (5 s restart): it ends
    # at 507 + 2680 = 3187. J4 runs on GPU 0 from 502.
    two_nodes = {"nodes": 2, "gpus_per_node": 2, "gpu_type": "v100"}
    jobs = [job(0, 0, 100), job(1, 0, 10000), job(2, 0, 500), job(3, 1, 3000, gpus=2)]
    jobs += [job(4, 200, 300)]
    rule = {"time_slice_s": 600.0, "critical_path_factor": 0.5, "critical_path_scope": "all"}
    plain = run("gandiva_critical_path", jobs, two_nodes, ORACLE, **rule)
    assert plain[3].migrations == 0 and plain[3].finish_s == pytest.approx(3850.0)
    assert plain[4].first_start_s == pytest.approx(500.0)
    gathered = run(
        "gandiva_critical_path", jobs, two_nodes, ORACLE, **rule, critical_path_consolidate=True
    )
    assert gathered[3].migrations == 1 and gathered[3].suspends == 1
    assert gathered[3].finish_s == pytest.approx(3187.0)
    assert gathered[4].first_start_s == pytest.approx(502.0)
    assert gathered[1].suspends == 0  # the node J1 runs on was not the one emptied
    with pytest.raises(ValueError, match="critical_path_consolidate needs a critical_path_factor"):
        baselines.make(
            "gandiva_critical_path", critical_path_factor=math.inf, critical_path_consolidate=True
        )
