"""Every observation feature of ``GPUShare-v0``, registered once.

A ``Feature`` is one column of one block of the observation: its name, its bounds, what
it means, and the ``EnvConfig`` setting that adds it (``None``: always there). Everything
else is built from this registry: the column names and the spaces
(``gpushare_env.envs.observation``), the column indices the compiled core writes to (it
receives the names of each block's columns and looks its indices up by name), and the
documentation tables (``gpushare_env.envs.spec``). Times are encoded with
``log_time(t) = min(1, log10(1 + t[s]) / 7)``.

A new feature is one entry here, plus the few lines of the core that compute its value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpushare_env.sim.catalog import GPU_TYPES, MODELS

__all__ = [
    "BLOCKS",
    "CLUSTER_SUMMARY",
    "FRAG_BIN_EDGES_GIB",
    "GANG_WIDTHS",
    "OBSERVE_OPTIONS",
    "SUMMARY_FREE_BINS",
    "SUMMARY_GPU_TYPES",
    "Feature",
    "block_features",
]


@dataclass(frozen=True, slots=True)
class Feature:
    """One observation column.

    Attributes:
        name: Column name, unique within its block.
        doc: What the value means (units, normalisation).
        option: The ``EnvConfig`` setting that adds the column, by its path
            (``observation.drain``; ``None``: always present).
        low: Lower bound of the value.
        high: Upper bound of the value.
    """

    name: str
    doc: str
    option: str | None = None
    low: float = 0.0
    high: float = 1.0


#: Upper edges of the free-memory bins of ``obs["frag_hist"]``.  [GiB]
FRAG_BIN_EDGES_GIB: tuple[float, ...] = (2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0)

#: The settings that add columns (the ``observation`` group), in the order their columns
#: come.
OBSERVE_OPTIONS: tuple[str, ...] = (
    "observation.held_time",
    "observation.placement",
    "observation.rivals",
    "observation.drain",
)


def _bins() -> tuple[Feature, ...]:
    lows = (0.0, *FRAG_BIN_EDGES_GIB)
    highs = (*FRAG_BIN_EDGES_GIB, math.inf)
    return tuple(
        Feature(
            f"shared_free_{lo:g}_{hi:g}gib",
            f"share of GPUs with workers and a free slot whose free memory is in {lo:g}-{hi:g} GiB",
        )
        for lo, hi in zip(lows, highs, strict=True)
    )


_GPU = (
    Feature("free_memory", "free memory / capacity"),
    Feature(
        "load", "compute load U_g (sum of intensities of computing workers) / max_jobs_per_gpu"
    ),
    Feature("workers", "workers holding memory / max_jobs_per_gpu"),
    Feature("node", "node index / (nodes - 1)"),
    Feature("speed", "GPU speed factor / fastest GPU of the cluster"),
    Feature("capacity", "GPU memory / largest GPU of the cluster"),
)

_FRAG = (
    Feature("idle", "share of GPUs without a worker"),
    *_bins(),
    Feature("no_slot", "share of GPUs hosting max_jobs_per_gpu workers"),
)

# the columns every job row starts with (pending and running alike)
_JOB = (
    Feature("valid", "1 if the slot holds a job, else the whole row is 0"),
    Feature("num_gpus", "log2(1 + GPUs requested) / log2(1 + cluster GPUs)"),
    Feature("memory", "per-worker memory / largest GPU"),
    Feature("intensity", "GPU intensity u in (0, 1] (compute share one worker uses alone)"),
    *(Feature(f"model_{name}", f"1 if the model is {name}") for name in MODELS),
    Feature("wait", "log_time(time since the job (re)entered the queue); running: total wait"),
    Feature("sampled", "1 once the job's step time has been measured (sampling phase done)"),
    Feature("duration_known", "1 if predicted_remaining is defined under duration_info"),
    Feature("predicted_remaining", "log_time(predicted remaining solo time), 0 if unknown"),
    Feature("suspended", "1 if the job waits after a suspension (resuming costs an overhead)"),
    Feature("progress", "fraction of iterations done"),
)

_DRAIN = Feature(
    "drain_share",
    "r / (r + D), r the predicted remaining solo time (0 if unknown), D = sum of remaining "
    "x GPUs over the jobs in the system / GPUs: the yardstick of the thesis's critical-path "
    "rule (experimental)",
    option="observation.drain",
)

_PENDING = (
    *_JOB,
    Feature(
        "pack_load",
        "largest U_g + u on the GPUs pack would pick / max_jobs_per_gpu (0: no fit; experimental)",
        option="observation.placement",
    ),
    Feature(
        "spread_load",
        "the same for spread (experimental)",
        option="observation.placement",
    ),
    _DRAIN,
)

_RUNNING = (
    *_JOB,
    Feature("speed", "current speed (x solo V100) / fastest GPU of the cluster"),
    Feature(
        "held_time",
        "log_time(time since the job got its current GPUs: its last start or resume)",
        option="observation.held_time",
    ),
    Feature(
        "shares_gpu",
        "1 if another job holds memory on one of its GPUs (experimental)",
        option="observation.placement",
    ),
    Feature(
        "rival_wait",
        "log_time(longest wait among the waiting jobs, whole queue, requesting as many GPUs), "
        "0 if none (experimental)",
        option="observation.rivals",
    ),
    Feature(
        "rival_remaining",
        "log_time(shortest predicted remaining solo time among them), 0 if none predicted "
        "(experimental)",
        option="observation.rivals",
    ),
    _DRAIN,
)

_GLOBAL = (
    Feature("time", "log_time(simulated time)"),
    Feature("waiting", "jobs pending or suspended / episode jobs"),
    Feature("backlog", "waiting jobs beyond the pending window / episode jobs"),
    Feature("running", "running jobs / episode jobs"),
    Feature("in_transition", "jobs suspending or resuming / episode jobs"),
    Feature("in_system", "arrived, unfinished jobs / episode jobs"),
    Feature("finished", "finished jobs / episode jobs"),
    Feature("utilisation", "sum over GPUs of min(1, U_g) / GPUs"),
    Feature("allocation", "GPUs holding a worker / GPUs"),
    Feature("free_memory", "free memory / total memory"),
    Feature(
        "fragmentation",
        "free memory on partly used GPUs that cannot host the median worker / free memory",
    ),
    Feature("expected_fragment", "FGD-style expected fragment (Weng et al., ATC'23) / free memory"),
    Feature("waiting_gpus", "min(1, GPUs requested by waiting jobs / GPUs)"),
    Feature("idle_gpus", "idle GPUs / GPUs"),
    Feature("can_advance", "1 if an event is still to come (advance is valid)"),
)

#: The GPU types of ``obs["cluster"]``'s rows (``observation.cluster_summary``), one row
#: per type of the catalog, in its order, whether the cluster has it or not.
SUMMARY_GPU_TYPES: tuple[str, ...] = tuple(GPU_TYPES)

#: Upper edges of ``obs["cluster"]``'s free-memory bins (share of a GPU's memory).
SUMMARY_FREE_BINS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)

#: Widths of ``obs["cluster"]``'s gang counts (idle GPUs of one node).
GANG_WIDTHS: tuple[int, ...] = (1, 2, 4, 8)


def _free_bins() -> tuple[Feature, ...]:
    lows = (0.0, *SUMMARY_FREE_BINS[:-1])
    return tuple(
        Feature(
            f"shared_free_{round(lo * 100)}_{round(hi * 100)}",
            f"its GPUs with workers whose free memory is "
            f"{'' if lo == 0 else f'above {lo:g} and '}at most {hi:g} of their memory / its GPUs",
        )
        for lo, hi in zip(lows, SUMMARY_FREE_BINS, strict=True)
    )


#: The columns of ``obs["cluster"]`` (``observation.cluster_summary``): one row per GPU
#: type of ``SUMMARY_GPU_TYPES``, all zero for a type the cluster has none of. Its width
#: depends neither on the cluster nor on the queue. Computed from the per-GPU rows by
#: the compiled core's ``summarise_cluster`` (``observation.ClusterSummary``).
CLUSTER_SUMMARY: tuple[Feature, ...] = (
    Feature("share", "GPUs of this type / cluster GPUs"),
    Feature("gpus", "log2(1 + GPUs of this type) / 16"),
    Feature("idle", "its GPUs without a worker / its GPUs"),
    *_free_bins(),
    Feature("shared_free_memory", "free memory on its GPUs with workers / its memory"),
    Feature("compute_free", "mean over its GPUs of max(0, 1 - U_g)"),
    Feature("contended", "its GPUs whose compute load U_g exceeds 1 / its GPUs"),
    *(
        Feature(
            f"gangs_{w}",
            f"GPUs in whole {w}-GPU gangs of idle GPUs of one node (sum over its nodes of "
            f"{w} x floor(idle GPUs / {w})) / its GPUs",
        )
        for w in GANG_WIDTHS
    ),
)

#: Every feature of each observation key, optional ones included, in column order.
BLOCKS: dict[str, tuple[Feature, ...]] = {
    "gpus": _GPU,
    "frag_hist": _FRAG,
    "pending": _PENDING,
    "running": _RUNNING,
    "global": _GLOBAL,
}


def block_features(
    block: str, options: frozenset[str] | set[str] = frozenset()
) -> tuple[Feature, ...]:
    """The columns of ``block`` with the given ``OBSERVE_OPTIONS`` on, in order."""
    unknown = set(options) - set(OBSERVE_OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown observation option(s) {sorted(unknown)}; allowed: {list(OBSERVE_OPTIONS)}"
        )
    return tuple(f for f in BLOCKS[block] if f.option is None or f.option in options)
