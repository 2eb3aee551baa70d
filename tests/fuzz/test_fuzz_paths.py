"""Fuzzing the three ways to run a workload: the env, the headless runner, ``Simulator``.

Workloads at the edges of the limits (ids up to ``2**63 - 1``, arrivals up to 1e9 s,
durations up to 1e8 s, mixed clusters) run the same way on every path: a heuristic gives
the same metrics through the env and headless, every job finishes or the run is truncated
and says why; a job no GPU set can hold is refused by every path alike, naming it.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import baselines
from gpushare_env.envs import GPUShareEnv
from gpushare_env.rollout import rollout
from gpushare_env.runner import run_headless
from gpushare_env.seeding import episode_streams
from gpushare_env.sim import MODELS, JobSpec, Simulator, make_cluster
from gpushare_env.sim.limits import MAX_ARRIVAL_S, MAX_DURATION_S, MAX_JOB_ID
from gpushare_env.workloads import UnfitJobError, make_job
from tests.fuzz.strategies import FUZZ

#: numpy overflow or an invalid value is a limit missing somewhere: fail on it
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

_CLUSTERS = {
    "tiny": "tiny",
    "thesis": "thesis",
    "mixed": {  # three widths and memories, small enough to be quick
        "groups": [
            {"nodes": 1, "gpus_per_node": 4, "gpu_type": "v100"},
            {"nodes": 1, "gpus_per_node": 2, "gpu_type": "p100"},
            {"nodes": 1, "gpus_per_node": 1, "gpu_type": "a100"},
        ]
    },
}


@st.composite
def edge_jobs(draw: st.DrawFn, max_gpus: int, max_memory_gib: float) -> list[JobSpec]:
    """2-6 jobs that fit an empty cluster of ``max_gpus`` GPUs of at least
    ``max_memory_gib``, with ids, arrivals and durations at and near the limits."""
    count = draw(st.integers(2, 6))
    ids = draw(
        st.lists(
            st.sampled_from([0, MAX_JOB_ID, MAX_JOB_ID - 1]) | st.integers(0, MAX_JOB_ID),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    arrival = st.sampled_from([0.0, MAX_ARRIVAL_S, MAX_ARRIVAL_S - 1]) | st.floats(
        0, MAX_ARRIVAL_S, allow_nan=False
    )
    duration = st.sampled_from([1.0, MAX_DURATION_S]) | st.floats(1.0, MAX_DURATION_S)
    return [
        make_job(
            job_id,
            draw(arrival),
            draw(st.integers(1, max_gpus)),
            draw(duration),
            draw(st.sampled_from(sorted(MODELS))),
            memory_gib=draw(st.floats(0.5, max_memory_gib)),
        )
        for job_id in ids
    ]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-9, abs=1e-9)
    return bool(a == b)


@FUZZ
@given(
    cluster=st.sampled_from(sorted(_CLUSTERS)),
    policy=st.sampled_from(["fifo_pack", "thesis", "tiresias", "gandiva"]),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_env_and_headless_agree_on_workloads_at_the_limits(
    cluster: str, policy: str, seed: int, data: st.DataObject
) -> None:
    layout = make_cluster(_CLUSTERS[cluster])
    # every worker fits the smallest GPU: all placements are possible on every path
    jobs = data.draw(edge_jobs(min(4, layout.num_gpus), float(layout.gpu_memory_gib.min())))
    env = GPUShareEnv(
        {"cluster": _CLUSTERS[cluster], "jobs": jobs, "windows": {"pending": 64, "running": 64}}
    )
    episode = rollout(baselines.make(policy, env), env, seed=seed)
    env.simulator.check_invariants()
    assert episode.terminated, episode.info  # no cap binds 6 jobs
    assert episode.info["jobs_done"] == len(jobs)
    _, noise = episode_streams(seed)
    result = run_headless(
        jobs, layout, baselines.make(policy), env.config.sim_config(), rng=noise, max_events=10**5
    )
    assert not result.truncated and len(result.records) == len(jobs)
    for key, value in episode.metrics.items():
        assert _same(value, result.metrics[key]), (key, value, result.metrics[key])
    # each finished job's record is the same too, ids at the int64 edge included
    by_id = {record.job_id: record for record in result.records}
    for record in env.simulator.records():
        assert record == by_id[record.job_id]


@FUZZ
@given(
    workers=st.integers(2, 7),  # the small mixed cluster has 7 GPUs
    memory_gib=st.floats(16.5, 40.0),
    job_id=st.sampled_from([0, 7, MAX_JOB_ID]),
)
def test_a_job_no_gpu_set_holds_is_refused_alike_on_every_path(
    workers: int, memory_gib: float, job_id: int
) -> None:
    cluster = _CLUSTERS["mixed"]  # one A100 (40 GiB): no two workers above 16 GiB fit
    unfit = make_job(job_id, 0.0, workers, 100.0, "resnet50", memory_gib=memory_gib)
    fits = make_job(job_id ^ 1, 0.0, 1, 100.0, "resnet50")
    expected = rf"job {job_id} can never fit the cluster.*the cluster has only 1"
    with pytest.raises(UnfitJobError, match=expected):
        GPUShareEnv({"cluster": cluster, "on_unfit": "error"}).reset(
            seed=0, options={"jobs": [unfit, fits]}
        )
    with pytest.raises(ValueError, match=expected):
        run_headless([unfit, fits], make_cluster(cluster), baselines.make("fifo_pack"))
    with pytest.raises(ValueError, match=expected):
        Simulator([unfit, fits], make_cluster(cluster))
    # the env's default drops it at reset, names it, and runs the rest to the end
    env = GPUShareEnv({"cluster": cluster})
    episode = rollout(
        baselines.make("fifo_pack", env), env, seed=0, options={"jobs": [unfit, fits]}
    )
    assert episode.reset_info["rejected_job_ids"] == (job_id,)
    assert episode.terminated and episode.info["jobs_done"] == 1


def test_a_simulator_takes_only_a_list_of_jobspec() -> None:
    cluster = make_cluster("tiny")
    good = make_job(0, 0.0, 1, 10.0, "resnet50")
    for jobs, words in (
        ([1], r"jobs\[0\] must be a JobSpec, got 1"),
        ([good, "job"], r"jobs\[1\] must be a JobSpec, got 'job'"),
        ("jobs", "jobs must be a list of JobSpec, got str"),
        (None, "jobs must be a list of JobSpec, got NoneType"),
    ):
        with pytest.raises(TypeError, match=words):
            Simulator(jobs, cluster)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the workload has no jobs"):
        Simulator([], cluster)
    assert Simulator(iter([good]), cluster).jobs[0].spec == good  # any iterable of jobs
