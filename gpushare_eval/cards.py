"""Zoo cards: a shipped agent's record and card, every number measured by the harness.

:func:`ship` copies a trained model to ``agents/zoo/<name>.zip`` and writes
``<name>.json`` (the env config it was trained for, which ``gpushare-evaluate`` reads for
its observation-shaping keys; the training commands, seeds and time from the run's
``config.json``; the metrics of one test episode per env config, which
``tests/agents/test_zoo.py`` replays exactly) and the card ``<name>.md``; with compare
seeds, also the mean and 95% CI over them beside every baseline named
(:func:`compare`). ``python -m scripts.ship`` is its command line.

The numbers come from the evaluation harness, not from a loop of their own: each episode
is a :class:`~gpushare_eval.specs.RunSpec` carried out by
:func:`~gpushare_eval.runs.execute_run` (over processes by
:func:`~gpushare_eval.runs.run_all`), as ``gpushare-evaluate``'s runs are, with the same
run status (a truncated run is refused), and the intervals are
:func:`~gpushare_eval.stats.mean_ci`, as in ``summary.md``.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents import ZOO_DIR
from gpushare_env.presets import PHILLY_TEST_SEEDS
from gpushare_eval.plan import seeded
from gpushare_eval.report import RunStatus
from gpushare_eval.runs import execute_run, run_all
from gpushare_eval.specs import PolicySpec, RunSpec, WorkloadSpec
from gpushare_eval.stats import mean_ci

__all__ = [
    "DEFAULT_BASELINES",
    "RECORDED_KEYS",
    "card_run",
    "compare",
    "config_label",
    "lineage",
    "markdown",
    "portable_config",
    "ship",
]

#: Metrics of the recorded evaluation, replayed by the zoo test.
RECORDED_KEYS: tuple[str, ...] = ("mean_jct_s", "makespan_s", "gpu_util", "suspends", "decisions")

#: The heuristics a card compares with by default (``python -m scripts.ship --compare``).
DEFAULT_BASELINES: tuple[str, ...] = (
    "fifo", "tiresias", "fifo_pack", "sjf_pack", "gandiva", "min_frag", "random", "thesis",
)  # fmt: skip


def card_run(
    policy: str | Path,
    env_config: Mapping[str, Any],
    seed: int,
    *,
    label: str | None = None,
    workload: str | None = None,
    index: int = 0,
) -> RunSpec:
    """The harness's run of ``policy`` on one env config and seed, as a card measures it.

    Args:
        policy: A saved agent (a path ending in ``.zip``), or a heuristic as
            ``gpushare-evaluate --policies`` names it (``NAME`` or ``NAME:KEY=VALUE``),
            seeded by the episode seed as there (:func:`~gpushare_eval.plan.seeded`).
        env_config: The env config, whole (an agent's is the one it was trained for).
        seed: The episode seed.
        label: The policy's label in the row (default: ``policy`` as given).
        workload: The workload's label in the row (default: the config's workload).
        index: The run's position (for :func:`~gpushare_eval.runs.run_all`).
    """
    text = str(policy)
    if text.endswith(".zip"):
        spec = PolicySpec(label=label or text, path=str(Path(text).resolve()))
    else:
        import baselines

        name, params = baselines.parse_spec(text)
        spec = seeded(PolicySpec(label=label or text, name=name, params=params), seed)
    workload_spec = WorkloadSpec(
        label=workload or str(env_config.get("workload")),
        spec=env_config.get("workload", "thesis"),
        num_jobs=env_config.get("num_jobs"),
    )
    return RunSpec(index, spec, workload_spec, seed, dict(env_config), keep_jobs=False)


def compare(
    policy: str | Path,
    env_configs: Sequence[dict[str, Any]],
    seeds: Sequence[int],
    baselines_: Sequence[str],
    workers: int = 1,
) -> dict[str, Any]:
    """Per env config and policy: mean and 95% CI of mean JCT and makespan over
    ``seeds``, and the mean of the per-seed ratios to ``thesis`` (paired: same seeds).

    Args:
        policy: The agent (a saved ``.zip``) or a heuristic name, labelled ``agent``.
        env_configs: The env configs, each a table of the card.
        seeds: The episode seeds.
        baselines_: The heuristics beside it.
        workers: Processes for the runs.

    Raises:
        RuntimeError: a run crashed, or was truncated (its metrics would cover only the
            jobs that finished, so a livelocked policy would look fast); the error names
            the policy and seed and says which cap to raise.
    """
    names = [*baselines_, "agent"]
    cells = [(c, name, seed) for c in range(len(env_configs)) for name in names for seed in seeds]
    specs = [
        card_run(policy if name == "agent" else name, env_configs[c], seed, label=name,
                 workload=config_label(env_configs[c], env_configs), index=index)
        for index, (c, name, seed) in enumerate(cells)
    ]  # fmt: skip
    runs: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for (c, name, seed), output in zip(cells, run_all(specs, workers, progress=False), strict=True):
        config = env_configs[c]
        if output.error is not None:
            raise RuntimeError(f"compare: {name} on {config['workload']!r} seed {seed}: "
                               f"{output.error}")  # fmt: skip
        if output.row["status"] != RunStatus.COMPLETE:
            raise RuntimeError(
                f"compare: {name} truncated on {config['workload']!r} seed {seed} after "
                f"{output.row['decisions']} decisions ({output.row['status']}); raise the "
                "env's max_decisions / max_time_s"
            )
        runs.setdefault((c, name), []).append(output.row)
    table: dict[str, Any] = {}
    for c, config in enumerate(env_configs):
        rows = {
            name: {
                key: [row[key] for row in runs[(c, name)]] for key in ("mean_jct_s", "makespan_s")
            }
            for name in names
        }
        summary: dict[str, Any] = {}
        for name, values in rows.items():
            entry: dict[str, Any] = {}
            for key, series in values.items():
                entry[key] = {**_mean_ci95(series), "per_seed": series}
                if "thesis" in rows:
                    ratios = [v / r for v, r in zip(series, rows["thesis"][key], strict=True)]
                    entry[key]["ratio_to_thesis"] = _mean_ci95(ratios)
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
    interval (:func:`~gpushare_eval.stats.mean_ci`, as in ``summary.md``; 0 for a single
    value, so the card still prints)."""
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
    workers: int = 1,
) -> Path:
    """Copy ``model_path`` into ``zoo`` as ``<name>.zip`` and write ``<name>.json`` and
    the card ``<name>.md``, every number measured by the harness's runs of the copy.

    Args:
        model_path: A trained ``model.zip`` with its run's ``config.json`` beside it.
        name: The shipped name.
        test_seed: The seed of the recorded evaluation (one episode per env config).
        compare_seeds: Seeds of the comparison with ``baselines_`` (none: no comparison).
        baselines_: Heuristics to compare with (names as ``gpushare-evaluate`` takes).
        zoo: The folder to ship into.
        workers: Processes for the comparison's runs.

    Returns:
        The shipped model's path.
    """
    model_path = Path(model_path)
    run_record = json.loads((model_path.parent / "config.json").read_text(encoding="utf-8"))
    zoo.mkdir(parents=True, exist_ok=True)
    target = zoo / f"{name}.zip"
    from agents.training import load_model  # torch: only when shipping

    _save_without_optimizer_state(load_model(model_path), target)
    configs = [portable_config(c) for c in run_record["env_configs"]]
    recorded = []
    for config in configs:
        row = execute_run(card_run(target, config, test_seed)).row
        recorded.append(
            {
                "env_config": config,
                "seed": test_seed,
                "metrics": {k: row[k] for k in RECORDED_KEYS if k in row},
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
            "table": compare(target, configs, compare_seeds, baselines_, workers=workers),
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
