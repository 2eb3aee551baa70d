"""From per-run rows to a summary: means with CIs, ratios to a baseline, paired differences.

A *row* is one run: a mapping with at least ``policy``, ``workload``, ``seed`` and one
float per metric (the columns of ``runs.csv``). :func:`summarize_runs` groups the rows by
workload and policy and returns a plain, JSON-ready dict (``summary.json``);
:func:`render_markdown` turns that dict into ``summary.md``. Both are pure.

Statistics (see :mod:`gpushare_env.evaluation.stats`):
    * mean and two-sided Student-t CI over the seeds of each (policy, workload);
    * ratio to the baseline (``fifo``): ratio of the two means over the same workload;
    * paired difference to the reference (``thesis``): ``policy - reference`` per seed the
      two share, with a paired-t CI and p-value. Every policy runs the same seeded
      workload, so the pairs are matched and the paired test is the right one.
    * best value per workload and metric: the lowest mean, or the highest for metrics
      where higher is better (:data:`HIGHER_IS_BETTER`); ties are all best.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpushare_env.evaluation.stats import mean_ci, paired_difference, ratio_of_means
from gpushare_env.metrics import METRIC_DOCS

__all__ = [
    "HEADLINE_METRICS",
    "HIGHER_IS_BETTER",
    "RUN_COLUMNS",
    "format_value",
    "render_markdown",
    "summarize_runs",
]

#: The metrics the summary reports, in its column order (also ``runs.csv``'s metric
#: columns; other tools read these names).
HEADLINE_METRICS: tuple[str, ...] = (
    "mean_jct_s",
    "p95_jct_s",
    "makespan_s",
    "gpu_util",
    "gpu_alloc",
    "mean_queue_s",
    "max_queue_s",
    "mean_slowdown",
    "fragmentation",
    "suspends",
    "migrations",
)

#: The required leading columns of ``runs.csv``, in order (other tools read these names).
RUN_COLUMNS: tuple[str, ...] = (
    "policy",
    "workload",
    "seed",
    "num_jobs",
    *HEADLINE_METRICS,
    "wall_s",
)

#: Metrics where a larger value is better; for every other metric smaller is better.
HIGHER_IS_BETTER: frozenset[str] = frozenset({"gpu_util", "gpu_alloc", "jain_fairness"})

_REL_TIE = 1e-9


def _ordered_unique(values: Iterable[Any]) -> list[Any]:
    """Values in first-seen order without repeats."""
    return list(dict.fromkeys(values))


def _finite_or_none(value: float) -> float | None:
    """``None`` for NaN or an infinity (strict JSON has neither), else the float itself."""
    return float(value) if math.isfinite(value) else None


def _best_policies(means: Mapping[str, float], metric: str) -> set[str]:
    """Policies whose mean is the best for ``metric`` (ties within 1e-9 relative)."""
    finite = {p: m for p, m in means.items() if not math.isnan(m)}
    if len(finite) < 2:
        return set()
    best = max(finite.values()) if metric in HIGHER_IS_BETTER else min(finite.values())
    tolerance = _REL_TIE * max(1.0, abs(best))
    return {p for p, m in finite.items() if abs(m - best) <= tolerance}


def summarize_runs(
    rows: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] = HEADLINE_METRICS,
    *,
    baseline: str = "fifo",
    reference: str = "thesis",
    level: float = 0.95,
    policies: Sequence[str] | None = None,
    workloads: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Aggregate per-run rows into the summary (the content of ``summary.json``).

    Args:
        rows: One mapping per run with ``policy``, ``workload``, ``seed`` and the metrics.
        metrics: Metric columns to summarise, in report order.
        baseline: Policy the ratios refer to (``ratio_to_<baseline>``); absent: no ratios.
        reference: Policy the paired differences refer to; absent: no differences.
        level: Confidence level of every interval.
        policies: Policy order of the report (default: first-seen order in ``rows``).
        workloads: Workload order of the report (default: first-seen order in ``rows``).

    Returns:
        ``{"level", "baseline", "reference", "metrics": {name: {"doc", "higher_is_better"}},
        "workloads": {workload: {"seeds", "policies": {policy: {"n", "metrics": {metric:
        {"n", "mean", "std", "half_width", "ci_low", "ci_high", "ratio_to_baseline",
        "best", "vs_reference"}}}}}}}``; ``vs_reference`` is ``None`` for the reference
        itself (and when it is absent), else ``{"n", "mean", "half_width", "ci_low",
        "ci_high", "relative", "t", "p_value", "significant"}``. Undefined numbers are
        ``None``. When the rows carry ``mean_solo_s`` (the jobs' mean solo duration, the
        same for every policy on a seed), a workload also has ``"jct_lower_bound_s":
        {"n", "mean", "half_width"}`` over its seeds: no scheduler's mean JCT is lower.

    Raises:
        ValueError: A row misses a key, or a (policy, workload, seed) appears twice.
    """
    seen: set[tuple[str, str, int]] = set()
    by_cell: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = {}
    for index, row in enumerate(rows):
        missing = [k for k in ("policy", "workload", "seed", *metrics) if k not in row]
        if missing:
            raise ValueError(f"row {index} misses the keys {missing}")
        key = (str(row["policy"]), str(row["workload"]), int(row["seed"]))
        if key in seen:
            raise ValueError(f"run {key} appears more than once")
        seen.add(key)
        by_cell.setdefault((key[1], key[0]), {})[key[2]] = row
    policy_order = (
        list(policies) if policies is not None else _ordered_unique(str(r["policy"]) for r in rows)
    )
    workload_order = (
        list(workloads)
        if workloads is not None
        else _ordered_unique(str(r["workload"]) for r in rows)
    )
    summary: dict[str, Any] = {
        "level": level,
        "baseline": baseline,
        "reference": reference,
        "metrics": {
            m: {"doc": METRIC_DOCS.get(m, ""), "higher_is_better": m in HIGHER_IS_BETTER}
            for m in metrics
        },
        "workloads": {},
    }
    for workload in workload_order:
        present = [p for p in policy_order if (workload, p) in by_cell]
        if not present:
            continue
        seeds = sorted({s for p in present for s in by_cell[(workload, p)]})
        entry: dict[str, Any] = {"seeds": seeds, "policies": {}}
        means: dict[str, dict[str, float]] = {m: {} for m in metrics}
        for policy in present:
            runs = by_cell[(workload, policy)]
            cell: dict[str, Any] = {"n": len(runs), "metrics": {}}
            for metric in metrics:
                values = [float(runs[s][metric]) for s in sorted(runs)]
                ci = mean_ci(values, level)
                means[metric][policy] = ci.mean
                stats: dict[str, Any] = {
                    "n": ci.n,
                    "mean": _finite_or_none(ci.mean),
                    "std": _finite_or_none(ci.std),
                    "half_width": _finite_or_none(ci.half_width),
                    "ci_low": _finite_or_none(ci.low),
                    "ci_high": _finite_or_none(ci.high),
                    "ratio_to_baseline": None,
                    "best": False,
                    "vs_reference": None,
                }
                base_runs = by_cell.get((workload, baseline))
                if base_runs is not None:
                    base_values = [float(base_runs[s][metric]) for s in sorted(base_runs)]
                    stats["ratio_to_baseline"] = _finite_or_none(
                        ratio_of_means(values, base_values)
                    )
                ref_runs = by_cell.get((workload, reference))
                if ref_runs is not None and policy != reference:
                    common = sorted(set(runs) & set(ref_runs))
                    diff = paired_difference(
                        [float(runs[s][metric]) for s in common],
                        [float(ref_runs[s][metric]) for s in common],
                        level,
                    )
                    stats["vs_reference"] = {
                        "n": diff.n,
                        "mean": _finite_or_none(diff.mean),
                        "half_width": _finite_or_none(diff.half_width),
                        "ci_low": _finite_or_none(diff.low),
                        "ci_high": _finite_or_none(diff.high),
                        "relative": _finite_or_none(diff.relative),
                        "t": _finite_or_none(diff.t_stat),
                        "p_value": _finite_or_none(diff.p_value),
                        "significant": diff.significant,
                    }
                cell["metrics"][metric] = stats
            entry["policies"][policy] = cell
        for metric in metrics:
            for policy in _best_policies(means[metric], metric):
                entry["policies"][policy]["metrics"][metric]["best"] = True
        solo = {
            seed: float(row["mean_solo_s"])
            for policy in present
            for seed, row in by_cell[(workload, policy)].items()
            if "mean_solo_s" in row
        }
        if solo:
            bound = mean_ci([solo[s] for s in sorted(solo)], level)
            entry["jct_lower_bound_s"] = {
                "n": bound.n,
                "mean": _finite_or_none(bound.mean),
                "half_width": _finite_or_none(bound.half_width),
            }
        summary["workloads"][workload] = entry
    return summary


def format_value(value: float | None) -> str:
    """A number for a table: thousands separators for large values, 3 decimals for fractions.

    ``None`` or NaN is ``"n/a"``.
    """
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude == 0:
        return "0"
    return f"{value:.3f}"


def _mean_cell(stats: Mapping[str, Any]) -> str:
    text = format_value(stats["mean"])
    if stats["half_width"] is not None:
        text += f" ± {format_value(stats['half_width'])}"
    return f"**{text}**" if stats["best"] else text


def _ratio_cell(stats: Mapping[str, Any]) -> str:
    ratio = stats["ratio_to_baseline"]
    return "n/a" if ratio is None else f"{ratio:.2f}×"


def _diff_cell(diff: Mapping[str, Any] | None) -> str:
    if diff is None or diff["mean"] is None:
        return "n/a"
    text = format_value(diff["mean"])
    if diff["mean"] > 0:
        text = "+" + text
    if diff["half_width"] is not None:
        text += f" ± {format_value(diff['half_width'])}"
    if diff["relative"] is not None:
        text += f" ({diff['relative']:+.1%})"
    if diff["significant"]:
        text += " \\*"
    return text


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def render_markdown(
    summary: Mapping[str, Any],
    *,
    title: str = "Evaluation summary",
    preamble: Sequence[str] = (),
    main_table_only: bool = False,
) -> str:
    """Render :func:`summarize_runs`'s dict as markdown tables, one section per workload.

    Args:
        summary: The summary dict.
        title: First heading.
        preamble: Lines placed under the title (setup, command, ...).
        main_table_only: Only the mean ± CI tables (for the console).

    Returns:
        The markdown text, ending with a newline.
    """
    metrics = list(summary["metrics"])
    level = summary["level"]
    baseline, reference = summary["baseline"], summary["reference"]
    lines = [f"# {title}", ""]
    if preamble:
        lines += [*preamble, ""]
    if not main_table_only:
        lines += [
            f"Cells are the mean over seeds ± the half-width of its {level:.0%} Student-t "
            "confidence interval; **bold** marks the best mean of each column "
            "(highest for "
            + ", ".join(f"`{m}`" for m in metrics if m in HIGHER_IS_BETTER)
            + ", lowest otherwise).",
            "",
        ]
    for workload, entry in summary["workloads"].items():
        policies = list(entry["policies"])
        seeds = entry["seeds"]
        lines += [f"## Workload `{workload}` (seeds {_seed_text(seeds)})", ""]
        lines += _table(
            ["policy", *metrics],
            (
                [p, *(_mean_cell(entry["policies"][p]["metrics"][m]) for m in metrics)]
                for p in policies
            ),
        )
        lines.append("")
        bound = entry.get("jct_lower_bound_s")
        if bound is not None and "mean_jct_s" in metrics:
            lines += [
                "Lower bound of `mean_jct_s` (the jobs' mean solo duration, which no "
                f"scheduler beats): {_mean_cell({**bound, 'best': False})}.",
                "",
            ]
        if main_table_only:
            continue
        if baseline in entry["policies"]:
            lines += [f"### Ratio of means to `{baseline}`", ""]
            lines += _table(
                ["policy", *metrics],
                (
                    [p, *(_ratio_cell(entry["policies"][p]["metrics"][m]) for m in metrics)]
                    for p in policies
                ),
            )
            lines.append("")
        if reference in entry["policies"] and len(policies) > 1:
            lines += [
                f"### Paired difference to `{reference}` (policy − {reference}, same seeds)",
                "",
                f"Mean difference ± {level:.0%} paired-t half-width (relative to "
                f"`{reference}`'s mean); \\* the interval excludes 0.",
                "",
            ]
            lines += _table(
                ["policy", *metrics],
                (
                    [
                        p,
                        *(
                            _diff_cell(entry["policies"][p]["metrics"][m]["vs_reference"])
                            for m in metrics
                        ),
                    ]
                    for p in policies
                    if p != reference
                ),
            )
            lines.append("")
    if not main_table_only:
        lines += ["## Metrics", ""]
        lines += [f"- `{m}`: {info['doc']}" for m, info in summary["metrics"].items()]
        lines.append("")
    return "\n".join(lines)


def _seed_text(seeds: Sequence[int]) -> str:
    """``0-2`` for a contiguous run of seeds, else a comma list."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)
