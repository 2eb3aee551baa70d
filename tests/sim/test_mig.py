"""MIG geometry (gpushare_env.sim.mig): profile tables, partitions, placement, re-partitioning."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpushare_env.sim.mig import (
    DEFAULT_SECONDS_PER_OPERATION,
    MIG_GPU_MODELS,
    Instance,
    MigError,
    MigGpuModel,
    MigProfile,
    Partition,
    enumerate_partitions,
    get_mig_model,
    partition_problems,
    repartition_plan,
)

A100 = get_mig_model("A100-40GB")
A30 = get_mig_model("A30")

# NVIDIA's MIG user guide, "Supported MIG Profiles" (compute slices, memory slices, starts,
# most instances), per size; the names of A100-40GB, A100-80GB / H100-80GB.
GUIDE_A100_H100 = [
    (("1g.5gb", "1g.10gb"), 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
    (("1g.10gb", "1g.20gb"), 1, 2, (0, 2, 4, 6), 4),
    (("2g.10gb", "2g.20gb"), 2, 2, (0, 2, 4), 3),
    (("3g.20gb", "3g.40gb"), 3, 4, (0, 4), 2),
    (("4g.20gb", "4g.40gb"), 4, 4, (0,), 1),
    (("7g.40gb", "7g.80gb"), 7, 8, (0,), 1),
]


def names(p: Partition) -> set[tuple[str, int]]:
    return {(i.profile.name, i.start) for i in p.instances}


# -- the tables --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "column", "slice_gib"),
    [("A100-40GB", 0, 5), ("A100-80GB", 1, 10), ("H100-80GB", 1, 10)],
)
def test_a100_h100_tables_are_the_guides(model: str, column: int, slice_gib: int) -> None:
    m = get_mig_model(model)
    assert (m.compute_slices, m.memory_slices, m.memory_per_slice_gib) == (7, 8, slice_gib)
    got = [(p.name, p.compute_slices, p.memory_slices, p.starts, p.max_count) for p in m.profiles]
    assert got == [(n[column], c, ms, s, k) for n, c, ms, s, k in GUIDE_A100_H100]
    for p in m.profiles:
        # the nominal memory is the number in the name
        assert p.memory_gib == p.memory_slices * slice_gib == int(p.name.split(".")[1][:-2])


def test_a30_table() -> None:
    assert (A30.compute_slices, A30.memory_slices, A30.memory_per_slice_gib) == (4, 4, 6)
    got = [(p.name, p.compute_slices, p.memory_slices, p.starts, p.max_count) for p in A30.profiles]
    assert got == [
        ("1g.6gb", 1, 1, (0, 1, 2, 3), 4),
        ("2g.12gb", 2, 2, (0, 2), 2),
        ("4g.24gb", 4, 4, (0,), 1),
    ]


def test_lookup_by_nvidia_names_and_clear_errors() -> None:
    assert set(MIG_GPU_MODELS) >= {"A100-40GB", "A100-80GB", "H100-80GB", "A30"}
    assert get_mig_model("a100-40gb") is A100
    assert get_mig_model(A100) is A100
    p = A100.profile("3g.20gb")
    assert A100.profile("MIG 3g.20gb") is p and A100.profile("mig-3g.20gb") is p
    assert A100.profile(p) is p
    with pytest.raises(MigError, match=r"unknown MIG GPU model 'V100'.*A100-40GB.*A30"):
        get_mig_model("V100")
    with pytest.raises(MigError, match=r"'3g.20gb' for A30.*1g\.6gb, 2g\.12gb, 4g\.24gb"):
        A30.profile("3g.20gb")
    with pytest.raises(MigError, match="not one of A30's profiles"):
        A30.profile(p)
    with pytest.raises(ValueError):  # MigError is a ValueError
        Partition.of("A100-40GB", ("3g.40gb", 0))


def test_compute_and_memory_fractions() -> None:
    assert A100.compute_fraction("3g.20gb") == pytest.approx(3 / 7)
    assert A100.compute_fraction("1g.10gb") == pytest.approx(1 / 7)
    assert A100.compute_fraction("7g.40gb") == 1.0
    assert A100.memory_fraction("3g.20gb") == 0.5
    assert A30.compute_fraction("2g.12gb") == 0.5
    assert get_mig_model("H100-80GB").profile("4g.40gb").memory_gib == 40


# -- partitions --------------------------------------------------------------------------------


def test_documented_partitions() -> None:
    # MISO's static partition: 3g + 2g + 2g (the 3g must take slices 4-7)
    miso = Partition.of("A100-40GB", ("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2))
    assert miso.free_slices == () and miso.compute_slices_used == 7
    with pytest.raises(MigError):
        Partition.of("A100-40GB", ("3g.20gb", 0), ("2g.10gb", 4), ("2g.10gb", 2))
    Partition.of("A100-40GB", ("4g.20gb", 0), ("3g.20gb", 4))
    seven = Partition.of("A100-40GB", *(("1g.5gb", s) for s in range(7)))
    assert seven.free_slices == (7,) and seven.placeable() == ()
    Partition.of("A100-80GB", *(("1g.20gb", s) for s in (0, 2, 4, 6)))
    Partition.of("A30", ("2g.12gb", 0), ("1g.6gb", 2), ("1g.6gb", 3))


def test_overlap_names_the_instances_and_slices() -> None:
    with pytest.raises(MigError) as err:
        Partition.of("A100-40GB", ("3g.20gb", 0), ("1g.5gb", 3))
    msg = str(err.value)
    assert "3g.20gb@0 (memory slices 0-3)" in msg
    assert "1g.5gb@3 (memory slice 3)" in msg
    assert "overlap on memory slice 3" in msg
    assert partition_problems(A100, [A100.instance("3g.20gb", 0), A100.instance("1g.5gb", 3)])


def test_disallowed_start_and_limits() -> None:
    with pytest.raises(
        MigError, match=r"2g\.10gb@1: 2g\.10gb may start only at memory slices 0, 2, 4"
    ):
        Partition.of("A100-40GB", ("2g.10gb", 1))
    with pytest.raises(MigError, match=r"may start only at memory slice 0$"):
        Partition.of("A100-40GB", ("4g.20gb", 4))
    # counts and compute: a made-up model where the memory alone would allow more
    p = MigProfile("1g.1gb", 1, 1, 1.0, (0, 1, 2, 3), 2)
    toy = MigGpuModel("toy", 2, 4, 1.0, (p,))
    three = [Instance(p, 0), Instance(p, 1), Instance(p, 2)]
    problems = partition_problems(toy, three)
    assert "3 instances of 1g.1gb: at most 2" in problems
    assert "3 compute slices in use: toy has 2" in problems
    assert Partition(toy, tuple(three[:2])).can_place(p) == ()


def test_partitions_are_canonical_and_hashable() -> None:
    a = Partition.of("A100-40GB", ("3g.20gb", 4), ("2g.10gb", 0), ("1g.5gb", 2))
    b = Partition.of("A100-40GB", ("1g.5gb", 2), ("3g.20gb", 4), ("2g.10gb", 0))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert [str(i) for i in a.instances] == ["2g.10gb@0", "1g.5gb@2", "3g.20gb@4"]
    assert str(a) == "A100-40GB[2g.10gb@0, 1g.5gb@2, 3g.20gb@4]"
    assert a != Partition.of("A100-80GB", ("3g.40gb", 4), ("2g.20gb", 0), ("1g.10gb", 2))
    assert Partition(A100, ()) == A100.empty() == Partition.of("A100-40GB")


def test_can_place_lowest_first_and_place() -> None:
    empty = A100.empty()
    assert empty.can_place("1g.5gb") == (0, 1, 2, 3, 4, 5, 6)
    assert empty.can_place("7g.40gb") == (0,)
    three = empty.place("3g.20gb")
    assert three.instances == (A100.instance("3g.20gb", 0),)
    assert three.can_place("1g.5gb") == (4, 5, 6)
    assert three.can_place("1g.10gb") == (4, 6)
    assert three.can_place("4g.20gb") == ()
    assert three.can_place("3g.20gb") == (4,)
    assert three.free_slices == (4, 5, 6, 7)
    assert three.place("1g.5gb") == three.place("1g.5gb", 4)
    with pytest.raises(MigError, match=r"no room for 7g\.40gb .*free memory slices 4-7"):
        three.place("7g.40gb")
    full = three.place("3g.20gb")
    with pytest.raises(MigError, match="no free memory slice"):
        full.place("1g.5gb")
    with pytest.raises(MigError, match=r"overlap on memory slice 3"):
        three.place("1g.5gb", 3)
    assert full.count("3g.20gb") == 2 and len(full) == 2
    with pytest.raises(MigError, match=r"1g\.5gb@4 is not an instance of"):
        full.remove(("1g.5gb", 4))
    assert full.remove(("3g.20gb", 0)) == empty.place("3g.20gb", 4)


# -- enumeration -------------------------------------------------------------------------------


def brute_force_count(table: list[tuple[int, int, tuple[int, ...], int]], compute: int) -> int:
    """Valid partitions by testing every subset of (profile, start) placements at once."""
    rows = [(k, c, m, s) for k, (c, m, starts, _) in enumerate(table) for s in starts]
    n = len(rows)
    memory = max(s + m for _, _, m, s in rows)
    occ = np.zeros((n, memory), dtype=np.int64)
    prof = np.zeros((n, len(table)), dtype=np.int64)
    comp = np.zeros(n, dtype=np.int64)
    for r, (k, c, m, s) in enumerate(rows):
        occ[r, s : s + m] = 1
        prof[r, k] = 1
        comp[r] = c
    subsets = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    valid = (
        (subsets @ occ <= 1).all(axis=1)
        & (subsets @ prof <= np.array([t[3] for t in table])).all(axis=1)
        & (subsets @ comp <= compute)
    )
    return int(valid.sum())


def test_enumeration_counts_match_a_brute_force() -> None:
    a100_table = [(c, m, starts, most) for _, c, m, starts, most in GUIDE_A100_H100]
    expected = brute_force_count(a100_table, 7)
    assert expected == 723
    for model in ("A100-40GB", "A100-80GB", "H100-80GB"):
        assert len(enumerate_partitions(model)) == expected
    a30_table = [(1, 1, (0, 1, 2, 3), 4), (2, 2, (0, 2), 2), (4, 4, (0,), 1)]
    assert len(enumerate_partitions("A30")) == brute_force_count(a30_table, 4) == 26


def test_enumeration_is_distinct_complete_and_valid() -> None:
    parts = enumerate_partitions(A100)
    assert parts[0] == A100.empty()
    assert len(set(parts)) == len(parts)
    assert all(partition_problems(A100, p.instances) == [] for p in parts)
    assert enumerate_partitions("A100-40GB") is parts  # cached
    got = {frozenset(names(p)) for p in parts}
    for spec in (
        {("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)},
        {("4g.20gb", 0), ("3g.20gb", 4)},
        {("1g.5gb", s) for s in range(7)},
        {("7g.40gb", 0)},
    ):
        assert frozenset(spec) in got
    assert frozenset({("3g.20gb", 0), ("1g.5gb", 3)}) not in got
    # distinct profile mixes, and the partitions nothing more fits into
    assert len({tuple(sorted(i.profile.name for i in p.instances)) for p in parts}) == 78
    assert sum(1 for p in parts if not p.placeable()) == 78


# -- properties --------------------------------------------------------------------------------

MODELS = st.sampled_from(sorted(MIG_GPU_MODELS))


@st.composite
def model_and_partition(draw: st.DrawFn) -> tuple[MigGpuModel, Partition]:
    model = get_mig_model(draw(MODELS))
    return model, draw(st.sampled_from(enumerate_partitions(model)))


@settings(max_examples=150, deadline=None)
@given(model_and_partition(), st.randoms(use_true_random=False))
def test_every_enumerated_partition_validates(
    mp: tuple[MigGpuModel, Partition], rnd: random.Random
) -> None:
    model, part = mp
    assert partition_problems(model, part.instances) == []
    shuffled = list(part.instances)
    rnd.shuffle(shuffled)
    again = Partition(model, tuple(shuffled))
    assert again == part and hash(again) == hash(part)
    used = [s for i in part.instances for s in i.slices]
    assert len(used) == len(set(used))
    assert sorted(part.free_slices + tuple(used)) == list(range(model.memory_slices))


@settings(max_examples=150, deadline=None)
@given(MODELS, st.data())
def test_random_instance_sets_valid_iff_enumerated(model_name: str, data: st.DataObject) -> None:
    model = get_mig_model(model_name)
    candidates = [Instance(p, s) for p in model.profiles for s in range(model.memory_slices)]
    chosen = data.draw(st.lists(st.sampled_from(candidates), max_size=6, unique=True))
    enumerated = {frozenset(p.instances) for p in enumerate_partitions(model)}
    problems = partition_problems(model, chosen)
    assert (problems == []) == (frozenset(chosen) in enumerated)
    if problems:
        with pytest.raises(MigError):
            Partition(model, tuple(chosen))


@settings(max_examples=150, deadline=None)
@given(model_and_partition(), st.data())
def test_place_remove_round_trip(mp: tuple[MigGpuModel, Partition], data: st.DataObject) -> None:
    model, part = mp
    for inst in part.instances:
        assert part.remove(inst).place(inst.profile, inst.start) == part
    profile = data.draw(st.sampled_from(model.profiles))
    starts = part.can_place(profile)
    assert list(starts) == sorted(starts)
    for s in profile.starts:
        if s in starts:
            bigger = part.place(profile, s)
            assert len(bigger) == len(part) + 1
            assert bigger.remove(Instance(profile, s)) == part
        else:
            with pytest.raises(MigError):
                part.place(profile, s)
    if starts:
        assert part.place(profile) == part.place(profile, starts[0])
    assert (profile in part.placeable()) == bool(starts)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_repartition_plan_applied_gives_target(data: st.DataObject) -> None:
    model = get_mig_model(data.draw(MODELS))
    parts = enumerate_partitions(model)
    current = data.draw(st.sampled_from(parts))
    target = data.draw(st.sampled_from(parts))
    seconds = data.draw(st.sampled_from([DEFAULT_SECONDS_PER_OPERATION, 0.1, 0.2, 0.0]))
    kept = [i for i in current.instances if i in target.instances]
    busy = data.draw(st.lists(st.sampled_from(kept), unique=True) if kept else st.just([]))
    plan = repartition_plan(current, target, busy, seconds_per_operation=seconds)
    assert plan.apply() == target
    assert set(plan.keep) == set(kept) >= set(busy)
    assert set(plan.destroy).isdisjoint(busy)
    sym = set(current.instances) ^ set(target.instances)
    assert plan.operations == len(sym) == len(plan.destroy) + len(plan.create)
    assert plan.seconds == pytest.approx(plan.operations * seconds)
    doomed = [i for i in current.instances if i not in target.instances]
    if doomed:
        victim = data.draw(st.sampled_from(doomed))
        with pytest.raises(MigError, match=f"busy instance.*{victim.profile.name}@{victim.start}"):
            repartition_plan(current, target, [*busy, victim])


def test_repartition_examples_and_errors() -> None:
    miso = Partition.of("A100-40GB", ("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2))
    target = Partition.of("A100-40GB", ("4g.20gb", 0), ("3g.20gb", 4))
    plan = repartition_plan(miso, target, busy=[A100.instance("3g.20gb", 4)])
    assert [str(i) for i in plan.destroy] == ["2g.10gb@0", "2g.10gb@2"]
    assert [str(i) for i in plan.create] == ["4g.20gb@0"]
    assert [str(i) for i in plan.keep] == ["3g.20gb@4"]
    assert plan.operations == 3
    assert plan.seconds == pytest.approx(3 * DEFAULT_SECONDS_PER_OPERATION)
    assert 0.1 <= DEFAULT_SECONDS_PER_OPERATION <= 0.2
    assert repartition_plan(miso, miso).operations == 0
    with pytest.raises(
        MigError, match=r"busy instance\(s\) 2g\.10gb@2 \(its slices are needed by 4g\.20gb@0\)"
    ):
        repartition_plan(miso, target, busy=[A100.instance("2g.10gb", 2)])
    with pytest.raises(MigError, match=r"1g\.5gb@6 are not in"):
        repartition_plan(miso, target, busy=[A100.instance("1g.5gb", 6)])
    with pytest.raises(MigError, match="partition of A100-40GB into one of A30"):
        repartition_plan(miso, A30.empty())
    with pytest.raises(MigError, match="seconds_per_operation"):
        repartition_plan(miso, target, seconds_per_operation=-1.0)
