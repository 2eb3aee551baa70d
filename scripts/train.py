"""``gpushare-train``: train a learned scheduler on ``GPUShare-v0`` and save it with its recipe.

Examples::

    # the shipped agent's recipe: thesis warm start + MaskablePPO on Philly-style medium
    gpushare-train --preset philly --bc-warmstart 30 --timesteps 200000 --n-envs 2 \\
        --seed 0 --out runs/mppo
    gpushare-train --algo dqn --cluster tiny --workload thesis --num-jobs 10 \\
        --timesteps 2000 --out runs/dqn-tiny
    gpushare-train --resume runs/mppo/model.zip --timesteps 100000 --out runs/mppo2

The output folder holds ``model.zip``, ``best_model.zip`` (best validation score
against ``thesis``), with ``--bc-warmstart`` ``bc_model.zip`` (the plain clone) and
``dagger_K.zip`` (after DAgger iteration ``K``), ``config.json`` (everything needed to
reproduce the run) and ``tb/`` (TensorBoard: ``tensorboard --logdir runs``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROG = "gpushare-train"


def _seeds(text: str) -> tuple[int, ...]:
    """Parse ``0-99``, ``1,2,5`` or a mix."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = (int(x) for x in part.split("-", 1))
            seeds.extend(range(low, high + 1))
        else:
            seeds.append(int(part))
    return tuple(seeds)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train MaskablePPO (default), PPO or DQN on GPUShare-v0.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--algo", default="maskable_ppo", choices=["maskable_ppo", "ppo", "dqn"])
    parser.add_argument(
        "--preset",
        default="philly",
        help="evaluation preset giving cluster, workloads and jobs per episode",
    )
    parser.add_argument("--cluster", help="cluster preset (overrides the preset's)")
    parser.add_argument(
        "--workload", action="append", help="workload preset; repeat to alternate over envs"
    )
    parser.add_argument("--num-jobs", type=int, help="jobs per episode")
    parser.add_argument("--pending-window", type=int, default=16)
    parser.add_argument("--running-window", type=int, default=16)
    parser.add_argument("--timesteps", type=int, default=200_000, help="RL environment steps")
    parser.add_argument("--n-envs", type=int, default=2, help="parallel envs")
    parser.add_argument(
        "--vec-env",
        choices=("auto", "subproc", "dummy"),
        default="auto",
        help="subproc: one process per env; dummy: all in this process, the policy acting on "
        "a batch (faster on few cores); auto: subproc when --n-envs > 1",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/agent", help="output folder")
    parser.add_argument(
        "--resume",
        help="continue training a saved model.zip (with this run's optimisation settings)",
    )
    parser.add_argument(
        "--extractor",
        default="flat",
        choices=["flat", "perm", "pointer"],
        help="flat: SB3's CombinedExtractor; perm: shared per-row encoders, pooled; pointer: "
        "perm with per-slot action logits (agents.policies; PPO / MaskablePPO)",
    )
    parser.add_argument(
        "--bc-warmstart",
        type=int,
        default=0,
        metavar="N",
        help="clone the --bc-teacher heuristic on N training episodes first (with --resume "
        "and --dagger: record them for DAgger, which goes on from the resumed model; "
        "--bc-epochs 0 does not clone it again)",
    )
    parser.add_argument("--bc-epochs", type=int, default=10)
    parser.add_argument("--bc-lr", type=float, default=1e-3, help="behaviour-cloning step size")
    parser.add_argument(
        "--bc-teacher",
        default="thesis",
        help="heuristic cloned by --bc-warmstart / labelling DAgger: a baselines.available() "
        "or baselines.variants() name, optionally with parameters "
        "(thesis:critical_path_factor=inf, gandiva_srpt:max_load=1.25)",
    )
    parser.add_argument(
        "--dagger", type=int, default=0, metavar="K", help="DAgger iterations after cloning"
    )
    parser.add_argument(
        "--dagger-episodes", type=int, default=8, help="episodes per DAgger iteration"
    )
    parser.add_argument(
        "--dagger-epochs", type=int, default=3,
        help="passes over the aggregated demonstrations after each DAgger iteration",
    )  # fmt: skip
    parser.add_argument(
        "--bc-suspend-weight", type=float, default=1.0, metavar="W",
        help="weight of the teacher's suspend labels in the cloning and DAgger losses",
    )  # fmt: skip
    parser.add_argument("--train-seeds", type=_seeds, help="training seeds, e.g. 0-99")
    parser.add_argument("--eval-seeds", type=_seeds, help="held-out validation seeds")
    parser.add_argument("--eval-every", type=int, default=20_000)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--n-steps", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--n-epochs", type=int, default=5)
    parser.add_argument("--clip-range", type=float, default=0.1)
    parser.add_argument("--target-kl", type=float, default=0.02)
    parser.add_argument("--gamma", type=float, default=0.99, help="discount per decision")
    parser.add_argument(
        "--time-constant-h",
        type=float,
        help="discount by simulated time instead (SMDP): a step that lets time run by dt "
        "counts exp(-dt / tau), tau in hours",
    )
    parser.add_argument("--ent-coef", type=float, default=0.0)
    parser.add_argument("--reward-scale", type=float, default=0.01)
    parser.add_argument(
        "--reward-reference",
        metavar="HEURISTIC",
        help="make the jct reward relative to this heuristic on the same episode "
        "(a control variate against the arrivals' variance; agents.reference)",
    )
    parser.add_argument(
        "--critic-warmup",
        type=int,
        default=0,
        metavar="STEPS",
        help="first RL steps train only the value head (after --resume with a new reward)",
    )
    parser.add_argument("--critic-warmup-lr", type=float, default=3e-4)
    parser.add_argument(
        "--reward",
        type=json.loads,
        help='reward weights as JSON, e.g. \'{"jct": 1, "makespan": 0.1}\'',
    )
    parser.add_argument(
        "--max-suspends-per-job",
        type=int,
        help="env key max_suspends_per_job of the agent's envs (heuristics run without it)",
    )
    parser.add_argument(
        "--env",
        type=json.loads,
        help='further GPUShare-v0 config keys as JSON, e.g. \'{"duration_info": "sampled"}\'',
    )
    parser.add_argument(
        "--torch-threads", type=int, default=1,
        help="torch threads of the training process (its updates and cloning fits); more "
        "than 1 only when it has cores to itself (--n-envs 1 or --vec-env dummy)",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def config_from_args(args: argparse.Namespace) -> Any:
    """The ``TrainConfig`` of parsed arguments."""
    from agents.training import TrainConfig

    overrides: dict[str, Any] = {
        "algo": args.algo,
        "pending_window": args.pending_window,
        "running_window": args.running_window,
        "timesteps": args.timesteps,
        "n_envs": args.n_envs,
        "vec_env": args.vec_env,
        "seed": args.seed,
        "out": args.out,
        "resume": args.resume,
        "extractor": args.extractor,
        "bc_episodes": args.bc_warmstart,
        "bc_epochs": args.bc_epochs,
        "bc_heuristic": args.bc_teacher,
        "bc_learning_rate": args.bc_lr,
        "dagger_iterations": args.dagger,
        "dagger_episodes": args.dagger_episodes,
        "dagger_epochs": args.dagger_epochs,
        "bc_suspend_weight": args.bc_suspend_weight,
        "eval_every": args.eval_every,
        "learning_rate": args.learning_rate,
        "n_steps": args.n_steps,
        "batch_size": args.batch_size,
        "n_epochs": args.n_epochs,
        "clip_range": args.clip_range,
        "target_kl": args.target_kl,
        "gamma": args.gamma,
        "time_constant_h": args.time_constant_h,
        "ent_coef": args.ent_coef,
        "reward_scale": args.reward_scale,
        "reward_reference": args.reward_reference,
        "critic_warmup": args.critic_warmup,
        "critic_warmup_lr": args.critic_warmup_lr,
        "progress_bar": not args.no_progress,
        "torch_threads": args.torch_threads,
    }
    if args.cluster:
        overrides["cluster"] = args.cluster
    if args.workload:
        overrides["workloads"] = tuple(args.workload)
    if args.num_jobs is not None:
        overrides["num_jobs"] = args.num_jobs
    if args.train_seeds is not None:
        overrides["train_seeds"] = args.train_seeds
    if args.eval_seeds is not None:
        overrides["eval_seeds"] = args.eval_seeds
    env_overrides: dict[str, Any] = dict(args.env or {})
    if args.reward is not None:
        env_overrides["reward"] = args.reward
    if args.max_suspends_per_job is not None:
        env_overrides["max_suspends_per_job"] = args.max_suspends_per_job
    if env_overrides:
        overrides["env_overrides"] = env_overrides
    return TrainConfig.from_preset(args.preset, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-train``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    from agents.training import train

    command = [PROG, *(sys.argv[1:] if argv is None else list(argv))]
    path = train(config, command=command)
    print(f"saved {path} (recipe in {Path(path).parent / 'config.json'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
