"""``gpushare-evaluate``: every policy on identical seeded workloads, with statistics and plots.

Each run is one (policy, workload, seed). Every policy, heuristic or learned, acts through
the same ``GPUShare-v0`` env on the same seeded workload (``env.reset(seed=seed)``), with
stable-baselines3's ``predict`` protocol; learned agents also get ``action_masks``. Runs are
spread over processes; the results do not depend on ``--workers`` (rows are sorted by
policy, workload and seed). The output folder holds:

* ``runs.csv``: one row per run (``policy, workload, seed, num_jobs``, the metrics,
  ``wall_s``, then extra columns); ``jobs.csv``: one row per finished job per run;
* ``config.json``: everything needed to reproduce each run (seed, workload spec, cluster,
  env config, policy parameters, trace and model checksums, versions, a command line);
* ``summary.md`` / ``summary.json``: per policy and workload the mean and 95% Student-t CI
  of each metric, the ratio to ``fifo``, the paired difference to ``thesis`` (same seeds),
  best values in bold;
* ``plots/``: metric bars with CIs, JCT CDFs, GPU utilisation over time (first seed), and
  Gantt views (jobs by GPU over time, one lane per sharing slot) of one run.

Examples::

    gpushare-evaluate                                   # thesis preset, prints the table
    gpushare-evaluate --preset philly --workers 2       # agents' test seeds on medium
    gpushare-evaluate --policies fifo thesis agents/zoo/model.zip --seeds 0-4
    gpushare-evaluate --trace jobs.csv --cluster medium --policies fifo_pack thesis
    # a 100k-job trace: headless simulator, heuristics only, one seed, no per-job CSV
    gpushare-evaluate --headless --trace big.csv --cluster philly --seeds 0 \\
        --policies fifo_pack fgd --no-jobs-csv --out results/big

``--headless`` runs heuristics on the simulator without the env. The policies still see
the env's windows (``pending_window`` / ``running_window``), so a headless run makes the
same decisions and gives the same numbers as the env run (tested); it only skips building
observations, masks and rewards. Each worker holds its own copy of the trace.

Bad arguments (unknown policy, missing or malformed trace, negative seed, ...) print one
line on stderr and exit with code 2. A run that crashes (a bug in a policy) does not stop
the others: it is reported on stderr and in ``summary.md``, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import functools
import hashlib
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_env.evaluation.gantt import GpuInterval, PlacementRecorder
from gpushare_env.evaluation.plots import downsample_steps
from gpushare_env.evaluation.presets import EVALUATION_PRESETS, EvaluationPreset
from gpushare_env.evaluation.report import (
    HEADLINE_METRICS,
    RUN_COLUMNS,
    render_markdown,
    summarize_runs,
)
from gpushare_env.metrics import METRIC_DOCS

PROG = "gpushare-evaluate"
REPO_ROOT = Path(__file__).resolve().parent.parent
ZOO_DIR = REPO_ROOT / "agents" / "zoo"

#: Columns of ``runs.csv`` after the required ones (``RUN_COLUMNS``), in order.
EXTRA_COLUMNS: tuple[str, ...] = (
    "cluster",
    "mode",
    "decisions",
    "truncated",
    "rejected_jobs",
    "invalid_actions",
    *(m for m in METRIC_DOCS if m not in RUN_COLUMNS),
)

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

#: Env config keys a saved agent's own config may set for its runs: they shape what the
#: agent observes and can address (the suspend cap masks actions), not the workload or
#: the simulated dynamics.
AGENT_ENV_KEYS: tuple[str, ...] = (
    "pending_window",
    "running_window",
    "time_scale_s",
    "max_suspends_per_job",
)

#: Gantt views are drawn only for runs of at most this many jobs (unreadable beyond).
GANTT_MAX_JOBS = 2000

#: Default decision cap per job (``--max-decisions`` overrides): the heuristics need 4 to
#: 15 per job, so this never truncates a sensible policy, but a livelocked one (an
#: untrained agent suspending and resuming forever) still ends; its run is flagged.
DECISIONS_PER_JOB = 1000


class UsageError(Exception):
    """A bad command line: reported as one line on stderr with exit code 2."""


# --------------------------------------------------------------------------- run specs


@dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy to evaluate.

    Attributes:
        label: Name in the tables (a baseline name, or the model file's stem).
        name: Baseline name, or ``None`` for a saved agent.
        path: Saved agent ``.zip`` (absolute), or ``None`` for a baseline.
        env_overrides: Env config keys the agent was trained with (``AGENT_ENV_KEYS``).
        params: Constructor parameters (baselines) or algorithm facts (agents).
    """

    label: str
    name: str | None = None
    path: str | None = None
    env_overrides: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_agent(self) -> bool:
        """True for a saved learned agent."""
        return self.path is not None


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
    """

    label: str
    spec: str | Mapping[str, Any]
    num_jobs: int | None
    trace_sha256: str | None = None
    size: int | None = None


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


# --------------------------------------------------------------------------- running


def _make_env(env_config: Mapping[str, Any]) -> Any:
    """A fresh ``GPUShare-v0`` env (env checker off: the env has its own tests)."""
    import gymnasium as gym

    import gpushare_env  # noqa: F401  (registers GPUShare-v0)

    return gym.make("GPUShare-v0", config=dict(env_config), disable_env_checker=True)


def _simulator_of(env: Any) -> Any:
    """The simulator of the env's current episode (``GPUShareEnv.simulator``)."""
    return env.unwrapped.simulator


@functools.lru_cache(maxsize=8)
def _load_agent(path: str) -> Any:
    """Load a saved stable-baselines3 model (cached per process).

    The algorithm is read from the file: MaskablePPO unless its policy class says PPO or
    DQN. ``agents.load_model`` is used when the agents package provides one.
    """
    import torch

    torch.set_num_threads(1)  # one run per process: no oversubscription
    try:
        import agents

        loader = getattr(agents, "load_model", None)
    except ImportError:  # pragma: no cover - agents is part of the repo
        loader = None
    if loader is not None:
        return loader(path)
    algorithm = _agent_algorithm(path)
    if algorithm == "MaskablePPO":
        from sb3_contrib import MaskablePPO

        return MaskablePPO.load(path, device="cpu")
    if algorithm == "DQN":
        from stable_baselines3 import DQN

        return DQN.load(path, device="cpu")
    from stable_baselines3 import PPO

    return PPO.load(path, device="cpu")


def _agent_algorithm(path: str) -> str:
    """``MaskablePPO``, ``PPO`` or ``DQN`` from the policy class recorded in an SB3 zip."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            data = archive.read("data").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return "MaskablePPO"
    lowered = data.lower()
    if "maskable" in lowered:
        return "MaskablePPO"
    if "dqn" in lowered:
        return "DQN"
    return "PPO"


def _masked_predict(model: Any, obs: Any, masks: np.ndarray) -> Any:
    """``model.predict``, with the action mask for the algorithms that take one.

    PPO and DQN have no mask: their invalid actions are no-ops in the env, counted in the
    ``invalid_actions`` column.
    """
    if "maskable" in type(model).__name__.lower():
        action, _ = model.predict(obs, deterministic=True, action_masks=masks)
    else:
        action, _ = model.predict(obs, deterministic=True)
    return action


@dataclass(slots=True)
class _Episode:
    """What one finished episode left behind (internal to a worker)."""

    records: list[Any]
    timeline: Any
    metrics: dict[str, Any]
    decisions: int
    truncated: bool
    rejected: int
    cluster: Any
    recorder: PlacementRecorder | None
    invalid: int = 0


def _run_in_env(spec: RunSpec) -> _Episode:
    """Play one episode through the env with the spec's policy."""
    import baselines

    env = _make_env(spec.env_config)
    base = env.unwrapped
    obs, info = env.reset(seed=spec.seed)
    rejected = int(info.get("rejected_jobs", 0))  # jobs that can never fit, dropped
    if spec.policy.is_agent:
        model = _load_agent(str(spec.policy.path))
        policy = None
    else:
        model = None
        policy = baselines.make(str(spec.policy.name), env=env, **dict(spec.policy.params))
    recorder = PlacementRecorder() if spec.record_gantt else None
    if recorder is not None:
        _hook_events(_simulator_of(env), recorder)
        recorder.observe(base.view)
    decisions = invalid = 0
    terminated = truncated = False
    while not (terminated or truncated):
        if model is not None:
            action = _masked_predict(model, obs, base.action_masks())
        else:
            assert policy is not None
            action, _ = policy.predict(obs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        decisions += 1
        invalid += bool(info.get("invalid", False))
        if recorder is not None:
            recorder.observe(base.view)
    sim = _simulator_of(env)
    records = sim.records()
    timeline = sim.timeline()
    metrics = info.get("metrics")
    if not metrics:
        from gpushare_env.metrics import summarize

        metrics = summarize(records, timeline)
    env.close()
    return _Episode(
        records, timeline, dict(metrics), decisions, bool(truncated), rejected, sim.cluster,
        recorder, invalid,
    )  # fmt: skip


def _hook_events(sim: Any, recorder: PlacementRecorder) -> None:
    """Let ``recorder`` see the events of every ``advance`` (exact times of finishes).

    Only the Gantt run pays for this: it wraps the bound method of one simulator object.
    """
    advance = sim.advance

    def advance_and_record(*args: Any, **kwargs: Any) -> Any:
        events = advance(*args, **kwargs)
        recorder.on_events(events)
        return events

    # a slotted simulator refuses the attribute: snapshots alone then
    with contextlib.suppress(AttributeError):
        sim.advance = advance_and_record


def _headless_setup(spec: RunSpec) -> tuple[list[Any], Any, Any, np.random.Generator, int]:
    """Jobs, cluster, simulator config and noise generator of a headless run.

    Draws exactly what ``GPUShare-v0``'s ``reset(seed=seed)`` draws (tested): the
    generator of ``seed`` spawns a workload and a noise child; a trace is read with a
    fixed generator of seed 0; jobs that cannot fit are dropped and counted.
    """
    from gpushare_env.envs.config import EnvConfig
    from gpushare_env.sim import SimConfig, make_cluster
    from gpushare_env.workloads import WorkloadConfig, fit_to_cluster

    config = EnvConfig.from_any(dict(spec.env_config))
    cluster = make_cluster(config.cluster)
    workload = WorkloadConfig.from_any(config.workload)
    workload_rng, noise_rng = np.random.default_rng(spec.seed).spawn(2)
    if workload.kind == "trace":
        workload_rng = np.random.default_rng(0)
    jobs = workload.generate(workload_rng, num_jobs=config.num_jobs, cluster_gpus=cluster.num_gpus)
    fit = fit_to_cluster(
        jobs,
        cluster.num_gpus,
        float(cluster.gpu_memory_gib.max()),
        on_unfit=config.on_unfit,  # type: ignore[arg-type]
    )
    sim_config = SimConfig(
        sample_iterations=config.sample_iterations,
        sample_noise=config.sample_noise,
        duration_info=config.duration_info,
    )
    return list(fit.jobs), cluster, sim_config, noise_rng, int(fit.num_rejected)


def _run_headless(spec: RunSpec) -> _Episode:
    """Run one heuristic on the simulator directly, without the env: for huge traces.

    The policy sees the env's windows (the first ``pending_window`` waiting and
    ``running_window`` running jobs), so a headless run makes the same decisions as the
    same heuristic in the env and gives the same metrics (tested); it only skips the
    observation, mask and reward work. (Unbounded windows would also make each decision
    scan the whole queue, quadratic once a backlog forms.)
    """
    import baselines
    from gpushare_env.envs.config import EnvConfig
    from gpushare_env.metrics import summarize
    from gpushare_env.sim import Advance, Simulator, SimView, apply_decision

    config = EnvConfig.from_any(dict(spec.env_config))
    jobs, cluster, sim_config, rng, rejected = _headless_setup(spec)
    policy = baselines.make(str(spec.policy.name), **dict(spec.policy.params))
    sim = Simulator(jobs, cluster, sim_config, rng=rng)
    view = SimView(sim)
    policy.reset(view, config.pending_window, config.running_window)
    recorder = PlacementRecorder() if spec.record_gantt else None
    cap = config.decision_cap(len(jobs))
    decisions = in_a_row = 0
    while not sim.done and decisions < cap:
        decision = policy.decide(view)
        events = apply_decision(sim, decision)
        decisions += 1
        if isinstance(decision, Advance):
            in_a_row = 0
            if recorder is not None:
                recorder.on_events(events)
        else:
            in_a_row += 1
            if in_a_row > _LIVELOCK_DECISIONS:
                raise RuntimeError(
                    f"policy {policy.name!r} made {in_a_row} decisions at "
                    f"t={sim.now_s:.3f}s without letting time run (livelock)"
                )
        if recorder is not None:
            recorder.observe(view)
    records, timeline = sim.records(), sim.timeline()
    return _Episode(
        records, timeline, summarize(records, timeline), decisions, not sim.done, rejected,
        cluster, recorder,
    )  # fmt: skip


#: Decisions at one instant after which a headless run is stopped as a livelock.
_LIVELOCK_DECISIONS = 100_000


def execute_run(spec: RunSpec) -> RunOutput:
    """Run one (policy, workload, seed) and collect its row, JCTs, series and Gantt data.

    This is what the worker processes call; it depends only on ``spec``.
    """
    start = time.perf_counter()
    episode = _run_headless(spec) if spec.headless else _run_in_env(spec)
    wall_s = time.perf_counter() - start
    records, metrics = episode.records, episode.metrics
    row: dict[str, Any] = {
        "policy": spec.policy.label,
        "workload": spec.workload.label,
        "seed": spec.seed,
        "num_jobs": len(records),
    }
    for metric in HEADLINE_METRICS:
        row[metric] = float(metrics.get(metric, math.nan))
    row["wall_s"] = wall_s
    cluster_spec = spec.env_config.get("cluster", "thesis")
    row["cluster"] = cluster_spec if isinstance(cluster_spec, str) else "custom"
    row["mode"] = "headless" if spec.headless else "env"
    row["decisions"] = episode.decisions
    row["truncated"] = int(episode.truncated)
    row["rejected_jobs"] = episode.rejected
    row["invalid_actions"] = episode.invalid
    for metric in EXTRA_COLUMNS[6:]:
        row[metric] = float(metrics.get(metric, math.nan))
    jct_s = np.array([r.finish_s - r.arrival_s for r in records], dtype=float)
    jobs = [_job_row(spec, r) for r in records] if spec.keep_jobs else []
    series = None
    if spec.record_series:
        from gpushare_env.metrics import utilisation_series

        t_util, util = utilisation_series(episode.timeline)
        t_alloc, alloc = utilisation_series(episode.timeline, allocated=True)
        t_util, util = downsample_steps(t_util, util)
        _, alloc = downsample_steps(t_alloc, alloc)
        series = (t_util, util, alloc)
    gantt = None
    if episode.recorder is not None:
        gantt = episode.recorder.finish(max((r.finish_s for r in records), default=0.0))
    cluster = episode.cluster
    layout = (
        int(cluster.num_gpus),
        int(cluster.max_jobs_per_gpu),
        [int(n) for n in cluster.gpu_node],
    )
    return RunOutput(spec.index, row, jct_s, jobs, series, gantt, layout)


def execute_run_safely(spec: RunSpec) -> RunOutput:
    """:func:`execute_run`, turning an exception into a failed output.

    One policy crashing (a bug in it, an agent that does not fit) must not lose the other
    runs: the failure is reported with its run and message, and the command exits 1.
    """
    try:
        return execute_run(spec)
    except Exception as error:  # reported per run, with its type and message
        row = {"policy": spec.policy.label, "workload": spec.workload.label, "seed": spec.seed}
        return RunOutput(
            spec.index, row, np.zeros(0), [], None, None, (0, 0, []),
            error=f"{type(error).__name__}: {_one_line(error)}",
        )  # fmt: skip


def _job_row(spec: RunSpec, record: Any) -> tuple[Any, ...]:
    """One ``jobs.csv`` row."""
    jct = record.finish_s - record.arrival_s
    return (
        spec.policy.label,
        spec.workload.label,
        spec.seed,
        record.job_id,
        record.model,
        record.num_gpus,
        record.arrival_s,
        record.first_start_s,
        record.finish_s,
        jct,
        record.first_start_s - record.arrival_s,
        record.solo_duration_s,
        jct / record.solo_duration_s,
        record.gpu_seconds,
        record.overhead_gpu_seconds,
        record.suspends,
        record.resumes,
        record.migrations,
        record.queued_s,
    )


def run_all(
    specs: Sequence[RunSpec],
    workers: int,
    progress: bool = True,
    on_done: Callable[[RunOutput], None] | None = None,
) -> list[RunOutput]:
    """Execute every run, over ``workers`` processes, and return outputs in spec order.

    Args:
        specs: The runs.
        workers: Processes; 1 runs everything in this process.
        progress: Show a progress bar (tqdm when installed) on stderr.
        on_done: Called with each output as it completes.

    Returns:
        One output per spec, sorted by ``RunSpec.index``.
    """
    bar = _progress_bar(len(specs), progress)
    outputs: list[RunOutput] = []
    try:
        if workers <= 1 or len(specs) <= 1:
            for spec in specs:
                outputs.append(execute_run_safely(spec))
                bar.update(1)
                if on_done:
                    on_done(outputs[-1])
        else:
            import multiprocessing

            context = multiprocessing.get_context("forkserver")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                futures = [pool.submit(execute_run_safely, spec) for spec in specs]
                for future in as_completed(futures):
                    outputs.append(future.result())
                    bar.update(1)
                    if on_done:
                        on_done(outputs[-1])
    finally:
        bar.close()
    return sorted(outputs, key=lambda o: o.index)


class _PlainProgress:
    """A minimal progress line for when tqdm is missing (or progress is off)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled
        self.start = time.perf_counter()

    def update(self, count: int) -> None:
        self.done += count
        if self.enabled:
            elapsed = time.perf_counter() - self.start
            left = elapsed / self.done * (self.total - self.done)
            print(
                f"\r{PROG}: {self.done}/{self.total} runs, {elapsed:.0f} s, ~{left:.0f} s left",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.enabled and self.done:
            print(file=sys.stderr)


def _progress_bar(total: int, enabled: bool) -> Any:
    """tqdm on stderr (runs done, elapsed, time left), or a plain fallback."""
    if not enabled:
        return _PlainProgress(total, False)
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainProgress(total, True)
    return tqdm(total=total, unit="run", desc=PROG, file=sys.stderr, dynamic_ncols=True)


# --------------------------------------------------------------------------- arguments


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage dump) and exit code 2."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command-line arguments."""
    parser = _Parser(
        prog=PROG,
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Presets: "
        + "; ".join(f"{p.name}: {p.description}" for p in EVALUATION_PRESETS.values()),
    )
    parser.add_argument(
        "--preset",
        choices=sorted(EVALUATION_PRESETS),
        default=None,
        help="named set-up giving the default workloads, cluster, seeds, jobs (default thesis)",
    )
    parser.add_argument(
        "--policies",
        nargs="+",
        metavar="POLICY",
        help="baseline names (see baselines.available(); 'all' for every one), saved "
        "agents (path/to/model.zip) and 'zoo' (the agents shipped in agents/zoo); default: "
        "all baselines + the shipped agents that fit the set-up",
    )
    parser.add_argument(
        "--workload",
        action="append",
        metavar="SPEC",
        help="workload preset name (thesis, thesis_poisson, philly, philly_bursty, ...) or "
        "a JSON dict of WorkloadConfig fields; repeatable",
    )
    parser.add_argument(
        "--trace",
        action="append",
        metavar="PATH",
        help="a CSV or Philly JSON trace: every policy runs that exact job list; repeatable",
    )
    parser.add_argument("--cluster", help="cluster preset name or a JSON dict")
    parser.add_argument(
        "--seeds",
        nargs="+",
        metavar="SEED",
        help="episode seeds: integers, ranges like 0-9, or comma lists",
    )
    parser.add_argument(
        "--num-jobs", type=str, metavar="N", help="jobs per episode (a trace: the first N)"
    )
    parser.add_argument(
        "--workers",
        type=str,
        metavar="N",
        help=f"parallel processes (default: all cores, {os.cpu_count()} here)",
    )
    parser.add_argument(
        "--max-decisions",
        metavar="N",
        help=f"truncate an episode after N decisions (default {DECISIONS_PER_JOB} per job "
        "+ 10,000); truncated runs are flagged",
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default results/<preset>)")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="run heuristics on the simulator without the env (fastest; huge traces)",
    )
    parser.add_argument(
        "--reference", default="thesis", help="policy of the paired differences (thesis)"
    )
    parser.add_argument("--baseline", default="fifo", help="policy of the ratios (fifo)")
    parser.add_argument(
        "--gantt",
        nargs="+",
        metavar="POLICY",
        help="policies drawn as Gantt views on the first seed of each workload "
        "(default: the reference and the baseline; 'none' for no Gantt view)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-jobs-csv", action="store_true", help="skip jobs.csv")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    return parser


def parse_seeds(tokens: Sequence[str]) -> list[int]:
    """Seeds from tokens like ``3``, ``0-9`` or ``0,1,2`` (sorted, without repeats).

    Raises:
        UsageError: A token that is not a seed or a range, or a negative seed.
    """
    seeds: list[int] = []
    for token in tokens:
        for part in (p.strip() for p in token.split(",")):
            if not part:
                continue
            match = re.fullmatch(r"(\d+)-(\d+)", part)
            if match:
                low, high = int(match.group(1)), int(match.group(2))
                if high < low:
                    raise UsageError(f"--seeds: empty range {part!r}")
                seeds.extend(range(low, high + 1))
                continue
            try:
                seed = int(part)
            except ValueError:
                raise UsageError(
                    f"--seeds: {part!r} is not an integer or a range like 0-9"
                ) from None
            if seed < 0:
                raise UsageError(f"--seeds: seeds must be >= 0, got {seed}")
            seeds.append(seed)
    if not seeds:
        raise UsageError("--seeds: no seed given")
    return sorted(set(seeds))


def _positive_int(text: str | None, option: str) -> int | None:
    """``None`` or an int >= 1 from an option's text."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{option}: expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise UsageError(f"{option}: expected an integer >= 1, got {value}")
    return value


def _sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _one_line(error: BaseException) -> str:
    """An exception's message on one line."""
    return " ".join(str(error).split()) or type(error).__name__


def _json_arg(text: str, option: str) -> Any:
    """A JSON value from an option, or the text itself when it is not JSON-looking."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{option}: invalid JSON: {error.msg}") from None


def _check_cluster(cluster: Any) -> Any:
    """Validate a cluster spec (preset name or dict); returns the built cluster."""
    from gpushare_env.sim import make_cluster

    try:
        return make_cluster(cluster)
    except (TypeError, ValueError) as error:
        raise UsageError(f"--cluster: {_one_line(error)}") from None


def _resolve_workloads(
    args: argparse.Namespace, preset: EvaluationPreset, num_jobs: int | None, cluster: Any
) -> list[WorkloadSpec]:
    """The workloads to run: ``--workload`` / ``--trace``, else the preset's."""
    from gpushare_env.workloads import TraceError, WorkloadConfig, make_workload

    specs: list[WorkloadSpec] = []
    labels: set[str] = set()

    def unique(label: str) -> str:
        candidate, k = label, 2
        while candidate in labels:
            candidate, k = f"{label}_{k}", k + 1
        labels.add(candidate)
        return candidate

    for text in args.workload or []:
        value = _json_arg(text, "--workload")
        if isinstance(value, str) and Path(value).suffix.lower() in (".csv", ".json"):
            args.trace = [*(args.trace or []), value]
            continue
        try:
            config = WorkloadConfig.from_any(value)
        except (TypeError, ValueError) as error:
            raise UsageError(f"--workload: {_one_line(error)}") from None
        if isinstance(value, str):
            label = value
        else:
            base = value.get("preset", config.kind)
            digest = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
            label = f"{base}_{digest[:6]}"
        specs.append(WorkloadSpec(unique(label), value, num_jobs or preset.num_jobs))
    for text in args.trace or []:
        path = Path(text).expanduser()
        if not path.is_file():
            raise UsageError(f"--trace: no such file: {text}")
        if path.suffix.lower() not in (".csv", ".json"):
            raise UsageError(f"--trace: {text}: expected a .csv or .json trace")
        try:
            jobs = make_workload(str(path.resolve()), 0, num_jobs=num_jobs,
                                 cluster_gpus=cluster.num_gpus)  # fmt: skip
        except (TraceError, ValueError, OSError) as error:
            raise UsageError(f"--trace: {_one_line(error)}") from None
        if not jobs:
            raise UsageError(f"--trace: {text}: no usable jobs")
        label = unique(path.name)
        specs.append(WorkloadSpec(label, str(path.resolve()), num_jobs, _sha256(path), len(jobs)))
    if not specs:
        specs = [WorkloadSpec(w, w, num_jobs or preset.num_jobs) for w in preset.workloads]
    return specs


def _agent_env_overrides(path: Path) -> dict[str, Any]:
    """Observation-shaping env keys recorded beside a saved agent (``AGENT_ENV_KEYS``).

    Looks for ``<stem>.json`` then ``config.json`` in the model's folder; reads an
    ``env_config`` / ``env`` / ``config`` mapping (or the top level).
    """
    for candidate in (path.with_suffix(".json"), path.parent / "config.json"):
        if not candidate.is_file():
            continue
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if not isinstance(data, dict):
            continue
        for key in ("env_config", "env", "config"):
            if isinstance(data.get(key), dict):
                data = data[key]
                break
        return {k: data[k] for k in AGENT_ENV_KEYS if k in data}
    return {}


def _zoo_models() -> list[Path]:
    """Saved agents shipped in ``agents/zoo``."""
    if not ZOO_DIR.is_dir():
        return []
    return sorted(ZOO_DIR.glob("*.zip"))


def _rl_available() -> bool:
    """True if torch and sb3-contrib import."""
    try:
        import sb3_contrib  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _resolve_policies(
    tokens: Sequence[str] | None, headless: bool, include_zoo: bool, notes: list[str]
) -> list[PolicySpec]:
    """Baselines and saved agents from ``--policies`` (or the default set)."""
    import baselines

    names = baselines.available()
    specs: list[PolicySpec] = []
    explicit = tokens is not None
    requested = [p.strip() for t in (tokens or ["all"]) for p in t.split(",") if p.strip()]
    if not requested:
        raise UsageError("--policies: no policy given")
    paths: list[Path] = []
    for token in requested:
        if token == "all":
            specs.extend(PolicySpec(label=n, name=n) for n in names if n not in
                         {s.label for s in specs})  # fmt: skip
        elif token in names:
            if token not in {s.label for s in specs}:
                specs.append(PolicySpec(label=token, name=token))
        elif token == "zoo":
            if not _zoo_models():
                raise UsageError(f"--policies: no shipped agent in {ZOO_DIR}")
            paths.extend(p for p in _zoo_models() if p not in paths)
        elif token.endswith(".zip"):
            path = Path(token).expanduser()
            if not path.is_file():
                raise UsageError(f"--policies: no such model file: {token}")
            paths.append(path)
        else:
            raise UsageError(
                f"--policies: unknown policy {token!r}; available: {', '.join(names)}, "
                "or a saved agent path/to/model.zip"
            )
    if not explicit and include_zoo:
        zoo = _zoo_models()
        if zoo and headless:
            notes.append("shipped agents skipped: --headless runs heuristics only")
        elif zoo and not _rl_available():
            notes.append(
                "shipped agents skipped: torch / sb3-contrib not installed "
                "(pip install 'gpushare[rl]')"
            )
        elif zoo:
            paths.extend(zoo)
    if paths and headless:
        raise UsageError("--headless runs heuristics only; drop the .zip policies")
    if paths and not _rl_available():
        raise UsageError("saved agents need torch and sb3-contrib: pip install 'gpushare[rl]'")
    labels = {s.label for s in specs}
    for path in paths:
        label = path.stem if path.stem not in labels else f"{path.parent.name}/{path.stem}"
        labels.add(label)
        specs.append(
            PolicySpec(
                label=label,
                path=str(path.resolve()),
                env_overrides=_agent_env_overrides(path),
                params={"algorithm": _agent_algorithm(str(path)), "sha256": _sha256(path)},
            )
        )
    return specs


def _shapes(space: Any) -> str:
    """``{key: shape}`` of a Dict space (or its shape), for messages."""
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, Mapping):
        return "{" + ", ".join(f"{k}: {tuple(v.shape)}" for k, v in spaces.items()) + "}"
    return str(getattr(space, "shape", space))


def _check_agents(
    policies: list[PolicySpec],
    env_config: Mapping[str, Any],
    explicit: bool,
    notes: list[str],
) -> list[PolicySpec]:
    """Keep the agents whose observation and action spaces match the env they will meet.

    An explicitly named agent that does not fit is a usage error; a shipped one that
    does not fit is skipped with a note.
    """
    kept: list[PolicySpec] = []
    for policy in policies:
        if not policy.is_agent:
            kept.append(policy)
            continue
        try:
            model = _load_agent(str(policy.path))
            env = _make_env({**env_config, **policy.env_overrides})
            problem = None
            if model.observation_space != env.observation_space:
                problem = (
                    "its observation space differs from this env's (model "
                    f"{_shapes(model.observation_space)}, env {_shapes(env.observation_space)}"
                    "): it was trained for another cluster or other windows"
                )
            elif model.action_space != env.action_space:
                problem = "its action space differs from this env's"
            env.close()
        except Exception as error:  # any load failure is reported the same way
            problem = f"cannot load it: {_one_line(error)}"
        if problem is None:
            kept.append(policy)
        elif explicit:
            raise UsageError(f"--policies: {policy.path}: {problem}")
        else:
            notes.append(f"shipped agent {Path(str(policy.path)).name} skipped: {problem}")
    return kept


@dataclass(slots=True)
class Plan:
    """Everything the command will run and write (built from the arguments).

    Attributes:
        preset: The preset providing the defaults.
        policies: Policies in report order.
        workloads: Workloads in report order.
        seeds: Seeds.
        cluster: Cluster spec (preset name or dict).
        env_base: Env config shared by all runs (before agent overrides).
        runs: The runs, in the deterministic order.
        out: Output folder.
        workers: Processes.
        notes: Remarks for the report (skipped agents, ...).
        reference: Policy of the paired differences.
        baseline: Policy of the ratios.
        title: The preset's name, or the custom workloads' labels.
    """

    preset: EvaluationPreset
    policies: list[PolicySpec]
    workloads: list[WorkloadSpec]
    seeds: list[int]
    cluster: Any
    env_base: dict[str, Any]
    runs: list[RunSpec]
    out: Path
    workers: int
    notes: list[str]
    reference: str = "thesis"
    baseline: str = "fifo"
    title: str = "thesis"


def make_plan(args: argparse.Namespace) -> Plan:
    """Validate the arguments and lay out the runs.

    Raises:
        UsageError: Any bad argument, with a one-line message.
    """
    preset = EVALUATION_PRESETS[args.preset or "thesis"]
    notes: list[str] = []
    seeds = parse_seeds(args.seeds) if args.seeds is not None else list(preset.seeds)
    num_jobs = _positive_int(args.num_jobs, "--num-jobs")
    max_decisions = _positive_int(args.max_decisions, "--max-decisions")
    workers = _positive_int(args.workers, "--workers") or (os.cpu_count() or 1)
    cluster_spec = _json_arg(args.cluster, "--cluster") if args.cluster else preset.cluster
    cluster = _check_cluster(cluster_spec)
    policies = _resolve_policies(args.policies, args.headless, preset.include_zoo, notes)
    workloads = _resolve_workloads(args, preset, num_jobs, cluster)
    labels = [p.label for p in policies]
    gantt_tokens = args.gantt if args.gantt is not None else [args.reference, args.baseline]
    if [t.lower() for t in gantt_tokens] == ["none"]:
        gantt_policies: set[str] = set()
    elif args.gantt is not None:
        unknown = [t for t in gantt_tokens if t not in labels and t != "all"]
        if unknown:
            raise UsageError(f"--gantt: {unknown[0]!r} is not among the evaluated policies")
        gantt_policies = set(labels) if "all" in gantt_tokens else set(gantt_tokens)
    else:
        gantt_policies = {t for t in gantt_tokens if t in labels} or {labels[0]}
    env_base: dict[str, Any] = {"cluster": cluster_spec}
    runs: list[RunSpec] = []
    env_configs: dict[str, dict[str, Any]] = {}
    for workload in workloads:
        config = {**env_base, "workload": workload.spec, "num_jobs": workload.num_jobs}
        cap_jobs = workload.size or workload.num_jobs or 100_000
        config["max_decisions"] = max_decisions or DECISIONS_PER_JOB * cap_jobs + 10_000
        env_configs[workload.label] = config
    if any(p.is_agent for p in policies):
        policies = _check_agents(
            policies, env_configs[workloads[0].label], args.policies is not None, notes
        )
    for policy in policies:
        for workload in workloads:
            too_big = (workload.size or workload.num_jobs or 0) > GANTT_MAX_JOBS
            for k, seed in enumerate(seeds):
                config = {**env_configs[workload.label], **policy.env_overrides}
                params = dict(policy.params) if policy.is_agent else {"seed": seed}
                policy_for_run = (
                    policy if policy.is_agent else dataclasses.replace(policy, params=params)
                )
                runs.append(
                    RunSpec(
                        index=len(runs),
                        policy=policy_for_run,
                        workload=workload,
                        seed=seed,
                        env_config=config,
                        headless=args.headless,
                        record_series=k == 0,
                        record_gantt=k == 0 and policy.label in gantt_policies and not too_big,
                        keep_jobs=not args.no_jobs_csv,
                    )
                )
    custom = bool(args.workload or args.trace)
    title = "+".join(w.label for w in workloads) if custom else preset.name
    out = Path(args.out) if args.out else Path("results") / _safe(title)
    return Plan(
        preset=preset,
        policies=policies,
        workloads=workloads,
        seeds=seeds,
        cluster=cluster_spec,
        env_base=env_base,
        runs=runs,
        out=out,
        workers=max(1, min(workers, len(runs))),
        notes=notes,
        reference=args.reference,
        baseline=args.baseline,
        title=title,
    )


# --------------------------------------------------------------------------- outputs


def _csv_value(value: Any) -> str:
    """Exact, locale-free text: ``repr`` of floats (shortest round-trip), ints as is."""
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value)


def write_runs_csv(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """``runs.csv``: the required columns in order, then ``EXTRA_COLUMNS``."""
    columns = [*RUN_COLUMNS, *EXTRA_COLUMNS]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_value(row.get(c, "")) for c in columns])


def write_jobs_csv(outputs: Sequence[RunOutput], path: Path) -> None:
    """``jobs.csv``: one row per finished job per run (sorted by run, then job id)."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(JOB_COLUMNS)
        for output in outputs:
            for job in sorted(output.jobs, key=lambda j: j[3]):
                writer.writerow([_csv_value(v) for v in job])


def _versions() -> dict[str, str]:
    """Versions of Python and the packages a run depends on."""
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for package in ("gpushare", "numpy", "gymnasium", "torch", "stable-baselines3",
                    "sb3-contrib", "matplotlib"):  # fmt: skip
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _git_commit() -> str | None:
    """The repository's commit (with ``-dirty`` if it has changes), when git is there."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def _reproduce_command(run: RunSpec) -> str:
    """A ``gpushare-evaluate`` command line that repeats this one run."""
    policy = run.policy.path or run.policy.name
    parts = [PROG, "--policies", str(policy), "--seeds", str(run.seed)]
    workload = run.workload.spec
    if isinstance(workload, str) and run.workload.trace_sha256 is not None:
        parts += ["--trace", workload]
    else:
        parts += ["--workload", workload if isinstance(workload, str) else json.dumps(workload)]
    cluster = run.env_config.get("cluster")
    parts += ["--cluster", cluster if isinstance(cluster, str) else json.dumps(cluster)]
    if run.workload.num_jobs is not None:
        parts += ["--num-jobs", str(run.workload.num_jobs)]
    if run.headless:
        parts.append("--headless")
    return shlex.join(parts)


def _resolved_workload(spec: str | Mapping[str, Any]) -> dict[str, Any]:
    """Every field of the workload config the spec stands for."""
    from gpushare_env.workloads import WorkloadConfig

    config = WorkloadConfig.from_any(spec)
    return {
        k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(config).items()
    }


def _resolved_cluster(spec: Any) -> dict[str, Any]:
    """The cluster config the spec stands for, as a dict."""
    from gpushare_env.sim import ClusterConfig

    config = ClusterConfig.from_any(spec)
    return {
        "name": config.name,
        "max_jobs_per_gpu": config.max_jobs_per_gpu,
        "groups": [dataclasses.asdict(g) for g in config.groups],
    }


def build_config(plan: Plan, argv: Sequence[str]) -> dict[str, Any]:
    """The content of ``config.json``."""
    return {
        "command": shlex.join([PROG, *argv]),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
        "versions": _versions(),
        "preset": plan.preset.name,
        "cluster": _resolved_cluster(plan.cluster),
        "seeds": plan.seeds,
        "workers": plan.workers,
        "notes": plan.notes,
        "runs_key": "runs.csv rows match runs[] entries by (policy, workload, seed)",
        "runs": [
            {
                "policy": run.policy.label,
                "workload": run.workload.label,
                "seed": run.seed,
                "mode": "headless" if run.headless else "env",
                "policy_spec": {
                    "name": run.policy.name,
                    "path": run.policy.path,
                    "params": dict(run.policy.params),
                    "env_overrides": dict(run.policy.env_overrides),
                },
                "workload_spec": run.workload.spec,
                "workload_resolved": _resolved_workload(run.workload.spec),
                "trace_sha256": run.workload.trace_sha256,
                "num_jobs": run.workload.num_jobs,
                "env_config": dict(run.env_config),
                "reset": {"seed": run.seed},
                "reproduce": _reproduce_command(run),
            }
            for run in plan.runs
        ],
    }


def _safe(name: str) -> str:
    """A file-name-safe version of a label."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "x"


def write_plots(
    plan: Plan, outputs: Sequence[RunOutput], summary: Mapping[str, Any], folder: Path
) -> list[Path]:
    """Every PNG: metric bars, JCT CDF, utilisation over time, Gantt views."""
    from gpushare_env.evaluation import plots

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for workload in plan.workloads:
        name = workload.label
        if name not in summary["workloads"]:
            continue
        mine = [o for o in outputs if o.row["workload"] == name]
        written.append(plots.plot_metric_bars(summary, name, folder / f"metrics_{_safe(name)}.png"))
        jcts: dict[str, list[np.ndarray]] = {}
        for output in mine:
            jcts.setdefault(output.row["policy"], []).append(output.jct_s)
        written.append(
            plots.plot_jct_cdf(
                {p: np.concatenate(v) for p, v in jcts.items()},
                folder / f"jct_cdf_{_safe(name)}.png",
                f"{name}: JCT CDF, all jobs of seeds {plan.seeds}",
            )
        )
        series = {o.row["policy"]: o.series for o in mine if o.series is not None}
        if series:
            seed = next(o.row["seed"] for o in mine if o.series is not None)
            written.append(
                plots.plot_utilisation(
                    series,
                    folder / f"utilisation_{_safe(name)}.png",
                    f"{name}, seed {seed}: GPU utilisation over time",
                )
            )
        for output in mine:
            if output.gantt is None:
                continue
            num_gpus, lanes, gpu_node = output.layout
            policy = output.row["policy"]
            written.append(
                plots.plot_gantt(
                    output.gantt,
                    num_gpus,
                    lanes,
                    folder / f"gantt_{_safe(name)}_{_safe(policy)}.png",
                    f"{policy} on {name}, seed {output.row['seed']}",
                    gpu_node=gpu_node,
                )
            )
    return written


def _preamble(plan: Plan, argv: Sequence[str], outputs: Sequence[RunOutput]) -> list[str]:
    """The lines under the summary's title."""
    wall = sum(o.row["wall_s"] for o in outputs)
    cluster = plan.cluster if isinstance(plan.cluster, str) else json.dumps(plan.cluster)
    headless = bool(plan.runs) and plan.runs[0].headless
    mode = "headless simulator" if headless else "GPUShare-v0 env"
    lines = [
        f"- command: `{shlex.join([PROG, *argv])}`",
        f"- preset: `{plan.preset.name}`; cluster: `{cluster}`; seeds: {plan.seeds}; mode: {mode}",
        f"- {len(outputs)} runs, {wall:.1f} s of run time over {plan.workers} worker(s)",
    ]
    truncated = [o.row for o in outputs if o.row.get("truncated")]
    if truncated:
        lines.append(
            f"- **{len(truncated)} run(s) truncated** at the decision cap; their metrics "
            "cover finished jobs only: "
            + ", ".join(f"{r['policy']}/{r['workload']}/{r['seed']}" for r in truncated)
        )
    rejected = {o.row["workload"]: o.row.get("rejected_jobs", 0) for o in outputs}
    for workload, count in rejected.items():
        if count:
            lines.append(f"- `{workload}`: {count} job(s) could never fit the cluster (dropped)")
    lines += [f"- note: {n}" for n in plan.notes]
    return lines


def write_outputs(
    plan: Plan, outputs: Sequence[RunOutput], argv: Sequence[str], plots: bool, jobs_csv: bool
) -> tuple[dict[str, Any], str]:
    """Write every file into ``plan.out``; returns the summary dict and its markdown.

    Failed runs are left out of ``runs.csv``, the statistics and the plots, and listed in
    ``config.json`` (``failed_runs``) and ``summary.md``.
    """
    plan.out.mkdir(parents=True, exist_ok=True)
    failed = [o for o in outputs if o.error is not None]
    outputs = [o for o in outputs if o.error is None]
    rows = [o.row for o in outputs]
    write_runs_csv(rows, plan.out / "runs.csv")
    if jobs_csv:
        write_jobs_csv(outputs, plan.out / "jobs.csv")
    config = build_config(plan, argv)
    config["failed_runs"] = [{**o.row, "error": o.error} for o in failed]
    with open(plan.out / "config.json", "w", encoding="utf-8") as handle:
        json.dump(config, handle, indent=2, default=str)
        handle.write("\n")
    summary = summarize_runs(
        rows,
        HEADLINE_METRICS,
        baseline=plan.baseline,
        reference=plan.reference,
        policies=[p.label for p in plan.policies],
        workloads=[w.label for w in plan.workloads],
    )
    summary["notes"] = plan.notes
    with open(plan.out / "summary.json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, allow_nan=False)
        handle.write("\n")
    preamble = _preamble(plan, argv, outputs)
    preamble += [
        f"- **failed run** {o.row['policy']}/{o.row['workload']}/seed {o.row['seed']}: `{o.error}`"
        for o in failed
    ]
    markdown = render_markdown(summary, title=f"Evaluation: {plan.title}", preamble=preamble)
    if plots:
        try:
            written = write_plots(plan, outputs, summary, plan.out / "plots")
        except ImportError:
            plan.notes.append("plots skipped: matplotlib is not installed (gpushare[plot])")
            written = []
        if written:
            markdown += (
                "\n## Plots\n\n" + "\n".join(f"![{p.stem}](plots/{p.name})" for p in written) + "\n"
            )
    (plan.out / "summary.md").write_text(markdown, encoding="utf-8")
    return summary, markdown


# --------------------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gpushare-evaluate``; returns the exit code (2 for bad arguments)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(arguments)
        plan = make_plan(args)
    except UsageError as error:
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(
            f"{PROG}: {len(plan.runs)} runs ({len(plan.policies)} policies x "
            f"{len(plan.workloads)} workloads x {len(plan.seeds)} seeds) on "
            f"{plan.workers} worker(s) -> {plan.out}",
            file=sys.stderr,
        )
        for note in plan.notes:
            print(f"{PROG}: note: {note}", file=sys.stderr)
    start = time.perf_counter()
    outputs = run_all(plan.runs, plan.workers, progress=not args.quiet)
    summary, _ = write_outputs(plan, outputs, arguments, not args.no_plots, not args.no_jobs_csv)
    if not args.quiet and summary["workloads"]:
        table = render_markdown(summary, title=f"{plan.title}: mean ± 95% CI", main_table_only=True)
        print(table)
        print(
            f"{PROG}: {len(outputs)} runs in {time.perf_counter() - start:.1f} s; "
            f"results in {plan.out}/ (summary.md, runs.csv, plots/)",
            file=sys.stderr,
        )
    failed = [o for o in outputs if o.error is not None]
    by_error: dict[str, list[RunOutput]] = {}
    for output in failed:
        by_error.setdefault(str(output.error), []).append(output)
    for message, runs in by_error.items():
        names = [f"{o.row['policy']}/{o.row['workload']}/seed {o.row['seed']}" for o in runs]
        shown = ", ".join(names[:4]) + (f", ... ({len(names) - 4} more)" if len(names) > 4 else "")
        print(f"{PROG}: {len(runs)} run(s) failed ({shown}): {message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
