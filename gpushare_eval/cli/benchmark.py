"""``gpushare-bench``: speed of the headless simulator (with ``--env``, of the env; with
``--fork``, of a fork beside an env step; with ``--train``, of RL training; with
``--harness`` and ``--vec-envs``, of the evaluation harness and the training envs on the
local pool and on Ray).

Headless: runs a Philly-style workload to completion with a baseline policy and prints
one JSON line per job count with ``jobs, events, wall_s, jobs_per_s, events_per_s,
peak_rss_mb`` (other tools parse these keys). Several ``--jobs`` values run one after the
other, each in a fresh process so that ``peak_rss_mb`` is that run's own. The run's
simulator settings, jobs and noise are the env config's (``EnvConfig.run_args``, as a
``gpushare-evaluate --headless`` run takes them), except two, the benchmark's own and
printed in each line (``windows``, ``caps``): every job is visible (unbounded windows,
not the env's 16) and no decision or time cap applies, so the figures measure the
simulator on the whole queue, as recorded in docs/benchmarks.md.

    gpushare-bench --jobs 1000 10000 100000 --cluster philly --policy fifo_pack --seed 0
    gpushare-bench --env --cluster medium --jobs 500 --steps 200000 --seed 0
    gpushare-bench --env --cluster medium --jobs 500 --steps 50000 --seed 0 --repeat 5
    gpushare-bench --env --cluster medium --jobs 500 --steps 50000 --observe placement rivals
    gpushare-bench --fork --cluster philly --jobs 500 --steps 50000 --seed 0
    gpushare-bench --train                     # a default gpushare-train run, and the yardstick
    gpushare-bench --train --timesteps 65536 --repeat 3 --train-options "--eval-workers 0"
    gpushare-bench --train-loop --n-envs 8 --set n_steps=256 --set torch_threads=1

``--env`` steps the env with a random masked policy and prints one JSON line with
``steps, episodes, wall_s, steps_per_s`` and ``steps_per_cpu_s``; ``--observe`` turns on
optional observation columns (``held_time``, ``placement``, ``drain``, ``rivals``: the
env's ``observation`` settings).

``--fork`` plays the same episodes as ``--env`` and, at ``3 x --forks`` states spread
through them, forks once each in turn: ``env.unwrapped.fork()``, ``Simulator.fork()``,
``Simulator.fork(belief=True)`` (``gpushare_env.envs.bench.fork_benchmark``). Every fork
and every env step is timed alone in the same process; it prints one JSON line with the
medians ``fork_us, sim_fork_us, belief_fork_us, step_us`` and ``fork_in_steps`` (a fork
in median env steps; the issue's bound is 10), the same ratio of the other two forks,
and ``step_mean_us`` with ``fork_in_mean_steps`` (in mean steps, ``--env``'s
``1 / steps_per_s``). ``--repeat R``: the run of median ``fork_in_steps``, with every
run's ratios.

``--train`` (``agents.bench``; needs the ``rl`` extra) times what a user waits for: a whole
``gpushare-train --preset PRESET --timesteps N`` run with its defaults (131,072 steps by
default; start-up, periodic evaluations and saving included), a fresh process timed to its
exit, then a whole process of SB3's PPO with its defaults on ``CartPole-v1`` over the same
``N`` steps; ``--repeat R`` alternates R pairs. It prints one JSON line: ``wall_s`` and
``steps_per_s`` (medians), every run's figures, ``cartpole`` and ``ratio_to_cartpole``
(the median of the pairs' CartPole wall time over gpushare-train's; ``--no-reference``
skips the yardstick).

``--train-loop`` times the training loop alone (rollouts and updates after an untimed
one, no start-up or evaluation) and prints ``steps, wall_s, steps_per_s`` of MaskablePPO
(or PPO) as ``gpushare-train`` runs it, and, measured after it in the same process,
``cartpole``: the yardstick's loop timed the same way, with ``ratio_to_cartpole``.

``--harness`` and ``--vec-envs`` (:mod:`gpushare_eval.cli.bench_distributed`, docs/distributed.md)
need the ``ray`` extra:

    gpushare-bench --harness --reps 3 [--multinode]   # 200 runs: local pool against Ray
    gpushare-bench --vec-envs --reps 3                # DummyVecEnv, SubprocVecEnv, RayVecEnv
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shlex
import subprocess
import sys
import time
from typing import Any

from gpushare_env.envs.config import ObservationConfig
from gpushare_env.sim.engine import Windows
from gpushare_env.sim.interference import INTERFERENCE_MODELS

#: The windows of a headless benchmark run: unbounded, every waiting and running job
#: visible (the env's default is 16 each), with no decision or time cap; each printed
#: line says so (``"windows": "unbounded", "caps": "none"``).
BENCH_WINDOWS = Windows()


def headless_benchmark(
    num_jobs: int,
    cluster_name: str,
    policy_name: str,
    seed: int,
    load: float,
    interference: str = "analytic",
) -> dict[str, float | int | str]:
    """Run one headless simulation and return its speed figures.

    Episode ``seed`` is set up as a ``gpushare-evaluate --headless`` run sets it up
    (:func:`gpushare_eval.runs.prepare_headless`: the jobs and noise of ``GPUShare-v0``'s
    ``reset(seed=seed)``, the simulator settings of ``EnvConfig.run_args``, the policy
    refused where the env would refuse it): Philly-style jobs at ``load`` of the
    cluster's capacity in V100-equivalents. Then it runs with the benchmark's own windows
    and caps, :data:`BENCH_WINDOWS` and none, which the figures name.
    """
    from gpushare_env.runner import run_headless
    from gpushare_env.seeding import policy_seed
    from gpushare_env.sim import make_cluster
    from gpushare_eval.runs import prepare_headless

    # the load is relative to the cluster's capacity in V100-equivalents
    capacity = max(1, round(float(make_cluster(cluster_name).gpu_speed.sum())))
    workload = {"preset": "philly", "load": load, "num_cluster_gpus": capacity}
    config = {
        "cluster": cluster_name,
        "workload": workload,
        "num_jobs": num_jobs,
        "simulator": {"interference": interference},
    }
    start = time.perf_counter()
    episode = prepare_headless(config, seed)
    generate_s = time.perf_counter() - start
    policy = episode.make_policy(policy_name, seed=policy_seed(seed))
    args = episode.args
    result = run_headless(
        episode.jobs,
        episode.cluster,
        policy,
        args.sim_config,
        rng=episode.noise_rng,
        windows=BENCH_WINDOWS,  # every job visible: the benchmark's own, named below
        auto_advance=args.auto_advance,
        max_decisions=None,  # no decision cap, no time cap: likewise
        max_time_s=None,
    )
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "mode": "headless",
        "cluster": cluster_name,
        "policy": policy_name,
        "interference": interference,
        "windows": "unbounded",
        "caps": "none",
        "seed": seed,
        "jobs": len(episode.jobs),
        "events": result.events,
        "decisions": result.decisions,
        "generate_s": round(generate_s, 3),
        "wall_s": round(result.wall_s, 3),
        "jobs_per_s": round(len(episode.jobs) / result.wall_s, 1),
        "events_per_s": round(result.events / result.wall_s, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "mean_jct_h": round(result.metrics["mean_jct_s"] / 3600, 3),
        "gpu_util": round(result.metrics["gpu_util"], 4),
    }


def build_parser() -> argparse.ArgumentParser:
    """Command-line arguments."""
    parser = argparse.ArgumentParser(prog="gpushare-bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000], help="job counts")
    parser.add_argument("--cluster", default="philly", help="cluster preset (default philly)")
    parser.add_argument(
        "--policy",
        default="fifo_pack",
        help="baseline policy (headless: unbounded windows, no decision or time cap, unlike "
        "gpushare-evaluate --headless; each line says so)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", type=float, default=0.8, help="offered load (headless)")
    parser.add_argument(
        "--interference",
        choices=INTERFERENCE_MODELS,
        default="analytic",
        help="sharing model (headless, --env and --fork; the simulator.interference setting)",
    )
    parser.add_argument("--env", action="store_true", help="benchmark env steps instead")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="time env, simulator and belief forks beside env steps instead",
    )
    parser.add_argument(
        "--forks", type=int, default=200, help="forks of each kind, spread through --steps (--fork)"
    )
    parser.add_argument("--steps", type=int, default=100_000, help="env steps (--env, --fork)")
    parser.add_argument(
        "--observe",
        nargs="+",
        default=[],
        metavar="NAME",
        help="observation options to turn on (--env, --fork): "
        f"{', '.join(ObservationConfig.keys())} (each sets the env's observation.<name>)",
    )
    train = parser.add_argument_group("--train, --train-loop: RL training steps per second")
    train.add_argument(
        "--train",
        action="store_true",
        help="time whole gpushare-train runs (and the CartPole yardstick) instead",
    )
    train.add_argument(
        "--train-loop",
        action="store_true",
        help="time gpushare-train's training loop alone, in this process, instead",
    )
    train.add_argument("--timesteps", type=int, default=131_072, help="steps of each run (--train)")
    train.add_argument(
        "--train-options",
        default="",
        metavar="OPTIONS",
        help='further gpushare-train options, one string (--train; e.g. "--eval-workers 0")',
    )
    train.add_argument("--preset", default="philly_heavy", help="evaluation preset (--train)")
    train.add_argument("--algo", default="maskable_ppo", choices=("maskable_ppo", "ppo"))
    train.add_argument("--extractor", default="pointer", choices=("flat", "perm", "pointer"))
    train.add_argument("--n-envs", type=int, default=32, help="envs stepped together")
    train.add_argument("--vec-env", default="dummy", choices=("auto", "subproc", "dummy", "ray"))
    train.add_argument("--rollout", type=int, default=2048, help="steps per rollout, all envs")
    train.add_argument("--rollouts", type=int, default=2, help="timed rollouts")
    train.add_argument(
        "--no-reference",
        dest="reference",
        action="store_false",
        help="skip the yardstick run after it (SB3's PPO with its defaults on CartPole-v1, "
        "same process and threads; the record's 'cartpole' and 'ratio_to_cartpole')",
    )
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a further gpushare-train setting by its flat key, VALUE as JSON "
        "(e.g. --set net_arch=[64,64] --set batch_size=512); repeatable",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="env runs (--env, --fork), or pairs of runs (--train); the line reports the "
        "medians, plus every run's figures",
    )
    ray = parser.add_argument_group("--harness, --vec-envs: local pool against Ray")
    ray.add_argument(
        "--harness",
        action="store_true",
        help="time one 200-run evaluation serially, on the local pool and on Ray",
    )
    ray.add_argument("--multinode", action="store_true", help="also on two Ray nodes (--harness)")
    ray.add_argument("--multinode-only", action="store_true", help="only on two Ray nodes")
    ray.add_argument(
        "--vec-envs",
        action="store_true",
        help="env steps per second of the training VecEnvs (dummy, subproc, ray)",
    )
    ray.add_argument("--reps", type=int, default=3, help="repetitions (--harness, --vec-envs)")
    ray.add_argument("--vec-steps", type=int, default=2000, help="steps of all envs (--vec-envs)")
    return parser


def parse_settings(items: list[str]) -> dict[str, Any]:
    """``["KEY=VALUE", ...]`` as a dict, each VALUE read as JSON (else as a string).

    Raises:
        ValueError: an item without ``=``.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def median_env_record(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of median ``steps_per_cpu_s`` among repeated env runs, with all speeds.

    Each run is the same deterministic episode sequence, so only the timing differs;
    the CPU-time rate is the one other processes on a shared machine disturb least.
    """
    ordered = sorted(records, key=lambda r: r["steps_per_cpu_s"])
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["repeats"] = len(records)
    median["runs_steps_per_s"] = [r["steps_per_s"] for r in records]
    median["runs_steps_per_cpu_s"] = [r["steps_per_cpu_s"] for r in records]
    return median


def median_fork_record(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of median ``fork_in_steps`` among repeated fork runs, with every run's
    ratios (each run plays the same episodes; only the timing differs)."""
    ordered = sorted(records, key=lambda r: r["fork_in_steps"])
    median = dict(ordered[(len(ordered) - 1) // 2])
    median["repeats"] = len(records)
    for key in ("fork_in_steps", "sim_fork_in_steps", "belief_fork_in_steps", "step_us"):
        median[f"runs_{key}"] = [r[key] for r in records]
    return median


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Print a usage error as argparse does (usage line, ``prog: error: message``) and
    return its exit status, 2 (``main`` returns it; argparse's own errors exit with it)."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, before anything runs (``None``: nothing).

    Every value another module would refuse later (a cluster, a policy, a load) is tried
    here, so a bad option is a usage error, never a traceback from inside a run.
    """
    from gpushare_env.sim import ClusterConfig
    from gpushare_env.sim.limits import MAX_JOBS

    if any(not 1 <= n <= MAX_JOBS for n in args.jobs):
        return f"--jobs must be >= 1 and <= {MAX_JOBS:,}, got {args.jobs}"
    if args.seed < 0:
        return f"--seed must be >= 0, got {args.seed}"
    if args.steps < 1 or args.repeat < 1:
        return f"--steps and --repeat must be >= 1, got {args.steps} and {args.repeat}"
    if not (math.isfinite(args.load) and args.load > 0):
        return f"--load must be a finite number > 0, got {args.load}"
    if args.train:
        if args.timesteps < 1:
            return f"--timesteps must be >= 1, got {args.timesteps}"
        return None
    if args.train_loop:
        if args.n_envs < 1 or args.rollout < 1 or args.rollouts < 1:
            return (
                f"--n-envs, --rollout and --rollouts must be >= 1, got {args.n_envs}, "
                f"{args.rollout} and {args.rollouts}"
            )
        return None
    try:
        ClusterConfig.from_any(args.cluster)
    except (TypeError, ValueError) as error:
        return f"--cluster: {str(error).removeprefix('cluster: ')}"
    if args.fork and not 1 <= 3 * args.forks <= args.steps:
        return f"--forks must be >= 1 and at most a third of --steps, got {args.forks}"
    if args.env or args.fork:
        from gpushare_env.envs.bench import OBSERVE_OPTIONS

        unknown = sorted(set(args.observe) - set(OBSERVE_OPTIONS))
        if unknown:
            return f"--observe: unknown option(s) {unknown}; allowed: {list(OBSERVE_OPTIONS)}"
        return None
    import baselines

    try:
        baselines.make(args.policy)
    except (TypeError, ValueError) as error:
        return f"--policy: {error}"
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``gpushare-bench``; returns the exit status (2: a bad option)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = check_args(args)
    if problem is not None:
        return usage_error(parser, problem)
    if args.harness or args.multinode_only or args.vec_envs:
        if args.reps < 1 or args.vec_steps < 1:
            return usage_error(parser, "--reps and --vec-steps must be >= 1")
        from gpushare_eval.cli import bench_distributed

        if args.vec_envs:
            bench_distributed.vec_env_bench(args.reps, args.vec_steps)
        else:
            bench_distributed.harness_bench(args.reps, args.multinode, args.multinode_only)
        return 0
    if args.train:
        try:
            from agents.bench import run_benchmark
        except ImportError as exc:
            return usage_error(parser, f"--train needs the rl extra ({exc})")
        try:
            record = run_benchmark(
                args.timesteps, args.preset, args.seed, args.repeat,
                train_options=shlex.split(args.train_options), reference=args.reference,
                log=lambda line: print(line, file=sys.stderr, flush=True),
            )  # fmt: skip
        except RuntimeError as exc:  # gpushare-train refused its options, or failed
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
        print(json.dumps(record), flush=True)
        return 0
    if args.train_loop:
        try:
            from agents.bench import train_benchmark
        except ImportError as exc:
            return usage_error(parser, f"--train-loop needs the rl extra ({exc})")
        try:
            record = train_benchmark(
                args.preset, args.algo, args.extractor, args.n_envs, args.vec_env,
                args.rollout, args.rollouts, args.seed, overrides=parse_settings(args.set),
                reference=args.reference,
            )  # fmt: skip
        except (ValueError, TypeError) as exc:  # a bad --preset or --set, before training
            return usage_error(parser, str(exc))
        print(json.dumps(record), flush=True)
        return 0
    if args.fork:
        from gpushare_env.envs.bench import fork_benchmark

        for n in args.jobs:
            runs = [
                fork_benchmark(
                    args.cluster, n, args.steps, args.seed, forks=args.forks,
                    observe=args.observe, interference=args.interference,
                )
                for _ in range(args.repeat)
            ]  # fmt: skip
            record = runs[0] if args.repeat == 1 else median_fork_record(runs)
            print(json.dumps(record), flush=True)
        return 0
    if args.env:
        from gpushare_env.envs.bench import env_benchmark

        for n in args.jobs:
            runs = [
                env_benchmark(
                    args.cluster,
                    n,
                    args.steps,
                    args.seed,
                    observe=args.observe,
                    interference=args.interference,
                )
                for _ in range(args.repeat)
            ]
            record = runs[0] if args.repeat == 1 else median_env_record(runs)
            print(json.dumps(record), flush=True)
        return 0
    if len(args.jobs) > 1:
        # one process per size so each peak RSS is its own
        for n in args.jobs:
            cmd = [sys.executable, "-m", "gpushare_eval.cli.benchmark", "--jobs", str(n)]
            cmd += ["--cluster", args.cluster, "--policy", args.policy]
            cmd += ["--seed", str(args.seed), "--load", str(args.load)]
            cmd += ["--interference", args.interference]
            subprocess.run(cmd, check=True)
        return 0
    record = headless_benchmark(
        args.jobs[0], args.cluster, args.policy, args.seed, args.load, args.interference
    )
    print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
