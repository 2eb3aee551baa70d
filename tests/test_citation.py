"""``CITATION.cff`` is valid Citation File Format 1.2.0, and the README cites from it.

The file is validated against the format's own JSON schema (``tests/data``), and the
keys the format requires are checked by hand as well, so a missing author or an untyped
reference fails even without ``jsonschema``. The README's BibTeX entry must carry the
file's authors, title and version, and its list of sources every reference's title.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (the dev extra has it)")

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = Path(__file__).with_name("data") / "cff_1.2.0_schema.json"


def _citation() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _words(text: str) -> str:
    """Text without BibTeX braces, with single spaces (YAML folds lines, BibTeX wraps)."""
    return " ".join(text.replace("{", "").replace("}", "").split())


def _person(entry: dict[str, Any]) -> str:
    """An author's name as a reader would write it (entity or person)."""
    if "name" in entry:
        return str(entry["name"])
    return f"{entry.get('given-names', '')} {entry['family-names']}".strip()


def test_required_keys_of_cff_1_2_0() -> None:
    data = _citation()
    assert data["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert data.get(key), f"CITATION.cff misses {key!r}"
    assert data["authors"], "no author"
    for author in data["authors"]:
        assert author.get("name") or author.get("family-names"), author
    references = data["references"]
    for reference in references:
        for key in ("type", "title", "authors"):
            assert reference.get(key), f"reference {reference.get('title')!r} misses {key!r}"
    titles = " | ".join(_words(r["title"]) for r in references)
    for needed in (
        "A Heuristic Approach with Fine-Grained Scheduling Based on GPU Sharing",  # thesis
        "Analysis of Large-Scale Multi-Tenant GPU Clusters",  # Philly
        "Heterogeneity-Aware Cluster Scheduling Policies",  # Gavel
        "cluster-trace-gpu-v2023",  # Alibaba's data
        "Beware of Fragmentation",  # its paper
    ):
        assert needed in titles, needed
    thesis = next(r for r in references if r["type"] == "thesis")
    assert thesis["year"] == 2022
    assert thesis["institution"]["name"] == "Chung Yuan Christian University"
    assert [a["family-names"] for a in thesis["authors"]] == ["Tong"]


def test_valid_against_the_cff_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    errors = sorted(
        validator(schema, format_checker=jsonschema.FormatChecker()).iter_errors(_citation()),
        key=str,
    )
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


def _readme_bibtex() -> dict[str, str]:
    """The fields of the README's ``@software`` entry."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Citation and sources") :]
    match = re.search(r"```bibtex\n(@software\{.*?)\n```", section, re.DOTALL)
    assert match, "the README's citation section has no @software BibTeX entry"
    fields: dict[str, str] = {}
    for field in re.finditer(r"(\w+)\s*=\s*\{(.*?)\},?\s*$", match.group(1), re.DOTALL | re.M):
        fields[field.group(1)] = field.group(2)
    return fields


def test_readme_citation_comes_from_the_cff() -> None:
    data = _citation()
    bibtex = _readme_bibtex()
    assert _words(bibtex["author"]) == " and ".join(_person(a) for a in data["authors"])
    assert _words(bibtex["title"]) == _words(data["title"])
    assert bibtex["version"] == str(data["version"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sources = _words(readme[readme.index("## Citation and sources") :])
    for reference in data["references"]:
        assert _words(reference["title"]) in sources, reference["title"]


def test_the_distribution_is_named_as_in_the_citation() -> None:
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads TOML")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == str(_citation()["version"])
    assert [a["name"] for a in project["authors"]] == [_person(a) for a in _citation()["authors"]]
