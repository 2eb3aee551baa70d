"""The placement strategies (carried out by the compiled core, with its incremental index):
answers computed by hand on small clusters, and properties every answer must have on
random busy states of every cluster shape (valid, one node when one node can hold the
gang, ``None`` only when the cluster cannot hold it, and what ``schedule`` then does)."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

from gpushare_env.sim import STRATEGIES, InvalidDecision, SimConfig, Simulator, make_cluster
from gpushare_env.sim.cluster import unfit_reason
from gpushare_env.sim.limits import MAX_ARRIVAL_S
from gpushare_env.sim.types import JobSpec, JobStatus
from gpushare_env.workloads import make_workload
from tests.jobs import job

_EPS = 1e-9
_FAR = MAX_ARRIVAL_S  # [s] probes arrive so late that they stay questions, never jobs
# worker sizes around the catalogue's, plus edges: tiny, exactly a whole GPU, too big
_MEMORIES = (0.5, 2.0, 3.9, 4.0, 6.0, 8.0, 11.0, 16.0, 24.0, 33.0)
_GANGS = (1, 2, 3, 4, 8, 12, 16)


def _probe(job_id: int, num_gpus: int, memory_gib: float) -> JobSpec:
    return job(job_id, _FAR, 10, num_gpus=num_gpus, memory_gib=memory_gib)


def _hand_state() -> Simulator:
    """``tiny2`` (GPUs 0, 1 on node 0; 2, 3 on node 1; 16 GiB each): job 1 (6 GiB,
    intensity 0.5) on GPU 1 and job 2 (10 GiB, intensity 1.0) on GPU 2. Free memory:
    16, 10, 6, 16 GiB; loads 0, 0.5, 1.0, 0."""
    jobs = [
        job(1, 0.0, 10_000, memory_gib=6.0, intensity=0.5),
        job(2, 0.0, 10_000, memory_gib=10.0, intensity=1.0),
    ]
    probes = [
        _probe(10, 1, 4.0),
        _probe(11, 2, 4.0),
        _probe(12, 4, 4.0),
        _probe(13, 1, 15.0),
        _probe(14, 3, 7.0),
    ]
    sim = Simulator(jobs + probes, make_cluster("tiny2"))
    sim.advance()
    sim.place(1, [1])
    sim.place(2, [2])
    return sim


@pytest.mark.parametrize(
    ("probe", "strategy", "expected"),
    [
        # one worker of 4 GiB: pack takes the fragment left smallest (GPU 2: 6 -> 2 GiB);
        # spread the least loaded (idle GPUs 0 and 3 tie: the first); exclusive an idle
        # GPU of a node with the fewest idle GPUs (one each: the first)
        (10, "pack", (2,)),
        (10, "spread", (0,)),
        (10, "exclusive", (0,)),
        # a gang of two: pack's node sums (10 - 4) + (idle) against (6 - 4) + (idle):
        # node 1; spread's 0 + 0.5 + 0.01 against 1.0 + 0.01 + 0: node 0; exclusive
        # finds no node with two idle GPUs and takes one idle GPU of each
        (11, "pack", (2, 3)),
        (11, "spread", (0, 1)),
        (11, "exclusive", (0, 3)),
        # four workers: every GPU has room (across both nodes); not four idle GPUs
        (12, "pack", (0, 1, 2, 3)),
        (12, "exclusive", None),
        # 15 GiB fits only the idle GPUs 0 and 3: the first
        (13, "pack", (0,)),
        (13, "min_frag", (0,)),
        # three workers of 7 GiB: only GPUs 0, 1 and 3 hold one (GPU 2 has 6 GiB free)
        (14, "pack", (0, 1, 3)),
        (14, "exclusive", None),
    ],
)
def test_hand_computed_placements(probe: int, strategy: str, expected: object) -> None:
    assert _hand_state().find_placement(probe, strategy) == expected


def test_a_full_gpu_takes_no_worker_and_memory_is_a_hard_limit() -> None:
    config = dataclasses.replace(make_cluster("tiny2").config, max_jobs_per_gpu=1)
    jobs = [job(1, 0.0, 10_000, memory_gib=2.0), _probe(10, 1, 1.0), _probe(11, 4, 1.0)]
    sim = Simulator(jobs, make_cluster(config))
    sim.advance()
    sim.place(1, [0])  # 14 GiB free on GPU 0, but its one worker slot is taken
    for strategy in STRATEGIES:
        assert sim.find_placement(10, strategy) == (1,), strategy
        assert sim.find_placement(11, strategy) is None, strategy


def _fits(sim: Simulator, g: int, memory: float, exclusive: bool) -> bool:
    state = sim.gpus
    if exclusive:
        return bool(state.holders[g] == 0 and state.free_memory_gib[g] + _EPS >= memory)
    return bool(
        state.holders[g] < state.max_jobs_per_gpu and state.free_memory_gib[g] + _EPS >= memory
    )


def _check_answer(sim: Simulator, probe: JobSpec, strategy: str) -> bool:
    """The properties of one answer; True if it found GPUs."""
    exclusive = strategy == "exclusive"
    gpus = sim.find_placement(probe.job_id, strategy)
    fitting = [g for g in range(sim.cluster.num_gpus) if _fits(sim, g, probe.memory_gib, exclusive)]
    if gpus is None:
        assert len(fitting) < probe.num_gpus, (strategy, probe, fitting)
        return False
    assert list(gpus) == sorted(set(gpus)) and len(gpus) == probe.num_gpus
    assert all(g in fitting for g in gpus), (strategy, gpus, fitting)
    nodes = sim.cluster.gpu_node
    per_node = np.bincount([nodes[g] for g in fitting], minlength=sim.cluster.num_nodes)
    if per_node.max() >= probe.num_gpus:  # one node can hold the gang: it does
        assert len({nodes[g] for g in gpus}) == 1, (strategy, gpus)
    return True


@pytest.mark.parametrize(
    ("cluster", "max_jobs"),
    [("medium", 4), ("thesis", 2), ("tiny2", 1), ("philly", 4), ("mixed", 4)],
)
def test_placements_are_valid_on_random_states(cluster: str, max_jobs: int) -> None:
    config = dataclasses.replace(make_cluster(cluster).config, max_jobs_per_gpu=max_jobs)
    layout = make_cluster(config)
    rng = np.random.default_rng(7)
    jobs = make_workload("philly", rng, num_jobs=120, cluster_gpus=layout.num_gpus)
    memory_desc = np.sort(layout.gpu_memory_gib)[::-1]
    probes = [  # the shapes that fit the empty cluster (the simulator refuses the others)
        _probe(10**6 + i, n, m)
        for i, (n, m) in enumerate((n, m) for n in _GANGS for m in _MEMORIES)
        if unfit_reason(n, m, memory_desc) is None
    ]
    # no suspension budget: random suspensions reach varied states
    sim = Simulator(
        jobs + probes, layout, SimConfig(max_suspends_per_job=None), rng=np.random.default_rng(1)
    )
    found = checked = 0
    steps = 120 if cluster == "philly" else 400
    for _ in range(steps):
        if sim.num_finished == len(jobs):
            break
        for i in rng.choice(len(probes), size=10, replace=False):
            for strategy in STRATEGIES:
                found += _check_answer(sim, probes[i], strategy)
                checked += 1
        waiting = sim.pending()
        running = sim.running()
        roll = rng.random()
        if waiting and roll < 0.5:
            job_id = int(rng.choice(waiting))
            strategy = STRATEGIES[int(rng.integers(len(STRATEGIES)))]
            expected = sim.find_placement(job_id, strategy)
            with contextlib.suppress(InvalidDecision):
                assert sim.schedule(job_id, strategy) == expected  # schedule takes them
                assert sim.jobs[job_id].gpus == expected
            if expected is None:
                assert sim.jobs[job_id].status in (JobStatus.PENDING, JobStatus.SUSPENDED)
        elif running and roll < 0.65:
            sim.suspend(int(rng.choice(running)))
        elif (next_time := sim.next_event_time()) is not None and next_time < _FAR:
            sim.advance()
        elif waiting:
            sim.schedule(waiting[0], "exclusive")
    assert checked > 1000 and found > 0  # the loop really visited many states


def test_wide_nodes_place_gangs_in_c() -> None:
    """Nodes of more than 128 GPUs (numpy's pairwise-sum block): gangs still go to one
    node, lowest scores first."""
    cluster = make_cluster(
        {"groups": [{"nodes": 2, "gpus_per_node": 130, "gpu_type": "v100"}], "max_jobs_per_gpu": 2}
    )
    jobs = [job(1, 0.0, 10_000, memory_gib=6.0), _probe(10, 129, 4.0), _probe(11, 131, 4.0)]
    sim = Simulator(jobs, cluster)
    sim.advance()
    sim.place(1, [5])
    # pack: GPU 5's fragment (10 GiB, left 6) scores lowest, the rest are idle alike
    assert sim.find_placement(10, "pack") == (*range(5), *range(5, 129))
    # exclusive: the node with the fewest idle GPUs that holds the gang (node 0, 129)
    assert sim.find_placement(10, "exclusive") == (*range(5), *range(6, 130))
    gang = sim.find_placement(11, "pack")
    assert gang is not None and len(gang) == 131 and 5 in gang


def test_unknown_strategy_is_named() -> None:
    sim = Simulator(make_workload("philly", 0, num_jobs=5, cluster_gpus=16), make_cluster("thesis"))
    with pytest.raises(ValueError, match="unknown strategy 'best'"):
        sim.find_placement(0, "best")
    with pytest.raises(InvalidDecision, match="unknown strategy 'best'"):
        sim.schedule(0, "best")
