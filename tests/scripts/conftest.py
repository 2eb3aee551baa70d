"""Fixtures shared by the ``gpushare-evaluate`` tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare_eval.cli import evaluate
from tests.scripts.helpers import SLOW


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slow evaluation (``helpers.SLOW``), uninterrupted (in this process, one
    worker)."""
    out = tmp_path_factory.mktemp("slow_reference")
    assert evaluate.main([*SLOW, "--workers", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture
def broken_fifo(monkeypatch: pytest.MonkeyPatch) -> None:
    """``baselines.make("fifo")`` builds a policy whose every decision raises
    ``RuntimeError("boom")`` (in-process runs only: ``--workers 1``)."""
    import baselines

    original = baselines.make

    def make(name: str, env: object = None, **params: object) -> object:
        policy = original(name, env, **params)
        if name == "fifo":

            def broken(view: object) -> object:
                raise RuntimeError("boom")

            policy.decide = broken  # type: ignore[method-assign]
        return policy

    monkeypatch.setattr(baselines, "make", make)
