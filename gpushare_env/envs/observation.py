"""Observation and action-mask encoding of ``GPUShare-v0``, incremental and allocation-light.

The encoder keeps preallocated arrays and per-job feature rows and updates only what
changed since the previous decision:

* per-GPU rows and the fragment histogram: only the GPUs the last decision or events
  touched (the env reports them);
* pending rows: a job's row is written once when it enters the queue (arrival, end of a
  suspension); while it waits only its wait time moves, computed for the window at once;
* running rows: rewritten when the job's rate changes (its simulator version), else
  progress and predicted remaining time are extrapolated for the window at once;
* the schedule mask: per-GPU "how many of the workload's worker sizes fit here" levels,
  kept for touched GPUs, turn "do ``n`` workers of ``m`` GiB fit?" into one comparison.

So a decision costs O(window + touched GPUs) Python work plus a few numpy calls and one
memcpy of the observation buffer, not a pass over the cluster in Python. The encoder
knows which simulator events change which GPUs (tests compare it with an observation
rebuilt from scratch). Feature layouts are the module constants below (documented in
the env).
"""

from __future__ import annotations

import bisect
import math
import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.placement import STRATEGIES
from gpushare_env.sim.types import JobStatus

if TYPE_CHECKING:
    from gpushare_env.sim.engine import JobState, Simulator
    from gpushare_env.sim.view import SimView

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
    "StateEncoder",
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

_P = {name: i for i, name in enumerate(RUNNING_FEATURES)}
_VALID, _NGPU, _MEM, _INT = _P["valid"], _P["num_gpus"], _P["memory"], _P["intensity"]
_MODEL0 = _P[f"model_{_MODEL_NAMES[0]}"]
_WAIT, _SAMPLED, _KNOWN = _P["wait"], _P["sampled"], _P["duration_known"]
_PRED, _SUSP, _PROG, _SPEED = (
    _P["predicted_remaining"],
    _P["suspended"],
    _P["progress"],
    _P["speed"],
)
_NUM_P = len(PENDING_FEATURES)
_NUM_R = len(RUNNING_FEATURES)
_NUM_GPU_F = len(GPU_FEATURES)
_NUM_FRAG = len(FRAG_FEATURES)
_NUM_GLOBAL = len(GLOBAL_FEATURES)
_NUM_STRATEGIES = len(STRATEGIES)
_EXCLUSIVE = STRATEGIES.index("exclusive")
_EPS = 1e-9  # [GiB] the simulator's memory tolerance
_LOG_TIME_DECADES = 7.0  # log_time reaches 1 at 10**7 s (about 116 days)
_INV_DECADES = 1.0 / _LOG_TIME_DECADES

# The four mask bytes of one pending slot, indexed by 2 * (the sharing strategies find
# GPUs) + (exclusive finds GPUs); the layout needs exclusive first among four strategies.
if STRATEGIES != ("exclusive", "pack", "spread", "min_frag"):  # pragma: no cover
    raise ImportError(f"GPUShare-v0's action layout assumes 4 strategies, got {STRATEGIES}")
_SLOT_BYTES = (b"\x00\x00\x00\x00", b"\x01\x00\x00\x00", b"\x00\x01\x01\x01", b"\x01\x01\x01\x01")


def log_time(seconds: float) -> float:
    """Time feature: ``min(1, log10(1 + seconds) / 7)`` (1 s -> 0.04, 1 h -> 0.51, 1 d -> 0.71)."""
    return min(1.0, math.log10(1.0 + max(seconds, 0.0)) / _LOG_TIME_DECADES)


# Struct writes into the float32 buffers from Python floats: a fraction of the cost of
# numpy item or sequence assignment (each numpy call costs about a microsecond).
_F32 = 4  # bytes of a float32
_PACK_GPU = struct.Struct("<3f").pack_into  # free, load, workers of one GPU row
_PACK_ONE = struct.Struct("<f").pack_into
_PACK_PENDING_TAIL = struct.Struct(f"<{_NUM_P - _WAIT}f").pack_into
_PACK_RUNNING_TAIL = struct.Struct(f"<{_NUM_R - _WAIT}f").pack_into
_PACK_GLOBAL = struct.Struct(f"<{_NUM_GLOBAL}f").pack_into


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


class StateEncoder:
    """Observation and mask of one episode's simulator, updated incrementally.

    The env calls :meth:`touch` with the GPUs every decision or event changed,
    :meth:`enqueued` / :meth:`dequeued` when a job enters / leaves the queue,
    :meth:`sampled` when a running job's step time gets measured, and keeps
    :attr:`in_transition`; then :meth:`update_mask` after every state change and
    :meth:`observe` once per step.

    Numpy calls cost about a microsecond each whatever their size, so the per-step work
    on the (small) windows and the touched GPUs is plain Python over per-job lists, and
    numpy is used once per block: all outputs live in one preallocated ``float32``
    buffer and :meth:`observe` returns slices of a single copy of it.

    Args:
        sim: The episode's simulator (read only).
        view: Its read-only view.
        pending_window: ``W``.
        running_window: ``R``.
        max_suspends_per_job: Mask ``suspend`` for jobs suspended this often (``None``: no cap).
        held_time: Append the ``held_time`` column to the running rows.
        placement: Append ``PLACEMENT_FEATURES`` to the pending rows and ``shares_gpu``
            to the running rows (computed afresh at every observation).
        drain: Append ``drain_share`` to the pending and running rows (computed afresh at
            every observation).
        rivals: Append ``RIVAL_FEATURES`` to the running rows (computed afresh at every
            observation).
    """

    def __init__(
        self,
        sim: Simulator,
        view: SimView,
        pending_window: int,
        running_window: int,
        max_suspends_per_job: int | None = None,
        held_time: bool = False,
        placement: bool = False,
        drain: bool = False,
        rivals: bool = False,
    ) -> None:
        self.sim = sim
        self.held_time = held_time
        self.placement = placement
        self.drain = drain
        self.rivals = rivals
        self._num_pw = len(pending_features(placement, drain))
        columns = running_features(held_time, placement, drain, rivals)
        self._num_r = len(columns)
        self._shares_column = columns.index(SHARES_FEATURE) if placement else -1
        self._rival_column = columns.index(RIVAL_FEATURES[0]) if rivals else -1
        self.view = view
        self.pending_window = pending_window
        self.running_window = running_window
        self.max_suspends_per_job = max_suspends_per_job
        cluster = sim.cluster
        state = sim.gpus
        g = cluster.num_gpus
        self.num_gpus = g
        self.max_jobs = cluster.max_jobs_per_gpu
        self._capacity = cluster.gpu_memory_gib
        max_capacity = float(cluster.gpu_memory_gib.max())
        self._inv_max_speed = 1.0 / float(cluster.gpu_speed.max())
        self._heterogeneous = bool(np.any(cluster.gpu_memory_gib != max_capacity))
        self._free = state.free_memory_gib  # the simulator's arrays (the same objects)
        self._load = state.load
        self._holders = state.holders
        self._inv_capacity: list[float] = (1.0 / cluster.gpu_memory_gib).tolist()
        self._inv_slots = 1.0 / self.max_jobs
        self._inv_gpus = 1.0 / g
        self._inv_total_memory = 1.0 / float(cluster.gpu_memory_gib.sum())

        # -- jobs: dense indices (generated workloads number jobs 0..J-1 already)
        specs = [job.spec for job in sim.jobs.values()]
        ids = [s.job_id for s in specs]
        self.num_jobs = len(specs)
        self._inv_jobs = 1.0 / self.num_jobs
        if min(ids) >= 0 and max(ids) < 4 * len(ids) + 1024:
            self._index: dict[int, int] | None = None  # an id is its own index
            size = max(ids) + 1
        else:
            self._index = {job_id: i for i, job_id in enumerate(ids)}
            size = len(ids)
        index = self._index
        self._mem_values: list[float] = sorted({s.memory_gib for s in specs})  # [GiB]
        # per job (by index): GPUs requested, index of its worker size in _mem_values,
        # iterations, and for a running job its progress as of t0, rate, t0 and measured
        # seconds per iteration (0 when unknown)
        self._need: list[int] = [0] * size
        self._size_index: list[int] = [0] * size
        self._iterations: list[float] = [1.0] * size
        self._p0: list[float] = [0.0] * size  # [iterations]
        self._rate: list[float] = [0.0] * size  # [iterations / s]
        self._t0: list[float] = [0.0] * size  # [s]
        self._step_s: list[float] = [0.0] * size  # [s / iteration]
        self._since: list[float] = [0.0] * size  # [s] queued_since - 1 (see log_time)
        self._version: list[int] = [-1] * size
        self._pend_rows = np.zeros((size, _NUM_P), dtype=np.float32)
        self._run_rows = np.zeros((size, self._num_r), dtype=np.float32)
        log_gpus = 1.0 / math.log2(1.0 + g)
        for s in specs:
            i = s.job_id if index is None else index[s.job_id]
            self._need[i] = s.num_gpus
            self._size_index[i] = self._mem_values.index(s.memory_gib)
            self._iterations[i] = float(s.iterations)
            row = self._pend_rows[i]
            row[_VALID] = 1.0
            row[_NGPU] = math.log2(1.0 + s.num_gpus) * log_gpus
            row[_MEM] = s.memory_gib / max_capacity
            row[_INT] = s.intensity
            if s.model in _MODEL_NAMES:
                row[_MODEL0 + _MODEL_NAMES.index(s.model)] = 1.0
            self._run_rows[i, :_NUM_P] = row

        # -- one float32 buffer holding every observation key, and views into it
        self._bounds = observation_bounds(
            g, pending_window, running_window, held_time, placement, drain, rivals
        )
        self._buffer = np.zeros(self._bounds[-1], dtype=np.float32)
        n_actions = pending_window * _NUM_STRATEGIES + running_window + 1
        self.mask = np.zeros(n_actions, dtype=bool)
        self._bind_views()
        num_nodes = max(cluster.num_nodes - 1, 1)
        self.gpu_rows[:, 3] = cluster.gpu_node / num_nodes
        self.gpu_rows[:, 4] = cluster.gpu_speed * self._inv_max_speed
        self.gpu_rows[:, 5] = cluster.gpu_memory_gib / max_capacity

        # -- per-GPU fragment categories and fit levels, with their counts
        self._category: list[int] = [0] * g
        self._category_counts: list[int] = [0] * _NUM_FRAG
        self._category_counts[0] = g
        self.frag_out[0] = 1.0
        self._level: list[int] = [0] * g
        # GPUs on which a worker of size index k fits (the simulator's test: a free
        # worker slot and free + 1e-9 >= size) = the GPUs whose level exceeds k
        self._fit_counts: list[int] = [0] * len(self._mem_values)
        self.idle_gpus = g
        self._fit_epoch = 0  # bumped whenever a fit count or the idle count changes
        self._touched: set[int] = set()
        self._refresh_gpus(range(g))

        self.pending_ids: list[int] = []
        self.running_ids: list[int] = []
        self.waiting_gpus = 0  # GPUs requested by waiting jobs
        self.in_transition = 0  # jobs suspending or resuming (kept by the env)
        self.has_choice = False
        self.can_advance = False
        # what the mask and the pending / running blocks were last computed for
        self._mask_key: tuple[int, list[int]] | None = None
        self._schedule_choice = False
        self._pending_rows_for: list[int] | None = None
        self._pending_filled = 0
        self._pending_now = math.nan
        self._running_rows_for: list[int] | None = None
        self._running_filled = 0
        self._running_now = math.nan

    def _bind_views(self) -> None:
        b = self._bounds
        buffer = self._buffer
        self.gpu_rows = buffer[b[0] : b[1]].reshape(self.num_gpus, _NUM_GPU_F)
        self.frag_out = buffer[b[1] : b[2]]
        self.pending_out = buffer[b[2] : b[3]].reshape(self.pending_window, self._num_pw)
        self.running_out = buffer[b[3] : b[4]].reshape(self.running_window, self._num_r)
        self.global_out = buffer[b[4] : b[5]]
        # flat byte views for struct writes (cheaper than numpy item assignment)
        self._buffer_bytes = self._buffer.data.cast("B")
        self._pend_bytes = self._pend_rows.data.cast("B")
        self._run_bytes = self._run_rows.data.cast("B")
        # byte offsets of the blocks in the buffer
        self._gpu_at = b[0] * _F32
        self._frag_at = b[1] * _F32
        self._global_at = b[4] * _F32

    # ------------------------------------------------------------ notifications
    def touch(self, gpus: tuple[int, ...]) -> None:
        """Record GPUs whose memory, load or workers changed."""
        self._touched.update(gpus)

    def enqueued(self, job: JobState) -> None:
        """A job (re)entered the queue: write its pending row once for the whole wait."""
        spec = job.spec
        i = spec.job_id if self._index is None else self._index[spec.job_id]
        self._since[i] = job.queued_since_s - 1.0
        self._version[i] = -1
        self.waiting_gpus += spec.num_gpus
        predicted = self.sim.predicted_remaining_s(spec.job_id)
        _PACK_PENDING_TAIL(
            self._pend_bytes,
            (i * _NUM_P + _WAIT) * _F32,
            0.0,  # the wait: computed at each observation
            1.0 if job.sampled else 0.0,
            0.0 if predicted is None else 1.0,
            0.0 if predicted is None else log_time(predicted),
            1.0 if job.status == JobStatus.SUSPENDED else 0.0,
            job.progress / spec.iterations,
        )
        self._pending_rows_for = None  # rebuild the pending block

    def dequeued(self, job_id: int) -> None:
        """A waiting job was placed."""
        self.waiting_gpus -= self._need[job_id if self._index is None else self._index[job_id]]

    def sampled(self, job_id: int) -> None:
        """A running job's step time was measured: rewrite its row at the next step."""
        self._version[job_id if self._index is None else self._index[job_id]] = -1

    # ------------------------------------------------------------------ GPUs
    def _refresh_gpus(self, gpus: Iterable[int]) -> None:
        """Rewrite the rows, fragment categories and fit levels of ``gpus``."""
        free_of = self._free
        holders_of = self._holders
        load_of = self._load
        buffer = self._buffer_bytes
        gpu_at = self._gpu_at
        frag_at = self._frag_at
        inv_capacity = self._inv_capacity
        inv_slots = self._inv_slots
        max_jobs = self.max_jobs
        edges = FRAG_BIN_EDGES_GIB
        sizes = self._mem_values
        category = self._category
        counts = self._category_counts
        level = self._level
        fit_counts = self._fit_counts
        inv_gpus = self._inv_gpus
        no_slot = _NUM_FRAG - 1
        changed = self._heterogeneous  # exclusive's choice may change with any GPU
        for g in gpus:
            free = free_of.item(g)
            holders = holders_of.item(g)
            load = load_of.item(g)
            # the simulator's sums may leave float dust below zero
            _PACK_GPU(
                buffer,
                gpu_at + g * (_NUM_GPU_F * _F32),
                free * inv_capacity[g] if free > 0.0 else 0.0,
                load * inv_slots if load > 0.0 else 0.0,
                holders * inv_slots,
            )
            if holders == 0:
                new = 0
            elif holders >= max_jobs:
                new = no_slot
            else:
                new = bisect.bisect_right(edges, free) + 1
            old = category[g]
            if new != old:
                category[g] = new
                counts[old] -= 1
                counts[new] += 1
                _PACK_ONE(buffer, frag_at + old * _F32, counts[old] * inv_gpus)
                _PACK_ONE(buffer, frag_at + new * _F32, counts[new] * inv_gpus)
                if new == 0 or old == 0:
                    self.idle_gpus += 1 if new == 0 else -1
                    changed = True
            new = bisect.bisect_right(sizes, free + _EPS) if holders < max_jobs else 0
            old = level[g]
            if new != old:
                level[g] = new
                changed = True
                if new > old:
                    for k in range(old, new):
                        fit_counts[k] += 1
                else:
                    for k in range(new, old):
                        fit_counts[k] -= 1
        if changed:
            self._fit_epoch += 1

    # ------------------------------------------------------------------ mask
    def update_mask(self) -> np.ndarray:
        """Recompute the action mask (and the window ids the actions address)."""
        touched = self._touched
        if touched:
            self._refresh_gpus(touched)
            touched.clear()
        sim = self.sim
        pending = sim.pending(self.pending_window)
        key = (self._fit_epoch, pending)
        if key != self._mask_key:
            # the schedule part depends only on the window and on the fit counts
            self._mask_key = key
            previous = len(self.pending_ids)
            self.pending_ids = pending
            self._schedule_choice = self._schedule_mask(pending, previous)
        width = self.pending_window * _NUM_STRATEGIES
        previous = len(self.running_ids)
        running = sim.running(self.running_window)
        self.running_ids = running
        k = len(running)
        mask = self.mask
        cap = self.max_suspends_per_job
        if cap is not None:
            jobs = sim.jobs
            mask[width : width + self.running_window] = False
            for j, job_id in enumerate(running):
                mask[width + j] = jobs[job_id].suspends < cap
            can_suspend = bool(mask[width : width + k].any())
        else:
            if k != previous:
                mask[width : width + self.running_window] = False
                mask[width : width + k] = True
            can_suspend = k > 0
        # an event is still to come iff a job computes (its completion), checkpoints or
        # restarts (their end), or a job has not arrived yet: the same answer as
        # sim.next_event_time() is not None (tested), without touching the event heap
        self.can_advance = (
            k > 0 or self.in_transition > 0 or sim.jobs_in_system + sim.num_finished < self.num_jobs
        )
        mask[-1] = self.can_advance
        self.has_choice = self._schedule_choice or can_suspend
        return self.mask

    def _schedule_mask(self, pending: list[int], previous: int) -> bool:
        """Write the schedule part of the mask; True if some schedule is valid."""
        need = self._need
        size_index = self._size_index
        fit_counts = self._fit_counts
        idle = self.idle_gpus
        index = self._index
        codes = []
        for job_id in pending:
            i = job_id if index is None else index[job_id]
            n = need[i]
            exclusive = n <= idle
            if exclusive and self._heterogeneous:
                exclusive = self._exclusive_memory_ok(job_id)
            codes.append(_SLOT_BYTES[2 * (n <= fit_counts[size_index[i]]) + exclusive])
        k = 4 * len(pending)
        if k or previous:
            tail = b"\x00" * (4 * previous - k) if previous * 4 > k else b""
            self.mask.data.cast("B")[: k + len(tail)] = b"".join(codes) + tail
        return any(code != _SLOT_BYTES[0] for code in codes)

    def _exclusive_memory_ok(self, job_id: int) -> bool:
        """On mixed GPU memories ``exclusive`` may pick an idle GPU too small: check it."""
        memory = self.sim.jobs[job_id].spec.memory_gib
        if memory <= float(self._capacity.min()) + _EPS:
            return True
        gpus = self.sim.find_placement(job_id, "exclusive")
        return gpus is not None and all(self._free.item(g) + _EPS >= memory for g in gpus)

    # ----------------------------------------------------------- observation
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of the current state (fresh arrays the caller may keep)."""
        now = self.sim.now_s
        self._observe_pending(now)
        self._observe_running(now)
        self._observe_global(now)
        if self.placement:
            self._observe_placement()
        if self.rivals:
            self._observe_rivals(now)
        if self.drain:
            self._observe_drain()
        return split_observation(self._buffer.copy(), self._bounds)

    def _observe_pending(self, now: float) -> None:
        # a waiting job's row is fixed for its whole wait but for the wait itself
        pending = self.pending_ids
        out = self.pending_out
        k = len(pending)
        index = self._index
        if pending is not self._pending_rows_for:
            self._pending_rows_for = pending
            if k:
                idx = pending if index is None else [index[j] for j in pending]
                out[:k, :_NUM_P] = self._pend_rows[idx]
            if self._pending_filled > k:
                out[k : self._pending_filled] = 0.0
            self._pending_filled = k
            self._pending_now = math.nan
        if k and now != self._pending_now:
            self._pending_now = now
            since = self._since
            log10 = math.log10
            waits = []
            for job_id in pending:
                wait = log10(now - since[job_id if index is None else index[job_id]])
                wait *= _INV_DECADES
                waits.append(wait if wait < 1.0 else 1.0)
            out[:k, _WAIT] = waits

    def _observe_running(self, now: float) -> None:
        running = self.running_ids
        k = len(running)
        out = self.running_out
        jobs = self.sim.jobs
        version = self._version
        index = self._index
        rows = self._run_rows
        same_jobs = running == self._running_rows_for
        if same_jobs and now == self._running_now:
            # same jobs, same instant: progress stands still; rewrite changed rows only
            for slot, job_id in enumerate(running):
                job = jobs[job_id]
                i = job_id if index is None else index[job_id]
                if job.version != version[i]:
                    self._refresh_running(i, job)
                    out[slot, _WAIT:_PRED] = rows[i, _WAIT:_PRED]
                    out[slot, _SPEED] = rows[i, _SPEED]
            return
        self._running_now = now
        p0 = self._p0
        rate = self._rate
        t0 = self._t0
        step_s = self._step_s
        iterations = self._iterations
        log10 = math.log10
        predicted = []
        progress = []
        for slot, job_id in enumerate(running):
            job = jobs[job_id]
            i = job_id if index is None else index[job_id]
            if job.version != version[i]:
                self._refresh_running(i, job)
                if same_jobs:
                    out[slot] = rows[i]
            total = iterations[i]
            done = p0[i] + rate[i] * (now - t0[i])
            if done > total:
                done = total
            left = log10(1.0 + (total - done) * step_s[i]) * _INV_DECADES
            predicted.append(left if left < 1.0 else 1.0)
            progress.append(done / total)
        if not same_jobs:
            self._running_rows_for = running
            if k:
                out[:k] = rows[running if index is None else [index[j] for j in running]]
            if self._running_filled > k:
                out[k : self._running_filled] = 0.0
            self._running_filled = k
        if k:
            out[:k, _PRED] = predicted
            out[:k, _PROG] = progress
            if self.held_time:
                out[:k, _NUM_R] = [log_time(now - jobs[j].held_since_s) for j in running]

    def _observe_placement(self) -> None:
        """The ``pack_load`` / ``spread_load`` and ``shares_gpu`` columns (O(W + R)
        placement searches: an experimental option, not tuned for speed)."""
        sim = self.sim
        load = self._load
        holders = self._holders
        inv_slots = self._inv_slots
        jobs = sim.jobs
        pending = self.pending_out
        for slot, job_id in enumerate(self.pending_ids):
            intensity = jobs[job_id].spec.intensity
            for column, strategy in enumerate(("pack", "spread"), start=_NUM_P):
                gpus = sim.find_placement(job_id, strategy)
                if gpus is None:
                    pending[slot, column] = 0.0
                else:
                    peak = (max(load.item(g) for g in gpus) + intensity) * inv_slots
                    pending[slot, column] = peak if peak < 1.0 else 1.0
        running = self.running_out
        column = self._shares_column
        for slot, job_id in enumerate(self.running_ids):
            shares = any(holders.item(g) > 1 for g in jobs[job_id].gpus)
            running[slot, column] = 1.0 if shares else 0.0

    def _observe_rivals(self, now: float) -> None:
        """The ``RIVAL_FEATURES`` columns (an O(waiting jobs) pass over the whole queue:
        an experimental option, not tuned for speed)."""
        sim = self.sim
        jobs = sim.jobs
        longest_wait: dict[int, float] = {}  # GPUs requested -> [s]
        shortest_left: dict[int, float] = {}  # [s]
        for job_id in sim.pending():
            job = jobs[job_id]
            need = job.spec.num_gpus
            wait = now - job.queued_since_s
            if wait > longest_wait.get(need, -1.0):
                longest_wait[need] = wait
            predicted = sim.predicted_remaining_s(job_id)
            if predicted is not None and predicted < shortest_left.get(need, math.inf):
                shortest_left[need] = predicted
        out = self.running_out
        column = self._rival_column
        for slot, job_id in enumerate(self.running_ids):
            need = jobs[job_id].spec.num_gpus
            longest = longest_wait.get(need)
            shortest = shortest_left.get(need)
            out[slot, column] = 0.0 if longest is None else log_time(longest)
            out[slot, column + 1] = 0.0 if shortest is None else log_time(shortest)

    def _observe_drain(self) -> None:
        """The ``drain_share`` columns (an O(jobs in system) sum: an experimental option,
        not tuned for speed)."""
        sim = self.sim
        drain = sim.predicted_work_s() * self._inv_gpus
        predicted = sim.predicted_remaining_s
        blocks = ((self.pending_out, self.pending_ids), (self.running_out, self.running_ids))
        for out, ids in blocks:
            column = out.shape[1] - 1
            for slot, job_id in enumerate(ids):
                left = predicted(job_id)
                out[slot, column] = 0.0 if not left else left / (left + drain)

    def _refresh_running(self, i: int, job: JobState) -> None:
        self._version[i] = job.version
        step = self.sim.measured_step_time_s(job.spec.job_id)
        self._p0[i] = job.progress
        self._rate[i] = job.rate
        self._t0[i] = job.last_update_s
        self._step_s[i] = 0.0 if step is None else step
        _PACK_RUNNING_TAIL(
            self._run_bytes,
            (i * self._num_r + _WAIT) * _F32,
            log_time(job.queued_s),
            1.0 if job.sampled else 0.0,
            0.0 if step is None else 1.0,
            0.0,  # predicted remaining: extrapolated at each observation
            0.0,  # a running job is not suspended
            0.0,  # progress: extrapolated at each observation
            min(1.0, job.speed * self._inv_max_speed),
        )

    def _observe_global(self, now: float) -> None:
        # inline arithmetic: every Python call here costs as much as a feature
        sim = self.sim
        util, allocated, free, fragmented, expected = self.view.cluster_totals()
        inv_jobs = self._inv_jobs
        inv_gpus = self._inv_gpus
        waiting = sim.num_waiting
        backlog = waiting - self.pending_window
        time = math.log10(1.0 + now) * _INV_DECADES
        # the simulator's running sums drift by float dust: clip into [0, 1]
        util = util * inv_gpus
        free_share = free * self._inv_total_memory
        if free > _EPS:
            fragmented /= free
            expected /= free
        else:
            fragmented = expected = 0.0
        waiting_gpus = self.waiting_gpus * inv_gpus
        _PACK_GLOBAL(
            self._buffer_bytes,
            self._global_at,
            time if time < 1.0 else 1.0,
            waiting * inv_jobs,
            backlog * inv_jobs if backlog > 0 else 0.0,
            sim.num_running * inv_jobs,
            self.in_transition * inv_jobs,
            sim.jobs_in_system * inv_jobs,
            sim.num_finished * inv_jobs,
            0.0 if util < 0.0 else (1.0 if util > 1.0 else util),
            allocated * inv_gpus,
            0.0 if free_share < 0.0 else (1.0 if free_share > 1.0 else free_share),
            0.0 if fragmented < 0.0 else (1.0 if fragmented > 1.0 else fragmented),
            0.0 if expected < 0.0 else (1.0 if expected > 1.0 else expected),
            waiting_gpus if waiting_gpus < 1.0 else 1.0,
            self.idle_gpus * inv_gpus,
            1.0 if self.can_advance else 0.0,
        )

    # ---------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        # numpy views (the SimView's read-only arrays, the slices of the buffer and of the
        # mask) would unpickle as detached copies: drop them and bind them again
        for name in ("view", "gpu_rows", "frag_out", "pending_out", "running_out"):
            del state[name]
        for name in ("global_out", "_buffer_bytes", "_pend_bytes", "_run_bytes"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        from gpushare_env.sim.view import SimView

        self.__dict__.update(state)
        self.view = SimView(self.sim)
        self._bind_views()
