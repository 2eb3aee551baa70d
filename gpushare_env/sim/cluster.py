"""Cluster topology: nodes of GPUs, homogeneous or mixed, and the named presets."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpushare_env.sim.catalog import GPU_TYPES, GPUType
from gpushare_env.sim.limits import (
    MAX_CLUSTER_GPUS,
    MAX_GPU_MEMORY_GIB,
    MAX_GPUS_PER_NODE,
    MAX_JOBS_PER_GPU,
    MIN_GPU_MEMORY_GIB,
)
from gpushare_env.sim.settings import is_finite, is_int, range_text, unknown_keys_error
from gpushare_env.sim.types import Request

__all__ = [
    "PRESETS",
    "Cluster",
    "ClusterConfig",
    "NodeGroup",
    "gpu_models",
    "make_cluster",
    "model_mask",
    "shares_unfit_reason",
    "unfit_reason",
]


_GROUP_KEYS = (
    "nodes",
    "gpus_per_node",
    "gpu_type",
    "memory_gib",
    "cpu_milli",
    "memory_mib",
    "model",
)

#: The most CPU (milli-cores) and host memory (MiB) a node may declare.
_MAX_NODE_CPU_MILLI = 2**31 - 1
_MAX_NODE_MEMORY_MIB = 2**40

#: Tolerance of memory comparisons, the engine's own.  [GiB]
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``nodes`` identical servers of ``gpus_per_node`` GPUs of one type.

    Every field is checked on creation (``ValueError`` naming the key; numpy integers are
    accepted and stored as ``int``).

    Attributes:
        nodes: Number of servers, an int >= 1 and <= 65536.
        gpus_per_node: GPUs per server, an int >= 1 and <= 256.
        gpu_type: Key of ``GPU_TYPES``.
        memory_gib: Overrides the type's memory when given, >= 1e-3 and <= 1e6.  # [GiB]
        cpu_milli: CPU of each server, in milli-cores (``None``: no limit). Only the
            requested-shares model (``SimConfig.sharing``) reads it.
        memory_mib: Host memory of each server (``None``: no limit); as ``cpu_milli``.
            # [MiB]
        model: The GPUs' model name as jobs' requests name it (``Request.gpu_models``),
            when it differs from ``gpu_type`` (a trace's own model names, whose speed and
            memory ``gpu_type`` stands for); ``None``: ``gpu_type``.
    """

    nodes: int
    gpus_per_node: int
    gpu_type: str = "v100"
    memory_gib: float | None = None  # [GiB]
    cpu_milli: int | None = None
    memory_mib: int | None = None  # [MiB]
    model: str | None = None

    def __post_init__(self) -> None:
        self._check("cluster")

    def _check(self, where: str) -> None:
        """Raise ``ValueError`` naming the first bad key as ``{where}.{key}``."""
        for name, high in (("nodes", MAX_CLUSTER_GPUS), ("gpus_per_node", MAX_GPUS_PER_NODE)):
            value = getattr(self, name)
            if not (is_int(value) and 1 <= value <= high):
                raise ValueError(
                    f"{where}.{name} must be an int {range_text(1, high)}, got {value!r}"
                )
            object.__setattr__(self, name, int(value))
        if not (isinstance(self.gpu_type, str) and self.gpu_type in GPU_TYPES):
            raise ValueError(
                f"{where}.gpu_type must be one of {sorted(GPU_TYPES)}, got {self.gpu_type!r}"
            )
        memory = self.memory_gib
        if memory is not None:
            if not (is_finite(memory) and MIN_GPU_MEMORY_GIB <= memory <= MAX_GPU_MEMORY_GIB):
                raise ValueError(
                    f"{where}.memory_gib must be None or a number "
                    f"{range_text(MIN_GPU_MEMORY_GIB, MAX_GPU_MEMORY_GIB)}, got {memory!r}"
                )
            object.__setattr__(self, "memory_gib", float(memory))
        for name, high in (
            ("cpu_milli", _MAX_NODE_CPU_MILLI),
            ("memory_mib", _MAX_NODE_MEMORY_MIB),
        ):
            value = getattr(self, name)
            if value is not None:
                if not (is_int(value) and 1 <= value <= high):
                    raise ValueError(
                        f"{where}.{name} must be None or an int {range_text(1, high)}, "
                        f"got {value!r}"
                    )
                object.__setattr__(self, name, int(value))
        if self.model is not None and not (isinstance(self.model, str) and self.model.strip()):
            raise ValueError(f"{where}.model must be None or a non-empty str, got {self.model!r}")

    @classmethod
    def from_dict(cls, spec: Any, where: str) -> NodeGroup:
        """A group from a dict of ``_GROUP_KEYS`` (or a ``NodeGroup``), errors naming
        ``where`` (``cluster.groups[1]``)."""
        if isinstance(spec, NodeGroup):
            return spec
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where} must be a dict with keys {list(_GROUP_KEYS)}, got {spec!r}")
        unknown = sorted(set(spec) - set(_GROUP_KEYS), key=str)
        if unknown:
            raise unknown_keys_error(where, unknown, sorted(_GROUP_KEYS), suggest=False)
        missing = [key for key in ("nodes", "gpus_per_node") if key not in spec]
        if missing:
            raise ValueError(
                f"{where}: missing key(s) {missing} (a node group needs nodes and "
                "gpus_per_node; the other keys are optional)"
            )
        group = object.__new__(cls)
        for key in _GROUP_KEYS:
            object.__setattr__(group, key, spec.get(key, cls.__dataclass_fields__[key].default))
        group._check(where)
        return group


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """A cluster as a list of node groups (several groups make a heterogeneous cluster).

    Attributes:
        groups: The node groups, in node-index order; at most 65,536 GPUs in all
            (``gpushare_env.sim.limits``).
        max_jobs_per_gpu: Most workers (of different jobs) one GPU may host, an int >= 1
            and <= 64.
        name: A label for reports.
    """

    groups: tuple[NodeGroup, ...]
    max_jobs_per_gpu: int = 4
    name: str = "custom"

    def __post_init__(self) -> None:
        if isinstance(self.groups, list):
            object.__setattr__(self, "groups", tuple(self.groups))
        if not isinstance(self.groups, tuple) or not all(
            isinstance(group, NodeGroup) for group in self.groups
        ):
            raise ValueError(f"cluster.groups must be a list of NodeGroup, got {self.groups!r}")
        if not self.groups:
            raise ValueError("cluster: at least one node group is required")
        total = sum(group.nodes * group.gpus_per_node for group in self.groups)
        if total > MAX_CLUSTER_GPUS:
            raise ValueError(
                f"cluster: {total} GPUs in all (nodes x gpus_per_node, summed over the "
                f"groups), more than the {MAX_CLUSTER_GPUS} allowed"
            )
        cap = self.max_jobs_per_gpu
        if not (is_int(cap) and 1 <= cap <= MAX_JOBS_PER_GPU):
            raise ValueError(
                f"cluster.max_jobs_per_gpu must be an int {range_text(1, MAX_JOBS_PER_GPU)}, "
                f"got {cap!r}"
            )
        object.__setattr__(self, "max_jobs_per_gpu", int(cap))
        if not isinstance(self.name, str):
            raise ValueError(f"cluster.name must be a str, got {self.name!r}")

    @classmethod
    def from_any(cls, spec: str | Mapping[str, Any] | ClusterConfig) -> ClusterConfig:
        """Build from a preset name, a dict, or return a ``ClusterConfig`` unchanged.

        A dict has either ``nodes``, ``gpus_per_node``, ``gpu_type`` (and optionally
        ``memory_gib``) for a homogeneous cluster, or ``groups`` (a list of such dicts);
        ``max_jobs_per_gpu`` and ``name`` are optional.

        Raises:
            ValueError: An unknown preset or key, a missing key, or a bad value, named by
                its path (``cluster.groups[1].nodes``) with the allowed range.
            TypeError: ``spec`` is neither a preset name, a dict nor a ``ClusterConfig``.
        """
        if isinstance(spec, ClusterConfig):
            return spec
        if isinstance(spec, str):
            if spec not in PRESETS:
                raise ValueError(f"cluster: unknown preset {spec!r}; allowed: {sorted(PRESETS)}")
            return PRESETS[spec]
        if not isinstance(spec, Mapping):
            raise TypeError(f"cluster: expected a preset name or a dict, got {type(spec).__name__}")
        allowed = {*_GROUP_KEYS, "groups", "max_jobs_per_gpu", "name"}
        unknown = set(spec) - allowed
        if unknown:
            raise unknown_keys_error(
                "cluster", sorted(unknown, key=str), sorted(allowed), suggest=False
            )
        if "groups" in spec:
            mixed = sorted(set(spec) & set(_GROUP_KEYS))
            if mixed:
                raise ValueError(
                    f"cluster: give either 'groups' or the keys of one group, not both "
                    f"(got 'groups' and {mixed})"
                )
            specs = spec["groups"]
            if not isinstance(specs, (list, tuple)) or not specs:
                raise ValueError(
                    f"cluster.groups must be a non-empty list of node-group dicts, got {specs!r}"
                )
            groups = [
                NodeGroup.from_dict(group, f"cluster.groups[{i}]") for i, group in enumerate(specs)
            ]
        else:
            groups = [
                NodeGroup.from_dict({k: v for k, v in spec.items() if k in _GROUP_KEYS}, "cluster")
            ]
        return cls(
            groups=tuple(groups),
            max_jobs_per_gpu=spec.get("max_jobs_per_gpu", 4),
            name=spec.get("name", "custom"),
        )


def _homogeneous(name: str, nodes: int, gpus: int, gpu_type: str, mem: float | None = None):
    return ClusterConfig((NodeGroup(nodes, gpus, gpu_type, mem),), name=name)


#: Named clusters. ``philly`` follows Philly's machine list (8 GPUs x 24 GB per server).
PRESETS: dict[str, ClusterConfig] = {
    "tiny": _homogeneous("tiny", 1, 4, "v100"),
    "tiny2": _homogeneous("tiny2", 2, 2, "v100"),
    "thesis": _homogeneous("thesis", 4, 4, "v100"),
    "medium": _homogeneous("medium", 8, 8, "v100"),
    "philly": ClusterConfig((NodeGroup(256, 8, "p40", 24.0),), name="philly"),
    "mixed": ClusterConfig(
        (NodeGroup(4, 8, "v100"), NodeGroup(4, 8, "p100"), NodeGroup(2, 4, "a100")),
        name="mixed",
    ),
    # MIG clusters (A100-40GB, ``simulator.sharing = "mig"``): a small one, ``medium``'s
    # shape, and MISO's testbed-sized scenario (8 GPUs, docs/mig.md)
    "mig_tiny": _homogeneous("mig_tiny", 1, 4, "a100"),
    "mig_medium": _homogeneous("mig_medium", 8, 8, "a100"),
    "miso": _homogeneous("miso", 1, 8, "a100"),
}


def _openb(nodes: int, gpus: int, model: str, cpu_milli: int, memory_mib: int) -> NodeGroup:
    # the trace's durations are wall times on the GPUs the tasks ran on, so every model
    # runs at speed 1.0 (a V100's); V100M32 keeps its 32 GiB, the rest stand at 16 GiB
    # (G2 and G3 are undisclosed; memory is the memory model's limit, not the shares')
    gpu_type = "v100_32g" if model == "V100M32" else "v100"
    return NodeGroup(nodes, gpus, gpu_type, None, cpu_milli, memory_mib, model)


#: Alibaba's GPU-sharing cluster (``cluster-trace-gpu-v2023``,
#: ``openb_node_list_gpu_node.csv``: 1,213 nodes, 6,212 GPUs of 7 models), its nodes
#: grouped by (GPUs, model, CPU, host memory); tests/workloads/test_openb_over_time.py
#: checks it against the shipped node list. For the requested-shares model
#: (``simulator.sharing = "shares"``); a GPU holds at most 64 tasks, no cap in practice
#: (the trace's smallest share, 50 milli-GPU, fits 20 tasks on one GPU).
PRESETS["alibaba_openb"] = ClusterConfig(
    (
        _openb(2, 1, "A10", 128_000, 1_048_576),
        _openb(549, 8, "G2", 96_000, 393_216),
        _openb(39, 8, "G3", 128_000, 786_432),
        _openb(3, 1, "P100", 8_000, 61_440),
        _openb(2, 2, "P100", 8_000, 61_440),
        _openb(107, 2, "P100", 16_000, 122_880),
        _openb(22, 2, "P100", 64_000, 262_144),
        _openb(387, 2, "T4", 104_000, 524_288),
        _openb(17, 4, "T4", 96_000, 393_216),
        _openb(19, 1, "V100M16", 8_000, 32_768),
        _openb(28, 4, "V100M16", 32_000, 131_072),
        _openb(7, 8, "V100M16", 64_000, 262_144),
        _openb(1, 8, "V100M16", 82_000, 344_064),
        _openb(9, 4, "V100M32", 48_000, 376_832),
        _openb(21, 8, "V100M32", 96_000, 786_432),
    ),
    max_jobs_per_gpu=64,
    name="alibaba_openb",
)


@dataclass(slots=True)
class Cluster:
    """The static layout of a cluster as flat per-GPU arrays (GPUs are numbered node by node).

    Attributes:
        config: What it was built from.
        gpu_node: Node index of each GPU.  # (G,) int
        gpu_memory_gib: Memory of each GPU.  # (G,) [GiB]
        gpu_speed: Speed factor of each GPU relative to a V100.  # (G,)
        gpu_type: Type name of each GPU.  # (G,)
        node_gpus: GPU indices of each node, padded with -1.  # (N, max GPUs per node)
        node_model: Model name of each node's GPUs (``NodeGroup.model``, else their
            type).  # (N,)
        node_cpu_milli: CPU of each node, in milli-cores (inf: no limit).  # (N,)
        node_memory_mib: Host memory of each node (inf: no limit).  # (N,) [MiB]
    """

    config: ClusterConfig
    gpu_node: np.ndarray  # (G,) int64
    gpu_memory_gib: np.ndarray  # (G,) float64 [GiB]
    gpu_speed: np.ndarray  # (G,) float64
    gpu_type: tuple[str, ...]
    node_gpus: np.ndarray = field(repr=False)  # (N, M) int64, -1 padded
    node_model: tuple[str, ...] = field(repr=False)
    node_cpu_milli: np.ndarray = field(repr=False)  # (N,) float64
    node_memory_mib: np.ndarray = field(repr=False)  # (N,) float64 [MiB]

    @property
    def gpu_model(self) -> tuple[str, ...]:
        """Model name of each GPU (its node's).  # (G,)"""
        return tuple(self.node_model[node] for node in self.gpu_node.tolist())

    @property
    def num_gpus(self) -> int:
        """Total GPUs."""
        return int(self.gpu_node.shape[0])

    @property
    def num_nodes(self) -> int:
        """Total nodes."""
        return int(self.node_gpus.shape[0])

    @property
    def max_jobs_per_gpu(self) -> int:
        """Most workers one GPU may host."""
        return self.config.max_jobs_per_gpu

    def describe(self) -> str:
        """One line such as ``thesis: 4 nodes x 4 v100 (16 GiB)``."""
        parts = []
        for g in self.config.groups:
            mem = g.memory_gib if g.memory_gib is not None else GPU_TYPES[g.gpu_type].memory_gib
            kind = g.gpu_type if g.model is None else f"{g.model} (as {g.gpu_type})"
            parts.append(f"{g.nodes} nodes x {g.gpus_per_node} {kind} ({mem:g} GiB)")
        return f"{self.config.name}: " + " + ".join(parts)


def make_cluster(spec: str | Mapping[str, Any] | ClusterConfig) -> Cluster:
    """Build the per-GPU arrays of a cluster from a preset name, a dict or a config."""
    config = ClusterConfig.from_any(spec)
    nodes: list[int] = []
    memory: list[float] = []
    speed: list[float] = []
    types: list[str] = []
    models: list[str] = []
    rows: list[list[int]] = []
    node_cpu: list[float] = []
    node_memory: list[float] = []
    node = 0
    for group in config.groups:
        gpu_type: GPUType = GPU_TYPES[group.gpu_type]
        mem = group.memory_gib if group.memory_gib is not None else gpu_type.memory_gib
        for _ in range(group.nodes):
            first = len(nodes)
            rows.append(list(range(first, first + group.gpus_per_node)))
            nodes.extend([node] * group.gpus_per_node)
            memory.extend([mem] * group.gpus_per_node)
            speed.extend([gpu_type.speed] * group.gpus_per_node)
            types.extend([gpu_type.name] * group.gpus_per_node)
            models.append(group.model or gpu_type.name)
            node_cpu.append(math.inf if group.cpu_milli is None else float(group.cpu_milli))
            node_memory.append(math.inf if group.memory_mib is None else float(group.memory_mib))
            node += 1
    width = max(len(r) for r in rows)
    node_gpus = np.full((len(rows), width), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        node_gpus[i, : len(row)] = row
    return Cluster(
        config=config,
        gpu_node=np.asarray(nodes, dtype=np.int64),
        gpu_memory_gib=np.asarray(memory, dtype=np.float64),
        gpu_speed=np.asarray(speed, dtype=np.float64),
        gpu_type=tuple(types),
        node_gpus=node_gpus,
        node_model=tuple(models),
        node_cpu_milli=np.asarray(node_cpu, dtype=np.float64),
        node_memory_mib=np.asarray(node_memory, dtype=np.float64),
    )


def unfit_reason(
    num_gpus: int, memory_gib: float, memory_desc: np.ndarray
) -> tuple[str, str] | None:
    """Why a job can never be placed on a cluster, even empty, or ``None`` if it can.

    A job's workers need distinct GPUs (on any nodes), each with at least the worker's
    memory, so it fits an empty cluster iff at least ``num_gpus`` GPUs have
    ``memory_gib``: on a mixed cluster a job may ask for fewer GPUs than the cluster has
    and less memory than its largest GPU, and still find too few GPUs large enough.

    Args:
        num_gpus: The job's workers.
        memory_gib: Memory of one worker.  [GiB]
        memory_desc: Every GPU's memory, sorted in descending order.  (G,) [GiB]

    Returns:
        ``(reason, detail)``: the reason key (``"no_gpu"``: a job without GPUs, which
        only the shares model runs; ``"too_many_gpus"``, ``"too_much_memory"``,
        ``"too_few_large_gpus"``) and a sentence naming the numbers.
    """
    if num_gpus == 0:
        return (
            "no_gpu",
            "num_gpus 0: a job without GPUs runs only under the requested-shares model "
            "(simulator.sharing = 'shares')",
        )
    total = int(memory_desc.shape[0])
    if num_gpus > total:
        return "too_many_gpus", f"num_gpus {num_gpus} > the cluster's {total} GPUs"
    largest = float(memory_desc[0])
    if memory_gib > largest + _EPS:
        return (
            "too_much_memory",
            f"memory_gib {memory_gib:g} > the largest GPU's {largest:g} GiB",
        )
    if memory_gib > float(memory_desc[num_gpus - 1]) + _EPS:
        large = int(np.count_nonzero(memory_desc + _EPS >= memory_gib))
        return (
            "too_few_large_gpus",
            f"its {num_gpus} workers of memory_gib {memory_gib:g} need {num_gpus} GPUs of "
            f">= {memory_gib:g} GiB, the cluster has only {large}",
        )
    return None


#: GPU models a cluster may mix under the shares model (a job's allowed models are a bit
#: set in the core).
MAX_GPU_MODELS = 63


def gpu_models(cluster: Cluster) -> tuple[str, ...]:
    """The cluster's GPU model names (``Cluster.gpu_model``), sorted:
    ``ClusterInput.gpu_model`` indexes them.

    Raises:
        ValueError: more than ``MAX_GPU_MODELS`` types.
    """
    models = tuple(sorted(set(cluster.node_model)))
    if len(models) > MAX_GPU_MODELS:
        raise ValueError(
            f"cluster {cluster.config.name}: {len(models)} GPU models, at most "
            f"{MAX_GPU_MODELS} are supported"
        )
    return models


def model_mask(request: Request, models: tuple[str, ...]) -> int:
    """The bit set over ``models`` of the GPU models ``request`` allows (-1: any)."""
    if not request.gpu_models:
        return -1
    return sum(1 << i for i, name in enumerate(models) if name in request.gpu_models)


def shares_unfit_reason(
    num_gpus: int, request: Request, cluster: Cluster
) -> tuple[str, str] | None:
    """``unfit_reason`` under the shares model: a job fits an empty cluster iff one node
    has ``num_gpus`` GPUs of a model it allows and the CPU and host memory it requests
    (its GPUs are on one node; any share of a GPU fits an idle one). A job without GPUs
    needs only the CPU and host memory, on a node of any model.

    Returns:
        ``(reason, detail)`` (``"too_many_gpus"``, ``"no_allowed_model"``,
        ``"too_much_cpu"``, ``"too_much_host_memory"``, ``"no_node"``) or ``None``.
    """
    wanted = request.gpu_models if num_gpus else ()
    fits = (
        (np.count_nonzero(cluster.node_gpus >= 0, axis=1) >= num_gpus)
        & (cluster.node_cpu_milli >= request.cpu_milli)
        & (cluster.node_memory_mib >= request.host_memory_mib)
    )
    if wanted:
        fits &= np.fromiter((m in wanted for m in cluster.node_model), bool, cluster.num_nodes)
    if fits.any():
        return None
    # why not: the first limit no node meets
    width = int(cluster.node_gpus.shape[1])
    if num_gpus > width:
        return "too_many_gpus", f"num_gpus {num_gpus} > the largest node's {width} GPUs"
    if wanted and not set(wanted) & set(cluster.node_model):
        return (
            "no_allowed_model",
            f"request.gpu_models {list(wanted)}: the cluster has only "
            f"{sorted(set(cluster.node_model))}",
        )
    if request.cpu_milli > float(cluster.node_cpu_milli.max()):
        return (
            "too_much_cpu",
            f"request.cpu_milli {request.cpu_milli} > the largest node's "
            f"{cluster.node_cpu_milli.max():g}",
        )
    if request.host_memory_mib > float(cluster.node_memory_mib.max()):
        return (
            "too_much_host_memory",
            f"request.host_memory_mib {request.host_memory_mib} > the largest node's "
            f"{cluster.node_memory_mib.max():g} MiB",
        )
    return (
        "no_node",
        f"no node has {num_gpus} GPU(s) of {list(request.gpu_models) or 'any model'} with "
        f"{request.cpu_milli} milli-CPU and {request.host_memory_mib} MiB free",
    )
