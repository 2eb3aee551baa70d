"""Train MaskablePPO (default), PPO or DQN on ``GPUShare-v0``; save the model and how to remake it.

``train(TrainConfig.from_any(...))`` (the settings in groups, see ``TrainConfig``) builds the
vectorised training envs (episodes from the training seeds only), optionally clones a
heuristic first (``imitation.bc_episodes``), learns with
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
import copy
import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch

from agents.allocator import keep_freed_memory
from agents.callbacks import HeuristicEvalCallback, ProgressBarCallback, SchedulingMetricsCallback
from agents.envs import make_vec_env
from agents.extractors import EXTRACTORS, PermutationExtractor
from agents.saved import algorithm_of
from gpushare_env.envs.config import EnvConfig
from gpushare_env.envs.observation import pending_features, running_features
from gpushare_env.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEEDS,
)
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
    "load_model",
    "train",
]

#: Algorithms ``train`` accepts.
ALGORITHMS: tuple[str, ...] = ("maskable_ppo", "ppo", "dqn")

#: ``--vec-env`` choices and the ``subprocess`` flag of ``make_vec_env`` they pass
#: (``ray`` passes ``ray=True`` instead: :class:`agents.ray_vec_env.RayVecEnv`).
VEC_ENVS: dict[str, bool | None] = {"auto": None, "subproc": True, "dummy": False, "ray": None}

#: Defaults of DQN where PPO's do not apply (SMDP discounting and the per-slot head are
#: PPO's), by path; ``TrainConfig.from_any`` uses them when ``algo`` is ``"dqn"``.
DQN_DEFAULTS: dict[str, Any] = {"algorithm.time_constant_h": None, "network.extractor": "flat"}

#: Slot-code length of ``--extractor pointer`` (what each slot's logits read of its row).
POINTER_SLOT_DIM = 32

#: Held-out seeds of the periodic evaluation (model selection): disjoint from the training
#: seeds (``PHILLY_TRAIN_SEEDS``, 0-99) and from the test seeds (1000-1009).
VALIDATION_SEEDS: tuple[int, ...] = (500, 501)


class _Group:
    """A validated, frozen group of ``TrainConfig`` settings (``PATH``: its attribute)."""

    __slots__ = ()
    PATH: ClassVar[str] = ""

    def _fail(self, name: str, message: str) -> ValueError:
        return ValueError(f"TrainConfig.{self.PATH}.{name} {message}")

    def _at_least(self, names: Sequence[str], low: int) -> None:
        """Each setting is an int (numpy ints taken as ints; no bool) >= ``low``."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, np.integer):
                value = int(value)
                object.__setattr__(self, name, value)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
                raise self._fail(name, f"must be an int >= {low}, got {value!r}")

    def _within(
        self, names: Sequence[str], low: float, high: float = math.inf, *, low_open: bool = False
    ) -> None:
        """Each setting is a finite number in ``[low, high]`` (``(low, high]`` if
        ``low_open``); ``None`` passes for the settings whose default is ``None``."""
        for name in names:
            value = getattr(self, name)
            if value is None and name in _OPTIONAL_NUMBERS:
                continue
            if isinstance(value, (np.integer, np.floating)):
                value = value.item()
                object.__setattr__(self, name, value)
            ok = (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and (value > low if low_open else value >= low)
                and value <= high
            )
            if not ok:
                bounds = [f"{'>' if low_open else '>='} {low:g}"] if low > -math.inf else []
                bounds += [f"<= {high:g}"] if high < math.inf else []
                allowed = " ".join(["a finite number", " and ".join(bounds)]).strip()
                none = "None or " if name in _OPTIONAL_NUMBERS else ""
                raise self._fail(name, f"must be {none}{allowed}, got {value!r}")

    def _one_of(self, name: str, allowed: Sequence[str] | Mapping[str, Any]) -> None:
        if getattr(self, name) not in allowed:
            raise self._fail(name, f"must be one of {list(allowed)}, got {getattr(self, name)!r}")

    def _heuristic(self, name: str) -> None:
        heuristic = getattr(self, name)
        if heuristic is None:
            return
        import baselines

        try:  # a bad heuristic fails here, not after the env set-up
            baselines.make(heuristic)
        except ValueError as exc:
            raise ValueError(f"TrainConfig.{self.PATH}.{name}: {exc}") from None

    @classmethod
    def from_any(cls: type[_G], spec: _G | Mapping[str, Any] | None) -> _G:
        """The group itself, or one from a dict of its settings (unknown keys refused, the
        allowed ones listed)."""
        if isinstance(spec, cls):
            return spec
        settings = dict(spec or {})  # type: ignore[arg-type]
        allowed = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        if unknown := sorted(set(settings) - set(allowed)):
            raise ValueError(f"TrainConfig.{cls.PATH}: unknown keys {unknown}; allowed: {allowed}")
        return cls(**settings)

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


_G = TypeVar("_G", bound=_Group)

#: Number settings that may be ``None`` (``_Group._within`` lets ``None`` pass for them).
_OPTIONAL_NUMBERS = frozenset({"target_kl", "time_constant_h"})


@dataclass(frozen=True, slots=True)
class AlgorithmConfig(_Group):
    """The RL algorithm and its optimisation settings.

    Attributes:
        algo: One of ``ALGORITHMS``.
        learning_rate: Step size of the RL optimiser.
        n_steps: PPO rollout length per env (default 64: 2,048 steps per rollout with
            the default 32 envs).
        batch_size: Minibatch size (of RL, and of the cloning and DAgger fits).
        n_epochs: PPO epochs per rollout.
        gamma: Discount per decision (used only when ``time_constant_h`` is ``None``).
        time_constant_h: SMDP discount (``agents.smdp``): a step that lets simulated time
            run by ``dt`` is discounted by ``exp(-dt / tau)`` with ``tau`` this many
            hours, and decisions at one instant are not discounted. Default 24 h, half the
            mean JCT of ``thesis`` on ``philly_heavy``; ``None``: ``gamma`` per decision,
            which rewards merely adding decisions. PPO and MaskablePPO only.
        gae_lambda: PPO GAE lambda.
        clip_range: PPO clip range.
        ent_coef: PPO entropy bonus.
        target_kl: PPO early stop on KL (``None``: off).
        buffer_size: DQN replay size.
        learning_starts: DQN steps before learning.
        exploration_fraction: DQN share of training with decaying epsilon.
        exploration_final_eps: DQN final epsilon.
        critic_warmup: RL steps at the start during which only the value head learns (the
            policy and the shared extractor are frozen): a resumed model whose critic was
            fitted to another reward or discount first relearns its values.
        critic_warmup_lr: Adam step size during ``critic_warmup``.
    """

    PATH: ClassVar[str] = "algorithm"

    algo: str = "maskable_ppo"
    learning_rate: float = 3e-4
    n_steps: int = 64
    batch_size: int = 512
    n_epochs: int = 4
    gamma: float = 0.99
    time_constant_h: float | None = 24.0  # [h]
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    target_kl: float | None = 0.02
    buffer_size: int = 50_000
    learning_starts: int = 1_000
    exploration_fraction: float = 0.2
    exploration_final_eps: float = 0.02
    critic_warmup: int = 0
    critic_warmup_lr: float = 3e-4

    def __post_init__(self) -> None:
        self._one_of("algo", ALGORITHMS)
        self._at_least(("critic_warmup", "learning_starts"), 0)
        self._at_least(("n_steps", "batch_size", "n_epochs", "buffer_size"), 1)
        self._within(("learning_rate", "critic_warmup_lr", "clip_range"), 0, low_open=True)
        self._within(("target_kl",), 0, low_open=True)
        self._within(("gamma", "gae_lambda", "exploration_fraction", "exploration_final_eps"), 0, 1)
        self._within(("ent_coef",), -math.inf)
        tau = self.time_constant_h
        if tau is not None:
            if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
                raise self._fail("time_constant_h", f"must be None or a number > 0, got {tau!r}")
            if self.algo == "dqn":
                raise self._fail(
                    "time_constant_h", "needs PPO or MaskablePPO, not dqn (with dqn give none)"
                )
        if self.critic_warmup and self.algo == "dqn":
            raise self._fail("critic_warmup", "needs PPO or MaskablePPO, not dqn")


@dataclass(frozen=True, slots=True)
class NetworkConfig(_Group):
    """The policy's network.

    Attributes:
        extractor: ``flat`` (SB3 ``CombinedExtractor``), ``perm`` (``PermutationExtractor``:
            shared per-row encoders, pooled) or ``pointer`` (default: ``PermutationExtractor``
            with 32-number slot codes and ``agents.policies``' per-slot action logits; PPO
            and MaskablePPO only).
        net_arch: Hidden layers of the policy and value MLPs (``pointer``: of the value
            MLP only; its policy is the per-slot head).
        suspend_bias: ``pointer`` only: initial bias of every suspend logit (0: none; e.g.
            -3.8 makes the sixteen suspend actions of a full window together less likely
            than ``advance`` at the start, so an untrained policy does not suspend).
    """

    PATH: ClassVar[str] = "network"

    extractor: str = "pointer"
    net_arch: tuple[int, ...] = (64, 64)
    suspend_bias: float = 0.0

    def __post_init__(self) -> None:
        self._one_of("extractor", EXTRACTORS)
        sizes = self.net_arch
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
            raise self._fail("net_arch", f"must be a list of layer sizes, got {sizes!r}")
        if not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1 for n in sizes
        ):
            raise self._fail("net_arch", f"must be layer sizes, ints >= 1, got {list(sizes)!r}")
        object.__setattr__(self, "net_arch", tuple(int(n) for n in sizes))
        self._within(("suspend_bias",), -math.inf)
        if self.suspend_bias and self.extractor != "pointer":
            raise self._fail("suspend_bias", f"needs the pointer extractor, not {self.extractor!r}")


@dataclass(frozen=True, slots=True)
class EnvsConfig(_Group):
    """The training envs: what they simulate, how many run, on which seeds, what reward.

    Attributes:
        cluster: Cluster preset (or dict) of the env.
        workloads: Workload presets; training envs alternate over them.
        num_jobs: Jobs per episode (none: each workload's own count, every job of a trace
            and 100 for a generator). From the preset, except with a trace among the
            workloads: then none, so a trace plays whole unless this is given (a trace cut
            short warns).
        pending_window: Env ``pending_window``.
        running_window: Env ``running_window``.
        env_overrides: Further ``GPUShare-v0`` config keys, nested or flat (e.g.
            ``reward`` weights).
        n_envs: Parallel envs (default 32, stepped in turn in one process: the policy
            acts on all 32 observations in one forward pass, and with the default
            ``n_steps`` of 64 a rollout is 2,048 steps; docs/benchmarks.md#training).
        vec_env: How they run: ``"subproc"`` (``SubprocVecEnv``, one process each),
            ``"dummy"`` (``agents.envs.InProcessVecEnv``, in turn in this process: on few cores the
            policy then acts on a batch of ``n_envs`` observations at once), or
            ``"auto"`` (subprocesses when ``n_envs > 1``), or ``"ray"`` (each env in a Ray
            actor, on this machine or the running Ray cluster: ``gpushare[ray]``). The
            same seeds give the same episodes either way.
        train_seeds: Training episode seeds.
        reward_scale: Factor on the rewards seen by the learner.
        reward_reference: Make the ``jct`` reward relative to this heuristic played on the
            same episode (``agents.reference``: a control variate against the variance the
            arrivals cause; the optimal policies stay the same); ``None``: plain reward.
        reference_plays: With ``reward_reference``: once the agent has finished an
            episode on a seed, measure it against the mean of its own last this many
            plays of that seed instead of the heuristic (Mao et al.'s input-dependent
            baseline, time-aligned: ``agents.reference.Plays``); 0: the heuristic always.
        curriculum_jobs: Jobs of the first training episodes: episodes grow in ten even
            stages from this many jobs to ``num_jobs`` over the first
            ``curriculum_steps`` env steps (short episodes of the same seeds and
            workload; generated workloads only); ``None``: full episodes throughout. A
            resumed run starts its curriculum again.
        curriculum_steps: Env steps over which the curriculum reaches full episodes.
    """

    PATH: ClassVar[str] = "envs"

    cluster: str | Mapping[str, Any] = "medium"
    workloads: tuple[str, ...] = ("philly", "philly_bursty")
    num_jobs: int | None = 300
    pending_window: int = 16
    running_window: int = 16
    env_overrides: Mapping[str, Any] = field(default_factory=dict)
    n_envs: int = 32
    vec_env: str = "dummy"
    train_seeds: tuple[int, ...] = PHILLY_TRAIN_SEEDS
    reward_scale: float = 0.01
    reward_reference: str | None = None
    reference_plays: int = 0
    curriculum_jobs: int | None = None
    curriculum_steps: int = 1_000_000

    def __post_init__(self) -> None:
        if isinstance(self.workloads, str) or not self.workloads:
            raise self._fail(
                "workloads", f"must name at least one workload, got {self.workloads!r}"
            )
        self._at_least(("n_envs",), 1)
        self._one_of("vec_env", VEC_ENVS)
        object.__setattr__(self, "workloads", tuple(self.workloads))
        _seed_tuple(self, "train_seeds", empty=False)
        _no_test_seeds(self, "train_seeds")
        self._within(("reward_scale",), 0, low_open=True)
        self._heuristic("reward_reference")
        self._at_least(("reference_plays",), 0)
        if self.reference_plays and self.reward_reference is None:
            raise self._fail(
                "reference_plays",
                "needs reward_reference (the heuristic that stands in "
                "until the agent's first play of a seed)",
            )
        self._at_least(("curriculum_steps",), 1)
        first = self.curriculum_jobs
        if first is not None:
            self._at_least(("curriculum_jobs",), 1)
            if self.num_jobs is None or first >= self.num_jobs:
                raise self._fail(
                    "curriculum_jobs",
                    f"must be below num_jobs ({self.num_jobs}), the full episodes' jobs",
                )
            traces = [w for w in self.workloads if _is_trace(w)]
            if traces:
                raise self._fail(
                    "curriculum_jobs", f"applies to generated workloads only, not {traces}"
                )
        if not isinstance(self.env_overrides, Mapping):
            raise self._fail(
                "env_overrides",
                f"must be a dict of GPUShare-v0 settings, got {self.env_overrides!r}",
            )
        # every env config the run builds, checked now (cluster, workload names, windows,
        # num_jobs, overrides) rather than when the envs start; a trace file is read then
        base = {
            "cluster": self.cluster,
            "num_jobs": self.num_jobs,
            "pending_window": self.pending_window,
            "running_window": self.running_window,
        }
        try:
            for workload in self.workloads:
                EnvConfig.from_any(
                    {**base, **EnvConfig.flatten(self.env_overrides)}, workload=workload
                )
        except (TypeError, ValueError) as error:
            raise ValueError(f"TrainConfig.envs: {error}") from None


@dataclass(frozen=True, slots=True)
class ImitationConfig(_Group):
    """The warm start: behaviour cloning of a heuristic, then DAgger.

    Attributes:
        bc_episodes: Heuristic episodes recorded for the behaviour-cloning warm start (0: none).
            With ``resume`` they are recorded only for DAgger (``dagger_iterations > 0``):
            the resumed model is cloned on them for ``bc_epochs`` (0: not at all), and
            DAgger goes on from it.
        bc_epochs: Passes of behaviour cloning.
        bc_heuristic: Heuristic cloned (and labelling DAgger): a ``baselines.available()``
            or ``baselines.variants()`` name, optionally with parameters
            (``gandiva_srpt:max_load=1.25``).
        bc_learning_rate: Adam step size of behaviour cloning.
        dagger_iterations: DAgger iterations after cloning (0: none); the clone after
            iteration ``i`` is saved as ``dagger_<i>.zip``.
        dagger_episodes: Episodes the clone plays per DAgger iteration.
        dagger_epochs: Passes over the aggregated data after each DAgger iteration.
        bc_suspend_weight: Weight of the teacher's ``suspend`` labels in the cloning and
            DAgger losses, > 0 (1: plain cross-entropy). The teacher suspends in a few
            percent of the states its clone visits, and the clone misses most of them.
    """

    PATH: ClassVar[str] = "imitation"

    bc_episodes: int = 0
    bc_epochs: int = 10
    bc_heuristic: str = "thesis"
    bc_learning_rate: float = 1e-3
    dagger_iterations: int = 0
    dagger_episodes: int = 8
    dagger_epochs: int = 3
    bc_suspend_weight: float = 1.0

    def __post_init__(self) -> None:
        self._at_least(("bc_episodes", "bc_epochs", "dagger_iterations", "dagger_epochs"), 0)
        self._at_least(("dagger_episodes",), 1)
        self._within(("bc_learning_rate",), 0, low_open=True)
        if not (
            isinstance(self.bc_suspend_weight, (int, float))
            and math.isfinite(self.bc_suspend_weight)
            and self.bc_suspend_weight > 0
        ):
            raise self._fail("bc_suspend_weight", f"must be > 0, got {self.bc_suspend_weight}")
        self._heuristic("bc_heuristic")


@dataclass(frozen=True, slots=True)
class EvaluationConfig(_Group):
    """The periodic evaluation against ``thesis`` on held-out seeds (model selection).

    Attributes:
        eval_seeds: Held-out seeds of the periodic evaluation (empty: no evaluation).
        eval_every: Steps between evaluations.
    """

    PATH: ClassVar[str] = "evaluation"

    eval_seeds: tuple[int, ...] = VALIDATION_SEEDS
    eval_every: int = 20_000

    def __post_init__(self) -> None:
        _seed_tuple(self, "eval_seeds", empty=True)
        _no_test_seeds(self, "eval_seeds")
        self._at_least(("eval_every",), 1)


@dataclass(frozen=True, slots=True)
class RunConfig(_Group):
    """The run: its length, seed, output and process settings.

    Attributes:
        timesteps: Environment steps of RL training (summed over envs).
        seed: Seed of the model, the envs' seed streams and the warm start.
        out: Output folder.
        resume: A saved model to continue training from, with this run's optimisation
            settings (``None``: a new model).
        deterministic_torch: ``torch.use_deterministic_algorithms(True)``.
        torch_threads: Threads of this process's torch (the policy's forward passes, its
            updates and the behaviour-cloning / DAgger fits). ``None`` (default): every
            core this process may use (``torch_threads_for``) when the envs run in it
            (``vec_env="dummy"``), one beside env subprocesses or Ray actors.
        progress_bar: Show a progress bar.
        verbose: SB3 verbosity.
    """

    PATH: ClassVar[str] = "run"

    timesteps: int = 200_000
    seed: int = 0
    out: str = "runs/agent"
    resume: str | None = None
    deterministic_torch: bool = True
    torch_threads: int | None = None
    progress_bar: bool = True
    verbose: int = 0

    def __post_init__(self) -> None:
        self._at_least(("timesteps", "verbose"), 0)
        if self.torch_threads is not None:
            self._at_least(("torch_threads",), 1)
        self._at_least(("seed",), 0)
        if self.seed > MAX_SEED:  # numpy's legacy global seed, which SB3 sets, is 32-bit
            raise self._fail("seed", f"must be <= 2**32 - 1, got {self.seed}")
        if not (isinstance(self.out, (str, os.PathLike)) and str(self.out).strip()):
            raise self._fail("out", f"must be a folder name, got {self.out!r}")
        if self.resume is not None and not isinstance(self.resume, (str, os.PathLike)):
            raise self._fail("resume", f"must be None or a model file, got {self.resume!r}")
        for name in ("deterministic_torch", "progress_bar"):
            if not isinstance(getattr(self, name), bool):
                raise self._fail(name, f"must be True or False, got {getattr(self, name)!r}")


#: Largest run seed (SB3's ``set_random_seed`` seeds numpy's 32-bit legacy generator).
MAX_SEED = 2**32 - 1


def _seed_tuple(group: _Group, name: str, *, empty: bool) -> None:
    """Store ``group.name`` as a tuple of seeds, ints >= 0 (numpy's generators refuse
    negative seeds); refuse an empty tuple unless ``empty``."""
    seeds = getattr(group, name)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (Sequence, np.ndarray)):
        raise group._fail(name, f"must be a list of seeds, got {seeds!r}")
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in seeds):
        raise group._fail(name, f"must be ints, got {list(seeds)!r}")
    values = tuple(int(s) for s in seeds)
    if any(s < 0 for s in values):
        raise group._fail(name, f"must be >= 0, got {min(values)}")
    if not values and not empty:
        raise group._fail(name, "must hold at least one seed (got none: an empty range?)")
    object.__setattr__(group, name, values)


def _no_test_seeds(group: _Group, name: str) -> None:
    if test := sorted(set(getattr(group, name)) & set(PHILLY_TEST_SEEDS)):
        raise group._fail(
            name, f"include the test seeds {test}: they are never used for training or model "
            "selection"
        )  # fmt: skip


#: The groups of ``TrainConfig`` by attribute name, in order.
GROUPS: dict[str, type[_Group]] = {
    "algorithm": AlgorithmConfig,
    "network": NetworkConfig,
    "envs": EnvsConfig,
    "imitation": ImitationConfig,
    "evaluation": EvaluationConfig,
    "run": RunConfig,
}

#: The flat form's ``TrainConfig`` keys, one short key per setting (recorded as
#: ``config.json["train"]`` and in ``agents/zoo/*.json``) -> the setting's path in the
#: nested form, in their order.
FLAT_KEYS: dict[str, str] = {
    "algo": "algorithm.algo",
    "cluster": "envs.cluster",
    "workloads": "envs.workloads",
    "num_jobs": "envs.num_jobs",
    "pending_window": "envs.pending_window",
    "running_window": "envs.running_window",
    "env_overrides": "envs.env_overrides",
    "timesteps": "run.timesteps",
    "n_envs": "envs.n_envs",
    "vec_env": "envs.vec_env",
    "seed": "run.seed",
    "out": "run.out",
    "resume": "run.resume",
    "extractor": "network.extractor",
    "net_arch": "network.net_arch",
    "suspend_bias": "network.suspend_bias",
    "train_seeds": "envs.train_seeds",
    "eval_seeds": "evaluation.eval_seeds",
    "eval_every": "evaluation.eval_every",
    "reward_scale": "envs.reward_scale",
    "reward_reference": "envs.reward_reference",
    "reference_plays": "envs.reference_plays",
    "curriculum_jobs": "envs.curriculum_jobs",
    "curriculum_steps": "envs.curriculum_steps",
    "critic_warmup": "algorithm.critic_warmup",
    "critic_warmup_lr": "algorithm.critic_warmup_lr",
    "bc_episodes": "imitation.bc_episodes",
    "bc_epochs": "imitation.bc_epochs",
    "bc_heuristic": "imitation.bc_heuristic",
    "bc_learning_rate": "imitation.bc_learning_rate",
    "dagger_iterations": "imitation.dagger_iterations",
    "dagger_episodes": "imitation.dagger_episodes",
    "dagger_epochs": "imitation.dagger_epochs",
    "bc_suspend_weight": "imitation.bc_suspend_weight",
    "learning_rate": "algorithm.learning_rate",
    "n_steps": "algorithm.n_steps",
    "batch_size": "algorithm.batch_size",
    "n_epochs": "algorithm.n_epochs",
    "gamma": "algorithm.gamma",
    "time_constant_h": "algorithm.time_constant_h",
    "gae_lambda": "algorithm.gae_lambda",
    "clip_range": "algorithm.clip_range",
    "ent_coef": "algorithm.ent_coef",
    "target_kl": "algorithm.target_kl",
    "buffer_size": "algorithm.buffer_size",
    "learning_starts": "algorithm.learning_starts",
    "exploration_fraction": "algorithm.exploration_fraction",
    "exploration_final_eps": "algorithm.exploration_final_eps",
    "deterministic_torch": "run.deterministic_torch",
    "torch_threads": "run.torch_threads",
    "progress_bar": "run.progress_bar",
    "verbose": "run.verbose",
}


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything that defines a training run, in groups by concern.

    ``TrainConfig.from_any`` (and ``from_preset``) take the nested form
    (``{"imitation": {"bc_epochs": 8}}``), the flat form's short keys
    (``{"bc_epochs": 8}``, mapped by ``FLAT_KEYS``: recorded runs and the zoo's cards use
    them) or both; ``as_dict()`` gives the nested form back and ``flat()`` the flat one.

    Attributes:
        algorithm: The RL algorithm and its optimisation settings (``AlgorithmConfig``).
        network: The policy's network (``NetworkConfig``).
        envs: The training envs, their seeds and reward (``EnvsConfig``).
        imitation: Behaviour cloning and DAgger warm start (``ImitationConfig``).
        evaluation: The periodic validation (``EvaluationConfig``).
        run: Length, seed, output and process settings (``RunConfig``).
    """

    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    envs: EnvsConfig = field(default_factory=EnvsConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        for name, group in GROUPS.items():  # a dict of a group's settings is accepted too
            object.__setattr__(self, name, group.from_any(getattr(self, name)))
        algo = self.algorithm.algo
        if self.network.extractor == "pointer" and algo == "dqn":
            raise ValueError(
                "TrainConfig.network.extractor 'pointer' (the default) needs PPO or "
                "MaskablePPO (TrainConfig.algorithm.algo), not dqn: with dqn give "
                "--extractor flat or perm (and --time-constant-h none)"
            )
        if set(self.evaluation.eval_seeds) & set(self.envs.train_seeds):
            raise ValueError(
                "TrainConfig.evaluation.eval_seeds must be disjoint from "
                "TrainConfig.envs.train_seeds"
            )

    @classmethod
    def from_any(
        cls, spec: TrainConfig | Mapping[str, Any] | None = None, /, **overrides: Any
    ) -> TrainConfig:
        """A config from ``spec`` and then ``overrides``, each nested, flat or mixed.

        A key is a group name (its value a dict of that group's settings or the group
        itself) or a flat key of ``FLAT_KEYS``; unknown keys are refused with the allowed
        ones listed. A setting given twice in one of them is refused; ``overrides`` win
        over ``spec``. With ``algo="dqn"``, the settings only PPO takes default to DQN's
        (``DQN_DEFAULTS``: per-decision discount, the ``flat`` extractor) unless given.
        """
        base = spec.as_dict() if isinstance(spec, TrainConfig) else (spec or {})
        values = {**_paths(base), **_paths(overrides)}
        groups: dict[str, dict[str, Any]] = {name: {} for name in GROUPS}
        for path, value in values.items():
            group, name = path.split(".", 1)
            groups[group][name] = value
        if groups["algorithm"].get("algo") == "dqn":
            for path, value in DQN_DEFAULTS.items():
                group, name = path.split(".", 1)
                groups[group].setdefault(name, value)
        return cls(**{name: GROUPS[name].from_any(v) for name, v in groups.items()})  # type: ignore[arg-type]

    @classmethod
    def from_preset(cls, preset: str, **overrides: Any) -> TrainConfig:
        """Cluster, workloads and episode size of an evaluation preset, then ``overrides``
        (nested or flat, as ``from_any``)."""
        if preset not in EVALUATION_PRESETS:
            raise ValueError(f"unknown preset {preset!r}; available: {sorted(EVALUATION_PRESETS)}")
        spec = EVALUATION_PRESETS[preset]
        values = {"cluster": spec.cluster, "workloads": spec.workloads, "num_jobs": spec.num_jobs}
        given = _paths(overrides)
        workloads = given.get("envs.workloads", spec.workloads)
        if "envs.num_jobs" not in given and any(_is_trace(w) for w in workloads):
            values["num_jobs"] = None  # the preset's episode size is not a trace's: play it whole
        return cls.from_any(values, **overrides)

    def as_dict(self) -> dict[str, Any]:
        """The nested form: every group's settings by name."""
        return {name: getattr(self, name).as_dict() for name in GROUPS}

    def flat(self) -> dict[str, Any]:
        """The flat form, one short key per setting, every key of ``FLAT_KEYS``
        (``TrainConfig.from_any(config.flat()) == config``)."""
        out: dict[str, Any] = {}
        for key, path in FLAT_KEYS.items():
            group, name = path.split(".", 1)
            out[key] = getattr(getattr(self, group), name)
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every setting, in the flat form (the one recorded runs and
        the zoo's cards keep; ``from_any`` reads it back)."""
        return copy.deepcopy({
            key: dict(value) if isinstance(value, Mapping) else value
            for key, value in self.flat().items()
        })  # fmt: skip


def _paths(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec``'s settings by path (``"imitation.bc_epochs"``), nested and flat keys alike."""
    out: dict[str, Any] = {}

    def put(path: str, value: Any, key: str) -> None:
        if path in out:
            raise ValueError(
                f"TrainConfig.{path} given twice (as {key!r} and by another key: the nested "
                "key or the flat one of earlier versions)"
            )
        out[path] = value

    for key, value in spec.items():
        if key in GROUPS:
            group = GROUPS[key]
            settings = value.as_dict() if isinstance(value, group) else dict(value or {})
            allowed = [f.name for f in dataclasses.fields(group)]  # type: ignore[arg-type]
            if unknown := sorted(set(settings) - set(allowed)):
                raise ValueError(f"TrainConfig.{key}: unknown keys {unknown}; allowed: {allowed}")
            for name, setting in settings.items():
                put(f"{key}.{name}", setting, f"{key}.{name}")
        elif key in FLAT_KEYS:
            put(FLAT_KEYS[key], value, key)
        else:
            raise ValueError(
                f"TrainConfig: unknown key {key!r}; allowed: the groups {list(GROUPS)} or the "
                f"flat keys of earlier versions {list(FLAT_KEYS)}"
            )
    return out


def _is_trace(workload: Any) -> bool:
    """True for a workload given as a ``.csv`` / ``.json`` trace path."""
    if not isinstance(workload, (str, os.PathLike)):
        return False
    return Path(workload).suffix.lower() in (".csv", ".json")


def env_configs(config: TrainConfig) -> list[dict[str, Any]]:
    """The ``GPUShare-v0`` configs of a run, one per workload, in the flat form (so the
    overrides, nested or flat, override setting by setting, and recorded configs keep one
    form)."""
    base: dict[str, Any] = {
        "cluster": config.envs.cluster,
        "num_jobs": config.envs.num_jobs,
        "pending_window": config.envs.pending_window,
        "running_window": config.envs.running_window,
        **EnvConfig.flatten(config.envs.env_overrides),
    }
    return [{**base, "workload": workload} for workload in config.envs.workloads]


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
    return cls.load(str(path), env=env, device="cpu")


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
    if config.network.extractor == "pointer":
        from agents.policies import MaskableSlotPolicy, SlotPolicy

        policy = MaskableSlotPolicy if config.algorithm.algo == "maskable_ppo" else SlotPolicy
        policy_kwargs["kind_mode"] = True
        if config.network.suspend_bias:
            policy_kwargs["suspend_bias"] = config.network.suspend_bias
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
    return algorithm_class(config.algorithm.algo)(
        policy, env, policy_kwargs=policy_kwargs, **_ppo_settings(config), **common
    )


def torch_threads_for(config: TrainConfig) -> int:
    """The torch threads of a run's main process: ``run.torch_threads`` if given, else
    every core it may use when its envs step in it (``vec_env="dummy"``) and one beside
    env subprocesses or actors (which take the other cores)."""
    if config.run.torch_threads is not None:
        return config.run.torch_threads
    if config.envs.vec_env != "dummy":
        return 1
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return max(1, len(cores) if cores else (os.cpu_count() or 1))


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
        torch.use_deterministic_algorithms(True)
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
    )
    # after the envs: an in-process env's constructor sets one thread (for subprocesses)
    threads = torch_threads_for(config)
    torch.set_num_threads(threads)
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
    if imitation.bc_episodes > 0 and (not run.resume or imitation.dagger_iterations > 0):
        from agents.bc import clone, collect_demonstrations

        bc_started = time.perf_counter()
        rng = np.random.default_rng(run.seed)
        bc_seeds = [int(s) for s in rng.permutation(envs.train_seeds)[: imitation.bc_episodes]]
        tau_s = None if algorithm.time_constant_h is None else algorithm.time_constant_h * 3600.0
        demos = collect_demonstrations(
            configs, bc_seeds, imitation.bc_heuristic, algorithm.gamma, envs.reward_scale,
            time_constant_s=tau_s,
        )  # fmt: skip

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

        weights = _action_weights(config)
        history = clone(
            model, demos, epochs=imitation.bc_epochs, batch_size=algorithm.batch_size,
            learning_rate=imitation.bc_learning_rate, seed=run.seed, log=_log,
            action_weights=weights,
        )  # fmt: skip
        record["bc"] = {
            "heuristic": imitation.bc_heuristic,
            "seeds": bc_seeds,
            "decisions": len(demos),
            "history": history,
            "seconds": time.perf_counter() - bc_started,
        }
        if imitation.bc_epochs > 0:  # the plain clone, before DAgger (which saves dagger_K.zip)
            model.save(out / "bc_model.zip")
        if imitation.dagger_iterations > 0:
            from agents.bc import dagger

            unused = [int(s) for s in rng.permutation(envs.train_seeds) if s not in bc_seeds]
            demos, dagger_history = dagger(
                model, demos, configs, unused, imitation.dagger_iterations,
                imitation.dagger_episodes, imitation.bc_heuristic, algorithm.gamma,
                envs.reward_scale, epochs=imitation.dagger_epochs,
                batch_size=algorithm.batch_size, log=_after_dagger_iteration,
                time_constant_s=tau_s, action_weights=weights,
            )  # fmt: skip
            record["dagger"] = dagger_history
    callbacks: list[Any] = [SchedulingMetricsCallback()]
    if algorithm.time_constant_h is not None:
        from agents.smdp import SMDPDiscountCallback

        callbacks.append(SMDPDiscountCallback(algorithm.time_constant_h * 3600.0))
    evaluator = None
    if evaluation.eval_seeds and run.timesteps > 0:
        evaluator = HeuristicEvalCallback(
            configs,
            evaluation.eval_seeds,
            evaluation.eval_every,
            out,
            verbose=int(run.progress_bar),
        )
        callbacks.append(evaluator)
    if run.progress_bar:
        callbacks.append(ProgressBarCallback(run.timesteps))
    (out / "config.json").write_text(json.dumps(record, indent=2, default=str))
    rl_started = time.perf_counter()
    warmup = min(algorithm.critic_warmup, run.timesteps)
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
