"""The compiled engine of ``GPUShare-v0`` (``EnvConfig.engine = "compiled"``).

``_core.Core`` carries one episode in C: the simulator (events, rates, memory, the
placement strategies), the observation and mask encoder and the env's reward terms. It
performs the same float operations in the same order as the Python reference
(``Simulator``, ``StateEncoder`` and ``GPUShareEnv``'s bookkeeping), so the two engines
give bit-identical observations, masks, rewards, infos and end-of-episode metrics
(``tests/envs/test_compiled.py`` steps both side by side).

It covers every option of ``EnvConfig``, the optional observation columns
(``observe_held_time``, ``observe_placement``, ``observe_drain``, ``observe_rivals``)
included. What the compiled engine does not offer is the Python objects behind a step: the
read-only ``SimView`` that heuristics read, ``env.simulator``, rendering and pickling.
Policies that act through observations and masks only (learned agents, the random
policy) run on it; heuristics run on the Python engine.

The inputs are taken from an unstepped ``Simulator`` of the same episode (its per-job
measurement noise, overheads and the workload's memory reference), so both engines start
from the same state by construction.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from gpushare_env.sim.catalog import MODELS
from gpushare_env.sim.engine import Simulator, timeline_from_rows
from gpushare_env.sim.interference import LinearContention, NoInterference
from gpushare_env.sim.placement import STRATEGIES, find_placement
from gpushare_env.sim.types import JobRecord, Timeline

if TYPE_CHECKING:
    from gpushare_env.compiled._core import Core

__all__ = ["available", "build_error", "new_core", "records", "timeline"]

try:
    from gpushare_env.compiled import _core
except ImportError as error:  # not built (no C compiler when the package was installed)
    _core = None
    _IMPORT_ERROR: str | None = str(error)
else:
    _IMPORT_ERROR = None

_MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


def available() -> bool:
    """True when the extension module is built."""
    return _core is not None


def build_error() -> str | None:
    """Why the extension is missing (``None`` when it is available)."""
    return _IMPORT_ERROR


def new_core(
    sim: Simulator,
    *,
    pending_window: int,
    running_window: int,
    max_suspends_per_job: int | None,
    held_time: bool,
    placement: bool,
    drain: bool,
    rivals: bool,
    num_pending_features: int,
    weights: list[float],
    time_scale_s: float,
    auto_advance: bool,
    max_time_s: float | None,
    decision_cap: int,
    invalid_penalty: float,
) -> Core:
    """A compiled episode starting from ``sim``'s state (a freshly built ``Simulator``).

    Raises:
        RuntimeError: the extension is not built.
        ValueError: ``sim`` has already run, or its interference model has no compiled
            counterpart.
    """
    if _core is None:
        raise RuntimeError(
            'GPUShare-v0: engine="compiled" needs the extension gpushare_env.compiled._core, '
            f"which is not built ({_IMPORT_ERROR}); reinstall the package with a C compiler "
            '(pip install -e .) or use engine="python"'
        )
    if sim.now_s != 0.0 or sim.decisions or sim.events_processed:
        raise ValueError("new_core: the simulator must be fresh (not advanced, no decision)")
    model = sim.interference
    if isinstance(model, LinearContention):
        interference, alpha = True, model.alpha
    elif isinstance(model, NoInterference):
        interference, alpha = False, 0.0
    else:
        raise ValueError(
            f"the compiled engine supports LinearContention and NoInterference, "
            f"not {type(model).__name__}"
        )
    states = sorted(sim.jobs.values(), key=lambda j: (j.spec.arrival_s, j.spec.job_id))
    specs = [state.spec for state in states]
    sizes = sorted({s.memory_gib for s in specs})
    cluster = sim.cluster
    jobs_in: dict[str, list[Any]] = {
        "job_id": [s.job_id for s in specs],
        "num_gpus": [s.num_gpus for s in specs],
        "memory_gib": [s.memory_gib for s in specs],
        "intensity": [s.intensity for s in specs],
        "iterations": [float(s.iterations) for s in specs],
        "step_time_s": [s.step_time_s for s in specs],
        "arrival_s": [s.arrival_s for s in specs],
        "model_index": [
            _MODEL_NAMES.index(s.model) if s.model in _MODEL_NAMES else -1 for s in specs
        ],
        "noise": [state.noise for state in states],
        "suspend_overhead_s": [state.suspend_overhead_s for state in states],
        "resume_overhead_s": [state.resume_overhead_s for state in states],
        "cross_node_factor": [state.cross_node_factor for state in states],
        "size_index": [sizes.index(s.memory_gib) for s in specs],
        "inv_solo_s": [1.0 / s.solo_duration_s for s in specs],
    }
    cluster_in = {
        "gpu_memory_gib": cluster.gpu_memory_gib,
        "gpu_node": cluster.gpu_node,
        "node_gpus": cluster.node_gpus,
        "gpu_speed": cluster.gpu_speed,
        "max_jobs_per_gpu": cluster.max_jobs_per_gpu,
        "find_placement": find_placement,
        "strategies": STRATEGIES,
    }
    cfg = sim.config
    sim_in = {
        "alpha": alpha,
        "interference": interference,
        "sample_iterations": cfg.sample_iterations,
        "duration_info": cfg.duration_info,
        "record_timeline": cfg.record_timeline,
        "reference_memory_gib": sim.gpus.reference_memory_gib.tolist(),
        "median_worker_gib": sim._median_worker_gib,
        "fgd_part": list(sim._fgd_part),
        "fgd_sum": sim._fgd_sum,
    }
    encoder_in = {
        "pending_window": pending_window,
        "running_window": running_window,
        "held_time": held_time,
        "placement": placement,
        "drain": drain,
        "rivals": rivals,
        "max_suspends_per_job": max_suspends_per_job,
        "num_pending_features": num_pending_features,
        "num_models": len(_MODEL_NAMES),
        "memory_sizes": sizes,
        "log_gpus": 1.0 / math.log2(1.0 + cluster.num_gpus),
    }
    env_in = {
        "weights": list(weights),
        "inv_scale": 1.0 / time_scale_s,
        "auto_advance": auto_advance,
        "max_time_s": max_time_s,
        "decision_cap": decision_cap,
        "invalid_penalty": invalid_penalty,
    }
    core = _core.Core(jobs_in, cluster_in, sim_in, encoder_in, env_in)
    # the Python placement fallback (shared gangs) reads the core's live arrays
    core.gpu_state = dataclasses.replace(
        sim.gpus,
        free_memory_gib=core.free_array,
        load=core.load_array,
        computing=core.computing_array,
        holders=core.holders_array,
        factor=core.factor_array,
    )
    return core


def records(core: Core, sim: Simulator) -> list[JobRecord]:
    """The finished jobs of a compiled episode, in finishing order (``Simulator.records``)."""
    return [
        JobRecord.of(sim.jobs[job_id].spec, *outcome) for job_id, *outcome in core.finished_jobs()
    ]


def timeline(core: Core, sim: Simulator) -> Timeline:
    """The cluster timeline of a compiled episode up to now (``Simulator.timeline``)."""
    return timeline_from_rows(core.timeline_rows(), sim.cluster, core.now)
