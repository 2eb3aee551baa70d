"""TensorBoard callbacks: scheduling metrics of finished episodes, periodic evaluation
against the ``thesis`` heuristic on held-out seeds (keeping the best model), progress bar.

The periodic evaluation runs beside training by default: at each evaluation point the
model is saved and a separate process plays the checkpoint while training goes on
(:mod:`agents.eval_worker`); its results are taken in the order of the checkpoints, so
the best model and the history are those an evaluation in the training process gives.
"""

from __future__ import annotations

import importlib.util
import json
import math
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import TensorBoardOutputFormat

from agents.evaluation import METRIC_KEYS, run_episodes

_HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

__all__ = [
    "CHECKPOINT_DIR",
    "HeuristicEvalCallback",
    "ProgressBarCallback",
    "SchedulingMetricsCallback",
]

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


#: Folder, inside the output folder, of the checkpoints waiting for their evaluation.
CHECKPOINT_DIR = "eval_checkpoints"


@dataclass
class _Pending:
    """A checkpoint handed to the evaluation processes, not yet taken in."""

    timesteps: int
    path: Path
    future: Future[tuple[list[dict[str, float]], float]]


class HeuristicEvalCallback(BaseCallback):
    """Every ``eval_every`` steps, play the model on held-out seeds and compare with a heuristic.

    The reference heuristic is played once on the same (config, seed) episodes. Logged
    under ``eval/``: the model's mean JCT and makespan (hours), and the ratios
    ``jct_ratio`` / ``makespan_ratio`` (model / reference, means over episodes) and
    ``worst_jct_ratio`` (the largest episode's). The model with the lowest score is
    saved as ``best_model.zip`` and the history as ``evaluations.json``; the score is
    ``jct_ratio + max(0, makespan_ratio - 1)`` (``select_by="mean"``) or
    ``worst_jct_ratio`` (``"worst"``: the episode the model loses most on).

    With ``workers >= 1`` (``gpushare-train``'s default) the evaluations run beside
    training: at each evaluation point the model is saved under ``eval_checkpoints/`` and
    a pool of ``workers`` processes (one torch thread each) plays the checkpoint while training goes
    on; the results are taken in checkpoint order as they come (checked at every step,
    and all of them by :meth:`finish`), the best checkpoint becomes ``best_model.zip``
    and the others are deleted. The checkpoint is the model of that step, so the history
    and the best model are those of an evaluation in the training process (``workers=0``),
    except ``seconds`` (the evaluation process's time, loading the checkpoint included)
    and ``wall_s`` (when the result was taken in). TensorBoard gets each ``eval/`` value
    at its checkpoint's step; other logger outputs (``verbose``) with the next dump.
    The learning curve is drawn in the evaluation process too.

    Args:
        env_configs: Configs evaluated (e.g. one per workload).
        seeds: Held-out seeds, disjoint from the training and the test seeds.
        eval_every: Steps (summed over envs) between evaluations.
        out_dir: Folder of ``best_model.zip`` and ``evaluations.json``.
        reference: Baseline name compared with.
        at_start: Also evaluate before the first update (the warm start's quality).
        select_by: ``"mean"`` or ``"worst"``, the score that picks the best model.
        workers: Evaluation processes beside training; 0: evaluate in the training
            process, between updates.

    Raises:
        ValueError: ``workers`` below 0.
        RuntimeError: the reference was truncated on a validation episode (with
            ``workers >= 1``, when its result comes in: at a later step or at
            :meth:`finish`), or an evaluation process failed.
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
        workers: int = 0,
    ) -> None:
        super().__init__(verbose)
        if select_by not in ("mean", "worst"):
            raise ValueError(f"select_by must be 'mean' or 'worst', got {select_by!r}")
        if workers < 0:
            raise ValueError(f"HeuristicEvalCallback: workers must be >= 0, got {workers}")
        self.select_by = select_by
        self.env_configs = [dict(c) for c in env_configs]
        self.seeds = [int(s) for s in seeds]
        self.eval_every = int(eval_every)
        self.out_dir = Path(out_dir)
        self.reference = reference
        self.at_start = at_start
        self.workers = int(workers)
        self.best_score = float("inf")
        self.history: list[dict[str, float]] = []
        self._last_eval = 0
        self._created = time.perf_counter()
        self._pool: ProcessPoolExecutor | None = None
        self._pending: deque[_Pending] = deque()
        self._reference_future: Future[list[dict[str, float]]] | None = None
        self._chores: list[Future[None]] = []
        self.reference_metrics: list[dict[str, float]] = []
        if self.workers == 0:
            self._set_reference(run_episodes(reference, self.env_configs, self.seeds))
            return
        from agents import eval_worker

        # spawn: a fresh interpreter, not a fork of one whose torch runs threads
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=eval_worker.init_worker,
            initargs=(1,),
        )
        self._reference_future = self._pool.submit(
            eval_worker.score_reference, reference, self.env_configs, self.seeds
        )

    def _set_reference(self, metrics: list[dict[str, float]]) -> None:
        if any(m["truncated"] for m in metrics):
            raise RuntimeError(
                f"evaluation: the reference {self.reference!r} was truncated on a validation "
                "episode, so no ratio to it would mean anything; raise the env's "
                "max_decisions / max_time_s (gpushare-train --env '{\"max_decisions\": N}')"
            )
        self.reference_metrics = metrics

    def _on_training_start(self) -> None:
        self._last_eval = self.num_timesteps
        if self.at_start and not self.history and not self._pending:
            self._evaluate_now()

    def _on_step(self) -> bool:
        if self.num_timesteps - self._last_eval >= self.eval_every:
            self._last_eval = self.num_timesteps
            self._evaluate_now()
        if self._pending and self._pending[0].future.done():
            self._take_results(wait=False)
        return True

    def _on_training_end(self) -> None:
        if self.num_timesteps > self._last_eval:
            self._last_eval = self.num_timesteps
            self._evaluate_now()

    def _evaluate_now(self) -> None:
        """Evaluate the model of this step: in this process, or hand its checkpoint on."""
        if self._pool is None:
            self.evaluate()
            return
        from agents import eval_worker

        folder = self.out_dir / CHECKPOINT_DIR
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"step_{self.num_timesteps}.zip"
        self.model.save(path)
        future = self._pool.submit(
            eval_worker.score_checkpoint, str(path), self.env_configs, self.seeds
        )
        self._pending.append(_Pending(self.num_timesteps, path, future))

    def _take_results(self, wait: bool) -> None:
        """Take in the finished evaluations in checkpoint order (``wait``: all of them)."""
        if self._reference_future is not None:
            if not (wait or self._reference_future.done()):
                return
            self._set_reference(self._result(self._reference_future, "the reference"))
            self._reference_future = None
        while self._pending and (wait or self._pending[0].future.done()):
            pending = self._pending.popleft()
            mine, seconds = self._result(pending.future, f"the model at {pending.timesteps} steps")
            self._record(mine, pending.timesteps, seconds, pending.path)

    def _result(self, future: Future[Any], what: str) -> Any:
        try:
            return future.result()
        except Exception as error:
            self.close()
            raise RuntimeError(
                f"evaluation: scoring {what} failed in the evaluation process: "
                f"{type(error).__name__}: {error}"
            ) from error

    def finish(self) -> None:
        """Wait for every evaluation handed on, take the results in, stop the processes."""
        if self._pool is None:
            return
        self._take_results(wait=True)
        for chore in self._chores:
            self._result(chore, "the learning curve")
        self.close()

    def close(self) -> None:
        """Stop the evaluation processes (what is still queued is dropped) and remove
        the checkpoints not taken in."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for pending in self._pending:
            pending.path.unlink(missing_ok=True)
        self._pending.clear()
        with_checkpoints = self.out_dir / CHECKPOINT_DIR
        if with_checkpoints.is_dir() and not any(with_checkpoints.iterdir()):
            with_checkpoints.rmdir()

    def evaluate(self) -> dict[str, float]:
        """Evaluate now in this process, log, save the best model; the evaluation's summary."""
        started = time.perf_counter()
        mine = run_episodes(self.model, self.env_configs, self.seeds)
        return self._record(mine, self.num_timesteps, time.perf_counter() - started, None)

    def _record(
        self,
        mine: list[dict[str, float]],
        timesteps: int,
        seconds: float,
        checkpoint: Path | None,
    ) -> dict[str, float]:
        """Score one evaluation, log it, keep the best model; its summary.

        Args:
            mine: The model's metrics per (config, seed).
            timesteps: The step of the model evaluated.
            seconds: The evaluation's time.
            checkpoint: The saved model evaluated (``None``: ``self.model``, now).
        """
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
            "timesteps": float(timesteps),
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
            "seconds": seconds,
            "wall_s": time.perf_counter() - self._created,
        }
        self._log(summary, timesteps, in_process=checkpoint is None)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        best = self.out_dir / "best_model.zip"
        if score < self.best_score:
            self.best_score = score
            summary["best"] = 1.0
            if checkpoint is None:
                self.model.save(best)
            else:
                os.replace(checkpoint, best)
        elif checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
        self.history.append(summary)
        # written whole, then renamed: the evaluation process may be reading the last one
        written = self.out_dir / "evaluations.json.tmp"
        written.write_text(
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
        os.replace(written, self.out_dir / "evaluations.json")
        if _HAS_MATPLOTLIB:  # the curve so far, redrawn after every evaluation
            if self._pool is None:
                from agents.curve import write_learning_curve

                write_learning_curve(self.out_dir)
            else:
                from agents import eval_worker

                self._chores = [f for f in self._chores if not f.done() or f.exception()]
                self._chores.append(self._pool.submit(eval_worker.draw_curve, str(self.out_dir)))
        if self.verbose:
            print(
                f"[eval {timesteps}] jct/{self.reference}={jct_ratio:.4f} "
                f"worst={worst_jct_ratio:.4f} "
                f"makespan/{self.reference}={makespan_ratio:.4f} "
                f"invalid={summary['invalid']:.1f} ({summary['seconds']:.0f} s)",
                flush=True,
            )
        return summary

    def _log(self, summary: Mapping[str, float], timesteps: int, in_process: bool) -> None:
        """``eval/*`` to the logger: dumped now at this step (in process), or written to
        TensorBoard at the checkpoint's step and to the other outputs with the next dump."""
        values = {f"eval/{key}": value for key, value in summary.items() if key != "timesteps"}
        if in_process:
            for key, value in values.items():
                self.logger.record(key, value)
            self.logger.dump(timesteps)
            return
        for key, value in values.items():
            self.logger.record(key, value, exclude="tensorboard")
        for output in self.logger.output_formats:
            if isinstance(output, TensorBoardOutputFormat):
                for key, value in values.items():
                    output.writer.add_scalar(key, value, timesteps)
                output.writer.flush()


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
