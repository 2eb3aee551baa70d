"""The simulator's placements (the compiled core, with its incremental index) are the
GPUs that the readable ``find_placement`` picks, for every strategy, one-worker jobs and
gangs, on random busy states of every cluster shape."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

from gpushare_env.sim import STRATEGIES, InvalidDecision, Simulator, find_placement, make_cluster
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads import make_workload

# worker sizes around the catalogue's, plus edges: tiny, exactly a whole GPU, too big
_MEMORIES = (0.5, 2.0, 3.9, 4.0, 6.0, 8.0, 11.0, 16.0, 24.0, 33.0)
_GANGS = (1, 2, 3, 4, 8, 12, 16)


def _probes(first_id: int) -> list[JobSpec]:
    """Jobs that never arrive (far in the future): placement questions to ask the core."""
    base = make_workload("philly", 0, num_jobs=1, cluster_gpus=16)[0]
    probes = []
    for num_gpus in _GANGS:
        for memory in _MEMORIES:
            probes.append(
                dataclasses.replace(
                    base,
                    job_id=first_id + len(probes),
                    arrival_s=1e15,
                    num_gpus=num_gpus,
                    memory_gib=memory,
                )
            )
    return probes


def _compare_all(sim: Simulator, probes: list[JobSpec]) -> int:
    compared = 0
    for probe in probes:
        for strategy in STRATEGIES:
            expected = find_placement(strategy, sim.gpus, probe.num_gpus, probe.memory_gib)
            got = sim.find_placement(probe.job_id, strategy)
            assert got == expected, (strategy, probe.num_gpus, probe.memory_gib, sim.now_s)
            compared += 1
    return compared


@pytest.mark.parametrize(
    ("cluster", "max_jobs"),
    [("medium", 4), ("thesis", 2), ("tiny2", 1), ("philly", 4), ("mixed", 4)],
)
def test_core_placements_match_find_placement_on_random_states(cluster, max_jobs):
    config = dataclasses.replace(make_cluster(cluster).config, max_jobs_per_gpu=max_jobs)
    layout = make_cluster(config)
    rng = np.random.default_rng(7)
    jobs = make_workload("philly", rng, num_jobs=120, cluster_gpus=layout.num_gpus)
    biggest = float(layout.gpu_memory_gib.max())
    probes = [
        p for p in _probes(10**6) if p.num_gpus <= layout.num_gpus and p.memory_gib <= biggest
    ]
    sim = Simulator(jobs + probes, layout, rng=np.random.default_rng(1))
    compared = 0
    steps = 120 if cluster == "philly" else 400
    for _ in range(steps):
        if sim.num_finished == len(jobs):
            break
        sample = rng.choice(len(probes), size=10, replace=False)
        compared += _compare_all(sim, [probes[i] for i in sample])
        waiting = sim.pending()
        running = sim.running()
        roll = rng.random()
        if waiting and roll < 0.5:
            job = int(rng.choice(waiting))
            with contextlib.suppress(InvalidDecision):
                sim.schedule(job, STRATEGIES[int(rng.integers(len(STRATEGIES)))])
        elif running and roll < 0.65:
            sim.suspend(int(rng.choice(running)))
        elif sim.next_event_time() is not None and sim.next_event_time() < 1e15:
            sim.advance()
        elif waiting:
            sim.schedule(waiting[0], "exclusive")
    assert compared > 1000  # the loop really visited many states


def test_unknown_strategy_is_named():
    sim = Simulator(make_workload("philly", 0, num_jobs=5, cluster_gpus=16), make_cluster("thesis"))
    with pytest.raises(ValueError, match="unknown strategy 'best'"):
        sim.find_placement(0, "best")
    with pytest.raises(InvalidDecision, match="unknown strategy 'best'"):
        sim.schedule(0, "best")


def test_fresh_cluster_placements():
    """On an idle cluster every sharing strategy picks GPU 0, exclusive the first GPUs."""
    layout = make_cluster("thesis")
    jobs = make_workload("philly", 0, num_jobs=5, cluster_gpus=16)
    probes = [p for p in _probes(10**6) if p.memory_gib <= 16.0 and p.num_gpus <= 16]
    sim = Simulator(jobs + probes, layout)
    for probe in probes:
        for strategy in STRATEGIES:
            expected = find_placement(strategy, sim.gpus, probe.num_gpus, probe.memory_gib)
            assert sim.find_placement(probe.job_id, strategy) == expected
    one = probes[_MEMORIES.index(4.0)]
    for strategy in ("pack", "spread", "min_frag", "exclusive"):
        assert sim.find_placement(one.job_id, strategy) == (0,)
