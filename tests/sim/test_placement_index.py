"""``SingleWorkerIndex`` answers exactly as the vectorised ``find_placement`` does
(every strategy for one worker, ``exclusive`` for gangs)."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

from gpushare_env.sim import STRATEGIES, InvalidDecision, Simulator, find_placement, make_cluster
from gpushare_env.sim.placement import SingleWorkerIndex
from gpushare_env.workloads import make_workload

# worker sizes around the catalogue's, plus edges: tiny, exactly a whole GPU, too big
_MEMORIES = (0.5, 2.0, 3.9, 4.0, 6.0, 8.0, 11.0, 16.0, 24.0, 33.0)


def _compare_all(sim: Simulator) -> int:
    index = sim._single
    assert index is not None
    compared = 0
    for strategy in STRATEGIES:
        for memory in _MEMORIES:
            expected = find_placement(strategy, sim.gpus, 1, memory)
            assert index.find(strategy, memory) == expected, (strategy, memory, sim.now_s)
            compared += 1
    rebuilt = SingleWorkerIndex(sim.gpus, float(sim.cluster.gpu_memory_gib[0]))
    for strategy in STRATEGIES:  # an index built from a busy state agrees with the live one
        assert rebuilt.find(strategy, 4.0) == index.find(strategy, 4.0)
    for num_gpus in (2, 3, 4, 8, 12, 16):
        for memory in (4.0, 24.0, 33.0):
            expected = find_placement("exclusive", sim.gpus, num_gpus, memory)
            assert index.find_exclusive(num_gpus, memory) == expected, (num_gpus, memory)
            compared += 1
    return compared


@pytest.mark.parametrize(
    ("cluster", "max_jobs"), [("medium", 4), ("thesis", 2), ("tiny2", 1), ("philly", 4)]
)
def test_index_matches_find_placement_on_random_states(cluster, max_jobs):
    config = dataclasses.replace(make_cluster(cluster).config, max_jobs_per_gpu=max_jobs)
    layout = make_cluster(config)
    rng = np.random.default_rng(7)
    jobs = make_workload("philly", rng, num_jobs=120, cluster_gpus=layout.num_gpus)
    sim = Simulator(jobs, layout, rng=np.random.default_rng(1))
    assert sim._single is not None
    if cluster == "thesis":
        sim._single.SPREAD_SCAN_LIMIT = 2  # exercise the vectorised fallback too
    compared = 0
    for _ in range(600):
        if sim.done:
            break
        compared += _compare_all(sim)
        waiting = sim.pending()
        running = sim.running()
        roll = rng.random()
        if waiting and roll < 0.5:
            job = int(rng.choice(waiting))
            with contextlib.suppress(InvalidDecision):
                sim.schedule(job, STRATEGIES[int(rng.integers(len(STRATEGIES)))])
        elif running and roll < 0.65:
            sim.suspend(int(rng.choice(running)))
        elif sim.next_event_time() is not None:
            sim.advance()
        elif waiting:
            sim.schedule(waiting[0], "exclusive")
    assert compared > 1000  # the loop really visited many states


def test_unknown_strategy_and_heterogeneous_clusters():
    sim = Simulator(make_workload("philly", 0, num_jobs=5, cluster_gpus=16), make_cluster("thesis"))
    assert sim._single is not None
    with pytest.raises(ValueError, match="unknown placement strategy 'best'"):
        sim._single.find("best", 4.0)
    mixed = make_cluster("mixed")
    assert len(set(mixed.gpu_memory_gib.tolist())) > 1
    jobs = make_workload("philly", 0, num_jobs=5, cluster_gpus=mixed.num_gpus)
    assert Simulator(jobs, mixed)._single is None  # falls back to the vectorised search


def test_fresh_index_on_an_idle_cluster():
    """A fresh index of an idle cluster picks GPU 0 for every sharing strategy."""
    sim = Simulator(make_workload("philly", 0, num_jobs=5, cluster_gpus=16), make_cluster("thesis"))
    index = SingleWorkerIndex(sim.gpus, 16.0)
    assert index.find_exclusive(16, 4.0) == tuple(range(16))
    for strategy in ("pack", "spread", "min_frag", "exclusive"):
        assert index.find(strategy, 4.0) == find_placement(strategy, sim.gpus, 1, 4.0)
    assert index.find("pack", 17.0) is None
