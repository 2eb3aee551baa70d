"""The shipped Philly VC traces and the rule that sizes a cluster for a trace's load."""

from __future__ import annotations

import collections
import math
from pathlib import Path

import pytest

from gpushare_env.workloads import (
    PHILLY_VC_TRACES,
    make_job,
    offered_load,
    parse_load_rule,
    philly_vc_path,
    read_csv_trace,
    sized_cluster,
)

# Jobs and GPU counts per trace, as the data folder's README lists them.
README_TABLE = {
    "11cb48": (2000, {1: 1559, 2: 81, 4: 257, 8: 23, 16: 69, 24: 2, 32: 8, 64: 1}),
    "2869ce": (533, {1: 65, 2: 6, 4: 11, 8: 379, 16: 2, 32: 70}),
    "6c71a0": (2000, {1: 1798, 2: 6, 4: 41, 8: 150, 16: 4, 32: 1}),
    "6214e9": (2000, {1: 1928, 2: 27, 4: 32, 8: 13}),
    "ee9e8c": (2000, {1: 975, 2: 47, 4: 321, 7: 2, 8: 543, 16: 106, 20: 1, 32: 5}),
    "b436b2": (2000, {1: 1632, 2: 23, 4: 133, 8: 172, 16: 39, 24: 1}),
}
# "load on 64 GPUs" column of the README.
README_LOAD_64 = {"11cb48": 0.39, "2869ce": 0.38, "6c71a0": 1.68, "6214e9": 2.36,
                  "ee9e8c": 2.53, "b436b2": 3.28}  # fmt: skip


@pytest.mark.parametrize("name", PHILLY_VC_TRACES)
def test_shipped_trace_matches_its_readme(name: str) -> None:
    jobs = read_csv_trace(philly_vc_path(name))
    count, widths = README_TABLE[name]
    assert len(jobs) == count
    assert dict(collections.Counter(j.num_gpus for j in jobs)) == widths
    assert offered_load(jobs, 64) == pytest.approx(README_LOAD_64[name], abs=0.005)


def test_shipped_traces_carry_their_attribution() -> None:
    readme = philly_vc_path("11cb48").parent / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert "stanford-futuredata/gavel" in text and "MIT" in text
    assert "Jeon" in text and "ATC 2019" in text


def test_unknown_trace_name_is_refused_with_the_shipped_names() -> None:
    with pytest.raises(ValueError, match=r"unknown Philly VC trace 'nope'.*11cb48"):
        philly_vc_path("nope")
    assert philly_vc_path("2869ce.csv") == philly_vc_path("2869ce")


def _job(job_id: int, arrival_s: float, gpus: int, duration_s: float):
    return make_job(job_id, arrival_s, gpus, duration_s, "resnet50")


@pytest.mark.parametrize("name", PHILLY_VC_TRACES)
def test_sized_cluster_is_the_smallest_that_meets_the_load(name: str) -> None:
    jobs = read_csv_trace(philly_vc_path(name))
    cluster = sized_cluster(jobs, load=0.9)
    nodes, per_node = cluster["nodes"], cluster["gpus_per_node"]
    widest = max(j.num_gpus for j in jobs)
    assert nodes * per_node >= widest
    assert offered_load(jobs, nodes * per_node) <= 0.9
    if (nodes - 1) * per_node >= widest:  # one node fewer would overload it
        assert offered_load(jobs, (nodes - 1) * per_node) > 0.9
    assert cluster["name"].endswith(f"load {offered_load(jobs, nodes * per_node):.2f}")


def test_sized_cluster_never_narrower_than_the_widest_job() -> None:
    # 2 GPU-hours a day: 1 GPU is enough for the load, but one job wants 24 GPUs
    jobs = [_job(0, 0.0, 24, 600.0), _job(1, 86_400.0, 1, 3600.0)]
    assert sized_cluster(jobs, load=0.9)["nodes"] == 3
    assert sized_cluster(jobs, load=0.9, gpus_per_node=4)["nodes"] == 6


def test_offered_load_by_definition() -> None:
    jobs = [_job(0, 0.0, 2, 3600.0), _job(1, 7200.0, 4, 1800.0)]  # 4 GPU-hours over 2 h
    assert offered_load(jobs, 2) == pytest.approx(1.0)
    assert offered_load(jobs, 8) == pytest.approx(0.25)
    assert offered_load(jobs[:1], 8) == math.inf  # one arrival: no span


@pytest.mark.parametrize(
    ("jobs", "load", "message"),
    [
        ([], 0.9, "no jobs"),
        ([_job(0, 0.0, 1, 10.0)], 0.9, "no span"),
        ([_job(0, 0.0, 1, 10.0), _job(1, 5.0, 1, 10.0)], 0.0, "positive number"),
        ([_job(0, 0.0, 1, 10.0), _job(1, 5.0, 1, 10.0)], math.nan, "positive number"),
    ],
)
def test_sized_cluster_refuses_what_it_cannot_size(jobs, load, message) -> None:
    with pytest.raises(ValueError, match=message):
        sized_cluster(jobs, load=load)


def test_load_rule_parsing() -> None:
    assert parse_load_rule("load=0.9") == 0.9
    assert parse_load_rule("medium") is None
    assert parse_load_rule({"nodes": 2}) is None
    for bad in ("load=", "load=high", "load=-1", "load=inf"):
        with pytest.raises(ValueError, match=r"cluster: 'load="):
            parse_load_rule(bad)


def test_package_data_is_declared_for_wheels() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8")
    assert "workloads/data/philly_vc/*.csv" in pyproject
    assert "workloads/data/philly_vc/README.md" in pyproject
