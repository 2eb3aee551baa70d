"""``SimView.speed_if_placed`` predicts the speed the engine then gives, for any model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from gpushare_env.sim import JobSpec, Simulator, SimView, make_cluster
from tests.jobs import job


@dataclass(frozen=True)
class PairTable:
    """A toy pairwise model: VGG-16 next to anything halves every worker's speed."""

    def factor(self, load: float, count: int, models: Sequence[str]) -> float:
        return 0.5 if count > 1 and "vgg16" in models else 1.0


def _job(job_id: int, model: str) -> JobSpec:
    return job(job_id, 0.0, 1000, memory_gib=4.0, intensity=0.4, iter_time_s=0.1, model=model)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("vgg16", "resnet50", 0.5),
        ("resnet50", "vgg16", 0.5),
        ("resnet50", "googlenet", 1.0),
    ],
)
def test_prediction_uses_the_models_and_matches_the_engine(first, second, expected):
    sim = Simulator(
        [_job(0, first), _job(1, second)], make_cluster("tiny"), interference=PairTable()
    )
    view: SimView = sim
    sim.advance()  # both arrive
    sim.place(0, (0,))
    own, others = view.speed_if_placed(1, (0,))
    assert own == pytest.approx(expected) and others == pytest.approx(expected)
    sim.place(1, (0,))
    assert sim.jobs[1].speed == pytest.approx(own)
    assert sim.jobs[0].speed == pytest.approx(others)
