"""The env's spec as Markdown tables (for the README), built from the code's constants."""

from __future__ import annotations

from gpushare_env.envs.config import FLAT_KEYS, REWARD_COMPONENTS, EnvConfig
from gpushare_env.envs.features import BLOCKS, CLUSTER_SUMMARY
from gpushare_env.envs.observation import (
    FRAG_FEATURES,
    GLOBAL_FEATURES,
    GPU_FEATURES,
    pending_features,
    running_features,
)
from gpushare_env.sim.placement import STRATEGIES

__all__ = ["CONFIG_DOCS", "FEATURE_DOCS", "REWARD_DOCS", "config_rows", "env_spec_markdown"]


def _feature_docs() -> dict[str, dict[str, str]]:
    """``FEATURE_DOCS`` from the registry; the running-only and pending-only columns of
    the job rows are listed with the pending ones, their doc saying so."""
    docs = {key: {f.name: f.doc for f in BLOCKS[key]} for key in ("gpus", "frag_hist", "global")}
    pending = {f.name: f for f in BLOCKS["pending"]}
    running = {f.name: f for f in BLOCKS["running"]}
    jobs: dict[str, str] = {}
    for name, feature in {**pending, **running}.items():
        where = (
            "" if name in pending and name in running
            else "pending only" if name in pending
            else "running only"
        )  # fmt: skip
        prefix = ", ".join(p for p in (where, feature.option and f"with {feature.option}") if p)
        jobs[name] = f"{prefix}: {feature.doc}" if prefix else feature.doc
    return {"gpus": docs["gpus"], "cluster": {f.name: f.doc for f in CLUSTER_SUMMARY},
            "frag_hist": docs["frag_hist"], "pending": jobs, "global": docs["global"]}  # fmt: skip


#: Meaning of every observation column (``log_time(t) = min(1, log10(1 + t[s]) / 7)``),
#: from the feature registry (``gpushare_env.envs.features``).
FEATURE_DOCS: dict[str, dict[str, str]] = _feature_docs()

#: Meaning of every reward term (``T = reward.time_scale_s``).
REWARD_DOCS: dict[str, str] = {
    "jct": "-(jobs in system) x elapsed / T; sums to -(total JCT) / T (default weight 1)",
    "makespan": "-elapsed / T from the first arrival to the last completion",
    "utilisation": "+(sum of min(1, U_g) / GPUs) x elapsed / T",
    "slowdown": "-(sum over jobs in system of 1 / solo duration) x elapsed; sums to "
    "-(sum of slowdowns)",
    "starvation": "-(sum of current waits) x elapsed / T^2; sums to -(sum over waiting "
    "stints of (wait / T)^2 / 2)",
    "overhead": "-(GPUs held by suspending / resuming jobs) x elapsed / T; sums to "
    "-(GPU-seconds lost to overheads) / T",
    "invalid": "-reward.invalid_penalty per invalid (no-op) action (default weight 1)",
    "delay": "-(jobs in system - their progress in solo seconds per second) x elapsed / T; "
    "sums to -(total JCT - total solo time) / T: waiting, sharing and overheads",
}


def _config_docs() -> dict[str, str]:
    docs = {
        "cluster": "cluster preset (tiny, tiny2, thesis, medium, philly, mixed) or dict",
        "workload": "workload preset (thesis, thesis_poisson, philly, philly_parametric, "
        "philly_bursty), dict of WorkloadConfig fields, or .csv/.json trace path",
        "num_jobs": "jobs per episode (None: the workload's own count, 100 generated or "
        "every job of a trace)",
        "jobs": "fixed list of JobSpec replayed every episode (overrides workload)",
        "windows.pending": "W: waiting jobs addressable by schedule actions, 1..1024 (the "
        "first W by arrival, unless windows.priority: under a long queue a policy sees "
        "only the oldest W)",
        "windows.running": "R: running jobs addressable by suspend actions, 1..1024",
        "windows.gpus": "rows of obs['gpus'] (None: one per GPU; N: padded with zero rows to N, "
        "one shape for clusters of up to N GPUs)",
        "windows.priority": "share of the pending window, 0..1, given under a long queue to "
        "the waiting jobs with the least attained GPU service (fresh ones first) instead of "
        "the next by arrival; the window lists its jobs in arrival order (0: by arrival)",
        "observation.held_time": "append held_time (time since the job got its GPUs) to the "
        "running rows",
        "observation.placement": "append pack_load, spread_load to the pending rows and "
        "shares_gpu to the running rows (experimental)",
        "observation.drain": "append drain_share (remaining / (remaining + drain time)) to the "
        "pending and running rows (experimental)",
        "observation.rivals": "append rival_wait, rival_remaining (the waiting jobs requesting "
        "as many GPUs: longest wait, shortest predicted remaining) to the running rows "
        "(experimental)",
        "observation.cluster_summary": "replace obs['gpus'] (a row per GPU) by obs['cluster'] "
        "(per GPU type: idle, free memory, compute, gangs; one width for every cluster)",
        **{f"reward.{name}": f"weight of the {name} reward term" for name in REWARD_COMPONENTS},
        "reward.time_scale_s": "T: time unit of the rewards [s]",
        "reward.invalid_penalty": "size of the invalid term, >= 0",
        "limits.max_decisions": "truncate after this many decisions (None: 50 per job + 1000)",
        "limits.max_time_s": "truncate at this simulated time (None: no limit) [s]",
        "limits.max_suspends_per_job": "a job suspended this many times may not be suspended "
        "again (None: no cap)",
        "limits.min_service_s": "a resumed job computes this long before its next suspension [s]",
        "simulator.duration_info": "what the agent sees of lengths: 'none', 'sampled', 'oracle'",
        "simulator.sample_iterations": "iterations before a job's step time is measured",
        "simulator.sample_noise": "relative std-dev of that measurement, in [0, 1)",
        "simulator.suspend_overhead_s": "checkpoint time of every suspension [s] (None: each "
        "model's own, 2-5 s)",
        "simulator.resume_overhead_s": "restart time of every resume or migration [s] (None: "
        "each model's own, 5-50 s)",
        "simulator.interference": "sharing model: 'analytic', 'measured' (Gavel's pairs, "
        "proxies for unmatched models) or 'measured_exact'",
        "invalid_action": "'noop' (no-op with reward.invalid_penalty) or 'raise'",
        "auto_advance": "skip states where advance is the only valid action",
        "on_unfit": "jobs that can never fit the cluster: 'reject' (drop, count) or 'error'",
    }
    return {path: docs[path] for path in EnvConfig.paths()}  # KeyError: a setting undocumented


#: One line per configuration setting, by its path in the nested form (``windows.pending``),
#: in ``EnvConfig.paths()`` order (defaults and flat keys come from ``EnvConfig`` and
#: ``FLAT_KEYS``).
CONFIG_DOCS: dict[str, str] = _config_docs()


def _flat_key(path: str) -> str:
    """How the flat form sets ``path`` (Markdown): its ``FLAT_KEYS`` key, or ``reward``
    with the weight's name (the flat ``reward`` key holds the weights by name)."""
    for key, target in FLAT_KEYS.items():
        if target == path:
            return f"`{key}`"
    group, _, name = path.partition(".")
    if group == "reward" and name in REWARD_COMPONENTS:
        return f"`reward` (`{name}`)"
    raise KeyError(path)  # pragma: no cover - every path has one (tested)


def config_rows() -> list[tuple[str, str, object, str]]:
    """``(path, flat key, default, meaning)`` of every setting, from the dataclasses (the
    flat key in Markdown, as the table shows it)."""
    defaults = EnvConfig()
    rows = []
    for path in EnvConfig.paths():
        group, _, name = path.partition(".")
        value = getattr(defaults, group)
        rows.append((path, _flat_key(path), getattr(value, name) if name else value,
                     CONFIG_DOCS[path]))  # fmt: skip
    return rows


_COLUMNS = {
    "gpus": GPU_FEATURES,
    "cluster": tuple(f.name for f in CLUSTER_SUMMARY),
    "frag_hist": FRAG_FEATURES,
    "pending": pending_features(placement=True, drain=True),
    "running": running_features(held_time=True, placement=True, drain=True, rivals=True),
    "global": GLOBAL_FEATURES,
}
#: The running columns the table lists (the others are the pending columns).
_RUNNING_ONLY = ("speed", "held_time", "shares_gpu", "rival_wait", "rival_remaining")

_SHAPES = {
    "gpus": "G x 6 (flattened)",
    "cluster": "8 x 14 (flattened; one row per GPU type), with observation.cluster_summary, "
    "in place of gpus",
    "frag_hist": "10",
    "pending": "W x 16, +2 with observation.placement, +1 with observation.drain (flattened)",
    "running": "R x 17, +1 with observation.held_time, +1 with observation.placement, +2 "
    "with observation.rivals, +1 with observation.drain (flattened)",
    "global": "15",
}


def env_spec_markdown() -> str:
    """Markdown tables of the action layout, observation columns, rewards and config keys."""
    nstrat = len(STRATEGIES)
    out = [
        "### Actions: `Discrete(4 W + R + 1)`",
        "",
        "| index | action |",
        "|---|---|",
        f"| `{nstrat} * slot + s`, slot < W | schedule the slot-th job of the pending window "
        "(waiting jobs by arrival, suspended ones included; `windows.priority` below) with "
        f"strategy s of `{STRATEGIES}` |",
        f"| `{nstrat} W + j`, j < R | suspend the j-th running job (in start order) |",
        f"| `{nstrat} W + R` | advance to the next event |",
        "",
        "### Observation: `Dict` of flat `float32` `Box`es in [0, 1]",
        "",
        "| key | shape | column | meaning |",
        "|---|---|---|---|",
    ]
    for key, columns in _COLUMNS.items():
        docs = FEATURE_DOCS["pending" if key == "running" else key]
        for i, name in enumerate(columns):
            if key == "running" and name not in _RUNNING_ONLY and i > 0:
                continue
            shape = _SHAPES[key] if i == 0 else ""
            label = f"`{key}`" if i == 0 else ""
            meaning = docs[name]
            if key == "running" and name == "valid":
                meaning = "the pending columns (wait = total wait so far), then:"
                name = "..."
            out.append(f"| {label} | {shape} | `{name}` | {meaning} |")
    out += ["", "### Rewards", "", "| term | definition |", "|---|---|"]
    out += [f"| `{name}` | {REWARD_DOCS[name]} |" for name in REWARD_COMPONENTS]
    out += [
        "",
        "### Configuration",
        "",
        "| key | flat key | default | meaning |",
        "|---|---|---|---|",
    ]
    for path, flat, default, meaning in config_rows():
        out.append(f"| `{path}` | {flat} | `{default!r}` | {meaning} |")
    return "\n".join(out) + "\n"
