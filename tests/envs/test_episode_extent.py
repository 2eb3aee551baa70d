"""How much of a workload an episode plays, and how it says so: a trace plays whole by
default, a trace cut by ``num_jobs`` warns and says so in ``info``, and a truncated episode
says which cap stopped it (``info["truncated_by"]``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import baselines
import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.rollout import rollout
from gpushare_env.workloads import make_workload, write_csv_trace
from gpushare_env.workloads.trace_cut import TraceCutWarning

TRACE_JOBS = 150


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CSV trace of 150 jobs that all fit the 16-GPU ``thesis`` cluster (more than the
    100 jobs a generated workload has by default)."""
    path = tmp_path_factory.mktemp("trace") / "long.csv"
    jobs = make_workload("thesis", np.random.default_rng(5), num_jobs=TRACE_JOBS, cluster_gpus=16)
    write_csv_trace(jobs, path)
    return path


def _make(config: dict[str, object]) -> gym.Env:
    return gym.make("GPUShare-v0", config=config, disable_env_checker=True)


def test_a_trace_plays_every_job_by_default_without_a_warning(trace: Path) -> None:
    env = _make({"cluster": "thesis", "workload": str(trace)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceCutWarning)  # a whole trace must not warn
        episode = rollout(baselines.make("fifo_pack", env), env, seed=0)
    assert episode.reset_info["num_jobs"] == TRACE_JOBS
    assert episode.reset_info["trace_jobs"] == TRACE_JOBS
    assert episode.reset_info["trace_cut"] is False
    assert episode.terminated and "truncated_by" not in episode.info
    assert len(env.unwrapped.simulator.records()) == TRACE_JOBS  # every job finished


def test_a_trace_cut_by_num_jobs_warns_once_and_says_so_at_every_reset(trace: Path) -> None:
    env = _make({"cluster": "thesis", "workload": str(trace), "num_jobs": 100})
    with pytest.warns(TraceCutWarning) as caught:
        _, info = env.reset(seed=0)
    assert issubclass(TraceCutWarning, UserWarning)
    (warning,) = caught
    message = str(warning.message)
    assert "long.csv" in message and "first 100 of 150 jobs" in message
    assert "num_jobs=None" in message  # says how to play it whole
    assert (info["num_jobs"], info["trace_jobs"], info["trace_cut"]) == (100, 150, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceCutWarning)  # once per env, not per reset
        _, again = env.reset(seed=1)
    assert (again["num_jobs"], again["trace_jobs"], again["trace_cut"]) == (100, 150, True)
    arrivals = [j.spec.arrival_s for j in env.unwrapped.simulator.jobs.values()]
    first = make_workload(str(trace), np.random.default_rng(0), num_jobs=100)
    assert sorted(arrivals) == [j.arrival_s for j in first]  # the earliest 100


def test_the_workloads_own_num_jobs_cuts_a_trace_too(trace: Path) -> None:
    env = _make({"cluster": "thesis", "workload": {"path": str(trace), "num_jobs": 40}})
    with pytest.warns(TraceCutWarning, match="first 40 of 150 jobs"):
        _, info = env.reset(seed=0)
    assert (info["num_jobs"], info["trace_cut"]) == (40, True)


def test_a_num_jobs_at_or_above_the_trace_size_is_no_cut(trace: Path) -> None:
    for num_jobs in (TRACE_JOBS, TRACE_JOBS + 50):
        env = _make({"cluster": "thesis", "workload": str(trace), "num_jobs": num_jobs})
        with warnings.catch_warnings():
            warnings.simplefilter("error", TraceCutWarning)
            _, info = env.reset(seed=0)
        assert (info["num_jobs"], info["trace_cut"]) == (TRACE_JOBS, False)


def test_generated_workloads_keep_their_own_default_and_no_trace_keys() -> None:
    _, info = _make({"cluster": "tiny", "workload": "thesis_poisson"}).reset(seed=0)
    assert info["num_jobs"] == 100
    assert "trace_jobs" not in info and "trace_cut" not in info


@pytest.mark.parametrize(
    ("limits", "reason"),
    [({"max_decisions": 10}, "decisions"), ({"max_time_s": 300.0}, "time")],
    ids=["decision cap", "time cap"],
)
def test_a_truncated_episode_says_which_cap_stopped_it(
    limits: dict[str, float], reason: str
) -> None:
    config = {"cluster": "tiny", "workload": "thesis_poisson", "num_jobs": 15, "limits": limits}
    env = _make(config)
    episode = rollout(baselines.make("fifo", env), env, seed=3)
    assert episode.truncated and not episode.terminated
    assert episode.info["truncated_by"] == reason
    sim = env.unwrapped.simulator
    assert sim.num_finished < 15
    if reason == "decisions":
        assert episode.steps == 10
    else:
        assert sim.now_s >= 300.0


def test_a_random_cut_plays_consecutive_runs_of_the_whole_trace_with_real_gaps(
    trace: Path,
) -> None:
    workload = {"path": str(trace), "cut": "random"}
    env = _make({"cluster": "thesis", "workload": workload, "num_jobs": 40})
    whole = sorted(
        make_workload(str(trace), np.random.default_rng(0)),
        key=lambda j: (j.arrival_s, j.job_id),
    )
    index = {job.job_id: k for k, job in enumerate(whole)}
    starts = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceCutWarning)  # a run is not the first-N cut
        for seed in range(6):
            _, info = env.reset(seed=seed)
            jobs = sorted(env.unwrapped.simulator.jobs.values(), key=lambda j: j.spec.job_id)
            positions = sorted(index[j.spec.job_id] for j in jobs)
            assert positions == list(range(positions[0], positions[0] + 40))  # consecutive
            first = whole[positions[0]]
            for job in jobs:  # the trace's own gaps, from 0
                real = whole[index[job.spec.job_id]]
                assert job.spec.arrival_s == pytest.approx(real.arrival_s - first.arrival_s)
                assert job.spec.iterations == real.iterations
            assert (info["num_jobs"], info["trace_jobs"]) == (40, TRACE_JOBS)
            starts.add(positions[0])
    assert len(starts) > 1  # the start is drawn per episode
    _, info = env.reset(seed=3)
    again = sorted(j.spec.job_id for j in env.unwrapped.simulator.jobs.values())
    env.reset(seed=3)
    assert sorted(j.spec.job_id for j in env.unwrapped.simulator.jobs.values()) == again


def test_a_random_cut_is_for_traces_only_and_named_when_wrong() -> None:
    from gpushare_env.workloads import WorkloadConfig

    with pytest.raises(ValueError, match=r"workload.cut must be 'first' unless kind is 'trace'"):
        WorkloadConfig(kind="philly", cut="random")
    with pytest.raises(ValueError, match=r"workload.cut must be one of \['first', 'random'\]"):
        WorkloadConfig(kind="trace", path="x.csv", cut="middle")
