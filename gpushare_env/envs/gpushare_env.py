"""``GPUShare-v0``: the Gymnasium environment over the GPU-sharing cluster simulator."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from gpushare_env import compiled
from gpushare_env.envs.config import REWARD_COMPONENTS, EnvConfig
from gpushare_env.envs.observation import (
    PENDING_FEATURES,
    StateEncoder,
    observation_bounds,
    observation_space,
    split_observation,
)
from gpushare_env.envs.render import render_ansi, render_rgb
from gpushare_env.sim.cluster import Cluster, make_cluster
from gpushare_env.sim.decisions import ADVANCE, Advance, Decision, Schedule, Suspend
from gpushare_env.sim.engine import EventKind, InvalidDecision, SimConfig, Simulator
from gpushare_env.sim.placement import STRATEGIES
from gpushare_env.sim.types import JobSpec, JobStatus
from gpushare_env.sim.view import SimView
from gpushare_env.workloads.config import WorkloadConfig
from gpushare_env.workloads.jobs import fit_to_cluster

__all__ = ["GPUShareEnv", "InvalidActionError"]

_ARRIVAL = EventKind.ARRIVAL
_FINISH = EventKind.FINISH
_SAMPLED = EventKind.SAMPLED
_SUSPEND_DONE = EventKind.SUSPEND_DONE
_RESUME_DONE = EventKind.RESUME_DONE
_NUM_STRATEGIES = len(STRATEGIES)
_JCT, _MAKESPAN, _UTIL, _SLOWDOWN, _STARVATION, _OVERHEAD, _INVALID = range(7)


class InvalidActionError(ValueError):
    """An invalid action with ``invalid_action="raise"`` (names the action and why)."""


class GPUShareEnv(gym.Env[dict[str, Any], np.int64]):
    """Schedule deep-learning training jobs on a GPU cluster whose GPUs can be shared.

    ## Description

    A cluster of nodes x GPUs runs data-parallel training jobs; several jobs may share a
    GPU as long as their memory fits (at most ``max_jobs_per_gpu`` workers), at the cost
    of co-location slowdown. Jobs arrive over time; the agent decides which waiting job
    to start with which placement strategy, and which running job to suspend
    (checkpoint; it waits again and pays a restart overhead when placed again). Time is
    event-driven (a semi-Markov decision process): the agent is asked whenever it has a
    real choice (after an arrival, a completion, a sampling, suspend or resume finishing);
    several decisions can be taken at one instant, and ``advance`` lets time run to the
    next event. States in which ``advance`` is the only valid action are skipped
    (``auto_advance``), their reward is added to the previous decision's.

    ## Action Space

    ``Discrete(4 W + R + 1)`` with ``W = pending_window``, ``R = running_window``:

    * ``4 * slot + s`` (``slot < W``): schedule the ``slot``-th waiting job (by arrival;
      suspended jobs included, scheduling one resumes it) with strategy ``s`` of
      ``("exclusive", "pack", "spread", "min_frag")``;
    * ``4 W + j`` (``j < R``): suspend the ``j``-th running job (in the order jobs
      (re)started);
    * ``4 W + R``: advance, let time run to the next event.

    ``action_masks()`` and ``info["action_mask"]`` give the exact valid set: a schedule
    is valid iff the slot holds a job and the strategy finds GPUs for it now, a suspend
    iff the slot holds a running job, advance iff an event is still to come.
    ``encode_decision`` / ``decode_action`` convert to and from the simulator's
    ``Schedule`` / ``Suspend`` / ``ADVANCE`` decisions.

    ## Observation Space

    A ``Dict`` of flat ``float32`` ``Box`` es in ``[0, 1]`` (SB3 ``MultiInputPolicy``).
    Times use ``log_time(t) = min(1, log10(1 + t[s]) / 7)``. Matrices are flattened row
    by row: ``obs["gpus"].reshape(G, 6)``, ``obs["pending"].reshape(W, 16)``,
    ``obs["running"].reshape(R, 17)``; empty slots are all zero (``valid`` = 0).

    * ``gpus`` (G x 6), per GPU: ``free_memory`` (free / capacity), ``load`` (compute
      load U_g / max_jobs_per_gpu), ``workers`` (workers holding memory /
      max_jobs_per_gpu), ``node`` (node index / (nodes - 1)), ``speed`` (speed factor /
      fastest GPU), ``capacity`` (memory / largest GPU).
    * ``frag_hist`` (10), shares of all GPUs, summing to 1: ``idle``; shared GPUs with a
      free worker slot binned by free memory ``shared_free_0_2gib``,
      ``shared_free_2_4gib``, ``shared_free_4_6gib``, ``shared_free_6_8gib``,
      ``shared_free_8_12gib``, ``shared_free_12_16gib``, ``shared_free_16_24gib``,
      ``shared_free_24_infgib``; ``no_slot`` (max_jobs_per_gpu workers). Its size does
      not depend on the cluster.
    * ``pending`` (W x 16), the first W waiting jobs by arrival: ``valid``, ``num_gpus``
      (log2(1 + n) / log2(1 + G)), ``memory`` (per-worker memory / largest GPU),
      ``intensity`` (GPU intensity u), a model one-hot ``model_resnet50``,
      ``model_vgg16``, ``model_inception_v3``, ``model_googlenet``, ``model_alexnet``,
      ``model_resnet152``, ``wait`` (log_time of the current wait), ``sampled`` (step time
      measured), ``duration_known`` (a prediction exists under ``duration_info``),
      ``predicted_remaining`` (log_time of the predicted remaining solo time, 0 if
      unknown), ``suspended``, ``progress`` (fraction of iterations done).
    * ``running`` (R x 17), the first R running jobs: the same columns (``wait`` is the
      total time waited so far) plus ``speed`` (current speed x solo V100 / fastest GPU);
      with ``observe_held_time`` (R x 18) also ``held_time`` (log_time of the time since
      the job got its current GPUs: its last start or resume).
    * With ``observe_placement`` (experimental), the pending rows end with ``pack_load``
      and ``spread_load`` (the largest ``U_g + u`` on the GPUs ``pack`` / ``spread``
      would pick, / max_jobs_per_gpu, 0 when it finds none) and the running rows with
      ``shares_gpu`` (1 if another job holds memory on one of its GPUs).
    * With ``observe_drain`` (experimental), the pending and running rows end with
      ``drain_share``: ``r / (r + D)``, ``r`` the job's predicted remaining solo time (0
      if unknown), ``D`` the sum of ``remaining x GPUs`` over the jobs in the system / G
      (the yardstick of the thesis's critical-path rule).
    * With ``observe_rivals`` (experimental), the running rows also hold, before
      ``drain_share``, ``rival_wait`` and ``rival_remaining``: over the waiting jobs of the
      whole queue that request as many GPUs as the job, log_time of the longest wait and
      of the shortest predicted remaining solo time (0 if none).
    * ``global`` (15): ``time`` (log_time), ``waiting``, ``backlog`` (waiting beyond the
      window), ``running``, ``in_transition`` (suspending or resuming), ``in_system``,
      ``finished`` (all as shares of the episode's jobs), ``utilisation`` (sum of
      min(1, U_g) / G), ``allocation`` (GPUs with a worker / G), ``free_memory`` (share
      of all memory), ``fragmentation`` (share of free memory on partly used GPUs that
      cannot host the median worker), ``expected_fragment`` (FGD expected fragment /
      free memory), ``waiting_gpus`` (GPUs requested by waiting jobs / G, capped at 1),
      ``idle_gpus`` (share), ``can_advance`` (1 if an event is still to come).

    ## Rewards

    The reward is the weighted sum (``config["reward"]``) of named terms, all in
    ``info["reward_terms"]``; ``T = time_scale_s`` (default 3600 s) and the terms
    integrate over the simulated time a step lets pass:

    * ``jct``: ``-(jobs in system) x elapsed / T``. Over an episode it sums to
      ``-sum of job completion times / T``; default weight 1 (optimises mean JCT).
    * ``makespan``: ``-elapsed / T`` from the first arrival to the last completion.
    * ``utilisation``: ``+(sum of min(1, U_g) / G) x elapsed / T``.
    * ``slowdown``: ``-sum over jobs in system of elapsed / solo duration``; sums to
      ``-sum of slowdowns``.
    * ``starvation``: ``-integral of (sum of current waits) / T^2``; sums to ``-sum over
      waiting stints of (wait / T)^2 / 2``: long waits cost more than several short ones.
    * ``overhead``: ``-(GPUs held by suspending or resuming jobs) x elapsed / T``; sums to
      ``-GPU-seconds lost to suspend / resume overheads / T``.
    * ``invalid``: ``-invalid_penalty`` for an invalid (no-op) action; default weight 1.

    ## Starting State

    ``reset`` draws a new workload from the env's generator (``EnvConfig.workload``,
    ``num_jobs`` jobs; jobs that can never fit the cluster are dropped and counted in
    ``info["rejected_jobs"]``), starts an empty cluster at time 0 and runs to the first
    decision point (the first arrival). The same ``seed`` gives the same workload and the
    same measurement noise whatever the policy, so policies compared on ``reset(seed=s)``
    see identical jobs. ``reset(options={"jobs": [...]})`` (or ``config["jobs"]``) replays
    a given list of ``JobSpec``.

    ## Episode End

    Terminated when every job has finished. Truncated after ``max_decisions`` decisions
    (default ``50 x jobs + 1000``), when simulated time reaches ``max_time_s`` (if set),
    or if no action is valid (cannot happen on homogeneous clusters;
    ``info["deadlock"]``). The final ``info["metrics"]`` holds every metric of
    ``gpushare_env.metrics.summarize`` over the finished jobs.

    ## Arguments

    ``gym.make("GPUShare-v0", config={...}, render_mode=None)``; ``config`` is a dict or
    an ``EnvConfig`` (keys: ``cluster``, ``workload``, ``num_jobs``, ``jobs``,
    ``pending_window``, ``running_window``, ``reward``, ``time_scale_s``,
    ``invalid_action``, ``invalid_penalty``, ``duration_info``, ``sample_iterations``,
    ``sample_noise``, ``max_decisions``, ``max_time_s``, ``auto_advance``, ``on_unfit``,
    ``max_suspends_per_job``, ``observe_held_time``, ``observe_placement``,
    ``observe_drain``, ``observe_rivals``, ``engine``;
    see ``EnvConfig``); keyword arguments override single keys. ``engine="compiled"``
    runs the episode in C (``gpushare_env.compiled``): the same observations, masks,
    rewards and infos bit for bit, several times faster, without ``view``,
    ``simulator``, rendering or pickling (which need ``engine="python"``). The default,
    ``"auto"``, runs compiled until one of those is asked for, then replays the
    episode's actions on the Python engine and carries on there.
    Unknown keys are rejected with the allowed ones listed. ``render_mode`` is ``"ansi"``
    (text) or ``"rgb_array"`` (a nodes x GPUs picture of memory and load).

    Info keys: ``action_mask``, ``reward_terms``, ``time_s``, ``jobs_done``,
    ``decisions``, ``invalid`` (every step); ``elapsed_s``, the simulated time the step
    let run, the SMDP sojourn time (every step but reset); ``num_jobs``,
    ``rejected_jobs`` (reset); ``metrics`` and ``deadlock`` (last step).

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 (gymnasium's own pattern)

    def __init__(
        self,
        config: EnvConfig | dict[str, Any] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self.config = EnvConfig.from_any(config, **overrides)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode
        cfg = self.config
        self.cluster: Cluster = make_cluster(cfg.cluster)
        self.pending_window = cfg.pending_window
        self.running_window = cfg.running_window
        self._num_schedule_actions = cfg.pending_window * _NUM_STRATEGIES
        self._advance_action = self._num_schedule_actions + cfg.running_window
        self.action_space = spaces.Discrete(self._advance_action + 1)
        self.observation_space = observation_space(
            self.cluster.num_gpus,
            cfg.pending_window,
            cfg.running_window,
            cfg.observe_held_time,
            cfg.observe_placement,
            cfg.observe_drain,
            cfg.observe_rivals,
        )
        self._sim_config = SimConfig(
            sample_iterations=cfg.sample_iterations,
            sample_noise=cfg.sample_noise,
            duration_info=cfg.duration_info,
        )
        self._workload = WorkloadConfig.from_any(cfg.workload)
        self._trace_jobs: list[JobSpec] | None = None
        self._weights = cfg.reward.weights()
        self._active_weights = [(i, w) for i, w in enumerate(self._weights) if w != 0.0]
        self._inv_scale = 1.0 / cfg.time_scale_s
        self._inv_gpus = 1.0 / self.cluster.num_gpus
        self._max_memory = float(self.cluster.gpu_memory_gib.max())
        self._sim: Simulator | None = None
        self._encoder: StateEncoder | None = None
        self._core: Any = None  # gpushare_env.compiled._core.Core on the compiled engine
        self._actions: list[int] = []  # the compiled episode's actions (to replay them)
        self._bounds = observation_bounds(
            self.cluster.num_gpus,
            cfg.pending_window,
            cfg.running_window,
            cfg.observe_held_time,
            cfg.observe_placement,
            cfg.observe_drain,
            cfg.observe_rivals,
        )
        self._over = True

    # ------------------------------------------------------------ public API
    @property
    def view(self) -> SimView:
        """Read-only structured state of the current episode (what heuristics read)."""
        self._require_python_engine("env.view")
        if self._encoder is None:
            raise RuntimeError("GPUShare-v0: call reset() before reading the view")
        return self._encoder.view

    @property
    def simulator(self) -> Simulator:
        """The episode's simulator, for tests and diagnostics: do not change it."""
        self._require_python_engine("env.simulator")
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._sim

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the valid actions now (MaskablePPO's hook).  # (A,) bool"""
        if self._core is not None:
            return self._core.mask_array.copy()
        if self._encoder is None:
            raise RuntimeError("GPUShare-v0: call reset() before action_masks()")
        return self._encoder.mask.copy()

    def decode_action(self, action: int | np.integer) -> Decision:
        """The simulator decision an action index stands for in the current state.

        Raises:
            ValueError: the index is outside the action space or addresses an empty slot.
        """
        pending_ids, running_ids = self._window_ids()
        a = int(action)
        if not 0 <= a <= self._advance_action:
            raise ValueError(f"action {a} is outside Discrete({self._advance_action + 1})")
        if a == self._advance_action:
            return ADVANCE
        if a < self._num_schedule_actions:
            slot, strategy = divmod(a, _NUM_STRATEGIES)
            if slot >= len(pending_ids):
                raise ValueError(
                    f"action {a} schedules pending slot {slot}, but only "
                    f"{len(pending_ids)} job(s) wait in the window"
                )
            return Schedule(pending_ids[slot], STRATEGIES[strategy])
        slot = a - self._num_schedule_actions
        if slot >= len(running_ids):
            raise ValueError(
                f"action {a} suspends running slot {slot}, but only "
                f"{len(running_ids)} job(s) run in the window"
            )
        return Suspend(running_ids[slot])

    def encode_decision(self, decision: Decision) -> int:
        """The action index of a simulator decision (``Schedule``, ``Suspend``, ``ADVANCE``).

        Raises:
            ValueError: the job is not in the pending / running window, or the strategy
                is unknown.
            TypeError: ``decision`` is not a decision.
        """
        pending_ids, running_ids = self._window_ids()
        if isinstance(decision, Advance):
            return self._advance_action
        if isinstance(decision, Schedule):
            if decision.strategy not in STRATEGIES:
                raise ValueError(
                    f"unknown strategy {decision.strategy!r}; allowed: {list(STRATEGIES)}"
                )
            try:
                slot = pending_ids.index(decision.job_id)
            except ValueError:
                raise ValueError(
                    f"job {decision.job_id} is not in the pending window (the first "
                    f"{self.pending_window} waiting jobs by arrival: {pending_ids}); "
                    "only those can be scheduled"
                ) from None
            return slot * _NUM_STRATEGIES + STRATEGIES.index(decision.strategy)
        if isinstance(decision, Suspend):
            try:
                slot = running_ids.index(decision.job_id)
            except ValueError:
                raise ValueError(
                    f"job {decision.job_id} is not in the running window (the first "
                    f"{self.running_window} running jobs: {running_ids}); "
                    "only those can be suspended"
                ) from None
            return self._num_schedule_actions + slot
        raise TypeError(f"not a decision: {decision!r}")

    # -------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a new workload (see *Starting State*).

        Args:
            seed: Seeds the env's generator; the workload and the measurement noise are
                drawn from independent children of it.
            options: ``{"jobs": [JobSpec, ...]}`` replays a given workload this episode.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        given = options.pop("jobs", None)
        if options:
            raise ValueError(f"reset: unknown option(s) {sorted(options)}; allowed: ['jobs']")
        # always spawn both children, so the noise stream does not depend on the workload
        workload_rng, noise_rng = self.np_random.spawn(2)
        jobs, rejected = self._episode_jobs(given, workload_rng)
        sim = Simulator(jobs, self.cluster, self._sim_config, rng=noise_rng)
        self._sim = sim
        engine = self.config.engine
        if engine == "compiled" or (engine == "auto" and compiled.available()):
            return self._reset_compiled(sim, rejected)
        return self._reset_python(sim, rejected)

    def _reset_python(self, sim: Simulator, rejected: int) -> tuple[dict[str, Any], dict[str, Any]]:
        jobs = [job.spec for job in sim.jobs.values()]
        self._core = None
        self._encoder = StateEncoder(
            sim,
            SimView(sim),
            self.pending_window,
            self.running_window,
            self.config.max_suspends_per_job,
            self.config.observe_held_time,
            self.config.observe_placement,
            self.config.observe_drain,
            self.config.observe_rivals,
        )
        self._num_jobs = len(jobs)
        self._decision_cap = self.config.decision_cap(len(jobs))
        self._inv_solo = {j.job_id: 1.0 / j.solo_duration_s for j in jobs}
        self._decisions = 0
        self._queued_since_sum = 0.0  # [s] over waiting jobs
        self._inv_solo_sum = 0.0  # [1/s] over jobs in system
        self._transition_gpus = 0  # GPUs held by suspending / resuming jobs
        self._arrived = False
        self._deadlock = False
        self._terms = [0.0] * len(REWARD_COMPONENTS)
        self._settle()
        self._terms = [0.0] * len(REWARD_COMPONENTS)  # time before the first decision is free
        self._over = sim.done
        info = self._info(invalid=False)
        info["num_jobs"] = len(jobs)
        info["rejected_jobs"] = rejected
        info["deadlock"] = self._deadlock
        return self._encoder.observe(), info

    def step(
        self, action: int | np.integer
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Carry out one action, then run to the next decision point."""
        if self._over:
            raise RuntimeError("GPUShare-v0: the episode is over (or not started): call reset()")
        if self._core is not None:
            return self._step_compiled(action)
        return self._step_python(action)

    def _step_python(
        self, action: int | np.integer
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        encoder = self._encoder
        sim = self._sim
        assert encoder is not None and sim is not None
        self._terms = terms = [0.0] * len(REWARD_COMPONENTS)
        started_s = sim.now_s
        a = int(action)
        invalid = not (0 <= a <= self._advance_action and encoder.mask[a])
        if not invalid:
            try:
                self._apply(a)
            except InvalidDecision:  # pragma: no cover - the mask is exact (tested)
                invalid = True
        if invalid:
            if self.config.invalid_action == "raise":
                raise InvalidActionError(self._why_invalid(a))
            terms[_INVALID] = -self.config.invalid_penalty
        self._decisions += 1
        if not invalid:
            self._settle()
        terminated = sim.done
        truncated = not terminated and (
            self._decisions >= self._decision_cap or self._time_capped() or self._deadlock
        )
        self._over = terminated or truncated
        reward = 0.0
        for i, weight in self._active_weights:
            reward += weight * terms[i]
        info = self._info(invalid)
        info["elapsed_s"] = sim.now_s - started_s
        if self._over:
            info["metrics"] = self._metrics()
            info["deadlock"] = self._deadlock
        return encoder.observe(), reward, terminated, truncated, info

    def render(self) -> str | np.ndarray | None:
        """A text view (``"ansi"``) or an RGB picture (``"rgb_array"``) of the cluster."""
        if self.render_mode is None:
            gym.logger.warn(
                "GPUShare-v0: render() without a render_mode; "
                'pass render_mode="ansi" or "rgb_array" to gym.make'
            )
            return None
        self._require_python_engine("render()")
        encoder = self._require_encoder()
        if self.render_mode == "ansi":
            return render_ansi(encoder)
        return render_rgb(encoder)

    # ------------------------------------------------------- compiled engine
    def _reset_compiled(
        self, sim: Simulator, rejected: int
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        cfg = self.config
        num_jobs = len(sim.jobs)
        self._encoder = None
        self._num_jobs = num_jobs
        self._decisions = 0
        self._actions = []
        self._core = core = compiled.new_core(
            sim,
            pending_window=self.pending_window,
            running_window=self.running_window,
            max_suspends_per_job=cfg.max_suspends_per_job,
            held_time=cfg.observe_held_time,
            placement=cfg.observe_placement,
            drain=cfg.observe_drain,
            rivals=cfg.observe_rivals,
            num_pending_features=len(PENDING_FEATURES),
            weights=list(self._weights),
            time_scale_s=cfg.time_scale_s,
            auto_advance=cfg.auto_advance,
            max_time_s=cfg.max_time_s,
            decision_cap=cfg.decision_cap(num_jobs),
            invalid_penalty=cfg.invalid_penalty,
        )
        core.start()
        self._over = core.done
        info = self._info(invalid=False)
        info["num_jobs"] = num_jobs
        info["rejected_jobs"] = rejected
        info["deadlock"] = core.deadlock
        return split_observation(core.buffer_array.copy(), self._bounds), info

    def _step_compiled(
        self, action: int | np.integer
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        core = self._core
        started_s = core.now
        a = int(action)
        invalid = not (0 <= a <= self._advance_action and core.mask_array[a])
        if invalid and self.config.invalid_action == "raise":
            raise InvalidActionError(self._why_invalid(a))
        reward, terminated, truncated = core.step(a, invalid)
        self._actions.append(a)
        self._decisions = core.decisions
        self._over = terminated or truncated
        info = self._info(invalid)
        info["elapsed_s"] = core.now - started_s
        if self._over:
            info["metrics"] = self._metrics()
            info["deadlock"] = core.deadlock
        obs = split_observation(core.buffer_array.copy(), self._bounds)
        return obs, reward, terminated, truncated, info

    def _require_python_engine(self, what: str) -> None:
        if self._core is None:
            return
        if self.config.engine == "auto":
            self._switch_to_python()
            return
        if self.config.engine == "compiled":
            raise RuntimeError(
                f'GPUShare-v0: {what} needs engine="python" (the compiled engine keeps the '
                "episode's state in C; policies that read the view, such as the heuristics "
                "of baselines, run on the Python engine)"
            )

    def _num_waiting(self) -> int:
        if self._core is not None:
            return int(self._core.num_waiting)
        return self.view.num_waiting

    def _switch_to_python(self) -> None:
        """Carry on the episode on the Python engine: replay its actions there.

        Both engines play an episode bit for bit alike, so after the replay the Python
        objects (``view``, ``simulator``) describe exactly the current state; the
        episode then continues on the Python engine (``engine="auto"``).
        """
        sim = self._sim
        assert sim is not None
        actions = self._actions
        over = self._over
        self._reset_python(sim, rejected=0)
        for a in actions:
            self._step_python(a)
        self._over = over

    def __getstate__(self) -> dict[str, Any]:
        self._require_python_engine("pickling")
        return self.__dict__.copy()

    def _window_ids(self) -> tuple[list[int], list[int]]:
        """Job ids of the pending and of the running window (what actions address)."""
        if self._core is not None:
            return self._core.pending_ids(), self._core.running_ids()
        encoder = self._require_encoder()
        return encoder.pending_ids, encoder.running_ids

    @property
    def events_processed(self) -> int:
        """Simulator events of the current episode so far (either engine)."""
        if self._core is not None:
            return int(self._core.events_processed)
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._sim.events_processed

    # ------------------------------------------------------------ internals
    def _require_encoder(self) -> StateEncoder:
        if self._encoder is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._encoder

    def _episode_jobs(
        self, given: Sequence[JobSpec] | None, rng: np.random.Generator
    ) -> tuple[list[JobSpec], int]:
        cfg = self.config
        num_gpus = self.cluster.num_gpus
        if given is not None:
            jobs = list(given)
            if not jobs or not all(isinstance(j, JobSpec) for j in jobs):
                raise ValueError('reset: options["jobs"] must be a non-empty list of JobSpec')
        elif cfg.jobs is not None:
            jobs = list(cfg.jobs)
        elif self._workload.kind == "trace":
            if self._trace_jobs is None:
                # read once, with a fixed generator for model columns left empty, so every
                # episode (and every env) replays the same trace
                self._trace_jobs = self._workload.generate(
                    np.random.default_rng(0), num_jobs=cfg.num_jobs, cluster_gpus=num_gpus
                )
            jobs = self._trace_jobs
        else:
            jobs = self._workload.generate(rng, num_jobs=cfg.num_jobs, cluster_gpus=num_gpus)
        fit = fit_to_cluster(jobs, num_gpus, self._max_memory, on_unfit=cfg.on_unfit)  # type: ignore[arg-type]
        if not fit.jobs:
            raise ValueError(
                f"no job of the workload fits the cluster {self.cluster.describe()} "
                f"(rejected: {fit.rejected})"
            )
        return fit.jobs, fit.num_rejected

    def _apply(self, action: int) -> None:
        encoder = self._encoder
        sim = self._sim
        assert encoder is not None and sim is not None
        if action == self._advance_action:
            self._advance()
            return
        if action < self._num_schedule_actions:
            slot, strategy = divmod(action, _NUM_STRATEGIES)
            job_id = encoder.pending_ids[slot]
            job = sim.jobs[job_id]
            resuming = job.status == JobStatus.SUSPENDED
            queued_since = job.queued_since_s
            gpus = sim.schedule(job_id, STRATEGIES[strategy])
            self._queued_since_sum -= queued_since
            if sim.num_waiting == 0:
                self._queued_since_sum = 0.0  # no drift across queue stints
            encoder.dequeued(job_id)
            encoder.touch(gpus)
            if resuming:
                self._transition_gpus += job.spec.num_gpus
                encoder.in_transition += 1
            return
        job_id = encoder.running_ids[action - self._num_schedule_actions]
        job = sim.jobs[job_id]
        sim.suspend(job_id)
        encoder.touch(job.gpus)
        self._transition_gpus += job.spec.num_gpus
        encoder.in_transition += 1

    def _advance(self) -> None:
        """Let time run to the next event, integrate the reward terms, note what changed."""
        sim = self._sim
        encoder = self._encoder
        assert sim is not None and encoder is not None
        t0 = sim.now_s
        in_system = sim.jobs_in_system
        waiting = sim.num_waiting
        compute_in_use = float(encoder.view.cluster_totals()[0])
        events = sim.advance()
        now = sim.now_s
        dt = now - t0
        if dt > 0.0:
            terms = self._terms
            scaled = dt * self._inv_scale
            terms[_JCT] -= in_system * scaled
            if self._arrived:
                terms[_MAKESPAN] -= scaled
            terms[_UTIL] += compute_in_use * self._inv_gpus * scaled
            terms[_SLOWDOWN] -= self._inv_solo_sum * dt
            if waiting:
                # integral over [t0, t0 + dt] of the sum of current waits, in units of T^2
                waits = waiting * t0 - self._queued_since_sum
                terms[_STARVATION] -= scaled * (waits + 0.5 * waiting * dt) * self._inv_scale
            terms[_OVERHEAD] -= self._transition_gpus * scaled
        jobs = sim.jobs
        for event in events:
            kind = event.kind
            job = jobs[event.job_id]
            if kind is _ARRIVAL:
                self._arrived = True
                self._inv_solo_sum += self._inv_solo[event.job_id]
                self._queued_since_sum += job.queued_since_s
                encoder.enqueued(job)
            elif kind is _FINISH:
                self._inv_solo_sum -= self._inv_solo[event.job_id]
                if sim.jobs_in_system == 0:
                    self._inv_solo_sum = 0.0  # no drift across busy periods
                encoder.touch(job.prev_gpus)
            elif kind is _SAMPLED:
                encoder.sampled(event.job_id)
            elif kind is _SUSPEND_DONE:
                self._transition_gpus -= job.spec.num_gpus
                encoder.in_transition -= 1
                self._queued_since_sum += job.queued_since_s
                encoder.touch(job.prev_gpus)
                encoder.enqueued(job)
            elif kind is _RESUME_DONE:
                self._transition_gpus -= job.spec.num_gpus
                encoder.in_transition -= 1
                encoder.touch(job.gpus)

    def _settle(self) -> None:
        """Update the mask; with ``auto_advance``, run through states without a choice."""
        encoder = self._encoder
        sim = self._sim
        assert encoder is not None and sim is not None
        encoder.update_mask()
        if self.config.auto_advance:
            while not encoder.has_choice and encoder.can_advance and not self._time_capped():
                self._advance()
                encoder.update_mask()
        self._deadlock = not (sim.done or encoder.has_choice or encoder.can_advance)

    def _time_capped(self) -> bool:
        cap = self.config.max_time_s
        return cap is not None and self._sim is not None and self._sim.now_s >= cap

    def _info(self, invalid: bool) -> dict[str, Any]:
        core = self._core
        if core is not None:
            mask, terms = core.mask_array, core.reward_terms()
            now, done = core.now, core.num_finished
        else:
            sim = self._sim
            encoder = self._encoder
            assert sim is not None and encoder is not None
            mask, terms = encoder.mask, self._terms
            now, done = sim.now_s, sim.num_finished
        return {
            "action_mask": mask.copy(),
            "reward_terms": dict(zip(REWARD_COMPONENTS, terms, strict=False)),
            "time_s": now,
            "jobs_done": done,
            "decisions": self._decisions,
            "invalid": invalid,
        }

    def _metrics(self) -> dict[str, float]:
        from gpushare_env.metrics import METRIC_DOCS, summarize

        sim = self._sim
        core = self._core
        assert sim is not None
        records = sim.records() if core is None else compiled.records(core, sim)
        if not records:
            values = dict.fromkeys(METRIC_DOCS, math.nan)
            values["num_jobs"] = 0.0
            return values
        timeline = sim.timeline() if core is None else compiled.timeline(core, sim)
        return summarize(records, timeline)

    def _why_invalid(self, action: int) -> str:
        if not 0 <= action <= self._advance_action:
            return f"action {action} is outside Discrete({self._advance_action + 1})"
        if action == self._advance_action:
            return (
                f"action {action} (advance) is invalid: no event is left and "
                f"{self._num_waiting()} job(s) wait; schedule one first"
            )
        try:
            decision = self.decode_action(action)
        except ValueError as error:
            return f"invalid action: {error}"
        if isinstance(decision, Schedule):
            assert self._sim is not None
            job = self._sim.jobs[decision.job_id].spec
            return (
                f"action {action} = schedule job {decision.job_id} ({job.num_gpus} worker(s) "
                f"of {job.memory_gib:g} GiB) with {decision.strategy!r}: it does not fit now"
            )
        if isinstance(decision, Suspend):
            return (
                f"action {action} = suspend job {decision.job_id}: it has been suspended "
                f"{self.config.max_suspends_per_job} time(s) (max_suspends_per_job)"
            )
        return f"action {action} = {decision!r} is invalid now"  # pragma: no cover
