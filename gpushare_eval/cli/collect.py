"""``gpushare-collect``: play a policy on ``GPUShare-v0`` and keep its episodes as a Minari dataset.

Examples::

    # thesis on the thesis workload, 20 episodes (seeds 0-19), as gpushare/thesis-v0
    gpushare-collect --policy thesis --preset thesis --workload thesis \\
        --episodes 20 --dataset-id gpushare/thesis-v0
    # a saved agent on a shipped Philly trace, seeds 100-104
    gpushare-collect --policy agents/zoo/maskable_ppo_dagger_general.zip \\
        --trace gpushare_env/workloads/data/philly_vc/11cb48.csv --cluster load=0.9 \\
        --num-jobs 200 --seeds 100-104 --dataset-id gpushare/general-11cb48-v0

Policies, presets, workloads, traces, clusters and windows are named as for
``gpushare-evaluate``, and the policy plays exactly as it does there. The dataset goes to
Minari's local folder (``MINARI_DATASETS_PATH``, default ``~/.minari/datasets``);
``minari.load_dataset(ID)`` reads it, ``dataset.recover_environment()`` builds the env it
was played in, and ``gpushare-train --bc-dataset ID`` clones it. Needs the ``minari``
extra (``pip install 'gpushare-env[minari]'``).

Exit status: 0 written; 2 bad arguments (nothing played); 1 Minari missing or the
dataset exists (``--force`` replaces it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from gpushare_env.presets import EVALUATION_PRESETS
from gpushare_eval.cli.evaluate.arguments import (
    UsageError,
    UsageParser,
    json_arg,
    parse_seeds,
    positive_int,
)
from gpushare_eval.specs import AGENT_WINDOWS, PlanError

PROG = "gpushare-collect"


def build_parser() -> argparse.ArgumentParser:
    """The command-line arguments."""
    parser = UsageParser(
        prog=PROG,
        description="Play one policy on one workload of GPUShare-v0 and write the episodes "
        "as a Minari dataset (observations, actions, rewards, the action mask in the "
        "infos, the env spec).",
    )
    parser.add_argument(
        "--dataset-id",
        required=True,
        metavar="ID",
        help="Minari dataset id, (namespace/)(env_name/)dataset_name(-vN), e.g. gpushare/thesis-v0",
    )
    parser.add_argument(
        "--policy",
        required=True,
        metavar="POLICY",
        help="a baseline or variant name, with parameters or not (thesis, "
        "gandiva_srpt:max_load=1.25), or a saved agent path/to/model.zip; as "
        "gpushare-evaluate --policies takes them",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(EVALUATION_PRESETS),
        help="set-up giving the default cluster, workload and jobs (default thesis)",
    )
    parser.add_argument(
        "--workload",
        metavar="SPEC",
        help="workload preset name or a JSON dict of WorkloadConfig fields (one dataset, "
        "one workload: needed when the preset has several)",
    )
    parser.add_argument("--trace", metavar="PATH", help="a CSV or Philly JSON trace")
    parser.add_argument("--cluster", help="cluster preset name, load=X, or a JSON dict")
    parser.add_argument("--num-jobs", metavar="N", help="jobs per episode")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--episodes",
        metavar="N",
        help="episodes to play, seeds --first-seed ... --first-seed + N - 1 (default 10)",
    )
    seeds.add_argument(
        "--seeds",
        nargs="+",
        metavar="SEED",
        help="the episode seeds instead: integers, ranges like 0-9, or comma lists",
    )
    parser.add_argument(
        "--first-seed", type=int, default=0, metavar="S", help="first seed of --episodes"
    )
    parser.add_argument(
        "--window",
        metavar="N",
        help="windows of a baseline, in [1, 1024] (default as gpushare-evaluate's)",
    )
    parser.add_argument(
        "--agent-windows",
        choices=AGENT_WINDOWS,
        default=AGENT_WINDOWS[0],
        help="the windows a saved agent plays with (as gpushare-evaluate's)",
    )
    parser.add_argument("--max-decisions", metavar="N", help="decision cap per episode")
    parser.add_argument("--author", help="the dataset's author (Minari metadata)")
    parser.add_argument("--description", help="the dataset's description")
    parser.add_argument("--force", action="store_true", help="replace a dataset of that id")
    parser.add_argument("--quiet", action="store_true", help="no line per episode")
    return parser


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seeds is not None:
        return parse_seeds(args.seeds)
    if args.first_seed < 0:
        raise UsageError(f"--first-seed: seeds must be >= 0, got {args.first_seed}")
    episodes = positive_int(args.episodes, "--episodes") or 10
    return list(range(args.first_seed, args.first_seed + episodes))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-collect``; returns the exit status."""
    from gpushare_eval.datasets import collect_dataset, plan_collection

    try:
        args = build_parser().parse_args(argv)
        plan = plan_collection(
            args.policy,
            seeds=_seeds(args),
            preset=args.preset,
            workloads=[json_arg(args.workload, "--workload")] if args.workload else (),
            traces=[args.trace] if args.trace else (),
            cluster=json_arg(args.cluster, "--cluster") if args.cluster else None,
            num_jobs=positive_int(args.num_jobs, "--num-jobs"),
            max_decisions=positive_int(args.max_decisions, "--max-decisions"),
            window=positive_int(args.window, "--window"),
            agent_windows=args.agent_windows,
        )
    except PlanError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2

    if not args.quiet:
        for note in plan.notes:
            print(f"note: {note}", flush=True)

    def say(index: int, episode: Any) -> None:
        if not args.quiet:
            jct = episode.metrics.get("mean_jct_s")
            jct_text = "unfinished" if jct is None else f"mean JCT {jct:,.0f} s"
            print(
                f"[{index + 1}/{len(plan.runs)}] seed {plan.runs[index].seed}: "
                f"{episode.steps} decisions, {jct_text}",
                flush=True,
            )

    try:
        dataset = collect_dataset(
            args.dataset_id,
            plan,
            author=args.author,
            description=args.description,
            force=args.force,
            progress=say,
        )
    except (ImportError, FileExistsError, ValueError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    print(
        f"wrote Minari dataset {args.dataset_id!r}: {dataset.total_episodes} episodes, "
        f"{dataset.total_steps} steps ({plan.policies[0].label} on {plan.workloads[0].label})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
