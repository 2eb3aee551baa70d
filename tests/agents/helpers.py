"""Shared settings of the tiny training runs in these tests."""

from __future__ import annotations

from typing import Any

#: A ``TrainConfig`` of a few hundred steps on ``tiny`` (add ``out``; override freely).
TINY_TRAINING: dict[str, Any] = {
    "cluster": "tiny",
    "workloads": ("thesis",),
    "num_jobs": 8,
    "n_envs": 1,
    "n_steps": 64,
    "batch_size": 32,
    "n_epochs": 2,
    "eval_seeds": (),
    "progress_bar": False,
    "train_seeds": (0, 1, 2, 3),
    "env_overrides": {"max_decisions": 300},  # bounds an untrained policy's livelocks
}
