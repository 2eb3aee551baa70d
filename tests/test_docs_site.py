"""The documentation site builds in strict mode: no broken link, anchor or API reference.

``mkdocs build --strict`` (``mkdocs.yml``) turns every warning into a failure: a link to a
page, heading or repository file that is gone, or an API reference (``::: module``) to
a module or name that is gone. The second test shows that it does, on a site made to
fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="pip install 'gpushare-env[docs]' (dev has it)")
pytest.importorskip("material", reason="pip install 'gpushare-env[docs]' (dev has it)")
pytest.importorskip("mkdocstrings", reason="pip install 'gpushare-env[docs]' (dev has it)")

ROOT = Path(__file__).resolve().parents[1]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, timeout=300, env=env, cwd=config.parent,
    )  # fmt: skip


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    result = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-4000:]
    site = tmp_path / "site"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "GPUShare" in home and 'href="env/' in home  # the README, links rewritten
    assert (site / "changelog" / "index.html").is_file()
    assert (site / "CITATION.cff").is_file()
    api = (site / "api" / "gpushare_eval" / "index.html").read_text(encoding="utf-8")
    assert "stratified_bootstrap_ci" in api  # rendered from the docstrings
    assert (site / "repo" / "gpushare_env" / "metrics.py").is_file()  # a linked source file


@pytest.mark.parametrize(
    ("page", "named"),
    [
        ("See [the gone page](gone.md).", "gone.md"),
        ("See [a heading](#nowhere).", "#nowhere"),
        ("::: gpushare_eval.aggregate.no_such_function", "no_such_function"),
    ],
)
def test_strict_mode_fails_on_what_is_gone(tmp_path: Path, page: str, named: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Broken\n\n{page}\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "site_name: broken\nvalidation:\n  anchors: warn\nplugins:\n  - mkdocstrings:\n"
        f"      handlers:\n        python:\n          paths: [{str(ROOT)!r}]\n",
        encoding="utf-8",
    )
    result = _build(config, tmp_path / "site")
    assert result.returncode != 0
    assert named in result.stderr
