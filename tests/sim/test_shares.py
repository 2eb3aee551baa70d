"""The requested-shares model (``SimConfig.sharing = "shares"``): one fit rule in the core.

Figures (gpushare_env.sim.catalog): ResNet-50 0.158 s/iteration, 8 GiB, u = 1.0; V100
16 GiB; alpha = 0.05 (LinearContention's default).
"""

from __future__ import annotations

import pytest

from gpushare_env.sim import (
    ClusterConfig,
    InvalidDecision,
    JobSpec,
    NodeGroup,
    NoInterference,
    SimConfig,
    Simulator,
    make_cluster,
)
from gpushare_env.sim.types import Request

SHARES = SimConfig(sharing="shares")


def resnet(job_id: int, request: Request | None, gpus: int = 1, arrival_s: float = 0.0) -> JobSpec:
    return JobSpec(job_id, arrival_s, "resnet50", 64, gpus, 1000, 8.0, 1.0, 0.158, request)


def run_until_done(sim: Simulator) -> None:
    while not sim.done:
        sim.advance()
        sim.check_invariants()


def test_shares_on_one_gpu_stay_at_or_below_one_gpu():
    jobs = [resnet(i, Request(gpu_milli=400)) for i in range(3)]
    sim = Simulator(jobs, make_cluster("tiny"), SHARES)
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])  # 800 of 1000
    with pytest.raises(InvalidDecision, match="200 milli-GPU free, a worker needs 400 milli-GPU"):
        sim.place(2, [0])
    assert sim.find_placement(2, "pack") == (1,)  # the first idle GPU, not GPU 0
    sim.check_invariants()


def test_jobs_within_their_shares_do_not_contend_for_compute():
    # memory model: two ResNets (u = 1.0) on one GPU run at min(1, 1/2) x 0.95 = 0.475;
    # shares model: intensity = share = 0.5 each, U = 1, so only alpha's 0.95 applies.
    jobs = [resnet(0, Request(gpu_milli=500)), resnet(1, Request(gpu_milli=500))]
    for config, speed in ((SimConfig(), 0.475), (SHARES, 0.95)):
        sim = Simulator(jobs, make_cluster("tiny"), config)
        sim.advance()
        sim.place(0, [0])
        sim.place(1, [0])
        assert sim.jobs[0].speed == pytest.approx(speed)
    sim = Simulator(jobs, make_cluster("tiny"), SHARES, NoInterference())
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    run_until_done(sim)
    assert [r.finish_s for r in sim.records()] == pytest.approx([158.0, 158.0], rel=1e-12)


def test_node_cpu_and_host_memory_are_hard_limits_and_come_back():
    cluster = make_cluster(
        ClusterConfig((NodeGroup(2, 2, "v100", cpu_milli=4000, memory_mib=10_000),))
    )
    big_cpu = Request(gpu_milli=100, cpu_milli=3000)
    jobs = [resnet(0, big_cpu), resnet(1, big_cpu), resnet(2, Request(100, 0, 9000), arrival_s=1e4)]
    sim = Simulator(jobs, cluster, SHARES)
    sim.advance()
    sim.place(0, [0])
    with pytest.raises(InvalidDecision, match="node 0 of GPU 1 has 1000 milli-CPU free"):
        sim.place(1, [1])  # GPU 1 is idle, node 0's CPU is not
    assert sim.find_placement(1, "pack") == (2,)  # node 1
    sim.place(1, [3])
    assert sim.core.gpus.node_cpu_array.tolist() == [1000.0, 1000.0]
    while 2 not in sim.pending():  # the two finish at 158 s, then job 2 arrives
        sim.advance()
    assert sim.core.gpus.node_cpu_array.tolist() == [4000.0, 4000.0]
    assert sim.find_placement(2, "pack") is not None
    sim.place(2, [1])
    sim.check_invariants()
    assert sim.core.gpus.node_mem_array.tolist() == [1000.0, 10_000.0]


def test_a_job_runs_only_on_the_gpu_models_it_allows():
    cluster = make_cluster(ClusterConfig((NodeGroup(1, 2, "v100"), NodeGroup(1, 2, "p100"))))
    jobs = [resnet(0, Request(gpu_milli=1000, gpu_models=("p100",)))]
    sim = Simulator(jobs, cluster, SHARES)
    sim.advance()
    for strategy in ("pack", "spread", "min_frag", "exclusive"):
        assert set(sim.find_placement(0, strategy) or ()) <= {2, 3}, strategy
    with pytest.raises(InvalidDecision, match=r"model is not among the job's request\.gpu_models"):
        sim.place(0, [0])
    with pytest.raises(ValueError, match=r"can never fit.*request\.gpu_models \['a100'\]"):
        Simulator([resnet(1, Request(gpu_models=("a100",)))], cluster, SHARES)


def test_a_jobs_gpus_are_on_one_node():
    # tiny2: 2 nodes x 2 GPUs. With one GPU taken on each node, a 2-GPU job fits across
    # the nodes under the memory model and nowhere under the shares model.
    jobs = [resnet(0, None), resnet(1, None), resnet(2, None, gpus=2)]
    for config, fits in ((SimConfig(), (True, True)), (SHARES, (False, False))):
        sim = Simulator(jobs, make_cluster("tiny2"), config)
        sim.advance()
        sim.place(0, [0])
        sim.place(1, [2])
        assert sim.fits(2) == fits
        assert (sim.find_placement(2, "exclusive") is not None) == fits[1]
        if not fits[0]:
            with pytest.raises(InvalidDecision, match="on several nodes"):
                sim.place(2, [1, 3])
    with pytest.raises(ValueError, match="can never fit"):
        Simulator([resnet(0, None, gpus=3)], make_cluster("tiny2"), SHARES)


def test_the_memory_model_ignores_requests():
    plain = [resnet(i, None, arrival_s=10.0 * i) for i in range(6)]
    asked = [
        resnet(i, Request(gpu_milli=50, cpu_milli=10**6), arrival_s=10.0 * i) for i in range(6)
    ]
    results = []
    for jobs in (plain, asked):
        sim = Simulator(jobs, make_cluster("tiny"))
        while not sim.done:
            for job_id in sim.pending():
                if sim.fits(job_id)[0]:
                    sim.schedule(job_id, "pack")
            sim.advance()
        results.append([(r.job_id, r.finish_s) for r in sim.records()])
    assert results[0] == results[1]
