"""MISO (SoCC 2022) on MIG-partitioned A100s, as its artifact simulates it.

``baselines.mig.search`` holds MISO's searches over the artifact's 18 partitions (admission,
placement and re-packing by least mean slowdown, moves, ``mig_static``'s promotions) as pure
functions; ``baselines.mig.artifact_loop`` replays the artifact's 1 s time loop for its four
policies (``mig_full``, ``mig_static``, ``miso``, ``mig_oracle``) on the scenario of
``gpushare_env.workloads.miso``. The rules are in ``docs/design/miso_protocol.md``.
"""

from typing import Any

#: Where each public name lives (imported when first used: the searches and the
#: artifact's loop stay out of ``import baselines``).
_HOMES = {
    **dict.fromkeys(
        ("POLICIES", "ArtifactResult", "JobOutcome", "TimelineEntry", "run_artifact_loop"),
        "baselines.mig.artifact_loop",
    ),
    **dict.fromkeys(
        ("SLICE_SIZES", "Placement", "admission_size", "best_placement", "canonical_table",
         "moved_jobs", "slice_starts", "static_promotions"),
        "baselines.mig.search",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'baselines.mig' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)


__all__ = [
    "POLICIES",
    "SLICE_SIZES",
    "ArtifactResult",
    "JobOutcome",
    "Placement",
    "TimelineEntry",
    "admission_size",
    "best_placement",
    "canonical_table",
    "moved_jobs",
    "run_artifact_loop",
    "slice_starts",
    "static_promotions",
]
