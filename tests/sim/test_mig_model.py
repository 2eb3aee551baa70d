"""The MIG sharing model (``SimConfig.sharing = "mig"``): instances in the core, their fit,
speeds, re-partitioning, forks, and MISO's two baselines on it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from gpushare_env.sim import InvalidDecision, Repartition, SimConfig, Simulator, apply_decision
from gpushare_env.sim.cluster import make_cluster
from gpushare_env.sim.mig_speed import job_speed_table
from gpushare_env.sim.sharing import MigSharing, sharing_model
from gpushare_env.sim.types import JobSpec

A100 = {"nodes": 1, "gpus_per_node": 2, "gpu_type": "a100"}


def _job(job_id: int, memory_gib: float = 4.0, num_gpus: int = 1, iterations: int = 100) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        arrival_s=0.0,
        model="resnet50",
        batch_size=32,
        num_gpus=num_gpus,
        iterations=iterations,
        memory_gib=memory_gib,
        intensity=0.7,
        iter_time_s=2.0,
    )


def _sim(jobs: list[JobSpec], cluster: object = A100, **config: object) -> Simulator:
    """A simulator under the mig model; instance operations take no time unless asked."""
    config = {"mig_operation_s": 0.0, **config}
    return Simulator(
        jobs,
        make_cluster(cluster),
        SimConfig(sharing="mig", **config),
        rng=np.random.default_rng(0),
    )


def _layout(sim: Simulator, gpu: int) -> list[tuple[str, int, tuple[int, ...]]]:
    return [(inst.profile, inst.start, inst.jobs) for inst in sim.mig_instances(gpu)]


def test_every_gpu_starts_whole_and_a_repartition_is_checked() -> None:
    sim = _sim([_job(1)])
    assert _layout(sim, 0) == [("7g.40gb", 0, ())]
    sim.repartition(0, [("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)])
    assert _layout(sim, 0) == [("2g.10gb", 0, ()), ("2g.10gb", 2, ()), ("3g.20gb", 4, ())]
    with pytest.raises(
        InvalidDecision, match=r"2g.10gb cannot start at memory slice 3.*\[0, 2, 4\]"
    ):
        sim.repartition(1, [("2g.10gb", 3)])
    with pytest.raises(InvalidDecision, match="overlaps another instance"):
        sim.repartition(1, [("4g.20gb", 0), ("3g.20gb", 0)])
    with pytest.raises(InvalidDecision, match=r"unknown MIG profile '5g.30gb'"):
        sim.repartition(1, [("5g.30gb", 0)])
    with pytest.raises(InvalidDecision, match="GPU 9 does not exist"):
        sim.repartition(9, [])


def test_a_held_instance_must_stay_and_a_job_runs_at_its_profile_speed() -> None:
    job = _job(1, iterations=1000)
    sim = _sim([job])
    sim.repartition(0, [("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4)])
    sim.repartition(1, [("1g.5gb", 0)])
    sim.advance()  # the arrival
    assert sim.schedule(1, "mig_fit") == (1,)  # the smallest instance that fits: GPU 1's 1g
    assert _layout(sim, 1) == [("1g.5gb", 0, (1,))]
    with pytest.raises(InvalidDecision, match=r"job 1 holds 1g.5gb at slice 0"):
        sim.repartition(1, [("7g.40gb", 0)])
    sim.repartition(1, [("1g.5gb", 0), ("3g.20gb", 4)])  # idle slices only
    speed = job_speed_table(job, "A100-40GB")["1g.5gb"]
    while not sim.done:
        sim.advance()
    assert sim.records()[0].finish_s == pytest.approx(1000 / speed)


def test_largest_rule_and_a_job_that_fits_nothing_idle() -> None:
    sim = _sim([_job(1, memory_gib=15.0), _job(2)])
    sim.repartition(0, [("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4)])
    sim.repartition(1, [("1g.5gb", 0), ("1g.5gb", 1)])
    sim.advance()
    assert sim.find_placement(1, "mig_largest") == (0,)  # 15 GiB: 3g.20gb or larger
    assert sim.schedule(2, "mig_largest") == (0,)
    assert [inst.jobs for inst in sim.mig_instances(0)] == [(), (), (2,)]  # the 3g
    assert sim.find_placement(1, "mig_fit") is None
    with pytest.raises(
        InvalidDecision, match=r"no MIG instance with room.*fits 3g.20gb, 4g.20gb, 7g.40gb"
    ):
        sim.place(1, [1])


def test_mig_strategies_need_the_mig_model() -> None:
    memory = Simulator([_job(1)], make_cluster(A100), SimConfig(), rng=np.random.default_rng(0))
    memory.advance()
    with pytest.raises(InvalidDecision, match=r"mig_fit.*needs the mig model"):
        memory.schedule(1, "mig_fit")
    with pytest.raises(ValueError, match="under the mig model only"):
        memory.mig_instances(0)


def test_a_cluster_without_mig_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"sharing 'mig': GPU 0 \(v100, 16 GiB\) has no MIG"):
        _sim([_job(1)], cluster="tiny")
    assert isinstance(sharing_model("mig"), MigSharing)


def test_forks_and_pickles_carry_the_partition() -> None:
    sim = _sim([_job(1), _job(2)])
    sim.advance()
    apply_decision(sim, Repartition(0, (("4g.20gb", 0), ("3g.20gb", 4))))
    assert sim.schedule(1, "mig_largest") == (1,)  # GPU 1 is whole: the largest
    fork = sim.fork()
    fork.repartition(0, [("1g.5gb", 6)])
    assert _layout(fork, 0) == [("1g.5gb", 6, ())]
    assert _layout(sim, 0) == [("4g.20gb", 0, ()), ("3g.20gb", 4, ())]
    copy = pickle.loads(pickle.dumps(sim))
    assert [copy.mig_instances(g) for g in range(2)] == [sim.mig_instances(g) for g in range(2)]
    assert _layout(copy, 1) == [("7g.40gb", 0, (1,))]


def test_gang_workers_take_an_instance_each() -> None:
    sim = _sim([_job(1, num_gpus=2)])
    sim.advance()
    assert sim.schedule(1, "mig_fit") == (0, 1)
    sim.check_invariants()
    assert all(sim.mig_instances(g)[0].jobs == (1,) for g in range(2))


def test_a_reserved_instance_goes_to_its_job_first_and_to_no_other() -> None:
    sim = _sim([_job(1), _job(2), _job(3)])
    sim.advance()
    sim.repartition(0, [("3g.20gb", 0, 2), ("3g.20gb", 4)])
    sim.repartition(1, [("1g.5gb", 0)])
    assert sim.mig_instances(0)[0].reserved == (2,)
    assert sim.schedule(1, "mig_largest") == (0,)  # the unreserved 3g, not job 2's
    assert sim.schedule(2, "mig_fit") == (0,)  # its reservation beats GPU 1's 1g
    assert _layout(sim, 0) == [("3g.20gb", 0, (2,)), ("3g.20gb", 4, (1,))]
    assert sim.mig_instances(0)[0].reserved == ()  # used up
    with pytest.raises(InvalidDecision, match="job 1 is RUNNING; only a waiting job"):
        sim.repartition(1, [("1g.5gb", 0, 1)])
    with pytest.raises(InvalidDecision, match="only an MPS-shared instance holds several"):
        sim.repartition(1, [("7g.40gb", 0, (3, 3))])


def test_an_mps_instance_holds_several_jobs_at_the_mps_speed() -> None:
    sim = _sim([_job(1, iterations=300), _job(2, iterations=300)])
    sim.advance()
    sim.repartition(0, [("7g.40gb", 0, (1, 2), True)])
    assert sim.schedule(1, "mig_fit") == (0,) and sim.schedule(2, "mig_fit") == (0,)
    assert sim.mig_instances(0)[0].jobs == (1, 2) and sim.mig_instances(0)[0].mps
    sim.check_invariants()
    while not sim.done:
        sim.advance()
    assert [r.finish_s for r in sim.records()] == pytest.approx([900.0, 900.0])  # a third


def test_a_repartition_takes_its_operations_time_before_its_instances_exist() -> None:
    sim = _sim([_job(1, iterations=1000), _job(2, iterations=1000)], mig_operation_s=0.5)
    sim.advance()
    sim.repartition(0, [("3g.20gb", 0), ("3g.20gb", 4)])  # destroy 7g, create two: 1.5 s
    sim.repartition(1, [("7g.40gb", 0)])  # the idle instance it keeps: no operation
    assert sim.schedule(1, "mig_fit") == (0,)
    assert sim.job(1).status.name == "RESUMING" and sim.job(1).first_start_s == 0.0
    assert sim.schedule(2, "mig_largest") == (1,) and sim.job(2).status.name == "RUNNING"
    while not sim.done:
        sim.advance()
    speed = job_speed_table(_job(1), "A100-40GB")["3g.20gb"]
    first = {r.job_id: r for r in sim.records()}
    assert first[1].finish_s == pytest.approx(1.5 + 1000 / speed)
    assert first[1].resumes == 0 and first[2].finish_s == pytest.approx(1000.0)


@pytest.mark.parametrize(
    ("model", "memory", "whole", "profiles"),
    [
        ("H100-80GB", 80.0, "7g.80gb", 6),
        ("A30", 24.0, "4g.24gb", 3),
        ("A100-80GB", 80.0, "7g.80gb", 6),
    ],
)
def test_nodes_that_name_a_mig_model_get_its_profiles(
    model: str, memory: float, whole: str, profiles: int
) -> None:
    cluster = {"nodes": 1, "gpus_per_node": 2, "gpu_type": "a100", "memory_gib": memory,
               "model": model}  # fmt: skip
    sim = _sim([_job(1)], cluster=cluster)
    assert _layout(sim, 0) == [(whole, 0, ())]
    sim.advance()
    assert sim.schedule(1, "mig_fit") == (0,)
    assert len(MigSharing().observation_columns(sim.cluster)) == profiles + 1
