"""Runs as Ray tasks: ``gpushare-evaluate --backend ray``, on one machine or a cluster.

Every (policy, workload, seed) run is one Ray task calling
:func:`~gpushare_eval.runs.execute_run_safely`, so a run gives the same output
as in the local process pool (it depends only on its :class:`RunSpec`). Outputs come
back as the tasks end, and the caller records each one at once
(:meth:`~gpushare_eval.store.RunStore.record`), as with the pool.

* **Files travel in the object store.** A trace (``env_config["workload"]``: an absolute
  path from ``--trace``, or the ``"path"`` of a workload dict such as ``--workload
  '{"path": "vc.csv", "num_jobs": 50}'``) or a saved agent (``PolicySpec.path``) need
  not exist on a remote node: the driver reads each file once and puts its bytes in
  Ray's object store (``ray.put``); the task writes them to a node-local cache file
  named by their SHA-256 (once per node) and runs the spec with its paths pointing
  there. The file keeps its name (a trace's suffix says its format), so the outputs are
  the same.
* **A dead worker loses nothing.** A task whose worker process dies (killed, out of
  memory, a node lost) is retried by Ray (``max_retries``); its output is returned, and
  recorded, once. A run that raises is not retried: it becomes a failed output, as in
  the pool. A task that still dies after its retries ends the evaluation
  (:class:`~gpushare_eval.runs.WorkerDied`); the runs recorded are kept.
* **Ray is optional.** This module is imported only for ``--backend ray``; the local
  path never imports Ray (tested).

Without an address a local Ray instance starts with ``workers`` CPUs and stops when the
runs end; with one (``ray://host:10001``, ``host:6379`` or ``auto``) the runs join that
cluster, whose nodes need ``gpushare`` installed (the same version: results are only
comparable run for run from the same code). A Ray instance the caller already started
(``ray.is_initialized()``) is used as it is and left running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gpushare_eval.specs import RunOutput, RunSpec

__all__ = [
    "MAX_RETRIES",
    "RAY_MISSING",
    "TEST_FAULT_ENV",
    "RayStartError",
    "ray_available",
    "ray_session",
    "run_on_ray",
]

#: Attempts after the first of a task whose worker died (Ray's ``max_retries``).
MAX_RETRIES = 3

#: The message of ``--backend ray`` without Ray installed.
RAY_MISSING = "Ray is not installed: pip install 'gpushare-env[ray]'"

#: Test-only fault injection: the name of an environment variable holding a file path.
#: A task whose run's ``policy/workload/seed`` is that file's text removes the file and
#: kills its worker process (``os._exit``), so exactly one attempt dies and Ray's retry
#: then runs it normally. Unset (always, outside the tests) it does nothing.
TEST_FAULT_ENV = "GPUSHARE_TEST_KILL_WORKER_FILE"


class RayStartError(RuntimeError):
    """Ray could not start, or the cluster at the address could not be joined."""


def ray_available() -> bool:
    """True if Ray imports."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _import_ray() -> Any:
    """The ``ray`` module, or ``ImportError`` with the install hint."""
    try:
        import ray
    except ImportError:
        raise ImportError(RAY_MISSING) from None
    return ray


@contextlib.contextmanager
def ray_session(address: str | None, workers: int) -> Iterator[Any]:
    """Ray, ready for tasks: the caller's running instance, the cluster at ``address``,
    or a local instance with ``workers`` CPUs, stopped on the way out (only if started
    here)."""
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address is None:  # "local": a new instance, never a cluster left running here
        options["num_cpus"] = max(1, workers)
    try:
        ray.init(address=address or "local", **options)
    except Exception as error:  # a bad address, a cluster down, a failed start
        where = f"join the Ray cluster at {address}" if address else "start a local Ray instance"
        raise RayStartError(f"cannot {where}: {' '.join(str(error).split())}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _trace_file(spec: RunSpec) -> str | None:
    """The trace file a run reads, as the driver names it: a ``--trace`` file (an absolute
    path), or the ``"path"`` of a workload dict (as given: relative to the driver's
    working directory, where the local pool's workers read it too); ``None`` for a
    generated workload."""
    workload = spec.workload.spec
    if isinstance(workload, str):
        return workload if spec.workload.trace_sha256 is not None else None
    path = workload.get("path")  # a dict with a path is a trace (WorkloadConfig.from_any)
    return None if path is None else os.fspath(path)


def _shipped_files(specs: Sequence[RunSpec]) -> set[str]:
    """Every trace and saved agent file the runs read."""
    files: set[str] = set()
    for spec in specs:
        trace = _trace_file(spec)
        if trace is not None:
            files.add(trace)
        if spec.policy.path is not None:
            files.add(str(spec.policy.path))
    return files


def run_on_ray(
    specs: Sequence[RunSpec],
    done: Callable[[RunOutput], None],
    *,
    address: str | None = None,
    workers: int = 1,
) -> None:
    """Run every spec as a Ray task, calling ``done`` with each output as it ends.

    Raises:
        ImportError: Ray is not installed (:data:`RAY_MISSING`).
        KeyboardInterrupt: Ctrl-C; the tasks in flight are cancelled.
        WorkerDied: A task died more often than Ray retries it.
    """
    from gpushare_eval.runs import WorkerDied

    owned = address is None and not _import_ray().is_initialized()
    with ray_session(address, workers) as ray:
        refs = {path: ray.put(Path(path).read_bytes()) for path in sorted(_shipped_files(specs))}
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(_ray_task)
        pending = []
        for spec in specs:
            trace, agent = _trace_file(spec), spec.policy.path
            pending.append(
                task.remote(
                    spec,
                    refs[trace] if trace is not None else None,
                    refs[str(agent)] if agent is not None else None,
                )
            )
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                try:
                    output = ray.get(ready[0])
                except ray.exceptions.RayError as error:  # died after every retry
                    raise WorkerDied(
                        f"a Ray task died {MAX_RETRIES + 1} times ({type(error).__name__}: "
                        f"{' '.join(str(error).split())[:200]})"
                    ) from None
                done(output)
        except BaseException:
            # A local instance started here stops with the command (``ray_session``),
            # its workers with it. Cancelling its tasks as well races with their own end
            # on Ctrl-C (the terminal's SIGINT reaches the workers too), which Ray 2.60
            # can answer by aborting the driver ("Tried to complete task that was not
            # pending"). Tasks on a cluster, or on the caller's instance, are cancelled.
            if not owned:
                for ref in pending:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)
            raise


def _ray_task(spec: RunSpec, trace: bytes | None, agent: bytes | None) -> RunOutput:
    """One run on a Ray worker, its trace and agent written from the shipped bytes."""
    from gpushare_eval.runs import execute_run_safely

    _maybe_fail(spec)
    original = _trace_file(spec)
    if trace is not None and original is not None:
        path = _local_copy(original, trace)
        local: str | dict[str, Any] = path
        if not isinstance(spec.workload.spec, str):  # a workload dict: only its path moves
            local = {**spec.workload.spec, "path": path}
        spec = dataclasses.replace(
            spec,
            workload=dataclasses.replace(spec.workload, spec=local),
            env_config={**spec.env_config, "workload": local},
        )
    if agent is not None:
        spec = dataclasses.replace(
            spec,
            policy=dataclasses.replace(spec.policy, path=_local_copy(str(spec.policy.path), agent)),
        )
    return execute_run_safely(spec)


def _local_copy(original: str, data: bytes) -> str:
    """A node-local file holding ``data``, named like ``original``, written once per node
    (a content-addressed cache: ``<tmp>/gpushare-ray/<sha256>/<name>``)."""
    digest = hashlib.sha256(data).hexdigest()
    folder = Path(tempfile.gettempdir()) / "gpushare-ray" / digest
    path = folder / Path(original).name
    if path.is_file() and path.stat().st_size == len(data):
        return str(path)
    folder.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=folder, prefix=".partial-")
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)
    os.replace(partial, path)  # atomic: a concurrent task sees the whole file or none
    return str(path)


def _maybe_fail(spec: RunSpec) -> None:
    """The test-only fault (:data:`TEST_FAULT_ENV`): kill this worker on the run named."""
    marker = os.environ.get(TEST_FAULT_ENV)
    if not marker:
        return
    name = f"{spec.policy.label}/{spec.workload.label}/{spec.seed}"
    try:
        if Path(marker).read_text(encoding="utf-8").strip() != name:
            return
        os.remove(marker)  # only one attempt claims it
    except OSError:
        return
    os._exit(1)
