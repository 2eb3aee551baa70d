"""The observation layout of ``GPUShare-v0``: feature names, spaces and buffer offsets.

The observation and the action mask are computed by the simulator's compiled core
(``gpushare_env.compiled._core``) into one flat ``float32`` buffer, incrementally: per-GPU
rows and the fragment histogram only for the GPUs a decision or event touched, a pending
row once when its job enters the queue, running rows when their job's rate changes (else
extrapolated). This module names the columns it writes and builds the spaces; tests
compare the core's observations with values recomputed from the read-only view.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.placement import STRATEGIES

if TYPE_CHECKING:
    pass

__all__ = [
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
    "log_time",
    "observation_bounds",
    "observation_space",
    "pending_features",
    "running_features",
    "split_observation",
]

#: Columns of ``obs["gpus"]`` (one row per GPU, flattened GPU-major).
GPU_FEATURES: tuple[str, ...] = (
    "free_memory",  # free / capacity
    "load",  # compute load U_g / max_jobs_per_gpu
    "workers",  # workers holding memory / max_jobs_per_gpu
    "node",  # node index / (nodes - 1)
    "speed",  # speed factor / fastest GPU of the cluster
    "capacity",  # memory / largest GPU of the cluster
)

#: Upper edges of the free-memory bins of ``obs["frag_hist"]``.  [GiB]
FRAG_BIN_EDGES_GIB: tuple[float, ...] = (2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)


def _bin_names() -> tuple[str, ...]:
    lows = (0.0, *FRAG_BIN_EDGES_GIB)
    highs = (*FRAG_BIN_EDGES_GIB, math.inf)
    return tuple(f"shared_free_{lo:g}_{hi:g}gib" for lo, hi in zip(lows, highs, strict=True))


#: Entries of ``obs["frag_hist"]``: shares of all GPUs, summing to 1.
FRAG_FEATURES: tuple[str, ...] = ("idle", *_bin_names(), "no_slot")

_MODEL_NAMES: tuple[str, ...] = tuple(MODELS)

#: Columns of ``obs["pending"]`` (one row per pending slot, flattened slot-major).
PENDING_FEATURES: tuple[str, ...] = (
    "valid",  # 1 if the slot holds a job
    "num_gpus",  # log2(1 + n) / log2(1 + cluster GPUs)
    "memory",  # per-worker memory / largest GPU
    "intensity",  # GPU intensity u in (0, 1]
    *(f"model_{name}" for name in _MODEL_NAMES),  # one-hot (all 0 for other models)
    "wait",  # log_time(time waiting since it (re)entered the queue); running: total wait
    "sampled",  # step time measured
    "duration_known",  # predicted_remaining is defined (duration_info)
    "predicted_remaining",  # log_time(predicted remaining solo time), 0 if unknown
    "suspended",  # waits after a suspension (resuming costs an overhead)
    "progress",  # fraction of iterations done
)

#: Columns of ``obs["running"]``: the pending columns plus the current speed.
RUNNING_FEATURES: tuple[str, ...] = (
    *PENDING_FEATURES,
    "speed",  # current speed (x solo V100) / fastest GPU of the cluster
)

#: The optional last column of ``obs["running"]`` (``EnvConfig.observe_held_time``):
#: ``log_time`` of the time since the job got its current GPUs (its last start or
#: resume), what time-slicing schedulers such as Gandiva decide by.
HELD_TIME_FEATURE = "held_time"


#: The optional last columns of ``obs["pending"]`` (``EnvConfig.observe_placement``): the
#: compute load the GPUs that ``pack`` / ``spread`` would give the job would reach with it
#: (the largest ``U_g + u`` among them, / ``max_jobs_per_gpu``; 0 when the strategy finds
#: no GPUs), what packing schedulers such as Gandiva decide by.
PLACEMENT_FEATURES: tuple[str, ...] = ("pack_load", "spread_load")

#: The optional last column of ``obs["running"]`` (``EnvConfig.observe_placement``): 1 if
#: another job holds memory on one of the job's GPUs (suspending it frees no whole GPU).
SHARES_FEATURE = "shares_gpu"

#: The optional last column of ``obs["pending"]`` and ``obs["running"]``
#: (``EnvConfig.observe_drain``): ``r / (r + D)``, where ``r`` is the job's predicted
#: remaining solo time (0 if unknown) and ``D`` the time the cluster needs to drain the
#: predicted work of every job in the system at full use (the sum of ``remaining x GPUs``
#: / GPUs). A job is on the critical path of the thesis's rule with factor ``f`` when
#: ``r >= f D``, that is when this column is at least ``f / (1 + f)``.
DRAIN_FEATURE = "drain_share"

#: The optional columns of ``obs["running"]`` (``EnvConfig.observe_rivals``), before
#: ``drain_share``: over the waiting jobs of the whole queue that request as many GPUs as
#: the running job (its rivals for those GPUs), ``log_time`` of the longest current wait
#: and of the shortest predicted remaining solo time (0 if none, or none predicted), what
#: time-slicing schedulers decide by when they swap a running job for a waiting one.
RIVAL_FEATURES: tuple[str, ...] = ("rival_wait", "rival_remaining")


def pending_features(placement: bool = False, drain: bool = False) -> tuple[str, ...]:
    """Columns of ``obs["pending"]``: ``PENDING_FEATURES``, then the placement loads and
    ``drain_share`` if asked."""
    extra = PLACEMENT_FEATURES * placement + (DRAIN_FEATURE,) * drain
    return (*PENDING_FEATURES, *extra)


def running_features(
    held_time: bool = False, placement: bool = False, drain: bool = False, rivals: bool = False
) -> tuple[str, ...]:
    """Columns of ``obs["running"]``: ``RUNNING_FEATURES``, then ``held_time``,
    ``shares_gpu``, ``RIVAL_FEATURES`` and ``drain_share`` if asked."""
    extra = (HELD_TIME_FEATURE,) * held_time + (SHARES_FEATURE,) * placement
    return (*RUNNING_FEATURES, *extra, *RIVAL_FEATURES * rivals, *(DRAIN_FEATURE,) * drain)


#: Entries of ``obs["global"]``.
GLOBAL_FEATURES: tuple[str, ...] = (
    "time",  # log_time(simulated time)
    "waiting",  # waiting jobs / episode jobs
    "backlog",  # waiting jobs beyond the pending window / episode jobs
    "running",  # running jobs / episode jobs
    "in_transition",  # suspending or resuming jobs / episode jobs
    "in_system",  # arrived, unfinished jobs / episode jobs
    "finished",  # finished jobs / episode jobs
    "utilisation",  # sum of min(1, U_g) / GPUs
    "allocation",  # GPUs holding a worker / GPUs
    "free_memory",  # free memory / total memory
    "fragmentation",  # fragmented free memory / free memory
    "expected_fragment",  # FGD expected fragment / free memory
    "waiting_gpus",  # min(1, GPUs requested by waiting jobs / GPUs)
    "idle_gpus",  # idle GPUs / GPUs
    "can_advance",  # 1 if an event is still to come (advance is valid)
)

_NUM_GPU_F = len(GPU_FEATURES)
_NUM_FRAG = len(FRAG_FEATURES)
_NUM_GLOBAL = len(GLOBAL_FEATURES)
_LOG_TIME_DECADES = 7.0  # log_time reaches 1 at 10**7 s (about 116 days)

# The action layout (4 strategies per pending slot, exclusive first) is the core's too.
if STRATEGIES != ("exclusive", "pack", "spread", "min_frag"):  # pragma: no cover
    raise ImportError(f"GPUShare-v0's action layout assumes 4 strategies, got {STRATEGIES}")


def log_time(seconds: float) -> float:
    """Time feature: ``min(1, log10(1 + seconds) / 7)`` (1 s -> 0.04, 1 h -> 0.51, 1 d -> 0.71)."""
    return min(1.0, math.log10(1.0 + max(seconds, 0.0)) / _LOG_TIME_DECADES)


def observation_space(
    num_gpus: int,
    pending_window: int,
    running_window: int,
    held_time: bool = False,
    placement: bool = False,
    drain: bool = False,
    rivals: bool = False,
) -> spaces.Dict:
    """The ``Dict`` of flat ``float32`` ``Box`` es in ``[0, 1]`` (SB3 ``MultiInputPolicy``)."""

    sizes = _block_sizes(
        num_gpus, pending_window, running_window, held_time, placement, drain, rivals
    )
    return spaces.Dict(
        {
            key: spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
            for key, size in zip(_KEYS, sizes, strict=True)
        }
    )


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
