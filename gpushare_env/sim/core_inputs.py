"""What the compiled core is built from: one typed, frozen input object.

``gpushare_env.sim.engine.core_inputs`` builds a ``CoreInputs`` for an episode; ``Core``
(``gpushare_env/compiled/_core.pyx``) reads it by attribute and keeps it as
``Core.inputs``, from which pickling rebuilds the core (``Core.__reduce__`` ->
``engine.rebuild_core``). Every per-job field is a tuple with one entry per job, in the
episode's (arrival, id) order; ``J`` below is the number of jobs, ``G`` of GPUs, ``N`` of
nodes, ``M`` of catalog models.

This module imports nothing from the engine or the core, so both may import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gpushare_env.sim.interference import InterferenceModel
    from gpushare_env.sim.types import JobSpec


@dataclass(frozen=True, slots=True)
class JobsInput:
    """The jobs of the episode, one entry per job in (arrival, id) order.

    Attributes:
        specs: The jobs as given (what ``Core.specs`` and the finished records carry).
        job_id: Job ids.
        num_gpus: Workers (one GPU each; 0: a job without GPUs, shares model only).
        demand: What one worker holds of a GPU, in the sharing model's unit
            (``SimInput.demand_unit``: its memory in GiB, or its share in milli-GPU).
        intensity: Compute share a worker uses of a GPU.
        iterations: Iterations to run.
        step_time_s: Time of one iteration alone on a V100.
        arrival_s: Arrival times.
        model_index: Index in the catalog's model order (-1: a model not in it).
        noise: Relative error of the sampled duration (``SimConfig.sample_noise``).
        suspend_overhead_s: Time a suspension takes.
        resume_overhead_s: Time a resumption takes.
        cross_node_factor: Speed factor of a placement across nodes.
        size_index: Index of ``demand`` in ``EncoderInput.demand_sizes``.
        inv_solo_s: One over the job's solo duration.
        cpu_milli: CPU the job holds on its node while placed (shares model; 0 else).
        host_memory_mib: Host memory the job holds on its node (shares model; 0 else).
        model_mask: Bit ``m`` set: the job may run on GPU model ``m`` of
            ``ClusterInput.gpu_model`` (-1: any).
        request_kind: Index of the job's request (CPU, share, GPU count, models) among
            the episode's distinct ones (shares model; 0 else): ``share_fgd``'s scores of
            a node are kept per kind.
        node_draw: A uniform draw in [0, 1): the node ``share_random`` picks among those
            that fit (shares model; 0 else).
        gpu_draw: Another: the GPU it picks for a share of one GPU.
        profile_speed: Each job's speed on one instance of each MIG profile
            (``MigInput.profile_names`` order; 0: it does not fit), under the mig model;
            empty under the others.
    """

    specs: tuple[JobSpec, ...]  # (J,)
    job_id: tuple[int, ...]  # (J,)
    num_gpus: tuple[int, ...]  # (J,)
    demand: tuple[float, ...]  # (J,) [the sharing model's unit]
    intensity: tuple[float, ...]  # (J,) [0, 1]
    iterations: tuple[float, ...]  # (J,)
    step_time_s: tuple[float, ...]  # (J,) [s]
    arrival_s: tuple[float, ...]  # (J,) [s]
    model_index: tuple[int, ...]  # (J,)
    noise: tuple[float, ...]  # (J,) [-0.9, 0.9]
    suspend_overhead_s: tuple[float, ...]  # (J,) [s]
    resume_overhead_s: tuple[float, ...]  # (J,) [s]
    cross_node_factor: tuple[float, ...]  # (J,) (0, 1]
    size_index: tuple[int, ...]  # (J,)
    inv_solo_s: tuple[float, ...]  # (J,) [1/s]
    cpu_milli: tuple[float, ...]  # (J,) [milli-cores]
    host_memory_mib: tuple[float, ...]  # (J,) [MiB]
    model_mask: tuple[int, ...]  # (J,) bit set over the cluster's GPU models
    request_kind: tuple[int, ...]  # (J,)
    node_draw: tuple[float, ...]  # (J,) [0, 1)
    gpu_draw: tuple[float, ...]  # (J,) [0, 1)
    profile_speed: tuple[tuple[float, ...], ...] = ()  # (J, P) [x whole GPU]; () but mig


@dataclass(frozen=True, slots=True, eq=False)
class ClusterInput:
    """The cluster (``Cluster``'s arrays).

    Attributes:
        capacity: What a GPU offers of the jobs' per-worker demand, in the sharing
            model's unit (``SharingModel.gpu_capacity``).
        gpu_node: Node of each GPU.
        node_gpus: GPUs of each node, padded with -1.
        gpu_speed: Speed of each GPU relative to a V100.
        max_jobs_per_gpu: Jobs a GPU may hold at once.
        gpu_model: Each GPU's model, an index into the cluster's sorted type names.
        node_cpu_milli: CPU of each node (inf: no limit).
        node_memory_mib: Host memory of each node (inf: no limit).
    """

    capacity: np.ndarray  # (G,) [the sharing model's unit]
    gpu_node: np.ndarray  # (G,) int
    node_gpus: np.ndarray  # (N, max GPUs per node) int, -1 padded
    gpu_speed: np.ndarray  # (G,) [x V100]
    max_jobs_per_gpu: int
    gpu_model: np.ndarray  # (G,) int, < 63
    node_cpu_milli: np.ndarray  # (N,) [milli-cores]
    node_memory_mib: np.ndarray  # (N,) [MiB]


@dataclass(frozen=True, slots=True)
class MeasuredTables:
    """``MeasuredContention``'s tables, flat, for the core (``core_tables`` lays them out).

    Attributes:
        num_models: Models the tables index (the core checks it against the encoder's).
        pair_extra: Extra slowdown of model i beside model j, per table (-1: unmeasured).
        gpu_table: Each GPU's table index.
        gpu_model_speed: Each model's speed on each GPU.
    """

    num_models: int
    pair_extra: tuple[float, ...]  # (tables * M * M,)
    gpu_table: tuple[int, ...]  # (G,)
    gpu_model_speed: tuple[float, ...]  # (G * M,) [x V100]


@dataclass(frozen=True, slots=True)
class SimInput:
    """The simulation's rules: interference, duration knowledge and suspension limits.

    Attributes:
        alpha: Linear contention coefficient (0: none).
        interference: The contention runs in C (``LinearContention`` or
            ``MeasuredContention``).
        measured: The measured pair tables (``None``: not ``MeasuredContention``).
        interference_model: A model the core calls from C for each GPU whose computing
            workers change (``None``: a built-in model).
        interference_models: The Python model is passed the co-located models' names.
        sample_iterations: Iterations a job runs before its duration is sampled.
        duration_info: What schedulers may know of durations.
        record_timeline: Record the cluster timeline.
        max_suspends_per_job: Suspensions allowed per job (``None``: no cap).
        min_service_s: Service a resumed job gets before it may be suspended again.
        reference_demand: The worker demands of the workload's jobs with GPUs, sorted
            (the expected fragment's reference).
        median_demand: Their median.
        sharing: The sharing model's dispatch code (``SharingModel.code``; the core's
            ``SHARING_*``).
        demand_unit: Its unit of demand and capacity (for messages).
        demand_name: What a worker's demand is (for messages).
        free_format: The format spec messages print a GPU's free capacity with.
        one_node_gangs: A job's GPUs are on one node.
        node_limits: The node's CPU, host memory and the job's GPU models are hard
            limits too.
        share_rules: FGD's placement rules (``share_*``) apply.
        free_capacity_fits: A GPU's free capacity and worker count alone tell whether a
            worker fits (the placement index and the mask's counts rely on it).
        mig_rules: MIG's placement rules (``mig_*``) apply.
        mig: The MIG profiles and each GPU's first partition (the mig model only).
    """

    alpha: float
    interference: bool
    measured: MeasuredTables | None
    interference_model: InterferenceModel | None
    interference_models: bool
    sample_iterations: int
    duration_info: str  # "none", "sampled" or "oracle"
    record_timeline: bool
    max_suspends_per_job: int | None
    min_service_s: float  # [s]
    reference_demand: tuple[float, ...]  # (<= J,) [the sharing model's unit], ascending
    median_demand: float  # [the sharing model's unit]
    sharing: int
    demand_unit: str
    demand_name: str
    free_format: str
    one_node_gangs: bool
    node_limits: bool
    share_rules: bool
    target_workload: tuple[tuple[float, int, float, int, float], ...]
    free_capacity_fits: bool = True
    mig_rules: bool = False
    mig: MigInput | None = None


@dataclass(frozen=True, slots=True)
class MigInput:
    """The MIG GPU model of a cluster under the mig model, and its first partitions.

    Attributes:
        profile_names: The model's profiles (NVIDIA's names, ``"3g.20gb"``), in its order.
        profile_compute: Compute slices of each.
        profile_memory: Memory slices of each.
        profile_starts: The memory slices each may start at.
        compute_slices: A whole GPU's compute slices.
        memory_slices: And memory slices.
        initial: Each GPU's first partition: ``(profile index, start)`` per instance.
        mps_speed: A worker's speed on an MPS-shared instance, as a fraction of its speed
            alone there (MISO's profiling model: a third, its ``--mps_rate 3``).
        operation_s: Time of one instance create or destroy (``SimConfig.mig_operation_s``).
    """

    profile_names: tuple[str, ...]  # (P,)
    profile_compute: tuple[int, ...]  # (P,)
    profile_memory: tuple[int, ...]  # (P,)
    profile_starts: tuple[tuple[int, ...], ...]  # (P, *)
    compute_slices: int
    memory_slices: int
    initial: tuple[tuple[tuple[int, int], ...], ...]  # (G, *)
    mps_speed: float = 1.0 / 3.0
    operation_s: float = 0.15  # [s]


@dataclass(frozen=True, slots=True)
class EncoderInput:
    """The windows decisions address and the observation's layout.

    Attributes:
        pending_window: Pending slots ``W``.
        running_window: Running slots ``R``.
        priority_slots: Pending slots chosen by least attained service (in ``[0, W]``).
        columns: Each observation key's column names (``None``: headless, nothing
            encoded).
        frag_edges: Upper edges of the shared-GPU bins of ``frag_hist``.
        num_models: Catalog models (the one-hot's width).
        demand_sizes: The workload's distinct worker demands, ascending.
        log_gpus: ``1 / log2(1 + G)``.
        strategies: The placement strategies of the schedule actions, in their order
            (names of ``placement.ALL_STRATEGIES``; the env's ``strategies``).
    """

    pending_window: int
    running_window: int
    priority_slots: int
    columns: Mapping[str, tuple[str, ...]] | None
    frag_edges: tuple[float, ...]  # [the sharing model's unit]
    num_models: int
    demand_sizes: tuple[float, ...]  # [the sharing model's unit], ascending
    log_gpus: float
    strategies: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EnvInput:
    """The env's reward and limits (``EpisodeOptions``; a headless run keeps defaults).

    Attributes:
        weights: Reward weights in ``REWARD_COMPONENTS`` order (empty: no reward).
        inv_scale: One over the reward's time unit.
        auto_advance: Run through states without a choice.
        max_time_s: Truncate at this simulated time (``None``: never).
        decision_cap: Truncate after this many decisions.
        invalid_penalty: Reward of an invalid action (negated).
    """

    weights: tuple[float, ...]
    inv_scale: float  # [1/s]
    auto_advance: bool
    max_time_s: float | None  # [s]
    decision_cap: int
    invalid_penalty: float


@dataclass(frozen=True, slots=True)
class CoreInputs:
    """Everything ``Core`` is built from (``engine.core_inputs`` makes one).

    Attributes:
        jobs: The jobs.
        cluster: The cluster.
        sim: The simulation's rules.
        encoder: The windows and the observation's layout.
        env: The env's reward and limits.
    """

    jobs: JobsInput
    cluster: ClusterInput
    sim: SimInput
    encoder: EncoderInput
    env: EnvInput
