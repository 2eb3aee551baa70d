"""``GPUShare-v0``: the Gymnasium environment over the GPU-sharing cluster simulator."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from gpushare_env.envs.config import REWARD_COMPONENTS, EnvConfig, RunArgs
from gpushare_env.envs.episodes import draw_episode
from gpushare_env.envs.features import FRAG_BIN_EDGES_GIB
from gpushare_env.envs.observation import (
    ClusterSummary,
    observation_bounds,
    observation_space,
    observed_columns,
    split_observation,
    summary_space,
)
from gpushare_env.envs.render import render_ansi, render_rgb
from gpushare_env.runner import TruncatedBy
from gpushare_env.sim.cluster import Cluster, make_cluster
from gpushare_env.sim.decisions import ADVANCE, Advance, Decision, Schedule, Suspend
from gpushare_env.sim.engine import SimConfig, Simulator, check_core_enums
from gpushare_env.sim.limits import is_int
from gpushare_env.sim.sharing import sharing_model
from gpushare_env.sim.types import JobSpec
from gpushare_env.sim.view import SimView
from gpushare_env.workloads.config import WorkloadConfig
from gpushare_env.workloads.trace_cut import TraceCutWarning, TraceRead, read_trace

if TYPE_CHECKING:
    pass

__all__ = ["GPUShareEnv", "InvalidActionError", "make_env"]

check_core_enums("REWARD_COMPONENTS", REWARD_COMPONENTS)


class InvalidActionError(ValueError):
    """An invalid action with ``invalid_action="raise"`` (names the action and why)."""


def _copy_generator(rng: np.random.Generator | None) -> np.random.Generator | None:
    """An independent generator in the same state (its bit generator's state copied)."""
    if rng is None:
        return None
    bits = rng.bit_generator
    copied = type(bits)(_PLACEHOLDER_SEED)  # its state is replaced at once
    copied.state = bits.state
    return np.random.Generator(copied)


#: A made seed for ``_copy_generator`` (a ``SeedSequence`` given is not hashed again).
_PLACEHOLDER_SEED = np.random.SeedSequence(0)


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

    ``Discrete(S W + R + 1)`` with ``W = windows.pending``, ``R = windows.running`` and
    ``S = len(strategies)`` (4 by default):

    * ``S * slot + s`` (``slot < W``): schedule the ``slot``-th job of the pending window
      (waiting jobs by arrival; suspended jobs included, scheduling one resumes it) with
      strategy ``s`` of ``strategies`` (default ``("exclusive", "pack", "spread",
      "min_frag")``; under ``simulator.sharing = "shares"`` FGD's six ``share_*`` rules
      may be added, ``gpushare_env.sim.placement``). The window holds
      the first ``W`` waiting jobs; with ``windows.priority`` a share of it, once more
      wait, goes to those with the least attained GPU service instead, the window still
      in arrival order (``pending_window_ids()``);
    * ``S W + j`` (``j < R``): suspend the ``j``-th running job (in the order jobs
      (re)started);
    * ``S W + R``: advance, let time run to the next event.

    ``action_masks()`` and ``info["action_mask"]`` give the exact valid set: a schedule
    is valid iff the slot holds a job and the strategy finds GPUs for it now, a suspend
    iff the slot holds a running job the suspension rules allow (fewer than
    ``limits.max_suspends_per_job`` suspensions, default 3; after a resume, at least
    ``limits.min_service_s`` of computing, default 0), advance iff an event is still to
    come. The rules are the simulator's, so heuristics obey the same ones
    (``SimView.can_suspend``); with them an episode takes at most ``4 + 4 x 3 = 16``
    valid decisions per job (docs/model.md).
    ``encode_decision`` / ``decode_action`` convert to and from the simulator's
    ``Schedule`` / ``Suspend`` / ``ADVANCE`` decisions.

    An action is an integer: a Python ``int``, a numpy integer or a 0-d integer array (what
    SB3's ``predict`` returns). Anything else, ``bool``, floats (``-0.5``, ``3.0``),
    strings, arrays of another shape, raises ``TypeError`` naming it, before anything
    happens; an integer outside ``Discrete`` or masked out is an invalid action
    (``invalid_action``: a penalised no-op, or ``InvalidActionError``). Every bad input
    and its error: docs/bad_input.md.

    ## Observation Space

    A ``Dict`` of flat ``float32`` ``Box`` es in ``[0, 1]`` (SB3 ``MultiInputPolicy``).
    Times use ``log_time(t) = min(1, log10(1 + t[s]) / 7)``. Matrices are flattened row
    by row: ``obs["gpus"].reshape(G, 6)``, ``obs["pending"].reshape(W, 16)``,
    ``obs["running"].reshape(R, 17)``; empty slots are all zero (``valid`` = 0).

    * ``gpus`` (G x 6), per GPU: ``free_memory`` (free / capacity), ``load`` (compute
      load U_g / max_jobs_per_gpu), ``workers`` (workers holding memory /
      max_jobs_per_gpu), ``node`` (node index / (nodes - 1)), ``speed`` (speed factor /
      fastest GPU), ``capacity`` (memory / largest GPU). With ``gpu_rows`` (``windows.gpus``)
      = N, N rows: the cluster's GPUs, then all-zero rows (``capacity`` 0), so that envs
      on clusters of up to N GPUs share one shape.
    * ``cluster`` (8 x 14), with ``observation.cluster_summary`` (``observe_cluster_summary``)
      in place of ``gpus``: the cluster at a width no cluster changes, one row per GPU
      type of the catalog (all zero for types it lacks): ``share`` and ``gpus`` (log2(1 +
      n) / 16) of its GPUs, ``idle``, the shared GPUs by free memory
      ``shared_free_0_25``, ``shared_free_25_50``, ``shared_free_50_75``,
      ``shared_free_75_100`` (share of memory), ``shared_free_memory``,
      ``compute_free`` (mean of max(0, 1 - U_g)), ``contended`` (U_g > 1), and the idle
      gangs on one node ``gangs_1``, ``gangs_2``, ``gangs_4``, ``gangs_8``.
    * ``mig`` (G x 7), under ``simulator.sharing = "mig"`` only (the sharing model's part,
      ``MigSharing.observe``), per GPU: for each MIG profile of its model, the instances a
      worker could take now (idle or MPS-shared, not reserved) over the most the GPU can
      hold, then ``unpartitioned`` (memory slices in no instance / all of them).
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
      with ``observation.held_time`` (R x 18) also ``held_time`` (log_time of the time since
      the job got its current GPUs: its last start or resume).
    * With ``observation.placement`` (experimental), the pending rows end with
      ``pack_load`` and ``spread_load`` (the largest ``U_g + u`` on the GPUs ``pack`` /
      ``spread`` would pick, / max_jobs_per_gpu, 0 when it finds none) and the running
      rows with ``shares_gpu`` (1 if another job holds memory on one of its GPUs).
    * With ``observation.drain`` (experimental), the pending and running rows
      end with ``drain_share``: ``r / (r + D)``, ``r`` the job's predicted remaining solo
      time (0 if unknown), ``D`` the sum of ``remaining x GPUs`` over the jobs in the
      system / G (the yardstick of the thesis's critical-path rule).
    * With ``observation.rivals`` (experimental), the running rows also hold,
      before ``drain_share``, ``rival_wait`` and ``rival_remaining``: over the waiting jobs
      of the whole queue that request as many GPUs as the job, log_time of the longest
      wait and of the shortest predicted remaining solo time (0 if none).
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
    ``info["reward_terms"]``; ``T = reward.time_scale_s`` (default 3600 s) and the terms
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
    * ``invalid``: ``-reward.invalid_penalty`` for an invalid (no-op) action; default
      weight 1.
    * ``delay``: ``-(jobs in system - their progress in solo seconds per second) x elapsed
      / T``; sums to ``-(sum of JCTs - sum of solo durations) / T``, the time jobs lose to
      waiting, sharing and overheads: the same optimum as ``jct``, but a job running at
      solo speed costs nothing, so each step is charged only what decisions change.

    ## Starting State

    ``reset`` draws a new workload from the env's generator (``EnvConfig.workload``,
    ``num_jobs`` jobs; jobs that can never fit the cluster, on a mixed cluster too, are
    dropped and counted in ``info["rejected_jobs"]``, their ids in
    ``info["rejected_job_ids"]``, or refused with ``on_unfit="error"``), starts an empty
    cluster at time 0 and runs to the first decision point (the first arrival). A trace is
    read once and replayed whole (``num_jobs=None``, the default); a ``num_jobs`` below its
    size keeps its first jobs, with a ``TraceCutWarning`` (a ``UserWarning``, once) and
    ``info["trace_cut"]``. The same ``seed`` gives the same workload and the same
    measurement noise whatever the policy, so policies compared on ``reset(seed=s)`` see
    identical jobs.
    ``reset(options={"jobs": [...]})`` (or ``config["jobs"]``) replays a given list of
    ``JobSpec``.

    ## Episode End

    Terminated when every job has finished. Truncated after ``limits.max_decisions``
    decisions (default ``50 x jobs + 1000``), when simulated time reaches
    ``limits.max_time_s`` (if set), or if no action is valid (``info["deadlock"]``; it
    cannot happen, since a job that no GPU set of the cluster could hold is dropped or
    refused at reset, see ``on_unfit``); the truncating step's ``info["truncated_by"]`` says
    which: ``"decisions"``, ``"time"`` or ``"deadlock"`` (the first that holds, in that
    order). Running out the clock is no way out: the last step of a truncated episode
    charges the ``jct`` and ``makespan`` terms with what the unfinished jobs would still
    cost run one at a time from then, alone, in arrival order
    (``Simulator.truncation_cost``, the sequential schedule without sharing). The final
    ``info["metrics"]`` holds every metric of ``gpushare_env.metrics.summarize`` over the
    finished jobs only (``jobs_done`` of ``num_jobs``): the metrics of a truncated episode
    are not comparable with those of a whole one.

    ## Arguments

    ``gym.make("GPUShare-v0", config={...}, render_mode=None)``; ``config`` is a dict or
    an ``EnvConfig``, whose settings are grouped (see ``EnvConfig``): ``cluster``,
    ``workload``, ``num_jobs``, ``jobs``; ``windows`` (``windows.pending``,
    ``windows.running``, ``windows.gpus``, ``windows.priority``); ``observation``
    (``observation.held_time``, ``observation.placement``, ``observation.drain``,
    ``observation.rivals``); ``reward``
    (the weights ``reward.jct``, ``reward.makespan``, ``reward.utilisation``,
    ``reward.slowdown``, ``reward.starvation``, ``reward.overhead``, ``reward.invalid``,
    ``reward.delay``, and ``reward.time_scale_s``, ``reward.invalid_penalty``); ``limits``
    (``limits.max_decisions``, ``limits.max_time_s``, ``limits.max_suspends_per_job``,
    ``limits.min_service_s``);
    ``simulator`` (``simulator.duration_info``, ``simulator.sample_iterations``,
    ``simulator.sample_noise``, ``simulator.suspend_overhead_s``,
    ``simulator.resume_overhead_s``, ``simulator.mig_operation_s``,
    ``simulator.interference``, ``simulator.sharing``, ``simulator.target_workload``);
    ``invalid_action``,
    ``auto_advance``, ``on_unfit``. For
    example ``config={"windows": {"pending": 8}, "observation": {"rivals": True}}``. The
    flat form's short keys are accepted too (``config.FLAT_KEYS``:
    ``pending_window``, ``running_window``, ``window_priority``, ``time_scale_s``,
    ``invalid_penalty``, ``duration_info``, ``sample_iterations``, ``sample_noise``,
    ``suspend_overhead_s``, ``resume_overhead_s``, ``mig_operation_s``, ``interference``,
    ``sharing``, ``target_workload``, ``max_decisions``,
    ``max_time_s``, ``max_suspends_per_job``, ``min_service_s``, ``observe_held_time``,
    ``observe_placement``, ``observe_drain``, ``observe_rivals``), as recorded configs
    and model files use them; one setting given both ways is an error. Keyword arguments
    override single settings (flat keys or groups). Every episode runs on the
    simulator's compiled core, which also encodes observations, masks and rewards;
    ``view`` (what heuristics read), ``simulator``, rendering and pickling read or copy
    that same core.
    Unknown keys are rejected with the allowed ones listed. ``render_mode`` is ``"ansi"``
    (text) or ``"rgb_array"`` (a nodes x GPUs picture of memory and load).

    Info keys: ``action_mask``, ``reward_terms``, ``time_s``, ``jobs_done``,
    ``decisions``, ``invalid`` (every step); ``elapsed_s``, the simulated time the step
    let run, the SMDP sojourn time (every step but reset); ``num_jobs`` (jobs in the
    episode, after unfit ones are dropped), ``rejected_jobs`` and ``rejected_job_ids``
    (how many were dropped, and which) (reset); for a trace
    workload also ``trace_jobs`` (jobs of the whole trace) and ``trace_cut`` (``True`` if
    ``num_jobs`` kept fewer) (reset); ``metrics`` and ``deadlock`` (last step);
    ``truncated_by`` (the step that truncates).

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
        self.pending_window = cfg.windows.pending
        self.running_window = cfg.windows.running
        # the core's action layout (``Core.decode``): W x S schedule, R suspend, advance
        self.strategies: tuple[str, ...] = cfg.strategies
        self._advance_action = self.pending_window * len(self.strategies) + self.running_window
        self.action_space = spaces.Discrete(self._advance_action + 1)
        observe = cfg.observation.as_dict()  # held_time, placement, drain, rivals
        summarised = observe.pop("cluster_summary")
        gpu_rows = cfg.windows.gpus or self.cluster.num_gpus
        if gpu_rows < self.cluster.num_gpus:
            raise ValueError(
                f"GPUShare-v0: gpu_rows={gpu_rows} is fewer than the cluster's "
                f"{self.cluster.num_gpus} GPUs ({cfg.windows.path}.gpus pads obs['gpus'], "
                "it never drops a GPU)"
            )
        if summarised and cfg.windows.gpus is not None:
            raise ValueError(
                f"GPUShare-v0: gpu_rows={gpu_rows} pads obs['gpus'], which "
                "observation.cluster_summary replaces by obs['cluster']; set one of them"
            )
        space = observation_space(gpu_rows, self.pending_window, self.running_window, **observe)
        # observation.cluster_summary: obs["cluster"] in place of obs["gpus"]
        self._summary = ClusterSummary(self.cluster) if summarised else None
        if self._summary is not None:
            space = spaces.Dict(
                {"cluster": summary_space(), **{k: v for k, v in space.items() if k != "gpus"}}
            )
        # the sharing model's observation part, if it has one (mig: obs["mig"])
        self._sharing = sharing_model(cfg.run_args().sim_config.sharing)
        self._part_columns = self._sharing.observation_columns(self.cluster)
        self._gpu_rows = gpu_rows
        if self._part_columns:
            part = spaces.Box(0.0, 1.0, (gpu_rows * len(self._part_columns),), dtype=np.float32)
            space = spaces.Dict({**space, self._sharing.name: part})
        self.observation_space = space
        # what every episode hands the simulator, made once by the config (headless runs
        # and the benchmark take theirs from the same method)
        self._run_args: RunArgs = cfg.run_args()
        self._sim_config: SimConfig = self._run_args.sim_config
        self._workload = WorkloadConfig.from_any(cfg.workload)
        self._trace: TraceRead | None = None  # read at the first reset
        self._weights = cfg.reward.weights()
        self._sim: Simulator | None = None
        self._now_s = 0.0  # simulated time after the last step (its elapsed_s starts here)  # [s]
        self._view: SimView | None = None
        self._columns = observed_columns(**observe)
        self._bounds = observation_bounds(
            self.cluster.num_gpus, self.pending_window, self.running_window, **observe
        )
        # the observation's bounds: the core's buffer's with obs["gpus"] padded
        self._obs_bounds = observation_bounds(
            gpu_rows, self.pending_window, self.running_window, **observe
        )
        self._padding = self._obs_bounds[1] - self._bounds[1]
        self._decision_cap = 0  # the episode's (reset)
        self._over = True

    # ------------------------------------------------------------ public API
    @property
    def view(self) -> SimView:
        """Read-only structured state of the current episode (what heuristics read)."""
        if self._view is None:
            raise RuntimeError("GPUShare-v0: call reset() before reading the view")
        return self._view

    @property
    def simulator(self) -> Simulator:
        """The episode's simulator, for tests and diagnostics: do not change it."""
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._sim

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the valid actions now (MaskablePPO's hook).  # (A,) bool"""
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() before action_masks()")
        return self._sim.action_mask.copy()

    def decode_action(self, action: int | np.integer) -> Decision:
        """The simulator decision an action index stands for in the current state.

        Raises:
            ValueError: the index is outside the action space or addresses an empty slot.
            TypeError: ``action`` is not an integer (see ``action_index``).
        """
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        match self._sim.decode(self.action_index(action)):  # narrows job_id and strategy
            case ("advance", _, _):
                return ADVANCE
            case ("schedule", job_id, strategy):
                return Schedule(job_id, self.strategies[strategy])
            case (_, job_id, _):
                return Suspend(job_id)

    def action_index(self, action: Any) -> int:
        """The action as a Python ``int``, refusing anything that is not an integer.

        Accepted: a Python ``int``, a numpy integer scalar, a 0-d integer array (what
        SB3's ``predict`` returns for one observation). Refused with ``TypeError``, rather
        than guessed: ``bool`` (``True`` is not action 1), floats (``-0.5`` is not action
        0, nor ``3.0`` action 3), strings, arrays of another shape or dtype, ``None``. An
        integer outside ``Discrete(A)`` is not refused here: ``step`` treats it as any
        other invalid action (``invalid_action``). docs/bad_input.md lists every case.

        Raises:
            TypeError: ``action`` is not an integer, naming it and its type.
        """
        if type(action) is int:
            return action
        if isinstance(action, np.ndarray):
            if action.shape == () and np.issubdtype(action.dtype, np.integer):
                return int(action)
        elif is_int(action):
            return int(action)
        shape = f", shape {action.shape}" if isinstance(action, np.ndarray) else ""
        hint = (
            " (one action per step: pass action.item() of a 1-element array)"
            if isinstance(action, np.ndarray) and action.size == 1
            else ""
        )
        raise TypeError(
            f"GPUShare-v0: an action must be an integer in [0, {self._advance_action}] (a "
            f"Python or numpy int, or a 0-d integer array), got {action!r} "
            f"({type(action).__name__}{shape}){hint}; bools, floats and strings are refused, "
            "not rounded"
        )

    def encode_decision(self, decision: Decision) -> int:
        """The action index of a simulator decision (``Schedule``, ``Suspend``, ``ADVANCE``).

        Raises:
            ValueError: the job is not in the pending / running window, or the strategy
                is unknown.
            TypeError: ``decision`` is not a decision.
        """
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        if isinstance(decision, Advance):
            return self._sim.encode("advance")
        if isinstance(decision, Schedule):
            if decision.strategy not in self.strategies:
                raise ValueError(
                    f"strategy {decision.strategy!r} is not one of this env's actions "
                    f"{list(self.strategies)} (the env's strategies setting)"
                )
            strategy = self.strategies.index(decision.strategy)
            return self._sim.encode("schedule", decision.job_id, strategy)
        if isinstance(decision, Suspend):
            return self._sim.encode("suspend", decision.job_id)
        raise TypeError(f"not a decision: {decision!r}")

    # ---------------------------------------------------------------- forks
    def fork(self) -> GPUShareEnv:
        """A new env at the same instant of the same episode, independent of this one
        (CompilerGym's ``env.fork()``, ALE's ``cloneState``): the simulator forks its
        core (``Simulator.fork``) and the env copies its generator and episode state.
        The same actions on both give bit-identical observations, rewards, infos and
        final metrics; stepping one never changes the other; a fork can be forked.
        Reached as ``env.unwrapped.fork()`` (wrappers are not copied).

        Raises:
            RuntimeError: no episode was started (``reset`` first).
        """
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() before fork()")
        other = copy.copy(self)  # configuration and read-only tables are shared
        other._sim = sim = self._sim.fork()
        other._view = sim
        other._np_random = _copy_generator(self._np_random)
        return other

    # -------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode on a new workload (see *Starting State*).

        Args:
            seed: Seeds the env's generator; the workload and the measurement noise are
                drawn from independent children of it.
            options: ``{"jobs": [JobSpec, ...]}`` replays a given workload this episode;
                ``{"num_jobs": n}`` draws this episode's generated workload with ``n``
                jobs instead of ``num_jobs`` (the episode an env with ``num_jobs=n``
                plays on this seed: shorter episodes for a curriculum).
        """
        super().reset(seed=seed)
        options = dict(options or {})
        given = options.pop("jobs", None)
        num_jobs = options.pop("num_jobs", None)
        if options:
            raise ValueError(
                f"reset: unknown option(s) {sorted(options)}; allowed: ['jobs', 'num_jobs']"
            )
        if num_jobs is not None:
            self._check_num_jobs_option(num_jobs, given)
        jobs, rejected_ids, noise_rng = self._episode_jobs(given, num_jobs)
        cfg = self.config
        args = self._run_args
        self._decision_cap = args.decision_cap(len(jobs))
        episode = args.episode_options(
            len(jobs),
            columns=self._columns,
            frag_edges=FRAG_BIN_EDGES_GIB,
            weights=tuple(self._weights),
            time_scale_s=cfg.reward.time_scale_s,
            invalid_penalty=cfg.reward.invalid_penalty,
        )
        self._sim = sim = Simulator(
            jobs,
            self.cluster,
            args.sim_config,
            rng=noise_rng,
            windows=args.windows,
            episode=episode,
        )
        self._view = sim  # the simulator is its own read-only view (SimView)
        sim.start()
        self._over = sim.done
        self._now_s = sim.now_s
        info = self._info(False, self._now_s, sim.num_finished, sim.steps)
        info["num_jobs"] = len(jobs)
        info["rejected_jobs"] = len(rejected_ids)
        info["rejected_job_ids"] = rejected_ids
        if self._trace is not None and given is None and cfg.jobs is None:
            info["trace_jobs"] = self._trace.total_jobs
            info["trace_cut"] = self._trace.cut
        info["deadlock"] = sim.deadlock
        return self._observation(), info

    def step(
        self, action: int | np.integer
    ) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Carry out one action, then run to the next decision point.

        Raises:
            TypeError: ``action`` is not an integer (``action_index``); nothing happens.
            InvalidActionError: with ``invalid_action="raise"``, an integer outside the
                action space or masked out now, naming it and why (with ``"noop"`` it is
                a no-op scored ``-reward.invalid_penalty``).
            RuntimeError: the episode is over, or was never started.
        """
        if self._over:
            raise RuntimeError("GPUShare-v0: the episode is over (or not started): call reset()")
        a = self.action_index(action)
        sim = self._sim
        assert sim is not None  # not over: reset() started an episode
        started_s = self._now_s
        invalid = not (0 <= a <= self._advance_action and sim.is_valid(a))
        if invalid and self.config.invalid_action == "raise":
            raise InvalidActionError(self._why_invalid(a))
        # an invalid action reaches the core only as a flag (its index may not fit a C int)
        reward, terminated, truncated, now_s, jobs_done, steps = sim.step(
            -1 if invalid else a, invalid
        )
        self._now_s = now_s
        self._over = terminated or truncated
        info = self._info(invalid, now_s, jobs_done, steps)
        info["elapsed_s"] = now_s - started_s
        if self._over:
            info["metrics"] = self._metrics()
            info["deadlock"] = sim.deadlock
        if truncated:
            info["truncated_by"] = self._truncated_by()
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> Any:  # str, np.ndarray or None (gymnasium types it by version)
        """A text view (``"ansi"``) or an RGB picture (``"rgb_array"``) of the cluster."""
        if self.render_mode is None:
            gym.logger.warn(
                "GPUShare-v0: render() without a render_mode; "
                'pass render_mode="ansi" or "rgb_array" to gym.make'
            )
            return None
        if self._sim is None or self._view is None:
            raise RuntimeError("GPUShare-v0: call reset() before render()")
        if self.render_mode == "ansi":
            pending_ids, running_ids = self._window_ids()
            return render_ansi(self._sim, self._view, pending_ids, running_ids)
        return render_rgb(self._sim)

    def _observation(self) -> dict[str, np.ndarray]:
        """The observation: a copy of the core's buffer, ``obs["gpus"]`` padded with zero
        rows to ``windows.gpus`` if set, or replaced by ``obs["cluster"]``
        (``observation.cluster_summary``); plus the sharing model's part, if it has one
        (``obs["mig"]``)."""
        obs = self._core_observation()
        if self._part_columns:
            assert self._sim is not None
            obs[self._sharing.name] = self._sharing.observe(self._sim, self._gpu_rows)
        return obs

    def _core_observation(self) -> dict[str, np.ndarray]:
        assert self._sim is not None
        buffer = self._sim.observation_buffer
        if self._summary is not None:
            obs = split_observation(buffer.copy(), self._bounds)
            table = obs.pop("gpus").reshape(self.cluster.num_gpus, -1)
            return {"cluster": self._summary(table), **obs}
        if not self._padding:
            return split_observation(buffer.copy(), self._bounds)
        gpus_end = self._bounds[1]
        flat = np.zeros(len(buffer) + self._padding, dtype=np.float32)
        flat[:gpus_end] = buffer[:gpus_end]
        flat[gpus_end + self._padding :] = buffer[gpus_end:]
        return split_observation(flat, self._obs_bounds)

    def _num_waiting(self) -> int:
        assert self._sim is not None
        return self._sim.num_waiting

    def pending_window_ids(self) -> list[int]:
        """Job ids of the pending window, in arrival order: the waiting jobs the schedule
        actions address (``windows.pending``, chosen as ``windows.priority`` says)."""
        return self._window_ids()[0]

    def _window_ids(self) -> tuple[list[int], list[int]]:
        """Job ids of the pending and of the running window (what actions address)."""
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._sim.window_ids()

    @property
    def events_processed(self) -> int:
        """Simulator events of the current episode so far."""
        if self._sim is None:
            raise RuntimeError("GPUShare-v0: call reset() first")
        return self._sim.events_processed

    # ------------------------------------------------------------ internals
    def _check_num_jobs_option(self, num_jobs: Any, given: Any) -> None:
        """``reset(options={"num_jobs": n})`` needs an int >= 1 and a generated workload."""
        if isinstance(num_jobs, bool) or not isinstance(num_jobs, (int, np.integer)):
            raise ValueError(f'reset: options["num_jobs"] must be an int >= 1, got {num_jobs!r}')
        if num_jobs < 1:
            raise ValueError(f'reset: options["num_jobs"] must be >= 1, got {num_jobs}')
        if given is not None or self.config.jobs is not None or self._workload.kind == "trace":
            raise ValueError(
                'reset: options["num_jobs"] applies to a generated workload only, not to '
                'given jobs (options["jobs"], config["jobs"]) or a trace'
            )

    def _episode_jobs(
        self, given: Any, num_jobs: int | None = None
    ) -> tuple[list[JobSpec], tuple[int, ...], np.random.Generator]:
        """The episode's jobs, the ids of those dropped as unfit (``on_unfit``) and its
        noise generator (:func:`~gpushare_env.envs.episodes.draw_episode`).

        ``num_jobs``: jobs of a generated workload this episode (``None``: the config's).
        """
        cfg = self.config
        if given is not None:
            given = list(given)
            if not given or not all(isinstance(j, JobSpec) for j in given):
                raise ValueError('reset: options["jobs"] must be a non-empty list of JobSpec')
        trace_wanted = given is None and cfg.jobs is None and self._workload.kind == "trace"
        if trace_wanted and self._trace is None:
            # read once, with a fixed generator for model columns left empty, so every
            # episode (and every env) replays the same trace
            num_gpus = self.cluster.num_gpus
            self._trace = read_trace(self._workload, cfg.num_jobs, cluster_gpus=num_gpus)
            if self._trace.cut:
                self._warn_trace_cut(self._trace)
        episode = draw_episode(
            cfg,
            self.cluster,
            self.np_random,
            num_jobs=num_jobs,
            jobs=given,
            workload=self._workload,
            trace=self._trace,
        )
        return episode.jobs, episode.rejected_ids, episode.noise_rng

    def _warn_trace_cut(self, trace: TraceRead) -> None:
        """Say (once per env, at the first reset) that ``num_jobs`` cut a trace short."""
        cfg = self.config
        limit = cfg.num_jobs if cfg.num_jobs is not None else self._workload.num_jobs
        warnings.warn(
            f"GPUShare-v0: {trace.describe()} (num_jobs={limit}); every episode plays "
            "these only (num_jobs=None plays the whole trace)",
            TraceCutWarning,
            stacklevel=2,
        )

    def _truncated_by(self) -> TruncatedBy:
        """Why the episode was truncated, as the core decided it: the first of its decision
        cap, its time cap and a deadlock that holds."""
        assert self._sim is not None
        return cast(TruncatedBy, self._sim.truncated_by)

    def _info(self, invalid: bool, now_s: float, jobs_done: int, steps: int) -> dict[str, Any]:
        sim = self._sim
        assert sim is not None
        return {
            "action_mask": sim.action_mask.copy(),
            "reward_terms": sim.reward_terms(REWARD_COMPONENTS),
            "time_s": now_s,
            "jobs_done": jobs_done,
            "decisions": steps,
            "invalid": invalid,
        }

    def _metrics(self) -> dict[str, float]:
        from gpushare_env.metrics import summarize_run

        sim = self._sim
        assert sim is not None
        return summarize_run(sim.records(), sim.timeline())

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
            assert self._sim is not None
            return f"action {action} = suspend: {self._sim.suspend_refusal(decision.job_id)}"
        return f"action {action} = {decision!r} is invalid now"  # pragma: no cover


def make_env(config: Mapping[str, Any] | None = None) -> gym.Env[Any, Any]:
    """``gym.make("GPUShare-v0", config=config)`` without Gymnasium's env checker (the env
    has its own tests): how the training, evaluation and benchmark tools build an env."""
    return gym.make("GPUShare-v0", config=dict(config or {}), disable_env_checker=True)
