"""``gpushare-evaluate``: every policy on identical seeded workloads, with statistics and plots.

Each run is one (policy, workload, seed). Every policy, heuristic or learned, acts through
the same ``GPUShare-v0`` env on the same seeded workload (``env.reset(seed=seed)``), with
stable-baselines3's ``predict`` protocol; learned agents also get ``action_masks``. Runs are
spread over processes; the results do not depend on ``--workers`` (rows are sorted by
policy, workload and seed). The output folder holds:

* ``runs.csv``: one row per run (``policy, workload, seed, num_jobs`` (the finished
  jobs, which the metrics are over), the metrics, ``wall_s``, then ``status``,
  ``jobs_total``, ``jobs_unfinished`` and further columns); ``jobs.csv``: one row per
  finished job per run;
* ``config.json``: everything needed to reproduce each run (seed, workload spec, cluster,
  env config, policy parameters, trace and model checksums, versions, a command line);
* ``summary.md`` / ``summary.json``: per policy and workload the mean and 95% Student-t CI
  of each metric, the ratio to ``fifo``, the paired difference to ``thesis`` (same seeds),
  best values in bold, all over complete runs only; the status of every run;
* ``plots/``: metric bars with CIs, JCT CDFs, GPU utilisation over time (first seed), and
  Gantt views (jobs by GPU over time, one lane per sharing slot) of one run.

Examples::

    gpushare-evaluate                                   # thesis preset, prints the table
    gpushare-evaluate --preset philly --workers 2       # agents' test seeds on medium
    gpushare-evaluate --policies fifo thesis agents/zoo/model.zip --seeds 0-4
    gpushare-evaluate --trace jobs.csv --cluster medium --policies fifo_pack thesis
    # a 100k-job trace: headless simulator, heuristics only, one seed, no per-job CSV
    gpushare-evaluate --headless --trace big.csv --cluster philly --seeds 0 \\
        --policies fifo_pack fgd --no-jobs-csv --out results/big

``--headless`` runs heuristics on the simulator without the env. The policies still see
the env's windows (``pending_window`` / ``running_window``), so a headless run makes the
same decisions and gives the same numbers as the env run (tested); it only skips building
observations, masks and rewards. Each worker holds its own copy of the trace.

Every run ends with a ``status``: ``complete`` (every job finished), ``truncated_decisions``
(stopped by the decision cap, ``--max-decisions``), ``truncated_time`` (stopped by the
env's ``limits.max_time_s``) or ``unfinished`` (jobs left, no valid action). An incomplete
run's metrics cover only the jobs that finished (the short ones first), so it can look
better than any complete run: it stays in ``runs.csv`` but every mean, ratio, paired
difference and plot leaves it out (a ratio or paired difference uses the seeds where both
policies completed), its policy is flagged in every table (``⚠ incomplete (2/3 runs)``,
partial means ``†``), ``summary.md`` lists it in a bold section, and stderr names it.

A trace plays every one of its jobs unless ``--num-jobs`` keeps its first N; then the log
and ``summary.md`` say so (``trace X: first N of M jobs (--num-jobs)``).

Exit status: 0 when every run completed; 1 when a run crashed (a bug in a policy: it does
not stop the others, and is reported on stderr and in ``summary.md``); 2 for bad arguments
(unknown policy, missing or malformed trace, negative seed, ...: one line on stderr,
nothing run); 3 when a run is incomplete, unless ``--allow-incomplete`` (then 0, the run
still flagged everywhere). A crash wins over an incomplete run.

This package is the command line only (``arguments``: the options and the plan they
ask for; :func:`main`); the harness itself is the library
:mod:`gpushare_env.evaluation` (``plan``, ``runs``, ``outputs``, ``report``, ``plots``),
whose runs play their episodes with :func:`gpushare_env.rollout.rollout`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gpushare_env.evaluation.outputs import write_outputs
from gpushare_env.evaluation.report import (
    describe_incomplete_run,
    incomplete_runs,
    render_markdown,
)
from gpushare_env.evaluation.runs import run_all
from gpushare_env.evaluation.specs import PROG, PlanError, RunOutput, one_line
from scripts.evaluate.arguments import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    build_parser,
    parse_seeds,
    plan_from_args,
)

__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "main",
    "parse_seeds",
    "plan_from_args",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-evaluate``; returns the exit status (``EXIT_*``: 0 fine,
    1 a run crashed, 2 bad arguments, 3 a run incomplete without ``--allow-incomplete``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(arguments)
        plan = plan_from_args(args)
    except PlanError as error:
        print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    if not args.quiet:
        print(
            f"{PROG}: {len(plan.runs)} runs ({len(plan.policies)} policies x "
            f"{len(plan.workloads)} workloads x {len(plan.seeds)} seeds) on "
            f"{plan.workers} worker(s) -> {plan.out}",
            file=sys.stderr,
        )
        for note in plan.notes:
            print(f"{PROG}: note: {note}", file=sys.stderr)
    start = time.perf_counter()
    outputs = run_all(plan.runs, plan.workers, progress=not args.quiet)
    summary, _ = write_outputs(plan, outputs, arguments, not args.no_plots, not args.no_jobs_csv)
    if not args.quiet and summary["workloads"]:
        table = render_markdown(summary, title=f"{plan.title}: mean ± 95% CI", main_table_only=True)
        print(table)
        print(
            f"{PROG}: {len(outputs)} runs in {time.perf_counter() - start:.1f} s; "
            f"results in {plan.out}/ (summary.md, runs.csv, plots/)",
            file=sys.stderr,
        )
    failed = [o for o in outputs if o.error is not None]
    by_error: dict[str, list[RunOutput]] = {}
    for output in failed:
        by_error.setdefault(str(output.error), []).append(output)
    for message, runs in by_error.items():
        names = [f"{o.row['policy']}/{o.row['workload']}/seed {o.row['seed']}" for o in runs]
        shown = ", ".join(names[:4]) + (f", ... ({len(names) - 4} more)" if len(names) > 4 else "")
        print(f"{PROG}: {len(runs)} run(s) failed ({shown}): {message}", file=sys.stderr)
    incomplete = incomplete_runs(summary)
    if incomplete:
        _warn_incomplete(incomplete, len(summary["runs"]), args.allow_incomplete)
    if failed:
        return EXIT_FAILED
    if incomplete and not args.allow_incomplete:
        return EXIT_INCOMPLETE
    return EXIT_OK


def _warn_incomplete(incomplete: Sequence[Mapping[str, Any]], total: int, allowed: bool) -> None:
    """The loud stderr warning naming every policy with incomplete runs (even ``--quiet``)."""
    by_cell: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for run in incomplete:
        by_cell.setdefault((run["policy"], run["workload"]), []).append(run)
    policies = list(dict.fromkeys(run["policy"] for run in incomplete))
    lines = [
        f"WARNING: {len(incomplete)} of {total} run(s) INCOMPLETE (jobs left unfinished); "
        "their metrics cover only the jobs that finished, so every mean, comparison and "
        "plot leaves them out:"
    ]
    for runs in by_cell.values():
        shown = [describe_incomplete_run(run) for run in runs[:3]]
        more = f" (and {len(runs) - 3} more on this workload)" if len(runs) > 3 else ""
        lines += [f"  {text}" for text in shown]
        if more:
            lines[-1] += more
    outcome = (
        "accepted (--allow-incomplete): exit status 0"
        if allowed
        else f"exit status {EXIT_INCOMPLETE} (--allow-incomplete accepts them)"
    )
    lines.append(f"policies with incomplete runs: {', '.join(policies)}; see summary.md; {outcome}")
    for line in lines:
        print(f"{PROG}: {line}", file=sys.stderr)
