"""The openb trace over time: its tasks as jobs (``openb_jobs``), the ``alibaba_openb``
cluster preset, and both run under the requested-shares model, headless and in the env."""

from __future__ import annotations

from collections import Counter

import pytest

from gpushare_env.sim import make_cluster
from gpushare_env.sim.catalog import scaling_efficiency
from gpushare_env.workloads import TraceError, WorkloadConfig
from gpushare_env.workloads.openb import (
    MILLI_PER_GPU,
    alibaba_openb_nodes,
    is_openb_pod_list,
    openb_jobs,
    read_openb_pods,
    shipped_pod_list_path,
)

LONG_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


def test_the_cluster_preset_is_the_shipped_node_list():
    cluster = make_cluster("alibaba_openb")
    nodes = alibaba_openb_nodes()
    want = Counter((n.num_gpu, n.model, n.cpu_milli, n.memory_mib) for n in nodes)
    got = Counter()
    for node, row in enumerate(cluster.node_gpus):
        gpus = [g for g in row if g >= 0]
        models = {cluster.gpu_model[g] for g in gpus}
        assert len(models) == 1
        key = (len(gpus), models.pop(), cluster.node_cpu_milli[node], cluster.node_memory_mib[node])
        got[key] += 1
    assert got == want
    assert (cluster.num_nodes, cluster.num_gpus) == (1213, 6212)
    assert set(cluster.gpu_speed) == {1.0}  # durations are the trace's wall times


def test_the_default_pod_list_as_jobs_keeps_every_task_with_a_known_duration():
    read = openb_jobs(shipped_pod_list_path())
    tasks = read_openb_pods(shipped_pod_list_path())
    # 8,152 tasks: 897 never scheduled (36 of them CPU-only), 34 cut at the end (2)
    assert (read.cpu_only, read.never_scheduled, read.cut_at_end, read.no_times) == (0, 897, 34, 0)
    assert len(read.jobs) + read.never_scheduled + read.cut_at_end == len(tasks)
    assert read.num_cpu_only == 1050
    assert read.time_scale == 1.0
    arrivals = [job.arrival_s for job in read.jobs]
    assert arrivals == sorted(arrivals) and arrivals[0] == 0.0
    first = min(t.creation_time for t in tasks if t.scheduled_time is not None)
    cpu_only = [job for job in read.jobs if job.num_gpus == 0]
    for job in read.jobs[:: len(read.jobs) // 50] + cpu_only[:: len(cpu_only) // 10]:
        task = tasks[job.job_id]
        assert job.solo_duration_s == pytest.approx(task.deletion_time - task.scheduled_time)
        assert job.arrival_s == task.creation_time - first
        assert job.request is not None
        assert (job.request.gpu_milli, job.request.cpu_milli, job.request.host_memory_mib) == (
            task.gpu_milli,
            task.cpu_milli,
            task.memory_mib,
        )
        assert job.num_gpus == task.num_gpu
        assert job.intensity == task.gpu_milli / MILLI_PER_GPU
        assert job.iter_time_s == (scaling_efficiency(job.num_gpus) if job.num_gpus else 1.0)
    assert all(job.memory_gib == 0.0 and job.intensity == 0.0 for job in cpu_only)


def test_cpu_only_tasks_can_be_left_out_and_are_counted():
    read = openb_jobs(shipped_pod_list_path(), cpu_only=False)
    # 1,088 CPU-only, then 861 GPU tasks never scheduled and 32 cut at the end
    assert (read.cpu_only, read.never_scheduled, read.cut_at_end) == (1088, 861, 32)
    assert len(read.jobs) == 8152 - 1088 - 861 - 32 and read.num_cpu_only == 0
    assert "1,088 CPU-only" in read.describe()


def test_arrivals_are_rescaled_to_the_offered_load():
    read = openb_jobs(shipped_pod_list_path(), load=0.9, num_cluster_gpus=6212, max_jobs=500)
    jobs = read.jobs
    assert len(jobs) == 500
    work = sum(j.num_gpus * j.intensity * j.solo_duration_s for j in jobs)
    span = jobs[-1].arrival_s - jobs[0].arrival_s
    assert work / (6212 * span) == pytest.approx(0.9)
    # a trace workload on a known cluster rescales; without one it keeps the trace's times
    workload = WorkloadConfig.from_any(str(shipped_pod_list_path()))
    assert (
        workload.generate(0, num_jobs=500) == openb_jobs(shipped_pod_list_path(), max_jobs=500).jobs
    )
    on_cluster = workload.generate(0, num_jobs=500, cluster_gpus=6212)
    offered = openb_jobs(
        shipped_pod_list_path(), load=workload.load, num_cluster_gpus=6212, max_jobs=500
    )
    assert on_cluster == offered.jobs


def test_a_pod_list_with_nothing_to_run_over_time_is_refused(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text(
        LONG_HEADER
        + "p0,1000,1024,0,0,,LS,Pending,0,100,\n"  # CPU-only, never scheduled
        + "p1,1000,1024,1,500,,LS,Pending,5,100,\n"  # never scheduled
        + "p2,1000,1024,1,500,,LS,Running,5,100,6\n"  # cut: deleted at the last timestamp
    )
    assert is_openb_pod_list(path)
    with pytest.raises(TraceError, match=r"pods\.csv.*no task with a known duration"):
        openb_jobs(path)
    with pytest.raises(ValueError, match="load needs num_cluster_gpus"):
        openb_jobs(shipped_pod_list_path(), load=0.9)
    other = tmp_path / "jobs.csv"
    other.write_text("job_id,arrival_s\n0,0\n")
    assert not is_openb_pod_list(other)


def test_a_task_no_node_can_hold_follows_the_envs_on_unfit_rule(tmp_path):
    import gymnasium as gym

    from gpushare_env.workloads.jobs import UnfitJobError

    path = tmp_path / "pods.csv"
    path.write_text(
        LONG_HEADER
        + "p0,1000,1024,1,500,,LS,Succeeded,0,100,1\n"
        + "p1,1000,1024,2,1000,A10,LS,Succeeded,5,200,6\n"  # A10 nodes hold one GPU
        + "p2,1000,1024,1,250,T4,LS,Succeeded,7,300,8\n"
        + "p3,1000,1024,1,250,,LS,Running,9,400,9\n"  # ends the trace: cut
    )
    jobs = openb_jobs(path).jobs
    assert [job.job_id for job in jobs] == [0, 1, 2]
    config = {"cluster": "alibaba_openb", "jobs": jobs, "sharing": "shares"}
    _, info = gym.make("GPUShare-v0", config=config).reset(seed=0)
    assert (info["num_jobs"], info["rejected_jobs"], info["rejected_job_ids"]) == (2, 1, (1,))
    with pytest.raises(UnfitJobError, match=r"job 1 can never fit.*A10"):
        gym.make("GPUShare-v0", config={**config, "on_unfit": "error"}).reset(seed=0)


def test_cpu_only_tasks_run_under_shares_and_are_rejected_under_the_memory_model(tmp_path):
    import gymnasium as gym
    import numpy as np

    from gpushare_env.sim.decisions import Schedule

    path = tmp_path / "pods.csv"
    path.write_text(
        LONG_HEADER
        + "p0,1000,1024,1,500,,LS,Succeeded,0,100,1\n"
        + "p1,90000,1024,0,0,,LS,Succeeded,2,52,2\n"  # CPU-only: 50 s on a node's CPU
        + "p2,90000,1024,0,0,,LS,Succeeded,3,43,3\n"  # 40 s; no node holds both at once
        + "p3,1000,1024,1,250,T4,LS,Succeeded,7,300,8\n"
        + "p4,1000,1024,1,250,,LS,Running,9,400,9\n"  # ends the trace: cut
    )
    jobs = openb_jobs(path).jobs
    assert [job.num_gpus for job in jobs] == [1, 0, 0, 1]
    one_node = {"groups": [{"nodes": 1, "gpus_per_node": 2, "gpu_type": "v100", "model": "T4",
                            "cpu_milli": 96_000, "memory_mib": 65_536}]}  # fmt: skip
    config = {"cluster": one_node, "jobs": jobs, "sharing": "shares"}
    env = gym.make("GPUShare-v0", config=config)
    env.reset(seed=0)
    terminated = False
    while not terminated:  # the first placement the mask allows, else let time run
        valid = np.flatnonzero(env.unwrapped.action_masks())
        places = [a for a in valid if isinstance(env.unwrapped.decode_action(a), Schedule)]
        action = places[0] if places else valid[-1]
        _, _, terminated, truncated, _ = env.step(int(action))
        assert not truncated
    records = {r.job_id: r for r in env.unwrapped.simulator.records()}
    assert set(records) == {0, 1, 2, 3}
    # the second CPU-only task waits for the first's CPU, then runs its 40 s
    assert (records[1].first_start_s, records[1].finish_s) == (2.0, 52.0)
    assert (records[2].first_start_s, records[2].finish_s) == (52.0, 92.0)
    assert records[1].gpu_seconds == records[2].gpu_seconds == 0.0
    memory = gym.make("GPUShare-v0", config={**config, "sharing": "memory"})
    _, info = memory.reset(seed=0)
    assert (info["num_jobs"], info["rejected_jobs"], info["rejected_job_ids"]) == (2, 2, (1, 2))
