"""What an evaluation writes besides the runs' rows: ``config.json``, summaries and plots.

``runs.csv`` and ``jobs.csv`` are written run by run as the runs finish
(:class:`~gpushare_eval.store.RunStore`); :func:`build_config` is written before
the first run, and :func:`write_outputs` draws the summaries and plots from every
recorded run once they are all done.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import platform
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_eval.plan import Plan
from gpushare_eval.report import (
    HEADLINE_METRICS,
    RunStatus,
    across_workloads,
    is_oracle,
    render_markdown,
    render_ratio_table,
    run_status,
    summarize_runs,
)
from gpushare_eval.specs import (
    PROG,
    REPO_ROOT,
    RunOutput,
    RunSpec,
    WorkloadSpec,
    safe_name,
)
from gpushare_eval.store import PLOT_PATTERNS, run_key, write_json


def _versions() -> dict[str, str]:
    """Versions of Python and the packages a run depends on."""
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for package in ("gpushare-env", "numpy", "gymnasium", "torch", "stable-baselines3",
                    "sb3-contrib", "matplotlib"):  # fmt: skip
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _git_commit() -> str | None:
    """The repository's commit (with ``-dirty`` if it has changes), when git is there."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def _reproduce_command(run: RunSpec) -> str:
    """A ``gpushare-evaluate`` command line that repeats this one run."""
    policy = run.policy.path or run.policy.name
    parts = [PROG, "--policies", str(policy), "--seeds", str(run.seed)]
    workload = run.workload.spec
    if isinstance(workload, str) and run.workload.trace_sha256 is not None:
        parts += ["--trace", workload]
    else:
        parts += ["--workload", workload if isinstance(workload, str) else json.dumps(workload)]
    cluster = run.env_config.get("cluster")
    parts += ["--cluster", cluster if isinstance(cluster, str) else json.dumps(cluster)]
    if run.workload.num_jobs is not None:
        parts += ["--num-jobs", str(run.workload.num_jobs)]
    if run.headless:
        parts.append("--headless")
    return shlex.join(parts)


def _resolved_workload(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """Every field of the workload config the spec stands for."""
    from gpushare_env.workloads import WorkloadConfig

    config = WorkloadConfig.from_any(spec)
    return {
        k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(config).items()
    }


def _resolved_cluster(spec: Any) -> dict[str, Any]:
    """The cluster config the spec stands for, as a dict (``load=X``: the rule; each
    run's ``env_config`` has the cluster it was sized to)."""
    from gpushare_env.sim import ClusterConfig
    from gpushare_env.workloads import parse_load_rule

    load = parse_load_rule(spec)
    if load is not None:
        return {"rule": spec, "load": load, "per_workload": "runs[].env_config.cluster"}
    config = ClusterConfig.from_any(spec)
    return {
        "name": config.name,
        "max_jobs_per_gpu": config.max_jobs_per_gpu,
        "groups": [dataclasses.asdict(g) for g in config.groups],
    }


def run_entry(run: RunSpec) -> dict[str, Any]:
    """A run's entry in ``config.json``: everything needed to repeat it, its ``key``
    (:func:`~gpushare_eval.store.run_key`, how a resume tells whether a recorded
    run matches) and whether its policy sees the future (``oracle``, not in the key)."""
    entry: dict[str, Any] = {
        "policy": run.policy.label,
        "workload": run.workload.label,
        "seed": run.seed,
        "mode": "headless" if run.headless else "env",
        "policy_spec": {
            "name": run.policy.name,
            "path": run.policy.path,
            "params": dict(run.policy.params),
            "env_overrides": dict(run.policy.env_overrides),
        },
        "workload_spec": run.workload.spec,
        "workload_resolved": _resolved_workload(run.workload.spec),
        "trace_sha256": run.workload.trace_sha256,
        "num_jobs": run.workload.num_jobs,
        "env_config": dict(run.env_config),
        "reset": {"seed": run.seed},
        "reproduce": _reproduce_command(run),
        "oracle": run.policy.oracle,
    }
    entry["key"] = run_key(entry)
    return entry


def build_config(plan: Plan, argv: Sequence[str], jobs_csv: bool = True) -> dict[str, Any]:
    """The content of ``config.json`` (written before the first run, completed at the end
    with ``failed_runs`` and ``resumed_runs``)."""
    return {
        "command": shlex.join([PROG, *argv]),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "versions": _versions(),
        "preset": plan.preset.name,
        "cluster": _resolved_cluster(plan.cluster),
        "seeds": plan.seeds,
        "workers": plan.workers,
        "jobs_csv": jobs_csv,
        "notes": plan.notes,
        "runs_key": "runs.csv rows match runs[] entries by (policy, workload, seed); key: "
        "a digest of the run's configuration, which --resume compares",
        "failed_runs": [],
        "resumed_runs": 0,
        "runs": [run_entry(run) for run in plan.runs],
    }


def write_plots(
    plan: Plan, outputs: Sequence[RunOutput], summary: Mapping[str, Any], folder: Path
) -> list[Path]:
    """Every PNG: metric bars, JCT CDF, utilisation over time, Gantt views.

    Incomplete runs are left out (their jobs, series and Gantt views would show a
    different, partial workload); the bars are the summary's, over complete runs, and
    name a policy with incomplete runs as such.
    """
    from gpushare_eval import plots

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    across = across_workloads(summary)
    if across is not None:
        written.append(
            plots.plot_across_workloads(
                across,
                folder / "across_workloads.png",
                f"mean JCT over the lower bound, mean of seeds {plan.seeds}",
            )
        )
    aggregates = summary.get("aggregates")
    if aggregates:
        written.append(
            plots.plot_interval_estimates(
                aggregates,
                folder / "aggregates.png",
                f"mean JCT over the lower bound across workloads: estimates and "
                f"{aggregates['level']:.0%} stratified bootstrap intervals",
            )
        )
    complete = [o for o in outputs if run_status(o.row) is RunStatus.COMPLETE]
    for workload in plan.workloads:
        name = workload.label
        if name not in summary["workloads"]:
            continue
        mine = [o for o in complete if o.row["workload"] == name]
        written.append(
            plots.plot_metric_bars(summary, name, folder / f"metrics_{safe_name(name)}.png")
        )
        jcts: dict[str, list[np.ndarray]] = {}
        for output in mine:
            jcts.setdefault(_plot_label(output.row), []).append(output.jct_s)
        written.append(
            plots.plot_jct_cdf(
                {p: np.concatenate(v) for p, v in jcts.items()},
                folder / f"jct_cdf_{safe_name(name)}.png",
                f"{name}: JCT CDF, all jobs of the complete runs of seeds {plan.seeds}",
            )
        )
        series = {_plot_label(o.row): o.series for o in mine if o.series is not None}
        if series:
            seed = next(o.row["seed"] for o in mine if o.series is not None)
            written.append(
                plots.plot_utilisation(
                    series,
                    folder / f"utilisation_{safe_name(name)}.png",
                    f"{name}, seed {seed}: GPU utilisation over time",
                )
            )
        for output in mine:
            if output.gantt is None:
                continue
            num_gpus, lanes, gpu_node = output.layout
            policy = output.row["policy"]
            written.append(
                plots.plot_gantt(
                    output.gantt,
                    num_gpus,
                    lanes,
                    folder / f"gantt_{safe_name(name)}_{safe_name(policy)}.png",
                    f"{_plot_label(output.row)} on {name}, seed {output.row['seed']}",
                    gpu_node=gpu_node,
                )
            )
    return written


def _plot_label(row: Mapping[str, Any]) -> str:
    """A run's policy as the plots name it: marked when it sees the future."""
    from gpushare_eval.plots import ORACLE_LABEL

    policy = str(row["policy"])
    return f"{policy} {ORACLE_LABEL}" if is_oracle(row) else policy


def _preamble(plan: Plan, argv: Sequence[str], outputs: Sequence[RunOutput]) -> list[str]:
    """The lines under the summary's title."""
    wall = sum(o.row["wall_s"] for o in outputs)
    cluster = plan.cluster if isinstance(plan.cluster, str) else json.dumps(plan.cluster)
    headless = bool(plan.runs) and plan.runs[0].headless
    mode = "headless simulator" if headless else "GPUShare-v0 env"
    lines = [
        f"- command: `{shlex.join([PROG, *argv])}`",
        f"- preset: `{plan.preset.name}`; cluster: `{cluster}`; seeds: {plan.seeds}; mode: {mode}",
        f"- {len(outputs)} runs, {wall:.1f} s of run time over {plan.workers} worker(s)",
        _rules_line(plan),
    ]
    for workload in plan.workloads:
        if workload.cluster is not None:
            lines.append(f"- `{workload.label}` ran on its own cluster: {_cluster_line(workload)}")
    incomplete = [o.row for o in outputs if run_status(o.row) is not RunStatus.COMPLETE]
    if incomplete:  # listed run by run in the section "Incomplete runs"
        lines.append(
            f"- **{len(incomplete)} run(s) incomplete, left out of every statistic** (see "
            "*Incomplete runs* below)"
        )
    rejected = {o.row["workload"]: o.row.get("rejected_jobs", 0) for o in outputs}
    for workload, count in rejected.items():
        if count:
            lines.append(f"- `{workload}`: {count} job(s) could never fit the cluster (dropped)")
    lines += [f"- note: {n}" for n in plan.notes]
    return lines


def _cluster_line(workload: WorkloadSpec) -> str:
    """A sized trace's cluster in words: nodes, GPUs and the trace's load on it."""
    cluster = dict(workload.cluster or {})
    nodes, per_node = int(cluster["nodes"]), int(cluster["gpus_per_node"])
    load = str(cluster["name"]).rsplit(", ", 1)[-1]
    return f"{nodes} nodes x {per_node} {cluster['gpu_type']} = {nodes * per_node} GPUs ({load})"


def _describe_rules(max_suspends: int | None, min_service_s: float) -> str:
    """The suspension rules in words."""
    budget = "no budget" if max_suspends is None else f"at most {max_suspends} per job"
    quantum = (
        f"at least {min_service_s:g} s of computing after a resume"
        if min_service_s > 0
        else "no minimum service after a resume"
    )
    return f"{budget}, {quantum}"


def _rules_line(plan: Plan) -> str:
    """The suspension rules the runs were under (``limits.max_suspends_per_job``,
    ``limits.min_service_s``): one line if they are the same for every policy, else a
    bold line saying which policy ran under which."""
    from gpushare_env.envs.config import EnvConfig

    by_rules: dict[tuple[int | None, float], list[str]] = {}
    for run in plan.runs:
        limits = EnvConfig.from_any(dict(run.env_config)).limits
        key = (limits.max_suspends_per_job, float(limits.min_service_s))
        labels = by_rules.setdefault(key, [])
        if run.policy.label not in labels:
            labels.append(run.policy.label)
    if len(by_rules) == 1:
        (rules,) = by_rules
        return f"- suspension rules, the same for every policy: {_describe_rules(*rules)}"
    if not by_rules:
        return "- suspension rules: no run"
    parts = [f"{', '.join(names)}: {_describe_rules(*rules)}" for rules, names in by_rules.items()]
    return "- **suspension rules differ per policy**: " + "; ".join(parts)


def write_outputs(
    plan: Plan,
    outputs: Sequence[RunOutput],
    argv: Sequence[str],
    plots: bool,
    *,
    config: dict[str, Any],
    failed: Sequence[RunOutput] = (),
    resumed: int = 0,
) -> tuple[dict[str, Any], str]:
    """Write ``config.json``, ``summary.json``, ``summary.md`` and the plots into
    ``plan.out``, from every recorded run; returns the summary dict and its markdown.

    ``runs.csv`` and ``jobs.csv`` are already written (run by run, then in plan order:
    :class:`~gpushare_eval.store.RunStore`). Failed runs are not in them, nor in
    the statistics and the plots; they are listed in ``config.json`` (``failed_runs``)
    and ``summary.md``. Incomplete runs (truncated, or with jobs unfinished) are in
    ``runs.csv`` with their ``status``, left out of the statistics and the plots, and
    listed in ``summary.json`` (``runs``) and ``summary.md``. The plots of an earlier
    evaluation in ``plots/`` are removed first, so none is left beside the new ones.

    Args:
        plan: The plan.
        outputs: The recorded runs, in plan order (from the store, with their plot data).
        argv: The command line.
        plots: Draw the PNGs.
        config: ``config.json`` as written before the first run.
        failed: The runs that crashed.
        resumed: How many of ``outputs`` an earlier invocation recorded (``--resume``).
    """
    plan.out.mkdir(parents=True, exist_ok=True)
    rows = [o.row for o in outputs]
    config = {**config, "failed_runs": [{**o.row, "error": o.error} for o in failed]}
    config["resumed_runs"] = resumed
    write_json(plan.out / "config.json", config, default=str)
    summary = summarize_runs(
        rows,
        HEADLINE_METRICS,
        baseline=plan.baseline,
        reference=plan.reference,
        policies=[p.label for p in plan.policies],
        workloads=[w.label for w in plan.workloads],
    )
    summary["notes"] = plan.notes
    write_json(plan.out / "summary.json", summary, allow_nan=False)
    preamble = _preamble(plan, argv, outputs)
    if resumed:
        preamble.append(
            f"- resumed (`--resume`): {resumed} of the {len(outputs)} runs were recorded by "
            "an earlier, interrupted invocation"
        )
    preamble += [
        f"- **failed run** {o.row['policy']}/{o.row['workload']}/seed {o.row['seed']}: `{o.error}`"
        for o in failed
    ]
    if plan.preset.ratio_table:
        preamble += [
            "",
            f"## Means over seeds and ratios to `{plan.baseline}` (the thesis's table)",
            "",
            render_ratio_table(summary).rstrip("\n"),
        ]
    markdown = render_markdown(summary, title=f"Evaluation: {plan.title}", preamble=preamble)
    folder = plan.out / "plots"
    for pattern in PLOT_PATTERNS:  # an earlier evaluation's plots never stay beside these
        for stale in folder.glob(pattern):
            stale.unlink()
    if plots:
        try:
            written = write_plots(plan, outputs, summary, folder)
        except ImportError:
            plan.notes.append("plots skipped: matplotlib is not installed (gpushare-env[plot])")
            written = []
        if written:
            markdown += (
                "\n## Plots\n\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in written) + "\n"
            )
    from gpushare_eval.sweeps import write_sweep

    with contextlib.suppress(OSError):
        (plan.out / "sweep.csv").unlink()  # an earlier evaluation's
    swept = write_sweep(plan.out, [o.row for o in outputs], plots)
    if swept:
        markdown += (
            "\n## Sweeps\n\nEach swept parameter's runs are in `sweep.csv` (mean over "
            "complete runs).\n\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in swept) + "\n"
        )
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty (--no-plots)
    (plan.out / "summary.md").write_text(markdown, encoding="utf-8")
    return summary, markdown
