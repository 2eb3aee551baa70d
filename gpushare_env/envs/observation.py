"""The observation layout of ``GPUShare-v0``: feature names, spaces and buffer offsets.

The observation and the action mask are computed by the simulator's compiled core
(``gpushare_env.compiled._core``) into one flat ``float32`` buffer, incrementally: per-GPU
rows and the fragment histogram only for the GPUs a decision or event touched, a pending
row once when its job enters the queue, running rows when their job's rate changes (else
extrapolated). This module names the columns it writes and builds the spaces; tests
compare the core's observations with values recomputed from the read-only view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from gpushare_env.envs.features import (
    BLOCKS,
    CLUSTER_SUMMARY,
    FRAG_BIN_EDGES_GIB,
    GANG_WIDTHS,
    OBSERVE_OPTIONS,
    SUMMARY_FREE_BINS,
    SUMMARY_GPU_TYPES,
    Feature,
    block_features,
)
from gpushare_env.sim.engine import time_feature
from gpushare_env.sim.placement import STRATEGIES

if TYPE_CHECKING:
    from gpushare_env.sim.cluster import Cluster

__all__ = [
    "CLUSTER_FEATURES",
    "DRAIN_FEATURE",
    "FRAG_BIN_EDGES_GIB",
    "FRAG_FEATURES",
    "GLOBAL_FEATURES",
    "GPU_FEATURES",
    "HELD_TIME_FEATURE",
    "PENDING_FEATURES",
    "PLACEMENT_FEATURES",
    "RUNNING_FEATURES",
    "SHARES_FEATURE",
    "ClusterSummary",
    "log_time",
    "observation_bounds",
    "observation_space",
    "observed_columns",
    "pending_features",
    "running_features",
    "split_observation",
    "summary_space",
]


def _names(block: str, *options: str) -> tuple[str, ...]:
    return tuple(f.name for f in block_features(block, set(options)))


#: Columns of ``obs["gpus"]`` (one row per GPU, flattened GPU-major).
GPU_FEATURES: tuple[str, ...] = _names("gpus")

#: Entries of ``obs["frag_hist"]``: shares of all GPUs, summing to 1.
FRAG_FEATURES: tuple[str, ...] = _names("frag_hist")

#: Columns of ``obs["pending"]`` (one row per pending slot, flattened slot-major).
PENDING_FEATURES: tuple[str, ...] = _names("pending")

#: Columns of ``obs["running"]``: the pending columns plus the current speed.
RUNNING_FEATURES: tuple[str, ...] = _names("running")

#: ``observation.held_time``'s running column.
HELD_TIME_FEATURE = "held_time"

#: ``observation.placement``'s pending columns (``shares_gpu`` is its running one).
PLACEMENT_FEATURES: tuple[str, ...] = ("pack_load", "spread_load")

#: ``observation.placement``'s running column.
SHARES_FEATURE = "shares_gpu"

#: ``observation.drain``'s column, last in the pending and the running rows.
DRAIN_FEATURE = "drain_share"

#: ``observation.rivals``'s running columns, before ``drain_share``.
RIVAL_FEATURES: tuple[str, ...] = ("rival_wait", "rival_remaining")

#: Entries of ``obs["global"]``.
GLOBAL_FEATURES: tuple[str, ...] = _names("global")

#: Columns of ``obs["cluster"]`` (``observation.cluster_summary``; one row per GPU type of
#: ``SUMMARY_GPU_TYPES``).
CLUSTER_FEATURES: tuple[str, ...] = tuple(f.name for f in CLUSTER_SUMMARY)


def summary_space() -> spaces.Box:
    """The ``Box`` of ``obs["cluster"]``: the same for every cluster."""
    return _box(CLUSTER_SUMMARY, len(SUMMARY_GPU_TYPES))


def _box(features: tuple[Feature, ...], rows: int) -> spaces.Box:
    """``rows`` rows of ``features``, flattened, each column bounded as registered."""
    low = np.tile(np.array([f.low for f in features], dtype=np.float32), rows)
    high = np.tile(np.array([f.high for f in features], dtype=np.float32), rows)
    return spaces.Box(low, high, dtype=np.float32)


class ClusterSummary:
    """``obs["cluster"]`` of one cluster, from its per-GPU table (``obs["gpus"]``'s rows).

    What does not change during an episode (the GPUs of each type, their nodes and
    memory) is laid out once; each call is one pass of the compiled core over the GPUs
    (``gpushare_env.compiled._core.summarise_cluster``).

    Example:
        >>> from gpushare_env.sim import make_cluster
        >>> summary = ClusterSummary(make_cluster("thesis"))
        >>> idle = np.zeros((16, len(GPU_FEATURES)), dtype=np.float32)
        >>> idle[:, GPU_FEATURES.index("free_memory")] = 1.0
        >>> row = summary(idle).reshape(len(SUMMARY_GPU_TYPES), -1)[0]  # the v100 row
        >>> dict(zip(CLUSTER_FEATURES, row.round(2).tolist()))["gangs_4"]
        1.0
    """

    def __init__(self, cluster: Cluster) -> None:
        from gpushare_env.compiled._core import summarise_cluster

        self._kernel = summarise_cluster
        types = len(SUMMARY_GPU_TYPES)
        self._kind = np.array([SUMMARY_GPU_TYPES.index(t) for t in cluster.gpu_type], np.int64)
        self._node = np.ascontiguousarray(cluster.gpu_node, dtype=np.int64)
        self._node_kind = np.zeros(cluster.num_nodes, dtype=np.int64)
        self._node_kind[self._node] = self._kind
        counts = np.bincount(self._kind, minlength=types).astype(np.float64)
        self._per_gpu = np.divide(1.0, counts, out=np.zeros(types), where=counts > 0)
        memory = np.asarray(cluster.gpu_memory_gib, dtype=np.float64)
        type_memory = np.bincount(self._kind, weights=memory, minlength=types)
        # the summary averages over a type's GPUs: weighing each GPU's free share by its
        # memory x (type's GPUs / type's memory) makes the mean free memory / type memory
        self._memory_weight = memory * counts[self._kind] / type_memory[self._kind]
        self._static = np.stack([counts / counts.sum(), np.log2(1.0 + counts) / 16.0], axis=1)
        self._max_jobs = float(cluster.max_jobs_per_gpu)
        self._edges = np.asarray(SUMMARY_FREE_BINS[:-1], dtype=np.float64)
        self._widths = np.asarray(GANG_WIDTHS, dtype=np.int64)
        self._idle_per_node = np.zeros(cluster.num_nodes)
        self._sums = np.zeros(types * len(CLUSTER_SUMMARY))
        # a 3-tuple, not a list: the kernel takes three column arguments
        self._columns = (
            GPU_FEATURES.index("free_memory"),
            GPU_FEATURES.index("load"),
            GPU_FEATURES.index("workers"),
        )

    def __call__(self, table: np.ndarray) -> np.ndarray:
        """The summary of a ``(GPUs, len(GPU_FEATURES))`` table (or its flat rows),
        flattened type-major."""
        out = np.empty(len(self._sums), dtype=np.float32)
        self._kernel(
            np.ascontiguousarray(table, dtype=np.float32).ravel(), len(GPU_FEATURES),
            *self._columns, self._kind, self._node, self._node_kind, self._per_gpu,
            self._memory_weight, self._static, self._max_jobs, self._edges, self._widths,
            self._idle_per_node, self._sums, out,
        )  # fmt: skip
        return out


def _options(
    held_time: bool = False, placement: bool = False, drain: bool = False, rivals: bool = False
) -> tuple[str, ...]:
    on = {"held_time": held_time, "placement": placement, "drain": drain, "rivals": rivals}
    return tuple(option for option in OBSERVE_OPTIONS if on[option.removeprefix("observation.")])


def pending_features(placement: bool = False, drain: bool = False) -> tuple[str, ...]:
    """Columns of ``obs["pending"]``: ``PENDING_FEATURES``, then the placement loads and
    ``drain_share`` if asked."""
    return _names("pending", *_options(placement=placement, drain=drain))


def running_features(
    held_time: bool = False, placement: bool = False, drain: bool = False, rivals: bool = False
) -> tuple[str, ...]:
    """Columns of ``obs["running"]``: ``RUNNING_FEATURES``, then ``held_time``,
    ``shares_gpu``, ``RIVAL_FEATURES`` and ``drain_share`` if asked."""
    return _names("running", *_options(held_time, placement, drain, rivals))


def observed_columns(
    held_time: bool = False, placement: bool = False, drain: bool = False, rivals: bool = False
) -> dict[str, tuple[str, ...]]:
    """The column names of every observation key with these options (what the compiled
    core is told, and looks its column indices up in)."""
    options = set(_options(held_time, placement, drain, rivals))
    return {key: tuple(f.name for f in block_features(key, options)) for key in BLOCKS}


_NUM_GPU_F = len(GPU_FEATURES)
_NUM_FRAG = len(FRAG_FEATURES)
_NUM_GLOBAL = len(GLOBAL_FEATURES)

# The action layout (4 strategies per pending slot, exclusive first) is the core's too.
if STRATEGIES != ("exclusive", "pack", "spread", "min_frag"):  # pragma: no cover
    raise ImportError(f"GPUShare-v0's action layout assumes 4 strategies, got {STRATEGIES}")


def log_time(seconds: float) -> float:
    """Time feature: ``min(1, log10(1 + seconds) / 7)`` (1 s -> 0.04, 1 h -> 0.51, 1 d -> 0.71),
    as the core writes it (``gpushare_env.compiled._core.time_feature``)."""
    return float(time_feature(seconds))


def observation_space(
    num_gpus: int,
    pending_window: int,
    running_window: int,
    held_time: bool = False,
    placement: bool = False,
    drain: bool = False,
    rivals: bool = False,
) -> spaces.Dict:
    """The ``Dict`` of flat ``float32`` ``Box`` es (SB3 ``MultiInputPolicy``), each
    column bounded as its feature is registered (all in ``[0, 1]`` today)."""
    options = set(_options(held_time, placement, drain, rivals))
    rows = {"gpus": num_gpus, "frag_hist": 1, "pending": pending_window,
            "running": running_window, "global": 1}  # fmt: skip
    boxes: dict[str, spaces.Space[Any]] = {}
    for key in _KEYS:
        boxes[key] = _box(block_features(key, options), rows[key])
    return spaces.Dict(boxes)


def observation_bounds(
    num_gpus: int,
    pending_window: int,
    running_window: int,
    held_time: bool = False,
    placement: bool = False,
    drain: bool = False,
    rivals: bool = False,
) -> list[int]:
    """Offsets of the observation's keys in one flat buffer (``gpus``, ``frag_hist``,
    ``pending``, ``running``, ``global``; the last entry is the buffer's length)."""
    sizes = _block_sizes(
        num_gpus, pending_window, running_window, held_time, placement, drain, rivals
    )
    return np.cumsum((0, *sizes)).tolist()


_KEYS = ("gpus", "frag_hist", "pending", "running", "global")


def _block_sizes(
    num_gpus: int,
    pending_window: int,
    running_window: int,
    held_time: bool,
    placement: bool,
    drain: bool,
    rivals: bool,
) -> tuple[int, ...]:
    """Entries of each observation key, in ``_KEYS`` order."""
    return (
        num_gpus * _NUM_GPU_F,
        _NUM_FRAG,
        pending_window * len(pending_features(placement, drain)),
        running_window * len(running_features(held_time, placement, drain, rivals)),
        _NUM_GLOBAL,
    )


def split_observation(flat: np.ndarray, bounds: list[int]) -> dict[str, np.ndarray]:
    """The observation dict as slices of one flat buffer (``observation_bounds``)."""
    return {key: flat[bounds[i] : bounds[i + 1]] for i, key in enumerate(_KEYS)}
