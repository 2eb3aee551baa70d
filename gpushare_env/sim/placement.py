"""Placement strategies shared by the environment and the baselines.

Each strategy picks ``num_gpus`` distinct GPUs for a job's workers, or returns ``None``
when the job does not fit now. All of them prefer GPUs of one node (a gang inside a node
avoids the cross-node penalty) and fall back to as few nodes as possible.

* ``exclusive``: whole idle GPUs only; inside a node, the node with the fewest idle GPUs
  that still hosts the gang (best fit keeps large gangs of idle GPUs for large jobs).
* ``pack``: best fit on shared GPUs: the fragments with the least free memory left after
  placement; idle GPUs only when no fragment fits.
* ``spread``: the least loaded GPUs (lowest compute load ``U_g``) where memory fits.
* ``min_frag``: the GPUs whose FGD-style expected fragment grows least (Weng et al.,
  "Beware of Fragmentation", ATC'23): a GPU's fragment is its free memory times the
  probability that a worker drawn from the workload's memory distribution cannot use it.

Every function is O(G) vectorised numpy over the cluster's GPUs; ``SingleWorkerIndex``
gives the same answers for one-worker jobs in time independent of the cluster size.
"""

from __future__ import annotations

import bisect
import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gpushare_env.sim.engine import GPUState

__all__ = ["STRATEGIES", "SingleWorkerIndex", "expected_fragment", "find_placement"]

STRATEGIES: tuple[str, ...] = ("exclusive", "pack", "spread", "min_frag")

_EPS = 1e-9  # [GiB] tolerance on memory comparisons
_IDLE_PENALTY = 1e6  # pushes idle GPUs behind every fragment in ``pack``


def expected_fragment(
    free_gib: np.ndarray, full: np.ndarray, reference_sorted_gib: np.ndarray
) -> np.ndarray:
    """FGD-style expected fragment of each GPU.  # (G,) [GiB]

    Args:
        free_gib: Free memory of each GPU.  # (G,) [GiB]
        full: GPUs that host the most workers allowed (all their free memory is lost).  # (G,)
        reference_sorted_gib: Sorted worker memories of the workload.  # (R,) [GiB]
    """
    fits = np.searchsorted(reference_sorted_gib, free_gib + _EPS, side="right")
    p_unusable = 1.0 - fits / max(len(reference_sorted_gib), 1)
    return np.where(full, free_gib, free_gib * p_unusable)


def find_placement(
    strategy: str, state: GPUState, num_gpus: int, memory_gib: float
) -> tuple[int, ...] | None:
    """Choose GPUs for a job's workers with a named strategy.

    Args:
        strategy: One of ``STRATEGIES``.
        state: The cluster's current per-GPU state.
        num_gpus: Workers to place, one per GPU.
        memory_gib: Memory of each worker.  # [GiB]

    Returns:
        Sorted GPU indices, or ``None`` when the job does not fit now.
    """
    free = state.free_memory_gib
    holders = state.holders
    if strategy == "exclusive":
        # idle GPUs large enough (GPUs of a mixed cluster may differ in memory)
        fits = (holders == 0) & (free + _EPS >= memory_gib)
        if num_gpus == 1:
            # best fit: the node with the fewest idle GPUs
            idle_on_node = np.bincount(state.gpu_node, weights=fits, minlength=state.num_nodes)
            score = idle_on_node[state.gpu_node]
        else:
            score = np.zeros(free.shape)
        return _select(score, fits, num_gpus, state, best_fit_nodes=True)
    fits = (free + _EPS >= memory_gib) & (holders < state.max_jobs_per_gpu)
    if strategy == "pack":
        score = (free - memory_gib) + _IDLE_PENALTY * (holders == 0)
    elif strategy == "spread":
        score = state.load + 0.01 * holders
    elif strategy == "min_frag":
        ref = state.reference_memory_gib
        before = expected_fragment(free, holders >= state.max_jobs_per_gpu, ref)
        after = expected_fragment(free - memory_gib, holders + 1 >= state.max_jobs_per_gpu, ref)
        # ties (e.g. no change in fragment) go to the fuller GPU
        score = (after - before) + 1e-3 * (free - memory_gib)
    else:
        raise ValueError(f"unknown placement strategy {strategy!r}; allowed: {list(STRATEGIES)}")
    return _select(score, fits, num_gpus, state, best_fit_nodes=False)


def _select(
    score: np.ndarray, fits: np.ndarray, n: int, state: GPUState, best_fit_nodes: bool
) -> tuple[int, ...] | None:
    """Pick ``n`` fitting GPUs of lowest score, inside one node when possible."""
    masked = np.where(fits, score, np.inf)
    if n == 1:
        g = int(np.argmin(masked))
        return (g,) if fits[g] else None
    node_gpus = state.node_gpus  # (N, M), -1 padded
    per_node: np.ndarray
    if state.rectangular:
        per_node = masked.reshape(node_gpus.shape)
    else:
        padded = np.append(masked, np.inf)  # index -1 (padding) reads inf
        per_node = padded[node_gpus]  # (N, M)
    if n <= per_node.shape[1]:
        lowest = np.sort(per_node, axis=1)[:, :n]
        totals = lowest.sum(axis=1)
        if best_fit_nodes:
            # prefer the node with the fewest fitting GPUs that still hosts the gang
            fitting = np.isfinite(per_node).sum(axis=1)
            totals = np.where(np.isfinite(totals), fitting + totals * 1e-9, np.inf)
        best = int(np.argmin(totals))
        if np.isfinite(totals[best]):
            order = np.argsort(per_node[best], kind="stable")[:n]
            return tuple(sorted(int(g) for g in node_gpus[best, order]))
    if int(fits.sum()) < n:
        return None
    # across nodes: take from the nodes with the most fitting GPUs first (fewest nodes)
    fitting = np.isfinite(per_node).sum(axis=1)
    chosen: list[int] = []
    for node in np.argsort(-fitting, kind="stable"):
        if fitting[node] == 0:
            break
        row = per_node[node]
        for col in np.argsort(row, kind="stable")[: min(int(fitting[node]), n - len(chosen))]:
            chosen.append(int(node_gpus[node, col]))
        if len(chosen) == n:
            return tuple(sorted(chosen))
    return None  # pragma: no cover - unreachable when fits.sum() >= n


class SingleWorkerIndex:
    """Answers ``find_placement`` for one-worker jobs (and exclusive gangs) incrementally.

    On a cluster whose GPUs all have the same memory, every idle GPU scores the same
    under each strategy, so the lowest-numbered idle GPU stands for all of them; the
    other candidates are the occupied GPUs with a free worker slot ("open" GPUs). The
    index keeps the idle GPUs sorted, the nodes grouped by their idle-GPU count (for
    ``exclusive``'s best-fit node rule), the open GPUs sorted by free memory (``pack``:
    a bisection) and grouped by (free memory, workers) (``min_frag``: GPUs alike score
    alike). The engine calls :meth:`refresh` for every GPU whose memory or workers
    changed. :meth:`find` returns exactly what :func:`find_placement` returns (same
    float operations, same lowest-index tie-break; tested on random states).

    Args:
        state: The simulator's per-GPU state (read live).
        capacity_gib: The memory of every GPU (the index requires one value).  # [GiB]
    """

    #: ``spread`` without a fitting idle GPU scans the open GPUs up to this many, beyond
    #: which the vectorised search is faster
    SPREAD_SCAN_LIMIT = 96

    def __init__(self, state: GPUState, capacity_gib: float) -> None:
        self._state = state
        self._capacity = float(capacity_gib)
        self._max_jobs = state.max_jobs_per_gpu
        self._node_of: list[int] = state.gpu_node.tolist()
        self._node_gpus: list[list[int]] = [
            [g for g in row if g >= 0] for row in state.node_gpus.tolist()
        ]
        self._reference: list[float] = state.reference_memory_gib.tolist()
        self._idle: list[int] = list(range(len(self._node_of)))
        self._idle_on_node = [len(row) for row in self._node_gpus]
        width = max(self._idle_on_node, default=0)
        # nodes by idle-GPU count (index 0: nodes without an idle GPU)
        self._nodes_by_idle: list[set[int]] = [set() for _ in range(width + 1)]
        for node, count in enumerate(self._idle_on_node):
            self._nodes_by_idle[count].add(node)
        self._key: dict[int, tuple[float, int]] = {}  # occupied GPU -> (free, workers)
        self._open: list[tuple[float, int]] = []  # (free, gpu) of open GPUs, sorted
        self._groups: dict[tuple[float, int], list[int]] = {}  # (free, workers) -> gpus
        self._growth: dict[tuple[float, int, float], float] = {}  # min_frag score cache
        for g in range(len(self._node_of)):
            if state.holders.item(g) > 0:
                self.refresh(g)

    def refresh(self, gpu: int) -> None:
        """Re-read ``gpu``'s free memory and worker count (after any change to them)."""
        old = self._key.pop(gpu, None)
        if old is not None and old[1] < self._max_jobs:
            opened = self._open
            del opened[bisect.bisect_left(opened, (old[0], gpu))]
            members = self._groups[old]
            if len(members) == 1:
                del self._groups[old]
            else:
                del members[bisect.bisect_left(members, gpu)]
        holders = self._state.holders.item(gpu)
        if holders == 0:
            if old is not None:
                bisect.insort(self._idle, gpu)
                self._move_node(self._node_of[gpu], +1)
            return
        if old is None:
            del self._idle[bisect.bisect_left(self._idle, gpu)]
            self._move_node(self._node_of[gpu], -1)
        free = self._state.free_memory_gib.item(gpu)
        key = (free, holders)
        self._key[gpu] = key
        if holders < self._max_jobs:
            bisect.insort(self._open, (free, gpu))
            bisect.insort(self._groups.setdefault(key, []), gpu)

    def _move_node(self, node: int, delta: int) -> None:
        count = self._idle_on_node[node]
        self._nodes_by_idle[count].discard(node)
        self._idle_on_node[node] = count + delta
        self._nodes_by_idle[count + delta].add(node)

    def find(self, strategy: str, memory_gib: float) -> tuple[int, ...] | None:
        """The GPU ``find_placement(strategy, state, 1, memory_gib)`` picks, or ``None``."""
        idle_fits = bool(self._idle) and self._capacity + _EPS >= memory_gib
        if strategy == "exclusive":
            return self.find_exclusive(1, memory_gib) if idle_fits else None
        if strategy not in STRATEGIES:
            raise ValueError(
                f"unknown placement strategy {strategy!r}; allowed: {list(STRATEGIES)}"
            )
        if strategy == "spread" and idle_fits:
            return (self._idle[0],)  # an idle GPU scores 0, every occupied one at least 0.01
        # the open GPUs with enough memory: a tail of the sorted list (the test is
        # monotone in free memory; start a little early and skip, for rounding)
        opened = self._open
        first = bisect.bisect_left(opened, (memory_gib - 4 * _EPS, -1))
        while first < len(opened) and not opened[first][0] + _EPS >= memory_gib:
            first += 1
        best_g = -1
        best = math.inf
        if strategy == "pack":
            if first < len(opened):
                # least free memory first; equal scores (rounding) go to the lower GPU
                best, best_g = opened[first][0] - memory_gib, opened[first][1]
                for free, g in itertools.islice(opened, first + 1, None):
                    if free - memory_gib != best:
                        break
                    best_g = min(best_g, g)
                return (best_g,)  # an open GPU always beats an idle one
            return (self._idle[0],) if idle_fits else None
        if strategy == "spread":
            if len(opened) - first > self.SPREAD_SCAN_LIMIT:
                return find_placement(strategy, self._state, 1, memory_gib)
            load = self._state.load.item
            workers = self._key
            for _, g in itertools.islice(opened, first, None):
                score = load(g) + 0.01 * workers[g][1]
                if score < best or (score == best and g < best_g):
                    best, best_g = score, g
            return None if best_g < 0 else (best_g,)
        # min_frag
        max_jobs = self._max_jobs
        growth = self._growth
        if len(growth) > 4096:
            growth.clear()
        if idle_fits:
            best_g = self._idle[0]
            best = self._fragment_growth(self._capacity, 0, memory_gib, max_jobs)
        for (free, holders), group in self._groups.items():
            if free + _EPS >= memory_gib:
                key = (free, holders, memory_gib)
                score = growth.get(key)
                if score is None:
                    score = growth[key] = self._fragment_growth(free, holders, memory_gib, max_jobs)
                g = group[0]
                if score < best or (score == best and g < best_g):
                    best, best_g = score, g
        return None if best_g < 0 else (best_g,)

    def find_exclusive(self, num_gpus: int, memory_gib: float) -> tuple[int, ...] | None:
        """What ``find_placement("exclusive", state, num_gpus, memory_gib)`` returns.

        The node with the fewest idle GPUs that still hosts the whole gang (lowest node
        on ties) gives its lowest-numbered idle GPUs; when no node can, the nodes with
        the most idle GPUs first, as in ``_select``.
        """
        if len(self._idle) < num_gpus or self._capacity + _EPS < memory_gib:
            return None
        held = self._state.holders.item
        by_idle = self._nodes_by_idle
        for count in range(num_gpus, len(by_idle)):
            if by_idle[count]:
                row = self._node_gpus[min(by_idle[count])]
                return tuple([g for g in row if held(g) == 0][:num_gpus])
        chosen: list[int] = []
        for count in range(len(by_idle) - 1, 0, -1):
            for node in sorted(by_idle[count]):
                take = min(count, num_gpus - len(chosen))
                chosen.extend([g for g in self._node_gpus[node] if held(g) == 0][:take])
                if len(chosen) == num_gpus:
                    return tuple(sorted(chosen))
        return None  # pragma: no cover - the idle GPUs number at least num_gpus

    def _fragment_growth(self, free: float, holders: int, memory: float, max_jobs: int) -> float:
        """``min_frag``'s score of one GPU, with the same float operations."""
        ref = self._reference
        size = max(len(ref), 1)
        before = (
            free
            if holders >= max_jobs
            else free * (1.0 - bisect.bisect_right(ref, free + _EPS) / size)
        )
        left = free - memory
        after = (
            left
            if holders + 1 >= max_jobs
            else left * (1.0 - bisect.bisect_right(ref, left + _EPS) / size)
        )
        return (after - before) + 1e-3 * (free - memory)
