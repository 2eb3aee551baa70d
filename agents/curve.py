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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "compare_learning_curves",
    "heuristic_levels",
    "load_evaluations",
    "main",
    "write_learning_curve",
]


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


def write_learning_curve(
    run: str | Path, out: str | Path | None = None, levels: Mapping[str, float] | None = None
) -> Path:
    """Draw the learning curve of ``run`` (a run folder or its ``evaluations.json``), with
    heuristics' ``levels`` (:func:`heuristic_levels`) as dotted lines."""
    from gpushare_eval.plots import plot_learning_curve

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
    from gpushare_eval.plots import plot_learning_curves

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
