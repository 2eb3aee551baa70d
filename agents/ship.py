"""Ship a trained agent into ``agents/zoo/`` with its recipe and its recorded test numbers.

``python -m agents.ship RUN_DIR/best_model.zip --name mppo_philly_medium`` copies the
model to ``agents/zoo/<name>.zip`` and writes ``<name>.json``: the env config it was
trained for (``scripts/evaluate`` reads its observation-shaping keys), the training
command, seed and time (from the run's ``config.json``), the metrics of one test episode
per workload (``tests/agents/test_zoo.py`` replays them exactly), and, with
``--compare``, mean and 95% CI over the test seeds beside every baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents import ZOO_DIR
from agents.evaluation import run_episode
from agents.training import load_model
from gpushare_env.presets import PHILLY_TEST_SEEDS
from gpushare_env.stats import mean_ci

__all__ = [
    "RECORDED_KEYS",
    "ZOO_DIR",
    "compare",
    "config_label",
    "lineage",
    "main",
    "markdown",
    "portable_config",
    "ship",
]

#: Metrics replayed by the zoo test.
RECORDED_KEYS: tuple[str, ...] = ("mean_jct_s", "makespan_s", "gpu_util", "suspends", "decisions")


def compare(
    model: Any,
    env_configs: Sequence[dict[str, Any]],
    seeds: Sequence[int],
    baselines_: Sequence[str],
) -> dict[str, Any]:
    """Per workload and policy: mean and 95% CI of mean JCT and makespan over ``seeds``,
    and the paired mean ratio to ``thesis`` (same seeds).

    Raises:
        RuntimeError: an episode was truncated (its metrics would cover only the jobs
            that finished, so a livelocked policy would look fast); the error names the
            policy and seed and says which cap to raise.
    """
    table: dict[str, Any] = {}
    for config in env_configs:
        rows: dict[str, dict[str, list[float]]] = {}
        for name in [*baselines_, "agent"]:
            policy = model if name == "agent" else name
            runs = [run_episode(policy, config, seed) for seed in seeds]
            for seed, run in zip(seeds, runs, strict=True):
                if run["truncated"]:
                    raise RuntimeError(
                        f"compare: {name} truncated on {config['workload']!r} seed {seed} "
                        f"after {run['decisions']:.0f} decisions; raise the env's "
                        "max_decisions / max_time_s"
                    )
            rows[name] = {
                "mean_jct_s": [r["mean_jct_s"] for r in runs],
                "makespan_s": [r["makespan_s"] for r in runs],
            }
        summary: dict[str, Any] = {}
        for name, values in rows.items():
            entry: dict[str, Any] = {}
            for key, series in values.items():
                entry[key] = {**_mean_ci95(series), "per_seed": series}
                if "thesis" in rows:
                    ratios = np.asarray(series) / np.asarray(rows["thesis"][key])
                    entry[key]["ratio_to_thesis"] = _mean_ci95(ratios.tolist())
            summary[name] = entry
        table[config_label(config, env_configs)] = summary
    return table


def config_label(config: dict[str, Any], env_configs: Sequence[dict[str, Any]]) -> str:
    """A card's name for one of a run's env configs: its workload (a trace by its file
    name, ``"random runs"`` when ``cut="random"``), and its cluster when the run has
    several (``philly_heavy on thesis``, ``11cb48.csv random runs on 8x8 v100, load 0.39``)."""

    def workload(value: Any) -> str:
        if isinstance(value, dict) and value.get("path"):
            runs = " random runs" if value.get("cut") == "random" else ""
            return Path(value["path"]).name + runs
        return str(value)

    def cluster(value: Any) -> str:
        if isinstance(value, dict):
            return str(value.get("name") or f"{value.get('nodes')}x{value.get('gpus_per_node')}")
        return str(value)

    label = workload(config["workload"])
    clusters = {json.dumps(c["cluster"], sort_keys=True) for c in env_configs}
    return f"{label} on {cluster(config['cluster'])}" if len(clusters) > 1 else label


def portable_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with a trace path inside this repository made relative to its root, so
    a card replays on any clone (``tests/agents/test_zoo.py`` runs from the root)."""
    value = config.get("workload")
    if not (isinstance(value, dict) and value.get("path")):
        return config
    path, root = Path(value["path"]).resolve(), _REPOSITORY.resolve()
    if not path.is_relative_to(root):
        return config
    return {**config, "workload": {**value, "path": path.relative_to(root).as_posix()}}


_REPOSITORY = Path(__file__).resolve().parents[1]


def _mean_ci95(values: list[float]) -> dict[str, float]:
    """A card's ``{"mean", "ci95"}``: the mean and the half-width of its 95% Student-t
    interval (``gpushare_env.stats.mean_ci``; 0 for a single value, so the card still
    prints)."""
    ci = mean_ci(values)
    return {"mean": ci.mean, "ci95": 0.0 if ci.n == 1 else ci.half_width}


def _save_without_optimizer_state(model: Any, path: Path) -> None:
    """Save with a fresh optimizer: Adam's moments are twice the weights' size and only
    matter for continuing that exact run (a resumed fine-tune starts its own). The
    TensorBoard folder of the training machine is not kept."""
    policy = model.policy
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=model.lr_schedule(1.0), **policy.optimizer_kwargs
    )
    model.tensorboard_log = None
    model.save(path)


def lineage(run_record: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs that made a model, first to last: each one's command and training time.

    A run that resumed a saved model (``resumed_from``) is preceded by the run that saved
    it, read from the ``config.json`` beside that model (if it is still there).
    """
    chain = [run_record]
    seen: set[Path] = set()
    while (source := chain[0].get("resumed_from")) is not None:
        record_path = (Path(source).parent / "config.json").resolve()
        if record_path in seen or not record_path.is_file():
            break
        seen.add(record_path)
        chain.insert(0, json.loads(record_path.read_text(encoding="utf-8")))
    return [
        {
            "command": record.get("command"),
            "seconds": _seconds(record),
            "train_seeds": record.get("train", {}).get("train_seeds", []),
        }
        for record in chain
    ]


def _seconds(record: dict[str, Any]) -> float:
    """A run's training time: its recorded total, or, for a run stopped before it wrote
    one, the wall clock of its kept (best) evaluation (``evaluations.json`` beside it)."""
    total = (record.get("seconds") or {}).get("total")
    if total is not None:
        return float(total)
    out = record.get("train", {}).get("out")
    history_path = Path(out) / "evaluations.json" if out else None
    if history_path is None or not history_path.is_file():
        return float("nan")
    history = json.loads(history_path.read_text(encoding="utf-8")).get("history", [])
    kept = [entry for entry in history if entry.get("best")]
    return float(kept[-1]["wall_s"]) if kept else float("nan")


def ship(
    model_path: str | Path,
    name: str,
    test_seed: int = PHILLY_TEST_SEEDS[0],
    compare_seeds: Sequence[int] = (),
    baselines_: Sequence[str] = (),
    zoo: Path = ZOO_DIR,
) -> Path:
    """Copy ``model_path`` into ``zoo`` as ``<name>.zip`` and write ``<name>.json``."""
    model_path = Path(model_path)
    run_record = json.loads((model_path.parent / "config.json").read_text(encoding="utf-8"))
    zoo.mkdir(parents=True, exist_ok=True)
    target = zoo / f"{name}.zip"
    _save_without_optimizer_state(load_model(model_path), target)
    model = load_model(target)
    configs = [portable_config(c) for c in run_record["env_configs"]]
    recorded = []
    for config in configs:
        metrics = run_episode(model, config, test_seed)
        recorded.append(
            {
                "env_config": config,
                "seed": test_seed,
                "metrics": {k: metrics[k] for k in RECORDED_KEYS if k in metrics},
            }
        )
    record: dict[str, Any] = {
        "algo": run_record["algo"],
        "env_config": run_record["env_config"],
        "source": str(model_path),
        "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
        "command": run_record.get("command"),
        "seed": run_record["train"]["seed"],
        "train": run_record["train"],
        "training_seconds": run_record.get("seconds"),
        "lineage": lineage(run_record),
        "bc": {k: v for k, v in run_record.get("bc", {}).items() if k != "history"},
        "validation": run_record.get("evaluations"),
        "versions": run_record.get("versions"),
        "recorded_evaluation": recorded,
    }
    if compare_seeds:
        record["comparison"] = {
            "seeds": list(compare_seeds),
            "table": compare(model, configs, compare_seeds, baselines_),
        }
    (zoo / f"{name}.json").write_text(json.dumps(record, indent=2, default=str))
    (zoo / f"{name}.md").write_text(markdown(name, record))
    return target


def markdown(name: str, record: dict[str, Any]) -> str:
    """A human-readable card of a shipped agent: recipe, recorded numbers, comparison.

    A record's ``renamed_policies`` (``{old name: new name}``, written when a policy was
    renamed after the runs) is listed under the commands, which show the new names.
    """
    seconds = float((record.get("training_seconds") or {}).get("total", float("nan")))
    runs = record.get("lineage") or [{"command": record["command"], "seconds": seconds}]
    lines = [f"# `{name}`", "", f"- algorithm: `{record['algo']}`; seed: {record['seed']}"]
    if len(runs) == 1:
        lines.append(f"- command: `{shlex.join(runs[0]['command'] or [])}`")
    else:
        lines.append("- commands, in order (each run resumes the model the one before saved):")
        lines += [
            f"  {i}. `{shlex.join(run['command'] or [])}` ({run['seconds']:.0f} s)"
            for i, run in enumerate(runs, 1)
        ]
    renamed = record.get("renamed_policies") or {}
    if renamed:
        lines.append(
            "- renamed since these runs (the commands above use the new names; same "
            "schedules): " + "; ".join(f"`{new}` was `{old}`" for old, new in renamed.items())
        )
    total = sum(run["seconds"] for run in runs)
    lines += [
        f"- training time: {total:.0f} s (wall clock, 2 shared CPU cores)",
        f"- env: `{json.dumps(record['env_config'])}`",
        "",
        "## Recorded evaluation (replayed exactly by `tests/agents/test_zoo.py`)",
        "",
        "| workload | seed | mean JCT [s] | makespan [s] | decisions |",
        "|---|---|---|---|---|",
    ]
    configs = [entry["env_config"] for entry in record["recorded_evaluation"]]
    for entry in record["recorded_evaluation"]:
        m = entry["metrics"]
        lines.append(
            f"| {config_label(entry['env_config'], configs)} | {entry['seed']} "
            f"| {m['mean_jct_s']:.1f} "
            f"| {m['makespan_s']:.1f} | {m.get('decisions', '')} |"
        )
    comparison = record.get("comparison")
    if comparison:
        lines += ["", f"## Test seeds {comparison['seeds']}: mean and 95% CI", ""]
        for workload, table in comparison["table"].items():
            lines += [
                f"### {workload}",
                "",
                "| policy | mean JCT [h] | JCT / thesis (paired) | makespan [h] "
                "| makespan / thesis |",
                "|---|---|---|---|---|",
            ]
            for policy, entry in table.items():
                jct, mk = entry["mean_jct_s"], entry["makespan_s"]
                jr = jct.get("ratio_to_thesis", {"mean": float("nan"), "ci95": 0.0})
                mr = mk.get("ratio_to_thesis", {"mean": float("nan"), "ci95": 0.0})
                lines.append(
                    f"| {policy} | {jct['mean'] / 3600:.2f} ± {jct['ci95'] / 3600:.2f} "
                    f"| {jr['mean']:.3f} ± {jr['ci95']:.3f} "
                    f"| {mk['mean'] / 3600:.0f} ± {mk['ci95'] / 3600:.0f} "
                    f"| {mr['mean']:.3f} ± {mr['ci95']:.3f} |"
                )
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.ship MODEL --name NAME [--compare]``."""
    parser = argparse.ArgumentParser(prog="python -m agents.ship", description=__doc__)
    parser.add_argument("model", help="a trained model.zip (its run's config.json beside it)")
    parser.add_argument("--name", required=True)
    parser.add_argument("--test-seed", type=int, default=PHILLY_TEST_SEEDS[0])
    parser.add_argument("--compare", action="store_true", help="compare on all test seeds")
    parser.add_argument(
        "--baselines",
        nargs="*",
        default=["fifo", "tiresias", "fifo_pack", "sjf_pack", "gandiva", "fgd", "random", "thesis"],
    )
    args = parser.parse_args(argv)
    path = ship(
        args.model,
        args.name,
        args.test_seed,
        PHILLY_TEST_SEEDS if args.compare else (),
        args.baselines,
    )
    print(f"shipped {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
