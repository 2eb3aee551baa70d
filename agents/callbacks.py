"""TensorBoard callbacks: scheduling metrics of finished episodes, periodic evaluation
against the ``thesis`` heuristic on held-out seeds (keeping the best model), progress bar.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from agents.evaluation import METRIC_KEYS, run_episodes

_HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

__all__ = ["HeuristicEvalCallback", "ProgressBarCallback", "SchedulingMetricsCallback"]

_HOUR = 3600.0


def _log_name(key: str) -> str:
    """TensorBoard name of a metric, in hours for ``*_s`` metrics."""
    return key[:-2] + "_h" if key.endswith("_s") else key


def _log_value(key: str, value: float) -> float:
    return value / _HOUR if key.endswith("_s") else value


class SchedulingMetricsCallback(BaseCallback):
    """Log ``info["metrics"]`` of every finished training episode under ``sched/``.

    Mean JCT and makespan are logged in hours, utilisation as a share, suspends as a
    count (SB3 averages the values recorded between two dumps).
    """

    def __init__(self, keys: Sequence[str] = METRIC_KEYS, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.keys = tuple(keys)
        self.episodes = 0

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            metrics = info.get("metrics")
            if not metrics:
                continue
            self.episodes += 1
            for key in self.keys:
                if key in metrics:
                    self.logger.record_mean(
                        f"sched/{_log_name(key)}", _log_value(key, float(metrics[key]))
                    )
        return True


class HeuristicEvalCallback(BaseCallback):
    """Every ``eval_every`` steps, play the model on held-out seeds and compare with a heuristic.

    The reference heuristic is played once on the same (config, seed) episodes. Logged
    under ``eval/``: the model's mean JCT and makespan (hours), and the ratios
    ``jct_ratio`` / ``makespan_ratio`` (model / reference, means over episodes) and
    ``worst_jct_ratio`` (the largest episode's). The model with the lowest score is
    saved as ``best_model.zip`` and the history as ``evaluations.json``; the score is
    ``jct_ratio + max(0, makespan_ratio - 1)`` (``select_by="mean"``) or
    ``worst_jct_ratio`` (``"worst"``: the episode the model loses most on).

    Args:
        env_configs: Configs evaluated (e.g. one per workload).
        seeds: Held-out seeds, disjoint from the training and the test seeds.
        eval_every: Steps (summed over envs) between evaluations.
        out_dir: Folder of ``best_model.zip`` and ``evaluations.json``.
        reference: Baseline name compared with.
        at_start: Also evaluate before the first update (the warm start's quality).
        select_by: ``"mean"`` or ``"worst"``, the score that picks the best model.
    """

    def __init__(
        self,
        env_configs: Sequence[Mapping[str, Any]],
        seeds: Sequence[int],
        eval_every: int,
        out_dir: str | Path,
        reference: str = "thesis",
        at_start: bool = True,
        verbose: int = 1,
        select_by: str = "mean",
    ) -> None:
        super().__init__(verbose)
        if select_by not in ("mean", "worst"):
            raise ValueError(f"select_by must be 'mean' or 'worst', got {select_by!r}")
        self.select_by = select_by
        self.env_configs = [dict(c) for c in env_configs]
        self.seeds = [int(s) for s in seeds]
        self.eval_every = int(eval_every)
        self.out_dir = Path(out_dir)
        self.reference = reference
        self.at_start = at_start
        self.reference_metrics = run_episodes(reference, self.env_configs, self.seeds)
        if any(m["truncated"] for m in self.reference_metrics):
            raise RuntimeError(
                f"evaluation: the reference {reference!r} was truncated on a validation "
                "episode, so no ratio to it would mean anything; raise the env's "
                "max_decisions / max_time_s (gpushare-train --env '{\"max_decisions\": N}')"
            )
        self.best_score = float("inf")
        self.history: list[dict[str, float]] = []
        self._last_eval = 0
        self._created = time.perf_counter()

    def _on_training_start(self) -> None:
        self._last_eval = self.num_timesteps
        if self.at_start and not self.history:
            self.evaluate()

    def _on_step(self) -> bool:
        if self.num_timesteps - self._last_eval >= self.eval_every:
            self._last_eval = self.num_timesteps
            self.evaluate()
        return True

    def _on_training_end(self) -> None:
        if self.num_timesteps > self._last_eval:
            self.evaluate()

    def evaluate(self) -> dict[str, float]:
        """Evaluate now, log, save the best model; the evaluation's summary."""
        started = time.perf_counter()
        mine = run_episodes(self.model, self.env_configs, self.seeds)
        pairs = list(zip(mine, self.reference_metrics, strict=True))
        ratios = [m["mean_jct_s"] / r["mean_jct_s"] for m, r in pairs]
        jct_ratio = float(np.mean(ratios))
        worst_jct_ratio = float(np.max(ratios))
        makespan_ratio = float(np.mean([m["makespan_s"] / r["makespan_s"] for m, r in pairs]))
        truncated = any(m["truncated"] for m in mine)
        # a truncated episode's metrics cover only the jobs that finished (a livelocked
        # policy looks fast): such a model is never "best"
        if truncated:
            score = math.inf
        elif self.select_by == "worst":
            score = worst_jct_ratio
        else:
            score = jct_ratio + max(0.0, makespan_ratio - 1.0)
        summary = {
            "timesteps": float(self.num_timesteps),
            "mean_jct_h": float(np.mean([m["mean_jct_s"] for m in mine])) / _HOUR,
            "makespan_h": float(np.mean([m["makespan_s"] for m in mine])) / _HOUR,
            "gpu_util": float(np.mean([m.get("gpu_util", np.nan) for m in mine])),
            "suspends": float(np.mean([m.get("suspends", np.nan) for m in mine])),
            "invalid": float(np.mean([m["invalid"] for m in mine])),
            "truncated": float(np.mean([m["truncated"] for m in mine])),
            "jct_ratio": jct_ratio,
            "worst_jct_ratio": worst_jct_ratio,
            "geomean_jct_ratio": float(np.exp(np.mean(np.log(ratios)))),
            "makespan_ratio": makespan_ratio,
            "score": score,
            "seconds": time.perf_counter() - started,
            "wall_s": time.perf_counter() - self._created,
        }
        for key, value in summary.items():
            if key != "timesteps":
                self.logger.record(f"eval/{key}", value)
        self.logger.dump(self.num_timesteps)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if score < self.best_score:
            self.best_score = score
            summary["best"] = 1.0
            self.model.save(self.out_dir / "best_model.zip")
        self.history.append(summary)
        (self.out_dir / "evaluations.json").write_text(
            json.dumps(
                {
                    "reference": self.reference,
                    "select_by": self.select_by,
                    "seeds": self.seeds,
                    "reference_mean_jct_h": float(
                        np.mean([r["mean_jct_s"] for r in self.reference_metrics]) / _HOUR
                    ),
                    "history": self.history,
                },
                indent=2,
            )
        )
        if _HAS_MATPLOTLIB:  # the curve so far, redrawn after every evaluation
            from agents.curve import write_learning_curve

            write_learning_curve(self.out_dir)
        if self.verbose:
            print(
                f"[eval {self.num_timesteps}] jct/{self.reference}={jct_ratio:.4f} "
                f"worst={worst_jct_ratio:.4f} "
                f"makespan/{self.reference}={makespan_ratio:.4f} "
                f"invalid={summary['invalid']:.1f} ({summary['seconds']:.0f} s)",
                flush=True,
            )
        return summary


class ProgressBarCallback(BaseCallback):
    """A ``tqdm`` progress bar over the training steps (SB3's own needs ``rich``)."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = int(total)
        self._bar: Any = None

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=self.total, unit="step", dynamic_ncols=True)

    def _on_step(self) -> bool:
        if self._bar is not None:
            self._bar.update(self.training_env.num_envs)
        return True

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
