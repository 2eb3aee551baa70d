"""Learned schedulers for ``GPUShare-v0``: MaskablePPO (default), PPO and DQN.

* :func:`train` / :class:`TrainConfig`: a training run (``gpushare-train`` on the
  command line), with an optional behaviour-cloning warm start from a heuristic;
* :func:`load_model`: a saved agent (``scripts/evaluate`` uses it);
* :class:`PermutationExtractor`: shared per-row encoders with masked pooling, beside
  SB3's flat ``CombinedExtractor``; :class:`MaskableSlotPolicy` / :class:`SlotPolicy`:
  per-slot action logits on top of it (``--extractor pointer``);
* callbacks logging scheduling metrics and evaluating against ``thesis``;
* ``agents/zoo/``: the shipped model, with the command and seed that made it.
"""

from agents.bc import Demonstrations, clone, collect_demonstrations
from agents.callbacks import HeuristicEvalCallback, ProgressBarCallback, SchedulingMetricsCallback
from agents.envs import SeededEpisodes, make_env, make_vec_env
from agents.evaluation import mean_ci95, run_episode, run_episodes
from agents.extractors import EXTRACTORS, PermutationExtractor, masked_mean_max
from agents.policies import MaskableSlotPolicy, SlotPolicy
from agents.training import (
    ALGORITHMS,
    VALIDATION_SEEDS,
    TrainConfig,
    build_model,
    env_configs,
    load_model,
    train,
)

__all__ = [
    "ALGORITHMS",
    "EXTRACTORS",
    "VALIDATION_SEEDS",
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
    "mean_ci95",
    "run_episode",
    "run_episodes",
    "train",
]
