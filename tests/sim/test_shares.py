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


def cpu_task(job_id: int, cpu_milli: int, seconds: int, arrival_s: float = 0.0) -> JobSpec:
    """A job of no GPU: ``seconds`` steps of 1 s, ``cpu_milli`` and 1 GiB of host memory."""
    return JobSpec(job_id, arrival_s, "openb_task", 1, 0, seconds, 0.0, 0.0, 1.0,
                   Request(0, cpu_milli, 1024))  # fmt: skip


def test_a_job_without_gpus_holds_its_nodes_cpu_and_memory_only():
    # tiny2: 2 nodes x 2 GPUs, 4,000 milli-CPU and 10,000 MiB each
    cluster = make_cluster(
        ClusterConfig((NodeGroup(2, 2, "v100", cpu_milli=4000, memory_mib=10_000),))
    )
    jobs = [resnet(0, Request(100, 1000, 0)), cpu_task(1, 3000, 50), cpu_task(2, 3000, 30),
            cpu_task(3, 3000, 100, arrival_s=1.0)]  # fmt: skip
    sim = Simulator(jobs, cluster, SHARES)
    sim.advance()
    sim.place(0, [0])
    # best fit by CPU: node 0 has 3,000 left, exactly the task's
    assert sim.schedule(1, "spread") == ()
    assert (sim.jobs[1].node, sim.jobs[1].gpus) == (0, ())
    assert sim.fits(2) == (True, True)
    assert sim.find_placement(2, "share_fgd") == ()
    sim.schedule(2, "share_fgd")
    assert sim.jobs[2].node == 1
    assert sim.core.gpus.node_cpu_array.tolist() == [0.0, 1000.0]
    assert sim.gpus.holders.tolist() == [1, 0, 0, 0]  # no GPU taken
    assert sim.jobs[1].speed == 1.0  # its solo speed, beside a GPU job on its node
    sim.advance()  # job 3 arrives: no node has its CPU
    assert sim.fits(3) == (False, False)
    with pytest.raises(InvalidDecision, match="no node has its 3000 milli-CPU"):
        sim.schedule(3, "pack")
    with pytest.raises(InvalidDecision, match="holds no GPU"):
        sim.place(3, [1])
    sim.check_invariants()
    # suspended and resumed on the other node: a migration
    sim.suspend(2)
    while sim.jobs[2].status.name != "SUSPENDED":
        sim.advance()
    assert sim.core.gpus.node_cpu_array.tolist() == [0.0, 4000.0]
    sim.schedule(3, "pack")  # on node 1 until t > 100: job 2 resumes on node 0 at 50
    run_until_done_placing(sim)
    records = {r.job_id: r for r in sim.records()}
    assert records[1].finish_s == pytest.approx(50.0)  # never slowed
    assert records[1].gpu_seconds == 0.0 and records[2].gpu_seconds == 0.0
    assert records[2].migrations == 1 and records[2].suspends == 1


def run_until_done_placing(sim: Simulator) -> None:
    while not sim.done:
        for job_id in sim.pending():
            if sim.fits(job_id)[0]:
                sim.schedule(job_id, "pack")
        sim.advance()
        sim.check_invariants()


def test_only_the_shares_model_runs_jobs_without_gpus():
    jobs = [cpu_task(0, 1000, 10)]
    with pytest.raises(ValueError, match=r"job 0 can never fit.*num_gpus 0.*requested-shares"):
        Simulator(jobs, make_cluster("tiny2"))
    # and a job of no GPU is one with a request of no share, nothing of a GPU
    with pytest.raises(ValueError, match="request must be a Request of gpu_milli 0"):
        JobSpec(0, 0.0, "openb_task", 1, 0, 10, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="memory_gib must be 0 for a job without GPUs"):
        JobSpec(0, 0.0, "openb_task", 1, 0, 10, 8.0, 0.0, 1.0, Request(0, 1000))
    with pytest.raises(ValueError, match="request must be None or a Request of gpu_milli >= 1"):
        JobSpec(0, 0.0, "openb_task", 1, 1, 10, 8.0, 1.0, 1.0, Request(0, 1000))
    with pytest.raises(ValueError, match=r"request.gpu_milli must be an int >= 0 and <= 1000"):
        Request(-1)


def test_nodes_without_cpu_limits_hold_jobs_without_gpus_under_every_strategy():
    # tiny2's nodes have no CPU or host-memory limit (inf): every node holds the task, the
    # lower node wins the ties, and DotProd's and BestFit's scores stay finite
    jobs = [resnet(0, Request(500, 1000)), cpu_task(1, 4000, 10)]
    for strategy in ("exclusive", "pack", "spread", "min_frag", "share_random",
                     "share_dotprod", "share_clustering", "share_packing",
                     "share_bestfit", "share_fgd"):  # fmt: skip
        sim = Simulator(jobs, make_cluster("tiny2"), SHARES)
        sim.advance()
        assert sim.fits(1) == (True, True), strategy
        sim.schedule(0, strategy)
        sim.schedule(1, strategy)
        if strategy != "share_random":  # its node is the job's own draw
            assert sim.jobs[1].node == 0, strategy
        run_until_done(sim)
        assert sim.records()[0].finish_s == pytest.approx(10.0), strategy
