"""Readers of Alibaba's GPU-sharing trace (``cluster-trace-gpu-v2023``, "openb").

The trace (``alibaba/clusterdata``, folder ``cluster-trace-gpu-v2023/csv``) lists the
tasks (Kubernetes pods) and the nodes of a production cluster in which a task asks for a
*share* of one GPU (``gpu_milli``, 0-1000) or for whole GPUs, plus CPU and host memory.
It is the trace of Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
with Fragmentation Gradient Descent", USENIX ATC 2023. Terms and citation:
``data/alibaba_openb/README.md``.

Pod lists, ``openb_pod_list_*.csv``, come in two forms, told apart by the header:

* 11 columns: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos,
  pod_phase, creation_time, deletion_time, scheduled_time`` (times in seconds;
  ``gpu_spec``, ``deletion_time`` and ``scheduled_time`` may be empty);
* 5 columns (the ``multigpu*`` lists): ``name, cpu_milli, memory_mib, num_gpu,
  gpu_milli``.

Node lists, ``openb_node_list_*.csv``: ``sn, cpu_milli, memory_mib, gpu, model`` (``model``
empty only on a node without GPUs).

>>> nodes = alibaba_openb_nodes()
>>> len(nodes), sum(node.num_gpu for node in nodes), len({node.model for node in nodes})
(1213, 6212, 7)
>>> tasks = read_openb_pods(shipped_pod_list_path(), known_models=node_models(nodes))
>>> len(tasks), tasks[1].gpu_milli, tasks[1].is_gpu_share
(8152, 460, True)

Every problem raises :class:`~.jobs.TraceError` (a ``ValueError``) naming the file, the
line (the header is line 1) and the field: a wrong header, a missing or non-integer
number, a negative count or capacity, a share below 0 or above 1000, a multi-GPU task
(``num_gpu > 1``) with a fractional share, a GPU task with no share or a CPU task with
one, a GPU model in ``gpu_spec`` that no node of the cluster has (when the models are
given), a node row without CPU or memory capacity, a GPU node without a model, a
duplicate name. Rows are never dropped: a file reads whole or not at all. Blank lines are
ignored.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from gpushare_env.sim.catalog import scaling_efficiency
from gpushare_env.sim.limits import MAX_JOBS, is_int, is_real, range_text
from gpushare_env.sim.types import JobSpec, Request
from gpushare_env.workloads.jobs import TraceError

__all__ = [
    "MILLI_PER_GPU",
    "NODE_COLUMNS",
    "POD_COLUMNS",
    "POD_COLUMNS_SHORT",
    "OpenbJobs",
    "OpenbNode",
    "OpenbTask",
    "alibaba_openb_nodes",
    "is_openb_pod_list",
    "node_models",
    "openb_jobs",
    "read_openb_nodes",
    "read_openb_pods",
    "shipped_node_list_path",
    "shipped_pod_list_path",
]

#: A whole GPU in the trace's unit of GPU share.  [milli-GPU]
MILLI_PER_GPU = 1000

#: Header of the 11-column pod lists.
POD_COLUMNS: tuple[str, ...] = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
#: Header of the 5-column pod lists (``openb_pod_list_multigpu*.csv``).
POD_COLUMNS_SHORT: tuple[str, ...] = POD_COLUMNS[:5]
#: Header of the node lists.
NODE_COLUMNS: tuple[str, ...] = ("sn", "cpu_milli", "memory_mib", "gpu", "model")

PathLike = str | os.PathLike[str]

_DATA = ("data", "alibaba_openb")


@dataclass(frozen=True, slots=True)
class OpenbTask:
    """One task (pod) of a pod list: what it requests, and what the trace says of it.

    Attributes:
        name: The task's name (unique within a file).
        cpu_milli: CPU request.  [milli-cores]
        memory_mib: Host-memory request.  [MiB]
        num_gpu: GPUs requested (0 for a CPU-only task).
        gpu_milli: Share of each requested GPU, 1-1000 for a GPU task, 0 for a CPU-only
            one; below 1000 only with ``num_gpu == 1``.  [milli-GPU]
        gpu_spec: GPU models the task may run on; empty: any.
        qos: Quality-of-service class (``LS``, ``BE``, ``Burstable``, ...); empty in the
            5-column form.
        pod_phase: Phase at the end of the trace (``Running``, ``Succeeded``, ``Pending``,
            ``Failed``); empty in the 5-column form.
        creation_time: Creation time, ``None`` in the 5-column form.  [s]
        deletion_time: Deletion time, ``None`` when empty.  [s]
        scheduled_time: Time the task was scheduled, ``None`` when it never was.  [s]
        line: Line of the task in its file (the header is line 1).
    """

    name: str
    cpu_milli: int  # [milli-cores]
    memory_mib: int  # [MiB]
    num_gpu: int
    gpu_milli: int  # [milli-GPU] per GPU
    gpu_spec: tuple[str, ...] = ()
    qos: str = ""
    pod_phase: str = ""
    creation_time: int | None = None  # [s]
    deletion_time: int | None = None  # [s]
    scheduled_time: int | None = None  # [s]
    line: int = 0

    @property
    def total_gpu_milli(self) -> int:
        """GPU requested in all: ``num_gpu * gpu_milli``.  [milli-GPU]"""
        return self.num_gpu * self.gpu_milli

    @property
    def is_gpu_share(self) -> bool:
        """Whether the task asks for a fraction of one GPU."""
        return self.num_gpu == 1 and self.gpu_milli < MILLI_PER_GPU


@dataclass(frozen=True, slots=True)
class OpenbNode:
    """One node of a node list.

    Attributes:
        name: The node's serial name (``sn``).
        cpu_milli: CPU capacity.  [milli-cores]
        memory_mib: Host-memory capacity.  [MiB]
        num_gpu: GPUs on the node (0 for a CPU node).
        model: GPU model (``G2``, ``T4``, ``V100M32``, ...); empty on a CPU node.
        line: Line of the node in its file (the header is line 1).
    """

    name: str
    cpu_milli: int  # [milli-cores]
    memory_mib: int  # [MiB]
    num_gpu: int
    model: str = ""
    line: int = 0


def shipped_pod_list_path() -> Path:
    """The shipped ``openb_pod_list_default.csv`` (8,152 tasks)."""
    return _shipped("openb_pod_list_default.csv")


def shipped_node_list_path() -> Path:
    """The shipped ``openb_node_list_gpu_node.csv`` (1,213 GPU nodes, 6,212 GPUs)."""
    return _shipped("openb_node_list_gpu_node.csv")


def alibaba_openb_nodes() -> list[OpenbNode]:
    """The ``alibaba_openb`` cluster: the trace's 1,213 GPU nodes (6,212 GPUs, 7 models).

    By model: G2 549 nodes x 8 GPUs; T4 387 x 2 and 17 x 4; P100 131 x 2 and 3 x 1;
    G3 39 x 8; V100M16 28 x 4, 19 x 1 and 8 x 8; V100M32 21 x 8 and 9 x 4; A10 2 x 1.
    """
    return read_openb_nodes(shipped_node_list_path())


def node_models(nodes: Iterable[OpenbNode]) -> frozenset[str]:
    """The GPU models present on ``nodes`` (what a ``gpu_spec`` may name)."""
    return frozenset(node.model for node in nodes if node.num_gpu > 0)


def read_openb_nodes(path: PathLike) -> list[OpenbNode]:
    """Read a node list (``sn, cpu_milli, memory_mib, gpu, model``), in file order.

    Raises:
        TraceError: A wrong header, an empty, non-integer or negative capacity, a zero CPU
            or memory capacity, a GPU node without a model, a duplicate or empty ``sn``.
    """
    nodes: list[OpenbNode] = []
    seen: set[str] = set()
    for line, row in _rows(path, (NODE_COLUMNS,)):
        name = _name(row, "sn", path, line, seen)
        cpu = _integer(row, "cpu_milli", path, line)
        memory = _integer(row, "memory_mib", path, line)
        for column, value in (("cpu_milli", cpu), ("memory_mib", memory)):
            if value <= 0:
                raise TraceError(
                    f"a node needs a capacity > 0, got {value}",
                    path=path,
                    line=line,
                    field=column,
                )
        num_gpu = _integer(row, "gpu", path, line)
        model = row["model"].strip()
        if num_gpu > 0 and not model:
            raise TraceError(
                f"a node with {num_gpu} GPUs needs a model (the cell is empty)",
                path=path,
                line=line,
                field="model",
            )
        if num_gpu == 0 and model:
            raise TraceError(
                f"a node without GPUs has no model, got {model!r}",
                path=path,
                line=line,
                field="model",
            )
        nodes.append(OpenbNode(name, cpu, memory, num_gpu, model, line))
    return nodes


def read_openb_pods(
    path: PathLike, *, known_models: Collection[str] | None = None
) -> list[OpenbTask]:
    """Read a pod list (the 11-column or the 5-column form), in file order.

    Args:
        path: The CSV file.
        known_models: GPU models of the cluster the tasks are for (:func:`node_models`);
            a ``gpu_spec`` naming any other model is an error. ``None``: not checked.

    Raises:
        TraceError: See the module docstring.
    """
    models = None if known_models is None else frozenset(known_models)
    tasks: list[OpenbTask] = []
    seen: set[str] = set()
    for line, row in _rows(path, (POD_COLUMNS, POD_COLUMNS_SHORT)):
        name = _name(row, "name", path, line, seen)
        cpu = _integer(row, "cpu_milli", path, line)
        memory = _integer(row, "memory_mib", path, line)
        num_gpu = _integer(row, "num_gpu", path, line)
        gpu_milli = _integer(row, "gpu_milli", path, line, minimum=None)
        _check_share(num_gpu, gpu_milli, path, line)
        spec = _gpu_spec(row.get("gpu_spec", ""), models, path, line)
        if spec and num_gpu == 0:
            raise TraceError(
                f"a task without GPUs cannot ask for GPU models {'|'.join(spec)!r}",
                path=path,
                line=line,
                field="gpu_spec",
            )
        long_form = "qos" in row
        tasks.append(
            OpenbTask(
                name=name,
                cpu_milli=cpu,
                memory_mib=memory,
                num_gpu=num_gpu,
                gpu_milli=gpu_milli,
                gpu_spec=spec,
                qos=row.get("qos", "").strip(),
                pod_phase=row.get("pod_phase", "").strip(),
                creation_time=_integer(row, "creation_time", path, line) if long_form else None,
                deletion_time=_optional_integer(row, "deletion_time", path, line),
                scheduled_time=_optional_integer(row, "scheduled_time", path, line),
                line=line,
            )
        )
    return tasks


# -- helpers ---------------------------------------------------------------------------


#: The ``model`` of the jobs ``openb_jobs`` makes (none of the catalog's: the trace names
#: no model), and the GPU memory their share stands for under the memory model.  [GiB]
OPENB_MODEL = "openb_task"
OPENB_SHARE_GIB = 16.0


@dataclass(frozen=True, slots=True)
class OpenbJobs:
    """The tasks of a pod list as jobs over time (``openb_jobs``), and what was left out.

    Attributes:
        jobs: The jobs, in arrival order (CPU-only tasks as jobs of no GPU, unless left out).
        never_scheduled: Tasks left out: no ``scheduled_time`` (``Pending`` at the end).
        cut_at_end: Tasks left out: deleted at the trace's last timestamp, so their
            duration is not known.
        cpu_only: Tasks left out: no GPU, with ``openb_jobs(cpu_only=False)``.
        no_times: Tasks left out: a 5-column list has no times.
        time_scale: Factor applied to the gaps between arrivals (1.0: the trace's times).
        too_long: Tasks left out: longer than ``openb_jobs(max_duration_quantile=...)``'s
            quantile (counted once, not per copy).
        too_wide: Jobs left out: more GPUs than ``openb_jobs(max_gpus=...)`` (every copy
            counted).
        repeat: Times the trace is played (``openb_jobs(repeat=...)``).
    """

    jobs: list[JobSpec]
    never_scheduled: int
    cut_at_end: int
    cpu_only: int
    no_times: int
    time_scale: float
    too_long: int = 0
    too_wide: int = 0
    repeat: int = 1

    @property
    def num_cpu_only(self) -> int:
        """Jobs of no GPU among ``jobs``."""
        return sum(1 for job in self.jobs if job.num_gpus == 0)

    def describe(self) -> str:
        """One line: kept and left-out counts."""
        return (
            f"{len(self.jobs):,} tasks as jobs ({self.num_cpu_only:,} CPU-only); left out: "
            f"{self.never_scheduled:,} never scheduled, {self.cut_at_end:,} cut at the "
            f"trace's end, {self.cpu_only:,} CPU-only, {self.no_times:,} without times"
            + (f", {self.too_long:,} too long" if self.too_long else "")
            + (f", {self.too_wide:,} too wide" if self.too_wide else "")
            + (f"; the trace played {self.repeat:,} times" if self.repeat > 1 else "")
            + f"; arrival gaps x{self.time_scale:.4g}"
        )


def is_openb_pod_list(path: PathLike) -> bool:
    """Whether ``path`` is a CSV file whose header is the 11-column pod list's."""
    if Path(path).suffix.lower() != ".csv":
        return False
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError):
        return False
    return tuple(cell.strip() for cell in header) == POD_COLUMNS


def openb_jobs(
    path: PathLike,
    *,
    load: float | None = None,
    num_cluster_gpus: int | None = None,
    max_jobs: int | None = None,
    cpu_only: bool = True,
    max_gpus: int | None = None,
    max_duration_quantile: float | None = None,
    repeat: int = 1,
) -> OpenbJobs:
    """A pod list's tasks as jobs over time, for the requested-shares model.

    Each task that was scheduled and deleted before the trace's last timestamp becomes a
    job arriving at its ``creation_time`` (relative to the first kept task's), in the
    trace's order, of solo duration ``deletion_time - scheduled_time`` (the trace's wall
    time on its node), with ``JobSpec.request`` = its ``gpu_milli``, ``cpu_milli``,
    ``memory_mib`` and ``gpu_spec``. The job's id is its row's position in the file
    (``openb-pod-0001`` is job 1), its model ``OPENB_MODEL``; under the memory model it
    needs its share of a 16 GiB GPU and uses its share of the compute. A CPU-only task
    becomes a job of no GPU (``JobSpec``: it holds CPU and host memory only, and only
    the shares model runs it; the memory model's ``fit_to_cluster`` rejects it as
    ``"no_gpu"``). Left out, and counted: tasks never scheduled, cut at the trace's end,
    or without times, and CPU-only ones with ``cpu_only=False``.

    A load where placement matters: Alibaba's arrivals keep a few dozen of the cluster's
    6,212 GPUs busy, and a few tasks of months hold most of the GPU-seconds, so no
    compression of the arrivals alone keeps the whole cluster allocated (the longest task
    outlasts the others). ``max_duration_quantile`` leaves out that tail, ``repeat``
    plays the trace several times in a row, and ``load`` sets the rate
    (docs/results.md, *FGD's rules over time*).

    Args:
        path: An 11-column pod list.
        load: Rescale the gaps between arrivals so that the jobs' GPU-seconds (share x
            GPUs x duration) over the arrival span offer this load to ``num_cluster_gpus``
            GPUs. ``None``: the trace's times (Alibaba's arrivals offer a tiny load:
            ``data/alibaba_openb/README.md``).
        num_cluster_gpus: The GPUs ``load`` refers to.
        max_jobs: Keep the first ``max_jobs`` jobs (``None``: all), of every copy.
        cpu_only: Keep the CPU-only tasks (``False``: leave them out, counted).
        max_gpus: Leave out (counted) the jobs asking for more GPUs, after the arrivals
            are set: the others arrive as they would with them (``None``: keep all).
        max_duration_quantile: Leave out (counted) the tasks longer than this quantile
            of the kept tasks' durations, in (0, 1] (``None`` or 1: keep all).
        repeat: Play the kept tasks this many times in a row, >= 1: copy ``k``'s arrivals
            are the first's shifted by ``k`` periods (the arrival span plus the mean gap
            between arrivals), its job ids by ``k`` times the pod list's length.

    Raises:
        TraceError: A bad pod list (``read_openb_pods``), or one with no GPU task left.
        ValueError: ``load`` without ``num_cluster_gpus``, a bad ``load``, ``max_gpus``,
            ``max_duration_quantile`` or ``repeat``.
    """
    if load is not None and (num_cluster_gpus is None or not 0 < load < float("inf")):
        raise ValueError(
            f"openb_jobs: load needs num_cluster_gpus and must be > 0, got load={load!r}, "
            f"num_cluster_gpus={num_cluster_gpus!r}"
        )
    if max_gpus is not None and not (is_int(max_gpus) and max_gpus >= 0):
        raise ValueError(f"openb_jobs: max_gpus must be None or an int >= 0, got {max_gpus!r}")
    if max_duration_quantile is not None and not (
        is_real(max_duration_quantile) and 0 < max_duration_quantile <= 1
    ):
        raise ValueError(
            "openb_jobs: max_duration_quantile must be None or a number in (0, 1], got "
            f"{max_duration_quantile!r}"
        )
    if not (is_int(repeat) and 1 <= repeat <= MAX_JOBS):
        raise ValueError(
            f"openb_jobs: repeat must be an int {range_text(1, MAX_JOBS)}, got {repeat!r}"
        )
    tasks = read_openb_pods(path)
    end = max((t.deletion_time for t in tasks if t.deletion_time is not None), default=None)
    kept: list[tuple[float, int, OpenbTask, int]] = []  # (creation, position, task, duration)
    never = cut = left_cpu_only = no_times = 0
    for position, task in enumerate(tasks):
        if task.num_gpu == 0 and not cpu_only:
            left_cpu_only += 1
        elif task.creation_time is None:
            no_times += 1
        elif task.scheduled_time is None:
            never += 1
        elif task.deletion_time is None or task.deletion_time == end:
            cut += 1
        else:  # at least a second: an iteration
            duration = max(1, task.deletion_time - task.scheduled_time)
            kept.append((task.creation_time, position, task, duration))
    if not kept:
        raise TraceError(
            "no task with a known duration (scheduled, and deleted before the trace's "
            "end): nothing to run over time",
            path=path,
            line=2,
            field="scheduled_time",
        )
    too_long = 0
    if max_duration_quantile is not None and max_duration_quantile < 1:
        limit = float(np.quantile([d for _, _, _, d in kept], max_duration_quantile))
        too_long = sum(1 for _, _, _, d in kept if d > limit)
        kept = [item for item in kept if item[3] <= limit]
    kept.sort(key=lambda item: (item[0], item[1]))
    if repeat > 1:
        span = kept[-1][0] - kept[0][0]
        period = span + (span / (len(kept) - 1) if len(kept) > 1 else 0.0)
        one = kept
        kept = [
            (creation + copy * period, position + copy * len(tasks), task, duration)
            for copy in range(repeat)
            for creation, position, task, duration in one
        ]
    if max_jobs is not None:
        kept = kept[:max_jobs]
    first = kept[0][0]
    scale = 1.0
    if load is not None and num_cluster_gpus is not None:
        span = kept[-1][0] - first
        work = sum(t.num_gpu * t.gpu_milli / MILLI_PER_GPU * d for _, _, t, d in kept)
        if span > 0:
            scale = work / (load * num_cluster_gpus * span)
    jobs = []
    too_wide = 0
    for creation, position, task, duration in kept:
        if max_gpus is not None and task.num_gpu > max_gpus:
            too_wide += 1
            continue
        share = task.gpu_milli / MILLI_PER_GPU
        jobs.append(
            JobSpec(
                position,
                float((creation - first) * scale),
                OPENB_MODEL,
                1,
                task.num_gpu,
                duration,  # one iteration a second of the trace's time
                share * OPENB_SHARE_GIB,
                share,
                scaling_efficiency(task.num_gpu) if task.num_gpu else 1.0,
                Request(task.gpu_milli, task.cpu_milli, task.memory_mib, task.gpu_spec),
            )
        )
    if not jobs:
        raise ValueError(f"openb_jobs: max_gpus={max_gpus} leaves out every job of {path}")
    return OpenbJobs(jobs, never, cut, left_cpu_only, no_times, scale, too_long, too_wide, repeat)


def _shipped(file_name: str) -> Path:
    root = resources.files("gpushare_env.workloads").joinpath(*_DATA, file_name)
    return Path(str(root))


def _rows(
    path: PathLike, headers: Sequence[tuple[str, ...]]
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, row)`` for each non-blank data row, after checking the header."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header: tuple[str, ...] | None = None
        for record in reader:
            line = reader.line_num
            if header is None:
                found = tuple(cell.strip() for cell in record)
                if found not in headers:
                    allowed = " or ".join(", ".join(columns) for columns in headers)
                    raise TraceError(
                        f"the header must be {allowed}; got {', '.join(found) or '(empty)'}",
                        path=path,
                        line=line,
                        field="header",
                    )
                header = found
                continue
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                raise TraceError(
                    f"expected {len(header)} cells, got {len(record)}",
                    path=path,
                    line=line,
                    field="row",
                )
            yield line, dict(zip(header, record, strict=True))
        if header is None:
            raise TraceError("the file is empty (no header)", path=path, line=1, field="header")


def _name(row: dict[str, str], column: str, path: PathLike, line: int, seen: set[str]) -> str:
    name = row[column].strip()
    if not name:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    if name in seen:
        raise TraceError(f"duplicate name {name!r}", path=path, line=line, field=column)
    seen.add(name)
    return name


def _integer(
    row: dict[str, str], column: str, path: PathLike, line: int, *, minimum: int | None = 0
) -> int:
    text = row[column].strip()
    if not text:
        raise TraceError("missing value (the cell is empty)", path=path, line=line, field=column)
    try:
        value = int(text)
    except ValueError:
        raise TraceError(
            f"expected an integer, got {text!r}", path=path, line=line, field=column
        ) from None
    if minimum is not None and value < minimum:
        raise TraceError(f"must be >= {minimum}, got {value}", path=path, line=line, field=column)
    return value


def _optional_integer(row: dict[str, str], column: str, path: PathLike, line: int) -> int | None:
    if not row.get(column, "").strip():
        return None
    return _integer(row, column, path, line)


def _check_share(num_gpu: int, gpu_milli: int, path: PathLike, line: int) -> None:
    if not 0 <= gpu_milli <= MILLI_PER_GPU:
        raise TraceError(
            f"a GPU share is 0-{MILLI_PER_GPU} milli-GPU, got {gpu_milli}",
            path=path,
            line=line,
            field="gpu_milli",
        )
    if num_gpu > 1 and gpu_milli != MILLI_PER_GPU:
        raise TraceError(
            f"a task with {num_gpu} GPUs takes them whole ({MILLI_PER_GPU}), got a share of"
            f" {gpu_milli}",
            path=path,
            line=line,
            field="gpu_milli",
        )
    if num_gpu >= 1 and gpu_milli == 0:
        raise TraceError(
            f"a task with {num_gpu} GPU(s) needs a share > 0, got 0",
            path=path,
            line=line,
            field="gpu_milli",
        )
    if num_gpu == 0 and gpu_milli != 0:
        raise TraceError(
            f"a task without GPUs has no GPU share, got {gpu_milli}",
            path=path,
            line=line,
            field="gpu_milli",
        )


def _gpu_spec(
    text: str, models: frozenset[str] | None, path: PathLike, line: int
) -> tuple[str, ...]:
    spec = tuple(part.strip() for part in text.split("|") if part.strip())
    if models is not None:
        unknown = [model for model in spec if model not in models]
        if unknown:
            raise TraceError(
                f"unknown GPU model {unknown[0]!r}; the cluster has {', '.join(sorted(models))}",
                path=path,
                line=line,
                field="gpu_spec",
            )
    return spec
