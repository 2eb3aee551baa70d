"""Helpers of the fork tests (``tests/test_fork_simulator.py``, ``tests/envs/test_fork.py``):
the episodes hypothesis draws, bit-exact NaN-aware comparison, and a snapshot of
everything a simulator shows."""

from __future__ import annotations

import dataclasses
import enum
import pickle
from typing import Any

import numpy as np
from hypothesis import strategies as st

from gpushare_env.sim import Simulator
from gpushare_env.sim.interference import INTERFERENCE_MODELS
from gpushare_env.sim.placement import MIG_RULES, SHARE_RULES, STRATEGIES
from gpushare_env.sim.setting_table import DURATION_INFO, REWARD_COMPONENTS, SHARING_MODELS
from gpushare_env.sim.types import JobStatus
from gpushare_env.workloads.openb import shipped_pod_list_path
from tests.test_headless_matches_env import OPENB_CLUSTER

#: Small episodes (flat env config keys): presets, both sharing models, every
#: interference model and ``duration_info``, windows, suspension rules, sampling.
memory_or_shares = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(["tiny", "tiny2", "thesis", "mixed"]),
        "workload": st.sampled_from(["thesis_poisson", "philly_heavy", "thesis"]),
        "num_jobs": st.integers(3, 12),
        "pending_window": st.integers(1, 8),
        "running_window": st.integers(1, 8),
        "window_priority": st.sampled_from([0.0, 0.5, 1.0]),
        "max_suspends_per_job": st.one_of(st.none(), st.integers(0, 3)),
        "min_service_s": st.sampled_from([0.0, 300.0]),
        "duration_info": st.sampled_from(DURATION_INFO),
        "interference": st.sampled_from(INTERFERENCE_MODELS),
        "sharing": st.sampled_from(tuple(m for m in SHARING_MODELS if m != "mig")),
        "sample_iterations": st.sampled_from([0, 50]),
        "auto_advance": st.booleans(),
    }
)
#: openb's tasks (CPU-only ones among them) under the shares model, as the harness runs
#: them (``tests/test_headless_matches_env.py``).
openb = st.tuples(memory_or_shares, st.sampled_from([OPENB_CLUSTER, "tiny2", "thesis"])).map(
    lambda drawn: {
        **drawn[0],
        "cluster": drawn[1],
        "workload": {"path": str(shipped_pod_list_path()), "cut": "random"},
        "sharing": "shares",
    }
)
#: Philly-style jobs on MIG clusters under the mig model.
mig = st.tuples(memory_or_shares, st.sampled_from(["mig_tiny", "miso"])).map(
    lambda drawn: {**drawn[0], "cluster": drawn[1], "sharing": "mig"}
)
configs = st.one_of(memory_or_shares, openb, mig)
#: Every strategy a sharing model with rules of its own offers (its rules' caches and
#: state among the actions).
EVERY_STRATEGY = {
    "shares": (*STRATEGIES, *SHARE_RULES),
    "mig": (*STRATEGIES, *MIG_RULES),
}
#: Where in an episode: a share of its moves.
shares_of = st.floats(0.0, 1.0, allow_nan=False)

#: Every property of a ``JobState`` (``gpushare_env/compiled/_core.pyi``).
JOB_FIELDS = (
    "spec", "job_id", "noise", "suspend_overhead_s", "resume_overhead_s",
    "cross_node_factor", "status", "num_gpus", "memory_gib", "intensity", "node_request",
    "model", "arrival_s", "suspended", "progress", "iterations_done",
    "predicted_remaining_s", "wait_s", "total_wait_s", "attained_gpu_s", "last_update_s",
    "rate", "speed", "gpus", "node", "prev_gpus", "version", "first_start_s", "finish_s",
    "held_since_s", "gpu_seconds", "overhead_gpu_seconds", "transition_since_s",
    "queued_since_s", "queued_s", "suspends", "resumes", "migrations", "sampled",
    "cross_node",
)  # fmt: skip


def canon(value: Any) -> Any:
    """A value whose ``==`` is bit equality of ``value``: floats by their hex digits (every
    NaN equals every NaN, ``-0.0`` differs from ``0.0``), arrays by dtype, shape and bytes,
    containers, enums and dataclasses by their parts and type."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, enum.Enum):
        return (type(value).__name__, value.name)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, np.generic):
        return (type(value).__name__, canon(value.item()))
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        return ("dict", tuple((key, canon(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(canon(item) for item in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (
            type(value).__name__,
            tuple((f.name, canon(getattr(value, f.name))) for f in fields),
        )
    raise TypeError(f"canon: no rule for {type(value).__name__}")


def difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` first differ bit for bit (``None``: nowhere)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            found = difference(a[key], b[key], f"{path}[{key!r}]")
            if found is not None:
                return found
        return None
    if isinstance(a, (list, tuple)) and type(a) is type(b):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if canon(a) != canon(b):
        return f"{path}: {a!r} != {b!r}"
    return None


def assert_same(a: Any, b: Any, what: str) -> None:
    """Fail naming ``what`` and the first place where ``a`` and ``b`` differ bit for bit.

    Equal pickles are equal bits (a float pickles as its 8 bytes, an array as its dtype,
    shape and bytes); unequal ones may still hold equal values (pickle's memo depends
    on which objects are shared), so ``difference`` decides."""
    if pickle.dumps(a) == pickle.dumps(b):
        return
    found = difference(a, b)
    assert found is None, f"{what}: {found}"


def job_snapshot(sim: Simulator, job_id: int) -> dict[str, Any]:
    """Everything ``sim`` shows of one job."""
    state = sim.jobs[job_id]
    shown = {name: getattr(state, name) for name in JOB_FIELDS}
    shown["progress_of"] = sim.progress_of(job_id)
    shown["predicted"] = sim.predicted_remaining_s(job_id)
    shown["measured_step"] = sim.measured_step_time_s(job_id)
    shown["can_suspend"] = sim.can_suspend(job_id)
    shown["suspend_refusal"] = sim.suspend_refusal(job_id)
    if state.status in (JobStatus.PENDING, JobStatus.SUSPENDED):
        shown["fits"] = sim.fits(job_id)
    return shown


#: The keys of a light snapshot (``sim_snapshot(sim, light=True)``).
LIGHT = ("now_s", "done", "counts", "encoded", "reward_terms")


def sim_snapshot(sim: Simulator, light: bool = False) -> dict[str, Any]:
    """Everything ``sim`` shows through its API (copies, not live views): the clock and
    counters, the queues and windows, every job, every GPU, the cluster totals, the
    finished jobs' records, the timeline, the encoded observation, mask and reward terms,
    and the operations a pickle would replay. ``light``: the keys ``LIGHT`` only."""
    gpus = sim.gpus
    shown = {
        "now_s": sim.now_s,
        "done": sim.done,
        "counts": (
            sim.num_finished,
            sim.jobs_in_system,
            sim.num_waiting,
            sim.num_running,
            sim.events_processed,
            sim.decisions,
            sim.steps,
            sim.deadlock,
            sim.truncated_by,
        ),
        "encoded": (sim.observation_buffer.copy(), sim.action_mask.copy()),
        "reward_terms": sim.reward_terms(REWARD_COMPONENTS),
    }
    if light:
        return shown
    return shown | {
        "queues": (sim.pending(), sim.running(), sim.in_transition(), sim.next_event_time()),
        "windows": (sim.pending_window(), sim.running_window(), sim.window_ids()),
        "ids": list(sim.jobs),
        "jobs": {job_id: job_snapshot(sim, job_id) for job_id in sim.jobs},
        "gpus": (
            gpus.free_memory_gib.copy(),
            gpus.load.copy(),
            gpus.computing.copy(),
            gpus.holders.copy(),
            gpus.factor.copy(),
            [sim.gpu_jobs(g) for g in range(sim.num_gpus)],
        ),
        "totals": (sim.cluster_totals(), sim.predicted_work_s(), sim.predicted_work_s(3600.0)),
        "records": sim.records(),
        "timeline": sim.timeline(),
        "ops": list(sim.core.ops),
    }


def arrived_ids(sim: Simulator) -> list[int]:
    """The jobs that have arrived, in arrival order."""
    return [job_id for job_id in sim.jobs if sim.jobs[job_id].status != JobStatus.FUTURE]


#: What an instant may be chosen for: some job mid-sampling (running, its sampling not
#: done), checkpointing (suspending) or restarting (resuming).
INSTANTS = ("sampling", "suspending", "resuming")


def at_instant(sim: Simulator, instant: str) -> bool:
    """True when some job of ``sim`` is in the state ``instant`` names (``INSTANTS``)."""
    for job_id in sim.jobs:
        state = sim.jobs[job_id]
        status = state.status
        if instant == "sampling" and status == JobStatus.RUNNING and not state.sampled:
            return True
        if instant == "suspending" and status == JobStatus.SUSPENDING:
            return True
        if instant == "resuming" and status == JobStatus.RESUMING:
            return True
    return False
