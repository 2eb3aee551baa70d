"""From per-run rows to a summary: means with CIs, ratios to a baseline, paired differences.

A *row* is one run: a mapping with at least ``policy``, ``workload``, ``seed`` and one
float per metric (the columns of ``runs.csv``), and its ``status`` (:class:`RunStatus`).
:func:`summarize_runs` groups the rows by workload and policy and returns a plain,
JSON-ready dict (``summary.json``); :func:`render_markdown` turns that dict into
``summary.md``. Both are pure.

Only complete runs count. A run that stopped with jobs unfinished (truncated by its
decision or time cap, or stuck) has metrics over the jobs that did finish, the short
and easy ones first: its mean JCT can look better than any complete run's. Such a run
stays in ``runs.csv`` and is listed (``summary.json``'s ``runs``, a bold section of
``summary.md``), but no statistic uses it, and its policy is flagged wherever it appears.

Statistics (see :mod:`gpushare_eval.stats`), over complete runs only:
    * mean and two-sided Student-t CI over the seeds of each (policy, workload);
    * ratio to the baseline (``fifo``): ratio of the two means over the seeds where both
      completed;
    * paired difference to the reference (``thesis``): ``policy - reference`` per seed
      where both completed, with a paired-t CI and p-value. Every policy runs the same
      seeded workload, so the pairs are matched and the paired test is the right one.
    * best value per workload and metric: the lowest mean, or the highest for metrics
      where higher is better (:data:`HIGHER_IS_BETTER`); ties are all best. A policy
      with an incomplete run is never best (its mean covers other seeds).
    * across two or more workloads with a lower bound: per policy, the geometric mean and
      the IQM of each run's mean JCT over its lower bound, and the probability of beating
      the reference, with stratified bootstrap intervals (:mod:`gpushare_eval.aggregate`,
      a seeded generator: the same rows give the same intervals).

Oracle policies (a row's ``oracle`` is 1: the policy sees the future, future arrivals and
true job lengths, as ``lookahead:oracle=true`` does) are upper bounds, not contenders:
they have their statistics (means, ratios, paired differences) but are never best, are
left out of the aggregates beside the others (they have their own, ``oracle_aggregates``)
and come last in every table, marked :data:`ORACLE_MARK`. Without one, the summary is
what it was before the column existed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

import numpy as np

from gpushare_env.metrics import METRIC_DOCS
from gpushare_eval.aggregate import BOOTSTRAP_REPS, BOOTSTRAP_SEED, aggregate_scores, run_scores
from gpushare_eval.stats import mean_ci, paired_difference, ratio_of_means

__all__ = [
    "HEADLINE_METRICS",
    "HIGHER_IS_BETTER",
    "INCOMPLETE_MARK",
    "ORACLE_MARK",
    "PARTIAL_MARK",
    "RUN_COLUMNS",
    "STATUS_DOCS",
    "RunStatus",
    "across_workloads",
    "describe_incomplete_run",
    "format_value",
    "incomplete_runs",
    "is_oracle",
    "oracle_policies",
    "render_across_workloads",
    "render_aggregates",
    "render_markdown",
    "render_ratio_table",
    "run_status",
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


class RunStatus(StrEnum):
    """How a run ended (``runs.csv``'s ``status`` column); only ``COMPLETE`` runs count.

    Attributes:
        COMPLETE: Every job of the workload finished.
        TRUNCATED_DECISIONS: Stopped by the decision cap (``--max-decisions``, the env's
            ``limits.max_decisions``) with jobs unfinished.
        TRUNCATED_TIME: Stopped by the simulated-time cap (the env's
            ``limits.max_time_s``) with jobs unfinished.
        UNFINISHED: Ended with jobs unfinished for another reason (the env found no valid
            action: a deadlock).
    """

    COMPLETE = "complete"
    TRUNCATED_DECISIONS = "truncated_decisions"
    TRUNCATED_TIME = "truncated_time"
    UNFINISHED = "unfinished"


def run_status(row: Mapping[str, Any]) -> RunStatus:
    """A row's :class:`RunStatus`: its ``status``, else (a row without that column)
    ``UNFINISHED`` if its ``truncated`` flag is set, else ``COMPLETE``.

    Raises:
        ValueError: A ``status`` that is not a :class:`RunStatus` value.
    """
    status = row.get("status")
    if status not in (None, ""):
        try:
            return RunStatus(str(status))
        except ValueError:
            allowed = [s.value for s in RunStatus]
            raise ValueError(f"unknown run status {status!r}; allowed: {allowed}") from None
    truncated = row.get("truncated")
    if truncated not in (None, "") and float(truncated) != 0:
        return RunStatus.UNFINISHED
    return RunStatus.COMPLETE


_COMPLETE = RunStatus.COMPLETE


def is_oracle(row: Mapping[str, Any]) -> bool:
    """True if a row's run was played by a policy that sees the future (its ``oracle``
    column: ``1``; missing or empty, as in a ``runs.csv`` written before the column:
    not)."""
    value = row.get("oracle")
    if value in (None, ""):
        return False
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "0.0")
    return bool(value)


def oracle_policies(summary: Mapping[str, Any]) -> list[str]:
    """The summary's policies that see the future (upper bounds, not ranked)."""
    return list(summary.get("oracle_policies", []))


def incomplete_runs(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of ``summary["runs"]`` that are not complete, in report order."""
    return [r for r in summary.get("runs", []) if r["status"] != RunStatus.COMPLETE]


#: Metrics where a larger value is better; for every other metric smaller is better.
HIGHER_IS_BETTER: frozenset[str] = frozenset({"gpu_util", "gpu_alloc", "jain_fairness"})

_REL_TIE = 1e-9


def _ordered_unique(values: Iterable[Any]) -> list[Any]:
    """Values in first-seen order without repeats."""
    return list(dict.fromkeys(values))


def _int_or_none(value: Any) -> int | None:
    """An int from a row's value (``"12"`` from a CSV, ``12.0``), ``None`` if missing."""
    if value is None or value == "":
        return None
    number = float(value)
    return int(number) if math.isfinite(number) else None


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
    bootstrap_reps: int = BOOTSTRAP_REPS,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """Aggregate per-run rows into the summary (the content of ``summary.json``).

    Every statistic is over complete runs only (:func:`run_status`); ratios and paired
    differences over the seeds where both policies completed.

    Args:
        rows: One mapping per run with ``policy``, ``workload``, ``seed`` and the metrics;
            ``status`` (missing: complete unless ``truncated`` is set), ``num_jobs``
            (finished jobs) and ``jobs_total`` when known.
        metrics: Metric columns to summarise, in report order.
        baseline: Policy the ratios refer to (``ratio_to_<baseline>``); absent: no ratios.
        reference: Policy the paired differences refer to; absent: no differences.
        level: Confidence level of every interval.
        policies: Policy order of the report (default: first-seen order in ``rows``).
        workloads: Workload order of the report (default: first-seen order in ``rows``).
        bootstrap_reps: Resamples of the aggregates' bootstrap intervals.
        bootstrap_seed: Seed of their generator.

    Returns:
        ``{"level", "baseline", "reference", "metrics": {name: {"doc", "higher_is_better"}},
        "runs": [{"policy", "workload", "seed", "status", "jobs_finished", "jobs_total"}],
        "workloads": {workload: {"seeds", "policies": {policy: {"n", "runs",
        "incomplete_seeds", "metrics": {metric: {"n", "mean", "std", "half_width",
        "ci_low", "ci_high", "ratio_to_baseline", "best", "vs_reference"}}}}}}}``.
        ``runs`` lists every run (policy, then workload, then seed) with its status; a
        cell's ``n`` counts its complete runs (the statistics' sample), ``runs`` all of
        them, ``incomplete_seeds`` the others. ``vs_reference`` is ``None`` for the
        reference itself (and when it is absent), else ``{"n", "mean", "half_width",
        "ci_low", "ci_high", "relative", "t", "p_value", "significant"}``. Undefined
        numbers are ``None``. When the rows carry ``mean_solo_s`` (the jobs' mean solo
        duration, the same for every policy on a seed), a workload also has
        ``"jct_lower_bound_s": {"n", "mean", "half_width"}`` over the seeds of its complete
        runs: no scheduler's mean JCT is lower. When two or more workloads have one, the
        summary also has ``"aggregates"``: :func:`gpushare_eval.aggregate.aggregate_scores`
        of the runs' mean JCT over their lower bound, with ``reference``. When some rows
        are oracle runs (:func:`is_oracle`), the summary lists their policies in
        ``"oracle_policies"``, their cells have ``"oracle": True`` and are never
        ``best``, and they are left out of ``"aggregates"``: theirs are in
        ``"oracle_aggregates"`` (resampled apart, with ``reference`` for their
        probability of beating it). Without oracle rows none of these keys is there.

    Raises:
        ValueError: A row misses a key or has an unknown status, or a (policy, workload,
            seed) appears twice.
    """
    seen: set[tuple[str, str, int]] = set()
    oracles: set[str] = set()
    by_cell: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = {}
    status: dict[tuple[str, str, int], RunStatus] = {}
    for index, row in enumerate(rows):
        missing = [k for k in ("policy", "workload", "seed", *metrics) if k not in row]
        if missing:
            raise ValueError(f"row {index} misses the keys {missing}")
        key = (str(row["policy"]), str(row["workload"]), int(row["seed"]))
        if key in seen:
            raise ValueError(f"run {key} appears more than once")
        seen.add(key)
        status[key] = run_status(row)
        by_cell.setdefault((key[1], key[0]), {})[key[2]] = row
        if is_oracle(row):
            oracles.add(key[0])
    policy_order = (
        list(policies) if policies is not None else _ordered_unique(str(r["policy"]) for r in rows)
    )
    workload_order = (
        list(workloads)
        if workloads is not None
        else _ordered_unique(str(r["workload"]) for r in rows)
    )

    def complete(workload: str, policy: str) -> dict[int, Mapping[str, Any]] | None:
        """The complete runs of a cell by seed (``None``: the policy did not run it)."""
        runs = by_cell.get((workload, policy))
        if runs is None:
            return None
        return {s: r for s, r in runs.items() if status[(policy, workload, s)] is _COMPLETE}

    summary: dict[str, Any] = {
        "level": level,
        "baseline": baseline,
        "reference": reference,
        "metrics": {
            m: {"doc": METRIC_DOCS.get(m, ""), "higher_is_better": m in HIGHER_IS_BETTER}
            for m in metrics
        },
        "runs": [
            {
                "policy": policy,
                "workload": workload,
                "seed": seed,
                "status": status[(policy, workload, seed)].value,
                "jobs_finished": _int_or_none(row.get("num_jobs")),
                "jobs_total": _int_or_none(row.get("jobs_total")),
            }
            for policy in policy_order
            for workload in workload_order
            for seed, row in sorted(by_cell.get((workload, policy), {}).items())
        ],
        "workloads": {},
    }
    if oracles:
        summary["oracle_policies"] = [p for p in policy_order if p in oracles] + sorted(
            oracles - set(policy_order)
        )
    for workload in workload_order:
        present = [p for p in policy_order if (workload, p) in by_cell]
        if not present:
            continue
        seeds = sorted({s for p in present for s in by_cell[(workload, p)]})
        entry: dict[str, Any] = {"seeds": seeds, "policies": {}}
        means: dict[str, dict[str, float]] = {m: {} for m in metrics}
        base_runs = complete(workload, baseline)
        ref_runs = complete(workload, reference)
        for policy in present:
            runs = complete(workload, policy) or {}
            every = by_cell[(workload, policy)]
            cell: dict[str, Any] = {
                "n": len(runs),
                "runs": len(every),
                "incomplete_seeds": sorted(set(every) - set(runs)),
                "metrics": {},
            }
            if policy in oracles:
                cell["oracle"] = True
            for metric in metrics:
                values = [float(runs[s][metric]) for s in sorted(runs)]
                ci = mean_ci(values, level)
                # a partial mean is never ranked, nor an oracle's
                if not cell["incomplete_seeds"] and policy not in oracles:
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
                if base_runs is not None:
                    common = sorted(set(runs) & set(base_runs))
                    stats["ratio_to_baseline"] = _finite_or_none(
                        ratio_of_means(
                            [float(runs[s][metric]) for s in common],
                            [float(base_runs[s][metric]) for s in common],
                        )
                    )
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
            for seed, row in (complete(workload, policy) or {}).items()
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
    bounded = [w for w, e in summary["workloads"].items() if "jct_lower_bound_s" in e]
    if len(bounded) >= 2 and "mean_jct_s" in metrics:
        ordered = sorted(
            (r for r in rows if str(r["workload"]) in bounded),
            key=lambda r: (policy_order.index(str(r["policy"]))
                           if str(r["policy"]) in policy_order else len(policy_order),
                           workload_order.index(str(r["workload"]))),
        )  # fmt: skip
        scores = run_scores(ordered, lambda r: run_status(r) is _COMPLETE)
        fair = {p: per for p, per in scores.items() if p not in oracles}
        aggregates = aggregate_scores(
            fair,
            reference=reference,
            rng=np.random.default_rng(bootstrap_seed),
            reps=bootstrap_reps,
            level=level,
        )
        if aggregates is not None:
            summary["aggregates"] = {
                "score": "mean_jct_s / mean_solo_s of each run (1.0 is unbeatable)",
                "bootstrap_seed": bootstrap_seed,
                **aggregates,
            }
        bounds = {p: per for p, per in scores.items() if p in oracles}
        if bounds:  # the same statistics, apart (their own resamples): never ranked
            with_reference = dict(bounds)
            if reference in fair:  # the probability of beating it
                with_reference[reference] = fair[reference]
            upper = aggregate_scores(
                with_reference,
                reference=reference,
                rng=np.random.default_rng(bootstrap_seed),
                reps=bootstrap_reps,
                level=level,
            )
            if upper is not None:
                upper["policies"] = {p: e for p, e in upper["policies"].items() if p in oracles}
                upper["left_out"] = {p: r for p, r in upper["left_out"].items() if p in oracles}
                summary["oracle_aggregates"] = {
                    "score": "mean_jct_s / mean_solo_s of each run (1.0 is unbeatable)",
                    "bootstrap_seed": bootstrap_seed,
                    **upper,
                }
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


#: What each incomplete status means, in the summary's words.
STATUS_DOCS: dict[str, str] = {
    RunStatus.COMPLETE: "every job finished",
    RunStatus.TRUNCATED_DECISIONS: "stopped by the decision cap",
    RunStatus.TRUNCATED_TIME: "stopped by the simulated-time cap",
    RunStatus.UNFINISHED: "ended with jobs left (no valid action)",
}

#: Marks a policy with incomplete runs in every table, and its partial means.
INCOMPLETE_MARK = "⚠"
PARTIAL_MARK = "†"
#: Follows an oracle policy's name in every table (it sees the future: never ranked).
ORACLE_MARK = "(oracle: sees the future; an upper bound, not ranked)"


def _is_partial(cell: Mapping[str, Any]) -> bool:
    """True if a (policy, workload) cell has an incomplete run (a summary without
    ``incomplete_seeds`` counts every run complete)."""
    return bool(cell.get("incomplete_seeds"))


def _policy_cell(policy: str, cell: Mapping[str, Any]) -> str:
    """The policy's name, flagged when some of its runs are incomplete, and marked
    :data:`ORACLE_MARK` when it sees the future."""
    label = policy
    if _is_partial(cell):
        label = f"{policy} {INCOMPLETE_MARK} incomplete ({cell['n']}/{cell['runs']} runs)"
    if cell.get("oracle"):
        label = f"{label} {ORACLE_MARK}"
    return label


def _fair_first(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The policies of a workload's cells, the oracle ones last (each group in order)."""
    return sorted(cells, key=lambda p: bool(cells[p].get("oracle")))


def _oracle_note(summary: Mapping[str, Any]) -> list[str]:
    """The paragraph saying which policies see the future (nothing when none does)."""
    oracles = oracle_policies(summary)
    if not oracles:
        return []
    return [
        f"**Oracle policies: {', '.join(f'`{p}`' for p in oracles)} see the future (future "
        "arrivals and true job lengths, which no scheduler knows): their figures are upper "
        f"bounds, not results. In every table they come last, marked {ORACLE_MARK}; "
        "they are never bold, and the aggregates across workloads leave them out (their "
        "own table follows them).**",
        "",
    ]


def _mean_cell(stats: Mapping[str, Any], partial: bool = False) -> str:
    text = format_value(stats["mean"])
    if stats["half_width"] is not None:
        text += f" ± {format_value(stats['half_width'])}"
    if partial and stats["mean"] is not None:
        text += f" {PARTIAL_MARK}"
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


def _pairs_label(label: str, cell: Mapping[str, Any], seeds: int) -> str:
    """A policy's label in the paired table, with its number of pairs when runs were
    left out (``fifo [1 of 3 seeds]``)."""
    pairs = max(
        (s["vs_reference"]["n"] for s in cell["metrics"].values() if s["vs_reference"]),
        default=seeds,
    )
    return label if pairs >= seeds else f"{label} [{pairs} of {seeds} seeds]"


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def _jobs_text(run: Mapping[str, Any]) -> str:
    """``finished 395 of 1,181 jobs`` (or what is known of it)."""
    finished, total = run.get("jobs_finished"), run.get("jobs_total")
    if finished is None:
        return "jobs finished unknown"
    if total is None:
        return f"finished {finished:,} jobs"
    return f"finished {finished:,} of {total:,} jobs"


def describe_incomplete_run(run: Mapping[str, Any]) -> str:
    """One incomplete run in words: ``random / thesis / seed 0: truncated_decisions
    (stopped by the decision cap), finished 395 of 1,181 jobs``."""
    status = str(run["status"])
    doc = STATUS_DOCS.get(status)
    reason = f"{status} ({doc})" if doc else status
    return f"{run['policy']} / {run['workload']} / seed {run['seed']}: {reason}, {_jobs_text(run)}"


def _incomplete_section(summary: Mapping[str, Any]) -> list[str]:
    """The bold section listing every incomplete run (nothing when every run completed)."""
    runs = incomplete_runs(summary)
    if not runs:
        return []
    lines = [
        f"## {INCOMPLETE_MARK} Incomplete runs: left out of every statistic",
        "",
        f"**{len(runs)} of {len(summary['runs'])} run(s) stopped with jobs unfinished. Their "
        "metrics cover only the jobs that did finish (the short ones first), so no mean, "
        "ratio, paired difference or plot below uses them; their rows stay in `runs.csv` "
        f"(column `status`). In the tables their policy is marked {INCOMPLETE_MARK}, and "
        f"its means ({PARTIAL_MARK}) cover its complete runs only and are not ranked.**",
        "",
    ]
    lines += [f"- **{describe_incomplete_run(run)}**" for run in runs]
    lines.append("")
    return lines


def across_workloads(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """Each policy's mean JCT over the lower bound, per workload and overall.

    The lower bound is the workload's mean solo duration (``jct_lower_bound_s``), so the
    ratio (>= 1) compares workloads of very different lengths on one scale. ``overall``
    is the geometric mean over the workloads where the policy completed every run (a
    policy with an incomplete run on some workload has no overall figure). ``None`` when
    fewer than two workloads have a lower bound.

    Returns:
        ``{"workloads": [...], "policies": {policy: {"per_workload": {w: ratio or None},
        "overall": ratio or None}}}``; an oracle policy's entry also has ``"oracle":
        True`` (the oracle policies come last).
    """
    entries = {
        w: e
        for w, e in summary["workloads"].items()
        if e.get("jct_lower_bound_s", {}).get("mean") and "mean_jct_s" in summary["metrics"]
    }
    if len(entries) < 2:
        return None
    policies = _ordered_unique(p for e in entries.values() for p in e["policies"])
    oracles = set(oracle_policies(summary))
    policies = [p for p in policies if p not in oracles] + [p for p in policies if p in oracles]
    table: dict[str, Any] = {"workloads": list(entries), "policies": {}}
    for policy in policies:
        per: dict[str, float | None] = {}
        for workload, entry in entries.items():
            cell = entry["policies"].get(policy)
            mean = None if cell is None else cell["metrics"]["mean_jct_s"]["mean"]
            complete = cell is not None and not _is_partial(cell)
            bound = entry["jct_lower_bound_s"]["mean"]
            per[workload] = mean / bound if mean is not None and complete else None
        values = [v for v in per.values() if v is not None]
        overall = (
            math.exp(sum(math.log(v) for v in values) / len(values))
            if values and len(values) == len(per)
            else None
        )
        table["policies"][policy] = {"per_workload": per, "overall": overall}
        if policy in oracles:
            table["policies"][policy]["oracle"] = True
    return table


def render_across_workloads(table: Mapping[str, Any]) -> list[str]:
    """The markdown section of :func:`across_workloads` (best of each column in bold)."""
    workloads = list(table["workloads"])
    columns = [*workloads, "overall"]
    rows = table["policies"]
    best: dict[str, float] = {}
    for column in columns:
        values = [
            (r["overall"] if column == "overall" else r["per_workload"][column])
            for r in rows.values()
            if not r.get("oracle")  # an upper bound is never best
        ]
        finite = [v for v in values if v is not None]
        best[column] = min(finite) if finite else math.inf

    def cell(value: float | None, column: str, oracle: bool = False) -> str:
        if value is None:
            return "n/a"
        text = f"{value:.2f}"
        return f"**{text}**" if value <= best[column] and not oracle else text

    lines = [
        "## Across workloads: mean JCT / lower bound",
        "",
        "Each policy's mean JCT over the workload's lower bound (the jobs' mean solo "
        "duration), so 1.00 is unbeatable; `overall` is the geometric mean over the "
        "workloads (n/a where a run was incomplete).",
        "",
    ]
    lines += _table(
        ["policy", *(f"`{w}`" for w in workloads), "overall"],
        (
            [
                f"{policy} {ORACLE_MARK}" if r.get("oracle") else policy,
                *(cell(r["per_workload"][w], w, bool(r.get("oracle"))) for w in workloads),
                cell(r["overall"], "overall", bool(r.get("oracle"))),
            ]
            for policy, r in rows.items()
        ),
    )
    return [*lines, ""]


def _interval_cell(stats: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``2.14 [1.98, 2.31]``, or ``n/a``."""
    if stats is None:
        return "n/a"
    return (
        f"{stats['estimate']:.{digits}f} "
        f"[{stats['ci_low']:.{digits}f}, {stats['ci_high']:.{digits}f}]"
    )


def render_aggregates(aggregates: Mapping[str, Any], *, oracle: bool = False) -> list[str]:
    """The markdown section of the summary's ``aggregates`` (interval estimates), or with
    ``oracle`` of its ``oracle_aggregates`` (the policies that see the future, apart)."""
    level, reference = aggregates["level"], aggregates["reference"]
    seeds = aggregates["seeds"]
    counts = sorted({len(s) for s in seeds.values()})
    what = (
        "Per policy, over every run of the workloads above (score: the run's mean JCT over "
        "its lower bound, 1.00 unbeatable): the geometric mean, the interquartile mean "
        "(IQM: the middle half of the scores)"
    )
    if reference is not None:
        what += (
            f" and the probability that a run of the policy scores lower than a run of "
            f"`{reference}` on the same workload (0.50: even)"
        )
    heading = f"## Across workloads: aggregates with {level:.0%} intervals"
    if oracle:
        heading += f" of the oracle policies {ORACLE_MARK}"
        what = (
            "The policies that see the future, apart from the others (upper bounds, never "
            "ranked). " + what
        )
    lines = [
        heading,
        "",
        what + f"; [intervals] from a stratified bootstrap ({aggregates['reps']:,} resamples "
        "of the seeds within each workload, percentile intervals; Agarwal et al., NeurIPS "
        "2021).",
        "",
    ]
    if counts == [1]:
        lines += [
            "**One seed per workload: the intervals cover the seeds' variation only, so "
            "here they are the point estimates. Run more seeds for an interval.**",
            "",
        ]
    header = ["policy", "runs", "geometric mean", "IQM"]
    if reference is not None:
        header.append(f"P(beats `{reference}`)")
    body = []
    for policy, entry in aggregates["policies"].items():
        row = [
            f"{policy} {ORACLE_MARK}" if oracle else policy,
            str(entry["runs"]),
            _interval_cell(entry["geometric_mean"]),
            _interval_cell(entry["iqm"]),
        ]
        if reference is not None:
            row.append("—" if policy == reference else _interval_cell(entry["p_beats_reference"]))
        body.append(row)
    lines += _table(header, body)
    lines.append("")
    for policy, reason in aggregates.get("left_out", {}).items():
        lines.append(f"- {INCOMPLETE_MARK} `{policy}` left out of the aggregates: {reason}")
    if aggregates.get("left_out"):
        lines.append("")
    return lines


def render_markdown(
    summary: Mapping[str, Any],
    *,
    title: str = "Evaluation summary",
    preamble: Sequence[str] = (),
    main_table_only: bool = False,
) -> str:
    """Render :func:`summarize_runs`'s dict as markdown tables, one section per workload.

    Incomplete runs are listed in a bold section before the tables (not with
    ``main_table_only``); in every table a policy with an incomplete run is flagged
    (``fifo ⚠ incomplete (2/3 runs)``) and its partial means marked ``†``.

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
        lines += _incomplete_section(summary)
        lines += _oracle_note(summary)
    across = across_workloads(summary)
    if across is not None:
        lines += render_across_workloads(across)
    if summary.get("aggregates") and not main_table_only:
        lines += render_aggregates(summary["aggregates"])
    if summary.get("oracle_aggregates") and not main_table_only:
        lines += render_aggregates(summary["oracle_aggregates"], oracle=True)
    for workload, entry in summary["workloads"].items():
        cells = entry["policies"]
        policies = _fair_first(cells)
        seeds = entry["seeds"]
        labels = {p: _policy_cell(p, cells[p]) for p in policies}
        lines += [f"## Workload `{workload}` (seeds {_seed_text(seeds)})", ""]
        lines += _table(
            ["policy", *metrics],
            (
                [
                    labels[p],
                    *(_mean_cell(cells[p]["metrics"][m], _is_partial(cells[p])) for m in metrics),
                ]
                for p in policies
            ),
        )
        lines.append("")
        partial = [p for p in policies if _is_partial(cells[p])]
        if partial:
            lines += [
                f"{INCOMPLETE_MARK} The incomplete runs (truncated, or with jobs unfinished) "
                f"of {', '.join(f'`{p}`' for p in partial)} are left out; {PARTIAL_MARK} a "
                "mean over that policy's complete runs only (not the seeds of the others): "
                "not ranked.",
                "",
            ]
        bound = entry.get("jct_lower_bound_s")
        if bound is not None and "mean_jct_s" in metrics:
            lines += [
                "Lower bound of `mean_jct_s` (the jobs' mean solo duration, which no "
                f"scheduler beats): {_mean_cell({**bound, 'best': False})}.",
                "",
            ]
        if main_table_only:
            continue
        if baseline in cells:
            lines += [
                f"### Ratio of means to `{baseline}` (seeds where both completed)",
                "",
            ]
            lines += _table(
                ["policy", *metrics],
                (
                    [labels[p], *(_ratio_cell(cells[p]["metrics"][m]) for m in metrics)]
                    for p in policies
                ),
            )
            lines.append("")
        if reference in cells and len(policies) > 1:
            lines += [
                f"### Paired difference to `{reference}` (policy − {reference}, same seeds)",
                "",
                f"Mean difference ± {level:.0%} paired-t half-width (relative to "
                f"`{reference}`'s mean) over the seeds where both completed (`[k of n "
                "seeds]` when runs were left out); \\* the interval excludes 0.",
                "",
            ]
            lines += _table(
                ["policy", *metrics],
                (
                    [
                        _pairs_label(labels[p], cells[p], len(seeds)),
                        *(_diff_cell(cells[p]["metrics"][m]["vs_reference"]) for m in metrics),
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


def _inverse(ratio: float | None) -> float | None:
    """``1 / ratio`` (``baseline / policy`` from ``policy / baseline``); ``None`` if
    undefined."""
    return None if ratio is None or ratio == 0 else 1.0 / ratio


def _fixed(value: float | None, spec: str, suffix: str = "") -> str:
    """``value`` formatted by ``spec`` (a format spec) and followed by ``suffix``, or
    ``n/a``."""
    return "n/a" if value is None else format(value, spec) + suffix


def render_ratio_table(summary: Mapping[str, Any]) -> str:
    """The thesis's table, one per workload: the means over seeds of makespan, mean JCT,
    GPU utilisation and suspensions, and the ratios to the baseline, each a ratio of the
    two means (utilisation: policy / baseline; makespan and mean JCT: baseline / policy,
    so above 1 is better). Over complete runs only, as every statistic of the summary; a
    policy with an incomplete run is flagged and its partial means marked.

    Args:
        summary: :func:`summarize_runs`'s dict, with the metrics ``makespan_s``,
            ``mean_jct_s``, ``gpu_util`` and ``suspends``.

    Returns:
        The markdown text, ending with a newline.
    """
    baseline = summary["baseline"]
    lines: list[str] = []
    for workload, entry in summary["workloads"].items():
        lines += [f"**Workload `{workload}`** (mean over seeds {_seed_text(entry['seeds'])})", ""]
        header = [
            "policy", "makespan [s]", "mean JCT [s]", "GPU util", f"util / {baseline}",
            f"makespan {baseline} / policy", f"JCT {baseline} / policy", "suspends",
        ]  # fmt: skip
        lines += [
            "| " + " | ".join(header) + " |",
            "|---|" + "|".join("---:" for _ in header[1:]) + "|",
        ]
        for policy in _fair_first(entry["policies"]):
            cell = entry["policies"][policy]
            m = cell["metrics"]
            mark = f" {PARTIAL_MARK}" if _is_partial(cell) else ""
            values = [
                _fixed(m["makespan_s"]["mean"], ",.0f", mark),
                _fixed(m["mean_jct_s"]["mean"], ",.0f", mark),
                _fixed(m["gpu_util"]["mean"], ".3f", mark),
                _fixed(m["gpu_util"]["ratio_to_baseline"], ".2f", "x"),
                _fixed(_inverse(m["makespan_s"]["ratio_to_baseline"]), ".2f", "x"),
                _fixed(_inverse(m["mean_jct_s"]["ratio_to_baseline"]), ".2f", "x"),
                _fixed(m["suspends"]["mean"], ".0f", mark),
            ]
            lines.append(f"| {_policy_cell(policy, cell)} | " + " | ".join(values) + " |")
        lines.append("")
    return "\n".join(lines)


def _seed_text(seeds: Sequence[int]) -> str:
    """``0-2`` for a contiguous run of seeds, else a comma list."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)
