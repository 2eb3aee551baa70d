"""The reader of Gavel's Philly replays and its command line (``gavel_trace``).

Every duration below is computed by hand: ``round(total_steps / throughput, 1)``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare_env.sim.catalog import DEFAULT_MODELS
from gpushare_env.workloads import (
    TraceError,
    offered_load,
    philly_vc_path,
    read_csv_trace,
    read_gavel_trace,
)
from gpushare_env.workloads.gavel_trace import convert_gavel_trace, main, write_replay_csv

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]

# Isolated throughputs [steps/s]: A was measured at scale factors 1 and 2, B and D at 1.
THROUGHPUTS = {
    "v100": {
        "('A', 1)": {"null": 10.0, "('B', 1)": [5.0, 2.0]},  # colocation figures: unused
        "('A', 2)": {"null": 16.0},
        "('B', 1)": {"null": 3.0},
        "('D', 1)": {"null": 100.0},
    },
    "k80": {"('A', 1)": {"null": 2.0}, "('B', 1)": {"null": 0.5}},
}


def _line(job_type: str, steps: object, arrival: object, scale: object) -> str:
    """One line of a Gavel replay (the command fields as Gavel writes them)."""
    command = "cd %s/workloads && python3 train.py --data %s/data"
    return f"{job_type}\t{command}\t-n\t1\t{steps}\t{arrival}\t{scale}\n"


# job 0: 1000 / 10 = 100 s; job 1: 1000 / 16 = 62.5 s (its own scale factor's figure);
# job 2: B has no scale-factor-4 figure, so 1 / 3 = 0.333 s, rounded to 0.3 s
TINY = _line("A", 1000, "0.000000", 1) + _line("A", 1000, "5.5", 2) + _line("B", 1, "7", 4)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A three-job trace and its throughputs file."""
    trace = tmp_path / "vc.trace"
    trace.write_text(TINY, encoding="utf-8")
    throughputs = tmp_path / "throughputs.json"
    throughputs.write_text(json.dumps(THROUGHPUTS), encoding="utf-8")
    return trace, throughputs


def test_a_tiny_trace_converts_by_the_rule(files: tuple[Path, Path]) -> None:
    replay = convert_gavel_trace(*files)
    assert replay.job_id.tolist() == [0, 1, 2]
    assert replay.arrival_s.tolist() == [0.0, 5.5, 7.0]
    assert replay.num_gpus.tolist() == [1, 2, 4]
    assert replay.duration_s.tolist() == [100.0, 62.5, 0.3]
    assert replay.fallback_jobs == 1 and not replay.truncated


def test_the_jobs_keep_ids_arrivals_sizes_and_durations(files: tuple[Path, Path]) -> None:
    jobs = read_gavel_trace(*files)
    assert [(j.job_id, j.arrival_s, j.num_gpus) for j in jobs] == [
        (0, 0.0, 1),
        (1, 5.5, 2),
        (2, 7.0, 4),
    ]
    for job, duration_s in zip(jobs, (100.0, 62.5, 0.3), strict=True):
        # make_job's rule: within half a step, and never less than one step
        assert abs(job.solo_duration_s - duration_s) <= job.step_time_s / 2 or job.iterations == 1
    assert all(j.model in DEFAULT_MODELS for j in jobs)
    assert read_gavel_trace(*files, rng=5) == read_gavel_trace(*files, rng=5)
    only_vgg = read_gavel_trace(*files, models=("vgg16",))
    assert {j.model for j in only_vgg} == {"vgg16"}


def test_another_gpu_type_times_the_jobs_by_its_figures(files: tuple[Path, Path]) -> None:
    replay = convert_gavel_trace(*files, gpu_type="k80")
    # k80 has no scale-factor-2 figure for A either: 1000 / 2, 1000 / 2, 1 / 0.5
    assert replay.duration_s.tolist() == [500.0, 500.0, 2.0]
    assert replay.fallback_jobs == 2


def test_the_fallback_is_taken_only_when_the_scale_factor_is_missing(tmp_path: Path) -> None:
    trace = tmp_path / "vc.trace"
    trace.write_text(_line("A", 160, 0, 2) + _line("A", 160, 1, 8), encoding="utf-8")
    throughputs = tmp_path / "t.json"
    throughputs.write_text(json.dumps(THROUGHPUTS), encoding="utf-8")
    replay = convert_gavel_trace(trace, throughputs)
    assert replay.duration_s.tolist() == [10.0, 16.0]  # 160 / 16, then 160 / 10
    assert replay.fallback_jobs == 1
    # a measured figure of 0 is an error, not a reason to fall back
    broken = json.loads(json.dumps(THROUGHPUTS))
    broken["v100"]["('A', 2)"]["null"] = 0.0
    throughputs.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(TraceError, match=r"\('A', 2\) on v100 .* of 0\.0") as caught:
        convert_gavel_trace(trace, throughputs)
    assert (caught.value.line, caught.value.field) == (1, "job_type")


def test_max_jobs_keeps_the_first_jobs_in_file_order(files: tuple[Path, Path]) -> None:
    trace, throughputs = files
    # a bad line after the cut is never read
    trace.write_text(TINY + "not a job\n", encoding="utf-8")
    two = convert_gavel_trace(trace, throughputs, max_jobs=2)
    assert two.job_id.tolist() == [0, 1] and two.truncated
    three = convert_gavel_trace(trace, throughputs, max_jobs=3)
    assert len(three) == 3 and three.truncated
    with pytest.raises(TraceError, match="line 4"):
        convert_gavel_trace(trace, throughputs, max_jobs=None)
    trace.write_text(TINY + "\n", encoding="utf-8")  # a blank last line is no job
    assert not convert_gavel_trace(trace, throughputs, max_jobs=3).truncated
    every = convert_gavel_trace(trace, throughputs, max_jobs=None)
    assert len(every) == 3 and not every.truncated
    assert [j.job_id for j in read_gavel_trace(trace, throughputs, max_jobs=1)] == [0]
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="max_jobs must be None or an int >= 1"):
            convert_gavel_trace(trace, throughputs, max_jobs=bad)  # type: ignore[arg-type]


GOOD = _line("A", 1000, 0, 1)
BAD_TRACES = [
    # (name, text, line, field, words in the message)
    ("six fields", GOOD + "A\tcmd\t-n\t1\t1000\t5\n", 2, None, "expected 7 tab-separated"),
    ("spaces for tabs", GOOD + "A cmd -n 1 1000 5 1\n", 2, None, "got 1"),
    ("fractional steps", GOOD + _line("A", "12.5", 5, 1), 2, "total_steps", "integer"),
    ("no steps", GOOD + _line("A", "", 5, 1), 2, "total_steps", "missing value"),
    ("zero steps", GOOD + _line("A", 0, 5, 1), 2, "total_steps", ">= 1 and <= 2**53"),
    ("steps beyond 2**53", GOOD + _line("A", 10**400, 5, 1), 2, "total_steps", "2**53"),
    ("text scale factor", GOOD + _line("A", 10, 5, "two"), 2, "scale_factor", "integer"),
    ("zero scale factor", GOOD + _line("A", 10, 5, 0), 2, "scale_factor", ">= 1"),
    ("huge scale factor", GOOD + _line("A", 10, 5, 70000), 2, "scale_factor", "<= 65536"),
    ("text arrival", GOOD + _line("A", 10, "soon", 1), 2, "arrival_s", "cannot parse 'soon'"),
    ("nan arrival", GOOD + _line("A", 10, "nan", 1), 2, "arrival_s", "finite"),
    ("negative arrival", GOOD + _line("A", 10, "-1", 1), 2, "arrival_s", ">= 0"),
    ("late arrival", GOOD + _line("A", 10, "1e10", 1), 2, "arrival_s", "<= 1e9"),
    ("unknown job type", GOOD + _line("C", 10, 5, 2), 2, "job_type", "'C' has no throughput"),
    ("rounds to 0 s", GOOD + _line("D", 1, 5, 1), 2, "total_steps", "give 0.0 s"),
    ("too long", GOOD + _line("B", 10**9, 5, 1), 2, "total_steps", "<= 1e8"),
    ("empty trace", "", 1, None, "no jobs"),
    ("blank lines only", "\n \n", 1, None, "no jobs: the file is empty or blank"),
]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [case[1:] for case in BAD_TRACES],
    ids=[case[0] for case in BAD_TRACES],
)
def test_a_bad_trace_line_is_named_by_file_line_and_field(
    files: tuple[Path, Path], text: str, line: int, field: str | None, words: str
) -> None:
    trace, throughputs = files
    trace.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError) as caught:
        convert_gavel_trace(trace, throughputs)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(trace), line, field)
    assert str(error).startswith(f"{trace}, line {line}")
    assert words in str(error), str(error)


def test_a_missing_job_type_names_the_throughputs_file_and_gpu_type(
    files: tuple[Path, Path],
) -> None:
    trace, throughputs = files
    trace.write_text(GOOD + _line("C", 10, 5, 2), encoding="utf-8")
    with pytest.raises(TraceError) as caught:
        convert_gavel_trace(trace, throughputs)
    assert f"no throughput on v100 in {throughputs} at scale factor 2 or 1" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "of 0;"),
        (0.0, "of 0.0;"),
        (-2.5, "of -2.5;"),
        ("fast", "of 'fast';"),
        (None, "of missing;"),
    ],
)
def test_a_throughput_that_is_not_a_positive_number_is_refused(
    files: tuple[Path, Path], value: object, shown: str
) -> None:
    trace, throughputs = files
    broken = json.loads(json.dumps(THROUGHPUTS))
    broken["v100"]["('B', 1)"]["null"] = value
    throughputs.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(TraceError, match="must be a finite number > 0") as caught:
        convert_gavel_trace(trace, throughputs)
    assert (caught.value.path, caught.value.line) == (str(trace), 3)  # B's first line
    assert f"{throughputs} gives ('B', 1) on v100" in str(caught.value)
    assert shown in str(caught.value)


def test_a_throughputs_file_without_the_gpu_type_lists_the_types_it_has(
    files: tuple[Path, Path],
) -> None:
    trace, throughputs = files
    with pytest.raises(TraceError) as caught:
        convert_gavel_trace(trace, throughputs, gpu_type="a100")
    assert caught.value.path == str(throughputs)
    assert "no throughputs for GPU type 'a100'; the file has ['k80', 'v100']" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "words", "line"),
    [
        ('{"v100": {', "malformed JSON", 1),
        ('\n["v100"]', "expected a JSON object keyed by GPU type, got list", None),
        ('{"v100": 3}', "expected an object of job types, got int", None),
    ],
)
def test_a_malformed_throughputs_file_is_named(
    files: tuple[Path, Path], text: str, words: str, line: int | None
) -> None:
    trace, throughputs = files
    throughputs.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError, match=words) as caught:
        convert_gavel_trace(trace, throughputs)
    assert (caught.value.path, caught.value.line) == (str(throughputs), line)


def test_missing_files_are_named(files: tuple[Path, Path], tmp_path: Path) -> None:
    trace, throughputs = files
    nowhere = tmp_path / "nowhere"
    for args in ((nowhere, throughputs), (trace, nowhere)):
        with pytest.raises(TraceError, match="cannot open") as caught:
            convert_gavel_trace(*args)
        assert caught.value.path == str(nowhere)


def test_the_fixture_gives_the_shipped_11cb48_rows() -> None:
    """The first 46 lines of Gavel's 11cb48 replay (through its first job timed by the
    scale-factor-1 fallback, an A3C on 4 GPUs) give the shipped file's first 46 rows:
    the same bytes, and the same jobs as ``read_csv_trace`` reads from the whole file."""
    trace = DATA / "gavel_mini.trace"
    throughputs = DATA / "gavel_mini_throughputs.json"
    replay = convert_gavel_trace(trace, throughputs)
    assert len(replay) == 46 and replay.fallback_jobs == 1
    assert replay.num_gpus.tolist()[45] == 4
    shipped = philly_vc_path("11cb48")
    shipped_jobs = [j for j in read_csv_trace(shipped) if j.job_id < 46]
    assert read_gavel_trace(trace, throughputs) == shipped_jobs
    assert read_gavel_trace(trace, throughputs, max_jobs=20) == [
        j for j in shipped_jobs if j.job_id < 20
    ]


def test_the_fixture_written_is_the_shipped_file_s_first_rows(tmp_path: Path) -> None:
    out = tmp_path / "mini.csv"
    write_replay_csv(
        convert_gavel_trace(DATA / "gavel_mini.trace", DATA / "gavel_mini_throughputs.json"),
        out,
    )
    shipped_rows = philly_vc_path("11cb48").read_bytes().split(b"\r\n")
    assert out.read_bytes() == b"\r\n".join(shipped_rows[:47]) + b"\r\n"


def test_the_written_csv_reads_back_as_the_jobs(files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "vc.csv"
    write_replay_csv(convert_gavel_trace(*files), out)
    assert out.read_bytes() == (
        b"job_id,arrival_s,num_gpus,duration_s\r\n0,0.0,1,100.0\r\n1,5.5,2,62.5\r\n2,7.0,4,0.3\r\n"
    )
    for seed in (0, 7):
        assert read_csv_trace(out, rng=seed) == read_gavel_trace(*files, rng=seed)


def test_the_command_writes_a_csv_and_reports_the_load(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "vc.csv"
    assert main([str(files[0]), str(files[1]), "-o", str(out)]) == 0
    jobs = read_csv_trace(out)
    assert jobs == read_gavel_trace(*files)
    # (100 + 2 x 62.5 + 4 x 0.3 GPU-s, near enough) over a 7 s span on 64 GPUs
    load = offered_load(jobs, 64)
    assert load == pytest.approx(226.2 / (7 * 64), rel=0.01)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"wrote 3 jobs to {out} (the whole trace)",
        "1 job(s) had no throughput measured at their scale factor and were timed at "
        "scale factor 1",
        f"offered load on 64 GPUs: {load:.2f}",
    ]
    assert main([*map(str, files), "-o", str(out), "--max-jobs", "2", "--gpu-type", "k80"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 2 jobs to {out} (the first 2 of the trace)")
    assert [j.num_gpus for j in read_csv_trace(out)] == [1, 2]
    assert main([*map(str, files), "-o", str(out), "--max-jobs", "all"]) == 0
    assert len(read_csv_trace(out)) == 3


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--max-jobs", "0"], "argument --max-jobs: must be >= 1 (or 'all'), got 0"),
        (["--max-jobs", "many"], "argument --max-jobs: expected an integer >= 1 or 'all'"),
        (["--gpu-type", "a100"], "no throughputs for GPU type 'a100'"),
    ],
)
def test_the_command_refuses_a_bad_option_with_exit_2(
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: str,
) -> None:
    out = tmp_path / "vc.csv"
    try:
        status = main([*map(str, files), "-o", str(out), *extra])
    except SystemExit as exit_:  # argparse's own errors
        status = int(exit_.code or 0)
    assert status == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("usage: python -m gpushare_env.workloads.gavel_trace")
    assert words in captured.err and "Traceback" not in captured.err
    assert captured.out == "" and not out.exists()


def test_the_command_names_a_bad_line_and_writes_nothing(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, throughputs = files
    trace.write_text(GOOD + _line("A", "lots", 5, 1), encoding="utf-8")
    out = tmp_path / "vc.csv"
    assert main([str(trace), str(throughputs), "-o", str(out)]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == (
        f"python -m gpushare_env.workloads.gavel_trace: error: {trace}, line 2, "
        "field 'total_steps': cannot parse 'lots' as an integer"
    )
    assert not out.exists()
    assert main([*map(str, files), "-o", str(tmp_path)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err


def test_the_module_runs_with_python_m(files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "vc.csv"
    done = subprocess.run(
        [sys.executable, "-m", "gpushare_env.workloads.gavel_trace", *map(str, files)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "the following arguments are required: -o/--out" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "gpushare_env.workloads.gavel_trace", *map(str, files), "-o", out],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no runpy warning: the package does not import the module
    assert done.stdout.startswith("wrote 3 jobs")
    assert len(read_csv_trace(out)) == 3
