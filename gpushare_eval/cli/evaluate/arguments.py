"""``gpushare-evaluate``'s options, and the plan they ask for.

Only the command line lives here: the options, their text (seed ranges, integers, JSON)
and the :class:`~gpushare_eval.plan.Plan` they resolve to through
:func:`gpushare_eval.plan.make_plan`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from gpushare_env import seeding
from gpushare_env.presets import EVALUATION_PRESETS
from gpushare_eval.plan import Plan, make_plan
from gpushare_eval.specs import AGENT_WINDOWS, DECISIONS_PER_JOB, PROG, PlanError

__all__ = [
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "build_parser",
    "json_arg",
    "parse_seeds",
    "plan_from_args",
    "positive_int",
]

#: Exit statuses of ``gpushare-evaluate`` (a crashed run wins over an incomplete one).
EXIT_OK = 0
EXIT_FAILED = 1  # a run crashed (a bug in a policy); the other runs are written
EXIT_USAGE = 2  # bad arguments: nothing was run
EXIT_INCOMPLETE = 3  # a run stopped with jobs unfinished (unless --allow-incomplete)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): the finished runs are saved, --resume goes on

_EXIT_TEXT = f"""\
Exit status:
  {EXIT_OK}  every run completed (or --allow-incomplete was given)
  {EXIT_FAILED}  a run crashed (reported on stderr and in summary.md; the others are written),
     or a worker process died (the finished runs are saved: --resume goes on)
  {EXIT_USAGE}  bad arguments, or an output folder that cannot be used (one line on
     stderr; nothing is run)
  {EXIT_INCOMPLETE}  a run stopped with jobs unfinished: truncated by the decision cap
     (--max-decisions) or the time cap, or stuck. Its row stays in runs.csv (status
     column) but every mean, comparison and plot leaves it out; stderr and summary.md
     name it. --allow-incomplete accepts such runs (exit 0, still flagged everywhere).
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C): the finished runs are saved; stderr gives the
     command that resumes (the same one with --resume)

Output folder: each run is saved (runs.csv, jobs.csv, plot_data/) as soon as it
finishes, so an interrupted evaluation loses only the runs in progress. The folder is
checked before the first run: it must be writable and hold no earlier results (other
files are left alone), unless
  --resume  continues the evaluation saved there: the runs recorded with the same
            configuration are skipped, the others run, and the summary and plots are
            drawn from all of them (the same files as an uninterrupted evaluation);
  --force   deletes the earlier results (runs.csv, jobs.csv, config.json, summary.*,
            plots/, plot_data/; nothing else) and starts over."""


class UsageError(PlanError):
    """A bad command line (unparsable option text): one line on stderr, exit code 2."""


class UsageParser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit code 2 (``UsageError``),
    for every command of the harness."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line arguments."""
    parser = UsageParser(
        prog=PROG,
        description="Every policy on identical seeded workloads, with statistics and plots.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Presets: "
        + "; ".join(f"{p.name}: {p.description}" for p in EVALUATION_PRESETS.values())
        + "\n\n"
        + _EXIT_TEXT,
    )
    parser.add_argument(
        "--preset",
        choices=sorted(EVALUATION_PRESETS),
        default=None,
        help="named set-up giving the default workloads, cluster, seeds, jobs, and for some "
        "the policies, windows and mode (default thesis)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        metavar="POLICY",
        help="baseline names (see baselines.available(); 'all' for every one), variants "
        "(baselines.variants(), e.g. gandiva_srpt; not in 'all'), a baseline or variant "
        "with parameters (NAME:KEY=VALUE:..., e.g. thesis:critical_path_factor=inf), a grid "
        "of them ('thesis:max_suspends={2,4,8}': three policies), saved "
        "agents (path/to/model.zip) and 'zoo' (the agents shipped in agents/zoo); default: "
        "the preset's policies if it names them (thesis_headless), else all baselines + "
        "the shipped agents that fit the set-up",
    )
    parser.add_argument(
        "--workload",
        action="append",
        metavar="SPEC",
        help="workload preset name (thesis, thesis_poisson, philly, philly_bursty, ...) or "
        "a JSON dict of WorkloadConfig fields; repeatable",
    )
    parser.add_argument(
        "--trace",
        action="append",
        metavar="PATH",
        help="a CSV or Philly JSON trace: every policy runs that exact job list; repeatable",
    )
    parser.add_argument("--cluster", help="cluster preset name or a JSON dict")
    parser.add_argument(
        "--sweep",
        action="append",
        metavar="KEY=V1,V2",
        help="run every workload under each value of an env setting (a GPUShare-v0 config "
        "key, e.g. max_suspends_per_job=1,3,None); repeatable (the product). A policy "
        "grid goes in --policies: 'thesis:max_suspends={2,4,8}'. sweep.csv and "
        "plots/sweep_*.png show each swept parameter",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        metavar="SEED",
        help="episode seeds: integers, ranges like 0-9, or comma lists",
    )
    parser.add_argument(
        "--num-jobs",
        type=str,
        metavar="N",
        help="jobs per episode (default: the preset's; a trace: every job, or its first N, "
        "which the log and summary.md say)",
    )
    parser.add_argument(
        "--workers",
        type=str,
        metavar="N",
        help=f"parallel processes (default: all cores, {os.cpu_count()} here)",
    )
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="where the runs go: 'local' (a process pool, default) or 'ray' (one Ray task "
        "per run; needs pip install 'gpushare-env[ray]'). The results are the same",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --backend ray: join this Ray cluster (e.g. ray://head:10001, head:6379, "
        "auto) instead of starting a local instance with --workers CPUs",
    )
    parser.add_argument(
        "--max-decisions",
        metavar="N",
        help=f"truncate an episode after N decisions (default {DECISIONS_PER_JOB} per job "
        "+ 10,000); truncated runs are left out of the statistics, flagged, and make the "
        f"exit status {EXIT_INCOMPLETE}",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 even if a run stopped with jobs unfinished (it is still left out of "
        "the statistics and flagged everywhere)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output folder (default results/<preset>); one holding earlier results needs "
        "--resume or --force",
    )
    reuse = parser.add_mutually_exclusive_group()
    reuse.add_argument(
        "--resume",
        action="store_true",
        help="continue the evaluation saved in --out: skip the runs recorded with the same "
        "configuration, run the others, then redo the summary and plots from all of them",
    )
    reuse.add_argument(
        "--force",
        action="store_true",
        help="delete the results of an earlier evaluation in --out (runs.csv, jobs.csv, "
        "config.json, summary.*, plots/, plot_data/; nothing else) and start over",
    )
    parser.add_argument(
        "--window",
        metavar="N",
        help="the baselines see and address the first N waiting and running jobs, in "
        "[1, 1024] (default: 1024 on traces, the env's 16 on generated workloads; saved "
        "agents keep their own, see --agent-windows)",
    )
    parser.add_argument(
        "--agent-windows",
        choices=AGENT_WINDOWS,
        default=AGENT_WINDOWS[0],
        help="the windows saved agents play with: the ones they were trained with "
        "(default), or the evaluation's, as the baselines (pointer agents only: their "
        "weights do not depend on the windows nor on the cluster, agents.portable)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--headless",
        action="store_const",
        const=True,
        default=None,
        help="run heuristics on the simulator without the env (fastest; huge traces; the "
        "same numbers as the env with the same windows)",
    )
    mode.add_argument(
        "--env",
        dest="headless",
        action="store_const",
        const=False,
        help="run through GPUShare-v0 where the preset runs headless (thesis_headless)",
    )
    parser.add_argument(
        "--reference", help="policy of the paired differences (default: thesis, if evaluated)"
    )
    parser.add_argument("--baseline", help="policy of the ratios (default: fifo, if evaluated)")
    parser.add_argument(
        "--gantt",
        nargs="+",
        metavar="POLICY",
        help="policies drawn as Gantt views on the first seed of each workload "
        "(default: the reference and the baseline; 'none' for no Gantt view)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-jobs-csv", action="store_true", help="skip jobs.csv")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    return parser


def parse_seeds(tokens: Sequence[str]) -> list[int]:
    """``--seeds``: :func:`gpushare_env.seeding.parse_seeds`, sorted (runs are listed by
    seed).

    Raises:
        UsageError: What ``parse_seeds`` refuses, named as ``--seeds: ...``.
    """
    try:
        return sorted(seeding.parse_seeds(tokens))
    except ValueError as error:
        raise UsageError(f"--seeds: {error}") from None


def positive_int(text: str | None, option: str) -> int | None:
    """``None`` or an int >= 1 from an option's text."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{option}: expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{option}: expected an integer >= 1, got {value}")
    return value


def json_arg(text: str, option: str) -> Any:
    """A JSON value from an option, or the text itself when it is not JSON-looking."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{option}: invalid JSON: {error.msg}") from None


def plan_from_args(args: argparse.Namespace) -> Plan:
    """The plan the parsed options ask for.

    Raises:
        PlanError: Any bad argument, with a one-line message (``UsageError`` for text
            that does not parse).
    """
    return make_plan(
        preset=args.preset,
        policies=args.policies,
        workloads=[json_arg(text, "--workload") for text in args.workload or []],
        traces=args.trace or [],
        cluster=json_arg(args.cluster, "--cluster") if args.cluster else None,
        seeds=parse_seeds(args.seeds) if args.seeds is not None else None,
        num_jobs=positive_int(args.num_jobs, "--num-jobs"),
        workers=positive_int(args.workers, "--workers"),
        max_decisions=positive_int(args.max_decisions, "--max-decisions"),
        out=args.out,
        headless=args.headless,
        reference=args.reference,
        baseline=args.baseline,
        gantt=args.gantt,
        jobs_csv=not args.no_jobs_csv,
        sweep=args.sweep or (),
        window=positive_int(args.window, "--window"),
        agent_windows=args.agent_windows,
    )
