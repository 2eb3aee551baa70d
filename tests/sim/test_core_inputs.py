"""``Core`` is built from one typed ``CoreInputs`` (``gpushare_env.sim.core_inputs``):
anything else is refused by name, a bad field is refused with the message it had as a
string-keyed entry, and a pickled core carries its inputs and rebuilds from them."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

import gpushare_env.sim  # noqa: F401  (the core imports gpushare_env.sim: import that first)
from gpushare_env.compiled._core import Core
from gpushare_env.sim import JobSpec, Simulator, make_cluster
from gpushare_env.sim.core_inputs import CoreInputs
from gpushare_env.sim.engine import new_core
from gpushare_env.sim.interference import measured_contention


def _inputs() -> CoreInputs:
    jobs = [
        JobSpec(0, 0.0, "resnet50", 64, 1, 1000, 8.0, 1.0, 0.158),
        JobSpec(1, 5.0, "googlenet", 64, 1, 1000, 1.8, 0.6, 0.065),
    ]
    return Simulator(jobs, make_cluster("tiny")).core.inputs


def _with(inputs: CoreInputs, part: str, **changes: object) -> CoreInputs:
    return dataclasses.replace(
        inputs, **{part: dataclasses.replace(getattr(inputs, part), **changes)}
    )


def test_the_simulator_builds_its_core_from_core_inputs() -> None:
    inputs = _inputs()
    assert isinstance(inputs, CoreInputs)
    assert inputs.jobs.job_id == (0, 1)
    assert inputs.jobs.arrival_s == (0.0, 5.0)
    core = new_core(inputs)
    assert core.inputs is inputs
    assert core.specs == list(inputs.jobs.specs)


def test_anything_but_core_inputs_is_refused_by_name() -> None:
    inputs = _inputs()
    as_dicts = tuple(
        {f.name: getattr(part, f.name) for f in dataclasses.fields(part)}
        for part in (inputs.jobs, inputs.cluster, inputs.sim, inputs.encoder, inputs.env)
    )
    with pytest.raises(TypeError, match=r"Core is built from a CoreInputs .* got dict"):
        Core(as_dicts[0])
    with pytest.raises(TypeError):
        Core(*as_dicts)  # type: ignore[call-arg]


def test_inputs_are_frozen() -> None:
    inputs = _inputs()
    with pytest.raises(dataclasses.FrozenInstanceError):
        inputs.env.auto_advance = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("part", "changes", "message"),
    [
        ("encoder", {"priority_slots": 3}, r"priority_slots must be in \[0, 2\], got 3"),
        ("env", {"weights": (1.0, 2.0)}, r"reward weights: expected \d+ .* got 2"),
        ("encoder", {"strategies": ()}, r"strategies: 1 to 12 distinct names, got \(\)"),
        ("encoder", {"strategies": ("pack", "pack")}, r"1 to 12 distinct names"),
        ("encoder", {"strategies": ("best",)}, r"unknown strategy 'best'; allowed: \['exclusive'"),
        ("encoder", {"strategies": ("share_fgd",)}, r"'share_fgd' places requested shares"),
    ],
)
def test_a_bad_field_is_refused_with_its_message(
    part: str, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Core(_with(_inputs(), part, **changes))


def test_measured_tables_must_match_the_encoder_models() -> None:
    inputs = _inputs()
    tables = measured_contention().core_tables(("resnet50",), ("v100",), (1.0,))
    inputs = _with(inputs, "sim", measured=tables)
    with pytest.raises(ValueError, match="one row per encoder model"):
        Core(inputs)


def test_a_pickled_core_carries_its_inputs_and_state() -> None:
    jobs = [
        JobSpec(0, 0.0, "resnet50", 64, 1, 1000, 8.0, 1.0, 0.158),
        JobSpec(1, 5.0, "googlenet", 64, 1, 1000, 1.8, 0.6, 0.065),
    ]
    sim = Simulator(jobs, make_cluster("tiny"))
    sim.advance()
    sim.schedule(0, "pack")
    sim.advance()
    core = sim.core
    copy = pickle.loads(pickle.dumps(core))
    assert isinstance(copy.inputs, CoreInputs)
    assert copy.inputs.jobs == core.inputs.jobs
    assert copy.inputs.sim == core.inputs.sim
    assert copy.ops == core.ops
    assert len(core.ops) == 3
    assert copy.now == core.now > 0.0
