"""A job's speed on each MIG profile (gpushare_env.sim.mig_speed)."""

from __future__ import annotations

import statistics

import pytest

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.mig import MIG_GPU_MODELS, MigError, get_mig_model
from gpushare_env.sim.mig_speed import (
    GLOBAL_COMPUTE_SHARE,
    USABLE_MEMORY_FRACTION,
    ProfileFit,
    amdahl_speed,
    fit_compute_share,
    job_speed_table,
    mapping_errors,
    miso_job_key,
    miso_measured_speeds,
    miso_speed_tables,
    profile_fits,
    usable_memory_gib,
    why_unfit,
)
from gpushare_env.sim.types import JobSpec, Request
from gpushare_env.workloads.miso import miso_jobs

A100 = get_mig_model("A100-40GB")
H100 = get_mig_model("H100-80GB")
A30 = get_mig_model("A30")

#: MISO's 32 jobs, as (model, batch size).
MISO_KEYS = sorted(miso_speed_tables())


def job(model: str, batch: int, memory_gib: float = 4.0, num_gpus: int = 1) -> JobSpec:
    return JobSpec(
        job_id=7,
        arrival_s=0.0,
        model=model,
        batch_size=batch,
        num_gpus=num_gpus,
        iterations=100,
        memory_gib=memory_gib,
        intensity=1.0,
        iter_time_s=0.1,
    )


def miso_job(key: str, **kwargs: float) -> JobSpec:
    model, batch = key.split("_train")
    return job(model, int(batch), **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- fit


def test_usable_memory_is_95_percent_of_the_nominal() -> None:
    assert USABLE_MEMORY_FRACTION == 0.95
    assert usable_memory_gib(A100.profile("1g.5gb")) == pytest.approx(4.75)
    assert usable_memory_gib(H100.profile("1g.10gb")) == pytest.approx(9.5)


def test_profile_fits_and_its_reason() -> None:
    small = A100.profile("1g.5gb")
    ok = profile_fits(4.7, small)
    assert ok and ok == ProfileFit(True) and ok.reason == ""
    no = profile_fits(4.8, small)
    assert not no and not no.fits
    assert "4.8 GiB" in no.reason and "1g.5gb" in no.reason and "5 GiB" in no.reason
    assert "4.75 GiB usable" in no.reason
    assert profile_fits(4.8, A100.profile("1g.10gb"))
    assert profile_fits(38.0, A100.profile("7g.40gb"))
    assert not profile_fits(38.5, A100.profile("7g.40gb"))
    assert not profile_fits(6.0, A30.profile("1g.6gb"))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "4"])
def test_profile_fits_refuses_a_bad_memory(bad: object) -> None:
    with pytest.raises(ValueError, match="job memory"):
        profile_fits(bad, A100.profile("1g.5gb"))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- MISO's table


def test_miso_jobs_are_recognised_by_model_and_batch() -> None:
    assert len(MISO_KEYS) == 32
    assert miso_job_key(job("resnet", 64)) == "resnet_train64"
    assert miso_job_key(job("resnet_train64", 1)) == "resnet_train64"
    assert miso_job_key(job("resnet", 65)) is None
    assert miso_job_key(job("resnet50", 64)) is None


def test_medians_of_miso_data_reproduced() -> None:
    """MISO's medians over its 32 jobs (0.32 / 0.47 / 0.66 / 0.75); 11 do not fit 1g.5gb."""
    tables = {key: job_speed_table(miso_job(key), A100) for key in MISO_KEYS}
    expected = {"1g.5gb": (0.32, 21), "2g.10gb": (0.47, 28), "3g.20gb": (0.66, 32)}
    expected["4g.20gb"] = (0.75, 32)
    for profile, (median, fit) in expected.items():
        speeds = [t[profile] for t in tables.values() if t[profile] is not None]
        assert len(speeds) == fit
        assert statistics.median(speeds) == pytest.approx(median, abs=0.01)
    assert all(t["7g.40gb"] == 1.0 for t in tables.values())


def test_measured_speeds_are_misos_up_to_the_monotone_rule() -> None:
    changed = []
    for mj in miso_jobs():
        table = job_speed_table(miso_job(mj.model), A100)
        for profile, speed in mj.speeds().items():
            got = table[profile]
            assert (got is None) == (speed is None)
            if speed is not None and got != pytest.approx(speed, abs=1e-12):
                changed.append((mj.model, profile, got))
    assert sorted(set(changed)) == [
        ("resnet_train64", "3g.20gb", 1.0),
        ("resnet_train64", "4g.20gb", 1.0),
    ]


def test_1g_10gb_of_a_miso_job() -> None:
    resnet = job_speed_table(job("resnet", 64), A100)
    assert resnet["1g.10gb"] == resnet["1g.5gb"]
    bert = job_speed_table(job("bert", 2), A100)  # out of memory on 1g.5gb only
    assert bert["1g.5gb"] is None
    assert bert["1g.10gb"] is not None and 0 < bert["1g.10gb"] <= bert["2g.10gb"]  # type: ignore[operator]
    cyclegan = job_speed_table(job("cyclegan", 4), A100)  # fits 3g.20gb and up only
    assert cyclegan["1g.10gb"] is None and cyclegan["2g.10gb"] is None
    assert why_unfit(job("cyclegan", 4), A100, "2g.10gb") == (
        "job 7 (cyclegan_train4) ran out of memory on 2g.10gb in MISO's measurements "
        "on an A100-40GB"
    )
    assert why_unfit(job("cyclegan", 4), A100, "1g.10gb") == (
        "job 7 (cyclegan_train4) ran out of memory on 2g.10gb (the same 10 GiB as 1g.10gb) "
        "in MISO's measurements on an A100-40GB"
    )
    assert why_unfit(job("bert", 2), A100, "1g.10gb") == ""


def test_a_miso_job_on_another_gpu_model_follows_its_own_curve() -> None:
    table = job_speed_table(job("resnet", 512, memory_gib=12.0), H100)
    assert table["1g.10gb"] is None and table["2g.20gb"] is not None
    speeds = miso_speed_tables()["resnet_train512"]
    assert table["3g.40gb"] == pytest.approx(speeds["3g.20gb"], abs=0.05)
    assert table["7g.80gb"] == 1.0
    assert "12 GiB per worker" in why_unfit(job("resnet", 512, memory_gib=12.0), H100, "1g.10gb")


def test_each_miso_jobs_own_curve_is_close_to_its_measurements() -> None:
    worst = 0.0
    for row in miso_measured_speeds().values():
        points = [(A100.compute_fraction(p), s) for p, s in row.items()]
        share = fit_compute_share(points)
        worst = max(worst, max(abs(s - amdahl_speed(c, share)) for c, s in points))
    assert worst <= 0.125


# --------------------------------------------------------------------------- the mapping


def test_global_share_is_the_median_share_of_misos_measurements() -> None:
    shares = []
    for row in miso_measured_speeds().values():
        for p, s in row.items():
            c = A100.compute_fraction(p)
            if c < 1:
                shares.append((1 / s - 1) / (1 / c - 1))
    assert len(shares) == 113
    assert statistics.median(shares) == pytest.approx(GLOBAL_COMPUTE_SHARE, abs=0.005)


#: The mapping's error against MISO's measured speeds: (median, worst) absolute error per
#: profile, as the module docstring states them (bounds: those, rounded up).
ERROR_BOUNDS = {
    "1g.5gb": (0.104, 0.518),
    "2g.10gb": (0.160, 0.410),
    "3g.20gb": (0.119, 0.352),
    "4g.20gb": (0.152, 0.216),
}


def test_mapping_error_bound() -> None:
    errors = mapping_errors()
    assert list(errors) == list(ERROR_BOUNDS)
    for profile, (median, worst) in errors.items():
        assert median <= ERROR_BOUNDS[profile][0]
        assert worst <= ERROR_BOUNDS[profile][1]
        assert median == pytest.approx(ERROR_BOUNDS[profile][0], abs=0.002)


def test_mapping_curve_is_close_to_misos_medians() -> None:
    """Within 0.03 of the medians of the measured speeds (data/miso's README)."""
    medians = {"1g.5gb": 0.320, "2g.10gb": 0.474, "3g.20gb": 0.660, "4g.20gb": 0.745}
    for profile, median in medians.items():
        assert amdahl_speed(A100.compute_fraction(profile)) == pytest.approx(median, abs=0.03)


def test_mapping_for_a_catalog_job() -> None:
    spec = MODELS["resnet50"]  # 8 GiB per worker
    table = job_speed_table(job("resnet50", spec.batch_size, spec.memory_gib), A100)
    assert table["1g.5gb"] is None
    assert table["1g.10gb"] == pytest.approx(1 / (0.6 + 0.4 * 7))
    assert table["3g.20gb"] == pytest.approx(amdahl_speed(3 / 7))
    assert table["7g.40gb"] == 1.0
    a30 = job_speed_table(job("resnet50", 64, 8.0), A30)
    assert a30 == {"1g.6gb": None, "2g.12gb": pytest.approx(1 / (0.6 + 0.8)), "4g.24gb": 1.0}
    assert why_unfit(job("resnet50", 64, 8.0), A30, "1g.6gb") == (
        "job 7: the job needs 8 GiB per worker; 1g.6gb has 6 GiB, of which 5.7 GiB usable (95%)"
    )
    assert why_unfit(job("resnet50", 64, 8.0), A30, "2g.12gb") == ""


def test_amdahl_speed_and_fit_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="compute_fraction"):
        amdahl_speed(0.0)
    with pytest.raises(ValueError, match="share"):
        amdahl_speed(0.5, 1.5)
    with pytest.raises(ValueError, match="no point"):
        fit_compute_share([])
    with pytest.raises(ValueError, match="speed"):
        fit_compute_share([(0.5, 0.0)])
    assert fit_compute_share([(0.5, amdahl_speed(0.5, 0.3)), (1.0, 1.0)]) == pytest.approx(0.3)


# --------------------------------------------------------------------------- every job


def all_jobs() -> list[JobSpec]:
    jobs = [miso_job(key, memory_gib=m) for key in MISO_KEYS for m in (3.0, 9.0, 30.0)]
    jobs += [job(name, spec.batch_size, spec.memory_gib) for name, spec in MODELS.items()]
    jobs += [job("custom", 32, m) for m in (1.0, 5.5, 11.0, 19.0, 39.0, 60.0, 79.0)]
    return jobs


@pytest.mark.parametrize("model", list(MIG_GPU_MODELS))
def test_a_larger_profile_is_never_slower(model: str) -> None:
    gpu = get_mig_model(model)
    for j in all_jobs():
        table = job_speed_table(j, gpu)
        assert list(table) == list(gpu.profile_names)
        for big in gpu.profiles:
            for small in gpu.profiles:
                if big.compute_slices < small.compute_slices or big.memory_gib < small.memory_gib:
                    continue
                s_big, s_small = table[big.name], table[small.name]
                if s_small is None:
                    continue
                assert s_big is not None, (j.model, j.batch_size, big.name, small.name)
                assert s_big >= s_small - 1e-12, (j.model, j.batch_size, big.name, small.name)
        assert all(s is None or 0 < s <= 1 for s in table.values())


def test_multi_gpu_jobs_get_the_one_worker_table() -> None:
    for j in (job("resnet", 64), job("resnet50", 64, 8.0)):
        multi = job(j.model, j.batch_size, j.memory_gib, num_gpus=4)
        assert job_speed_table(multi, A100) == job_speed_table(j, A100)


def test_unknown_gpu_model_or_profile() -> None:
    with pytest.raises(MigError, match="unknown MIG GPU model 'V100'"):
        job_speed_table(job("resnet", 64), "V100")
    with pytest.raises(MigError, match=r"unknown MIG profile '5g\.30gb'"):
        why_unfit(job("resnet", 64), A100, "5g.30gb")
    with pytest.raises(MigError, match="not one of A30's profiles"):
        why_unfit(job("resnet", 64), A30, A100.profile("1g.5gb"))


def test_a_job_without_gpus_has_no_speed() -> None:
    cpu_only = JobSpec(
        job_id=3,
        arrival_s=0.0,
        model="resnet50",
        batch_size=64,
        num_gpus=0,
        iterations=10,
        memory_gib=0.0,
        intensity=0.0,
        iter_time_s=0.1,
        request=Request(gpu_milli=0),
    )
    with pytest.raises(ValueError, match="job 3 uses no GPU"):
        job_speed_table(cpu_only, A100)
