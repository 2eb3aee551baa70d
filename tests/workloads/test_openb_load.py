"""An openb pod list at a load where placement matters: ``openb_jobs``'s ``max_gpus``,
``max_duration_quantile`` and ``repeat``, and ``WorkloadConfig``'s fields that set them."""

from __future__ import annotations

import numpy as np
import pytest

from gpushare_env.workloads import WorkloadConfig
from gpushare_env.workloads.openb import openb_jobs, shipped_pod_list_path

POD_LIST = shipped_pod_list_path()


def test_wide_tasks_are_left_out_after_the_arrivals_are_set():
    whole = openb_jobs(POD_LIST, load=0.8, num_cluster_gpus=189)
    narrow = openb_jobs(POD_LIST, load=0.8, num_cluster_gpus=189, max_gpus=4)
    # the 43 tasks of 8 GPUs; the others arrive as they would with them
    assert narrow.too_wide == 43 and len(narrow.jobs) == len(whole.jobs) - 43
    assert max(job.num_gpus for job in narrow.jobs) == 4
    assert narrow.time_scale == whole.time_scale
    arrival = {job.job_id: job.arrival_s for job in whole.jobs}
    assert all(arrival[job.job_id] == job.arrival_s for job in narrow.jobs)
    assert "43 too wide" in narrow.describe()


def test_the_longest_tasks_are_left_out_by_quantile():
    whole = openb_jobs(POD_LIST)
    short = openb_jobs(POD_LIST, max_duration_quantile=0.9)
    limit = np.quantile([job.solo_duration_s for job in whole.jobs], 0.9)
    assert short.too_long == sum(1 for job in whole.jobs if job.solo_duration_s > limit) > 700
    assert len(short.jobs) == len(whole.jobs) - short.too_long
    assert max(job.solo_duration_s for job in short.jobs) <= limit
    assert openb_jobs(POD_LIST, max_duration_quantile=1).jobs == whole.jobs


def test_repeat_plays_the_trace_in_a_row_at_the_same_rate():
    one = openb_jobs(POD_LIST, load=0.9, num_cluster_gpus=189, max_duration_quantile=0.9)
    three = openb_jobs(
        POD_LIST, load=0.9, num_cluster_gpus=189, max_duration_quantile=0.9, repeat=3
    )
    n = len(one.jobs)
    assert len(three.jobs) == 3 * n and three.repeat == 3
    ids = [job.job_id for job in three.jobs]
    assert len(set(ids)) == len(ids)
    arrivals = [job.arrival_s for job in three.jobs]
    assert arrivals == sorted(arrivals)
    # every copy is the first, shifted by a period: the span plus the mean gap
    span = three.jobs[n - 1].arrival_s
    period = three.jobs[n].arrival_s
    assert period == pytest.approx(span * n / (n - 1))
    for copy in (1, 2):
        for a, b in zip(three.jobs[:n:97], three.jobs[copy * n :: 97], strict=False):
            assert (b.arrival_s, b.solo_duration_s, b.request) == pytest.approx(
                (a.arrival_s + copy * period, a.solo_duration_s, a.request)
            )
    # the load is the whole's: about the same rate as one copy
    work = sum(j.num_gpus * j.intensity * j.solo_duration_s for j in three.jobs)
    assert work / (189 * arrivals[-1]) == pytest.approx(0.9)
    assert three.time_scale == pytest.approx(one.time_scale, rel=1e-3)
    assert "the trace played 3 times" in three.describe()


def test_bad_values_are_refused_with_what_is_allowed(tmp_path):
    with pytest.raises(ValueError, match="repeat must be an int >= 1"):
        openb_jobs(POD_LIST, repeat=0)
    with pytest.raises(
        ValueError, match=r"max_duration_quantile must be None or a number in \(0, 1\]"
    ):
        openb_jobs(POD_LIST, max_duration_quantile=0)
    with pytest.raises(ValueError, match="max_gpus must be None or an int >= 0"):
        openb_jobs(POD_LIST, max_gpus=-1)
    with pytest.raises(ValueError, match="max_gpus=0 leaves out every job"):
        openb_jobs(POD_LIST, max_gpus=0, cpu_only=False)
    with pytest.raises(ValueError, match=r"workload\.repeat must be an int >= 1"):
        WorkloadConfig(kind="trace", path=str(POD_LIST), repeat=1.5)
    with pytest.raises(ValueError, match=r"workload\.repeat must be 1 unless kind is 'trace'"):
        WorkloadConfig(kind="philly", repeat=2)
    csv = tmp_path / "jobs.csv"
    csv.write_text("duration_s,num_gpus\n60,1\n")
    other = WorkloadConfig(kind="trace", path=str(csv), repeat=2)
    with pytest.raises(ValueError, match="repeat applies to openb pod lists only"):
        other.generate(0)


def test_the_workload_config_passes_them_on():
    spec = {
        "path": str(POD_LIST),
        "max_duration_quantile": 0.9,
        "max_gpus": 4,
        "repeat": 2,
        "load": 0.95,
    }
    jobs = WorkloadConfig.from_any(spec).generate(0, cluster_gpus=189)
    want = openb_jobs(
        POD_LIST,
        load=0.95,
        num_cluster_gpus=189,
        max_gpus=4,
        max_duration_quantile=0.9,
        repeat=2,
    )
    assert jobs == want.jobs
