"""Learned schedulers for ``GPUShare-v0``: MaskablePPO (default), PPO and DQN.

* :func:`train` / :class:`TrainConfig`: a training run (``gpushare-train`` on the
  command line), with an optional behaviour-cloning warm start from a heuristic;
* :func:`load_model`: a saved agent (``gpushare-evaluate`` uses it);
* :class:`PermutationExtractor`: shared per-row encoders with masked pooling, beside
  SB3's flat ``CombinedExtractor``; :class:`MaskableSlotPolicy` / :class:`SlotPolicy`:
  per-slot action logits on top of it (``--extractor pointer``);
* callbacks logging scheduling metrics and evaluating against ``thesis``;
* :data:`ZOO_DIR` (``agents/zoo/``): the shipped models, with the command and seed that
  made them.

Importing the package itself is cheap: the names above load their module (and torch,
stable-baselines3) when first used, so the evaluation harness finds the shipped models
without the RL extras installed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.bc import Demonstrations, clone, collect_demonstrations
    from agents.callbacks import (
        HeuristicEvalCallback,
        ProgressBarCallback,
        SchedulingMetricsCallback,
    )
    from agents.envs import SeededEpisodes, make_env, make_vec_env
    from agents.evaluation import run_episode, run_episodes
    from agents.extractors import EXTRACTORS, PermutationExtractor, masked_mean_max
    from agents.policies import MaskableSlotPolicy, SlotPolicy
    from agents.train_config import ALGORITHMS, VALIDATION_SEEDS, TrainConfig, env_configs
    from agents.training import build_model, load_model, train

__all__ = [
    "ALGORITHMS",
    "EXTRACTORS",
    "VALIDATION_SEEDS",
    "ZOO_DIR",
    "Demonstrations",
    "HeuristicEvalCallback",
    "MaskableSlotPolicy",
    "PermutationExtractor",
    "ProgressBarCallback",
    "SchedulingMetricsCallback",
    "SeededEpisodes",
    "SlotPolicy",
    "TrainConfig",
    "build_model",
    "clone",
    "collect_demonstrations",
    "env_configs",
    "load_model",
    "make_env",
    "make_vec_env",
    "masked_mean_max",
    "run_episode",
    "run_episodes",
    "train",
]

#: Folder of the shipped agents: ``<name>.zip`` with its record ``<name>.json`` and card
#: ``<name>.md`` (``python -m scripts.ship`` writes them with the evaluation harness,
#: ``gpushare_eval.cards``; ``gpushare-evaluate --policies zoo`` and the presets play them,
#: ``tests/agents/test_zoo.py`` replays their numbers).
ZOO_DIR = Path(__file__).resolve().parent / "zoo"

#: The module of every name above that is loaded on first use.
_LAZY: dict[str, str] = {
    name: f"agents.{module}"
    for module, names in {
        "bc": ("Demonstrations", "clone", "collect_demonstrations"),
        "callbacks": ("HeuristicEvalCallback", "ProgressBarCallback", "SchedulingMetricsCallback"),
        "envs": ("SeededEpisodes", "make_env", "make_vec_env"),
        "evaluation": ("run_episode", "run_episodes"),
        "extractors": ("EXTRACTORS", "PermutationExtractor", "masked_mean_max"),
        "policies": ("MaskableSlotPolicy", "SlotPolicy"),
        "train_config": ("ALGORITHMS", "VALIDATION_SEEDS", "TrainConfig", "env_configs"),
        "training": ("build_model", "load_model", "train"),
    }.items()
    for name in names
}


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
