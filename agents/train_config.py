"""The configuration of a training run: ``TrainConfig`` and its groups.

``TrainConfig`` is nested; each group is a frozen dataclass that validates itself
(``gpushare_env.sim.settings.Group``)::

    TrainConfig
    ├── algorithm    AlgorithmConfig    the RL algorithm and its optimisation settings
    ├── network      NetworkConfig      the policy's network
    ├── envs         EnvsConfig         the training envs, their seeds and reward
    ├── imitation    ImitationConfig    behaviour cloning and DAgger warm start
    ├── evaluation   EvaluationConfig   the periodic validation
    └── run          RunConfig          length, seed, output and process settings

``TrainConfig.from_any`` takes the nested form, the flat keys, one short key per setting
(``FLAT_KEYS``), or both; a bad value names its path (``TrainConfig.run.seed``).
:func:`env_configs` gives the ``GPUShare-v0`` configs of a run. ``agents.training`` runs
it (and re-exports these names).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np

from agents.extractors import EXTRACTORS
from agents.policies import CRITIC_INPUTS
from gpushare_env.envs.config import EnvConfig
from gpushare_env.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEEDS,
)
from gpushare_env.sim.setting_table import declared
from gpushare_env.sim.settings import (
    Group,
    KeyPaths,
    declared_fields,
    is_int,
    unknown_keys_error,
)

__all__ = [
    "ALGORITHMS",
    "DQN_DEFAULTS",
    "FLAT_KEYS",
    "GROUPS",
    "MAX_SEED",
    "PHILLY_VC_NAME",
    "SELECT_BY",
    "VALIDATION_SEEDS",
    "VEC_ENVS",
    "AlgorithmConfig",
    "EnvsConfig",
    "EvaluationConfig",
    "ImitationConfig",
    "NetworkConfig",
    "RunConfig",
    "TrainConfig",
    "env_configs",
    "teachers",
    "trace_paths",
    "validation_configs",
]

#: Algorithms ``train`` accepts.
ALGORITHMS: tuple[str, ...] = ("maskable_ppo", "ppo", "dqn")

#: ``--vec-env`` choices and the ``subprocess`` flag of ``make_vec_env`` they pass
#: (``ray`` passes ``ray=True`` instead: :class:`agents.ray_vec_env.RayVecEnv`).
VEC_ENVS: dict[str, bool | None] = {"auto": None, "subproc": True, "dummy": False, "ray": None}

#: Defaults of DQN where PPO's do not apply (SMDP discounting and the per-slot head are
#: PPO's), by path; ``TrainConfig.from_any`` uses them when ``algo`` is ``"dqn"``.
DQN_DEFAULTS: dict[str, Any] = {"algorithm.time_constant_h": None, "network.extractor": "flat"}

#: Held-out seeds of the periodic evaluation (model selection): disjoint from the training
#: seeds (``PHILLY_TRAIN_SEEDS``, 0-99) and from the test seeds (1000-1009).
VALIDATION_SEEDS: tuple[int, ...] = (500, 501)
#: How the validation picks ``best_model.zip`` (``EvaluationConfig.select_by``).
SELECT_BY: tuple[str, ...] = ("mean", "worst")
#: The name ``envs.traces`` accepts for the six shipped Philly VC traces.
PHILLY_VC_NAME = "philly_vc"


class _TrainGroup(Group):
    """A validated, frozen group of ``TrainConfig`` settings (``path``:
    ``TrainConfig.<its attribute>``)."""

    __slots__ = ()

    @classmethod
    def given(cls, spec: Any) -> dict[str, Any]:
        """The settings ``spec`` gives: every one of an instance, else ``dict(spec)``'s
        (``None``: none), unknown keys refused with the allowed ones listed."""
        if isinstance(spec, cls):
            return spec.as_dict()
        # another group is no dict of settings (``dict()`` would read it by its ``keys``)
        settings = dict(iter(cast(Any, spec)) if isinstance(spec, Group) else spec or {})
        allowed = list(cls.keys())
        if unknown := sorted(set(settings) - set(allowed)):
            raise unknown_keys_error(cls.path, unknown, allowed, suggest=False)
        return settings

    def _heuristic(self, name: str, heuristic: str | None = None) -> None:
        """Check that the setting ``name`` (or ``heuristic``, its teacher) is a policy."""
        heuristic = getattr(self, name) if heuristic is None else heuristic
        if heuristic is None:
            return
        import baselines

        try:  # a bad heuristic fails here, not after the env set-up
            baselines.make(heuristic)
        except ValueError as exc:
            raise ValueError(f"{self.path}.{name}: {exc}") from None


@dataclass(frozen=True, slots=True)
class AlgorithmConfig(_TrainGroup):
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

    path: ClassVar[str] = "TrainConfig.algorithm"

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
        self._plain_settings()
        self._one_of("algo", ALGORITHMS)
        self._at_least(("critic_warmup", "learning_starts"), 0)
        self._at_least(("n_steps", "batch_size", "n_epochs", "buffer_size"), 1)
        self._within(("learning_rate", "critic_warmup_lr", "clip_range"), 0, low_open=True)
        self._within(("target_kl",), 0, low_open=True, optional=True)
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
class NetworkConfig(_TrainGroup):
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
        critic: ``pointer`` only: what the value MLP reads, ``features`` (the whole
            feature vector) or ``context`` (the pooled part alone: then no weight of the
            model depends on the cluster's size or the windows, ``agents.portable``).
        accept_bias: With ``envs.residual``: the fixed prior added to the logit of the base
            heuristic's proposed action (``agents.residual``), > 0. At 8 an untrained
            policy accepts about 99% of proposals when sampling among some 20 valid
            actions, and always when acting deterministically.
    """

    path: ClassVar[str] = "TrainConfig.network"

    extractor: str = "pointer"
    net_arch: tuple[int, ...] = (64, 64)
    suspend_bias: float = 0.0
    critic: str = "features"
    accept_bias: float = 8.0

    def __post_init__(self) -> None:
        self._plain_settings()
        self._one_of("extractor", EXTRACTORS)
        sizes = self.net_arch
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
            raise self._fail("net_arch", f"must be a list of layer sizes, got {sizes!r}")
        if not all(is_int(n) and n >= 1 for n in sizes):
            raise self._fail("net_arch", f"must be layer sizes, ints >= 1, got {list(sizes)!r}")
        object.__setattr__(self, "net_arch", tuple(int(n) for n in sizes))
        self._within(("suspend_bias",), -math.inf)
        if self.suspend_bias and self.extractor != "pointer":
            raise self._fail("suspend_bias", f"needs the pointer extractor, not {self.extractor!r}")
        self._one_of("critic", CRITIC_INPUTS)
        if self.critic != "features" and self.extractor != "pointer":
            raise self._fail("critic", f"needs the pointer extractor, not {self.extractor!r}")
        self._within(("accept_bias",), 0, low_open=True)


@dataclass(frozen=True, slots=True)
class EnvsConfig(_TrainGroup):
    """The training envs: what they simulate, how many run, on which seeds, what reward.

    Attributes:
        cluster: Cluster preset (or dict) of the env.
        workloads: Workload presets; training envs alternate over them.
        clusters: More cluster presets (or dicts) to train on: with any, the training
            envs alternate over every (workload, cluster) pair, ``cluster`` first, and
            ``obs["gpus"]`` is padded to the largest one's GPUs (``gpu_rows``) so that
            they share one observation (with ``observe_cluster_summary`` they share one
            already); the pointer extractor pools the GPUs, so the
            model plays on any cluster after (``agents.portable``). Validation runs the
            workloads on ``cluster`` only.
        traces: Real traces to train on as well (``.csv`` / ``.json`` paths, or
            ``philly_vc`` for the six shipped Philly VCs): each on its own cluster, the
            smallest of 8-GPU V100 nodes on which the whole trace's offered load is at most
            ``trace_load`` (the ``philly_vc`` rule), each episode a run of ``num_jobs``
            consecutive jobs from a start drawn per episode, with the trace's real
            arrivals (workload ``cut="random"``). Their envs follow the (cluster,
            workload) pairs, ``obs["gpus"]`` is padded as with ``clusters``, and
            validation runs them too (on the validation seeds' runs).
        trace_load: Offered load the traces' clusters are sized for.
        trace_jobs: Jobs of each trace episode's run (none: ``num_jobs``); longer runs
            than the generated episodes let queues build as they do on the whole traces.
        num_jobs: Jobs per episode (none: each workload's own count, every job of a trace
            and 100 for a generator). From the preset, except with a trace among the
            workloads: then none, so a trace plays whole unless this is given (a trace cut
            short warns).
        pending_window: Env ``pending_window`` (``windows.pending``, its default and range
            the env's).
        running_window: Env ``running_window`` (``windows.running``, likewise).
        env_overrides: Further ``GPUShare-v0`` config keys, nested or flat (e.g.
            ``reward`` weights).
        n_envs: Parallel envs (default 32, stepped in turn in one process: the policy
            acts on all 32 observations in one forward pass, and with the default
            ``n_steps`` of 64 a rollout is 2,048 steps; docs/benchmarks.md#training).
        vec_env: How they run: ``"subproc"`` (``SubprocVecEnv``, one process each),
            ``"dummy"`` (``agents.envs.InProcessVecEnv``, in turn in this process: on few cores the
            policy then acts on a batch of ``n_envs`` observations at once), or
            ``"auto"`` (subprocesses when ``n_envs > 1``), or ``"ray"`` (each env in a Ray
            actor, on this machine or the running Ray cluster: ``gpushare-env[ray]``). The
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
        residual: Act on top of this heuristic (``agents.residual``): at every decision it
            proposes its action, the observation shows the proposal, and the policy
            (``pointer``, with the prior ``network.accept_bias`` on the proposal) accepts
            or overrides it; validation plays the agent the same way. A name
            ``baselines.make`` takes; ``None``: the agent decides alone.
    """

    path: ClassVar[str] = "TrainConfig.envs"

    # the env settings (``declared``): training's own default for the cluster and the
    # episode size, the env's for the windows; EnvConfig checks them (``_env_settings``)
    cluster: str | Mapping[str, Any] = declared("cluster", default="medium")
    workloads: tuple[str, ...] = ("philly", "philly_bursty")
    clusters: tuple[str | Mapping[str, Any], ...] = ()
    traces: tuple[str, ...] = ()
    trace_load: float = 0.9
    trace_jobs: int | None = None
    num_jobs: int | None = declared("num_jobs", default=300)
    pending_window: int = declared("windows.pending")
    running_window: int = declared("windows.running")
    env_overrides: Mapping[str, Any] = field(default_factory=dict)
    n_envs: int = 32
    vec_env: str = "dummy"
    train_seeds: tuple[int, ...] = PHILLY_TRAIN_SEEDS
    reward_scale: float = 0.01
    reward_reference: str | None = None
    reference_plays: int = 0
    curriculum_jobs: int | None = None
    curriculum_steps: int = 1_000_000
    residual: str | None = None

    def __post_init__(self) -> None:
        self._plain_settings()
        self._heuristic("residual")
        if isinstance(self.workloads, str) or not self.workloads:
            raise self._fail(
                "workloads", f"must name at least one workload, got {self.workloads!r}"
            )
        self._at_least(("n_envs",), 1)
        self._one_of("vec_env", VEC_ENVS)
        object.__setattr__(self, "workloads", tuple(self.workloads))
        if isinstance(self.clusters, (str, Mapping)):
            raise self._fail("clusters", f"must be a list of clusters, got {self.clusters!r}")
        object.__setattr__(self, "clusters", tuple(self.clusters))
        if isinstance(self.traces, (str, os.PathLike)):
            raise self._fail("traces", f"must be a list of trace paths, got {self.traces!r}")
        object.__setattr__(self, "traces", tuple(os.fspath(t) for t in self.traces))
        for trace in self.traces:
            if trace != PHILLY_VC_NAME and not _is_trace(trace):
                raise self._fail(
                    "traces",
                    f"each must be a .csv / .json trace or {PHILLY_VC_NAME!r}, got {trace!r}",
                )
        if self.traces and self.num_jobs is None:
            raise self._fail("traces", "need num_jobs (the jobs of each episode's run)")
        self._within(("trace_load",), 0, low_open=True)
        if self.trace_jobs is not None:
            self._at_least(("trace_jobs",), 1)
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
        base = _env_settings(self)
        try:
            for workload in self.workloads:
                EnvConfig.from_any(
                    {**base, **EnvConfig.flatten(self.env_overrides)}, workload=workload
                )
        except (TypeError, ValueError) as error:
            raise ValueError(f"TrainConfig.envs: {error}") from None


@dataclass(frozen=True, slots=True)
class ImitationConfig(_TrainGroup):
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
        bc_trace_heuristic: Teacher on the trace envs (``envs.traces``); ``None``:
            ``bc_heuristic``. One teacher per kind of data: the heuristic that does best
            on generated workloads need not on real traces.
        bc_sharing_heuristic: ``MODEL=TEACHER``: the teacher on the envs under that
            sharing model (``shares=fifo_pack``: an openb pod list's tasks); ``None``: the
            one the rules above give. A heuristic that suspends to stop starvation on
            Philly's jobs (``thesis``) doubles the wait of Alibaba's tasks.
        teacher_proposals: The teacher, if it takes proposals (``lookahead``), also rolls
            out the clone's own action in each state DAgger labels (expert iteration:
            the search starts from the network; ``lookahead.suggest``).
        bc_learning_rate: Adam step size of behaviour cloning.
        dagger_iterations: DAgger iterations after cloning (0: none); the clone after
            iteration ``i`` is saved as ``dagger_<i>.zip``.
        dagger_episodes: Episodes the clone plays per DAgger iteration.
        dagger_epochs: Passes over the aggregated data after each DAgger iteration.
        bc_suspend_weight: Weight of the teacher's ``suspend`` labels in the cloning and
            DAgger losses, > 0 (1: plain cross-entropy). The teacher suspends in a few
            percent of the states its clone visits, and the clone misses most of them.
        bc_dataset: A local Minari dataset (``gpushare-collect``) whose decisions are
            cloned too, after the ``bc_episodes`` recorded ones (its observations must
            have the training envs' shapes; ``agents.datasets``). ``None``: none.
        label_workers: Processes labelling the teacher's episodes (cloning and DAgger),
            each a whole episode with its own seed, gathered in seed order: the same
            labels for any number. 1: in the training process, one after another.
    """

    path: ClassVar[str] = "TrainConfig.imitation"

    bc_episodes: int = 0
    bc_epochs: int = 10
    bc_heuristic: str = "thesis"
    bc_trace_heuristic: str | None = None
    bc_sharing_heuristic: str | None = None
    teacher_proposals: bool = False
    bc_learning_rate: float = 1e-3
    dagger_iterations: int = 0
    dagger_episodes: int = 8
    dagger_epochs: int = 3
    bc_suspend_weight: float = 1.0
    bc_dataset: str | None = None
    label_workers: int = 1

    def __post_init__(self) -> None:
        self._plain_settings()
        self._at_least(("bc_episodes", "bc_epochs", "dagger_iterations", "dagger_epochs"), 0)
        self._at_least(("dagger_episodes", "label_workers"), 1)
        self._within(("bc_learning_rate",), 0, low_open=True)
        if not (
            isinstance(self.bc_suspend_weight, (int, float))
            and math.isfinite(self.bc_suspend_weight)
            and self.bc_suspend_weight > 0
        ):
            raise self._fail("bc_suspend_weight", f"must be > 0, got {self.bc_suspend_weight}")
        self._heuristic("bc_heuristic")
        self._heuristic("bc_trace_heuristic")
        if self.bc_sharing_heuristic is not None:
            from gpushare_env.sim.sharing import SHARING_MODELS

            model, sep, teacher = str(self.bc_sharing_heuristic).partition("=")
            if not sep or model.strip() not in SHARING_MODELS or not teacher.strip():
                raise self._fail(
                    "bc_sharing_heuristic",
                    f"must be MODEL=TEACHER with MODEL one of {sorted(SHARING_MODELS)}, "
                    f"got {self.bc_sharing_heuristic!r}",
                )
            self._heuristic("bc_sharing_heuristic", teacher.strip())
        if self.bc_dataset is not None and not (
            isinstance(self.bc_dataset, str) and self.bc_dataset.strip()
        ):
            raise self._bad("bc_dataset", "a Minari dataset id")


@dataclass(frozen=True, slots=True)
class EvaluationConfig(_TrainGroup):
    """The periodic evaluation against ``thesis`` on held-out seeds (model selection).

    Attributes:
        eval_seeds: Held-out seeds of the periodic evaluation (empty: no evaluation).
        eval_every: Steps between evaluations.
        select_by: What ``best_model.zip`` is chosen by (``SELECT_BY``): ``mean``, the
            mean over the validation episodes of the mean-JCT ratio to ``thesis`` plus
            the mean makespan ratio's excess over 1; ``worst``, the largest mean-JCT
            ratio of any validation episode (each config and seed), for a model judged
            by the trace it loses most on.
        eval_workers: Processes that score the saved checkpoints while training goes on
            (one torch thread each); 0: evaluate in the training process, between updates
            (the same history and best model, training waits).
    """

    path: ClassVar[str] = "TrainConfig.evaluation"

    eval_seeds: tuple[int, ...] = VALIDATION_SEEDS
    eval_every: int = 20_000
    select_by: str = "mean"
    eval_workers: int = 1

    def __post_init__(self) -> None:
        self._plain_settings()
        _seed_tuple(self, "eval_seeds", empty=True)
        _no_test_seeds(self, "eval_seeds")
        self._at_least(("eval_every",), 1)
        self._one_of("select_by", SELECT_BY)
        self._at_least(("eval_workers",), 0)


@dataclass(frozen=True, slots=True)
class RunConfig(_TrainGroup):
    """The run: its length, seed, output and process settings.

    Attributes:
        timesteps: Environment steps of RL training (summed over envs).
        seed: Seed of the model, the envs' seed streams and the warm start.
        out: Output folder.
        resume: A saved model to continue training from, with this run's optimisation
            settings (``None``: a new model).
        deterministic_torch: ``torch.use_deterministic_algorithms(True)``.
        torch_threads: Threads of this process's torch (the policy's forward passes, its
            updates and the behaviour-cloning / DAgger fits). ``None`` (default): when
            the envs run in it (``vec_env="dummy"``), every core this process may use but
            one per evaluation process (``torch_threads_for``), one beside env
            subprocesses or Ray actors.
        progress_bar: Show a progress bar.
        verbose: SB3 verbosity.
    """

    path: ClassVar[str] = "TrainConfig.run"

    timesteps: int = 200_000
    seed: int = 0
    out: str = "runs/agent"
    resume: str | None = None
    deterministic_torch: bool = True
    torch_threads: int | None = None
    progress_bar: bool = True
    verbose: int = 0

    def __post_init__(self) -> None:
        self._plain_settings()
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


def _seed_tuple(group: _TrainGroup, name: str, *, empty: bool) -> None:
    """Store ``group.name`` as a tuple of seeds, ints >= 0 (numpy's generators refuse
    negative seeds); refuse an empty tuple unless ``empty``."""
    seeds = getattr(group, name)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (Sequence, np.ndarray)):
        raise group._fail(name, f"must be a list of seeds, got {seeds!r}")
    if not all(is_int(s) for s in seeds):
        raise group._fail(name, f"must be ints, got {list(seeds)!r}")
    values = tuple(int(s) for s in seeds)
    if any(s < 0 for s in values):
        raise group._fail(name, f"must be >= 0, got {min(values)}")
    if not values and not empty:
        raise group._fail(name, "must hold at least one seed (got none: an empty range?)")
    object.__setattr__(group, name, values)


def _no_test_seeds(group: _TrainGroup, name: str) -> None:
    if test := sorted(set(getattr(group, name)) & set(PHILLY_TEST_SEEDS)):
        raise group._fail(
            name, f"include the test seeds {test}: they are never used for training or model "
            "selection"
        )  # fmt: skip


#: The groups of ``TrainConfig`` by attribute name, in order.
GROUPS: dict[str, type[_TrainGroup]] = {
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
    "clusters": "envs.clusters",
    "traces": "envs.traces",
    "trace_load": "envs.trace_load",
    "trace_jobs": "envs.trace_jobs",
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
    "critic": "network.critic",
    "train_seeds": "envs.train_seeds",
    "eval_seeds": "evaluation.eval_seeds",
    "eval_every": "evaluation.eval_every",
    "eval_workers": "evaluation.eval_workers",
    "reward_scale": "envs.reward_scale",
    "reward_reference": "envs.reward_reference",
    "reference_plays": "envs.reference_plays",
    "curriculum_jobs": "envs.curriculum_jobs",
    "curriculum_steps": "envs.curriculum_steps",
    "residual": "envs.residual",
    "accept_bias": "network.accept_bias",
    "select_by": "evaluation.select_by",
    "critic_warmup": "algorithm.critic_warmup",
    "critic_warmup_lr": "algorithm.critic_warmup_lr",
    "bc_episodes": "imitation.bc_episodes",
    "bc_epochs": "imitation.bc_epochs",
    "bc_heuristic": "imitation.bc_heuristic",
    "bc_trace_heuristic": "imitation.bc_trace_heuristic",
    "bc_sharing_heuristic": "imitation.bc_sharing_heuristic",
    "teacher_proposals": "imitation.teacher_proposals",
    "bc_learning_rate": "imitation.bc_learning_rate",
    "dagger_iterations": "imitation.dagger_iterations",
    "dagger_episodes": "imitation.dagger_episodes",
    "dagger_epochs": "imitation.dagger_epochs",
    "bc_suspend_weight": "imitation.bc_suspend_weight",
    "bc_dataset": "imitation.bc_dataset",
    "label_workers": "imitation.label_workers",
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
        if self.envs.residual is not None:
            if self.network.extractor != "pointer" or algo == "dqn":
                raise ValueError(
                    "TrainConfig.envs.residual needs the pointer extractor "
                    "(TrainConfig.network.extractor) and PPO or MaskablePPO: its per-slot "
                    "logits carry the prior on the proposal"
                )
            imitation = self.imitation
            if imitation.bc_episodes or imitation.bc_dataset is not None:
                raise ValueError(
                    "TrainConfig.envs.residual: no behaviour cloning with a residual agent "
                    "(TrainConfig.imitation.bc_episodes, bc_dataset): it starts as its base "
                    "heuristic already"
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
        _, groups = _KEYS.split(values)
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
        return _KEYS.flat(self)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every setting, in the flat form (the one recorded runs and
        the zoo's cards keep; ``from_any`` reads it back)."""
        return copy.deepcopy({
            key: dict(value) if isinstance(value, Mapping) else value
            for key, value in self.flat().items()
        })  # fmt: skip


class _TrainKeys(KeyPaths):
    """The keys of ``TrainConfig``, with its errors: an unknown key is refused where it
    stands, and a setting given twice is named by its second key."""

    name_instances = False

    def check_keys(self, spec: Mapping[str, Any]) -> None:
        """Nothing: ``settings`` refuses an unknown key when it reaches it."""

    def unknown_key(self, key: Any) -> ValueError:
        return ValueError(
            f"{self.owner}: unknown key {key!r}; allowed: the groups {list(self.groups)} or "
            f"the flat keys {list(self.flat_keys)}"
        )

    def twice(self, path: str, first: str, second: str) -> ValueError:
        return ValueError(
            f"{self.owner}.{path} given twice (as {second!r} and by another key: the nested "
            "key or the flat one)"
        )


_KEYS = _TrainKeys("TrainConfig", GROUPS, FLAT_KEYS)


def _paths(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec``'s settings by path (``"imitation.bc_epochs"``), nested and flat keys alike."""
    return _KEYS.settings(spec)


def _is_trace(workload: Any) -> bool:
    """True for a workload given as a ``.csv`` / ``.json`` trace path."""
    if not isinstance(workload, (str, os.PathLike)):
        return False
    return Path(workload).suffix.lower() in (".csv", ".json")


def _env_settings(envs: EnvsConfig) -> dict[str, Any]:
    """The env settings of ``envs`` (its fields ``declared`` from the env's settings), by
    their flat key (``pending_window``), in field order."""
    return {str(entry.flat): getattr(envs, name) for name, entry in declared_fields(EnvsConfig)}


def env_configs(config: TrainConfig) -> list[dict[str, Any]]:
    """The ``GPUShare-v0`` configs of a run, one per (cluster, workload), in the flat form
    (so the overrides, nested or flat, override setting by setting, and recorded configs
    keep one form)."""
    envs = config.envs
    settings = _env_settings(envs)
    del settings["cluster"]  # each entry's own
    base: dict[str, Any] = {**settings, **EnvConfig.flatten(envs.env_overrides)}
    clusters = [envs.cluster, *envs.clusters]
    traces = _trace_pairs(envs)
    trace_jobs = {} if envs.trace_jobs is None else {"num_jobs": envs.trace_jobs}
    summarised = EnvConfig.from_any(base).observation.cluster_summary  # one shape already
    if (envs.clusters or traces) and not summarised:  # one shape: the largest cluster's GPUs
        from gpushare_env.sim import make_cluster

        every = [*clusters, *(cluster for cluster, _ in traces)]
        base["gpu_rows"] = max(make_cluster(cluster).num_gpus for cluster in every)
    return [
        *(
            {"cluster": cluster, **base, "workload": workload}
            for cluster in clusters
            for workload in envs.workloads
        ),
        *(
            {"cluster": cluster, **base, **trace_jobs, "workload": workload}
            for cluster, workload in traces
        ),
    ]


def _num_generated(envs: EnvsConfig) -> int:
    """How many of ``env_configs`` are (cluster, workload) pairs; the trace envs follow."""
    return len(envs.workloads) * (1 + len(envs.clusters))


def validation_configs(
    config: TrainConfig, configs: Sequence[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The env configs a run validates on: its workloads on ``cluster``, then its traces
    (``env_configs``' first and last entries; pass ``configs`` if already built)."""
    configs = list(env_configs(config) if configs is None else configs)
    envs = config.envs
    return configs[: len(envs.workloads)] + configs[_num_generated(envs) :]


def teachers(config: TrainConfig, configs: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """The imitation teacher of each of ``env_configs``: ``bc_heuristic``, on the trace
    envs ``bc_trace_heuristic`` when given, and on the envs under the sharing model that
    ``bc_sharing_heuristic`` names its teacher (pass ``configs`` if already built)."""
    imitation, envs = config.imitation, config.envs
    on_traces = imitation.bc_trace_heuristic or imitation.bc_heuristic
    names = [imitation.bc_heuristic] * _num_generated(envs) + [on_traces] * len(trace_paths(envs))
    if imitation.bc_sharing_heuristic is None:
        return names
    model, _, teacher = imitation.bc_sharing_heuristic.partition("=")
    configs = env_configs(config) if configs is None else configs
    return [
        teacher.strip() if EnvConfig.from_any(c).simulator.sharing == model.strip() else name
        for name, c in zip(names, configs, strict=True)
    ]


def trace_paths(envs: EnvsConfig) -> list[str]:
    """``envs.traces`` with ``philly_vc`` spelled out as the six shipped traces."""
    from gpushare_env.workloads.real_traces import PHILLY_VC_TRACES, philly_vc_path

    paths: list[str] = []
    for trace in envs.traces:
        if trace == PHILLY_VC_NAME:
            paths.extend(str(philly_vc_path(name)) for name in PHILLY_VC_TRACES)
        else:
            paths.append(trace)
    return paths


def _trace_pairs(envs: EnvsConfig) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(sized cluster, random-cut workload) of each trace, the cluster sized by the whole
    trace at ``envs.trace_load``."""
    if not envs.traces:
        return []
    from gpushare_env.workloads import WorkloadConfig, sized_cluster
    from gpushare_env.workloads.trace_cut import read_trace

    pairs = []
    for path in trace_paths(envs):
        whole = read_trace(WorkloadConfig(kind="trace", path=path))
        pairs.append((sized_cluster(whole.jobs, envs.trace_load), {"path": path, "cut": "random"}))
    return pairs
