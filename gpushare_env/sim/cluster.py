"""Cluster topology: nodes of GPUs, homogeneous or mixed, and the named presets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpushare_env.sim.catalog import GPU_TYPES, GPUType

__all__ = ["PRESETS", "Cluster", "ClusterConfig", "NodeGroup", "make_cluster"]


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``nodes`` identical servers of ``gpus_per_node`` GPUs of one type.

    Attributes:
        nodes: Number of servers, >= 1.
        gpus_per_node: GPUs per server, >= 1.
        gpu_type: Key of ``GPU_TYPES``.
        memory_gib: Overrides the type's memory when given.  # [GiB]
    """

    nodes: int
    gpus_per_node: int
    gpu_type: str = "v100"
    memory_gib: float | None = None  # [GiB]

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError(f"cluster: nodes must be >= 1, got {self.nodes}")
        if self.gpus_per_node < 1:
            raise ValueError(f"cluster: gpus_per_node must be >= 1, got {self.gpus_per_node}")
        if self.gpu_type not in GPU_TYPES:
            raise ValueError(
                f"cluster: unknown gpu_type {self.gpu_type!r}; allowed: {sorted(GPU_TYPES)}"
            )
        if self.memory_gib is not None and not self.memory_gib > 0:
            raise ValueError(f"cluster: memory_gib must be > 0, got {self.memory_gib}")


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """A cluster as a list of node groups (several groups make a heterogeneous cluster).

    Attributes:
        groups: The node groups, in node-index order.
        max_jobs_per_gpu: Most workers (of different jobs) one GPU may host at once.
        name: A label for reports.
    """

    groups: tuple[NodeGroup, ...]
    max_jobs_per_gpu: int = 4
    name: str = "custom"

    def __post_init__(self) -> None:
        if not self.groups:
            raise ValueError("cluster: at least one node group is required")
        if self.max_jobs_per_gpu < 1:
            raise ValueError(f"cluster: max_jobs_per_gpu must be >= 1, got {self.max_jobs_per_gpu}")

    @classmethod
    def from_any(cls, spec: str | Mapping[str, Any] | ClusterConfig) -> ClusterConfig:
        """Build from a preset name, a dict, or return a ``ClusterConfig`` unchanged.

        A dict has either ``nodes``, ``gpus_per_node``, ``gpu_type`` (and optionally
        ``memory_gib``) for a homogeneous cluster, or ``groups`` (a list of such dicts);
        ``max_jobs_per_gpu`` and ``name`` are optional.
        """
        if isinstance(spec, ClusterConfig):
            return spec
        if isinstance(spec, str):
            if spec not in PRESETS:
                raise ValueError(f"cluster: unknown preset {spec!r}; allowed: {sorted(PRESETS)}")
            return PRESETS[spec]
        if not isinstance(spec, Mapping):
            raise TypeError(f"cluster: expected a preset name or a dict, got {type(spec).__name__}")
        group_keys = {"nodes", "gpus_per_node", "gpu_type", "memory_gib"}
        allowed = group_keys | {"groups", "max_jobs_per_gpu", "name"}
        unknown = set(spec) - allowed
        if unknown:
            raise ValueError(f"cluster: unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
        if "groups" in spec:
            groups = []
            for i, group in enumerate(spec["groups"]):
                bad = set(group) - group_keys
                if bad:
                    raise ValueError(
                        f"cluster.groups[{i}]: unknown keys {sorted(bad)}; "
                        f"allowed: {sorted(group_keys)}"
                    )
                groups.append(NodeGroup(**group))
        else:
            groups = [NodeGroup(**{k: spec[k] for k in group_keys if k in spec})]
        return cls(
            groups=tuple(groups),
            max_jobs_per_gpu=int(spec.get("max_jobs_per_gpu", 4)),
            name=str(spec.get("name", "custom")),
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
}


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
    """

    config: ClusterConfig
    gpu_node: np.ndarray  # (G,) int64
    gpu_memory_gib: np.ndarray  # (G,) float64 [GiB]
    gpu_speed: np.ndarray  # (G,) float64
    gpu_type: tuple[str, ...]
    node_gpus: np.ndarray = field(repr=False)  # (N, M) int64, -1 padded

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
            parts.append(f"{g.nodes} nodes x {g.gpus_per_node} {g.gpu_type} ({mem:g} GiB)")
        return f"{self.config.name}: " + " + ".join(parts)


def make_cluster(spec: str | Mapping[str, Any] | ClusterConfig) -> Cluster:
    """Build the per-GPU arrays of a cluster from a preset name, a dict or a config."""
    config = ClusterConfig.from_any(spec)
    nodes: list[int] = []
    memory: list[float] = []
    speed: list[float] = []
    types: list[str] = []
    rows: list[list[int]] = []
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
    )
