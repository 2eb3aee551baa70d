"""Draw the learning curves of training runs grouped by variant, against steps and wall time.

Usage, from the repository root (docs/benchmarks.md#learning-before-and-after)::

    python docs/training_speed_curves.py --group "before (8 envs)" runs/A0 runs/A1 \\
        --group "after (32 envs)" runs/B0 runs/B1 --heuristics gandiva fifo_pack \\
        --out docs/learning_curve_speed.png

Each run is a ``gpushare-train`` output folder with an ``evaluations.json`` (validation
mean JCT over ``thesis``'s, with the wall time of each evaluation). Runs of one group share
a colour; the left panel is against env steps, the right against wall seconds since the
run started (evaluation time included, as the run spent it). ``--heuristics`` plays those
heuristics on the first run's validation seeds and draws their ratios as dotted lines.
Prints a Markdown table: each run's ratio at each evaluation step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.curve import heuristic_levels, load_evaluations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--group",
        nargs="+",
        action="append",
        required=True,
        metavar=("LABEL", "RUN"),
        help="a label, then the run folders of that variant (repeatable)",
    )
    parser.add_argument("--heuristics", nargs="*", default=[], metavar="NAME")
    parser.add_argument(
        "--ymax", type=float, default=None, help="top of the ratio axis; points above are listed"
    )
    parser.add_argument("--out", required=True, help="PNG to write")
    args = parser.parse_args(argv)
    groups: dict[str, list[str]] = {}
    for label, *runs in args.group:
        if not runs:
            parser.error(f"--group {label!r} names no run folder")
        groups[label] = runs
    try:
        data = {run: load_evaluations(run) for runs in groups.values() for run in runs}
        first = next(iter(data))
        levels = heuristic_levels(first, args.heuristics) if args.heuristics else {}
    except (FileNotFoundError, ValueError) as error:
        print(f"training_speed_curves: {error}", file=sys.stderr)
        return 2
    seeds = {tuple(d.get("seeds", [])) for d in data.values()}
    if len(seeds) > 1:
        print(f"training_speed_curves: runs validated on different seeds {seeds}", file=sys.stderr)
        return 2

    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    figure, (by_steps, by_wall) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    colours = plt.get_cmap("tab10")
    dashes = ["-", "--", "-.", ":"]
    off_scale: list[str] = []
    for i, (label, runs) in enumerate(groups.items()):
        for j, run in enumerate(runs):
            history = data[run]["history"]
            ratio = [h["jct_ratio"] for h in history]
            if args.ymax is not None:
                off_scale += [
                    f"{Path(run).name} {h['jct_ratio']:.1f} at {h['timesteps'] / 1e3:.0f}k"
                    for h in history
                    if h["jct_ratio"] > args.ymax
                ]
            style = {
                "color": colours(i),
                "linestyle": dashes[j % len(dashes)],
                "marker": "o",
                "markersize": 3,
                "alpha": 0.85,
            }
            name = f"{label}: {Path(run).name}"
            by_steps.plot([h["timesteps"] / 1e3 for h in history], ratio, label=name, **style)
            by_wall.plot([h.get("wall_s", float("nan")) for h in history], ratio, **style)
    for name, level in sorted(levels.items()):
        for axis in (by_steps, by_wall):
            axis.axhline(level, color="grey", linestyle=":", linewidth=1)
        by_steps.text(0, level, f" {name} {level:.2f}", color="grey", fontsize=8, va="bottom")
    for axis in (by_steps, by_wall):
        axis.axhline(1.0, color="black", linewidth=0.8)
        axis.grid(alpha=0.3)
    by_steps.set_xlabel("env steps (thousands)")
    by_wall.set_xlabel("wall seconds since the run started")
    by_steps.set_ylabel("validation mean JCT / thesis (lower is better)")
    if args.ymax is not None:
        lowest = min(h["jct_ratio"] for d in data.values() for h in d["history"])
        by_steps.set_ylim(bottom=min(lowest, *levels.values(), 1.0) - 0.05, top=args.ymax)
    by_steps.legend(fontsize=7)
    title = f"validation seeds {list(seeds.pop())}"
    if off_scale:
        title += "; off the scale: " + ", ".join(off_scale)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    plt.close(figure)

    def thousands(steps: float) -> int:  # 50,016 steps (32 envs x 64) and 50,000 alike
        return round(steps / 1000.0)

    steps = sorted({thousands(h["timesteps"]) for d in data.values() for h in d["history"]})
    print("| run | " + " | ".join(f"{s}k" for s in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for run, d in data.items():
        by_step = {thousands(h["timesteps"]): h["jct_ratio"] for h in d["history"]}
        cells = [f"{by_step[s]:.3f}" if s in by_step else "" for s in steps]
        print(f"| {run} | " + " | ".join(cells) + " |")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
