"""Fixtures for the whole suite."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_a_folder_removed_afterwards() -> Iterator[None]:
    """Point stable-baselines3's default log folder into a temporary folder removed at the end.

    Every ``model.learn()`` without ``tensorboard_log`` calls SB3's ``configure_logger``,
    whose ``configure(folder=None)`` makes an (empty) ``SB3-<date-time>`` folder in the
    system's temporary directory unless ``SB3_LOGDIR`` names one; the tests that train
    (``tests/envs/test_api.py``, ``tests/agents/test_smdp.py``, the README snippet) would
    leave one such folder per run. Subprocesses the tests start inherit the variable.
    """
    previous = os.environ.get("SB3_LOGDIR")
    with tempfile.TemporaryDirectory(prefix="gpushare-tests-sb3-") as folder:
        os.environ["SB3_LOGDIR"] = folder
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("SB3_LOGDIR", None)
            else:
                os.environ["SB3_LOGDIR"] = previous
