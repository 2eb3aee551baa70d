"""Expert iteration's curve: ``python -m agents.rounds RUN_DIR [--seeds 500] [--workers 2]``.

A run of ``gpushare-train`` with DAgger rounds (``--dagger K``) saves the clone after each
round (``dagger_<i>.zip``), and a resumed run starts from ``resumed_from``: round 0. This
plays every round's model, ``thesis`` and the run's teachers (``--teacher``, per env:
``agents.train_config.teachers``) on the run's validation env configs
(``agents.train_config.validation_configs``: its workloads on its main cluster, then each
trace at its sized cluster) and seeds, and writes into ``RUN_DIR``:

- ``rounds.json``: each episode's mean JCT, and per round its ratio to ``thesis`` on
  each (config, seed), their geometric mean and worst, the teacher's beside them;
- ``rounds.png`` (with matplotlib): those ratios against the round, one line per
  validation env, the geometric mean and the worst in bold, the teacher's as dashed
  lines.

A learned scheduler distilled from a planner is judged by its worst trace: the plot shows
how far each round is from the teacher on each one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

__all__ = ["main", "plot_rounds", "round_models", "score_rounds"]

_DPI = 120


def round_models(run: str | Path) -> list[tuple[int, str]]:
    """``(round, model path)`` of a run folder: the model it resumed from as round 0 (if
    it resumed), then ``dagger_<i>.zip`` for each round saved.

    Raises:
        FileNotFoundError: no ``config.json`` in ``run`` (not a finished training run).
        ValueError: no round saved.
    """
    folder = Path(run)
    record = _record(folder)
    models: list[tuple[int, str]] = []
    if record.get("resumed_from"):
        models.append((0, str(record["resumed_from"])))
    for i in range(1, len(record.get("dagger", [])) + 1):
        path = folder / f"dagger_{i}.zip"
        if path.is_file():
            models.append((i, str(path)))
    if not models:
        raise ValueError(f"{folder}: no DAgger round saved (dagger_<i>.zip) and no resumed model")
    return models


def _record(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no run config (a finished gpushare-train output folder?)")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _label(config: Mapping[str, Any]) -> str:
    """A short name of a validation env: its workload's (a trace's file stem) and cluster."""
    workload = config.get("workload")
    if isinstance(workload, Mapping) and "path" in workload:
        name = Path(str(workload["path"])).stem
    else:
        name = str(workload)
    cluster = config.get("cluster")
    where = cluster.get("name", "sized") if isinstance(cluster, Mapping) else str(cluster)
    return f"{name} on {where}"


def score_rounds(
    run: str | Path, seeds: Sequence[int], pool: Executor | None = None
) -> dict[str, Any]:
    """Every round's model, ``thesis`` and the teachers on the run's validation envs.

    Returns:
        ``{"envs": [label], "seeds", "teachers": [name per env], "thesis_s": [[s]],
        "teacher_s": [[s]], "rounds": [{"round", "model", "mean_jct_s": [[s]],
        "ratios": [[r]], "geomean", "worst"}], "teacher": {"ratios", "geomean",
        "worst"}}``, lists over envs then seeds.
    """
    from agents.eval_worker import score_checkpoint, score_reference
    from agents.train_config import TrainConfig, teachers, validation_configs

    folder = Path(run)
    record = _record(folder)
    config = TrainConfig.from_any(record["train"])
    configs = [dict(c) for c in record["env_configs"]]
    val = validation_configs(config, configs)
    names = teachers(config, configs)
    val_teachers = [names[configs.index(c)] for c in val]
    models = round_models(folder)
    # thesis, each round's model (loaded once), then each env's teacher on its env
    calls: list[tuple[Any, str, list[dict[str, Any]]]] = [
        (score_reference, "thesis", val),
        *[(score_checkpoint, path, val) for _, path in models],
        *[(score_reference, t, [c]) for t, c in zip(val_teachers, val, strict=True)],
    ]
    if pool is None:
        played = [call(name, envs, seeds) for call, name, envs in calls]
    else:
        futures = [pool.submit(call, name, envs, seeds) for call, name, envs in calls]
        played = [f.result() for f in futures]
    # a checkpoint's scores come with the seconds they took
    runs = [p[0] if isinstance(p, tuple) else p for p in played]
    jct = [[run["mean_jct_s"] for run in block] for block in runs]
    blocks = [*jct[: 1 + len(models)], [x for block in jct[1 + len(models) :] for x in block]]

    def grid(block: list[float]) -> list[list[float]]:
        return [block[i * len(seeds) : (i + 1) * len(seeds)] for i in range(len(val))]

    thesis = grid(blocks[0])

    def ratios(block: list[float]) -> dict[str, Any]:
        r = [
            [m / t for m, t in zip(row, ref, strict=True)]
            for row, ref in zip(grid(block), thesis, strict=True)
        ]
        flat = [x for row in r for x in row]
        return {
            "ratios": r,
            "geomean": math.exp(sum(math.log(x) for x in flat) / len(flat)),
            "worst": max(flat),
        }

    return {
        "run": str(folder),
        "envs": [_label(c) for c in val],
        "seeds": [int(s) for s in seeds],
        "teachers": val_teachers,
        "thesis_s": thesis,
        "teacher_s": grid(blocks[-1]),
        "teacher": ratios(blocks[-1]),
        "rounds": [
            {"round": r, "model": m, "mean_jct_s": grid(block), **ratios(block)}
            for (r, m), block in zip(models, blocks[1:-1], strict=True)
        ],
    }


def plot_rounds(curve: Mapping[str, Any], path: str | Path) -> None:
    """Each validation env's mean-JCT ratio to ``thesis`` against the round (mean over
    the seeds), the geometric mean and worst in bold, the teacher's dashed."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    rounds = [r["round"] for r in curve["rounds"]]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, env in enumerate(curve["envs"]):
        ys = [sum(r["ratios"][i]) / len(r["ratios"][i]) for r in curve["rounds"]]
        ax.plot(rounds, ys, marker="o", linewidth=0.8, alpha=0.6, label=env)
    ax.plot(rounds, [r["geomean"] for r in curve["rounds"]], "k-", linewidth=2.5,
            label="geometric mean")  # fmt: skip
    ax.plot(rounds, [r["worst"] for r in curve["rounds"]], "r-", linewidth=2.5, label="worst")
    ax.axhline(curve["teacher"]["geomean"], color="k", linestyle="--", linewidth=1.2,
               label="teacher: geometric mean")  # fmt: skip
    ax.axhline(curve["teacher"]["worst"], color="r", linestyle="--", linewidth=1.2,
               label="teacher: worst")  # fmt: skip
    ax.axhline(1.0, color="grey", linewidth=0.6)
    ax.set_xlabel("expert-iteration round (0: the model it started from)")
    ax.set_ylabel("mean JCT / thesis (validation)")
    ax.set_xticks(rounds)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agents.rounds", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run", help="a gpushare-train output folder with DAgger rounds")
    parser.add_argument("--seeds", default="500", help="validation seeds (default 500)")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    args = parser.parse_args(argv)
    from gpushare_env.seeding import parse_seeds

    try:
        seeds = parse_seeds(args.seeds)
        if args.workers > 1:
            from agents.bc import label_pool

            with label_pool(args.workers) as pool:
                curve = score_rounds(args.run, seeds, pool)
        else:
            curve = score_rounds(args.run, seeds)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    folder = Path(args.run)
    (folder / "rounds.json").write_text(json.dumps(curve, indent=2))
    for r in curve["rounds"]:
        print(f"round {r['round']}: geomean {r['geomean']:.3f}, worst {r['worst']:.3f}")
    teacher = curve["teacher"]
    print(f"teacher: geomean {teacher['geomean']:.3f}, worst {teacher['worst']:.3f}")
    try:
        plot_rounds(curve, folder / "rounds.png")
    except ImportError:
        print("(no matplotlib: rounds.png not drawn)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
