"""Helpers shared by the ``gpushare-evaluate`` tests: result comparisons, and the slow
evaluation run as a real command in a subprocess and interrupted or killed mid-way."""

from __future__ import annotations

import contextlib
import csv
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpushare_eval.cli import evaluate

REPO = Path(__file__).resolve().parents[2]
# thesis on 40 jobs: about 0.5 s a run, 6 runs; killed after 2 are recorded
SLOW = ["--policies", "thesis", "--workload", "thesis", "--cluster", "tiny", "--num-jobs", "40"]
SLOW += ["--seeds", "0-5", "--quiet", "--no-plots"]
SLOW_RUNS = 6
KILL_AFTER = 2

# The real entry point, with Python's own Ctrl-C handler whatever the test runner set.
ENTRY = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'gpushare-evaluate'; runpy.run_module('scripts.evaluate', run_name='__main__')"
)


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file, as text."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def without_wall(table: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows without ``wall_s`` (the one column that differs between two runs)."""
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in table]


def assert_same_results(folder: Path, reference: Path) -> None:
    """Same runs.csv apart from wall_s, same jobs.csv and summary.json bytes."""
    assert (folder / "runs.csv").read_text().splitlines()[0] == (
        reference / "runs.csv"
    ).read_text().splitlines()[0]
    assert without_wall(csv_rows(folder / "runs.csv")) == without_wall(
        csv_rows(reference / "runs.csv")
    )
    assert (folder / "jobs.csv").read_bytes() == (reference / "jobs.csv").read_bytes()
    assert (folder / "summary.json").read_bytes() == (reference / "summary.json").read_bytes()


def start(out: Path, *options: str) -> subprocess.Popen[str]:
    """The slow evaluation with ``options`` (workers, backend), in a session of its own
    (so that a signal to its process group reaches it and its workers only)."""
    return subprocess.Popen(
        [sys.executable, "-c", ENTRY, *SLOW, *options, "--out", str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def recorded(out: Path) -> int:
    """Complete rows in runs.csv (header left out)."""
    try:
        return max(0, (out / "runs.csv").read_bytes().count(b"\n") - 1)
    except OSError:
        return 0


def wait_for_rows(process: subprocess.Popen[str], out: Path, count: int) -> int:
    """Poll until ``count`` runs are recorded, with the evaluation still going."""
    deadline = time.monotonic() + 300
    while recorded(out) < count:
        assert process.poll() is None, "the evaluation ended before the kill"
        assert time.monotonic() < deadline, "no run recorded in time"
        time.sleep(0.01)
    assert process.poll() is None, "the evaluation ended before the kill"
    return recorded(out)


def children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def session_alive(session: int) -> list[int]:
    """Live (not zombie) processes of a session (Linux /proc)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def finish(process: subprocess.Popen[str], settle_s: float = 0.0) -> tuple[int, str, list[int]]:
    """Wait for the killed evaluation; its exit status, its stderr, and the processes of
    its session still alive ``settle_s`` seconds after it ended (normally none). Ends
    them, so that no process outlives the test."""
    left: list[int] = []
    try:
        _, err = process.communicate(timeout=120)
        deadline = time.monotonic() + settle_s
        while (left := session_alive(process.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, err, left


def check_kept_and_resume(out: Path, reference: Path, at_kill: int, command: str) -> None:
    """Every row seen at the kill is still there, whole and right; the resume command
    completes to the reference's results without running them again."""
    saved = csv_rows(out / "runs.csv")
    assert len(saved) >= at_kill
    by_run = {(r["policy"], r["workload"], r["seed"]): r for r in csv_rows(reference / "runs.csv")}
    for row in saved:
        expected = by_run[(row["policy"], row["workload"], row["seed"])]
        assert without_wall([row]) == without_wall([expected])
    argv = shlex.split(command)
    assert argv[0] == "gpushare-evaluate" and argv[-1] == "--resume"
    assert evaluate.main([*argv[1:-1], "--workers", "1", "--resume"]) == 0
    assert_same_results(out, reference)
    walls = {(r["policy"], r["seed"]): r["wall_s"] for r in csv_rows(out / "runs.csv")}
    assert all(walls[(r["policy"], r["seed"])] == r["wall_s"] for r in saved)  # not re-run
