"""docs/bad_input.md: every test its table cites exists, so "the test that proves it" holds."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_the_bad_input_table_cites_exists() -> None:
    doc = (ROOT / "docs" / "bad_input.md").read_text(encoding="utf-8")
    cited = re.findall(r"`((?:\w+/)+test_\w+\.py)(?:::(test_\w+))?`", doc)
    assert len(cited) > 30
    for path, name in cited:
        source = ROOT / "tests" / path
        assert source.is_file(), path
        if name:
            assert f"def {name}(" in source.read_text(encoding="utf-8"), f"{path}::{name}"


def test_the_readme_and_the_env_reference_link_the_page() -> None:
    assert "docs/bad_input.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bad_input.md" in (ROOT / "docs" / "env.md").read_text(encoding="utf-8")
