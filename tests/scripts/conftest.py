"""Fixtures shared by the ``gpushare-evaluate`` tests."""

from __future__ import annotations

import pytest


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
