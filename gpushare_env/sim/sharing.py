"""The ways GPUs are shared: one class per sharing model (``SimConfig.sharing``).

A sharing model says what a worker demands of a GPU and what a GPU offers, in one unit
(the model's ``unit``), and which other limits a placement must keep. Like a kind of
resource in a discrete-event library (one class per kind behind one request / release
protocol) or a scheduler framework's filter plugin, each model is one object here and
one dispatch entry in the compiled core's fit, occupy, release and encode
(``gpushare_env/compiled``); everything else reads the columns the model fills in
``CoreInputs``.

- ``memory`` (:class:`MemorySharing`, the thesis's model): a worker holds its memory on
  each of its GPUs (GiB, a hard limit); co-located workers contend for compute.
- ``shares`` (:class:`RequestedShares`, Alibaba's GPU-sharing cluster and FGD, Weng et
  al., ATC'23): a worker holds its requested share of a GPU (milli-GPU of 1000), its job
  the CPU and host memory it requests on its node; a job's GPUs are on one node, of a
  model it allows; jobs within their shares do not contend for compute.

- ``mig`` (:class:`MigSharing`, NVIDIA's Multi-Instance GPU): each GPU holds a partition
  into instances of fixed profiles (``gpushare_env.sim.mig``); a worker holds one idle
  instance of a profile its job fits and runs at the job's speed there
  (``gpushare_env.sim.mig_speed``); instances do not contend.

A new model is a subclass registered in ``SHARING_MODELS`` plus its entries in the core's
four dispatches (docs/design/layout.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gpushare_env.sim.cluster import (
    Cluster,
    gpu_models,
    model_mask,
    shares_unfit_reason,
    unfit_reason,
)
from gpushare_env.sim.target_workload import typical_requests
from gpushare_env.sim.types import GPU_MILLI, JobSpec, Request

if TYPE_CHECKING:  # the MIG tables load with the mig model only (import time)
    from gpushare_env.sim.mig import MigGpuModel

__all__ = [
    "SHARING_MODELS",
    "DemandColumns",
    "MemorySharing",
    "MigSharing",
    "RequestedShares",
    "SharingModel",
    "sharing_model",
]

#: A request kind: (CPU milli-cores, milli-GPU per GPU, GPUs, allowed GPU models).
Kind = tuple[int, int, int, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class DemandColumns:
    """What a sharing model makes of an episode's jobs (in arrival order) for the core.

    Attributes:
        demand: What one worker holds of a GPU's capacity.  (J,) [the model's unit]
        intensity: Compute fraction one worker uses alone.  (J,)
        cpu_milli: CPU the job holds on its node while placed (0: none).  (J,)
        host_memory_mib: Host memory the job holds on its node (0: none).  (J,) [MiB]
        model_mask: Bit set of the GPU models the job allows (-1: any).  (J,)
        kinds: Each job's request kind (empty under a model without kinds).
        profile_speed: Each job's speed per MIG profile, 0 where it does not fit
            (empty but under ``mig``).  (J, P)
    """

    demand: tuple[float, ...]
    intensity: tuple[float, ...]
    cpu_milli: tuple[float, ...]
    host_memory_mib: tuple[float, ...]
    model_mask: tuple[int, ...]
    kinds: tuple[Kind, ...]
    profile_speed: tuple[tuple[float, ...], ...] = ()


class SharingModel:
    """One way GPUs are shared. Subclasses set the class attributes and the methods;
    instances hold no state (``SHARING_MODELS`` keeps one of each)."""

    #: ``SimConfig.sharing``'s value.
    name: ClassVar[str]
    #: The compiled core's dispatch code (``SHARING_*`` in ``_core.pyx``).
    code: ClassVar[int]
    #: The unit of a worker's demand and of a GPU's capacity.
    unit: ClassVar[str]
    #: What a worker's demand is, and how messages print a GPU's free capacity.
    demand_name: ClassVar[str]
    free_format: ClassVar[str]
    #: A job's GPUs are on one node (its gang never spans nodes).
    one_node_gangs: ClassVar[bool]
    #: A node's CPU and host memory and a GPU's model limit placements too.
    node_limits: ClassVar[bool]
    #: FGD's placement rules (the ``share_*`` strategies) apply.
    share_rules: ClassVar[bool]
    #: MIG's placement rules (the ``mig_*`` strategies) apply.
    mig_rules: ClassVar[bool] = False
    #: A GPU's free capacity and worker count alone tell whether a worker fits.
    free_capacity_fits: ClassVar[bool] = True
    #: One line for the docs' table of sharing models.
    summary: ClassVar[str]

    def demand_columns(self, ordered: Sequence[JobSpec], models: tuple[str, ...]) -> DemandColumns:
        """The core's per-job demand columns of ``ordered`` on a cluster of ``models``."""
        raise NotImplementedError

    def columns(self, ordered: Sequence[JobSpec], cluster: Cluster) -> DemandColumns:
        """The demand columns of ``ordered`` on ``cluster`` (what the engine asks)."""
        return self.demand_columns(ordered, gpu_models(cluster))

    def sim_fields(self) -> dict[str, Any]:
        """The ``SimInput`` fields that name the model to the core (its dispatch code and
        the properties it reads)."""
        return {
            "sharing": self.code,
            "demand_unit": self.unit,
            "demand_name": self.demand_name,
            "free_format": self.free_format,
            "one_node_gangs": self.one_node_gangs,
            "node_limits": self.node_limits,
            "share_rules": self.share_rules,
            "mig_rules": self.mig_rules,
            "free_capacity_fits": self.free_capacity_fits,
        }

    def mig_input(self, cluster: Cluster, config: Any = None) -> Any:
        """The core's MIG input (``MigInput``) for ``cluster`` under ``config`` (a
        ``SimConfig``); ``None`` but under ``mig``."""
        return None

    def max_workers(self, cluster: Cluster) -> int:
        """Workers one GPU may hold."""
        return cluster.max_jobs_per_gpu

    def observation_columns(self, cluster: Cluster) -> tuple[str, ...]:
        """The columns of the env's observation part of the model (one row per GPU;
        empty: no part of its own)."""
        return ()

    def interference(self, given: Any) -> Any:
        """The interference model workers on one GPU run under: ``given`` (the run's),
        or none where workers are isolated (mig)."""
        return given

    def observe(self, view: Any, rows: int) -> np.ndarray:
        """That part now: ``rows`` x ``observation_columns``, flat, in [0, 1]."""
        raise NotImplementedError

    def gpu_capacity(self, cluster: Cluster) -> np.ndarray:
        """What each GPU offers.  (G,) [the model's unit]"""
        raise NotImplementedError

    def unfit_reason(
        self, job: JobSpec, cluster: Cluster | None, memory_desc: np.ndarray
    ) -> tuple[str, str] | None:
        """Why ``job`` can never be placed on ``cluster`` (``(reason, detail)``), or
        ``None``; ``memory_desc``: every GPU's memory, descending."""
        raise NotImplementedError

    def tie_draws(
        self, rng: np.random.Generator, ids: Sequence[int]
    ) -> dict[int, tuple[float, float]]:
        """The two uniform draws per job id that ``share_random`` breaks ties with (none
        where no rule draws); taken from ``rng`` after the sampling noise."""
        return {}

    def target_workload(
        self, kinds: Sequence[Kind], models: tuple[str, ...], rule: str
    ) -> tuple[tuple[float, int, float, int, float], ...]:
        """FGD's target workload (``SimInput.target_workload``; empty: no FGD rules) of
        the episode's request ``kinds`` by ``rule`` (``SimConfig.target_workload``)."""
        return ()

    def frag_edges(self, edges: Sequence[float], cluster: Cluster) -> tuple[float, ...]:
        """The observation's fragment-bin edges, given in GiB of the largest GPU, in the
        model's unit."""
        return tuple(edges)


class MemorySharing(SharingModel):
    """The thesis's model: a worker holds its memory (GiB) on each of its GPUs; a gang
    may span nodes; co-located workers contend for compute."""

    name = "memory"
    code = 0
    unit = "GiB"
    demand_name = "memory"
    free_format = ".2f"
    one_node_gangs = False
    node_limits = False
    share_rules = False
    summary = "a worker holds its memory (GiB, a hard limit); compute is contended"

    def demand_columns(self, ordered: Sequence[JobSpec], models: tuple[str, ...]) -> DemandColumns:
        n = len(ordered)
        return DemandColumns(
            demand=tuple(s.memory_gib for s in ordered),
            intensity=tuple(s.intensity for s in ordered),
            cpu_milli=(0.0,) * n,
            host_memory_mib=(0.0,) * n,
            model_mask=(-1,) * n,
            kinds=(),
        )

    def gpu_capacity(self, cluster: Cluster) -> np.ndarray:
        return cluster.gpu_memory_gib

    def unfit_reason(
        self, job: JobSpec, cluster: Cluster | None, memory_desc: np.ndarray
    ) -> tuple[str, str] | None:
        return unfit_reason(job.num_gpus, job.memory_gib, memory_desc)


class RequestedShares(SharingModel):
    """Alibaba's and FGD's model: a worker holds its requested share of a GPU (milli-GPU
    of 1000), its job the requested CPU and host memory on its one node, on a GPU model
    it allows; a job without a request takes whole GPUs."""

    name = "shares"
    code = 1
    unit = "milli-GPU"
    demand_name = "its requested share"
    free_format = "g"
    one_node_gangs = True
    node_limits = True
    share_rules = True
    free_capacity_fits = False
    summary = (
        "a worker holds its requested share of a GPU (milli-GPU), its job CPU and host "
        "memory on one node; within shares no compute contention"
    )

    def demand_columns(self, ordered: Sequence[JobSpec], models: tuple[str, ...]) -> DemandColumns:
        requests = [s.request or Request() for s in ordered]
        return DemandColumns(
            demand=tuple(float(r.gpu_milli) for r in requests),
            intensity=tuple(r.gpu_milli / GPU_MILLI for r in requests),
            cpu_milli=tuple(float(r.cpu_milli) for r in requests),
            host_memory_mib=tuple(float(r.host_memory_mib) for r in requests),
            model_mask=tuple(model_mask(r, models) if r.gpu_milli else -1 for r in requests),
            kinds=tuple(
                (r.cpu_milli, r.gpu_milli, s.num_gpus, r.gpu_models)
                for r, s in zip(requests, ordered, strict=True)
            ),
        )

    def gpu_capacity(self, cluster: Cluster) -> np.ndarray:
        return np.full(cluster.num_gpus, float(GPU_MILLI))

    def unfit_reason(
        self, job: JobSpec, cluster: Cluster | None, memory_desc: np.ndarray
    ) -> tuple[str, str] | None:
        if cluster is None:
            raise ValueError("sharing 'shares': the fit check reads the cluster's nodes")
        return shares_unfit_reason(job.num_gpus, job.request or Request(), cluster)

    def tie_draws(
        self, rng: np.random.Generator, ids: Sequence[int]
    ) -> dict[int, tuple[float, float]]:
        draws = rng.random((len(ids), 2)).tolist()
        return {job_id: (d[0], d[1]) for job_id, d in zip(ids, draws, strict=True)}

    def target_workload(
        self, kinds: Sequence[Kind], models: tuple[str, ...], rule: str
    ) -> tuple[tuple[float, int, float, int, float], ...]:
        return tuple(
            (
                float(t.cpu_milli),
                t.num_gpu,
                float(t.gpu_milli),
                model_mask(Request(gpu_models=t.gpu_spec), models),
                t.frequency,
            )
            for t in typical_requests(kinds, rule=rule)
        )

    def frag_edges(self, edges: Sequence[float], cluster: Cluster) -> tuple[float, ...]:
        largest = float(cluster.gpu_memory_gib.max())
        return tuple(e * GPU_MILLI / largest for e in edges)


def mig_gpu_model(cluster: Cluster) -> MigGpuModel:
    """The one MIG GPU model of ``cluster``'s GPUs: the one its nodes name
    (``NodeGroup.model``: ``"A100-40GB"``, ``"A100-80GB"``, ``"H100-80GB"``, ``"A30"``),
    else by type and memory (an ``a100`` of 40 GiB is an A100-40GB, of 80 GiB an
    A100-80GB).

    Raises:
        ValueError: a GPU without MIG, or GPUs of several MIG models.
    """
    from gpushare_env.sim.mig import MIG_GPU_MODELS, get_mig_model

    found: dict[str, list[int]] = {}
    named = {name.lower(): name for name in MIG_GPU_MODELS}
    for g, (kind, memory, node_model) in enumerate(
        zip(cluster.gpu_type, cluster.gpu_memory_gib.tolist(), cluster.gpu_model, strict=True)
    ):
        name = named.get(node_model.lower()) or _MIG_TYPES.get((kind, round(memory)))
        if name is None:
            raise ValueError(
                f"sharing 'mig': GPU {g} ({kind}, {memory:g} GiB) has no MIG; MIG GPUs here: "
                + ", ".join(f"{k} of {m} GiB ({n})" for (k, m), n in _MIG_TYPES.items())
                + f", or nodes whose model names one of {', '.join(MIG_GPU_MODELS)}"
            )
        found.setdefault(name, []).append(g)
    if len(found) > 1:
        raise ValueError(
            "sharing 'mig': a cluster holds one MIG GPU model, found "
            + ", ".join(f"{name} (GPUs {gpus[0]}..{gpus[-1]})" for name, gpus in found.items())
        )
    return get_mig_model(next(iter(found)))


#: The cluster GPU types (``gpushare_env.sim.catalog.GPU_TYPES``) with MIG, by memory.
_MIG_TYPES: Mapping[tuple[str, int], str] = {("a100", 40): "A100-40GB", ("a100", 80): "A100-80GB"}


class MigSharing(SharingModel):
    """NVIDIA's Multi-Instance GPU: a GPU is a partition into instances of fixed
    profiles at valid start slices (``gpushare_env.sim.mig``); a worker holds one idle
    instance of a profile its job fits, at the job's speed there (``job_speed_table``:
    MISO's measurements for its jobs, an Amdahl curve for others); instances do not
    contend. Demand and capacity count compute slices: a worker's demand is the smallest
    profile it fits, a GPU's capacity its slices. Every GPU starts whole (one instance of
    the largest profile); ``Simulator.repartition`` changes its idle instances."""

    name = "mig"
    code = 2
    unit = "compute slices"
    demand_name = "the compute slices of the smallest MIG profile it fits"
    free_format = "g"
    one_node_gangs = False
    node_limits = False
    share_rules = False
    mig_rules = True
    free_capacity_fits = False
    summary = (
        "a worker holds one MIG instance of a profile its job fits, at the job's speed "
        "there; instances are isolated"
    )

    def demand_columns(self, ordered: Sequence[JobSpec], models: tuple[str, ...]) -> DemandColumns:
        raise TypeError("sharing 'mig': the columns read the cluster's GPUs; call columns()")

    def columns(self, ordered: Sequence[JobSpec], cluster: Cluster) -> DemandColumns:
        from gpushare_env.sim.mig_speed import job_speed_table

        model = mig_gpu_model(cluster)
        n = len(ordered)
        speeds = []
        demand = []
        for spec in ordered:
            table = job_speed_table(spec, model)
            row = tuple(float(table[p.name] or 0.0) for p in model.profiles)
            fitting = [p.compute_slices for p, v in zip(model.profiles, row, strict=True) if v > 0]
            if not fitting:
                raise ValueError(
                    f"sharing 'mig': job {spec.job_id} fits no profile of {model.name} "
                    f"({spec.memory_gib:g} GiB per worker)"
                )
            speeds.append(row)
            demand.append(float(min(fitting)))
        return DemandColumns(
            demand=tuple(demand),
            intensity=tuple(d / model.compute_slices for d in demand),
            cpu_milli=(0.0,) * n,
            host_memory_mib=(0.0,) * n,
            model_mask=(-1,) * n,
            kinds=(),
            profile_speed=tuple(speeds),
        )

    def gpu_capacity(self, cluster: Cluster) -> np.ndarray:
        return np.full(cluster.num_gpus, float(mig_gpu_model(cluster).compute_slices))

    def max_workers(self, cluster: Cluster) -> int:
        return mig_gpu_model(cluster).memory_slices

    def interference(self, given: Any) -> Any:
        from gpushare_env.sim.interference import NoInterference

        return NoInterference()  # instances are isolated

    def mig_input(self, cluster: Cluster, config: Any = None) -> Any:
        from gpushare_env.sim.core_inputs import MigInput
        from gpushare_env.sim.mig import DEFAULT_SECONDS_PER_OPERATION

        model = mig_gpu_model(cluster)
        whole = max(range(len(model.profiles)), key=lambda p: model.profiles[p].compute_slices)
        return MigInput(
            profile_names=tuple(p.name for p in model.profiles),
            profile_compute=tuple(p.compute_slices for p in model.profiles),
            profile_memory=tuple(p.memory_slices for p in model.profiles),
            profile_starts=tuple(tuple(p.starts) for p in model.profiles),
            compute_slices=model.compute_slices,
            memory_slices=model.memory_slices,
            initial=(((whole, 0),),) * cluster.num_gpus,
            operation_s=(
                DEFAULT_SECONDS_PER_OPERATION if config is None else config.mig_operation_s
            ),
        )

    def unfit_reason(
        self, job: JobSpec, cluster: Cluster | None, memory_desc: np.ndarray
    ) -> tuple[str, str] | None:
        from gpushare_env.sim.mig_speed import job_speed_table

        if cluster is None:
            raise ValueError("sharing 'mig': the fit check reads the cluster's GPUs")
        model = mig_gpu_model(cluster)
        if job.num_gpus > cluster.num_gpus:
            return ("gpus", f"{job.num_gpus} workers, the cluster has {cluster.num_gpus} GPUs")
        if not any(v for v in job_speed_table(job, model).values()):
            return (
                "memory",
                f"{job.memory_gib:g} GiB per worker fits no MIG profile of {model.name}",
            )
        return None

    def observation_columns(self, cluster: Cluster) -> tuple[str, ...]:
        """Per GPU: for each profile its instances a worker could take now (idle, or
        MPS-shared, and not reserved), over the most the GPU can hold; then its memory
        slices in no instance, over all of them."""
        model = mig_gpu_model(cluster)
        return (*(f"free_{p.name}" for p in model.profiles), "unpartitioned")

    def observe(self, view: Any, rows: int) -> np.ndarray:
        model = mig_gpu_model(view.cluster)
        index = {p.name: i for i, p in enumerate(model.profiles)}
        most = [p.max_count for p in model.profiles]
        width = len(model.profiles) + 1
        out = np.zeros((rows, width), dtype=np.float32)
        for gpu in range(view.num_gpus):
            used = 0
            for inst in view.mig_instances(gpu):
                p = index[inst.profile]
                used += model.profiles[p].memory_slices
                if not inst.reserved and (inst.mps or not inst.jobs):
                    out[gpu, p] += 1.0 / most[p]
            out[gpu, -1] = 1.0 - used / model.memory_slices
        return out.ravel()

    def frag_edges(self, edges: Sequence[float], cluster: Cluster) -> tuple[float, ...]:
        model = mig_gpu_model(cluster)
        largest = float(cluster.gpu_memory_gib.max())
        return tuple(e * model.compute_slices / largest for e in edges)


#: Every sharing model by ``SimConfig.sharing`` name.
SHARING_MODELS: Mapping[str, SharingModel] = {
    model.name: model for model in (MemorySharing(), RequestedShares(), MigSharing())
}


def sharing_model(name: str) -> SharingModel:
    """The sharing model called ``name`` (``SimConfig.sharing``).

    Raises:
        ValueError: no model has that name.
    """
    try:
        return SHARING_MODELS[name]
    except KeyError:
        raise ValueError(
            f"sharing: unknown sharing model {name!r}; choose one of {sorted(SHARING_MODELS)}"
        ) from None
