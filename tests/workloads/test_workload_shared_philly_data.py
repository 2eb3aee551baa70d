"""The generator against Philly's own (duration, GPU count) samples in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpushare_env.workloads import make_workload, philly_workload, read_duration_gpus_csv
from gpushare_env.workloads.distributions import PHILLY_DURATION_HOURS, PHILLY_GPU_MIX

# The shared folder beside the repository: the project does not copy the file.
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "philly_duration_gpus.csv"

pytestmark = pytest.mark.skipif(
    not DATA.is_file(), reason=f"Philly samples not found at {DATA} (the shared data folder)"
)
HOUR = 3600.0


@pytest.fixture(scope="module")
def trace_jobs():
    return read_duration_gpus_csv(DATA, 0, load=0.8, num_cluster_gpus=2048)


def _gpu_shares(jobs):
    gpus = np.array([j.num_gpus for j in jobs])
    return {count: float(np.mean(gpus == count)) for count in (1, 2, 4, 8)}


def test_loads_every_row_as_a_seeded_trace(trace_jobs):
    assert len(trace_jobs) == 33_192
    assert trace_jobs[0].arrival_s == 0.0
    assert [j.job_id for j in trace_jobs] == list(range(len(trace_jobs)))
    assert [j.num_gpus for j in trace_jobs[:3]] == [1, 1, 1]
    assert trace_jobs[0].solo_duration_s == pytest.approx(860662, abs=1.0)  # first row
    again = read_duration_gpus_csv(DATA, 0, mean_gap_s=30.0, max_jobs=500)
    assert again == read_duration_gpus_csv(DATA, 0, mean_gap_s=30.0, max_jobs=500)
    other = read_duration_gpus_csv(DATA, 1, mean_gap_s=30.0, max_jobs=500)
    assert [j.arrival_s for j in other] != [j.arrival_s for j in again]
    assert [j.num_gpus for j in other] == [j.num_gpus for j in again]  # sizes are the data's
    assert [j.num_gpus for j in again] == [j.num_gpus for j in trace_jobs[:500]]


def test_poisson_arrivals_offer_the_target_load(trace_jobs):
    work = sum(j.num_gpus * j.solo_duration_s for j in trace_jobs)
    span = trace_jobs[-1].arrival_s - trace_jobs[0].arrival_s
    assert work / (2048 * span) == pytest.approx(0.8, rel=0.05)


def test_gpu_mix_of_the_data_matches_the_generator(trace_jobs):
    data = _gpu_shares(trace_jobs)
    generated = _gpu_shares(philly_workload(len(trace_jobs), 7))
    for count in (1, 2, 4, 8):
        assert data[count] == pytest.approx(PHILLY_GPU_MIX[count], abs=0.005), count
        assert generated[count] == pytest.approx(data[count], abs=0.02), count


def test_length_quantiles_of_the_data_match_the_generator(trace_jobs):
    data_gpus = np.array([j.num_gpus for j in trace_jobs])
    data_hours = np.array([j.solo_duration_s for j in trace_jobs]) / HOUR
    generated = philly_workload(len(trace_jobs), 8)
    gen_gpus = np.array([j.num_gpus for j in generated])
    gen_hours = np.array([j.solo_duration_s for j in generated]) / HOUR
    # Quantiles of the whole sample: p10 1.27 h, p50 4.0 h, p90 69.5 h. The
    # generator interpolates each GPU count's table linearly in hours, which puts too much
    # mass high inside the wide 0.9-0.95 segments: its pooled p90 is ~78 h (12% high).
    for level, hours, tolerance in ((0.1, 1.27, 0.05), (0.5, 4.0, 0.05), (0.9, 69.5, 0.15)):
        assert np.quantile(data_hours, level) == pytest.approx(hours, rel=0.02)
        assert np.quantile(gen_hours, level) == pytest.approx(hours, rel=tolerance)
    for count in (1, 4, 8):
        data_median = np.median(data_hours[data_gpus == count])
        assert data_median == pytest.approx(PHILLY_DURATION_HOURS[count][6], rel=0.01)
        assert np.median(gen_hours[gen_gpus == count]) == pytest.approx(data_median, rel=0.10)


def test_make_workload_recognises_the_file(trace_jobs):
    jobs = make_workload({"path": str(DATA), "load": 0.8}, 0, num_jobs=100, cluster_gpus=2048)
    assert len(jobs) == 100
    assert [j.num_gpus for j in jobs] == [j.num_gpus for j in trace_jobs[:100]]
