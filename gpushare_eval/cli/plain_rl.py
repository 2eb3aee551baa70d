"""Do standard RL libraries with their defaults learn on ``GPUShare-v0``? Train, measure.

``--library sb3`` (default) trains ``MaskablePPO("MultiInputPolicy", gym.make("GPUShare-v0",
config=...), seed=s)`` with SB3's defaults (no project training code: no wrapper, no
extractor, no discount by time); ``--library rllib`` RLlib's ``PPOConfig()`` defaults with
RLlib's own action-masking RLModule (the env seen through ``agents.rllib.RllibMasked``,
sampled in the driver). Every ``--every`` steps (RLlib: after the first iteration past
each multiple) the model plays deterministically with the mask on the test seeds.
Prints one JSON line per evaluation and writes them, with the yardsticks
played on the same seeds (``thesis``, ``gandiva``, ``fifo_pack`` and a uniform random
masked policy), to ``--out``; ``--plot`` draws mean JCT / ``thesis`` against steps.

    python -m scripts.plain_rl --seeds 0 1 2 --steps 100000 --out runs/plain.json --plot p.png
    python -m scripts.plain_rl --env '{"reward": {"jct": 0, "delay": 1}}' --out runs/d.json
    python -m scripts.plain_rl --library rllib --steps 100000 --out runs/rllib.json

Several ``--seeds`` run one after the other. Needs the ``rl`` extra (``rllib`` for RLlib,
``plot`` for ``--plot``). Results: docs/experiments.md#plain-stable-baselines3-on-the-default-env.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_env.seeding import parse_seeds

YARDSTICKS = ("thesis", "gandiva", "fifo_pack")


class UniformMasked:
    """A uniform random choice among the valid actions (suspensions included)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[Any, Any]:
        return np.asarray(self.rng.choice(np.flatnonzero(action_masks))), state


def mean_jct(policy_for: Callable[[Any], Any], config: dict[str, Any], seeds: list[int]) -> float:
    """Mean over ``seeds`` of the episodes' mean JCT [s] of ``policy_for(env)``, played
    deterministically."""
    import gymnasium as gym

    from gpushare_env.rollout import rollout

    env = gym.make("GPUShare-v0", config=config)
    policy = policy_for(env)
    values = []
    for seed in seeds:
        episode = rollout(policy, env, seed=seed, deterministic=True)
        if not episode.terminated:
            raise RuntimeError(f"the episode of seed {seed} did not terminate")
        values.append(float(episode.metrics["mean_jct_s"]))
    env.close()
    return float(np.mean(values))


def yardsticks(config: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Mean JCT [s] of the heuristics and of the uniform random policy on ``seeds``."""
    import baselines

    out = {
        name: mean_jct(functools.partial(baselines.make, name), config, seeds)
        for name in YARDSTICKS
    }
    out["uniform_random"] = mean_jct(lambda env: UniformMasked(0), config, seeds)
    return out


class RllibGreedy:
    """SB3's ``predict`` over an RLlib module: the likeliest valid action."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def predict(
        self,
        obs: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[Any, Any]:
        import gymnasium as gym
        import torch
        from ray.rllib.core.columns import Columns

        flat = np.asarray(gym.spaces.flatten(self.space, obs), dtype=np.float32)
        mask = np.asarray(action_masks, dtype=np.float32)
        batch = {
            Columns.OBS: {
                "observations": torch.as_tensor(flat[None]),
                "action_mask": torch.as_tensor(mask[None]),
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
        return np.asarray(int(torch.argmax(logits))), state

    def bind(self, env: Any) -> RllibGreedy:
        self.space = env.observation_space
        return self


def train_rllib(
    config: dict[str, Any], seed: int, steps: int, every: int, seeds: list[int], thesis_s: float
) -> list[dict[str, float]]:
    """RLlib's PPO defaults with its masking RLModule; the curve as :func:`train`'s."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    from agents.rllib import make_rllib_env

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    register_env("GPUShare-v0-rllib", make_rllib_env)
    algo = (
        PPOConfig()
        .environment("GPUShare-v0-rllib", env_config=config)
        .env_runners(num_env_runners=0)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule))
        .debugging(seed=seed)
        .build_algo()
    )
    curve: list[dict[str, float]] = []
    start = time.perf_counter()
    done, due = 0, 0
    try:
        while True:
            if done >= due:
                greedy = RllibGreedy(algo.get_module())
                ratio = mean_jct(greedy.bind, config, seeds) / thesis_s
                point = {
                    "seed": seed,
                    "timesteps": done,
                    "jct_ratio": round(ratio, 4),
                    "wall_s": round(time.perf_counter() - start, 1),
                }
                curve.append(point)
                print(json.dumps(point), flush=True)
                due += every
            if done >= steps:
                return curve
            result = algo.train()
            done = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            due = min(due, steps)
    finally:
        algo.stop()


def train(
    config: dict[str, Any], seed: int, steps: int, every: int, seeds: list[int], thesis_s: float
) -> list[dict[str, float]]:
    """Plain MaskablePPO for ``steps``; the mean JCT / ``thesis`` every ``every`` steps."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    curve: list[dict[str, float]] = []
    start = time.perf_counter()

    def evaluate(model: Any, timesteps: int) -> None:
        ratio = mean_jct(lambda env: model, config, seeds) / thesis_s
        point = {
            "seed": seed,
            "timesteps": timesteps,
            "jct_ratio": round(ratio, 4),
            "wall_s": round(time.perf_counter() - start, 1),
        }
        curve.append(point)
        print(json.dumps(point), flush=True)

    class Every(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % every == 0:
                evaluate(self.model, self.num_timesteps)
            return True

    model = MaskablePPO("MultiInputPolicy", gym.make("GPUShare-v0", config=config), seed=seed)
    evaluate(model, 0)
    model.learn(total_timesteps=steps, callback=Every())  # whole rollouts: >= steps
    if curve[-1]["timesteps"] != model.num_timesteps:
        evaluate(model, model.num_timesteps)
    return curve


def plot(result: dict[str, Any], path: str) -> None:
    """Mean JCT / ``thesis`` against steps, one line per seed, yardsticks dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for seed in sorted({p["seed"] for p in result["curve"]}):
        points = [p for p in result["curve"] if p["seed"] == seed]
        label = {"sb3": "MaskablePPO, SB3", "rllib": "PPO, RLlib"}[result.get("library", "sb3")]
        ax.plot(
            [p["timesteps"] for p in points],
            [p["jct_ratio"] for p in points],
            marker="o",
            ms=3,
            label=f"{label} defaults, seed {seed}",
        )
    thesis_s = result["yardsticks"]["thesis"]
    styles = iter([":", "-.", (0, (1, 3)), (0, (5, 2))])
    for name, value in sorted(result["yardsticks"].items(), key=lambda item: item[1]):
        ratio = value / thesis_s
        ax.axhline(ratio, ls="--" if name == "thesis" else next(styles), color="grey",
                   lw=0.9, label=f"{name} {ratio:.3f}")  # fmt: skip
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean JCT / thesis (test seeds)")
    ax.set_title(f"GPUShare-v0, config={json.dumps(result['env'])}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("sb3", "rllib"), default="sb3")
    parser.add_argument("--env", default="{}", metavar="JSON", help="env config (default {})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps per seed")
    parser.add_argument("--every", type=int, default=10_000, help="evaluate every N steps")
    parser.add_argument(
        "--test-seeds", default="1000-1004", metavar="SEEDS", help="e.g. 1000-1004 or 1,5,9"
    )
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--out", required=True, help="JSON to write")
    parser.add_argument("--plot", default=None, metavar="PNG")
    args = parser.parse_args(argv)
    try:
        config = json.loads(args.env)
    except ValueError as error:
        parser.error(f"--env must be a JSON object: {error}")
    try:
        seeds = list(parse_seeds(args.test_seeds))
    except ValueError as error:
        parser.error(f"--test-seeds: {error}")
    if not isinstance(config, dict):
        parser.error(f"--env must be a JSON object, got {args.env!r}")
    if args.steps < 1 or args.every < 1:
        parser.error("--steps and --every must be >= 1")
    import torch

    torch.set_num_threads(args.torch_threads)
    levels = yardsticks(config, seeds)
    print(json.dumps({k: round(v / levels["thesis"], 4) for k, v in levels.items()}))
    result: dict[str, Any] = {
        "library": args.library,
        "env": config,
        "test_seeds": seeds,
        "yardsticks": levels,
        "curve": [],
    }
    learn = train if args.library == "sb3" else train_rllib
    for seed in args.seeds:
        result["curve"] += learn(config, seed, args.steps, args.every, seeds, levels["thesis"])
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1))
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
