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

This module is the readable statement of the strategies, in O(G) vectorised numpy. The
simulator's compiled core runs the same strategies in C, with an incremental index that
answers one-worker placements and exclusive gangs without a pass over the cluster; it
calls ``find_placement`` itself for shared gangs on nodes of more than 128 GPUs, and
``tests/sim/test_placement_index.py`` checks that both give the same GPUs on random states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gpushare_env.sim.engine import GPUState

__all__ = ["STRATEGIES", "expected_fragment", "find_placement"]

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
