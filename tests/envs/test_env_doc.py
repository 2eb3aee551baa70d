"""docs/env.md's generated tables (actions, observation, rewards, settings) are the ones the
code gives: ``python -m scripts.env_doc`` rewrites them, and this test fails until it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpushare_env.envs.spec import doc_tables, update_generated
from scripts import env_doc

ENV_DOC = Path(__file__).resolve().parents[2] / "docs" / "env.md"


def test_the_env_reference_is_up_to_date() -> None:
    text = ENV_DOC.read_text(encoding="utf-8")
    assert update_generated(text) == text, "docs/env.md is stale: run python -m scripts.env_doc"
    for name, table in doc_tables().items():
        assert f"<!-- generated: {name} -->\n{table}\n<!-- end generated: {name} -->" in text


def test_a_stale_table_is_rewritten_and_the_rest_kept(tmp_path: Path) -> None:
    text = ENV_DOC.read_text(encoding="utf-8")
    stale = text.replace("| `windows.pending` | `pending_window` | `16` |",
                         "| `windows.pending` | `pending_window` | `8` |")  # fmt: skip
    assert stale != text
    assert update_generated(stale) == text
    page = tmp_path / "env.md"
    page.write_text(stale, encoding="utf-8")
    assert env_doc.main(["--check", "--path", str(page)]) == 1
    assert page.read_text(encoding="utf-8") == stale  # --check writes nothing
    assert env_doc.main(["--path", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == text
    assert env_doc.main(["--check", "--path", str(page)]) == 0


def test_a_page_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match=r"needs one '<!-- generated: actions -->'"):
        update_generated("# a page\n\nno tables\n")
    text = ENV_DOC.read_text(encoding="utf-8")
    twice = text + "\n<!-- generated: settings -->\n<!-- end generated: settings -->\n"
    with pytest.raises(ValueError, match=r"generated: settings .* \(found 2\)"):
        update_generated(twice)
