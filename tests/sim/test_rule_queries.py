"""The core answers the rule queries policies ask (fit, predicted work, the windows),
and its answers agree with what the same core then does."""

from __future__ import annotations

import numpy as np
import pytest

from gpushare_env.sim import (
    STRATEGIES,
    InvalidDecision,
    JobStatus,
    SimConfig,
    Simulator,
    SimView,
    Windows,
    make_cluster,
)
from gpushare_env.workloads import make_workload


def _busy_simulator(cluster: str, seed: int, num_jobs: int = 40, **windows: object) -> Simulator:
    c = make_cluster(cluster)
    jobs = make_workload("philly_heavy", np.random.default_rng(seed), num_jobs=num_jobs,
                         cluster_gpus=c.num_gpus)  # fmt: skip
    return Simulator(jobs, c, SimConfig(), rng=np.random.default_rng(seed),
                     windows=Windows(**windows))  # type: ignore[arg-type]  # fmt: skip


def _step(sim: Simulator, view: SimView, rng: np.random.Generator, place_p: float) -> None:
    """Place a window job that fits (with probability ``place_p``, always when nothing is
    left to happen), else let time run."""
    placeable = [j for j in view.pending_window() if view.fits(j)[0]]
    if placeable and (rng.random() < place_p or sim.next_event_time() is None):
        sim.schedule(placeable[int(rng.integers(len(placeable)))], "pack")
    else:
        sim.advance()


@pytest.mark.parametrize("cluster", ["thesis", "mixed", "tiny2"])
def test_fits_says_whether_the_strategies_find_room(cluster: str) -> None:
    """``fits`` is the mask's rule: shared iff every sharing strategy finds GPUs,
    exclusive iff the exclusive strategy does, in states along a packed run."""
    sim = _busy_simulator(cluster, seed=1, num_jobs=400)
    view: SimView = sim
    rng = np.random.default_rng(0)
    answers: set[tuple[bool, bool]] = set()
    while not sim.done and sim.events_processed < 1500 and len(answers) < 3:
        for job_id in sim.pending():
            shared, exclusive = view.fits(job_id)
            for strategy in STRATEGIES:
                found = view.find_placement(job_id, strategy) is not None
                assert found == (exclusive if strategy == "exclusive" else shared), (
                    job_id,
                    strategy,
                )
            answers.add((shared, exclusive))
        _step(sim, view, rng, 0.95)
    assert len(answers) >= 2  # states where the answers differ were checked


def test_predicted_work_with_a_prior_sums_what_is_known_and_the_prior_for_the_rest() -> None:
    sim = _busy_simulator("thesis", seed=4, num_jobs=30)
    view: SimView = sim
    rng = np.random.default_rng(0)

    def in_system_and_known() -> tuple[list[int], list[int]]:
        jobs = sim.pending() + sim.running() + sim.in_transition()
        return jobs, [j for j in jobs if view.job(j).predicted_remaining_s is not None]

    for _ in range(500):  # to a state where some jobs are sampled and some not yet
        _step(sim, view, rng, 0.9)
        in_system, known = in_system_and_known()
        if known and len(known) < len(in_system):
            break
    assert known and len(known) < len(in_system)
    prior = 5000.0
    expected = 0.0
    for job_id in in_system:
        job = view.job(job_id)
        left = job.predicted_remaining_s
        if left is None:
            left = prior * (1.0 - job.progress)
        expected += left * job.num_gpus
    assert view.predicted_work_s(prior_s=prior) == pytest.approx(expected, rel=1e-12)
    only_known = sum(view.job(j).predicted_remaining_s * view.job(j).num_gpus for j in known)
    assert view.predicted_work_s() == pytest.approx(only_known, rel=1e-12)


def test_the_pending_window_what_if_counts_suspended_jobs_back_in_arrival_order() -> None:
    sim = _busy_simulator("thesis", seed=2, num_jobs=40, pending=3, running=4)
    view: SimView = sim
    rng = np.random.default_rng(0)
    while len(sim.running()) < 3 or len(sim.pending()) < 4:
        _step(sim, view, rng, 0.5)
    assert view.pending_window() == sim.pending(3)
    assert view.running_window() == sim.running(4)
    victim = sim.running()[0]  # arrived before every waiting job
    assert view.pending_window(also_waiting=[victim]) == sorted(
        [victim, *sim.pending(2)], key=lambda j: (view.job(j).arrival_s, j)
    )
    with pytest.raises(InvalidDecision, match="not holding GPUs"):
        view.pending_window(also_waiting=[sim.pending()[0]])
    assert view.job(victim).status == JobStatus.RUNNING  # a what-if changes nothing
