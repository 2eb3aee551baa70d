"""``gpushare-evaluate``: every policy on identical seeded workloads, with statistics and plots.

Each run is one (policy, workload, seed). Every policy, heuristic or learned, acts through
the same ``GPUShare-v0`` env on the same seeded workload (``env.reset(seed=seed)``), with
stable-baselines3's ``predict`` protocol; learned agents also get ``action_masks``. Runs are
spread over processes; the results do not depend on ``--workers`` (rows are sorted by
policy, workload and seed once every run is done). The output folder holds:

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
  Gantt views (jobs by GPU over time, one lane per sharing slot) of one run;
* ``plot_data/``: per run, what the plots need (JCTs, utilisation series, Gantt holds),
  so that a resumed evaluation draws the same plots without running a run again.

**Nothing finished is lost.** Each run is saved as soon as it ends: its plot data, its
``jobs.csv`` rows, then its ``runs.csv`` row, each an append of whole lines flushed to
disk (:class:`~gpushare_eval.store.RunStore`); ``config.json`` is written
before the first run, with a key of each run's configuration. A Ctrl-C stops the workers
and says how many runs are saved and the command that resumes (exit status 130); a
worker that dies (killed, out of memory) ends the evaluation the same way (exit 1); a
killed main process or machine keeps every run saved before (a half-written last row
is ignored, then cut off). ``--resume`` skips the runs recorded with the same
configuration (policy and parameters, workload or trace checksum, env config, seed,
mode, model checksum), runs the others, and writes the summaries and plots from all of
them: ``runs.csv`` (in plan order), ``jobs.csv``, ``summary.json`` and the plots are the
same as an uninterrupted evaluation's, apart from ``wall_s`` (each run's measured time,
kept from when it ran). Runs that crashed are not saved, so a resume runs them again.

The output folder is checked before the first run: an unwritable ``--out`` is a usage
error at once; a folder holding an earlier evaluation's results is refused unless
``--resume`` (which also refuses one holding another evaluation, or the same runs with
other settings) or ``--force``, which deletes them (``runs.csv``, ``jobs.csv``,
``config.json``, ``summary.*``, the harness's files in ``plots/`` and ``plot_data/``;
never another file) so that no stale plot sits beside new results.

Examples::

    gpushare-evaluate                                   # thesis preset, prints the table
    gpushare-evaluate --preset philly --workers 2       # agents' test seeds on medium
    gpushare-evaluate --policies fifo thesis agents/zoo/model.zip --seeds 0-4
    gpushare-evaluate --trace jobs.csv --cluster medium --policies fifo_pack thesis
    # a 100k-job trace: headless simulator, heuristics only, one seed, no per-job CSV
    gpushare-evaluate --headless --trace big.csv --cluster philly --seeds 0 \\
        --policies fifo_pack min_frag --no-jobs-csv --out results/big

``--backend ray`` makes each run a Ray task (:mod:`gpushare_eval.ray_backend`;
``pip install 'gpushare-env[ray]'``): on a local Ray instance with ``--workers`` CPUs, or on
the cluster at ``--ray-address``, whose nodes get the traces and saved agents through
Ray's object store. Everything above holds as with the process pool (the same files,
each run saved as it ends, ``--resume``, Ctrl-C); a run whose worker dies is retried by
Ray and recorded once. The default ``--backend local`` never imports Ray.

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

A policy that sees the future (``lookahead:oracle=true``, which plans on full forks of the
simulator: future arrivals, true job lengths) is a clairvoyant upper bound, not a
contender: its runs have ``oracle`` 1 in ``runs.csv`` (every other run 0; a ``runs.csv``
written before the column is resumed with it) and ``config.json``, and the summary keeps
it out of every ranking: never bold, out of the aggregates (its own are apart), last in
every table and marked ``(oracle: sees the future; an upper bound, not ranked)``.

The progress bar counts the runs done and shows the jobs finished so far of the runs in
progress (``2 running: 1,234/4,000 jobs``), which each run reports every half second
at most (Ray tasks report none).

Exit status: 0 when every run completed; 1 when a run crashed (a bug in a policy: it does
not stop the others, and is reported on stderr and in ``summary.md``) or a worker process
died; 2 for bad arguments (unknown policy, missing or malformed trace, negative seed, an
unwritable or already used output folder, ...: one line on stderr, nothing run); 3 when a
run is incomplete, unless ``--allow-incomplete`` (then 0, the run still flagged
everywhere); 130 when interrupted. A crash wins over an incomplete run.

This package is the command line only (``arguments``: the options and the plan they
ask for; :func:`main`); the harness itself is the library
:mod:`gpushare_eval` (``plan``, ``runs``, ``store``, ``outputs``, ``report``,
``plots``), whose runs play their episodes with :func:`gpushare_env.rollout.rollout`.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_eval.cli.evaluate.arguments import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    build_parser,
    parse_seeds,
    plan_from_args,
)
from gpushare_eval.outputs import build_config, write_outputs
from gpushare_eval.plan import Plan
from gpushare_eval.ray_backend import RAY_MISSING, RayStartError, ray_available
from gpushare_eval.report import (
    describe_incomplete_run,
    incomplete_runs,
    render_markdown,
    render_ratio_table,
)
from gpushare_eval.runs import WorkerDied, run_all
from gpushare_eval.specs import PROG, PlanError, RunOutput, RunSpec, one_line
from gpushare_eval.store import RunStore, check_writable, prepare_folder, run_id

__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "main",
    "parse_seeds",
    "plan_from_args",
    "resume_command",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-evaluate``; returns the exit status (``EXIT_*``: 0 fine,
    1 a run crashed or a worker died, 2 bad arguments or an unusable output folder, 3 a
    run incomplete without ``--allow-incomplete``, 130 interrupted)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        session = _prepare(arguments)
    except PlanError as error:
        print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted before the first run", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _evaluate(session, arguments)


@dataclass(slots=True)
class _Session:
    """An evaluation ready to run: its plan, ``config.json``, store and recorded runs."""

    args: argparse.Namespace
    plan: Plan
    config: dict[str, Any]
    store: RunStore
    kept: set[tuple[str, str, str]]


def _prepare(arguments: Sequence[str]) -> _Session:
    """Parse, plan, and get the output folder ready before the first run.

    Raises:
        PlanError: Bad arguments, or an output folder that cannot be used.
    """
    args = build_parser().parse_args(arguments)
    if args.ray_address is not None and args.backend != "ray":
        raise UsageError("--ray-address needs --backend ray")
    if args.backend == "ray" and not ray_available():
        raise UsageError(f"--backend ray: {RAY_MISSING}")
    if args.out is not None:  # before planning, which may load agents: fail at once
        check_writable(Path(args.out))
    plan = plan_from_args(args)
    check_writable(plan.out)
    jobs_csv = not args.no_jobs_csv
    config = build_config(plan, arguments, jobs_csv=jobs_csv)
    try:
        kept, previous = prepare_folder(
            plan.out, config["runs"], resume=args.resume, force=args.force, jobs_csv=jobs_csv
        )
        store = RunStore(plan.out, jobs_csv=jobs_csv)
        store.open(config)
    except OSError as error:  # the folder passed its check, then could not be written
        raise PlanError(f"--out {plan.out}: {one_line(error)}") from None
    old_commit, new_commit = previous.config.get("git_commit"), config.get("git_commit")
    if kept and old_commit != new_commit:
        plan.notes.append(
            f"resumed: {len(kept)} run(s) were recorded at commit {old_commit}, the others "
            f"at {new_commit}"
        )
    return _Session(args, plan, config, store, kept)


def _evaluate(session: _Session, arguments: Sequence[str]) -> int:
    """Run what is not recorded yet, then write the summary and plots; the exit status."""
    args, plan, store, kept = session.args, session.plan, session.store, session.kept
    todo = [run for run in plan.runs if _spec_id(run) not in kept]
    if not args.quiet:
        _say_plan(plan, len(todo), _where(args, plan))
    start = time.perf_counter()
    failed: list[RunOutput] = []

    def record(output: RunOutput) -> None:
        if not store.record(output):
            failed.append(output)

    try:
        workers = min(plan.workers, max(1, len(todo)))
        run_all(todo, workers, not args.quiet, on_done=record, keep=False,
                backend=args.backend, ray_address=args.ray_address)  # fmt: skip
        rows = store.finish([_spec_id(run) for run in plan.runs])
        outputs = _recorded_outputs(plan, store, rows)
        summary, _ = write_outputs(
            plan, outputs, arguments, not args.no_plots, config=session.config,
            failed=failed, resumed=len(kept),
        )  # fmt: skip
    except KeyboardInterrupt:
        _say_stopped("interrupted", plan, store, arguments)
        return EXIT_INTERRUPTED
    except WorkerDied as error:
        _say_stopped(f"error: {error}", plan, store, arguments)
        return EXIT_FAILED
    except RayStartError as error:
        _say_stopped(f"error: {one_line(error)}", plan, store, arguments)
        return EXIT_FAILED
    except OSError as error:
        _say_stopped(f"error: cannot write {plan.out}: {one_line(error)}", plan, store, arguments)
        return EXIT_FAILED
    if not args.quiet and summary["workloads"]:
        if plan.preset.ratio_table:
            table = render_ratio_table(summary)
        else:
            title = f"{plan.title}: mean ± 95% CI"
            table = render_markdown(summary, title=title, main_table_only=True)
        print(table)
        print(
            f"{PROG}: {len(todo)} runs in {time.perf_counter() - start:.1f} s; "
            f"results in {plan.out}/ (summary.md, runs.csv, plots/)",
            file=sys.stderr,
        )
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


def _spec_id(run: RunSpec) -> tuple[str, str, str]:
    """A planned run's identity, as :func:`~gpushare_eval.store.run_id` gives
    a recorded row's."""
    return run_id({"policy": run.policy.label, "workload": run.workload.label, "seed": run.seed})


def _where(args: argparse.Namespace, plan: Plan) -> str:
    """Where the runs go, for the opening line."""
    if args.backend != "ray":
        return f"{plan.workers} worker(s)"
    if args.ray_address:
        return f"the Ray cluster at {args.ray_address}"
    return f"a local Ray instance ({plan.workers} CPUs)"


def _say_plan(plan: Plan, todo: int, where: str) -> None:
    """The opening lines on stderr: what runs where, and what a resume skips."""
    print(
        f"{PROG}: {len(plan.runs)} runs ({len(plan.policies)} policies x "
        f"{len(plan.workloads)} workloads x {len(plan.seeds)} seeds) on "
        f"{where} -> {plan.out}",
        file=sys.stderr,
    )
    if todo < len(plan.runs):
        print(
            f"{PROG}: resuming: {len(plan.runs) - todo} runs already recorded, {todo} to run",
            file=sys.stderr,
        )
    for note in plan.notes:
        print(f"{PROG}: note: {note}", file=sys.stderr)


def _recorded_outputs(
    plan: Plan, store: RunStore, rows: Sequence[Mapping[str, Any]]
) -> list[RunOutput]:
    """Every recorded run with its plot data, in plan order.

    Only the series and Gantt views this plan asks for are drawn (a resume may change
    ``--gantt``); a run whose plot data is missing, or lacks a Gantt view asked for now,
    is noted and left out of the plots that need it.
    """
    specs = {_spec_id(run): run for run in plan.runs}
    outputs, missing, no_gantt = [], 0, []
    for row in rows:
        spec = specs[run_id(row)]
        output = store.load_output(spec.index, row)
        if output is None:
            missing += 1
            output = RunOutput(spec.index, dict(row), np.zeros(0), [], None, None, (0, 0, []))
        if not spec.record_series:
            output.series = None
        if not spec.record_gantt:
            output.gantt = None
        elif output.gantt is None and output.layout[0]:
            no_gantt.append(f"{row['policy']}/{row['workload']}/seed {row['seed']}")
        outputs.append(output)
    if missing:
        plan.notes.append(
            f"the plot data of {missing} run(s) is missing from plot_data/: they are left "
            "out of the JCT CDFs, utilisation and Gantt plots"
        )
    if no_gantt:
        plan.notes.append(
            f"no Gantt view of {', '.join(no_gantt)}: recorded without one (--gantt was "
            "another when it ran)"
        )
    return outputs


def resume_command(arguments: Sequence[str]) -> str:
    """The command line that resumes an evaluation: the same options, ``--force``
    dropped (it would delete what was saved), ``--resume`` added."""

    def names(token: str, option: str) -> bool:  # argparse takes unique prefixes too
        return len(token) > 3 and "=" not in token and option.startswith(token)

    kept = [token for token in arguments if not names(token, "--force")]
    if not any(names(token, "--resume") for token in kept):
        kept.append("--resume")
    return shlex.join([PROG, *kept])


def _say_stopped(reason: str, plan: Plan, store: RunStore, arguments: Sequence[str]) -> None:
    """Say why the evaluation stopped, what is saved and how to go on (even ``--quiet``)."""
    saved = len(store.recorded)
    print(
        f"{PROG}: {reason}; {saved} of {len(plan.runs)} runs are saved in "
        f"{plan.out}/runs.csv. To resume:\n  {resume_command(arguments)}",
        file=sys.stderr,
    )


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
