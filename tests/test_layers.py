"""The layers import one way (docs/design/layout.md): the import contracts of
``pyproject.toml`` hold, and each lower layer works without the packages above it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Installs a ``sys.meta_path`` finder that refuses the top-level packages in ``BLOCKED``
#: (and everything under them); the code after it runs in a fresh interpreter.
_BLOCKER = """
import importlib.abc
import sys

class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: a layer below imported it")
        return None

assert not [m for m in sys.modules if m.partition(".")[0] in BLOCKED]
sys.meta_path.insert(0, _Blocker())
"""


def _run_blocked(blocked: tuple[str, ...], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the repository first on its path) in which
    importing any of ``blocked`` fails."""
    program = f"BLOCKED = {blocked!r}\n{_BLOCKER}\n{textwrap.dedent(code)}"
    return subprocess.run(
        [sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_the_import_contracts_hold() -> None:
    """``lint-imports`` with the contracts of ``pyproject.toml``: no module imports a
    layer above its own (lazy imports inside functions count too)."""
    assert importlib.util.find_spec("importlinter"), (
        "pip install 'gpushare-env[dev]' (import-linter)"
    )
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_env_needs_only_gymnasium_and_numpy() -> None:
    """With every optional dependency and every package above the env blocked,
    ``GPUShare-v0`` builds, resets and steps through valid actions."""
    blocked = (
        "torch",
        "stable_baselines3",
        "sb3_contrib",
        "ray",
        "matplotlib",
        "baselines",
        "agents",
        "gpushare_eval",
        "scripts",
    )
    result = _run_blocked(
        blocked,
        """
        import gymnasium as gym
        import numpy as np

        import gpushare_env

        env = gym.make("GPUShare-v0")
        observation, info = env.reset(seed=0)
        assert env.observation_space.contains(observation)
        rng = np.random.default_rng(0)
        steps = 0
        for _ in range(40):
            mask = env.unwrapped.action_masks()
            assert mask.any() and np.array_equal(mask, info["action_mask"])
            action = int(rng.choice(np.flatnonzero(mask)))
            observation, reward, terminated, truncated, info = env.step(action)
            steps += 1
            assert env.observation_space.contains(observation) and np.isfinite(reward)
            assert not info["invalid"], f"masked action {action} was refused"
            if terminated or truncated:
                break
        env.close()
        loaded = sorted(m for m in sys.modules if m.partition(".")[0] in BLOCKED)
        assert not loaded, loaded
        print("stepped", steps)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stepped "), result.stdout
    assert int(result.stdout.split()[1]) > 0


def test_the_evaluation_harness_loads_without_the_rl_extras() -> None:
    """The evaluation library and its command lines import without torch,
    stable-baselines3, Ray or matplotlib (heuristic-only evaluations never load them),
    and find the shipped agents through the cheap ``agents`` package."""
    result = _run_blocked(
        ("torch", "stable_baselines3", "sb3_contrib", "ray", "matplotlib"),
        """
        import agents
        import gpushare_eval
        import gpushare_eval.outputs
        import gpushare_eval.plan
        import gpushare_eval.runs
        import gpushare_eval.cli.benchmark
        import gpushare_eval.cli.collect
        import gpushare_eval.cli.evaluate
        import gpushare_eval.cli.reproduce_fgd
        import gpushare_eval.cli.train

        assert agents.ZOO_DIR.is_dir() and any(agents.ZOO_DIR.glob("*.zip"))
        print("loaded")
        """,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "loaded"


@pytest.mark.slow
def test_the_env_runs_and_its_core_tests_pass_in_a_fresh_venv(tmp_path: Path) -> None:
    # a new virtual environment holding numpy and gymnasium (the versions this one runs),
    # the test tools (pytest, hypothesis) and a copy of the gpushare_env package with its
    # compiled core and of the simulator's and workloads' tests: nothing else
    import gymnasium
    import hypothesis
    import numpy

    import gpushare_env

    core = importlib.util.find_spec("gpushare_env.compiled._core")
    assert core is not None and core.origin is not None
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pins = [
        f"numpy=={numpy.__version__}",
        f"gymnasium=={gymnasium.__version__}",
        f"pytest=={pytest.__version__}",
        f"hypothesis=={hypothesis.__version__}",
    ]
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
        check=True,
        timeout=900,
    )
    site = tmp_path / "site"
    package = Path(gpushare_env.__file__).parent
    shutil.copytree(package, site / "gpushare_env", ignore=shutil.ignore_patterns("*.so"))
    shutil.copy2(core.origin, site / "gpushare_env" / "compiled")
    shutil.copy2(REPO / "pyproject.toml", site)  # a test checks the declared package data
    tests = site / "tests"
    tests.mkdir()
    for name in ("__init__.py", "conftest.py", "jobs.py"):
        shutil.copy2(REPO / "tests" / name, tests / name)
    for folder in ("sim", "workloads", "data"):  # data: files the core's tests read
        shutil.copytree(REPO / "tests" / folder, tests / folder)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    code = """
import importlib.util, sys
for name in ("torch", "stable_baselines3", "sb3_contrib", "ray", "baselines", "agents"):
    assert importlib.util.find_spec(name) is None, name
import gymnasium, numpy as np
import gpushare_env
env = gymnasium.make("GPUShare-v0", config={"cluster": "tiny", "num_jobs": 10})
obs, info = env.reset(seed=0)
steps, done = 0, False
while not done:
    action = int(np.flatnonzero(info["action_mask"])[0])
    obs, reward, terminated, truncated, info = env.step(action)
    done = terminated or truncated
    steps += 1
assert terminated and info["metrics"]["mean_jct_s"] > 0
print("steps", steps)
"""
    played = subprocess.run(
        [str(python), "-c", code], cwd=site, env=env, capture_output=True, text=True, timeout=300
    )
    assert played.returncode == 0, played.stderr
    assert played.stdout.startswith("steps ")
    tested = subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/sim",
            "tests/workloads",
        ],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
    assert " passed" in tested.stdout
