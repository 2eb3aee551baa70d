"""What the evaluation harness runs and returns: constants, run specifications, results.

Shared by :mod:`~gpushare_eval.plan` (which lays out the runs),
:mod:`~gpushare_eval.runs` (which carries them out) and
:mod:`~gpushare_eval.outputs` (which writes what they returned).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_env.envs.config import flat_keys
from gpushare_env.metrics import METRIC_DOCS
from gpushare_eval.gantt import GpuInterval
from gpushare_eval.report import RUN_COLUMNS

#: The command the harness serves (in messages, progress bars and reproduce lines).
PROG = "gpushare-evaluate"
REPO_ROOT = Path(__file__).resolve().parents[1]

#: How each run ended, in ``runs.csv`` after the required columns: ``status`` (a
#: :class:`~gpushare_eval.report.RunStatus`: ``complete``,
#: ``truncated_decisions``, ``truncated_time``, ``unfinished``), ``jobs_total`` (jobs of
#: the workload once those that never fit are dropped) and ``jobs_unfinished``
#: (``jobs_total - num_jobs``; ``num_jobs`` counts the finished jobs, over which the
#: metrics are).
STATUS_COLUMNS: tuple[str, ...] = ("status", "jobs_total", "jobs_unfinished")

#: The metrics of ``gpushare_env.metrics.summarize`` that ``runs.csv`` has besides
#: ``RUN_COLUMNS``'s, in order.
OTHER_METRICS: tuple[str, ...] = tuple(m for m in METRIC_DOCS if m not in RUN_COLUMNS)

#: Columns of ``runs.csv`` after the required ones (``RUN_COLUMNS``), in order.
EXTRA_COLUMNS: tuple[str, ...] = (
    *STATUS_COLUMNS,
    "cluster",
    "mode",
    "decisions",
    "truncated",
    "rejected_jobs",
    "invalid_actions",
    *OTHER_METRICS,
    "oracle",
)

#: ``runs.csv``'s columns before ``oracle`` was added (the last column): a resume reads
#: such a file (its runs get ``oracle`` from the plan, :class:`~gpushare_eval.store.
#: RunStore`).
LEGACY_EXTRA_COLUMNS: tuple[str, ...] = EXTRA_COLUMNS[:-1]

#: Columns of ``jobs.csv``.
JOB_COLUMNS: tuple[str, ...] = (
    "policy",
    "workload",
    "seed",
    "job_id",
    "model",
    "num_gpus",
    "arrival_s",
    "first_start_s",
    "finish_s",
    "jct_s",
    "queueing_delay_s",
    "solo_duration_s",
    "slowdown",
    "gpu_seconds",
    "overhead_gpu_seconds",
    "suspends",
    "resumes",
    "migrations",
    "queued_s",
)

#: Which windows saved agents play with (``--agent-windows``): the ones they were trained
#: with, or the evaluation's, as the baselines (pointer agents, ``agents.portable``).
AGENT_WINDOWS: tuple[str, ...] = ("trained", "evaluation")

#: Env config keys a saved agent's own config may set for its runs: they shape what the
#: agent observes and can address, not the workload, the simulated dynamics or the rules.
#: Every setting of the ``observation`` group is one. (Flat keys: the recorded configs are
#: flat, and runs merge them as flat dicts.) The suspension rules (:data:`RULE_KEYS`) are
#: not: every policy, learned or not, runs under the evaluation's.
AGENT_ENV_KEYS: tuple[str, ...] = (
    "pending_window",
    "running_window",
    "time_scale_s",
    *flat_keys("observation"),
)

#: Env config keys of the simulator's suspension rules (flat), which bind every policy of
#: an evaluation alike: a saved agent's recorded values are not applied (a note says
#: when they differ from the evaluation's).
RULE_KEYS: tuple[str, ...] = ("max_suspends_per_job", "min_service_s")

#: Gantt views are drawn only for runs of at most this many jobs (unreadable beyond).
GANTT_MAX_JOBS = 2000

#: Default decision cap per job (``--max-decisions`` overrides): the heuristics need 4 to
#: 15 per job, so this never truncates a sensible policy, but a livelocked one (an
#: untrained agent suspending and resuming forever) still ends; its run is flagged.
DECISIONS_PER_JOB = 1000


class PlanError(ValueError):
    """A request the harness cannot plan (unknown policy, bad trace, agent that does not fit).

    The message is one line naming the command-line option at fault;
    ``gpushare-evaluate`` prints it and exits with code 2.
    """


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy to evaluate.

    Attributes:
        label: Name in the tables (a baseline name, or the model file's stem).
        name: Baseline name, or ``None`` for a saved agent.
        path: Saved agent ``.zip`` (absolute), or ``None`` for a baseline.
        env_overrides: Env config keys the agent was trained with (``AGENT_ENV_KEYS``).
        params: Constructor parameters (baselines) or algorithm facts (agents).
        own_windows: An agent plays with the windows it was trained with (``False``: with
            the evaluation's, as the baselines; a pointer agent, ``agents.portable``).
    """

    label: str
    name: str | None = None
    path: str | None = None
    env_overrides: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    own_windows: bool = True

    @property
    def is_agent(self) -> bool:
        """True for a saved learned agent."""
        return self.path is not None

    @property
    def oracle(self) -> bool:
        """True for a baseline that sees the future (``baselines.base.Policy.oracle``: a
        planner on full forks, ``lookahead:oracle=true``): an upper bound, marked
        ``oracle`` in ``runs.csv`` and kept out of the summary's rankings. Decided by
        building the policy (once per name and parameters); a saved agent never is."""
        if self.name is None:
            return False
        return _is_oracle(self.name, dict(self.params))


#: ``PolicySpec.oracle`` by (name, parameters).
_ORACLE: dict[tuple[str, str], bool] = {}


def _is_oracle(name: str, params: dict[str, Any]) -> bool:
    """Whether ``baselines.make(name, **params)`` builds a policy that sees the future."""
    key = (name, repr(sorted(params.items())))
    found = _ORACLE.get(key)
    if found is None:
        import baselines

        found = _ORACLE[key] = bool(baselines.make(name, **params).oracle)
    return found


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A workload to run every policy on.

    Attributes:
        label: Name in the tables (preset name or trace file name).
        spec: What the env's ``workload`` key gets: a preset name, a dict, or an absolute
            trace path.
        num_jobs: Jobs per episode (``None``: the whole trace).
        trace_sha256: Checksum of the trace file, for ``config.json``.
        size: Jobs of a trace as loaded when planning (``None`` for generators).
        trace_jobs: Jobs of the whole trace (``None`` for generators); more than ``size``
            when ``num_jobs`` cut it.
        cluster: The cluster this workload runs on when it has its own (a trace sized by
            ``--cluster load=X``), else ``None``: the plan's cluster.
    """

    label: str
    spec: str | Mapping[str, Any]
    num_jobs: int | None
    trace_sha256: str | None = None
    size: int | None = None
    trace_jobs: int | None = None
    cluster: Mapping[str, Any] | None = None

    @property
    def trace_cut_note(self) -> str | None:
        """``"trace VC.csv: first 100 of 1,181 jobs (--num-jobs)"`` when ``num_jobs`` cut
        the trace, else ``None``."""
        if self.size is None or self.trace_jobs is None or self.size >= self.trace_jobs:
            return None
        return f"trace {self.label}: first {self.size:,} of {self.trace_jobs:,} jobs (--num-jobs)"


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One run: everything a worker process needs (picklable).

    Attributes:
        index: Position in the deterministic run order (policy, workload, seed).
        policy: The policy.
        workload: The workload.
        seed: The episode seed (``env.reset(seed=seed)``; also the policy's own seed).
        env_config: The env config dict of this run.
        headless: Run the simulator without the env (heuristics only).
        record_series: Return the utilisation series (for the plot).
        record_gantt: Record per-job GPU holds (for the Gantt view).
        keep_jobs: Return the job records (for ``jobs.csv``).
    """

    index: int
    policy: PolicySpec
    workload: WorkloadSpec
    seed: int
    env_config: Mapping[str, Any]
    headless: bool = False
    record_series: bool = False
    record_gantt: bool = False
    keep_jobs: bool = True


@dataclass(slots=True)
class RunOutput:
    """What a run sends back to the main process.

    Attributes:
        index: The run's ``RunSpec.index``.
        row: The ``runs.csv`` row.
        jct_s: JCT of every finished job.  # (N,) [s]
        jobs: The job records as ``jobs.csv`` rows (empty unless kept).
        series: ``(time_s, util, alloc)`` step series, downsampled, or ``None``.
        gantt: GPU holds, or ``None``.
        layout: ``(num_gpus, max_jobs_per_gpu, gpu_node)`` of the cluster.
        error: Why the run failed (``"ExceptionType: message"``), else ``None``.
    """

    index: int
    row: dict[str, Any]
    jct_s: np.ndarray
    jobs: list[tuple[Any, ...]]
    series: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    gantt: list[GpuInterval] | None
    layout: tuple[int, int, list[int]]
    error: str | None = None


def one_line(error: BaseException) -> str:
    """An exception's message on one line."""
    return " ".join(str(error).split()) or type(error).__name__


def safe_name(name: str) -> str:
    """A file-name-safe version of a label."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "x"
