"""Real traces shipped with the package, and the rule that sizes a cluster for a trace.

The development set of Philly virtual-cluster replays lives in ``data/philly_vc/`` (see
its ``README.md`` for the columns, the source and the licence): six CSV traces of real
arrivals and GPU counts, one per virtual cluster.

>>> [name for name in PHILLY_VC_TRACES][:2]
['11cb48', '2869ce']
>>> jobs = read_csv_trace(philly_vc_path("2869ce"))
>>> len(jobs), max(j.num_gpus for j in jobs)
(533, 32)
>>> sized_cluster(jobs, load=0.9)["nodes"]
4

A real trace carries its own offered load, so the cluster it runs on decides whether it
is idle or hopelessly overloaded: a trace that keeps 64 GPUs busy 2.5 times over says
nothing useful on 64 GPUs. :func:`sized_cluster` gives each trace the smallest cluster of
whole nodes on which its load is at most ``load``, and never fewer GPUs than its widest
job asks for (such a job could otherwise never run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.csv_trace import read_csv_trace  # noqa: F401 (the doctest)

__all__ = [
    "PHILLY_VC_TRACES",
    "offered_load",
    "parse_load_rule",
    "philly_vc_path",
    "sized_cluster",
]

#: The shipped Philly virtual-cluster traces (file stems of ``data/philly_vc/*.csv``).
PHILLY_VC_TRACES: tuple[str, ...] = ("11cb48", "2869ce", "6214e9", "6c71a0", "b436b2", "ee9e8c")


def philly_vc_path(name: str) -> Path:
    """The path of a shipped Philly VC trace, by its stem (``"11cb48"``) or file name.

    Raises:
        ValueError: The name is not one of :data:`PHILLY_VC_TRACES`.
    """
    stem = name[:-4] if name.endswith(".csv") else name
    if stem not in PHILLY_VC_TRACES:
        raise ValueError(
            f"unknown Philly VC trace {name!r}; shipped: {', '.join(PHILLY_VC_TRACES)}"
        )
    root = resources.files("gpushare_env.workloads") / "data" / "philly_vc" / f"{stem}.csv"
    return Path(str(root))


def offered_load(jobs: Sequence[JobSpec], num_gpus: int) -> float:
    """The GPU-time the jobs ask for, over what ``num_gpus`` GPUs offer during the trace.

    ``sum(num_gpus x solo duration) / (span x num_gpus)``, the span running from the
    first arrival to the last (the definition of ``data/philly_vc/README.md``). A trace
    whose jobs all arrive at once has no span: its load is infinite.
    """
    if not jobs:
        raise ValueError("offered_load: no jobs")
    if num_gpus < 1:
        raise ValueError(f"offered_load: num_gpus must be >= 1, got {num_gpus}")
    work = sum(j.num_gpus * j.solo_duration_s for j in jobs)
    span = max(j.arrival_s for j in jobs) - min(j.arrival_s for j in jobs)
    return work / (span * num_gpus) if span > 0 else math.inf


def sized_cluster(
    jobs: Sequence[JobSpec],
    load: float = 0.9,
    gpus_per_node: int = 8,
    gpu_type: str = "v100",
) -> dict[str, Any]:
    """The smallest cluster of whole nodes on which the jobs' offered load is <= ``load``.

    Never fewer GPUs than the widest job asks for. The trace's durations are solo times on
    ``gpu_type`` (V100-seconds for the shipped Philly replays).

    Returns:
        A cluster dict for ``ClusterConfig.from_any``, named after its size and load
        (``"15x8 v100, load 0.89"``).
    """
    if not (isinstance(load, (int, float)) and 0 < load < math.inf):
        raise ValueError(f"sized_cluster: load must be a positive number, got {load!r}")
    if not jobs:
        raise ValueError("sized_cluster: no jobs")
    demand_gpus = offered_load(jobs, 1) / load
    if not math.isfinite(demand_gpus):
        raise ValueError("sized_cluster: every job arrives at the same time, so the trace "
                         "has no span and no load to size a cluster by")  # fmt: skip
    widest = max(j.num_gpus for j in jobs)
    nodes = max(1, math.ceil(demand_gpus / gpus_per_node), math.ceil(widest / gpus_per_node))
    actual = offered_load(jobs, nodes * gpus_per_node)
    return {
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "gpu_type": gpu_type,
        "name": f"{nodes}x{gpus_per_node} {gpu_type}, load {actual:.2f}",
    }


def parse_load_rule(spec: Any) -> float | None:
    """The load of a ``"load=0.9"`` cluster spec (size per trace), else ``None``.

    Raises:
        ValueError: ``load=`` followed by something that is not a positive number.
    """
    if not (isinstance(spec, str) and spec.startswith("load=")):
        return None
    text = spec[len("load=") :]
    try:
        load = float(text)
    except ValueError:
        raise ValueError(f"cluster: {spec!r}: expected load=<number>, e.g. load=0.9") from None
    if not (0 < load < math.inf):
        raise ValueError(f"cluster: {spec!r}: the load must be a positive number")
    return load
