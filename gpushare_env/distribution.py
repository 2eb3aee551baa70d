"""The installed distribution and its import names: is ``baselines`` this project's?

The distribution ``gpushare-env`` installs four import packages: ``gpushare_env``,
``baselines``, ``agents`` and ``gpushare_eval``. ``baselines`` is also the import name of
OpenAI Baselines (the ``baselines`` distribution), still installed in many RL
environments. Two distributions installing one import name overwrite each other's files
in ``site-packages``, and a ``baselines`` earlier on ``sys.path`` hides this project's; in
both cases the heuristics fail later with a confusing error (``cannot import name
'make' from 'baselines'``). :func:`check_baselines` (run by ``import gpushare_eval``, so
by every command line, and by this project's ``baselines`` when it loads) finds the clash
first and raises :class:`NameClashError`, an ``ImportError`` that names the other
distribution or folder and how to resolve it.
Standard library only; nothing here imports ``baselines``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

__all__ = ["DISTRIBUTION", "NameClashError", "baselines_clash", "check_baselines", "providers"]

#: This project's distribution name (``pip install gpushare-env``).
DISTRIBUTION = "gpushare-env"


class NameClashError(ImportError):
    """``baselines`` is, or shares its folder with, another project's package."""


def _canonical(name: str) -> str:
    """A distribution name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_names(dist: importlib.metadata.Distribution) -> set[str]:
    """The import names ``dist`` installs: its ``top_level.txt``, else the first parts of
    the paths in its ``RECORD`` (read as text, which is fast)."""
    text = dist.read_text("top_level.txt")
    if text is not None:
        return set(text.split())
    record = dist.read_text("RECORD") or ""
    names = set()
    for line in record.splitlines():
        path = line.split(",", 1)[0]
        if "/" in path:
            names.add(path.split("/", 1)[0])
    return names


def providers(name: str) -> list[str]:
    """The installed distributions other than ``gpushare-env`` that install the
    top-level import name ``name``, sorted and without repeats."""
    found = set()
    for dist in importlib.metadata.distributions():
        if name not in _top_level_names(dist):
            continue
        dist_name = dist.metadata["Name"] or "?"
        if _canonical(dist_name) != DISTRIBUTION:
            found.add(dist_name)
    return sorted(found)


def _our_folder() -> Path:
    """Where this project's ``baselines`` is: beside ``gpushare_env``."""
    return Path(__file__).resolve().parent.parent / "baselines"


def _resolution(other: list[str]) -> str:
    """How to resolve a clash with the distributions ``other``."""
    if other:
        names = " ".join(other)
        openai = (
            " (OpenAI Baselines, unmaintained; stable-baselines3 replaces it)"
            if "baselines" in {_canonical(n) for n in other}
            else ""
        )
        return (
            f"Install {DISTRIBUTION} in a virtual environment without {', '.join(other)}"
            f"{openai}, or remove it from this one and reinstall this project's files: "
            f"pip uninstall {names} && pip install --force-reinstall --no-deps {DISTRIBUTION}."
        )
    return (
        "Remove that folder from sys.path (PYTHONPATH, the working folder, a .pth file), "
        f"or install {DISTRIBUTION} in a virtual environment of its own."
    )


def baselines_clash() -> str | None:
    """Why ``import baselines`` does not give (only) this project's package, or ``None``
    when it does (or when no ``baselines`` is installed at all)."""
    module = sys.modules.get("baselines")
    spec = module.__spec__ if module is not None else importlib.util.find_spec("baselines")
    if spec is None:
        return None
    origin = spec.origin if spec.has_location else None
    other = providers("baselines")
    names = ", ".join(other)
    if origin is None or Path(origin).resolve().parent != _our_folder():
        where = (
            f"{Path(origin).parent}"
            if origin
            else ", ".join(spec.submodule_search_locations or ()) or "a namespace package"
        )
        by = f" (the distribution {names} installs 'baselines')" if other else ""
        return (
            f"'baselines' resolves to {where}{by}, not to the package of {DISTRIBUTION} "
            f"({_our_folder()}). {_resolution(other)}"
        )
    if other:
        also = (
            f"distributions {names} also install"
            if len(other) > 1
            else f"distribution {names} also installs"
        )
        return (
            f"the {also} an import package 'baselines': installed beside {DISTRIBUTION} "
            f"({_our_folder()}), one hides the other or overwrites its files. "
            f"{_resolution(other)}"
        )
    return None


@functools.cache
def check_baselines() -> None:
    """Raise :class:`NameClashError` when :func:`baselines_clash` finds a clash; once per
    process (a passed check is remembered)."""
    problem = baselines_clash()
    if problem is not None:
        raise NameClashError(f"gpushare-env: {problem}", name="baselines")
