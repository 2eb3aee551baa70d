"""Train MaskablePPO (default), PPO or DQN on ``GPUShare-v0``; save the model and how to remake it.

``train(TrainConfig.from_any(...))`` (the settings in groups, see ``TrainConfig``) builds the
vectorised training envs (episodes from the training seeds only), optionally clones a
heuristic first (``imitation.bc_episodes``), learns with
TensorBoard logging of scheduling metrics and a periodic evaluation against ``thesis`` on
held-out validation seeds, and writes into ``out``:

* ``model.zip`` (the last model) and ``best_model.zip`` (best validation score);
* with a warm start, ``bc_model.zip`` (the plain clone) and ``dagger_K.zip`` (the clone
  after DAgger iteration ``K``), and ``labels/`` (:func:`labels_dir`): each round's
  teacher labels, which a run restarted with the same settings reads back;
* ``config.json``: the full ``TrainConfig``, the env configs, the command line, library
  versions, wall-clock times and the warm-start / evaluation summaries;
* ``tb/``: TensorBoard logs (``sched/*`` training episodes, ``eval/*`` validation).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.allocator import keep_freed_memory
from agents.callbacks import HeuristicEvalCallback, ProgressBarCallback, SchedulingMetricsCallback
from agents.envs import make_vec_env
from agents.extractors import PermutationExtractor
from agents.saved import algorithm_of

# the configuration of a run, re-exported: ``from agents.training import TrainConfig``
from agents.train_config import (
    ALGORITHMS,
    DQN_DEFAULTS,  # noqa: F401 (re-exported)
    FLAT_KEYS,
    GROUPS,
    MAX_SEED,  # noqa: F401 (re-exported)
    VALIDATION_SEEDS,
    VEC_ENVS,
    AlgorithmConfig,
    EnvsConfig,
    EvaluationConfig,
    ImitationConfig,
    NetworkConfig,
    RunConfig,
    TrainConfig,
    env_configs,
    teachers,
    validation_configs,
)
from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.observation import pending_features, running_features
from gpushare_env.sim import STRATEGIES

__all__ = [
    "ALGORITHMS",
    "FLAT_KEYS",
    "GROUPS",
    "VALIDATION_SEEDS",
    "AlgorithmConfig",
    "EnvsConfig",
    "EvaluationConfig",
    "ImitationConfig",
    "NetworkConfig",
    "RunConfig",
    "TrainConfig",
    "algorithm_class",
    "build_model",
    "env_configs",
    "labels_dir",
    "load_model",
    "train",
]


#: Slot-code length of ``--extractor pointer`` (what each slot's logits read of its row).
POINTER_SLOT_DIM = 32


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


def load_model(path: str | Path, env: Any = None) -> Any:
    """Load a saved agent on the CPU with the algorithm that saved it
    (:func:`agents.saved.algorithm_of` reads it from the file)."""
    torch.set_num_threads(1)
    cls = algorithm_class(algorithm_of(path))
    try:
        return cls.load(str(path), env=env, device="cpu")
    except ValueError as error:
        if env is None or "Observation spaces do not match" not in str(error):
            raise
        saved = cls.load(str(path), device="cpu").observation_space
        given = env.observation_space
        extra = sorted(set(getattr(given, "spaces", {})) - set(getattr(saved, "spaces", {})))
        missing = sorted(set(getattr(saved, "spaces", {})) - set(getattr(given, "spaces", {})))
        if not (extra or missing):
            raise
        raise ValueError(
            f"{path}: the env's observation has {extra or 'no extra'} part(s) and lacks "
            f"{missing or 'none'} of the model's (an obs['mig'] comes with "
            "simulator.sharing = 'mig'): the model was not trained on this observation "
            "and cannot play here"
        ) from error


def build_model(config: TrainConfig, env: Any, tensorboard_log: str | None = None) -> Any:
    """A new SB3 model for ``config`` on ``env``."""
    policy_kwargs: dict[str, Any] = {}
    policy: Any = "MultiInputPolicy"
    if config.network.extractor in ("perm", "pointer"):
        observe = EnvConfig.from_any(env_configs(config)[0]).observation
        held_time, placement = observe.held_time, observe.placement
        drain, rivals = observe.drain, observe.rivals
        policy_kwargs["features_extractor_class"] = PermutationExtractor
        policy_kwargs["features_extractor_kwargs"] = {
            "row_dim": 64,
            "slot_dim": POINTER_SLOT_DIM if config.network.extractor == "pointer" else 4,
            "running_columns": len(running_features(held_time, placement, drain, rivals)),
        }
        if placement or drain:  # only then: the shipped models' saved kwargs stay as they are
            policy_kwargs["features_extractor_kwargs"]["pending_columns"] = len(
                pending_features(placement, drain)
            )
        if config.envs.residual is not None:  # the proposal reaches the logits (agents.residual)
            policy_kwargs["features_extractor_kwargs"]["proposal"] = True
    if config.network.extractor == "pointer":
        from agents.policies import MaskableSlotPolicy, SlotPolicy

        policy = MaskableSlotPolicy if config.algorithm.algo == "maskable_ppo" else SlotPolicy
        policy_kwargs["kind_mode"] = True
        if config.network.suspend_bias:
            policy_kwargs["suspend_bias"] = config.network.suspend_bias
        if config.network.critic != "features":
            policy_kwargs["critic"] = config.network.critic
        if config.envs.residual is not None:
            policy_kwargs["accept_bias"] = config.network.accept_bias
            policy_kwargs["residual_base"] = config.envs.residual
    common: dict[str, Any] = {
        "learning_rate": config.algorithm.learning_rate,
        **_discount_kwargs(config),
        "seed": config.run.seed,
        "device": "cpu",
        "verbose": config.run.verbose,
        "tensorboard_log": tensorboard_log,
    }
    if config.algorithm.algo == "dqn":
        policy_kwargs["net_arch"] = list(config.network.net_arch)
        return algorithm_class("dqn")(
            "MultiInputPolicy",
            env,
            buffer_size=config.algorithm.buffer_size,
            learning_starts=config.algorithm.learning_starts,
            batch_size=config.algorithm.batch_size,
            exploration_fraction=config.algorithm.exploration_fraction,
            exploration_final_eps=config.algorithm.exploration_final_eps,
            policy_kwargs=policy_kwargs,
            **common,
        )
    net_arch = list(config.network.net_arch)
    policy_kwargs["net_arch"] = {"pi": net_arch, "vf": net_arch}
    # SB3's Adam (its eps) in one fused kernel per step instead of a loop over the tensors
    policy_kwargs["optimizer_kwargs"] = {"eps": 1e-5, "fused": True}
    return algorithm_class(config.algorithm.algo)(
        policy, env, policy_kwargs=policy_kwargs, **_ppo_settings(config), **common
    )


def prepare_torch(config: TrainConfig) -> int:
    """Set this process's torch for training ``config``; returns its thread count.

    Threads as :func:`torch_threads_for` says, and no argument validation in
    ``torch.distributions``: every step builds two masked ``Categorical`` distributions and
    checks their logits and sampled actions, a few percent of a training run. Invalid
    values still fail: NaN logits stop ``torch.multinomial``, and the masks are the env's.
    """
    threads = torch_threads_for(config)
    torch.set_num_threads(threads)
    torch.distributions.Distribution.set_default_validate_args(False)
    return threads


def torch_threads_for(config: TrainConfig) -> int:
    """The torch threads of a run's main process: ``run.torch_threads`` if given, else
    the cores it may use that nothing else of the run takes: one beside env subprocesses
    or actors (which take the other cores), and with the envs in this process
    (``vec_env="dummy"``) every core but one per evaluation process (``eval_workers``,
    when the run evaluates). On two cores that evaluate beside training: one thread,
    which also keeps a second thread from waiting on a core another process holds."""
    if config.run.torch_threads is not None:
        return config.run.torch_threads
    if config.envs.vec_env != "dummy":
        return 1
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    count = len(cores) if cores else (os.cpu_count() or 1)
    evaluates = bool(config.evaluation.eval_seeds) and config.run.timesteps > 0
    return max(1, count - (config.evaluation.eval_workers if evaluates else 0))


def deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True)`` without loading torch's compiler.

    The public call also sets the flag in ``torch._inductor.config``, and imports it to do
    so: about 1.2 CPU-seconds of start-up for a setting only ``torch.compile`` reads,
    which training does not use. Where that config is loaded already, the public call.
    """
    if "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True)
    else:
        torch._C._set_deterministic_algorithms(True)


def _ppo_settings(config: TrainConfig) -> dict[str, Any]:
    """PPO's optimisation settings (what a resumed run also takes from ``config``)."""
    algorithm = config.algorithm
    return {
        "n_steps": algorithm.n_steps,
        "batch_size": algorithm.batch_size,
        "n_epochs": algorithm.n_epochs,
        "gae_lambda": algorithm.gae_lambda,
        "clip_range": algorithm.clip_range,
        "ent_coef": algorithm.ent_coef,
        "target_kl": algorithm.target_kl,
    }


def _discount_kwargs(config: TrainConfig) -> dict[str, Any]:
    """SB3 arguments of the discount: ``gamma`` per decision, or the SMDP buffer.

    The buffer class is always given for PPO, so that resuming a model saved with the
    other kind of discount switches it (``None``: SB3's default buffer).
    """
    if config.algorithm.algo == "dqn":
        return {"gamma": config.algorithm.gamma}
    if config.algorithm.time_constant_h is None:
        return {"gamma": config.algorithm.gamma, "rollout_buffer_class": None}
    from agents.smdp import smdp_buffer_class

    # gamma is then only SB3's bootstrap of truncated episodes (see agents.smdp)
    return {"gamma": 1.0, "rollout_buffer_class": smdp_buffer_class(config.algorithm.algo)}


def _action_weights(config: TrainConfig) -> np.ndarray | None:
    """Label weights of the cloning losses by action (``None`` when all are 1).  # (A,)"""
    if config.imitation.bc_suspend_weight == 1.0:
        return None
    env_config = env_configs(config)[0]  # the windows, --env overrides included
    schedule = env_config["pending_window"] * len(STRATEGIES)
    running = env_config["running_window"]
    weights = np.ones(schedule + running + 1, dtype=np.float32)
    weights[schedule : schedule + running] = config.imitation.bc_suspend_weight
    return weights


def _resume_overrides(config: TrainConfig) -> dict[str, Any]:
    """Hyper-parameters of ``config`` that replace the saved ones when resuming.

    A resumed run continues the saved weights (and step count) with this run's
    optimisation settings, so a warm-started model can be fine-tuned more gently.
    """
    values: dict[str, Any] = {
        "learning_rate": config.algorithm.learning_rate,
        **_discount_kwargs(config),
    }
    if config.algorithm.algo == "dqn":
        values.update(batch_size=config.algorithm.batch_size)
        return values
    values.update(_ppo_settings(config))
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
    algorithm, envs, imitation, run = config.algorithm, config.envs, config.imitation, config.run
    evaluation = config.evaluation
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    set_random_seed(run.seed)
    keep_freed_memory()
    if run.deterministic_torch:
        deterministic_algorithms()
    configs = env_configs(config)
    vec = make_vec_env(
        configs,
        envs.train_seeds,
        envs.n_envs,
        run.seed,
        reward_scale=envs.reward_scale,
        subprocess=VEC_ENVS[envs.vec_env],
        reward_reference=envs.reward_reference,
        reference_plays=envs.reference_plays,
        ray=envs.vec_env == "ray",
        curriculum=(
            None if envs.curriculum_jobs is None else (envs.curriculum_jobs, envs.curriculum_steps)
        ),
        residual=envs.residual,
    )
    # after the envs: an in-process env's constructor sets one thread (for subprocesses)
    threads = prepare_torch(config)
    record: dict[str, Any] = {
        "algo": algorithm.algo,
        # the parameters repeat exactly for the same thread count, so it is kept
        "torch_threads": threads,
        "env_config": configs[0],
        "env_configs": configs,
        "train": config.to_json(),
        "command": list(command) if command is not None else None,
        "versions": _versions(),
    }
    tb_dir = str(out / "tb")
    if run.resume:
        model = algorithm_class(algorithm.algo).load(
            run.resume,
            env=vec,
            device="cpu",
            tensorboard_log=tb_dir,
            seed=run.seed,
            **_resume_overrides(config),
        )
        record["resumed_from"] = str(run.resume)
    else:
        model = build_model(config, vec, tensorboard_log=tb_dir)
    cloning = imitation.bc_episodes > 0 or imitation.bc_dataset is not None
    if cloning and (not run.resume or imitation.dagger_iterations > 0):
        with contextlib.ExitStack() as stack:
            pool = None
            if imitation.label_workers > 1:
                from agents.bc import label_pool

                pool = stack.enter_context(label_pool(imitation.label_workers))
            model = _imitate(config, model, vec, configs, out, record, pool)
    callbacks: list[Any] = [SchedulingMetricsCallback()]
    if algorithm.time_constant_h is not None:
        from agents.smdp import SMDPDiscountCallback

        callbacks.append(SMDPDiscountCallback(algorithm.time_constant_h * 3600.0))
    evaluator = None
    if evaluation.eval_seeds and run.timesteps > 0:
        evaluator = HeuristicEvalCallback(
            validation_configs(config, configs),
            evaluation.eval_seeds,
            evaluation.eval_every,
            out,
            verbose=int(run.progress_bar),
            select_by=evaluation.select_by,
            workers=evaluation.eval_workers,
        )
        callbacks.append(evaluator)
    if run.progress_bar:
        callbacks.append(ProgressBarCallback(run.timesteps))
    (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    rl_started = time.perf_counter()
    warmup = min(algorithm.critic_warmup, run.timesteps)
    try:
        if warmup > 0:
            with _only_value_head_learns(model, algorithm.critic_warmup_lr):
                model.learn(
                    total_timesteps=warmup,
                    callback=CallbackList(callbacks),
                    tb_log_name=algorithm.algo,
                    reset_num_timesteps=not run.resume,
                )
        if run.timesteps > warmup:
            model.learn(
                total_timesteps=run.timesteps - warmup,
                callback=CallbackList(callbacks),
                tb_log_name=algorithm.algo,
                reset_num_timesteps=not run.resume and warmup == 0,
            )
        vec.close()
        path = out / "model.zip"
        model.save(path)
        rl_ended = time.perf_counter()
        if evaluator is not None:  # the evaluations still running beside training
            evaluator.finish()
    finally:
        if evaluator is not None:
            evaluator.close()
    record["seconds"] = {
        "total": time.perf_counter() - started,
        "rl": rl_ended - rl_started,
        # after training, for the evaluations still running beside it
        "evaluation_wait": time.perf_counter() - rl_ended,
    }
    record["timesteps_done"] = int(model.num_timesteps)
    if evaluator is not None:
        record["evaluations"] = evaluator.history
    (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    return path


def _labels_key(config: TrainConfig) -> dict[str, Any]:
    """The settings a run's saved labels depend on: all but those of its output, its
    reporting, its evaluation, the number of DAgger iterations (a run may go on for more)
    and of labelling processes (which give the same labels)."""
    unrelated = {
        "out", "timesteps", "progress_bar", "verbose", "label_workers", "dagger_iterations",
        "eval_seeds", "eval_every", "eval_workers", "select_by",
    }  # fmt: skip
    return {k: v for k, v in config.to_json().items() if k not in unrelated}


def labels_dir(
    config: TrainConfig, env_configs: Sequence[Any], torch_threads: int | None = None
) -> Path:
    """``out/labels``, the imitation's saved labels (``bc.npz``, ``dagger_<i>.npz``), kept
    when its ``run.json`` records the same labelling settings (and ``torch_threads``, the
    training process's count, on which the refits' parameters depend) and emptied
    otherwise (a run of other settings in the same folder labels afresh)."""
    folder = Path(config.run.out) / "labels"
    key = json.loads(json.dumps(
        {
            "train": _labels_key(config),
            "env_configs": list(env_configs),
            "torch_threads": torch_threads,
        },
        default=str,
    ))  # fmt: skip
    stamp = folder / "run.json"
    if stamp.is_file():
        try:
            same = json.loads(stamp.read_text()) == key
        except json.JSONDecodeError:
            same = False
        if same:
            return folder
    if folder.is_dir():
        for old in [*folder.glob("*.npz"), *folder.glob("*.partial"), stamp]:
            old.unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(key, indent=2))
    return folder


def _labelling_summary(count: int, seconds: float, loaded: bool, workers: int) -> dict[str, Any]:
    return {
        "labels": count,
        "label_seconds": seconds,
        "labels_per_s": count / seconds if seconds > 0 else None,
        "labels_loaded": loaded,
        "label_workers": workers,
    }


def _imitate(
    config: TrainConfig,
    model: Any,
    vec: Any,
    configs: list[dict[str, Any]],
    out: Path,
    record: dict[str, Any],
    pool: Any,
) -> Any:
    """Behaviour cloning, then DAgger (``config.imitation``), labelling in ``pool`` if
    given; the labels are kept in :func:`labels_dir`. Fills ``record["bc"]`` and
    ``record["dagger"]``."""
    from agents.bc import (
        Demonstrations,
        clone,
        collect_demonstrations,
        load_demonstrations,
        save_demonstrations,
    )

    algorithm, envs, imitation, run = config.algorithm, config.envs, config.imitation, config.run
    verbose = bool(run.verbose or run.progress_bar)
    folder = labels_dir(config, configs, record.get("torch_threads"))
    bc_started = time.perf_counter()
    rng = np.random.default_rng(run.seed)
    bc_seeds = [int(s) for s in rng.permutation(envs.train_seeds)[: imitation.bc_episodes]]
    tau_s = None if algorithm.time_constant_h is None else algorithm.time_constant_h * 3600.0
    parts: list[Demonstrations] = []
    labelling: dict[str, Any] | None = None
    if bc_seeds:
        saved = folder / "bc.npz"
        labelled = time.perf_counter()
        if saved.is_file():
            recorded, seconds, loaded = load_demonstrations(saved), 0.0, True
        else:
            recorded = collect_demonstrations(
                configs, bc_seeds, teachers(config, configs), algorithm.gamma, envs.reward_scale,
                time_constant_s=tau_s, pool=pool,
            )  # fmt: skip
            seconds, loaded = time.perf_counter() - labelled, False
            save_demonstrations(recorded, saved)
        parts.append(recorded)
        labelling = _labelling_summary(len(recorded), seconds, loaded, imitation.label_workers)
        if verbose:
            print(_labelling_line("bc", labelling), flush=True)
    if imitation.bc_dataset is not None:
        from agents.datasets import demonstrations_from_dataset

        parts.append(demonstrations_from_dataset(
            imitation.bc_dataset, gamma=algorithm.gamma, reward_scale=envs.reward_scale,
            time_constant_s=tau_s, observation_space=vec.observation_space,
            action_space=vec.action_space,
        ))  # fmt: skip
    demos = parts[0] if len(parts) == 1 else parts[0].extend(parts[1])

    def _log(summary: dict[str, float]) -> None:
        if run.verbose or run.progress_bar:
            print(
                f"[bc epoch {int(summary['epoch'])}] loss={summary['policy_loss']:.4f} "
                f"acc={summary['accuracy']:.4f} value_loss={summary['value_loss']:.4f}",
                flush=True,
            )

    def _after_dagger_iteration(summary: dict[str, float]) -> None:
        # every iteration's clone, for its validation curve (gpushare-evaluate)
        model.save(out / f"dagger_{int(summary['iteration'])}.zip")
        if run.verbose or run.progress_bar:
            print(
                f"[dagger {int(summary['iteration'])}] decisions={int(summary['decisions'])} "
                f"clone_jct_h={summary['clone_mean_jct_s'] / 3600:.2f} "
                f"acc={summary['accuracy']:.4f}",
                flush=True,
            )
            print(_labelling_line(f"dagger {int(summary['iteration'])}", {
                **summary, "label_workers": imitation.label_workers,
            }), flush=True)  # fmt: skip

    weights = _action_weights(config)
    history = clone(
        model, demos, epochs=imitation.bc_epochs, batch_size=algorithm.batch_size,
        learning_rate=imitation.bc_learning_rate, seed=run.seed, log=_log,
        action_weights=weights,
    )  # fmt: skip
    record["bc"] = {
        "heuristic": imitation.bc_heuristic,
        "trace_heuristic": imitation.bc_trace_heuristic,
        "seeds": bc_seeds,
        "dataset": imitation.bc_dataset,
        "decisions": len(demos),
        "history": history,
        "seconds": time.perf_counter() - bc_started,
    }
    if labelling is not None:
        record["bc"]["labelling"] = labelling
    if imitation.bc_epochs > 0:  # the plain clone, before DAgger (which saves dagger_K.zip)
        model.save(out / "bc_model.zip")
    if imitation.dagger_iterations > 0:
        from agents.bc import dagger

        unused = [int(s) for s in rng.permutation(envs.train_seeds) if s not in bc_seeds]
        demos, dagger_history = dagger(
            model, demos, configs, unused, imitation.dagger_iterations,
            imitation.dagger_episodes, teachers(config, configs), algorithm.gamma,
            envs.reward_scale, epochs=imitation.dagger_epochs,
            batch_size=algorithm.batch_size, log=_after_dagger_iteration,
            time_constant_s=tau_s, action_weights=weights, pool=pool, labels_dir=folder,
            propose=imitation.teacher_proposals,
        )  # fmt: skip
        record["dagger"] = dagger_history
        done = [s for s in dagger_history if not s["labels_loaded"]]
        count, seconds = sum(s["labels"] for s in done), sum(s["label_seconds"] for s in done)
        record["dagger_labelling"] = _labelling_summary(
            int(count), seconds, len(done) < len(dagger_history), imitation.label_workers
        )
    return model


def _labelling_line(stage: str, summary: Mapping[str, Any]) -> str:
    """``[bc labels] 120 labels in 3.2 s: 37.5 labels/s (2 workers)``, or that they were
    read back."""
    if summary["labels_loaded"]:
        return f"[{stage} labels] {int(summary['labels'])} labels read back (labelled before)"
    rate, workers = summary["labels_per_s"], int(summary["label_workers"])
    shown = "-" if rate is None or rate != rate else f"{rate:.1f}"
    return (
        f"[{stage} labels] {int(summary['labels'])} labels in {summary['label_seconds']:.1f} s: "
        f"{shown} labels/s ({workers} worker{'' if workers == 1 else 's'})"
    )


def _command_line() -> list[str]:
    return [Path(sys.argv[0]).name, *sys.argv[1:]]
