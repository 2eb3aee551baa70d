"""Time per decision of a saved agent against a planner, on the same states.

``python -m gpushare_eval.decision_speed MODEL [--teacher lookahead] (--workload NAME --cluster
NAME | --trace PATH [--load 0.9]) [--seed 1000] [--decisions 2000]``

The agent plays the episode (as it would through the env, with its recorded windows and
observation options); at every state both the agent (``predict`` on the observation,
masked) and the teacher (``predict``, which reads the env's view) choose, and each call
is timed on its own. The env's steps are not timed: they cost both the same. A planner's
cost is bursty (it plans only some decisions), so the mean over the episode, what a run
waits for, is the figure to compare; medians are reported beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["decision_speed", "main"]


def decision_speed(
    model: str | Path,
    teacher: str,
    env_config: Mapping[str, Any],
    seed: int,
    decisions: int | None = None,
) -> dict[str, Any]:
    """Seconds per decision of the agent saved at ``model`` and of ``teacher`` on the
    states the agent's episode visits (the first ``decisions`` of them; ``None``: all).

    Returns:
        ``{"decisions", "agent_mean_ms", "agent_median_ms", "teacher_mean_ms",
        "teacher_median_ms", "speedup_mean", "speedup_median"}``.
    """
    import baselines
    from agents.envs import make_env
    from agents.inference import for_play
    from agents.training import load_model
    from gpushare_env.rollout import predict_action
    from gpushare_env.seeding import policy_seed
    from gpushare_eval.plan import agent_env_overrides

    env = make_env({**dict(env_config), **agent_env_overrides(Path(model))})
    agent = for_play(load_model(model), env)
    planner = baselines.make(teacher, env, seed=policy_seed(seed))
    observation, _ = env.reset(seed=seed)
    unwrapped: Any = env.unwrapped
    agent_s: list[float] = []
    teacher_s: list[float] = []
    done = False
    while not done and (decisions is None or len(agent_s) < decisions):
        mask = unwrapped.action_masks()
        started = time.perf_counter()
        action = predict_action(agent, observation, mask)
        between = time.perf_counter()
        planner.predict(observation, deterministic=True)
        agent_s.append(between - started)
        teacher_s.append(time.perf_counter() - between)
        observation, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    env.close()
    agent_mean, teacher_mean = statistics.fmean(agent_s), statistics.fmean(teacher_s)
    agent_median, teacher_median = statistics.median(agent_s), statistics.median(teacher_s)
    return {
        "decisions": len(agent_s),
        "agent_mean_ms": 1e3 * agent_mean,
        "agent_median_ms": 1e3 * agent_median,
        "teacher_mean_ms": 1e3 * teacher_mean,
        "teacher_median_ms": 1e3 * teacher_median,
        "speedup_mean": teacher_mean / agent_mean,
        "speedup_median": teacher_median / agent_median,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpushare_eval.decision_speed", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("model", help="a saved agent (.zip)")
    parser.add_argument("--teacher", default="lookahead", help="the planner (default lookahead)")
    parser.add_argument("--workload", default=None, help="a workload preset (with --cluster)")
    parser.add_argument("--cluster", default="medium", help="cluster preset (default medium)")
    parser.add_argument("--trace", default=None, help="a trace (.csv / .json) played whole")
    parser.add_argument(
        "--load", type=float, default=None,
        help="with --trace: size the cluster for this offered load (the philly_vc rule)",
    )  # fmt: skip
    parser.add_argument("--num-jobs", type=int, default=None, help="jobs (default: all)")
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--decisions", type=int, default=None, help="stop after N decisions")
    args = parser.parse_args(argv)
    if (args.workload is None) == (args.trace is None):
        parser.error("give one of --workload and --trace")
    if args.load is not None and args.trace is None:
        parser.error("--load sizes a trace's cluster: give --trace")
    config: dict[str, Any] = {"cluster": args.cluster}
    if args.trace is not None:
        from gpushare_env.workloads import WorkloadConfig, sized_cluster
        from gpushare_env.workloads.trace_cut import read_trace

        config["workload"] = {"path": args.trace}
        if args.load is not None:
            whole = read_trace(WorkloadConfig(kind="trace", path=args.trace))
            config["cluster"] = sized_cluster(whole.jobs, args.load)
    else:
        config["workload"] = args.workload
    if args.num_jobs is not None:
        config["num_jobs"] = args.num_jobs
    try:
        result = decision_speed(args.model, args.teacher, config, args.seed, args.decisions)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
