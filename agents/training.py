"""Train MaskablePPO (default), PPO or DQN on ``GPUShare-v0``; save the model and how to remake it.

``train(TrainConfig(...))`` builds the vectorised training envs (episodes from the
training seeds only), optionally clones a heuristic first (``bc_episodes``), learns with
TensorBoard logging of scheduling metrics and a periodic evaluation against ``thesis`` on
held-out validation seeds, and writes into ``out``:

* ``model.zip`` (the last model) and ``best_model.zip`` (best validation score);
* with a warm start, ``bc_model.zip`` (the plain clone) and ``dagger_K.zip`` (the clone
  after DAgger iteration ``K``);
* ``config.json``: the full ``TrainConfig``, the env configs, the command line, library
  versions, wall-clock times and the warm-start / evaluation summaries;
* ``tb/``: TensorBoard logs (``sched/*`` training episodes, ``eval/*`` validation).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.callbacks import HeuristicEvalCallback, ProgressBarCallback, SchedulingMetricsCallback
from agents.envs import make_vec_env
from agents.extractors import EXTRACTORS, PermutationExtractor
from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.observation import pending_features, running_features
from gpushare_env.evaluation.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEEDS,
)
from gpushare_env.sim import STRATEGIES

__all__ = [
    "ALGORITHMS",
    "VALIDATION_SEEDS",
    "TrainConfig",
    "algorithm_class",
    "build_model",
    "env_configs",
    "load_model",
    "train",
]

#: Algorithms ``train`` accepts.
ALGORITHMS: tuple[str, ...] = ("maskable_ppo", "ppo", "dqn")

#: ``--vec-env`` choices and the ``subprocess`` flag of ``make_vec_env`` they pass.
VEC_ENVS: dict[str, bool | None] = {"auto": None, "subproc": True, "dummy": False}

#: Slot-code length of ``--extractor pointer`` (what each slot's logits read of its row).
POINTER_SLOT_DIM = 32

#: Held-out seeds of the periodic evaluation (model selection): disjoint from the training
#: seeds (``PHILLY_TRAIN_SEEDS``, 0-99) and from the test seeds (1000-1009).
VALIDATION_SEEDS: tuple[int, ...] = (500, 501)


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything that defines a training run.

    Attributes:
        algo: One of ``ALGORITHMS``.
        cluster: Cluster preset (or dict) of the env.
        workloads: Workload presets; training envs alternate over them.
        num_jobs: Jobs per episode.
        pending_window: Env ``pending_window``.
        running_window: Env ``running_window``.
        env_overrides: Further ``GPUShare-v0`` config keys (e.g. ``reward`` weights).
        timesteps: Environment steps of RL training (summed over envs).
        n_envs: Parallel envs.
        vec_env: How they run: ``"subproc"`` (``SubprocVecEnv``, one process each),
            ``"dummy"`` (``DummyVecEnv``, in turn in this process: on few cores the
            policy then acts on a batch of ``n_envs`` observations at once), or
            ``"auto"`` (subprocesses when ``n_envs > 1``). The same seeds give the same
            episodes either way.
        seed: Seed of the model, the envs' seed streams and the warm start.
        out: Output folder.
        resume: A saved model to continue training from (``None``: a new model).
        extractor: ``flat`` (SB3 ``CombinedExtractor``), ``perm`` (``PermutationExtractor``)
            or ``pointer`` (``PermutationExtractor`` with 32-number slot codes and
            ``agents.policies``' per-slot action logits; PPO and MaskablePPO only).
        net_arch: Hidden layers of the policy and value MLPs (``pointer``: of the value
            MLP only; its policy is the per-slot head).
        train_seeds: Training episode seeds.
        eval_seeds: Held-out seeds of the periodic evaluation (empty: no evaluation).
        eval_every: Steps between evaluations.
        reward_scale: Factor on the rewards seen by the learner.
        reward_reference: Make the ``jct`` reward relative to this heuristic played on the
            same episode (``agents.reference``: a control variate against the variance the
            arrivals cause; the optimal policies stay the same); ``None``: plain reward.
        critic_warmup: RL steps at the start during which only the value head learns (the
            policy and the shared extractor are frozen): a resumed model whose critic was
            fitted to another reward or discount first relearns its values.
        critic_warmup_lr: Adam step size during ``critic_warmup``.
        bc_episodes: Heuristic episodes recorded for the behaviour-cloning warm start (0: none).
            With ``resume`` they are recorded only for DAgger (``dagger_iterations > 0``):
            the resumed model is cloned on them for ``bc_epochs`` (0: not at all), and
            DAgger goes on from it.
        bc_epochs: Passes of behaviour cloning.
        bc_heuristic: Heuristic cloned.
        bc_learning_rate: Adam step size of behaviour cloning.
        dagger_iterations: DAgger iterations after cloning (0: none); the clone after
            iteration ``i`` is saved as ``dagger_<i>.zip``.
        dagger_episodes: Episodes the clone plays per DAgger iteration.
        dagger_epochs: Passes over the aggregated data after each DAgger iteration.
        bc_suspend_weight: Weight of the teacher's ``suspend`` labels in the cloning and
            DAgger losses, > 0 (1: plain cross-entropy). The teacher suspends in a few
            percent of the states its clone visits, and the clone misses most of them.
        learning_rate: Step size of the RL optimiser.
        n_steps: PPO rollout length per env.
        batch_size: Minibatch size.
        n_epochs: PPO epochs per rollout.
        gamma: Discount per decision (ignored when ``time_constant_h`` is set).
        time_constant_h: SMDP discount (``agents.smdp``): a step that lets simulated time
            run by ``dt`` is discounted by ``exp(-dt / tau)`` with ``tau`` this many
            hours, and decisions at one instant are not discounted (``None``: ``gamma``
            per decision). PPO and MaskablePPO only.
        gae_lambda: PPO GAE lambda.
        clip_range: PPO clip range.
        ent_coef: PPO entropy bonus.
        target_kl: PPO early stop on KL (``None``: off).
        buffer_size: DQN replay size.
        learning_starts: DQN steps before learning.
        exploration_fraction: DQN share of training with decaying epsilon.
        exploration_final_eps: DQN final epsilon.
        deterministic_torch: ``torch.use_deterministic_algorithms(True)``.
        torch_threads: Threads of this process's torch (the policy's updates and the
            behaviour-cloning / DAgger fits). Default 1, for env subprocesses beside it;
            a run alone on the machine (``n_envs=1`` or ``vec_env="dummy"``) may give it
            every core.
        progress_bar: Show a progress bar.
        verbose: SB3 verbosity.
    """

    algo: str = "maskable_ppo"
    cluster: str | Mapping[str, Any] = "medium"
    workloads: tuple[str, ...] = ("philly", "philly_bursty")
    num_jobs: int = 300
    pending_window: int = 16
    running_window: int = 16
    env_overrides: Mapping[str, Any] = field(default_factory=dict)
    timesteps: int = 200_000
    n_envs: int = 2
    vec_env: str = "auto"
    seed: int = 0
    out: str = "runs/agent"
    resume: str | None = None
    extractor: str = "flat"
    net_arch: tuple[int, ...] = (256, 256)
    train_seeds: tuple[int, ...] = PHILLY_TRAIN_SEEDS
    eval_seeds: tuple[int, ...] = VALIDATION_SEEDS
    eval_every: int = 20_000
    reward_scale: float = 0.01
    reward_reference: str | None = None
    critic_warmup: int = 0
    critic_warmup_lr: float = 3e-4
    bc_episodes: int = 0
    bc_epochs: int = 10
    bc_heuristic: str = "thesis"
    bc_learning_rate: float = 1e-3
    dagger_iterations: int = 0
    dagger_episodes: int = 8
    dagger_epochs: int = 3
    bc_suspend_weight: float = 1.0
    learning_rate: float = 1e-4
    n_steps: int = 512
    batch_size: int = 256
    n_epochs: int = 5
    gamma: float = 0.99
    time_constant_h: float | None = None
    gae_lambda: float = 0.95
    clip_range: float = 0.1
    ent_coef: float = 0.0
    target_kl: float | None = 0.02
    buffer_size: int = 50_000
    learning_starts: int = 1_000
    exploration_fraction: float = 0.2
    exploration_final_eps: float = 0.02
    deterministic_torch: bool = True
    torch_threads: int = 1
    progress_bar: bool = True
    verbose: int = 0

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHMS:
            raise ValueError(f"algo must be one of {list(ALGORITHMS)}, got {self.algo!r}")
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extractor must be one of {list(EXTRACTORS)}, got {self.extractor!r}")
        if self.extractor == "pointer" and self.algo == "dqn":
            raise ValueError("extractor 'pointer' needs PPO or MaskablePPO, not dqn")
        if not self.workloads:
            raise ValueError("workloads: give at least one workload")
        for name in ("timesteps", "bc_episodes", "bc_epochs", "critic_warmup", "dagger_epochs"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not self.bc_suspend_weight > 0:
            raise ValueError(f"bc_suspend_weight must be > 0, got {self.bc_suspend_weight}")
        if self.n_envs < 1:
            raise ValueError(f"n_envs must be >= 1, got {self.n_envs}")
        if self.torch_threads < 1:
            raise ValueError(f"torch_threads must be >= 1, got {self.torch_threads}")
        if self.vec_env not in VEC_ENVS:
            raise ValueError(f"vec_env must be one of {list(VEC_ENVS)}, got {self.vec_env!r}")
        tau = self.time_constant_h
        if tau is not None:
            if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
                raise ValueError(f"time_constant_h must be None or a number > 0, got {tau!r}")
            if self.algo == "dqn":
                raise ValueError("time_constant_h needs PPO or MaskablePPO, not dqn")
        if set(self.eval_seeds) & set(self.train_seeds):
            raise ValueError("eval_seeds must be disjoint from train_seeds")
        for name in ("train_seeds", "eval_seeds"):
            if test := sorted(set(getattr(self, name)) & set(PHILLY_TEST_SEEDS)):
                raise ValueError(
                    f"{name} include the test seeds {test}: they are never used for "
                    "training or model selection"
                )
        import baselines

        for name in ("bc_heuristic", "reward_reference"):
            heuristic = getattr(self, name)
            if heuristic is None:
                continue
            try:  # a bad heuristic fails here, not after the env set-up
                baselines.make(heuristic)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        if self.critic_warmup and self.algo == "dqn":
            raise ValueError("critic_warmup needs PPO or MaskablePPO, not dqn")
        object.__setattr__(self, "workloads", tuple(self.workloads))
        object.__setattr__(self, "net_arch", tuple(int(n) for n in self.net_arch))
        object.__setattr__(self, "train_seeds", tuple(int(s) for s in self.train_seeds))
        object.__setattr__(self, "eval_seeds", tuple(int(s) for s in self.eval_seeds))

    @classmethod
    def from_preset(cls, preset: str, **overrides: Any) -> TrainConfig:
        """Cluster, workloads and episode size of an evaluation preset, then ``overrides``."""
        if preset not in EVALUATION_PRESETS:
            raise ValueError(f"unknown preset {preset!r}; available: {sorted(EVALUATION_PRESETS)}")
        spec = EVALUATION_PRESETS[preset]
        values: dict[str, Any] = {
            "cluster": spec.cluster,
            "workloads": spec.workloads,
            "num_jobs": spec.num_jobs,
        }
        values.update(overrides)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        data = dataclasses.asdict(self)
        data["env_overrides"] = dict(self.env_overrides)
        return data


def env_configs(config: TrainConfig) -> list[dict[str, Any]]:
    """The ``GPUShare-v0`` configs of a run, one per workload, in the flat form (so the
    overrides, nested or flat, override setting by setting, and recorded configs keep one
    form)."""
    base: dict[str, Any] = {
        "cluster": config.cluster,
        "num_jobs": config.num_jobs,
        "pending_window": config.pending_window,
        "running_window": config.running_window,
        **EnvConfig.flatten(config.env_overrides),
    }
    return [{**base, "workload": workload} for workload in config.workloads]


def algorithm_class(algo: str) -> Any:
    """The SB3 class of an ``ALGORITHMS`` name."""
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    if algo == "dqn":
        from stable_baselines3 import DQN

        return DQN
    raise ValueError(f"algo must be one of {list(ALGORITHMS)}, got {algo!r}")


def _algo_of_file(path: str | Path) -> str:
    """The algorithm of a saved model: from the ``config.json`` / ``<stem>.json`` beside it,
    else from the policy class recorded in the zip."""
    path = Path(path)
    for candidate in (path.with_suffix(".json"), path.parent / "config.json"):
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            algo = data.get("algo") or data.get("train", {}).get("algo")
            if algo in ALGORITHMS:
                return str(algo)
    import zipfile

    with zipfile.ZipFile(path) as archive:
        text = archive.read("data").decode("utf-8").lower()
    if "maskable" in text:
        return "maskable_ppo"
    return "dqn" if "dqnpolicy" in text or "qnetwork" in text else "ppo"


def load_model(path: str | Path, env: Any = None) -> Any:
    """Load a saved agent on the CPU (the algorithm is read from beside it or from the zip)."""
    torch.set_num_threads(1)
    cls = algorithm_class(_algo_of_file(path))
    return cls.load(str(path), env=env, device="cpu")


def build_model(config: TrainConfig, env: Any, tensorboard_log: str | None = None) -> Any:
    """A new SB3 model for ``config`` on ``env``."""
    policy_kwargs: dict[str, Any] = {}
    policy: Any = "MultiInputPolicy"
    if config.extractor in ("perm", "pointer"):
        observe = EnvConfig.from_any(env_configs(config)[0]).observation
        held_time, placement = observe.held_time, observe.placement
        drain, rivals = observe.drain, observe.rivals
        policy_kwargs["features_extractor_class"] = PermutationExtractor
        policy_kwargs["features_extractor_kwargs"] = {
            "row_dim": 64,
            "slot_dim": POINTER_SLOT_DIM if config.extractor == "pointer" else 4,
            "running_columns": len(running_features(held_time, placement, drain, rivals)),
        }
        if placement or drain:  # only then: the shipped models' saved kwargs stay as they are
            policy_kwargs["features_extractor_kwargs"]["pending_columns"] = len(
                pending_features(placement, drain)
            )
    if config.extractor == "pointer":
        from agents.policies import MaskableSlotPolicy, SlotPolicy

        policy = MaskableSlotPolicy if config.algo == "maskable_ppo" else SlotPolicy
    common: dict[str, Any] = {
        "learning_rate": config.learning_rate,
        **_discount_kwargs(config),
        "seed": config.seed,
        "device": "cpu",
        "verbose": config.verbose,
        "tensorboard_log": tensorboard_log,
    }
    if config.algo == "dqn":
        policy_kwargs["net_arch"] = list(config.net_arch)
        return algorithm_class("dqn")(
            "MultiInputPolicy",
            env,
            buffer_size=config.buffer_size,
            learning_starts=config.learning_starts,
            batch_size=config.batch_size,
            exploration_fraction=config.exploration_fraction,
            exploration_final_eps=config.exploration_final_eps,
            policy_kwargs=policy_kwargs,
            **common,
        )
    policy_kwargs["net_arch"] = {"pi": list(config.net_arch), "vf": list(config.net_arch)}
    return algorithm_class(config.algo)(
        policy,
        env,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        target_kl=config.target_kl,
        policy_kwargs=policy_kwargs,
        **common,
    )


def _discount_kwargs(config: TrainConfig) -> dict[str, Any]:
    """SB3 arguments of the discount: ``gamma`` per decision, or the SMDP buffer.

    The buffer class is always given for PPO, so that resuming a model saved with the
    other kind of discount switches it (``None``: SB3's default buffer).
    """
    if config.algo == "dqn":
        return {"gamma": config.gamma}
    if config.time_constant_h is None:
        return {"gamma": config.gamma, "rollout_buffer_class": None}
    from agents.smdp import smdp_buffer_class

    # gamma is then only SB3's bootstrap of truncated episodes (see agents.smdp)
    return {"gamma": 1.0, "rollout_buffer_class": smdp_buffer_class(config.algo)}


def _action_weights(config: TrainConfig) -> np.ndarray | None:
    """Label weights of the cloning losses by action (``None`` when all are 1).  # (A,)"""
    if config.bc_suspend_weight == 1.0:
        return None
    env_config = env_configs(config)[0]  # the windows, --env overrides included
    schedule = env_config["pending_window"] * len(STRATEGIES)
    running = env_config["running_window"]
    weights = np.ones(schedule + running + 1, dtype=np.float32)
    weights[schedule : schedule + running] = config.bc_suspend_weight
    return weights


def _resume_overrides(config: TrainConfig) -> dict[str, Any]:
    """Hyper-parameters of ``config`` that replace the saved ones when resuming.

    A resumed run continues the saved weights (and step count) with this run's
    optimisation settings, so a warm-started model can be fine-tuned more gently.
    """
    values: dict[str, Any] = {"learning_rate": config.learning_rate, **_discount_kwargs(config)}
    if config.algo == "dqn":
        values.update(batch_size=config.batch_size)
        return values
    values.update(
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        target_kl=config.target_kl,
    )
    return values


@contextlib.contextmanager
def _only_value_head_learns(model: Any, learning_rate: float) -> Iterator[None]:
    """Freeze every parameter of an actor-critic policy but the value head's, and train
    that at ``learning_rate``."""
    policy = model.policy
    value_head = [*policy.value_net.parameters(), *policy.mlp_extractor.value_net.parameters()]
    if not policy.share_features_extractor:
        value_head += list(policy.vf_features_extractor.parameters())
    keep = {id(p) for p in value_head}
    frozen = [p for p in policy.parameters() if p.requires_grad and id(p) not in keep]
    for p in frozen:
        p.requires_grad_(False)
    schedule = model.lr_schedule
    model.lr_schedule = lambda _progress: learning_rate
    try:
        yield
    finally:
        model.lr_schedule = schedule
        for p in frozen:
            p.requires_grad_(True)


def _versions() -> dict[str, str]:
    import gymnasium
    import sb3_contrib
    import stable_baselines3

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
    }


def train(config: TrainConfig, command: Sequence[str] | None = None) -> Path:
    """Run ``config``; the path of the saved ``model.zip`` (see the module docstring)."""
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.utils import set_random_seed

    started = time.perf_counter()
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    set_random_seed(config.seed)
    if config.deterministic_torch:
        torch.use_deterministic_algorithms(True)
    configs = env_configs(config)
    vec = make_vec_env(
        configs,
        config.train_seeds,
        config.n_envs,
        config.seed,
        reward_scale=config.reward_scale,
        subprocess=VEC_ENVS[config.vec_env],
        reward_reference=config.reward_reference,
    )
    # after the envs: an in-process env's constructor sets one thread (for subprocesses)
    torch.set_num_threads(config.torch_threads)
    record: dict[str, Any] = {
        "algo": config.algo,
        "env_config": configs[0],
        "env_configs": configs,
        "train": config.to_json(),
        "command": list(command) if command is not None else None,
        "versions": _versions(),
    }
    tb_dir = str(out / "tb")
    if config.resume:
        model = algorithm_class(config.algo).load(
            config.resume,
            env=vec,
            device="cpu",
            tensorboard_log=tb_dir,
            seed=config.seed,
            **_resume_overrides(config),
        )
        record["resumed_from"] = str(config.resume)
    else:
        model = build_model(config, vec, tensorboard_log=tb_dir)
    if config.bc_episodes > 0 and (not config.resume or config.dagger_iterations > 0):
        from agents.bc import clone, collect_demonstrations

        bc_started = time.perf_counter()
        rng = np.random.default_rng(config.seed)
        bc_seeds = [int(s) for s in rng.permutation(config.train_seeds)[: config.bc_episodes]]
        tau_s = None if config.time_constant_h is None else config.time_constant_h * 3600.0
        demos = collect_demonstrations(
            configs, bc_seeds, config.bc_heuristic, config.gamma, config.reward_scale,
            time_constant_s=tau_s,
        )  # fmt: skip

        def _log(summary: dict[str, float]) -> None:
            if config.verbose or config.progress_bar:
                print(
                    f"[bc epoch {int(summary['epoch'])}] loss={summary['policy_loss']:.4f} "
                    f"acc={summary['accuracy']:.4f} value_loss={summary['value_loss']:.4f}",
                    flush=True,
                )

        def _after_dagger_iteration(summary: dict[str, float]) -> None:
            # every iteration's clone, for its validation curve (gpushare-evaluate)
            model.save(out / f"dagger_{int(summary['iteration'])}.zip")
            if config.verbose or config.progress_bar:
                print(
                    f"[dagger {int(summary['iteration'])}] decisions={int(summary['decisions'])} "
                    f"clone_jct_h={summary['clone_mean_jct_s'] / 3600:.2f} "
                    f"acc={summary['accuracy']:.4f}",
                    flush=True,
                )

        weights = _action_weights(config)
        history = clone(
            model, demos, epochs=config.bc_epochs, batch_size=config.batch_size,
            learning_rate=config.bc_learning_rate, seed=config.seed, log=_log,
            action_weights=weights,
        )  # fmt: skip
        record["bc"] = {
            "heuristic": config.bc_heuristic,
            "seeds": bc_seeds,
            "decisions": len(demos),
            "history": history,
            "seconds": time.perf_counter() - bc_started,
        }
        if config.bc_epochs > 0:  # the plain clone, before DAgger (which saves dagger_K.zip)
            model.save(out / "bc_model.zip")
        if config.dagger_iterations > 0:
            from agents.bc import dagger

            unused = [int(s) for s in rng.permutation(config.train_seeds) if s not in bc_seeds]
            demos, dagger_history = dagger(
                model, demos, configs, unused, config.dagger_iterations,
                config.dagger_episodes, config.bc_heuristic, config.gamma,
                config.reward_scale, epochs=config.dagger_epochs,
                batch_size=config.batch_size, log=_after_dagger_iteration,
                time_constant_s=tau_s, action_weights=weights,
            )  # fmt: skip
            record["dagger"] = dagger_history
    callbacks: list[Any] = [SchedulingMetricsCallback()]
    if config.time_constant_h is not None:
        from agents.smdp import SMDPDiscountCallback

        callbacks.append(SMDPDiscountCallback(config.time_constant_h * 3600.0))
    evaluator = None
    if config.eval_seeds and config.timesteps > 0:
        evaluator = HeuristicEvalCallback(
            configs, config.eval_seeds, config.eval_every, out, verbose=int(config.progress_bar)
        )
        callbacks.append(evaluator)
    if config.progress_bar:
        callbacks.append(ProgressBarCallback(config.timesteps))
    (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    rl_started = time.perf_counter()
    warmup = min(config.critic_warmup, config.timesteps)
    if warmup > 0:
        with _only_value_head_learns(model, config.critic_warmup_lr):
            model.learn(
                total_timesteps=warmup,
                callback=CallbackList(callbacks),
                tb_log_name=config.algo,
                reset_num_timesteps=not config.resume,
            )
    if config.timesteps > warmup:
        model.learn(
            total_timesteps=config.timesteps - warmup,
            callback=CallbackList(callbacks),
            tb_log_name=config.algo,
            reset_num_timesteps=not config.resume and warmup == 0,
        )
    vec.close()
    path = out / "model.zip"
    model.save(path)
    record["seconds"] = {
        "total": time.perf_counter() - started,
        "rl": time.perf_counter() - rl_started,
    }
    record["timesteps_done"] = int(model.num_timesteps)
    if evaluator is not None:
        record["evaluations"] = evaluator.history
    (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    return path


def _command_line() -> list[str]:
    return [Path(sys.argv[0]).name, *sys.argv[1:]]
