"""The work of an evaluation process: scoring saved checkpoints beside training.

:class:`agents.callbacks.HeuristicEvalCallback` with ``workers >= 1`` saves the model at
every evaluation point and hands the file to a process pool; the functions here run in
those processes (they are module-level so that ``spawn`` can pickle them). A checkpoint
is the model as ``model.save`` writes it, so it plays exactly as the model in memory did
at that step: the same weights, the same deterministic actions
(:func:`agents.evaluation.run_episodes`, one episode at a time, as in the training
process).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["draw_curve", "init_worker", "score_checkpoint", "score_reference"]


def init_worker(threads: int) -> None:
    """Set up an evaluation process: ``threads`` torch threads, no argument checks in
    ``torch.distributions`` (as the training process, :func:`agents.training.prepare_torch`)."""
    import torch

    torch.set_num_threads(threads)
    torch.distributions.Distribution.set_default_validate_args(False)


def score_reference(
    reference: str, env_configs: Sequence[Mapping[str, Any]], seeds: Sequence[int]
) -> list[dict[str, float]]:
    """The reference heuristic's metrics on every (config, seed), configs outermost."""
    from agents.evaluation import run_episodes

    return run_episodes(reference, env_configs, seeds)


def score_checkpoint(
    path: str, env_configs: Sequence[Mapping[str, Any]], seeds: Sequence[int]
) -> tuple[list[dict[str, float]], float]:
    """Load the model saved at ``path`` and play it on every (config, seed).

    Returns:
        The metrics of each episode (configs outermost) and the seconds it took, loading
        included.
    """
    import torch

    from agents.evaluation import run_episodes
    from agents.saved import algorithm_of
    from agents.training import algorithm_class

    started = time.perf_counter()
    threads = torch.get_num_threads()  # load() must not change this process's setting
    model = algorithm_class(algorithm_of(path)).load(path, device="cpu")
    torch.set_num_threads(threads)
    metrics = run_episodes(model, env_configs, seeds)
    return metrics, time.perf_counter() - started


def draw_curve(out_dir: str) -> None:
    """Redraw ``out_dir/learning_curve.png`` from its ``evaluations.json`` (needs matplotlib)."""
    from agents.curve import write_learning_curve

    write_learning_curve(Path(out_dir))
