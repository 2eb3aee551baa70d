"""The thesis and Philly generators: determinism, streams, and the Philly figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpushare_env.sim.catalog import DEFAULT_MODELS
from gpushare_env.workloads import (
    EMPIRICAL,
    PARAMETRIC,
    PHILLY_BURSTY,
    philly_mean_gap_s,
    philly_workload,
    thesis_workload,
)
from gpushare_env.workloads.distributions import (
    PHILLY_DURATION_HOURS,
    PHILLY_DURATION_QUANTILES,
    PHILLY_GPU_MIX,
    PHILLY_INTERARRIVAL_QUANTILES,
)

HOUR = 3600.0


def _columns(jobs):
    return {
        "arrival_s": np.array([j.arrival_s for j in jobs]),
        "num_gpus": np.array([j.num_gpus for j in jobs]),
        "duration_s": np.array([j.solo_duration_s for j in jobs]),
        "model": [j.model for j in jobs],
    }


def _offered_load(jobs, cluster_gpus):
    cols = _columns(jobs)
    work = float(np.sum(cols["num_gpus"] * cols["duration_s"]))
    return work, cluster_gpus * float(cols["arrival_s"][-1] - cols["arrival_s"][0])


GENERATORS = {
    "thesis_interval": lambda seed: thesis_workload(rng=np.random.default_rng(seed)),
    "thesis_poisson": lambda seed: thesis_workload(
        rng=np.random.default_rng(seed), arrival="poisson"
    ),
    "philly": lambda seed: philly_workload(500, np.random.default_rng(seed)),
    "philly_parametric": lambda seed: philly_workload(
        500, np.random.default_rng(seed), duration_model="parametric"
    ),
    "philly_bursty": lambda seed: philly_workload(
        500, np.random.default_rng(seed), arrival="bursty"
    ),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_same_seed_same_jobs_different_seed_different_jobs(name):
    make = GENERATORS[name]
    assert make(0) == make(0)
    assert make(0) != make(1)
    assert make(0)[:20] != make(1)[:20]


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_jobs_are_sorted_and_numbered(name):
    jobs = GENERATORS[name](3)
    assert [j.job_id for j in jobs] == list(range(len(jobs)))
    keys = [(j.arrival_s, j.job_id) for j in jobs]
    assert keys == sorted(keys)
    assert jobs[0].arrival_s == 0.0
    assert {j.model for j in jobs} == set(DEFAULT_MODELS)


def test_generators_do_not_touch_global_numpy_state():
    # the legacy global state is what must stay untouched, so the test reads it
    before = np.random.get_state()  # noqa: NPY002
    philly_workload(1000, 0, arrival="bursty")
    thesis_workload(rng=0, arrival="poisson")
    after = np.random.get_state()  # noqa: NPY002
    assert np.array_equal(after[1], before[1]) and after[2] == before[2]


def test_int_seed_equals_default_rng_of_that_seed():
    assert philly_workload(200, 5) == philly_workload(200, np.random.default_rng(5))


def test_changing_the_arrival_process_keeps_sizes_lengths_and_models():
    interval = _columns(thesis_workload(rng=7))
    poisson = _columns(thesis_workload(rng=7, arrival="poisson"))
    for key in ("num_gpus", "duration_s"):
        assert np.array_equal(interval[key], poisson[key])
    assert interval["model"] == poisson["model"]
    assert not np.array_equal(interval["arrival_s"], poisson["arrival_s"])

    smooth = _columns(philly_workload(300, 7))
    bursty = _columns(philly_workload(300, 7, arrival="bursty"))
    assert np.array_equal(smooth["num_gpus"], bursty["num_gpus"])
    assert smooth["model"] == bursty["model"]


def test_changing_the_duration_model_keeps_arrivals_and_models():
    empirical = _columns(philly_workload(300, 11, mean_gap_s=60.0))
    parametric = _columns(philly_workload(300, 11, mean_gap_s=60.0, duration_model="parametric"))
    assert np.array_equal(empirical["arrival_s"], parametric["arrival_s"])
    assert empirical["model"] == parametric["model"]
    assert not np.array_equal(empirical["duration_s"], parametric["duration_s"])


def test_empirical_gpu_mix_over_20k_jobs():
    gpus = _columns(philly_workload(20_000, 2024))["num_gpus"]
    for count, share in PHILLY_GPU_MIX.items():
        assert abs(np.mean(gpus == count) - share) <= 0.015, count
    assert set(np.unique(gpus).tolist()) == {1, 2, 4, 8}


@pytest.mark.parametrize("count", [1, 2, 4, 8])
def test_empirical_length_quantiles_match_the_table(count):
    rng = np.random.default_rng(count)
    hours = EMPIRICAL.sample_durations_s(np.full(50_000, count), rng) / HOUR
    table = PHILLY_DURATION_HOURS[count]
    for level, expected in zip(PHILLY_DURATION_QUANTILES[1:-1], table[1:-1], strict=True):
        assert np.quantile(hours, level) == pytest.approx(expected, rel=0.05), level
    assert hours.min() >= table[0]
    assert hours.max() <= table[-1]


def test_generated_median_lengths_per_gpu_count_within_ten_percent():
    cols = _columns(philly_workload(20_000, 99))
    for count in (1, 4, 8):  # 2-GPU jobs are 2%: too few here for a 10% median check
        hours = cols["duration_s"][cols["num_gpus"] == count] / HOUR
        assert np.median(hours) == pytest.approx(PHILLY_DURATION_HOURS[count][6], rel=0.10)


def test_parametric_fit():
    cols = _columns(philly_workload(20_000, 5, duration_model="parametric"))
    for count, share in {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}.items():
        assert abs(np.mean(cols["num_gpus"] == count) - share) <= 0.015, count
    log_minutes = np.log10(cols["duration_s"] / 60.0)
    # solo durations are whole iterations: allow a step of the slowest model (0.25 s)
    assert log_minutes.min() >= 1.5 - 1e-3
    assert log_minutes.max() <= 4.0 + 1e-3
    assert np.mean(log_minutes < 3.0) == pytest.approx(0.8, abs=0.01)
    # uniform in log10 within each part: half of the 0.8 lies below the midpoint 2.25
    assert np.mean(log_minutes < 2.25) == pytest.approx(0.4, abs=0.01)
    assert np.mean(log_minutes < 3.5) == pytest.approx(0.9, abs=0.01)


def test_parametric_mean_matches_closed_form():
    # E[10**U(a, b)] = (10**b - 10**a) / ((b - a) ln 10)
    minutes = 0.8 * (10**3 - 10**1.5) / (1.5 * math.log(10)) + 0.2 * (10**4 - 10**3) / math.log(10)
    for count in (1, 2, 4, 8):
        assert PARAMETRIC.mean_duration_s(count) == pytest.approx(60 * minutes, rel=1e-12)


@pytest.mark.parametrize("model", [EMPIRICAL, PARAMETRIC])
@pytest.mark.parametrize("max_quantile", [1.0, 0.95, 0.5])
def test_analytic_mean_matches_sample_mean(model, max_quantile):
    rng = np.random.default_rng(1)
    gpus = model.sample_gpus(400_000, rng)
    sample = np.mean(gpus * model.sample_durations_s(gpus, rng, max_quantile))
    assert sample == pytest.approx(model.mean_gpu_seconds(None, max_quantile), rel=0.03)


def test_poisson_load_target_parametric_5k_jobs():
    for seed in range(5):
        jobs = philly_workload(
            5000, seed, duration_model="parametric", load=0.8, num_cluster_gpus=512
        )
        work, capacity = _offered_load(jobs, 512)
        assert work / capacity == pytest.approx(0.8, rel=0.10), seed


@pytest.mark.parametrize(("arrival", "tolerance"), [("poisson", 0.10), ("bursty", 0.15)])
def test_load_target_empirical_pooled(arrival, tolerance):
    # Philly's lengths are so heavy-tailed (a few 8-GPU jobs of 60 days) that the GPU-time
    # of one 5k-job sample varies by ~6%; pool seeds to test the arrival rate itself.
    total_work = total_capacity = 0.0
    for seed in range(20):
        jobs = philly_workload(5000, seed, arrival=arrival, load=1.5, num_cluster_gpus=1000)
        work, capacity = _offered_load(jobs, 1000)
        total_work += work
        total_capacity += capacity
    assert total_work / total_capacity == pytest.approx(1.5, rel=tolerance)


def test_mean_gap_formula():
    gpu_seconds = EMPIRICAL.mean_gpu_seconds()
    assert philly_mean_gap_s(0.5, 100) == pytest.approx(gpu_seconds / 50.0)
    assert philly_mean_gap_s(0.5, 100, duration_scale=0.1) == pytest.approx(gpu_seconds / 500.0)


def test_bursty_gaps_have_philly_quantiles_at_the_natural_rate():
    gaps = PHILLY_BURSTY.sample_gaps(
        200_000, PHILLY_BURSTY.natural_mean_gap_s, np.random.default_rng(0)
    )
    for level, expected in PHILLY_INTERARRIVAL_QUANTILES.items():
        assert np.quantile(gaps, level) == pytest.approx(expected, rel=0.10), level
        assert PHILLY_BURSTY.cdf(expected) == pytest.approx(level, abs=1e-9)


def test_bursty_gaps_scale_to_the_mean_and_are_correlated():
    rng = np.random.default_rng(1)
    gaps = PHILLY_BURSTY.sample_gaps(100_000, 30.0, rng)
    factor = 30.0 / PHILLY_BURSTY.natural_mean_gap_s
    assert np.median(gaps) == pytest.approx(19.0 * factor, rel=0.1)
    log_gaps = np.log(gaps)
    lag1 = np.corrcoef(log_gaps[:-1], log_gaps[1:])[0, 1]
    assert lag1 > 0.3  # short gaps follow short gaps: bursts, not i.i.d. draws
    shuffled = rng.permutation(log_gaps)
    assert abs(np.corrcoef(shuffled[:-1], shuffled[1:])[0, 1]) < 0.05


def test_thesis_workload_shape():
    for seed in (0, 1, 2):
        jobs = thesis_workload(rng=seed)
        cols = _columns(jobs)
        assert len(jobs) == 100
        assert np.array_equal(cols["arrival_s"], np.arange(100.0))
        assert cols["num_gpus"].max() <= 16
        assert set(cols["model"]) <= set(DEFAULT_MODELS)
        # durations in minutes: none beyond the 95th percentile of the 8-GPU row, scaled
        assert cols["duration_s"].max() <= PHILLY_DURATION_HOURS[8][11] * 60 + 1.0
        assert cols["duration_s"].min() >= 60.0 - 1.0
        # a few hours of work for 16 GPUs
        hours_on_16 = np.sum(cols["num_gpus"] * cols["duration_s"]) / 16 / HOUR
        assert 1.0 < hours_on_16 < 12.0


def test_thesis_poisson_mean_gap():
    arrivals = np.concatenate(
        [_columns(thesis_workload(rng=s, arrival="poisson"))["arrival_s"] for s in range(20)]
    )
    gaps = np.diff(arrivals)
    gaps = gaps[gaps > 0]  # drop the jumps between workloads
    assert np.mean(gaps) == pytest.approx(60.0, rel=0.1)


def test_max_gpus_conditions_the_mix():
    gpus = _columns(philly_workload(20_000, 3, max_gpus=4))["num_gpus"]
    assert gpus.max() == 4
    assert np.mean(gpus == 1) == pytest.approx(0.762 / 0.875, abs=0.015)
    with pytest.raises(ValueError, match="max_gpus"):
        philly_workload(10, 0, max_gpus=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_jobs": 0}, "num_jobs"),
        ({"models": ("resnet50", "bert")}, "unknown models"),
        ({"models": ()}, "models"),
        ({"arrival": "interval"}, "arrival"),
        ({"load": 0.0}, "load"),
        ({"duration_scale": -1.0}, "duration_scale"),
        ({"max_duration_quantile": 0.0}, "max_duration_quantile"),
        ({"duration_model": "lognormal"}, "duration_model"),
    ],
)
def test_philly_rejects_bad_arguments(kwargs, message):
    args = {"num_jobs": 10, "rng": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        philly_workload(**args)


def test_thesis_rejects_bad_arrival():
    with pytest.raises(ValueError, match="arrival"):
        thesis_workload(rng=0, arrival="bursty")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="interval_s"):
        thesis_workload(rng=0, interval_s=0.0)


def test_100k_jobs_generate_sorted_with_unique_ids():
    # Speed is reported by gpushare_eval/cli/benchmark.py (generate_s), not asserted here.
    jobs = philly_workload(100_000, 0, arrival="bursty")
    assert len(jobs) == 100_000
    assert len({j.job_id for j in jobs}) == 100_000
    keys = [(j.arrival_s, j.job_id) for j in jobs]
    assert keys == sorted(keys)
