"""Speed of RL training on ``GPUShare-v0`` (``gpushare-bench --train`` and ``--train-loop``).

:func:`run_benchmark` (``--train``) times what a user waits for: whole ``gpushare-train``
runs with their defaults, each a fresh process timed from its start to its exit (start-up,
the evaluations and the saving included), alternating with a whole process of
stable-baselines3's ``PPO`` with every default on ``CartPole-v1`` over the same number
of steps (:func:`cartpole_run`): a yardstick of what this machine gives a standard
training loop, read side by side (the ratio of each pair) rather than across machines.

:func:`train_benchmark` (``--train-loop``) times what one ``gpushare-train`` step costs
inside the training loop alone: acting (the policy's forward pass on the observations of
every env), stepping the envs, and the algorithm's updates, for a given number of envs
and way of running them, after an untimed rollout, without start-up or evaluation;
beside it, in the same process and with the same torch threads,
:func:`cartpole_benchmark` times the yardstick's loop the same way.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.logger import Logger

from agents.allocator import keep_freed_memory
from agents.envs import make_vec_env
from agents.training import VEC_ENVS, TrainConfig, build_model, env_configs, prepare_torch

__all__ = ["cartpole_benchmark", "cartpole_run", "run_benchmark", "train_benchmark"]


def train_benchmark(
    preset: str = "philly_heavy",
    algo: str = "maskable_ppo",
    extractor: str = "pointer",
    n_envs: int = 32,
    vec_env: str = "dummy",
    rollout: int = 2048,
    rollouts: int = 2,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    reference: bool = False,
) -> dict[str, Any]:
    """Train ``rollouts`` rollouts of ``rollout`` steps (after one untimed) and time them.

    Runs as ``gpushare-train`` does (its torch threads, ``--set torch_threads=N``), with
    its default update settings (``n_epochs``, ``batch_size``) and
    ``n_steps = rollout // n_envs``.

    Args:
        preset: Evaluation preset giving the cluster, workload and episode size.
        algo: ``maskable_ppo`` or ``ppo`` (on-policy: a rollout is ``n_steps * n_envs``).
        extractor: ``flat``, ``perm`` or ``pointer``.
        n_envs: Envs stepped together.
        vec_env: ``dummy``, ``subproc``, ``auto`` or ``ray`` (see ``TrainConfig.vec_env``).
        rollout: Env steps per rollout, summed over envs; a multiple of ``n_envs``.
        rollouts: Timed rollouts.
        seed: Seed of the model and the envs.
        overrides: Further ``TrainConfig`` settings by flat key (``gpushare-train``'s
            names: ``net_arch``, ``batch_size``, ``n_epochs``, ...).
        reference: Also run :func:`cartpole_benchmark` (after this one, same threads) and
            add it as ``cartpole``, with ``ratio_to_cartpole`` (this steps/s over its).

    Returns:
        ``steps, wall_s, steps_per_s, cpu_s`` and the settings; ``cpu_s`` is this
        process's CPU time (subprocess envs' time is not in it).

    Raises:
        ValueError: an off-policy ``algo``, ``n_envs`` or ``rollouts`` below 1, or
            ``rollout`` not a multiple of ``n_envs``.
    """
    if algo not in ("maskable_ppo", "ppo"):
        raise ValueError(f"train benchmark: algo must be maskable_ppo or ppo, got {algo!r}")
    if n_envs < 1 or rollouts < 1:
        raise ValueError(
            f"train benchmark: n_envs and rollouts must be >= 1, got {n_envs} and {rollouts}"
        )
    if rollout < n_envs or rollout % n_envs:
        raise ValueError(
            f"train benchmark: rollout ({rollout}) must be a multiple of n_envs ({n_envs})"
        )
    config = TrainConfig.from_preset(
        preset,
        algo=algo,
        extractor=extractor,
        n_envs=n_envs,
        vec_env=vec_env,
        n_steps=rollout // n_envs,
        seed=seed,
        progress_bar=False,
        **dict(overrides or {}),
    )
    config = TrainConfig.from_any(config, batch_size=min(config.algorithm.batch_size, rollout))
    keep_freed_memory()
    vec = make_vec_env(
        env_configs(config),
        config.envs.train_seeds,
        n_envs,
        seed,
        reward_scale=config.envs.reward_scale,
        subprocess=VEC_ENVS[vec_env],
        ray=vec_env == "ray",
    )
    # after the envs: an in-process env's constructor sets one thread (for subprocesses)
    threads = prepare_torch(config)
    try:
        model = build_model(config, vec)
        # a logger of no outputs: SB3's default would make an empty SB3-<date> folder in
        # the system's temporary directory at every learn()
        model.set_logger(Logger(folder=None, output_formats=[]))
        model.learn(rollout)  # warm-up: the first reset and update
        start, cpu_start = time.perf_counter(), time.process_time()
        model.learn(rollout * rollouts, reset_num_timesteps=False)
        wall_s = time.perf_counter() - start
        cpu_s = time.process_time() - cpu_start
    finally:
        vec.close()
    steps = rollout * rollouts
    record: dict[str, Any] = {
        "mode": "train",
        "preset": preset,
        "algo": algo,
        "extractor": extractor,
        "n_envs": n_envs,
        "vec_env": vec_env,
        "n_epochs": config.algorithm.n_epochs,
        "batch_size": config.algorithm.batch_size,
        "net_arch": list(config.network.net_arch),
        "overrides": dict(overrides or {}),
        "seed": seed,
        "steps": steps,
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(steps / wall_s, 1),
        "cpu_s": round(cpu_s, 3),
        "torch_threads": threads,
    }
    if reference:
        cartpole = cartpole_benchmark(rollouts=rollouts, seed=seed)
        record["cartpole"] = cartpole
        # four significant digits: under load the ratio can be far below 1 (0.0096)
        ratio = record["steps_per_s"] / cartpole["steps_per_s"]
        record["ratio_to_cartpole"] = float(f"{ratio:.4g}")
    return record


def cartpole_benchmark(rollouts: int = 2, seed: int = 0) -> dict[str, Any]:
    """Steps per second of SB3's ``PPO("MlpPolicy", "CartPole-v1")`` with its defaults.

    One env, rollouts of 2,048 steps, 10 epochs of minibatches of 64 (SB3's defaults);
    the first rollout is a warm-up. Runs with this process's torch threads as they are.
    """
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", seed=seed, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    rollout = model.n_steps * model.n_envs
    model.learn(rollout)
    start, cpu_start = time.perf_counter(), time.process_time()
    model.learn(rollout * rollouts, reset_num_timesteps=False)
    wall_s = time.perf_counter() - start
    steps = rollout * rollouts
    return {
        "algo": "ppo",
        "env": "CartPole-v1",
        "steps": steps,
        "wall_s": round(wall_s, 3),
        "steps_per_s": round(steps / wall_s, 1),
        "cpu_s": round(time.process_time() - cpu_start, 3),
        "torch_threads": torch.get_num_threads(),
    }


def cartpole_run(steps: int, seed: int = 0) -> None:
    """Train SB3's ``PPO("MlpPolicy", "CartPole-v1")`` with every default for ``steps``
    steps: the yardstick process of :func:`run_benchmark` (``python -m agents.bench``)."""
    from stable_baselines3 import PPO

    PPO("MlpPolicy", "CartPole-v1", seed=seed, device="cpu").learn(steps)


def _timed(command: Sequence[str]) -> float:
    """Wall seconds of ``command`` run to its exit (its output discarded).

    Raises:
        RuntimeError: it failed (with the end of what it wrote on stderr).
    """
    start = time.perf_counter()
    done = subprocess.run(list(command), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall_s = time.perf_counter() - start
    if done.returncode:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RuntimeError(
            f"benchmark: {' '.join(command)} exited with {done.returncode}: " + " / ".join(tail)
        )
    return wall_s


def run_benchmark(
    timesteps: int = 131_072,
    preset: str = "philly_heavy",
    seed: int = 0,
    repeat: int = 1,
    train_options: Sequence[str] = (),
    reference: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time whole ``gpushare-train`` runs beside whole CartPole runs of as many steps.

    Each repetition runs ``gpushare-train --preset PRESET --timesteps N --seed S
    --no-progress --out TMP [OPTIONS]`` in a fresh process (the user's command with its
    defaults: periodic evaluations included), then the yardstick process
    (:func:`cartpole_run`, ``N`` steps), and times each from start to exit.

    Args:
        timesteps: Training steps of both.
        preset: ``gpushare-train --preset``.
        seed: ``--seed`` of the training run and the yardstick's seed.
        repeat: Pairs of runs; the figures are medians (the ratio: of the pairs' ratios).
        train_options: Further ``gpushare-train`` options (e.g. ``["--eval-workers",
            "0"]``).
        reference: Also run the yardstick.
        log: Called with a line after every run (progress; ``None``: silent).

    Returns:
        ``wall_s`` and ``steps_per_s`` of the training runs (medians) with every run's,
        what each run recorded of its time in ``config.json`` (``seconds``: ``total``,
        ``rl``, ``evaluation_wait``; ``evaluations``: their count), and with
        ``reference`` the yardstick's as ``cartpole`` and ``ratio_to_cartpole``: the
        median over pairs of the yardstick's wall time over the training run's (how many
        times faster per step the training run went).

    Raises:
        ValueError: ``timesteps`` or ``repeat`` below 1.
        RuntimeError: a run failed.
    """
    if timesteps < 1 or repeat < 1:
        raise ValueError(
            f"train benchmark: timesteps and repeat must be >= 1, got {timesteps} and {repeat}"
        )
    say = log or (lambda _line: None)
    runs: list[dict[str, Any]] = []
    walls: list[float] = []
    yardstick: list[float] = []
    with tempfile.TemporaryDirectory(prefix="gpushare-bench-") as folder:
        for i in range(repeat):
            out = Path(folder) / f"run{i}"
            command = [
                sys.executable, "-m", "gpushare_eval.cli.train", "--preset", preset,
                "--timesteps", str(timesteps), "--seed", str(seed), "--no-progress",
                "--out", str(out), *train_options,
            ]  # fmt: skip
            wall_s = _timed(command)
            walls.append(wall_s)
            record = json.loads((out / "config.json").read_text())
            runs.append(
                {
                    "wall_s": round(wall_s, 2),
                    "steps_per_s": round(timesteps / wall_s, 1),
                    "seconds": {k: round(v, 2) for k, v in record["seconds"].items()},
                    "evaluations": len(record.get("evaluations", [])),
                    "torch_threads": record["torch_threads"],
                }
            )
            say(f"gpushare-train run {i + 1}/{repeat}: {wall_s:.1f} s")
            if reference:
                cartpole = [sys.executable, "-m", "agents.bench", str(timesteps), str(seed)]
                yardstick.append(_timed(cartpole))
                say(f"CartPole run {i + 1}/{repeat}: {yardstick[-1]:.1f} s")
    result: dict[str, Any] = {
        "mode": "train",
        "preset": preset,
        "timesteps": timesteps,
        "seed": seed,
        "train_options": list(train_options),
        "repeat": repeat,
        "wall_s": round(statistics.median(walls), 2),
        "steps_per_s": round(timesteps / statistics.median(walls), 1),
        "runs": runs,
    }
    if reference:
        result["cartpole"] = {
            "algo": "ppo",
            "env": "CartPole-v1",
            "steps": timesteps,
            "wall_s": round(statistics.median(yardstick), 2),
            "steps_per_s": round(timesteps / statistics.median(yardstick), 1),
            "runs_wall_s": [round(w, 2) for w in yardstick],
        }
        ratios = [c / t for c, t in zip(yardstick, walls, strict=True)]
        result["ratio_to_cartpole"] = float(f"{statistics.median(ratios):.4g}")
        result["runs_ratio_to_cartpole"] = [float(f"{r:.4g}") for r in ratios]
    return result


if __name__ == "__main__":  # the yardstick process: python -m agents.bench STEPS SEED
    cartpole_run(int(sys.argv[1]), int(sys.argv[2]))
