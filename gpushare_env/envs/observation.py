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

So a decision costs O(window + touched GPUs) Python work plus a few numpy calls, not
O(cluster). Feature layouts are the module constants below (documented in the env).
"""

from __future__ import annotations

import bisect
import math
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
    "FRAG_BIN_EDGES_GIB",
    "FRAG_FEATURES",
    "GLOBAL_FEATURES",
    "GPU_FEATURES",
    "PENDING_FEATURES",
    "RUNNING_FEATURES",
    "StateEncoder",
    "log_time",
    "observation_space",
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
_PRED, _SUSP, _PROG, _SPEED = _P["predicted_remaining"], _P["suspended"], _P["progress"], _P["speed"]
_NUM_P = len(PENDING_FEATURES)
_NUM_R = len(RUNNING_FEATURES)
_NUM_GPU_F = len(GPU_FEATURES)
_NUM_FRAG = len(FRAG_FEATURES)
_NUM_GLOBAL = len(GLOBAL_FEATURES)
_NUM_STRATEGIES = len(STRATEGIES)
_EXCLUSIVE = STRATEGIES.index("exclusive")
_EPS = 1e-9  # [GiB] the simulator's memory tolerance
_LOG_TIME_DECADES = 7.0  # log_time reaches 1 at 10**7 s (about 116 days)

# hidden per-job columns of running jobs (float64): progress as of t0, rate, t0,
# iterations, predicted seconds per remaining iteration (0 when unknown)
_H_P0, _H_RATE, _H_T0, _H_ITERS, _H_STEP = range(5)


def log_time(seconds: float) -> float:
    """Time feature: ``min(1, log10(1 + seconds) / 7)`` (1 s -> 0.04, 1 h -> 0.51, 1 d -> 0.71)."""
    return min(1.0, math.log10(1.0 + max(seconds, 0.0)) / _LOG_TIME_DECADES)


def _log_time_array(seconds: np.ndarray) -> np.ndarray:
    out = np.log10(1.0 + np.maximum(seconds, 0.0))
    out *= 1.0 / _LOG_TIME_DECADES
    return np.minimum(out, 1.0, out=out)


def observation_space(num_gpus: int, pending_window: int, running_window: int) -> spaces.Dict:
    """The ``Dict`` of flat ``float32`` ``Box`` es in ``[0, 1]`` (SB3 ``MultiInputPolicy``)."""

    def box(size: int) -> spaces.Box:
        return spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)

    return spaces.Dict(
        {
            "gpus": box(num_gpus * _NUM_GPU_F),
            "frag_hist": box(_NUM_FRAG),
            "pending": box(pending_window * _NUM_P),
            "running": box(running_window * _NUM_R),
            "global": box(_NUM_GLOBAL),
        }
    )


class StateEncoder:
    """Observation and mask of one episode's simulator, updated incrementally.

    The env calls :meth:`touch` with the GPUs every decision or event changed,
    :meth:`enqueued` / :meth:`dequeued` when a job enters / leaves the queue and
    :meth:`sampled` when a running job's step time gets measured, then
    :meth:`update_mask` after every state change and :meth:`observe` once per step.

    All outputs live in one preallocated ``float32`` buffer; :meth:`observe` returns
    slices of a single copy of it.

    Args:
        sim: The episode's simulator (read only).
        view: Its read-only view.
        pending_window: ``W``.
        running_window: ``R``.
    """

    def __init__(
        self, sim: Simulator, view: SimView, pending_window: int, running_window: int
    ) -> None:
        self.sim = sim
        self.view = view
        self.pending_window = pending_window
        self.running_window = running_window
        cluster = sim.cluster
        state = sim.gpus
        g = cluster.num_gpus
        self.num_gpus = g
        self.max_jobs = cluster.max_jobs_per_gpu
        self._total_memory = float(cluster.gpu_memory_gib.sum())
        self._capacity = cluster.gpu_memory_gib
        max_capacity = float(cluster.gpu_memory_gib.max())
        self._inv_max_speed = 1.0 / float(cluster.gpu_speed.max())
        self._heterogeneous = bool(np.any(cluster.gpu_memory_gib != max_capacity))
        self._free = state.free_memory_gib  # the simulator's arrays (same objects)
        self._load = state.load
        self._holders = state.holders
        self._inv_capacity: list[float] = (1.0 / cluster.gpu_memory_gib).tolist()
        self._inv_slots = 1.0 / self.max_jobs

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
        mem_values = np.unique(np.asarray([s.memory_gib for s in specs], dtype=np.float64))
        self._mem_values: list[float] = mem_values.tolist()  # distinct worker sizes [GiB]
        self.num_gpus_of = np.zeros(size, dtype=np.int64)  # (J,)
        self._mem_level = np.zeros(size, dtype=np.int64)  # (J,) index into _mem_values
        self._pend_rows = np.zeros((size, _NUM_P), dtype=np.float32)
        self._run_rows = np.zeros((size, _NUM_R), dtype=np.float32)
        self._hidden = np.zeros((size, 5), dtype=np.float64)
        self._queued_since = np.zeros(size, dtype=np.float64)  # (J,) [s]
        self._version: list[int] = [-1] * size
        self._job_gpus: list[int] = [0] * size
        log_gpus = 1.0 / math.log2(1.0 + g)
        for s in specs:
            i = s.job_id if index is None else index[s.job_id]
            self.num_gpus_of[i] = s.num_gpus
            self._job_gpus[i] = s.num_gpus
            self._mem_level[i] = int(np.searchsorted(mem_values, s.memory_gib))
            row = self._pend_rows[i]
            row[_VALID] = 1.0
            row[_NGPU] = math.log2(1.0 + s.num_gpus) * log_gpus
            row[_MEM] = s.memory_gib / max_capacity
            row[_INT] = s.intensity
            if s.model in _MODEL_NAMES:
                row[_MODEL0 + _MODEL_NAMES.index(s.model)] = 1.0
            self._run_rows[i, :_NUM_P] = row
            self._hidden[i, _H_ITERS] = s.iterations

        # -- one float32 buffer holding every observation key, and views into it
        sizes = (g * _NUM_GPU_F, _NUM_FRAG, pending_window * _NUM_P, running_window * _NUM_R)
        sizes += (_NUM_GLOBAL,)
        self._bounds = np.cumsum((0, *sizes)).tolist()
        self._buffer = np.zeros(self._bounds[-1], dtype=np.float32)
        self._bind_views()
        num_nodes = max(cluster.num_nodes - 1, 1)
        self.gpu_rows[:, 3] = cluster.gpu_node / num_nodes
        self.gpu_rows[:, 4] = cluster.gpu_speed * self._inv_max_speed
        self.gpu_rows[:, 5] = cluster.gpu_memory_gib / max_capacity

        # -- per-GPU fragment categories and fit levels, with their counts
        self._category: list[int] = [0] * g
        self._category_counts: list[int] = [0] * _NUM_FRAG
        self._category_counts[0] = g
        self._level: list[int] = [0] * g
        # GPUs on which a worker of size index k fits (the simulator's test: an open
        # worker slot and free + 1e-9 >= size): the GPUs whose level exceeds k
        self._fit_counts = np.zeros(len(self._mem_values), dtype=np.int64)
        self.idle_gpus = g
        self._refresh_gpus(range(g))
        self.frag_out[0] = 1.0

        n_actions = pending_window * _NUM_STRATEGIES + running_window + 1
        self.mask = np.zeros(n_actions, dtype=bool)
        self._bind_views()  # again, now that the mask exists
        self.pending_ids: list[int] = []
        self.running_ids: list[int] = []
        self._pending_idx = np.zeros(0, dtype=np.intp)
        self._touched: set[int] = set()
        self.waiting_gpus = 0  # GPUs requested by waiting jobs
        self.has_choice = False
        self.can_advance = False
        # what the pending / running blocks were last computed for
        self._pending_key: tuple[float, list[int]] | None = None
        self._running_key: tuple[float, list[int]] | None = None
        self._running_refreshed = False

    def _bind_views(self) -> None:
        b = self._bounds
        buffer = self._buffer
        self.gpu_rows = buffer[b[0] : b[1]].reshape(self.num_gpus, _NUM_GPU_F)
        self.frag_out = buffer[b[1] : b[2]]
        self.pending_out = buffer[b[2] : b[3]].reshape(self.pending_window, _NUM_P)
        self.running_out = buffer[b[3] : b[4]].reshape(self.running_window, _NUM_R)
        self.global_out = buffer[b[4] : b[5]]
        width = self.pending_window * _NUM_STRATEGIES
        if hasattr(self, "mask"):
            self._grid = self.mask[:width].reshape(self.pending_window, _NUM_STRATEGIES)

    # ------------------------------------------------------------ notifications
    def touch(self, gpus: tuple[int, ...]) -> None:
        """Record GPUs whose memory, load or workers changed."""
        self._touched.update(gpus)

    def enqueued(self, job: JobState) -> None:
        """A job (re)entered the queue: write its pending row once for the whole wait."""
        spec = job.spec
        i = spec.job_id if self._index is None else self._index[spec.job_id]
        self._queued_since[i] = job.queued_since_s
        self._version[i] = -1
        self.waiting_gpus += spec.num_gpus
        predicted = self.sim.predicted_remaining_s(spec.job_id)
        self._pend_rows[i, _WAIT:] = (
            0.0,
            1.0 if job.sampled else 0.0,
            0.0 if predicted is None else 1.0,
            0.0 if predicted is None else log_time(predicted),
            1.0 if job.status == JobStatus.SUSPENDED else 0.0,
            job.progress / spec.iterations,
        )
        self._pending_key = None

    def dequeued(self, job_id: int) -> None:
        """A waiting job was placed."""
        i = job_id if self._index is None else self._index[job_id]
        self.waiting_gpus -= self._job_gpus[i]

    def sampled(self, job_id: int) -> None:
        """A running job's step time was measured: rewrite its row at the next step."""
        i = job_id if self._index is None else self._index[job_id]
        self._version[i] = -1

    # ------------------------------------------------------------------ GPUs
    def _refresh_gpus(self, gpus: Iterable[int]) -> None:
        """Rewrite the rows, fragment categories and fit levels of ``gpus``."""
        free_of = self._free
        holders_of = self._holders
        load_of = self._load
        rows = self.gpu_rows
        inv_capacity = self._inv_capacity
        inv_slots = self._inv_slots
        max_jobs = self.max_jobs
        edges = FRAG_BIN_EDGES_GIB
        sizes = self._mem_values
        category = self._category
        counts = self._category_counts
        level = self._level
        fit_counts = self._fit_counts
        frag = self.frag_out
        inv_gpus = 1.0 / self.num_gpus
        no_slot = _NUM_FRAG - 1
        for g in gpus:
            free = float(free_of[g])
            holders = int(holders_of[g])
            rows[g, 0] = free * inv_capacity[g]
            rows[g, 1] = float(load_of[g]) * inv_slots
            rows[g, 2] = holders * inv_slots
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
                frag[old] = counts[old] * inv_gpus
                frag[new] = counts[new] * inv_gpus
                self.idle_gpus += (new == 0) - (old == 0)
            new = bisect.bisect_right(sizes, free + _EPS) if holders < max_jobs else 0
            old = level[g]
            if new != old:
                level[g] = new
                if new > old:
                    fit_counts[old:new] += 1
                else:
                    fit_counts[new:old] -= 1

    # ------------------------------------------------------------------ mask
    def update_mask(self) -> np.ndarray:
        """Recompute the action mask (and the window ids the actions address)."""
        touched = self._touched
        if touched:
            self._refresh_gpus(touched)
            touched.clear()
        sim = self.sim
        mask = self.mask
        grid = self._grid
        previous = len(self.pending_ids)
        pending = sim.pending(self.pending_window)
        self.pending_ids = pending
        k = len(pending)
        choice = False
        if k:
            index = self._index
            idx = np.array(pending if index is None else [index[j] for j in pending])
            self._pending_idx = idx
            need = self.num_gpus_of[idx]
            grid[:k] = (need <= self._fit_counts[self._mem_level[idx]])[:, None]
            exclusive = need <= self.idle_gpus
            if self._heterogeneous:
                exclusive &= self._exclusive_memory_ok(pending, exclusive)
            grid[:k, _EXCLUSIVE] = exclusive
            choice = bool(grid[:k].any())
        if previous > k:
            grid[k:previous] = False
        width = self.pending_window * _NUM_STRATEGIES
        previous = len(self.running_ids)
        running = sim.running(self.running_window)
        self.running_ids = running
        k = len(running)
        if k != previous:
            mask[width : width + self.running_window] = False
            mask[width : width + k] = True
        self.can_advance = sim.next_event_time() is not None
        mask[-1] = self.can_advance
        self.has_choice = choice or k > 0
        return mask

    def _exclusive_memory_ok(self, pending: list[int], candidates: np.ndarray) -> np.ndarray:
        """On mixed GPU memories ``exclusive`` may pick an idle GPU too small: check it."""
        ok = np.ones(len(pending), dtype=bool)
        smallest = float(self._capacity.min())
        for i, job_id in enumerate(pending):
            if not candidates[i]:
                continue
            memory = self.sim.jobs[job_id].spec.memory_gib
            if memory <= smallest + _EPS:
                continue
            gpus = self.sim.find_placement(job_id, "exclusive")
            ok[i] = gpus is not None and all(self._free[g] + _EPS >= memory for g in gpus)
        return ok

    # ----------------------------------------------------------- observation
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of the current state (fresh arrays the caller may keep)."""
        sim = self.sim
        now = sim.now_s
        # pending window (ids and indices from update_mask); a waiting job's row only
        # moves with its wait, so nothing changes while time and the window stand still
        pending = self.pending_ids
        key = (now, pending)
        if key != self._pending_key:
            k = len(pending)
            out = self.pending_out
            if k:
                idx = self._pending_idx
                out[:k] = self._pend_rows[idx]
                out[:k, _WAIT] = _log_time_array(now - self._queued_since[idx])
            out[k:] = 0.0
            self._pending_key = key
        self._observe_running(now)
        self._observe_global(now)
        b = self._bounds
        flat = self._buffer.copy()
        return {
            "gpus": flat[b[0] : b[1]],
            "frag_hist": flat[b[1] : b[2]],
            "pending": flat[b[2] : b[3]],
            "running": flat[b[3] : b[4]],
            "global": flat[b[4] : b[5]],
        }

    def _observe_running(self, now: float) -> None:
        running = self.running_ids
        jobs = self.sim.jobs
        version = self._version
        index = self._index
        refreshed = False
        for job_id in running:
            job = jobs[job_id]
            i = job_id if index is None else index[job_id]
            if job.version != version[i]:
                self._refresh_running(i, job)
                refreshed = True
        key = (now, running)
        if not refreshed and key == self._running_key:
            return
        self._running_key = key
        k = len(running)
        out = self.running_out
        if k:
            idx = np.array(running if index is None else [index[j] for j in running])
            out[:k] = self._run_rows[idx]
            hidden = self._hidden[idx]
            iters = hidden[:, _H_ITERS]
            done = hidden[:, _H_RATE] * (now - hidden[:, _H_T0])
            done += hidden[:, _H_P0]
            np.minimum(done, iters, out=done)
            out[:k, _PROG] = done / iters
            remaining = iters - done
            remaining *= hidden[:, _H_STEP]
            out[:k, _PRED] = _log_time_array(remaining)
        out[k:] = 0.0

    def _refresh_running(self, i: int, job: JobState) -> None:
        self._version[i] = job.version
        step = self.sim.measured_step_time_s(job.spec.job_id)
        hidden = self._hidden[i]
        hidden[_H_P0] = job.progress
        hidden[_H_RATE] = job.rate
        hidden[_H_T0] = job.last_update_s
        hidden[_H_STEP] = 0.0 if step is None else step
        row = self._run_rows[i]
        row[_WAIT] = log_time(job.queued_s)
        row[_SAMPLED] = 1.0 if job.sampled else 0.0
        row[_KNOWN] = 0.0 if step is None else 1.0
        row[_SUSP] = 0.0
        row[_SPEED] = min(1.0, job.speed * self._inv_max_speed)

    def _observe_global(self, now: float) -> None:
        sim = self.sim
        util, allocated, free, fragmented, expected = self.view.cluster_totals()
        inv_jobs = self._inv_jobs
        inv_gpus = 1.0 / self.num_gpus
        waiting = sim.num_waiting
        inv_free = 1.0 / free if free > _EPS else 0.0
        self.global_out[:] = (
            log_time(now),
            waiting * inv_jobs,
            max(0, waiting - self.pending_window) * inv_jobs,
            sim.num_running * inv_jobs,
            len(sim.in_transition()) * inv_jobs,
            sim.jobs_in_system * inv_jobs,
            sim.num_finished * inv_jobs,
            min(1.0, util * inv_gpus),
            allocated * inv_gpus,
            min(1.0, free / self._total_memory),
            min(1.0, fragmented * inv_free),
            min(1.0, expected * inv_free),
            min(1.0, self.waiting_gpus * inv_gpus),
            self.idle_gpus * inv_gpus,
            1.0 if self.can_advance else 0.0,
        )

    # ---------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, object]:
        state = self.__dict__.copy()
        # numpy views (the SimView's read-only arrays, our slices of the buffer and the
        # mask) would unpickle as detached copies: drop them and bind them again
        for name in ("view", "gpu_rows", "frag_out", "pending_out", "running_out"):
            del state[name]
        del state["global_out"], state["_grid"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        from gpushare_env.sim.view import SimView

        self.__dict__.update(state)
        self.view = SimView(self.sim)
        self._bind_views()
