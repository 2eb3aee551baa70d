"""``gpushare-evaluate`` loses no finished run: killed mid-way (Ctrl-C, a worker or the main
process killed) it keeps every run it recorded, and ``--resume`` completes it to the same
files as an uninterrupted evaluation; the output folder is checked before the first run.

The fault tests run the command as a subprocess on two workers and kill it once ``runs.csv``
holds ``KILL_AFTER`` rows (polled), while runs are still in progress: each run takes about
half a second, so the evaluation is far from done when the signal comes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpushare_eval.cli import evaluate
from gpushare_eval.outputs import run_entry
from gpushare_eval.plan import make_plan
from gpushare_eval.store import RunStore, read_csv_rows, run_key
from tests.scripts.helpers import (
    KILL_AFTER,
    SLOW,
    SLOW_RUNS,
    assert_same_results,
    check_kept_and_resume,
    children,
    csv_rows,
    finish,
    session_alive,
    start,
    wait_for_rows,
)

# small and quick, with plots: 2 policies x 2 seeds, the first seed's runs drawn
TINY = ["--policies", "fifo", "fifo_pack", "--workload", "thesis", "--cluster", "tiny"]
TINY += ["--num-jobs", "12", "--seeds", "0", "1", "--workers", "1", "--quiet"]

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.mark.parametrize("target", ["main", "group"])
def test_ctrl_c_keeps_the_finished_runs_and_resume_completes_them(
    target: str, slow_reference: Path, tmp_path: Path
) -> None:
    """SIGINT to the main process, or to the whole process group as a terminal's Ctrl-C
    sends it: one message with the resume command, no traceback, exit status 130."""
    out = tmp_path / "out"
    process = start(out, "--workers", "2")
    at_kill = wait_for_rows(process, out, KILL_AFTER)
    if target == "main":
        os.kill(process.pid, signal.SIGINT)
    else:
        os.killpg(process.pid, signal.SIGINT)
    status, err, _ = finish(process)
    assert status == evaluate.EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    first, command = err.strip().splitlines()
    saved = len(csv_rows(out / "runs.csv"))
    assert first == (
        f"gpushare-evaluate: interrupted; {saved} of {SLOW_RUNS} runs are saved in "
        f"{out}/runs.csv. To resume:"
    )
    check_kept_and_resume(out, slow_reference, at_kill, command.strip())


@linux_only
def test_a_killed_worker_loses_no_finished_run(slow_reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = start(out, "--workers", "2")
    at_kill = wait_for_rows(process, out, KILL_AFTER)
    (server,) = [
        pid
        for pid in children(process.pid)
        if b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    workers = children(server)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    status, err, _ = finish(process)
    assert status == evaluate.EXIT_FAILED, err
    assert "Traceback" not in err, err
    assert "error: a worker process died" in err
    check_kept_and_resume(out, slow_reference, at_kill, err.strip().splitlines()[-1].strip())


@linux_only
def test_a_killed_main_process_loses_no_finished_run(slow_reference: Path, tmp_path: Path) -> None:
    """SIGKILL: nothing can be said or cleaned; the recorded rows are whole, the workers
    end by themselves (they do not wait for work forever), and a resume completes."""
    out = tmp_path / "out"
    process = start(out, "--workers", "2")
    at_kill = wait_for_rows(process, out, KILL_AFTER)
    process.kill()
    process.wait(timeout=60)
    deadline = time.monotonic() + 30
    while session_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = session_alive(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # they hold its stderr open
    finish(process)
    assert not left, "worker processes outlived the killed evaluation"
    header, rows, repaired = read_csv_rows(out / "runs.csv")
    assert not repaired and len(rows) >= at_kill and len(header) == len(rows[0])
    command = shlex.join(["gpushare-evaluate", *SLOW, "--out", str(out), "--resume"])
    check_kept_and_resume(out, slow_reference, at_kill, command)


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """A Ctrl-C (a real SIGINT to this process) while the ``count``-th run is being
    recorded: the record completes first, then the evaluation stops."""
    original = RunStore.record
    done = [0]

    def record(self: RunStore, output: object) -> bool:
        recorded = original(self, output)  # type: ignore[arg-type]
        done[0] += recorded
        if done[0] == count:
            signal.raise_signal(signal.SIGINT)  # delivered during the record: held back
            assert (self.folder / "runs.csv").read_text().count("\n") == count + 1
        return recorded

    monkeypatch.setattr(RunStore, "record", record)


@pytest.fixture
def sigint_handler() -> Iterator[None]:
    """Python's default Ctrl-C handler for the test (the runner may have set another)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_resumed_evaluation_draws_the_same_plots(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sigint_handler: None,
) -> None:
    """Interrupted after the first seed's runs (those drawn in the utilisation and Gantt
    plots), the resume draws them from their saved plot data: every file as before."""
    whole = tmp_path / "whole"
    assert evaluate.main([*TINY, "--out", str(whole)]) == 0
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        _interrupt_after(patch, 2)
        assert evaluate.main([*TINY, "--out", str(out)]) == evaluate.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert "interrupted; 2 of 4 runs are saved" in err and "Traceback" not in err
    assert not (out / "summary.md").exists()
    command = shlex.split(err.strip().splitlines()[-1])
    assert evaluate.main(command[1:]) == 0
    assert_same_results(out, whole)
    plots = sorted(p.name for p in (whole / "plots").glob("*.png"))
    assert "gantt_thesis_fifo.png" in plots and "utilisation_thesis.png" in plots
    assert sorted(p.name for p in (out / "plots").glob("*.png")) == plots
    for name in plots:
        assert (out / "plots" / name).read_bytes() == (whole / "plots" / name).read_bytes(), name
    config = json.loads((out / "config.json").read_text())
    assert config["resumed_runs"] == 2
    assert "resumed (`--resume`): 2 of the 4 runs" in (out / "summary.md").read_text()
    # resumed with other Gantt choices: the views drawn are this command's
    assert evaluate.main([*command[1:], "--gantt", "none"]) == 0
    assert sorted(p.name for p in (out / "plots").glob("*.png")) == [
        name for name in plots if not name.startswith("gantt_")
    ]


def test_a_trailing_half_written_row_is_ignored_then_repaired(tmp_path: Path) -> None:
    """What a machine killed mid-write leaves: half a row at the end of runs.csv and of
    jobs.csv. Readers ignore it; a resume cuts it off and runs that run again."""
    argv = [*TINY, "--no-plots"]
    whole = tmp_path / "whole"
    assert evaluate.main([*argv, "--out", str(whole)]) == 0
    out = tmp_path / "out"
    assert evaluate.main([*argv, "--out", str(out)]) == 0
    runs = (out / "runs.csv").read_text().splitlines(keepends=True)
    (out / "runs.csv").write_text("".join(runs[:2]) + runs[2][: len(runs[2]) // 2])
    jobs = (out / "jobs.csv").read_text().splitlines(keepends=True)
    first_run = [j for j in jobs[1:] if j.startswith("fifo,thesis,0,")]
    cut = 1 + len(first_run) + 3  # the first run whole, three rows of the second, half a row
    (out / "jobs.csv").write_text("".join(jobs[:cut]) + jobs[cut][:10])
    header, rows, repaired = read_csv_rows(out / "runs.csv")
    assert repaired and len(rows) == 1 and len(header) == len(rows[0])
    assert evaluate.main([*argv, "--out", str(out)]) == evaluate.EXIT_USAGE  # no --resume
    assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 0
    assert_same_results(out, whole)
    assert csv_rows(out / "runs.csv")[0]["wall_s"] == runs[1].split(",")[RUN_WALL]


RUN_WALL = 4 + 11  # policy, workload, seed, num_jobs, the 11 headline metrics, then wall_s


def _unwritable_cases(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    cases = {"a file": a_file, "under a file": a_file / "out"}
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        cases["read-only folder"] = locked / "out"
    return cases


def test_an_unwritable_output_folder_fails_within_a_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case, out in _unwritable_cases(tmp_path).items():
        # the default preset: loading the shipped agents would take seconds
        start = time.perf_counter()
        status = evaluate.main(["--out", str(out)])
        elapsed = time.perf_counter() - start
        err = capsys.readouterr().err
        assert status == evaluate.EXIT_USAGE, case
        assert elapsed < 1.0, (case, elapsed)
        (line,) = err.splitlines()
        assert line.startswith(f"gpushare-evaluate: error: --out {out}: "), line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["a_file", *(["locked"] if os.geteuid() != 0 else [])]
    )


def test_a_used_folder_needs_resume_or_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*TINY, "--no-plots", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    capsys.readouterr()
    assert evaluate.main(argv) == evaluate.EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "already holds this evaluation (complete, 4 runs" in line
    assert "--resume" in line and "--force" in line
    other = [*argv, "--seeds", "3"]  # another evaluation: seeds 3 only
    assert evaluate.main(other) == evaluate.EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "holds another evaluation's results" in line and "--force" in line
    assert evaluate.main([*other, "--resume"]) == evaluate.EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "4 recorded run(s) differ from this command's" in line
    changed = [*argv, "--num-jobs", "10", "--resume"]  # the same runs, other settings
    assert evaluate.main(changed) == evaluate.EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert "fifo/thesis/0 ran with other settings (num_jobs," in line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert evaluate.main([*argv, "--resume"]) == 0  # complete: only the summary again
    assert (tmp_path / "runs.csv").read_bytes() == before["runs.csv"]


def test_force_deletes_the_earlier_results_and_nothing_else(tmp_path: Path) -> None:
    argv = [*TINY, "--no-plots", "--out", str(tmp_path)]
    assert evaluate.main([*argv, "--seeds", "3"]) == 0
    plots = tmp_path / "plots"
    plots.mkdir()
    for stale in ("gantt_old_fifo.png", "metrics_old.png", "across_workloads.png"):
        (plots / stale).write_bytes(b"an earlier evaluation's plot")
    (plots / "mine.txt").write_text("the user's\n")
    (tmp_path / "notes.md").write_text("the user's\n")
    assert evaluate.main(argv) == evaluate.EXIT_USAGE
    assert evaluate.main([*argv, "--force"]) == 0
    assert sorted(p.name for p in plots.iterdir()) == ["mine.txt"]  # stale plots gone
    assert (tmp_path / "notes.md").read_text() == "the user's\n"
    assert [r["seed"] for r in csv_rows(tmp_path / "runs.csv")] == ["0", "1", "0", "1"]
    assert len(list((tmp_path / "plot_data").glob("*.npz"))) == 4
    assert evaluate.main([*argv, "--force", "--resume"]) == evaluate.EXIT_USAGE


def test_a_folder_holding_only_other_files_is_used_and_they_stay(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the user's\n")
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "mine.txt").write_text("the user's\n")
    assert evaluate.main([*TINY, "--no-plots", "--out", str(tmp_path)]) == 0
    assert len(csv_rows(tmp_path / "runs.csv")) == 4
    assert (tmp_path / "notes.md").read_text() == "the user's\n"
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["mine.txt"]


def test_resume_adds_the_runs_of_more_seeds(tmp_path: Path) -> None:
    argv = [*TINY, "--no-plots"]
    whole = tmp_path / "whole"
    assert evaluate.main([*argv, "--out", str(whole)]) == 0
    out = tmp_path / "out"
    assert evaluate.main([*argv, "--seeds", "1", "--out", str(out)]) == 0
    assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 0
    assert_same_results(out, whole)


def test_the_run_key_covers_the_configuration_and_survives_json(tmp_path: Path) -> None:
    plan = make_plan(
        policies=["fifo", "thesis:critical_path_factor=inf"], workloads=["thesis"],
        cluster="tiny", num_jobs=8, seeds=[0, 1], out=tmp_path,
    )  # fmt: skip
    entries = [run_entry(run) for run in plan.runs]
    keys = [e["key"] for e in entries]
    assert len(set(keys)) == len(keys)
    assert all(run_key(json.loads(json.dumps(e, default=str))) == e["key"] for e in entries)
    entry = entries[0]
    assert run_key({**entry, "reproduce": "other", "workload_resolved": {}}) == entry["key"]
    for change in (
        {"seed": 5},
        {"mode": "headless"},
        {"num_jobs": 9},
        {"env_config": {**entry["env_config"], "max_decisions": 7}},
        {"policy_spec": {**entry["policy_spec"], "params": {"seed": 1}}},
        {"trace_sha256": "0" * 64},
    ):
        assert run_key({**entry, **change}) != entry["key"], change
    agent = {**entry, "policy_spec": {"name": None, "path": "/a/m.zip", "params": {"sha256": "1"}}}
    moved = {**agent, "policy_spec": {**agent["policy_spec"], "path": "/b/m.zip"}}
    assert run_key(agent) == run_key(moved)  # the model's checksum, not where it is
    retrained = {**agent, "policy_spec": {**agent["policy_spec"], "params": {"sha256": "2"}}}
    assert run_key(agent) != run_key(retrained)


def test_the_resume_command_drops_force_and_adds_resume() -> None:
    assert evaluate.resume_command(["--seeds", "0", "--force", "--out", "x y"]) == (
        "gpushare-evaluate --seeds 0 --out 'x y' --resume"
    )
    assert evaluate.resume_command(["--forc", "--resume"]) == "gpushare-evaluate --resume"
