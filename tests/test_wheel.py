"""The distribution as a user gets it: build the wheel, install it alone, play the quickstart.

The source tree is copied (without build products, caches or virtual environments) and
built as a release is, ``python -m build`` (an sdist, then the wheel from the sdist). The
wheel must carry every module of the four import packages, each package's ``py.typed``,
a compiled module for every Cython source, and every data file under the packages (the
shipped traces, the measured tables, the model zoo, ...), and nothing else at the top
level: no ``scripts`` (the repository's folder of that name stays in the repository).
The console commands are declared, pointing into ``gpushare_eval.cli``. A fresh virtual
environment (no system site-packages) then installs only that wheel, with its
dependencies from the package index, runs the README's quickstart from a folder outside
the source tree, and starts every console command (``--help``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "gpushare-env"
PACKAGES = ("gpushare_env", "baselines", "agents", "gpushare_eval")
#: The console commands and the functions they run.
COMMANDS = {
    "gpushare-bench": "gpushare_eval.cli.benchmark:main",
    "gpushare-collect": "gpushare_eval.cli.collect:main",
    "gpushare-evaluate": "gpushare_eval.cli.evaluate:main",
    "gpushare-reproduce-fgd": "gpushare_eval.cli.reproduce_fgd:main",
    "gpushare-reproduce-miso": "gpushare_eval.cli.reproduce_miso:main",
    "gpushare-train": "gpushare_eval.cli.train:main",
}
#: Not copied: version control, environments, caches, build products, outputs.
IGNORED = (".git", ".venv", "venv", "build", "dist", "site", "results", "runs", "*.egg-info",
           "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
           ".import_linter_cache", "*.so", "*.pyc")  # fmt: skip
#: Files under the packages that are sources of compiled modules or their build products,
#: checked through the compiled modules instead.
BUILD_SOURCES = (".py", ".pyx", ".pxi", ".pxd", ".c", ".so")

pytestmark = pytest.mark.slow


def _run(command: list[str], cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                            env=env)  # fmt: skip
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _quickstart() -> str:
    """The first Python block of the README's quickstart."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quickstart") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README's quickstart has no python block"
    return match.group(1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel built from a copy of the source tree, and that copy."""
    pytest.importorskip("build", reason="pip install 'gpushare-env[dev]' (build)")
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*IGNORED))
    _run([sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(source)], work)
    (built,) = (work / "dist").glob("*.whl")
    return built, source


def test_the_wheel_carries_code_types_compiled_modules_and_data(
    wheel: tuple[Path, Path],
) -> None:
    built, source = wheel
    assert built.name.startswith("gpushare_env-0.1.0-")
    names = set(zipfile.ZipFile(built).namelist())
    (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(built).read(metadata).decode()
    assert f"Name: {DISTRIBUTION}\n" in text
    assert "Provides-Extra: minari" in text and "Provides-Extra: docs" in text
    (entry_points,) = (n for n in names if n.endswith(".dist-info/entry_points.txt"))
    declared = zipfile.ZipFile(built).read(entry_points).decode()
    console = declared.split("[console_scripts]\n", 1)[1].split("\n\n", 1)[0]
    assert (
        dict(tuple(part.strip() for part in line.split("=", 1)) for line in console.splitlines())
        == COMMANDS
    ), console
    # the import packages and nothing else at the top level: no ``scripts``
    top = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert {t.split(".", 1)[0] for t in top} == set(PACKAGES), top
    assert not any(n.startswith("scripts/") or n.startswith("scripts.") for n in names)
    for top_level in (n for n in names if n.endswith(".dist-info/top_level.txt")):
        listed = set(zipfile.ZipFile(built).read(top_level).decode().split())
        assert listed == set(PACKAGES), listed
    for package in PACKAGES:
        assert f"{package}/py.typed" in names, f"{package} has no py.typed"
        for path in (source / package).rglob("*"):
            relative = path.relative_to(source).as_posix()
            if not path.is_file():
                continue
            if path.suffix == ".pyx":  # its compiled module, for this interpreter
                stem = relative[: -len(".pyx")]
                assert any(n.startswith(stem + ".") and n.endswith((".so", ".pyd"))
                           for n in names), f"no compiled module of {relative}"  # fmt: skip
            elif path.suffix == ".py" or not path.name.endswith(BUILD_SOURCES):
                assert relative in names, f"the wheel misses {relative}"
    assert not any(n.startswith("tests/") for n in names)


def test_a_fresh_venv_with_only_the_wheel_plays_the_quickstart(
    wheel: tuple[Path, Path], tmp_path: Path
) -> None:
    built, _ = wheel
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, timeout=300)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", str(built)], tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = _run([str(python), "-c", "import gpushare_env, baselines; "
                  "print(gpushare_env.__file__); print(baselines.__file__)"], outside)  # fmt: skip
    for line in where.split():
        assert str(venv) in line and str(ROOT) not in line, line
    output = _run([str(python), "-c", _quickstart()], outside)
    assert re.fullmatch(r"mean JCT [\d,]+ s, GPU util \d\.\d\d\n", output), output
    # the shipped data reads from the installed package, and the commands start
    _run([str(python), "-c", "from gpushare_env.workloads import real_traces as t; "
          "assert all(t.philly_vc_path(n).is_file() for n in t.PHILLY_VC_TRACES)"],
         outside)  # fmt: skip
    # every console command starts, its usage named after it; gpushare-train's options
    # come from the training config, which needs the rl extra (torch), not installed here
    for command in COMMANDS:
        if command == "gpushare-train":
            started = subprocess.run([str(venv / "bin" / command), "--help"], cwd=outside,
                                     capture_output=True, text=True, timeout=300)  # fmt: skip
            assert "No module named 'torch'" in started.stderr, started.stderr[-2000:]
            assert "gpushare_eval/cli/train.py" in started.stderr
            continue
        usage = _run([str(venv / "bin" / command), "--help"], outside)
        assert usage.startswith(f"usage: {command} "), (command, usage[:200])
    assert _run([str(python), "-c", "import importlib.util as u; print(u.find_spec('scripts'))"],
                outside).strip() == "None"  # fmt: skip
