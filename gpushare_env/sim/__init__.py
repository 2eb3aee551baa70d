"""The simulation core (its engine compiled from Cython); it never imports gymnasium."""

from gpushare_env.sim.catalog import DEFAULT_MODELS, GPU_TYPES, MODELS, GPUType, ModelSpec
from gpushare_env.sim.cluster import PRESETS, Cluster, ClusterConfig, NodeGroup, make_cluster
from gpushare_env.sim.decisions import (
    ADVANCE,
    Advance,
    Decision,
    Repartition,
    Schedule,
    Suspend,
    apply_decision,
)
from gpushare_env.sim.engine import (
    DURATION_INFO,
    Event,
    EventKind,
    InvalidDecision,
    JobState,
    SimConfig,
    Simulator,
    Windows,
)
from gpushare_env.sim.interference import (
    InterferenceModel,
    LinearContention,
    MeasuredContention,
    NoInterference,
)
from gpushare_env.sim.placement import STRATEGIES
from gpushare_env.sim.types import JobRecord, JobSpec, JobStatus, Timeline
from gpushare_env.sim.view import SimView

__all__ = [
    "ADVANCE",
    "DEFAULT_MODELS",
    "DURATION_INFO",
    "GPU_TYPES",
    "MODELS",
    "PRESETS",
    "STRATEGIES",
    "Advance",
    "Cluster",
    "ClusterConfig",
    "Decision",
    "Event",
    "EventKind",
    "GPUType",
    "InterferenceModel",
    "InvalidDecision",
    "JobRecord",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LinearContention",
    "MeasuredContention",
    "ModelSpec",
    "NoInterference",
    "NodeGroup",
    "Repartition",
    "Schedule",
    "SimConfig",
    "SimView",
    "Simulator",
    "Suspend",
    "Timeline",
    "Windows",
    "apply_decision",
    "make_cluster",
]
