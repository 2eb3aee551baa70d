"""The output folder as a durable record of finished runs: evaluations survive interruption.

Each run is recorded as soon as it finishes (:meth:`RunStore.record`, which any executor
calls with each :class:`~gpushare_eval.specs.RunOutput`), so a Ctrl-C, a crash
or a killed machine loses only the runs in progress, and ``--resume`` runs the rest:

1. ``plot_data/<policy>_<workload>_s<seed>_<key>.npz``: what the plots need from the run
   (its JCTs, utilisation series, Gantt holds, cluster layout), written to a temporary
   file, flushed to disk and renamed into place;
2. its rows of ``jobs.csv``, then
3. its row of ``runs.csv``: the commit. A run is recorded if and only if its row is there.

Both CSVs are opened with ``O_APPEND``, and each batch of rows goes in one ``write`` of
complete lines, then ``fsync`` (so a row that is there stays there, even if the machine
stops). A ``runs.csv`` row, a few hundred bytes, is written whole or not at all; a long
batch of job rows cut by a kill, or a machine that stops mid-``write``, can leave a
partial last line: readers ignore it, and a resume cuts it off before appending. A resume
also drops the job rows of a run whose ``runs.csv`` row never came (killed between steps
2 and 3) before that run is done again. Only one process writes: the one collecting the
runs' outputs (the workers return them).

``config.json`` is written before the first run with every planned run's *key*
(:func:`run_key`, a digest of its configuration: policy label and parameters, workload
spec or trace checksum, env config, seed, mode, model checksum). A resume matches a
recorded row to the planned run of the same (policy, workload, seed) and reuses it only
when their keys agree (:func:`prepare_folder`).

At the end :meth:`RunStore.finish` rewrites ``runs.csv`` and ``jobs.csv`` in plan order,
the rows' text unchanged (a temporary file renamed over the old one), so the CSVs of a
finished evaluation, resumed or not, are byte for byte those of an uninterrupted one
(apart from ``wall_s``, a run's measured time).

Why append to the final files rather than merge per-run files at the end: ``runs.csv``
is readable while the evaluation runs and after a kill, with nothing left to merge, and
a long evaluation leaves no thousands of small files; the cost is the rewrite in plan
order at the end (rows are appended in the order runs finish, which depends on
``--workers``).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import itertools
import json
import math
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpushare_eval.gantt import OVERHEAD, RUN, GpuInterval
from gpushare_eval.report import HEADLINE_METRICS, RUN_COLUMNS
from gpushare_eval.specs import (
    EXTRA_COLUMNS,
    JOB_COLUMNS,
    LEGACY_EXTRA_COLUMNS,
    OTHER_METRICS,
    PlanError,
    RunOutput,
    safe_name,
)

__all__ = [
    "HARNESS_FILES",
    "LEGACY_RUNS_CSV_COLUMNS",
    "RUNS_CSV_COLUMNS",
    "FolderState",
    "RunStore",
    "check_writable",
    "clear_folder",
    "csv_line",
    "csv_value",
    "prepare_folder",
    "read_csv_rows",
    "run_id",
    "run_key",
    "typed_row",
]

#: ``runs.csv``'s columns, in order.
RUNS_CSV_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, *EXTRA_COLUMNS)

#: ``runs.csv``'s columns as the harness wrote them before the ``oracle`` column: a
#: resume takes such a file and adds the column (:meth:`RunStore.open`).
LEGACY_RUNS_CSV_COLUMNS: tuple[str, ...] = (*RUN_COLUMNS, *LEGACY_EXTRA_COLUMNS)

#: The files and folders of an output folder that the harness writes (and ``--force``
#: clears); anything else in the folder is left alone.
HARNESS_FILES: tuple[str, ...] = (
    "runs.csv",
    "jobs.csv",
    "config.json",
    "summary.json",
    "summary.md",
    "sweep.csv",
    "plots",
    "plot_data",
)

#: Name patterns of the files the harness writes in ``plots/`` and ``plot_data/``.
PLOT_PATTERNS: tuple[str, ...] = (
    "across_workloads.png",
    "aggregates.png",
    "metrics_*.png",
    "jct_cdf_*.png",
    "utilisation_*.png",
    "gantt_*.png",
    "sweep_*.png",
)
PLOT_DATA_PATTERN = "*.npz"

#: Prefix of the harness's temporary files (renamed into place once complete).
TEMP_PREFIX = ".gpushare-evaluate-"

#: Bump when :func:`run_key`'s material changes: older keys then never match.
KEY_VERSION = 1

#: ``runs.csv`` columns holding integers (the metrics and ``wall_s`` are floats, the
#: others text).
INT_COLUMNS: frozenset[str] = frozenset(
    {"seed", "num_jobs", "jobs_total", "jobs_unfinished", "decisions", "truncated",
     "rejected_jobs", "invalid_actions", "oracle"}
)  # fmt: skip
FLOAT_COLUMNS: frozenset[str] = frozenset({*HEADLINE_METRICS, *OTHER_METRICS, "wall_s"})

RunId = tuple[str, str, str]


def csv_value(value: Any) -> str:
    """Exact, locale-free text: ``repr`` of floats (shortest round-trip), ints as is."""
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def csv_line(values: Sequence[Any]) -> str:
    """One CSV line (``\\n``-terminated) of values written with :func:`csv_value`."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([csv_value(v) for v in values])
    return buffer.getvalue()


def run_id(row: Mapping[str, Any]) -> RunId:
    """A run's identity in an evaluation: ``(policy, workload, seed)`` as text."""
    return (str(row["policy"]), str(row["workload"]), str(row["seed"]))


def run_key(entry: Mapping[str, Any]) -> str:
    """Hex SHA-256 of a run's configuration, from its ``config.json`` entry.

    The material: the policy's label, name and parameters (a saved agent's include its
    algorithm and the model file's SHA-256; its path is left out, so a moved model still
    matches), the workload's label and spec (a trace: its SHA-256 instead of its path),
    ``num_jobs``, the env config, the seed and the mode (env or headless). Entries are
    read back from JSON, so the digest is taken over the JSON form.
    """
    canonical = json.loads(json.dumps(entry, default=str))
    policy = canonical.get("policy_spec") or {}
    trace = canonical.get("trace_sha256")
    env_config = dict(canonical.get("env_config") or {})
    if trace is not None:
        env_config["workload"] = {"trace_sha256": trace}
    material = {
        "key_version": KEY_VERSION,
        "policy": canonical["policy"],
        "policy_name": policy.get("name"),
        "params": policy.get("params") or {},
        "workload": canonical["workload"],
        "workload_spec": None if trace is not None else canonical.get("workload_spec"),
        "trace_sha256": trace,
        "num_jobs": canonical.get("num_jobs"),
        "env_config": env_config,
        "seed": canonical["seed"],
        "mode": canonical.get("mode", "env"),
    }
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def typed_row(raw: Mapping[str, str]) -> dict[str, Any]:
    """A ``runs.csv`` row read back as the run produced it: ints, floats and text.

    Floats were written as their ``repr``, so they read back bit for bit.
    """
    row: dict[str, Any] = {}
    for column, text in raw.items():
        if text == "":
            row[column] = text
        elif column in INT_COLUMNS:
            row[column] = int(text)
        elif column in FLOAT_COLUMNS:
            row[column] = float(text)
        else:
            row[column] = text
    return row


def read_csv_rows(path: Path) -> tuple[list[str], list[list[str]], bool]:
    """The header and rows of a CSV the harness appends to, without any partial line.

    Returns:
        ``(header, rows, repaired)``: ``repaired`` is true when a trailing partial line
        (no newline: a write cut short by a crash) or a row with the wrong number of
        fields was left out. A missing file has no header and no rows.
    """
    if not path.is_file():
        return [], [], False
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    repaired = end < len(data)
    lines = list(csv.reader(io.StringIO(data[:end].decode("utf-8", errors="replace"))))
    if not lines:
        return [], [], repaired
    header, rows = lines[0], lines[1:]
    whole = [row for row in rows if len(row) == len(header)]
    return header, whole, repaired or len(whole) < len(rows)


def _job_blocks(path: Path) -> tuple[bytes, list[tuple[RunId, int, int]], bool]:
    """Where each run's rows are in ``jobs.csv``, without reading it whole.

    A run's job rows are appended in one write, so they are contiguous: a *block*.

    Returns:
        ``(header, blocks, complete)``: the header line (``b""`` when there is none), then
        ``(run identity, start, end)`` byte offsets of each block in file order, and
        whether the file ends with a complete line (a partial last line is left out).
    """
    if not path.is_file():
        return b"", [], True
    blocks: list[tuple[RunId, int, int]] = []
    with open(path, "rb") as handle:
        header = handle.readline()
        if not header.endswith(b"\n"):
            return b"", [], not header
        offset = len(header)
        record = b""
        for line in handle:
            if not line.endswith(b"\n"):
                return header, blocks, False
            record += line
            if record.count(b'"') % 2:  # a quoted field goes on over a newline
                continue
            fields = next(csv.reader([record.decode("utf-8", errors="replace")]), [])
            padded = [*fields, "", "", ""]  # (policy, workload, seed, ...)
            identity = (padded[0], padded[1], padded[2])
            if blocks and blocks[-1][0] == identity and blocks[-1][2] == offset:
                blocks[-1] = (identity, blocks[-1][1], offset + len(record))
            else:
                blocks.append((identity, offset, offset + len(record)))
            offset += len(record)
            record = b""
    return header, blocks, not record


def _copy_blocks(path: Path, header: bytes, blocks: Sequence[tuple[RunId, int, int]]) -> None:
    """Replace a CSV by its header and these byte ranges of it, in this order."""
    with open(path, "rb") as source, _replacing(path, "wb") as target:
        target.write(header)
        for _, start, end in blocks:
            source.seek(start)
            remaining = end - start
            while remaining:
                chunk = source.read(min(remaining, 1 << 20))
                target.write(chunk)
                remaining -= len(chunk)


def _fsync_folder(folder: Path) -> None:
    """Make a folder's new or renamed entries durable (POSIX; a no-op where unsupported)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _append(path: Path, text: str) -> None:
    """Append complete lines durably: one ``write`` on an ``O_APPEND`` file, then fsync."""
    data = text.encode("utf-8")
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:  # a regular file takes it in one write; loop in case it does not
            written = os.write(handle, view)
            view = view[written:]
        os.fsync(handle)
    finally:
        os.close(handle)


def _temporary_file(folder: Path) -> tuple[int, str]:
    """A new file of the harness's in ``folder``, opened for writing, with the
    permissions any new file gets (``tempfile.mkstemp`` would make it private)."""
    while True:
        name = str(folder / f"{TEMP_PREFIX}{uuid.uuid4().hex[:12]}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


@contextlib.contextmanager
def _replacing(path: Path, mode: str = "w") -> Iterator[Any]:
    """Write a file whole or not at all: a temporary file beside it, fsynced, renamed."""
    descriptor, temporary = _temporary_file(path.parent)
    try:
        kwargs: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with os.fdopen(descriptor, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_folder(path.parent)


def write_json(path: Path, data: Any, **options: Any) -> None:
    """A JSON file written whole or not at all (indent 2, a final newline)."""
    with _replacing(path) as handle:
        json.dump(data, handle, indent=2, **options)
        handle.write("\n")


def check_writable(folder: Path) -> None:
    """Fail now, not after the runs, if ``folder`` cannot be the output folder.

    Creates nothing that stays: probes by making (and removing) a temporary folder in
    ``folder`` or, when it does not exist yet, in its nearest existing parent.

    Raises:
        PlanError: The path is a file, lies under a file, or cannot be written.
    """
    folder = Path(folder).expanduser()
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == folder else f"is under a file ({existing})"
        raise PlanError(f"--out {folder}: not a folder: it {where}")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=TEMP_PREFIX + "probe-", dir=existing))
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise PlanError(f"--out {folder}: cannot write there ({reason})") from None


def _harness_entries(folder: Path) -> list[str]:
    """The names of the harness's files present in ``folder`` (``plots`` and
    ``plot_data`` when they hold files named as the harness names its own)."""
    patterns = {"plots": PLOT_PATTERNS, "plot_data": (PLOT_DATA_PATTERN,)}
    found = []
    for name in HARNESS_FILES:
        path = folder / name
        if name in patterns:
            if path.is_dir() and any(any(path.glob(p)) for p in patterns[name]):
                found.append(name)
        elif path.exists():
            found.append(name)
    return found


def clear_folder(folder: Path) -> list[str]:
    """Remove what an earlier evaluation wrote in ``folder`` (``--force``).

    Removes ``runs.csv``, ``jobs.csv``, ``config.json``, ``summary.*``, the harness's
    PNGs in ``plots/`` and its files in ``plot_data/`` (each folder too once empty) and
    its leftover temporary files; never a file the harness does not write.

    Returns:
        The names removed.
    """
    removed: list[str] = []
    for name in ("runs.csv", "jobs.csv", "config.json", "summary.json", "summary.md"):
        path = folder / name
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(name)
    for sub, patterns in (("plots", PLOT_PATTERNS), ("plot_data", (PLOT_DATA_PATTERN,))):
        removed += [f"{sub}/{name}" for name in _clear_files(folder / sub, patterns)]
        with contextlib.suppress(OSError):
            (folder / sub).rmdir()  # only when empty: someone else's files stay
    for path in folder.glob(TEMP_PREFIX + "*.tmp"):
        path.unlink()
    return removed


def _clear_files(folder: Path, patterns: Sequence[str]) -> list[str]:
    """Remove the files of ``folder`` matching ``patterns`` (and temporary files)."""
    if not folder.is_dir():
        return []
    removed = []
    for pattern in (*patterns, TEMP_PREFIX + "*.tmp"):
        for path in sorted(folder.glob(pattern)):
            if path.is_file():
                path.unlink()
                removed.append(path.name)
    return removed


@dataclass(slots=True)
class FolderState:
    """What an output folder already holds (:func:`prepare_folder`).

    Attributes:
        folder: The output folder.
        harness_files: Names of the harness's files and folders present.
        header: ``runs.csv``'s header (empty if none).
        rows: The recorded rows of ``runs.csv`` (text), by run identity.
        keys: Every run key of ``config.json`` (an older config without keys: computed
            from its entries), by run identity.
        entries: ``config.json``'s run entries, by run identity.
        config: ``config.json`` (``{}`` if none or unreadable).
        repaired: ``runs.csv`` has a partial last line or a malformed row (left out).
    """

    folder: Path
    harness_files: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    rows: dict[RunId, list[str]] = field(default_factory=dict)
    keys: dict[RunId, str] = field(default_factory=dict)
    entries: dict[RunId, Mapping[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    repaired: bool = False

    @classmethod
    def read(cls, folder: Path) -> FolderState:
        """Read what ``folder`` holds (nothing is changed)."""
        state = cls(folder, _harness_entries(folder))
        header, rows, state.repaired = read_csv_rows(folder / "runs.csv")
        state.header = header
        for row in rows:
            state.rows[run_id(dict(zip(header, row, strict=True)))] = row
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
        state.config = config if isinstance(config, dict) else {}
        for entry in state.config.get("runs", []):
            try:
                identity = run_id(entry)
                state.keys[identity] = str(entry.get("key") or run_key(entry))
            except (KeyError, TypeError, AttributeError):
                continue
            state.entries[identity] = entry
        return state


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Which settings of a run's ``config.json`` entry changed, in a few words."""
    fields = ("policy_spec", "workload_spec", "trace_sha256", "num_jobs", "env_config", "mode")
    changed = []
    for name in fields:
        before, after = old.get(name), new.get(name)
        if isinstance(before, dict) and isinstance(after, dict):
            keys = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
            changed += [f"{name}.{k}" for k in keys]
        elif json.dumps(before, default=str) != json.dumps(after, default=str):
            changed.append(name)
    return ", ".join(changed[:4]) + (" ..." if len(changed) > 4 else "") or "the run key"


def prepare_folder(
    folder: Path,
    entries: Sequence[Mapping[str, Any]],
    *,
    resume: bool,
    force: bool,
    jobs_csv: bool,
) -> tuple[set[RunId], FolderState]:
    """Decide what to do with an output folder before the first run.

    An empty or new folder (or one without any of the harness's files) is used as is.
    One holding an evaluation needs ``force`` (it is cleared: :func:`clear_folder`) or
    ``resume``, which keeps the recorded runs whose key matches the planned run of the
    same (policy, workload, seed) and refuses a folder holding runs this plan does not
    have or has with another configuration.

    Args:
        folder: The output folder (checked writable by :func:`check_writable`).
        entries: The planned runs' ``config.json`` entries, with their ``key``.
        resume: ``--resume``.
        force: ``--force``.
        jobs_csv: The plan writes ``jobs.csv``.

    Returns:
        The identities of the recorded runs to keep (empty unless resuming), and what the
        folder held before (its earlier ``config.json``, for instance).

    Raises:
        PlanError: The folder holds an evaluation and neither flag was given, or
            ``resume`` on a folder holding another evaluation.
    """
    state = FolderState.read(folder)
    if not state.harness_files:
        return set(), state
    if force:
        clear_folder(folder)
        return set(), state
    planned = {run_id(e): e for e in entries}
    foreign = [i for i in state.rows if i not in planned]
    changed = [i for i in state.rows if i in planned and state.keys.get(i) != planned[i]["key"]]
    files = ", ".join(state.harness_files)
    if not resume:
        same_plan = bool(state.keys) and all(
            planned.get(i, {}).get("key") == key for i, key in state.keys.items()
        )
        if (state.rows or same_plan) and not foreign and not changed:
            done = f"{len(state.rows)} of {len(entries)} runs recorded"
            if len(state.rows) == len(entries):
                done = f"complete, {len(entries)} runs; --resume only redraws the summary"
            raise PlanError(
                f"--out {folder}: already holds this evaluation ({done}): pass --resume "
                "to continue it, or --force to delete its results and start over"
            )
        raise PlanError(
            f"--out {folder}: holds another evaluation's results ({files}): pass --force to "
            "delete them and start over, or choose another --out"
        )
    if state.header and state.header not in (list(RUNS_CSV_COLUMNS), list(LEGACY_RUNS_CSV_COLUMNS)):
        raise PlanError(
            f"--resume: {folder}/runs.csv has other columns (written by another version of "
            "the harness); --force deletes it and starts over"
        )
    if foreign or changed:
        run = (foreign or changed)[0]
        what = (
            "is not part of this evaluation"
            if run in foreign
            else "ran with other settings"
            + (
                f" ({_differences(state.entries[run], planned[run])})"
                if run in state.entries
                else " (no recorded configuration)"
            )
        )
        count = len(foreign) + len(changed)
        raise PlanError(
            f"--resume: {folder} holds another evaluation: {count} recorded run(s) differ "
            f"from this command's, e.g. {'/'.join(run)} {what}; --force deletes them and "
            "starts over, or choose another --out"
        )
    recorded_jobs_csv = state.config.get("jobs_csv", (folder / "jobs.csv").exists())
    if state.rows and bool(recorded_jobs_csv) != jobs_csv:
        flag = "without" if jobs_csv else "with"
        raise PlanError(
            f"--resume: the recorded runs were made {flag} --no-jobs-csv; resume {flag} it "
            "too, or --force to start over"
        )
    if state.rows and jobs_csv and not (folder / "jobs.csv").is_file():
        raise PlanError(
            f"--resume: {folder}/jobs.csv is missing, so the recorded runs' job rows are "
            "lost; --force deletes the results and starts over (or add --no-jobs-csv)"
        )
    return set(state.rows), state


class RunStore:
    """An output folder's durable record of finished runs (see the module's docstring).

    Single writer: the process that collects the runs' outputs (the workers never write).

    Args:
        folder: The output folder.
        jobs_csv: Record job rows in ``jobs.csv``.
    """

    def __init__(self, folder: Path, jobs_csv: bool = True) -> None:
        self.folder = Path(folder)
        self.jobs_csv = jobs_csv
        self.runs_path = self.folder / "runs.csv"
        self.jobs_path = self.folder / "jobs.csv"
        self.data_folder = self.folder / "plot_data"
        self.keys: dict[RunId, str] = {}
        self.recorded: set[RunId] = set()

    def open(self, config: Mapping[str, Any]) -> None:
        """Get the folder ready to record: ``config.json`` (with every run's key), and
        ``runs.csv`` / ``jobs.csv`` without partial lines or orphaned job rows. A
        ``runs.csv`` written before the ``oracle`` column (``LEGACY_RUNS_CSV_COLUMNS``)
        gets it, each recorded run's value from its planned entry (``0`` without one).

        Args:
            config: The ``config.json`` content; its ``runs`` entries carry their ``key``
                (and ``oracle``).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        self.data_folder.mkdir(exist_ok=True)
        self.keys = {run_id(e): str(e["key"]) for e in config["runs"]}
        header, rows, repaired = read_csv_rows(self.runs_path)
        self.recorded = {run_id(dict(zip(header, r, strict=True))) for r in rows}
        if not header:
            with _replacing(self.runs_path) as handle:
                handle.write(csv_line(RUNS_CSV_COLUMNS))
        elif header == list(LEGACY_RUNS_CSV_COLUMNS):  # written before the oracle column
            oracle = {run_id(e): bool(e.get("oracle", False)) for e in config["runs"]}
            rows = [
                [*row, str(int(oracle.get(run_id(dict(zip(header, row, strict=True))), False)))]
                for row in rows
            ]
            self._rewrite(self.runs_path, RUNS_CSV_COLUMNS, rows)
        elif repaired:
            self._rewrite(self.runs_path, header, rows)
        if self.jobs_csv:
            header_bytes, blocks, complete = _job_blocks(self.jobs_path)
            kept = [block for block in blocks if block[0] in self.recorded]
            if not header_bytes:
                with _replacing(self.jobs_path) as handle:
                    handle.write(csv_line(JOB_COLUMNS))
            elif not complete or len(kept) < len(blocks):  # a partial line, orphaned rows
                _copy_blocks(self.jobs_path, header_bytes, kept)
        # what an earlier invocation derived from other runs than these would mislead
        for name in ("summary.json", "summary.md"):
            with contextlib.suppress(FileNotFoundError):
                (self.folder / name).unlink()
        _clear_files(self.folder / "plots", PLOT_PATTERNS)
        write_json(self.folder / "config.json", config, default=str)
        _fsync_folder(self.folder)

    def _rewrite(self, path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Replace a CSV by these rows (text as is), whole or not at all."""
        with _replacing(path) as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)

    def data_path(self, identity: RunId) -> Path:
        """The plot data file of a run."""
        policy, workload, seed = identity
        key = self.keys.get(identity, "0" * 8)[:8]
        name = f"{safe_name(policy)}_{safe_name(workload)}_s{seed}_{key}.npz"
        return self.data_folder / name

    def record(self, output: RunOutput) -> bool:
        """Record a finished run durably: plot data, job rows, then its ``runs.csv`` row.

        Any executor calls this with each output as it arrives, in any order. A failed
        run (``output.error``) is not recorded (a resume runs it again).

        Returns:
            True if the run was recorded.
        """
        if output.error is not None:
            return False
        identity = run_id(output.row)
        with _replacing(self.data_path(identity), "wb") as handle:
            np.savez(handle, **_plot_arrays(output))  # type: ignore[arg-type]
        if self.jobs_csv and output.jobs:
            jobs = sorted(output.jobs, key=lambda job: job[3])  # by job id
            _append(self.jobs_path, "".join(csv_line(job) for job in jobs))
        _append(self.runs_path, csv_line([output.row.get(c, "") for c in RUNS_CSV_COLUMNS]))
        self.recorded.add(identity)
        return True

    def finish(self, order: Sequence[RunId]) -> list[dict[str, Any]]:
        """Rewrite ``runs.csv`` and ``jobs.csv`` in plan order; return the runs' rows.

        Rows keep their text, so a finished evaluation's CSVs are the same bytes whether
        it was interrupted and resumed or not. ``jobs.csv`` is left alone when already
        in order (one worker, no resume).

        Args:
            order: Every planned run's identity, in plan order (recorded runs of other
                identities are left out).

        Returns:
            The recorded rows in plan order, typed (:func:`typed_row`).
        """
        rank = {identity: index for index, identity in enumerate(order)}
        header, rows, _ = read_csv_rows(self.runs_path)
        by_id = {run_id(dict(zip(header, r, strict=True))): r for r in rows}
        ordered = sorted((i for i in by_id if i in rank), key=rank.__getitem__)
        self._rewrite(self.runs_path, RUNS_CSV_COLUMNS, [by_id[i] for i in ordered])
        if self.jobs_csv:
            header_bytes, blocks, complete = _job_blocks(self.jobs_path)
            kept = [block for block in blocks if block[0] in by_id and block[0] in rank]
            ranks = [rank[block[0]] for block in kept]
            in_order = all(a <= b for a, b in itertools.pairwise(ranks))
            if not (in_order and complete and len(kept) == len(blocks)):
                kept.sort(key=lambda block: rank[block[0]])  # stable: a run's rows stay together
                _copy_blocks(self.jobs_path, header_bytes or csv_line(JOB_COLUMNS).encode(), kept)
        self._prune_plot_data(ordered)
        return [typed_row(dict(zip(header, by_id[i], strict=True))) for i in ordered]

    def _prune_plot_data(self, recorded: Sequence[RunId]) -> None:
        """Remove the plot data of runs that are not recorded (a run killed after its
        plot data was written, an earlier evaluation's)."""
        wanted = {self.data_path(identity).name for identity in recorded}
        for path in self.data_folder.glob(PLOT_DATA_PATTERN):
            if path.name not in wanted:
                path.unlink()

    def load_output(self, index: int, row: Mapping[str, Any]) -> RunOutput | None:
        """A recorded run as a :class:`RunOutput` (its plot data read back; no job rows),
        or ``None`` when its plot data is missing or unreadable."""
        try:
            with np.load(self.data_path(run_id(row)), allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (OSError, ValueError, KeyError):
            return None
        return _output_from_arrays(index, dict(row), arrays)


def _plot_arrays(output: RunOutput) -> dict[str, np.ndarray]:
    """What the plots need from a run, as arrays for an ``.npz``."""
    num_gpus, lanes, gpu_node = output.layout
    arrays: dict[str, np.ndarray] = {
        "jct_s": np.asarray(output.jct_s, dtype=float),
        "layout": np.array([num_gpus, lanes], dtype=np.int64),
        "gpu_node": np.asarray(gpu_node, dtype=np.int64),
    }
    if output.series is not None:
        time_s, util, alloc = output.series
        arrays["series_time_s"] = np.asarray(time_s, dtype=float)
        arrays["series_util"] = np.asarray(util, dtype=float)
        arrays["series_alloc"] = np.asarray(alloc, dtype=float)
    if output.gantt is not None:
        holds = output.gantt
        arrays["gantt_job_id"] = np.array([h.job_id for h in holds], dtype=np.int64)
        arrays["gantt_gpu"] = np.array([h.gpu for h in holds], dtype=np.int64)
        arrays["gantt_start_s"] = np.array([h.start_s for h in holds], dtype=float)
        arrays["gantt_end_s"] = np.array([h.end_s for h in holds], dtype=float)
        arrays["gantt_overhead"] = np.array([h.kind == OVERHEAD for h in holds], dtype=bool)
    return arrays


def _output_from_arrays(index: int, row: dict[str, Any], arrays: Mapping[str, Any]) -> RunOutput:
    """The inverse of :func:`_plot_arrays`."""
    num_gpus, lanes = (int(v) for v in arrays["layout"])
    series = None
    if "series_time_s" in arrays:
        series = (arrays["series_time_s"], arrays["series_util"], arrays["series_alloc"])
    gantt = None
    if "gantt_job_id" in arrays:
        gantt = [
            GpuInterval(int(job), int(gpu), float(start), float(end), OVERHEAD if over else RUN)
            for job, gpu, start, end, over in zip(
                *(arrays[f"gantt_{name}"] for name in _GANTT_FIELDS), strict=True
            )
        ]
    layout = (num_gpus, lanes, [int(n) for n in arrays["gpu_node"]])
    jct_s = np.asarray(arrays["jct_s"], dtype=float)
    return RunOutput(index, row, jct_s, [], series, gantt, layout)


_GANTT_FIELDS = ("job_id", "gpu", "start_s", "end_s", "overhead")
