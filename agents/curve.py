"""Plot a training run's learning curve: ``python -m agents.curve RUN_DIR [--out PNG]``.

With several runs (``python -m agents.curve RUN_A RUN_B ... --out PNG``) it overlays their
mean-JCT ratios and suspensions, labelled by folder name, to compare training variants.

Reads ``RUN_DIR/evaluations.json`` (written by the periodic evaluation of
``gpushare-train``) and draws the validation mean JCT and makespan as ratios to the
reference heuristic, and the suspensions per episode, against training steps. With
``--heuristics gandiva fifo_pack ...`` it plays those heuristics on the same validation
seeds and env config (``RUN_DIR/config.json``) and draws their ratios as dotted lines. Training
redraws ``RUN_DIR/learning_curve.png`` after every evaluation when matplotlib is
installed; this command redraws it (or writes it elsewhere) for finished runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "compare_learning_curves",
    "heuristic_levels",
    "load_evaluations",
    "main",
    "plot_learning_curve",
    "plot_learning_curves",
    "write_learning_curve",
]

_DPI = 120


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (matplotlib is optional: imported here)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def load_evaluations(path: str | Path) -> dict[str, Any]:
    """The ``evaluations.json`` of a run folder (or that file itself).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not an evaluation history.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "evaluations.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no evaluations.json (run gpushare-train with --eval-every)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    history = data.get("history") if isinstance(data, dict) else None
    if not isinstance(history, list) or not history:
        raise ValueError(f"{path}: no evaluation history (a 'history' list) in the file")
    for i, entry in enumerate(history):
        missing = {"timesteps", "jct_ratio"} - set(entry)
        if missing:
            raise ValueError(f"{path}: history[{i}] lacks {sorted(missing)}")
    return data


def _folder(run: str | Path) -> Path:
    return Path(run) if Path(run).is_dir() else Path(run).parent


def heuristic_levels(run: str | Path, heuristics: Sequence[str]) -> dict[str, float]:
    """Mean JCT of each heuristic on ``run``'s validation seeds and env configs, as a ratio
    to the reference's (the ``jct_ratio`` of the run's evaluations).

    Raises:
        FileNotFoundError: the run folder has no ``config.json``.
        ValueError: an unknown heuristic name.
    """
    from agents.evaluation import run_episodes

    data = load_evaluations(run)
    config_path = _folder(run) / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path}: no run config (a gpushare-train output folder?)")
    env_configs = json.loads(config_path.read_text(encoding="utf-8"))["env_configs"]
    seeds = [int(seed) for seed in data["seeds"]]
    reference_h = float(data["reference_mean_jct_h"])
    levels: dict[str, float] = {}
    for name in heuristics:
        runs = run_episodes(name, env_configs, seeds)
        mean_h = sum(run["mean_jct_s"] for run in runs) / len(runs) / 3600.0
        levels[name] = mean_h / reference_h
    return levels


def _steps_k(history: Sequence[Mapping[str, float]]) -> np.ndarray:
    """Training steps of an evaluation history, in thousands."""
    return np.asarray([h["timesteps"] for h in history], dtype=float) / 1000.0


def _curve_axes(plt: Any) -> tuple[Any, Any]:
    """A learning-curve figure: ratios on top, suspensions below, sharing the steps axis."""
    return plt.subplots(2, 1, figsize=(7, 5.5), sharex=True, gridspec_kw={"height_ratios": [2, 1]})


def _finish_curve(
    plt: Any,
    figure: Any,
    ylabel: str,
    title: str,
    path: Path,
    levels: Mapping[str, float] | None = None,
) -> Path:
    """Label, grid and save a learning-curve figure drawn on :func:`_curve_axes`, with a
    dotted line at each of ``levels`` (heuristics' ratios, by name)."""
    top, bottom = figure.axes
    top.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    for name, value in (levels or {}).items():
        top.axhline(value, color="grey", linewidth=0.8, linestyle=":")
        top.annotate(
            f"{name} {value:.2f}", (1.0, value), xycoords=("axes fraction", "data"),
            xytext=(-4, 2), textcoords="offset points", ha="right", fontsize=7, color="dimgrey",
        )  # fmt: skip
    top.set_ylabel(ylabel)
    top.grid(alpha=0.3)
    top.legend(fontsize=8)
    bottom.set_ylabel("suspends per episode")
    bottom.set_xlabel("training steps [thousands]")
    bottom.grid(alpha=0.3)
    top.set_title(title, fontsize=10)
    figure.subplots_adjust(left=0.11, right=0.98, top=0.93, bottom=0.1, hspace=0.08)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_learning_curve(
    history: Sequence[Mapping[str, float]],
    path: Path,
    reference: str,
    title: str,
    levels: Mapping[str, float] | None = None,
) -> Path:
    """Periodic validation of a training run: ratios to the reference, and suspensions.

    Args:
        history: One entry per evaluation with ``timesteps``, ``jct_ratio``,
            ``makespan_ratio`` and ``suspends`` (``agents.callbacks``' records); an entry
            with ``best`` set was the best model so far when it was evaluated.
        path: Output PNG.
        reference: The heuristic the ratios refer to (for the labels).
        title: Figure title.
        levels: Mean-JCT ratios of heuristics on the same seeds, drawn as dotted lines.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    steps = _steps_k(history)
    figure, (top, bottom) = _curve_axes(plt)
    for key, label, colour in (
        ("jct_ratio", "mean JCT", "tab:blue"),
        ("makespan_ratio", "makespan", "tab:orange"),
    ):
        values = [h.get(key, math.nan) for h in history]
        top.plot(steps, values, marker="o", markersize=3, label=label, color=colour)
    best = [i for i, h in enumerate(history) if h.get("best")]
    if best:
        last = best[-1]
        top.plot(
            steps[last], history[last]["jct_ratio"], marker="*", markersize=14,
            color="tab:blue", linestyle="none", label="kept as best",
        )  # fmt: skip
    bottom.plot(steps, [h.get("suspends", math.nan) for h in history], color="tab:red")
    ylabel = f"ratio to {reference} (lower is better)"
    return _finish_curve(plt, figure, ylabel, title, path, levels)


def plot_learning_curves(
    histories: Mapping[str, Sequence[Mapping[str, float]]],
    path: Path,
    reference: str,
    title: str,
    levels: Mapping[str, float] | None = None,
) -> Path:
    """Several training runs overlaid: mean-JCT ratio to the reference, and suspensions.

    Args:
        histories: Evaluation histories (as :func:`plot_learning_curve` takes) by run label.
        path: Output PNG.
        reference: The heuristic the ratios refer to (for the labels).
        title: Figure title.
        levels: Mean-JCT ratios of heuristics on the same seeds, drawn as dotted lines.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    figure, (top, bottom) = _curve_axes(plt)
    for label, history in histories.items():
        steps = _steps_k(history)
        (line,) = top.plot(
            steps, [h.get("jct_ratio", math.nan) for h in history], marker="o", markersize=3,
            label=label,
        )  # fmt: skip
        bottom.plot(steps, [h.get("suspends", math.nan) for h in history], color=line.get_color())
    ylabel = f"mean JCT / {reference} (lower is better)"
    return _finish_curve(plt, figure, ylabel, title, path, levels)


def write_learning_curve(
    run: str | Path, out: str | Path | None = None, levels: Mapping[str, float] | None = None
) -> Path:
    """Draw the learning curve of ``run`` (a run folder or its ``evaluations.json``), with
    heuristics' ``levels`` (:func:`heuristic_levels`) as dotted lines."""
    data = load_evaluations(run)
    folder = Path(run) if Path(run).is_dir() else Path(run).parent
    target = Path(out) if out is not None else folder / "learning_curve.png"
    reference = str(data.get("reference", "reference"))
    seeds = data.get("seeds", [])
    title = f"{folder.name}: validation on seeds {seeds} against {reference}"
    return plot_learning_curve(data["history"], target, reference, title, levels)


def compare_learning_curves(
    runs: list[str | Path], out: str | Path, levels: Mapping[str, float] | None = None
) -> Path:
    """Overlay the learning curves of ``runs`` (run folders or ``evaluations.json`` files).

    Raises:
        ValueError: the runs were validated against different references or seeds.
    """
    histories: dict[str, Any] = {}
    setups = set()
    for run in runs:
        data = load_evaluations(run)
        folder = Path(run) if Path(run).is_dir() else Path(run).parent
        histories[folder.name] = data["history"]
        setups.add((str(data.get("reference", "reference")), tuple(data.get("seeds", []))))
    if len(setups) > 1:
        raise ValueError(f"the runs were validated differently, not comparable: {sorted(setups)}")
    reference, seeds = setups.pop()
    title = f"validation on seeds {list(seeds)} against {reference}"
    return plot_learning_curves(histories, Path(out), reference, title, levels)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.curve", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "runs", nargs="+", help="gpushare-train output folders, or their evaluations.json"
    )
    parser.add_argument(
        "--out", help="PNG to write (default RUN/learning_curve.png; required for several runs)"
    )
    parser.add_argument(
        "--heuristics",
        nargs="+",
        default=[],
        metavar="NAME",
        help="heuristics to play on the first run's validation seeds and draw as levels",
    )
    args = parser.parse_args(argv)
    if len(args.runs) > 1 and not args.out:
        parser.error("--out is required when comparing several runs")
    try:
        levels = heuristic_levels(args.runs[0], args.heuristics) if args.heuristics else None
        if len(args.runs) > 1:
            path = compare_learning_curves(args.runs, args.out, levels)
        else:
            path = write_learning_curve(args.runs[0], args.out, levels)
    except (FileNotFoundError, ValueError) as error:
        print(f"agents.curve: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
