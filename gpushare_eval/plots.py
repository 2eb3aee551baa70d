"""PNG plots of an evaluation, drawn with matplotlib's Agg backend (no display needed).

Each function takes plain data (the summary dict, arrays, intervals) and writes one file;
none of them runs a simulation. matplotlib is imported lazily (it is an optional
dependency: ``pip install gpushare-env[plot]``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_eval.gantt import OVERHEAD, GpuInterval, assign_lanes

__all__ = [
    "downsample_steps",
    "plot_across_workloads",
    "plot_gantt",
    "plot_interval_estimates",
    "plot_jct_cdf",
    "plot_metric_bars",
    "plot_mig_partitions",
    "plot_utilisation",
]

_DPI = 120

#: Follows the name of a policy that sees the future (an upper bound) in plots.
ORACLE_LABEL = "(oracle)"


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _colours(names: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per name from the tab10/tab20 cycles (order of ``names``)."""
    plt = _pyplot()
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def downsample_steps(
    time_s: np.ndarray, values: np.ndarray, max_points: int = 4000
) -> tuple[np.ndarray, np.ndarray]:
    """Time-average a step function onto at most ``max_points`` equal bins.

    ``values[i]`` holds from ``time_s[i]`` to ``time_s[i + 1]``; the last value is
    a closing point (as :func:`gpushare_env.metrics.utilisation_series` returns). Short
    series come back unchanged.

    Args:
        time_s: Non-decreasing change times, the last one the end.  # (T + 1,) [s]
        values: Value from each time on (the last is repeated).  # (T + 1,)
        max_points: Most points to return.

    Returns:
        ``(bin_start_s, mean_value)`` with a closing point, or the input.
    """
    times = np.asarray(time_s, dtype=float)
    series = np.asarray(values, dtype=float)
    if times.size <= max_points or times[-1] <= times[0]:
        return times, series
    # cumulative integral at every change time, then interpolate at the bin edges
    integral = np.concatenate([[0.0], np.cumsum(series[:-1] * np.diff(times))])
    edges = np.linspace(times[0], times[-1], max_points)
    at_edges = np.interp(edges, times, integral)
    means = np.diff(at_edges) / np.diff(edges)
    return edges, np.append(means, means[-1])


def plot_metric_bars(
    summary: Mapping[str, Any],
    workload: str,
    path: Path,
    metrics: Sequence[str] | None = None,
) -> Path:
    """One bar chart per metric: policy means with their confidence intervals.

    Args:
        summary: :func:`gpushare_eval.report.summarize_runs`'s dict (means over
            complete runs; the bars of a policy with incomplete runs are hatched and its
            label marked ``†``).
        workload: Which workload's section to draw.
        path: Output PNG.
        metrics: Metrics to draw (default: all of the summary's).

    Returns:
        ``path``.
    """
    plt = _pyplot()
    entry = summary["workloads"][workload]
    names = list(metrics or summary["metrics"])
    policies = list(entry["policies"])
    colours = _colours(policies)
    partial = [bool(entry["policies"][p].get("incomplete_seeds")) for p in policies]
    labels = [f"{p} †" if flagged else p for p, flagged in zip(policies, partial, strict=True)]
    oracle = [bool(entry["policies"][p].get("oracle")) for p in policies]
    labels = [
        f"{label} {ORACLE_LABEL}" if o else label for label, o in zip(labels, oracle, strict=True)
    ]
    columns = min(4, len(names))
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.2 * columns, 2.6 * rows + 0.6), squeeze=False
    )
    # fixed margins: tight_layout costs seconds per figure on a slow machine
    figure.subplots_adjust(
        left=0.06, right=0.99, top=1 - 0.5 / (2.6 * rows + 0.6), bottom=0.12, hspace=0.9,
        wspace=0.3,
    )  # fmt: skip
    for ax, metric in zip(axes.flat, names, strict=False):
        means = []
        errors = []
        for policy in policies:
            stats = entry["policies"][policy]["metrics"][metric]
            means.append(np.nan if stats["mean"] is None else stats["mean"])
            errors.append(0.0 if stats["half_width"] is None else stats["half_width"])
        x = np.arange(len(policies))
        bars = ax.bar(x, means, yerr=errors, capsize=3, color=[colours[p] for p in policies])
        for bar, flagged, bound in zip(bars, partial, oracle, strict=True):
            if flagged:  # a mean over some of its runs only
                bar.set_hatch("//")
            if bound:  # sees the future: an upper bound
                bar.set_alpha(0.45)
        if all(m >= 0 for m in means if not math.isnan(m)):
            ax.set_ylim(bottom=0)  # non-negative metric: keep the axis at zero
        ax.set_title(metric, fontsize=9)
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    level = summary.get("level", 0.95)
    title = f"{workload}: mean over seeds {entry['seeds']} with {level:.0%} CI"
    if any(partial):
        title += "; † hatched: incomplete runs left out, mean of the complete ones only"
    if any(oracle):
        title += f"; {ORACLE_LABEL}, pale: sees the future, an upper bound"
    figure.suptitle(title, fontsize=10)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_across_workloads(table: Mapping[str, Any], path: Path, title: str) -> Path:
    """Grouped bars: each policy's mean JCT over the lower bound, per workload (log scale).

    Args:
        table: :func:`gpushare_eval.report.across_workloads`'s dict (a missing
            bar is a workload where the policy had an incomplete run).
        path: Output PNG.
        title: Figure title.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    workloads = list(table["workloads"])
    policies = list(table["policies"])
    colours = _colours(policies)
    width = 0.8 / max(1, len(policies))
    figure, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(workloads) + 2.5), 3.8))
    figure.subplots_adjust(left=0.08, right=0.84, top=0.88, bottom=0.14)
    x = np.arange(len(workloads))
    for k, policy in enumerate(policies):
        per = table["policies"][policy]["per_workload"]
        values = [np.nan if per[w] is None else per[w] for w in workloads]
        # an oracle's bar (sees the future: an upper bound) is pale and labelled so
        pale = {"alpha": 0.45} if table["policies"][policy].get("oracle") else {}
        label = f"{policy} {ORACLE_LABEL}" if pale else policy
        ax.bar(x + (k - (len(policies) - 1) / 2) * width, values, width, label=label,
               color=colours[policy], **pale)  # fmt: skip
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x, workloads, fontsize=8)
    ax.set_ylabel("mean JCT / lower bound (log)", fontsize=9)
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title, fontsize=10)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_interval_estimates(aggregates: Mapping[str, Any], path: Path, title: str) -> Path:
    """Interval estimates of the aggregates, one panel per statistic (as ``rliable`` draws
    them): per policy a bar over its bootstrap interval and a tick at the estimate.

    Args:
        aggregates: The summary's ``aggregates``
            (:func:`gpushare_eval.aggregate.aggregate_scores`).
        path: Output PNG.
        title: Figure title.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    policies = list(aggregates["policies"])
    reference = aggregates.get("reference")
    panels = [("geometric_mean", "geometric mean"), ("iqm", "IQM")]
    if reference is not None:
        panels.append(("p_beats_reference", f"P(beats {reference})"))
    colours = _colours(policies)
    height = max(2.2, 0.35 * len(policies) + 1.2)
    figure, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1.4, height),
                                sharey=True, squeeze=False)  # fmt: skip
    figure.subplots_adjust(left=0.2, right=0.98, top=0.8, bottom=0.22, wspace=0.12)
    y = np.arange(len(policies))[::-1]
    for ax, (key, label) in zip(axes[0], panels, strict=True):
        for row, policy in zip(y, policies, strict=True):
            stats = aggregates["policies"][policy][key]
            if stats is None:
                continue
            low, high = stats["ci_low"], stats["ci_high"]
            ax.barh(row, max(high - low, 1e-9), left=low, height=0.6, alpha=0.75,
                    color=colours[policy])  # fmt: skip
            ax.plot([stats["estimate"]] * 2, [row - 0.3, row + 0.3], color="black",
                    linewidth=1.5)  # fmt: skip
        if key == "p_beats_reference":
            ax.axvline(0.5, color="grey", linestyle="--", linewidth=0.8)
            ax.set_xlim(0.0, 1.0)
        else:
            ax.axvline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel(label, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0][0].set_yticks(y, policies, fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_jct_cdf(jcts_by_policy: Mapping[str, np.ndarray], path: Path, title: str) -> Path:
    """Empirical CDF of job completion time per policy (jobs of all seeds pooled).

    Args:
        jcts_by_policy: JCTs of every job of every seed, per policy.  # [s]
        path: Output PNG.
        title: Figure title.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    colours = _colours(list(jcts_by_policy))
    figure, ax = plt.subplots(figsize=(7, 4.5))
    for policy, jcts in jcts_by_policy.items():
        values = np.sort(np.asarray(jcts, dtype=float))
        if values.size == 0:
            continue
        fraction = np.arange(1, values.size + 1) / values.size
        ax.step(values / 3600.0, fraction, where="post", label=policy, color=colours[policy])
    ax.set_xscale("log")
    ax.set_xlabel("job completion time [h] (log scale)")
    ax.set_ylabel("fraction of jobs finished")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=10)
    figure.subplots_adjust(left=0.09, right=0.98, top=0.92, bottom=0.12)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_utilisation(
    series_by_policy: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    path: Path,
    title: str,
) -> Path:
    """GPU utilisation (compute in use) and allocation over time, one panel per policy.

    Args:
        series_by_policy: ``(time_s, util, alloc)`` step series per policy, each with a
            closing point (:func:`gpushare_env.metrics.utilisation_series`).
        path: Output PNG.
        title: Figure title.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    count = max(1, len(series_by_policy))
    figure, axes = plt.subplots(
        count, 1, figsize=(8, 1.1 * count + 1.2), sharex=True, squeeze=False
    )
    for ax, (policy, (time_s, util, alloc)) in zip(
        axes[:, 0], series_by_policy.items(), strict=False
    ):
        hours = np.asarray(time_s, dtype=float) / 3600.0
        ax.fill_between(hours, alloc, step="post", alpha=0.25, color="tab:gray", lw=0)
        ax.step(hours, util, where="post", color="tab:blue", lw=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(policy, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("simulated time [h]")
    figure.suptitle(
        f"{title}\nblue: compute in use / GPUs (utilisation); grey: GPUs holding a worker",
        fontsize=9,
    )
    height = 1.1 * count + 1.2
    figure.subplots_adjust(left=0.14, right=0.98, top=1 - 0.6 / height, bottom=0.5 / height)
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


def plot_gantt(
    intervals: Sequence[GpuInterval],
    num_gpus: int,
    max_jobs_per_gpu: int,
    path: Path,
    title: str,
    gpu_node: Sequence[int] | None = None,
) -> Path:
    """Jobs by GPU over time: one band per GPU, split into ``max_jobs_per_gpu`` lanes.

    Each job has its own colour (with its id written when the bar is wide enough);
    hatched bars are suspend / resume overheads. Jobs sharing a GPU appear in different
    lanes of the same band; a multi-GPU job appears on each of its GPUs.

    Args:
        intervals: The run's holds (:class:`~gpushare_eval.gantt.PlacementRecorder`).
        num_gpus: GPUs in the cluster.
        max_jobs_per_gpu: Lanes per GPU.
        path: Output PNG.
        title: Figure title.
        gpu_node: Node of each GPU, to draw node boundaries.

    Returns:
        ``path``.
    """
    plt = _pyplot()
    from matplotlib.collections import PolyCollection

    lanes = assign_lanes(intervals, max_jobs_per_gpu)
    height = min(40.0, max(3.0, 0.11 * num_gpus * max_jobs_per_gpu + 1.5))
    figure, ax = plt.subplots(figsize=(12, height))
    figure.subplots_adjust(left=0.06, right=0.99, top=1 - 0.7 / height, bottom=0.5 / height)
    cmap = plt.get_cmap("tab20")
    end = max((i.end_s for i in intervals), default=1.0) / 3600.0
    lane_height = 1.0 / max_jobs_per_gpu
    boxes: dict[bool, list[list[tuple[float, float]]]] = {False: [], True: []}
    colours: dict[bool, list[Any]] = {False: [], True: []}
    labels: list[tuple[float, float, float, int]] = []  # (width, x, y, job)
    for interval, lane in zip(intervals, lanes, strict=True):
        low = interval.gpu + lane * lane_height + 0.05 * lane_height
        high = low + 0.9 * lane_height
        start = interval.start_s / 3600.0
        stop = interval.end_s / 3600.0
        overhead = interval.kind == OVERHEAD
        boxes[overhead].append([(start, low), (stop, low), (stop, high), (start, high)])
        colours[overhead].append(cmap(interval.job_id % cmap.N))
        if not overhead:
            labels.append((stop - start, (start + stop) / 2, (low + high) / 2, interval.job_id))
    ax.add_collection(PolyCollection(boxes[False], facecolors=colours[False], linewidths=0))
    if boxes[True]:
        ax.add_collection(
            PolyCollection(
                boxes[True],
                facecolors=colours[True],
                edgecolors="black",
                linewidths=0.3,
                hatch="////",
                alpha=0.6,
            )
        )
    # ids on the widest bars only (text artists are slow and unreadable when crowded)
    for width, x, y, job_id in sorted(labels, reverse=True)[:300]:
        if width > 0.03 * end:
            ax.text(x, y, str(job_id), ha="center", va="center", fontsize=5)
    boundaries = [
        g for g in range(1, num_gpus) if gpu_node is not None and gpu_node[g] != gpu_node[g - 1]
    ]
    ax.hlines(range(num_gpus + 1), 0, end, colors="lightgray", linewidths=0.3)
    if boundaries:
        ax.hlines(boundaries, 0, end, colors="black", linewidths=0.8)
    ax.set_ylim(num_gpus, 0)
    ax.set_xlim(0, end)
    step = max(1, num_gpus // 32)
    ticks = list(range(0, num_gpus, step))
    ax.set_yticks([g + 0.5 for g in ticks], [str(g) for g in ticks])
    ax.tick_params(axis="y", labelsize=6)
    ax.set_xlabel("simulated time [h]")
    ax.set_ylabel(f"GPU ({max_jobs_per_gpu} lanes each)")
    ax.set_title(
        f"{title}\ncolour = job (id on the bar), hatched = suspend/resume overhead, "
        "black lines = node boundaries",
        fontsize=9,
    )
    figure.savefig(path, dpi=_DPI)
    plt.close(figure)
    return path


#: One GPU's MIG partition from ``time_s`` on: slice sizes in position order (compute
#: slices of 7) and the job on each (``None``: idle; -1: shared by several under MPS).
PartitionRow = tuple[float, int, tuple[int, ...], tuple[int | None, ...]]


def plot_mig_partitions(
    panels: Mapping[str, Sequence[PartitionRow]],
    num_gpus: int,
    end_s: float,
    path: Path,
    title: str,
) -> Path:
    """Each GPU's MIG partition over time, one panel per run (``panels``: label -> rows,
    each GPU's rows in time order): a GPU is a band of its 7 compute slices, each
    instance a block (coloured by its job, grey while idle) from when the GPU took the
    partition until its next one."""
    plt = _pyplot()
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(12, 1.0 + 0.45 * num_gpus * len(panels)), squeeze=False
    )
    cmap = plt.get_cmap("tab20")
    for ax, (label, rows) in zip(axes[:, 0], panels.items(), strict=True):
        by_gpu: dict[int, list[PartitionRow]] = {}
        for row in rows:
            by_gpu.setdefault(row[1], []).append(row)
        for gpu, gpu_rows in by_gpu.items():
            ends = [r[0] for r in gpu_rows[1:]] + [end_s]
            for (start, _, sizes, jobs), stop in zip(gpu_rows, ends, strict=True):
                if stop <= start:
                    continue
                offset = 0
                for size, job in zip(sizes, jobs, strict=True):
                    colour = "#dddddd" if job is None else "#444444" if job < 0 else cmap(job % 20)
                    ax.broken_barh(
                        [(start, stop - start)],
                        (gpu + offset / 7 * 0.85, size / 7 * 0.85),
                        facecolors=colour,
                        edgecolors="white",
                        linewidth=0.3,
                    )
                    offset += size
        ax.set_ylim(-0.1, num_gpus)
        ax.set_xlim(0, end_s)
        ax.set_yticks([g + 0.425 for g in range(num_gpus)], [f"GPU {g}" for g in range(num_gpus)])
        ax.set_title(label, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel(
        "time [s] (blocks: MIG instances, coloured by job; light grey: idle; dark: MPS)"
    )
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
