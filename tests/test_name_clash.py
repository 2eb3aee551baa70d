"""Another project's ``baselines`` (OpenAI Baselines installs that import name too) is
found when ``gpushare_eval`` (and so every command line) or this project's ``baselines``
is imported, with an error that names the other distribution and how to resolve the
clash."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpushare_env import distribution

REPO = Path(__file__).resolve().parents[1]


def _fake_distribution(folder: Path, name: str = "baselines", version: str = "0.1.6") -> Path:
    """An installed distribution ``name`` declaring the top-level import ``baselines``."""
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text("baselines\n")
    return folder


def _import_gpushare_eval(
    path: list[Path], cwd: Path, code: str = "import gpushare_eval"
) -> subprocess.CompletedProcess[str]:
    """``import gpushare_eval`` (or ``code``) in a fresh interpreter whose path starts
    with ``path``; then the file ``baselines`` was imported from is printed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    code += "; import baselines; print(baselines.__file__)"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_this_checkout_has_no_clash() -> None:
    assert distribution.baselines_clash() is None
    distribution.check_baselines()
    assert distribution.providers("gpushare_env") == []


def test_openai_baselines_earlier_on_the_path_is_named(tmp_path: Path) -> None:
    shadow = _fake_distribution(tmp_path / "site")
    (shadow / "baselines").mkdir()
    (shadow / "baselines" / "__init__.py").write_text("")  # OpenAI Baselines' is empty
    result = _import_gpushare_eval([shadow, REPO], tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("gpushare_env.distribution.NameClashError: gpushare-env: "), last
    where = shadow / "baselines"
    assert f"'baselines' resolves to {where} (the distribution baselines installs" in last
    assert "pip uninstall baselines && pip install --force-reinstall" in last
    assert "virtual environment" in last


def test_a_folder_named_baselines_in_the_working_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "baselines").mkdir()  # a project's own folder, say
    (tmp_path / "baselines" / "__init__.py").write_text("")
    result = _import_gpushare_eval([REPO], tmp_path)  # python -c: the working folder first
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0 and "NameClashError" in last, result.stderr
    assert f"'baselines' resolves to {tmp_path / 'baselines'}, not to the package" in last
    assert "Remove that folder from sys.path" in last


def test_another_distribution_sharing_the_folder_is_named(tmp_path: Path) -> None:
    # ``baselines`` is this project's, but another installed distribution declares it too:
    # installed into one site-packages, their files overwrite each other
    other = _fake_distribution(tmp_path / "site", name="baselines", version="0.1.5")
    result = _import_gpushare_eval([REPO, other], tmp_path)
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0 and "NameClashError" in last, result.stderr
    assert "the distribution baselines also installs an import package 'baselines'" in last
    assert "pip uninstall baselines" in last
    # importing this project's baselines alone finds it too
    alone = _import_gpushare_eval([REPO, other], tmp_path, code="import baselines")
    assert alone.returncode != 0 and alone.stderr.strip().splitlines()[-1] == last
    assert "check_baselines()" in alone.stderr  # raised by baselines/__init__.py
    # without the other distribution the same interpreter set-up imports this project's
    clean = _import_gpushare_eval([REPO], tmp_path)
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.strip() == str(REPO / "baselines" / "__init__.py")


def test_the_error_is_an_import_error_naming_every_other_distribution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fakes = [
        importlib.metadata.PathDistribution(
            _fake_distribution(tmp_path / name, name=name) / f"{name}-0.1.6.dist-info"
        )
        for name in ("baselines", "rl-baselines", "gpushare_env")  # the last: this one
    ]
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: iter(fakes))
    assert distribution.providers("baselines") == ["baselines", "rl-baselines"]
    message = distribution.baselines_clash()
    assert message is not None
    assert "the distributions baselines, rl-baselines also install an import" in message
    assert "pip uninstall baselines rl-baselines" in message
    distribution.check_baselines.cache_clear()
    with pytest.raises(ImportError, match="rl-baselines") as raised:
        distribution.check_baselines()
    assert isinstance(raised.value, distribution.NameClashError)
    assert raised.value.name == "baselines"
    distribution.check_baselines.cache_clear()
