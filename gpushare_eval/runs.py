"""Carrying out runs: one (policy, workload, seed) through the env or headless, in parallel.

:func:`execute_run` turns a :class:`~gpushare_eval.specs.RunSpec` into a
:class:`~gpushare_eval.specs.RunOutput` (its ``runs.csv`` row, job records,
utilisation series and Gantt holds); :func:`run_all` spreads runs over processes. Every
row says how its run ended (:func:`status_of`): complete, truncated by the decision or
the time cap, or unfinished. A Ctrl-C stops the workers at once, without a traceback
from each (:class:`KeyboardInterrupt` reaches the caller); a worker that dies ends the
pool (:class:`WorkerDied`).

The progress bar counts the runs done and, beside it, the jobs finished so far of the
runs in progress (``2 running: 1,234/4,000 jobs``): each run reports them every
:data:`PROGRESS_INTERVAL_S` at most (:class:`JobProgress`, after its decisions), through
a queue from a pool's workers. Ray tasks report nothing (the bar counts their runs).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpushare_env.envs import make_env
from gpushare_env.envs.config import EnvConfig, RunArgs
from gpushare_env.rollout import Step, rollout
from gpushare_env.runner import RunResult, TruncatedBy
from gpushare_env.sim.cluster import Cluster
from gpushare_env.sim.types import JobSpec
from gpushare_env.workloads.trace_cut import TraceCutWarning
from gpushare_eval.gantt import PlacementRecorder
from gpushare_eval.plots import downsample_steps
from gpushare_eval.report import HEADLINE_METRICS, RunStatus
from gpushare_eval.specs import OTHER_METRICS, PROG, PolicySpec, RunOutput, RunSpec, one_line

__all__ = [
    "PROGRESS_INTERVAL_S",
    "HeadlessEpisode",
    "JobProgress",
    "WorkerDied",
    "agent_algorithm",
    "execute_run",
    "execute_run_safely",
    "headless_setup",
    "load_agent",
    "make_policy",
    "prepare_headless",
    "run_all",
    "status_of",
]


@functools.lru_cache(maxsize=8)
def load_agent(path: str) -> Any:
    """``agents.load_model`` (the algorithm read from the file), cached per process."""
    from agents.training import load_model

    return load_model(path)


def agent_algorithm(path: str) -> str:
    """``MaskablePPO``, ``PPO`` or ``DQN``: the algorithm that saved ``path``
    (``agents.saved.algorithm_of``; ``ValueError`` naming the file if none did)."""
    from agents.saved import ALGORITHM_NAMES, algorithm_of

    return ALGORITHM_NAMES[algorithm_of(path)]


def make_policy(policy: PolicySpec, env: Any) -> Any:
    """What plays ``policy`` in ``env``: a baseline bound to the env (with the spec's
    parameters), or a saved agent acting deterministically (:class:`EvalPredictor`,
    a pointer agent rebound to the env's spaces; a residual agent asks its base heuristic
    for the proposal it reads, ``agents.residual.ResidualPredictor``). Anything
    ``rollout`` takes."""
    if policy.is_agent:
        from agents.inference import play_predictor

        return play_predictor(load_agent(str(policy.path)), env)
    import baselines

    return baselines.make(str(policy.name), env=env, **dict(policy.params))


@dataclass(slots=True)
class _Episode:
    """What one finished episode left behind (internal to a worker).

    ``jobs_total`` counts the episode's jobs (after unfit ones are dropped);
    ``truncated_by`` says which cap stopped it, if one did.
    """

    records: list[Any]
    timeline: Any
    metrics: dict[str, Any]
    decisions: int
    truncated: bool
    rejected: int
    cluster: Any
    recorder: PlacementRecorder | None
    jobs_total: int
    truncated_by: TruncatedBy | None = None
    invalid: int = 0
    oracle: bool = False


def status_of(jobs_finished: int, jobs_total: int, truncated_by: str | None) -> RunStatus:
    """How a run ended: complete if every job finished, else which cap stopped it
    (``truncated_by`` of :mod:`gpushare_env.runner`: ``"decisions"`` or ``"time"``), else
    unfinished (a deadlock, or a loop that stopped without saying why)."""
    if jobs_finished >= jobs_total:
        return RunStatus.COMPLETE
    if truncated_by == "decisions":
        return RunStatus.TRUNCATED_DECISIONS
    if truncated_by == "time":
        return RunStatus.TRUNCATED_TIME
    return RunStatus.UNFINISHED


def _run_in_env(spec: RunSpec) -> _Episode:
    """Play one episode through the env with the spec's policy (:func:`rollout`).

    A saved agent acts deterministically, with the env's mask if it takes one
    (MaskablePPO); PPO and DQN have none, and their invalid actions are no-ops counted in
    the ``invalid_actions`` column. A Gantt run records the holds after every step.
    """
    env: Any = make_env(spec.env_config)
    policy = make_policy(spec.policy, env)
    recorder = PlacementRecorder() if spec.record_gantt else None
    observer = _chain(recorder.observe if recorder is not None else None, _progress_hook(spec))

    def observe(step: Step) -> None:
        # after every decision (nothing holds a GPU before the first one)
        assert observer is not None
        observer(env.unwrapped.simulator)

    callback = observe if observer is not None else None
    with warnings.catch_warnings():  # a cut trace is in the plan's notes, once
        warnings.simplefilter("ignore", TraceCutWarning)
        episode = rollout(policy, env, seed=spec.seed, callback=callback)
    sim = env.unwrapped.simulator
    records = sim.records()
    timeline = sim.timeline()
    metrics = episode.metrics
    if not metrics:
        from gpushare_env.metrics import summarize

        metrics = summarize(records, timeline)
    env.close()
    rejected = int(episode.reset_info.get("rejected_jobs", 0))  # jobs that never fit, dropped
    return _Episode(
        records, timeline, metrics, episode.steps, episode.truncated, rejected, sim.cluster,
        recorder, int(episode.reset_info["num_jobs"]), episode.info.get("truncated_by"),
        episode.invalid_actions, _sees_the_future(policy),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class HeadlessEpisode:
    """One headless episode, set up as ``GPUShare-v0``'s ``reset(seed=seed)`` sets it up
    (:func:`prepare_headless`).

    Attributes:
        config: The env config, parsed once.
        args: What the run hands the simulator (``EnvConfig.run_args``: the env's).
        cluster: The cluster.
        jobs: The episode's jobs (unfit ones dropped).
        noise_rng: The measurement noise's generator (a run consumes it: one run per
            episode).
        rejected: Jobs dropped as unfit.
    """

    config: EnvConfig
    args: RunArgs
    cluster: Cluster
    jobs: list[JobSpec]
    noise_rng: np.random.Generator
    rejected: int

    def make_policy(self, name: str, **params: Any) -> Any:
        """``baselines.make`` for this run's setting: refused as the env would refuse it
        (a strategy it needs missing from ``strategies``, another sharing model), and
        restricted to ``strategies`` as in the env."""
        import baselines

        return baselines.make(
            name, strategies=self.args.strategies, sharing=self.args.sharing, **params
        )

    def play(self, policy: Any, on_decision: Callable[[Any], None] | None = None) -> RunResult:
        """Run ``policy`` to the end (:func:`gpushare_env.runner.run_headless`) with the
        env's windows, ``auto_advance``, decision cap and time cap, and a livelock check."""
        from gpushare_env.runner import run_headless

        args = self.args
        return run_headless(
            self.jobs,
            self.cluster,
            policy,
            args.sim_config,
            rng=self.noise_rng,
            windows=args.windows,
            auto_advance=args.auto_advance,
            max_decisions=args.decision_cap(len(self.jobs)),
            max_time_s=args.max_time_s,
            max_decisions_per_instant=_LIVELOCK_DECISIONS,
            on_decision=on_decision,
        )


def prepare_headless(env_config: EnvConfig | Mapping[str, Any], seed: int) -> HeadlessEpisode:
    """The headless episode of ``env_config`` and episode ``seed``: draws what
    ``GPUShare-v0``'s ``reset(seed=seed)`` draws, by the same function
    (:func:`gpushare_env.envs.episodes.draw_episode`; jobs that cannot fit are dropped
    and counted), with the run's arguments from the same method
    (``EnvConfig.run_args``)."""
    from gpushare_env.envs.episodes import draw_episode
    from gpushare_env.sim import make_cluster

    config = EnvConfig.from_any(
        env_config if isinstance(env_config, EnvConfig) else dict(env_config)
    )
    cluster = make_cluster(config.cluster)
    episode = draw_episode(config, cluster, seed)
    return HeadlessEpisode(
        config, config.run_args(), cluster, episode.jobs, episode.noise_rng,
        len(episode.rejected_ids),
    )  # fmt: skip


def headless_setup(spec: RunSpec) -> tuple[list[Any], Any, Any, np.random.Generator, int]:
    """Jobs, cluster, simulator config, noise generator and unfit jobs dropped of a
    headless run (:func:`prepare_headless`)."""
    episode = prepare_headless(spec.env_config, spec.seed)
    return (
        episode.jobs, episode.cluster, episode.args.sim_config, episode.noise_rng,
        episode.rejected,
    )  # fmt: skip


def _run_headless(spec: RunSpec) -> _Episode:
    """Run one heuristic on the simulator directly, without the env: for huge traces.

    The run honours every setting of the env config as the env does, from the same
    arguments (``EnvConfig.run_args``): the env's windows (their sizes and priority
    share), so a headless run makes the same decisions as the same heuristic in the env
    and gives the same metrics (a property test draws configurations to check it); the
    env's ``strategies`` (a heuristic needing another is refused, one picking among
    strategies picks among these); the decision cap and time cap (``limits.max_time_s``;
    a capped run is ``truncated`` and says by which). It only skips the observation, mask
    and reward work. (Unbounded windows would also make each decision scan the whole
    queue, quadratic once a backlog forms.) The loop is
    :func:`gpushare_env.runner.run_headless`, with a livelock check and the Gantt recorder
    observing after each decision.
    """
    episode = prepare_headless(spec.env_config, spec.seed)
    policy = episode.make_policy(str(spec.policy.name), **dict(spec.policy.params))
    recorder = PlacementRecorder() if spec.record_gantt else None
    observer = _chain(recorder.observe if recorder is not None else None, _progress_hook(spec))
    result = episode.play(policy, on_decision=observer)
    return _Episode(
        result.records, result.timeline, result.metrics, result.steps, result.truncated,
        episode.rejected, episode.cluster, recorder, len(episode.jobs), result.truncated_by, 0,
        _sees_the_future(policy),
    )  # fmt: skip


#: Decisions at one instant after which a headless run is stopped as a livelock.
_LIVELOCK_DECISIONS = 100_000


def _sees_the_future(policy: Any) -> bool:
    """``Policy.oracle`` of what played a run (a saved agent's predictor has none)."""
    return bool(getattr(policy, "oracle", False))


def _chain(*observers: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """One callable calling each given observer in turn with the simulator (``None`` when
    none is given)."""
    present = [observer for observer in observers if observer is not None]
    if len(present) <= 1:
        return present[0] if present else None

    def chained(sim: Any) -> None:
        for observer in present:
            observer(sim)

    return chained


# ------------------------------------------------------------ progress within runs
#: Seconds between two reports of a run's finished jobs (at most; none in a run's
#: first interval, so a short run reports nothing).
PROGRESS_INTERVAL_S = 0.5

#: Where a run reports its progress, ``(run index, jobs finished, jobs total)``: set in
#: a pool's workers (a queue to the main process) or in the main process while
#: :func:`run_all` runs there with a progress bar; ``None`` otherwise (no reports).
_reporter: Callable[[int, int, int], None] | None = None
#: The interval of the reports (:data:`PROGRESS_INTERVAL_S` when :func:`run_all` began).
_report_every_s = PROGRESS_INTERVAL_S


class JobProgress:
    """An ``on_decision`` observer reporting a run's finished jobs every ``interval_s``
    seconds at most: what a progress bar shows of a long run (one lookahead run on a
    2,000-job trace takes minutes).

    It costs nothing measurable per decision: it reads the clock only every ``stride``
    decisions, a stride that follows the decisions' pace (doubled while checks come
    more than 16 times an interval, halved while they come less than 4 times; 1 for
    slow decisions, up to 1,024 for fast ones), and the simulator only when a report
    is due (its jobs finished and in the workload). No report comes in a run's first
    interval, so a short run reports nothing.

    Args:
        index: The run's ``RunSpec.index``.
        report: Called with ``(index, jobs finished, jobs total)``.
        interval_s: Least time between two reports (the first one after it too).  [s]
        clock: Monotonic seconds.
    """

    __slots__ = ("checked_s", "clock", "due_s", "index", "interval_s", "left", "report", "stride")

    #: Most decisions between two looks at the clock.
    MAX_STRIDE = 1024

    def __init__(
        self,
        index: int,
        report: Callable[[int, int, int], None],
        interval_s: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.index, self.report, self.interval_s, self.clock = index, report, interval_s, clock
        self.checked_s = clock()
        self.due_s = self.checked_s + interval_s
        self.stride = self.left = 1

    def __call__(self, sim: Any) -> None:
        self.left -= 1
        if self.left > 0:
            return
        now = self.clock()
        since = now - self.checked_s
        if since < self.interval_s / 16:
            self.stride = min(2 * self.stride, self.MAX_STRIDE)
        elif since > self.interval_s / 4:
            self.stride = max(self.stride // 2, 1)
        self.left, self.checked_s = self.stride, now
        if now < self.due_s:
            return
        self.due_s = now + self.interval_s
        self.report(self.index, int(sim.num_finished), len(sim.jobs))


def _progress_hook(spec: RunSpec) -> JobProgress | None:
    """The run's progress observer, when something listens (:data:`_reporter`)."""
    return None if _reporter is None else JobProgress(spec.index, _reporter, _report_every_s)


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
        "num_jobs": len(records),  # finished jobs, which the metrics are over
    }
    for metric in HEADLINE_METRICS:
        row[metric] = float(metrics.get(metric, math.nan))
    row["wall_s"] = wall_s
    row["status"] = status_of(len(records), episode.jobs_total, episode.truncated_by).value
    row["jobs_total"] = episode.jobs_total
    row["jobs_unfinished"] = episode.jobs_total - len(records)
    cluster_spec = spec.env_config.get("cluster", "thesis")
    row["cluster"] = (
        cluster_spec if isinstance(cluster_spec, str) else str(cluster_spec.get("name", "custom"))
    )
    row["mode"] = "headless" if spec.headless else "env"
    row["decisions"] = episode.decisions
    row["truncated"] = int(episode.truncated)
    row["rejected_jobs"] = episode.rejected
    row["invalid_actions"] = episode.invalid
    for metric in OTHER_METRICS:
        row[metric] = float(metrics.get(metric, math.nan))
    row["oracle"] = int(episode.oracle)
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
            error=f"{type(error).__name__}: {one_line(error)}",
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


class WorkerDied(RuntimeError):
    """A worker process died mid-run (killed by a signal, out of memory): the runs it
    and the other workers had in progress are lost, the finished ones were recorded."""


def run_all(
    specs: Sequence[RunSpec],
    workers: int,
    progress: bool = True,
    on_done: Callable[[RunOutput], Any] | None = None,
    keep: bool = True,
    backend: str = "local",
    ray_address: str | None = None,
) -> list[RunOutput]:
    """Execute every run, over ``workers`` processes or as Ray tasks, and return outputs
    in spec order.

    ``on_done`` sees each output as soon as its run ends (to record it: see
    :meth:`~gpushare_eval.store.RunStore.record`); a Ctrl-C waits until it
    returns. On Ctrl-C (``KeyboardInterrupt``, re-raised) the workers are stopped at
    once. They ignore SIGINT themselves: a terminal's Ctrl-C, sent to every process of
    the group, is handled by the main process alone (no traceback from each worker).

    Args:
        specs: The runs.
        workers: Processes; 1 runs everything in this process.
        progress: Show a progress bar (tqdm when installed) on stderr, with the jobs
            finished of the runs in progress (the local backend; ``False``: the runs
            report nothing).
        on_done: Called with each output as it completes (in completion order).
        keep: Keep the outputs to return them; ``False`` when ``on_done`` takes care of
            them (a long evaluation's job records need not stay in memory).
        backend: ``"local"`` (this process, or a process pool) or ``"ray"`` (one Ray task
            per run: :mod:`gpushare_eval.ray_backend`, imported only then).
        ray_address: The Ray cluster to join (``"ray"`` only); ``None`` starts a local
            instance with ``workers`` CPUs for the duration of the call.

    Returns:
        One output per spec, sorted by ``RunSpec.index`` (none unless ``keep``).

    Raises:
        KeyboardInterrupt: Ctrl-C; the runs in progress are abandoned.
        WorkerDied: A worker process died (with Ray: a task died after every retry);
            the other runs are abandoned.
        ImportError: ``backend="ray"`` without Ray installed.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    bar = _progress_bar(len(specs), progress)
    # the jobs finished of the runs in progress, beside the bar (the local backend)
    running = _RunningJobs(bar) if progress and backend == "local" else None
    outputs: list[RunOutput] = []

    def done(output: RunOutput) -> None:
        if keep:
            outputs.append(output)
        if running is not None:
            running.ended(output.index)
        bar.update(1)
        if on_done:
            with _interrupts_deferred():
                on_done(output)

    global _reporter, _report_every_s
    try:
        if backend == "ray":
            from gpushare_eval.ray_backend import run_on_ray

            run_on_ray(specs, done, address=ray_address, workers=workers)
        elif workers <= 1 or len(specs) <= 1:
            _reporter = running.report if running is not None else None
            _report_every_s = PROGRESS_INTERVAL_S
            for spec in specs:
                done(execute_run_safely(spec))
        else:
            _run_in_pool(specs, workers, done, running.report if running is not None else None)
    finally:
        _reporter = None
        bar.close()
    return sorted(outputs, key=lambda o: o.index)


def _run_in_pool(
    specs: Sequence[RunSpec],
    workers: int,
    done: Callable[[RunOutput], None],
    report: Callable[[int, int, int], None] | None = None,
) -> None:
    """Run the specs over a process pool, calling ``done`` as each one ends, and
    ``report`` with the progress the runs report (:class:`JobProgress`, through a
    queue read between the runs' ends; ``None``: the runs report nothing)."""
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("forkserver")
    queue = context.Queue() if report is not None else None
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_worker_setup,
        initargs=(queue, PROGRESS_INTERVAL_S),
    )
    try:
        index_of = {pool.submit(execute_run_safely, spec): spec.index for spec in specs}
        pending = set(index_of)
        # the reports are read whenever a run ends, and at least this often
        timeout = None if queue is None else max(PROGRESS_INTERVAL_S, 0.1)
        while pending:
            finished, pending = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            if queue is not None and report is not None:
                _drain(queue, report)
            for future in sorted(finished, key=index_of.__getitem__):
                try:
                    output = future.result()
                except BrokenProcessPool:
                    raise WorkerDied(
                        "a worker process died (killed by a signal, or out of memory)"
                    ) from None
                done(output)
    except BaseException:
        with _interrupts_ignored():  # a second Ctrl-C must not cut this short
            _stop_pool(pool)
        raise
    else:
        pool.shutdown()
    finally:
        if queue is not None:  # once the workers are gone: nothing writes to it any more
            queue.close()


def _drain(queue: Any, report: Callable[[int, int, int], None]) -> None:
    """Pass on every progress report waiting in ``queue`` (best effort: a report that
    cannot be read is dropped)."""
    while True:
        try:
            index, finished, total = queue.get_nowait()
        except Exception:  # queue.Empty, or a report cut short by a dying worker
            return
        report(index, finished, total)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued runs and end the workers now (not after their current run)."""
    pool.shutdown(wait=False, cancel_futures=True)
    # the executor has no public way to end running calls: stop its processes
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=5)
    pool.shutdown(wait=True)


def _worker_setup(queue: Any = None, every_s: float = PROGRESS_INTERVAL_S) -> None:
    """Worker initializer: leave Ctrl-C to the main process (which stops the workers), and
    end with the main process: killed, it would leave its workers waiting for work
    forever (each holds its task queue's write end, so it never reads an end of file).
    With a ``queue``, the worker's runs report their progress into it every ``every_s``
    seconds at most (:data:`_reporter`; a report never waits, nor holds up the worker's
    exit)."""
    import multiprocessing

    global _reporter, _report_every_s
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    if queue is not None:
        queue.cancel_join_thread()  # reports left unsent at exit are dropped

        def report(index: int, finished: int, total: int) -> None:
            with contextlib.suppress(Exception):  # progress never fails a run
                queue.put_nowait((index, finished, total))

        _reporter, _report_every_s = report, every_s


def _exit_with(parent: Any) -> None:
    """Wait for the main process to end (its sentinel pipe closes), then exit at once."""
    parent.join()
    os._exit(1)


@contextlib.contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """Ignore Ctrl-C in the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C back until the block ends (a run being recorded is never cut short);
    a no-op outside the main thread, where signals are not handled."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if received and callable(previous):
        previous(signal.SIGINT, None)  # Python's default handler raises KeyboardInterrupt
    elif received and previous == signal.SIG_DFL:
        raise KeyboardInterrupt


class _PlainProgress:
    """A minimal progress line for when tqdm is missing (or progress is off)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled
        self.start = time.perf_counter()
        self.postfix, self.width = "", 0

    def update(self, count: int) -> None:
        self.done += count
        self._print()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix, self.width = text, max(self.width, 1)  # lines may shrink: pad them
        if refresh:
            self._print()

    def _print(self) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        line = f"\r{PROG}: {self.done}/{self.total} runs, {elapsed:.0f} s"
        if self.done:
            line += f", ~{elapsed / self.done * (self.total - self.done):.0f} s left"
        if self.postfix:
            line += f"; {self.postfix}"
        padding = " " * max(0, self.width - len(line))  # over a longer line
        if self.width:
            self.width = len(line)
        print(line + padding, end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled and (self.done or self.postfix):
            print(file=sys.stderr)


class _RunningJobs:
    """The jobs finished so far of the runs in progress, shown after the bar of runs
    done (``1 running: 1,234/2,000 jobs``): the runs report them (:class:`JobProgress`).

    Shown at most every ``refresh_s`` seconds: every half second on a terminal, every
    half minute into a file or a pipe (where each redraw is more text). Nothing is shown
    until a run reports, so runs shorter than :data:`PROGRESS_INTERVAL_S` leave the bar
    as it was. A report of a run that has ended is ignored (it may arrive after the
    run's output).
    """

    def __init__(self, bar: Any, refresh_s: float | None = None) -> None:
        self.bar = bar
        if refresh_s is None:
            refresh_s = PROGRESS_INTERVAL_S if _is_terminal(sys.stderr) else 30.0
        self.refresh_s = refresh_s
        self.runs: dict[int, tuple[int, int]] = {}
        self.done: set[int] = set()
        self.text = ""
        self.shown_s = -math.inf

    def report(self, index: int, finished: int, total: int) -> None:
        """A run's progress: ``finished`` of its ``total`` jobs."""
        if index in self.done:
            return
        self.runs[index] = (finished, total)
        now = time.monotonic()
        if now - self.shown_s >= self.refresh_s:
            self.shown_s = now
            self._show(refresh=True)

    def ended(self, index: int) -> None:
        """Run ``index`` ended: its jobs leave the text (drawn with the bar's next update)."""
        self.done.add(index)
        if self.runs.pop(index, None) is not None:
            self._show(refresh=False)

    def describe(self) -> str:
        """``1 running: 1,234/2,000 jobs`` (empty when no run in progress reported)."""
        if not self.runs:
            return ""
        finished = sum(f for f, _ in self.runs.values())
        total = sum(t for _, t in self.runs.values())
        return f"{len(self.runs)} running: {finished:,}/{total:,} jobs"

    def _show(self, refresh: bool) -> None:
        text = self.describe()
        if text != self.text:
            self.text = text
            self.bar.set_postfix_str(text, refresh=refresh)


def _is_terminal(stream: Any) -> bool:
    """True if ``stream`` is a terminal."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _progress_bar(total: int, enabled: bool) -> Any:
    """tqdm on stderr (runs done, elapsed, time left), or a plain fallback."""
    if not enabled:
        return _PlainProgress(total, False)
    try:
        from tqdm import tqdm
    except ImportError:
        return _PlainProgress(total, True)
    return tqdm(total=total, unit="run", desc=PROG, file=sys.stderr, dynamic_ncols=True)
