"""``gpushare-evaluate --backend ray`` gives the files ``--workers 1`` gives, loses no run.

Ray's start-up takes many seconds here, so one local Ray instance (two CPUs) serves the
module; the CLI uses a running instance as it is. The last test stops it and lets the
CLI start (and stop) its own. A worker is killed through the test-only fault of
:mod:`gpushare_eval.ray_backend` (``TEST_FAULT_ENV``): the file it names holds
the run whose first attempt dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'gpushare-env[ray]')")

from gpushare_env.workloads import make_workload, write_csv_trace  # noqa: E402
from gpushare_eval import ray_backend  # noqa: E402
from gpushare_eval.cli import evaluate  # noqa: E402
from gpushare_eval.plan import file_sha256, make_plan  # noqa: E402
from gpushare_eval.ray_backend import TEST_FAULT_ENV  # noqa: E402
from gpushare_eval.runs import execute_run_safely  # noqa: E402
from gpushare_eval.specs import RunOutput, RunSpec  # noqa: E402
from tests.scripts.helpers import (  # noqa: E402
    KILL_AFTER,
    REPO,
    SLOW_RUNS,
    assert_same_results,
    check_kept_and_resume,
    csv_rows,
    finish,
    start,
    wait_for_rows,
    without_wall,
)

# heuristics only (a new Ray worker starts quicker without torch): 4 runs
SMALL = ["--policies", "fifo", "fifo_pack", "--workload", "thesis", "--cluster", "tiny"]
SMALL += ["--num-jobs", "8", "--seeds", "0", "1", "--quiet", "--no-plots"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The evaluation's options: two heuristics and a saved agent, a generated workload
    and a trace, two seeds (12 runs)."""
    folder = tmp_path_factory.mktemp("inputs")
    trace = folder / "mine.csv"
    jobs = make_workload("thesis", np.random.default_rng(7), num_jobs=9, cluster_gpus=4)
    write_csv_trace([replace(job, job_id=i) for i, job in enumerate(jobs)], trace)
    import gymnasium as gym

    argv = ["--trace", str(trace), "--workload", "thesis", "--cluster", "tiny"]
    argv += ["--num-jobs", "8", "--seeds", "0", "1", "--quiet", "--no-plots"]
    policies = ["fifo", "fifo_pack"]
    if _has_sb3():
        from sb3_contrib import MaskablePPO

        import gpushare_env  # noqa: F401

        env = gym.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 8})
        model = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=32, seed=0)
        model.save(folder / "tiny_agent.zip")
        policies.append(str(folder / "tiny_agent.zip"))
        argv += ["--max-decisions", "300", "--allow-incomplete"]
    return ["--policies", *policies, *argv]


def _has_sb3() -> bool:
    try:
        import sb3_contrib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def reference(inputs: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The evaluation in this process, one worker."""
    out = tmp_path_factory.mktemp("reference")
    assert evaluate.main([*inputs, "--workers", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small evaluation in this process, one worker."""
    out = tmp_path_factory.mktemp("small")
    assert evaluate.main([*SMALL, "--workers", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def fault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray instance on two CPUs for the module; yields the fault file its workers
    watch (absent: no fault)."""
    marker = tmp_path_factory.mktemp("fault") / "kill"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {TEST_FAULT_ENV: str(marker)}},
    )
    yield marker
    if ray.is_initialized():
        ray.shutdown()


def test_ray_gives_the_same_files_as_one_worker(
    inputs: list[str], reference: Path, fault: Path, tmp_path: Path
) -> None:
    argv = [*inputs, "--backend", "ray", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    assert_same_results(tmp_path, reference)
    # the trace reached the workers through the object store, in a node-local copy
    trace = next(a for a in inputs if a.endswith("mine.csv"))
    copy = Path(tempfile.gettempdir()) / "gpushare-ray" / file_sha256(trace) / "mine.csv"
    assert copy.read_bytes() == Path(trace).read_bytes()


def _trace_in_a_dict(folder: Path) -> Path:
    """A trace of its own (its node-local copy is not the other tests')."""
    trace = folder / "in_dict.csv"
    jobs = make_workload("thesis", np.random.default_rng(11), num_jobs=7, cluster_gpus=4)
    write_csv_trace([replace(job, job_id=i) for i, job in enumerate(jobs)], trace)
    return trace


def test_a_trace_in_a_workload_dict_travels_in_the_task(tmp_path: Path) -> None:
    """The task gets the file's bytes and runs on its node-local copy: the spec's path,
    in the dict and in the env config, points there; the original is not read."""
    trace = _trace_in_a_dict(tmp_path)
    workload = {"path": str(trace), "num_jobs": 6}
    plan = make_plan(policies=["fifo"], workloads=[workload], cluster="tiny", seeds=[0],
                     out=tmp_path / "out")  # fmt: skip
    (spec,) = plan.runs
    assert ray_backend._shipped_files([spec]) == {str(trace)}
    expected = execute_run_safely(spec)
    data = trace.read_bytes()
    copy = Path(tempfile.gettempdir()) / "gpushare-ray" / file_sha256(trace) / trace.name
    shutil.rmtree(copy.parent, ignore_errors=True)
    trace.unlink()  # what a remote node sees: no such file
    ran: list[RunSpec] = []

    def execute(spec: RunSpec) -> RunOutput:
        ran.append(spec)
        return execute_run_safely(spec)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("gpushare_eval.runs.execute_run_safely", execute)
        output = ray_backend._ray_task(spec, data, None)
    assert output.error is None
    assert without_wall([output.row]) == without_wall([expected.row])
    np.testing.assert_array_equal(output.jct_s, expected.jct_s)
    assert copy.read_bytes() == data
    (local,) = ran
    assert local.workload.spec == {**workload, "path": str(copy)}
    assert local.env_config["workload"] == {**workload, "path": str(copy)}


def test_ray_runs_a_trace_named_in_a_workload_dict(
    fault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative path, read from the driver's working directory: the module's Ray
    workers started elsewhere, so only the shipped copy lets them run it."""
    folder = tmp_path / "traces"
    folder.mkdir()
    trace = _trace_in_a_dict(folder)
    monkeypatch.chdir(folder)
    workload = json.dumps({"path": trace.name, "num_jobs": 6})
    argv = ["--policies", "fifo", "fifo_pack", "--workload", workload, "--cluster", "tiny"]
    argv += ["--seeds", "0", "1", "--quiet", "--no-plots"]
    assert evaluate.main([*argv, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    assert evaluate.main([*argv, "--backend", "ray", "--out", str(tmp_path / "ray")]) == 0
    assert_same_results(tmp_path / "ray", tmp_path / "local")
    copy = Path(tempfile.gettempdir()) / "gpushare-ray" / file_sha256(trace) / trace.name
    assert copy.read_bytes() == trace.read_bytes()


def test_a_killed_worker_s_run_is_retried_once(
    small_reference: Path, fault: Path, tmp_path: Path
) -> None:
    fault.write_text("fifo_pack/thesis/1")
    argv = [*SMALL, "--backend", "ray", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    assert not fault.exists()  # the worker running fifo_pack/thesis/1 died once
    assert_same_results(tmp_path, small_reference)  # its run retried, recorded once


def test_ray_resumes_an_evaluation(small_reference: Path, fault: Path, tmp_path: Path) -> None:
    first = [*SMALL, "--seeds", "0", "--backend", "ray", "--out", str(tmp_path)]
    assert evaluate.main(first) == 0
    assert evaluate.main([*SMALL, "--backend", "ray", "--out", str(tmp_path), "--resume"]) == 0
    assert_same_results(tmp_path, small_reference)


def test_a_sweep_on_ray_gives_the_local_sweep_table(fault: Path, tmp_path: Path) -> None:
    sweep = ["--policies", "thesis:max_suspends={2,4}", "--seeds", "0", "--sweep"]
    sweep += ["max_suspends_per_job=1,None"]
    argv = [*SMALL, *sweep]  # the later --policies and --seeds win
    assert evaluate.main([*argv, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    assert evaluate.main([*argv, "--backend", "ray", "--out", str(tmp_path / "ray")]) == 0
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert (remote / "sweep.csv").read_bytes() == (local / "sweep.csv").read_bytes()
    assert without_wall(csv_rows(remote / "runs.csv")) == without_wall(csv_rows(local / "runs.csv"))


def test_without_ray_the_ray_backend_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    assert evaluate.main(["--backend", "ray", "--out", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "pip install 'gpushare-env[ray]'" in line
    assert evaluate.main(["--ray-address", "auto", "--out", str(tmp_path)]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err


def test_the_local_backend_never_imports_ray(tmp_path: Path) -> None:
    code = (
        "import sys; from gpushare_eval.cli import evaluate; "
        "argv = ['--policies', 'fifo', '--workload', 'thesis', '--cluster', 'tiny', "
        "'--num-jobs', '6', '--seeds', '0', '1', '--workers', '2', '--quiet', '--no-plots', "
        f"'--out', {str(tmp_path)!r}]; "
        "code = evaluate.main(argv); assert 'ray' not in sys.modules, 'ray imported'; "
        "sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def _commands(pids: list[int]) -> list[str]:
    """The command lines of processes (for a failure message)."""
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120])
    return [line.decode(errors="replace") for line in lines]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_ctrl_c_on_ray_keeps_the_finished_runs_and_resume_completes_them(
    slow_reference: Path, fault: Path, tmp_path: Path
) -> None:
    """The command on its own local Ray instance (one CPU: the runs one at a time), and a
    terminal's Ctrl-C (SIGINT to its process group, Ray's processes included) once runs
    are recorded: exit 130, the resume command, the recorded runs kept, no Ray process
    left; the resume (on this module's Ray) completes to the uninterrupted files."""
    out = tmp_path / "out"
    process = start(out, "--backend", "ray", "--workers", "1")
    at_kill = wait_for_rows(process, out, KILL_AFTER)
    os.killpg(process.pid, signal.SIGINT)
    # Ray's own processes take seconds to stop, more on a loaded machine
    status, err, left = finish(process, settle_s=120)
    assert not left, f"Ray processes outlived the interrupted evaluation: {_commands(left)}"
    assert status == evaluate.EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    *_, first, command = err.strip().splitlines()  # after Ray's own start-up lines
    saved = len(csv_rows(out / "runs.csv"))
    assert saved < SLOW_RUNS
    assert first == (
        f"gpushare-evaluate: interrupted; {saved} of {SLOW_RUNS} runs are saved in "
        f"{out}/runs.csv. To resume:"
    )
    assert "--backend ray" in command
    check_kept_and_resume(out, slow_reference, at_kill, command.strip())


def test_the_command_starts_and_stops_its_own_ray(
    small_reference: Path, fault: Path, tmp_path: Path
) -> None:
    ray.shutdown()  # the module's instance: the command starts one with --workers CPUs
    argv = [*SMALL, "--backend", "ray", "--workers", "2", "--out", str(tmp_path)]
    assert evaluate.main(argv) == 0
    assert not ray.is_initialized()
    assert_same_results(tmp_path, small_reference)
