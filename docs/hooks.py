"""MkDocs hooks (``mkdocs.yml``): the README, the CHANGELOG and linked repository files.

* The README (the home page) and the CHANGELOG live at the top of the repository, where
  GitHub shows them, so they are added to the site here instead of being copied into
  ``docs/``; their links to ``docs/...`` are rewritten to the site's layout
  (``docs/env.md`` -> ``env.md``), and the pages' links back to them
  (``../README.md``) to the generated pages. ``CITATION.cff`` is published beside them.
* A page's link to a repository file outside ``docs/`` (``../gpushare_env/metrics.py``,
  a model card in ``agents/zoo/``) publishes that file under ``repo/`` and points there;
  a link to a package folder points to its ``__init__.py``. A link to a file that does
  not exist is left alone, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Repository file -> its path on the site.
PAGES = {"README.md": "index.md", "CHANGELOG.md": "changelog.md"}
STATIC = ("CITATION.cff",)
#: Where linked repository files are published on the site.
REPO_DIR = "repo"

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def _split(link: str) -> tuple[str, str]:
    path, hash_, anchor = link.partition("#")
    return path, hash_ + anchor


def _top_level(text: str) -> str:
    """A top-level file's links, as seen from the site's root."""

    def target(match: re.Match[str]) -> str:
        path, anchor = _split(match.group(2))
        if path.startswith("docs/"):
            path = path[len("docs/") :]
        path = PAGES.get(path, path)
        return match.group(1) + path + anchor + match.group(3)

    return _LINK.sub(target, text)


def _repository_target(page_uri: str, link: str) -> str | None:
    """The repository path (relative to the root) of a page's link that leaves
    ``docs/`` and names an existing file or package, else ``None``."""
    path, _ = _split(link)
    if not path or "://" in path or path.startswith(("/", "mailto:")):
        return None
    resolved = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_uri), path))
    if resolved.startswith(("docs/", "../")) or resolved in ("docs", ".."):
        return None
    target = ROOT / resolved
    if target.is_dir() and (target / "__init__.py").is_file():
        return posixpath.join(resolved, "__init__.py")
    return resolved if target.is_file() else None


def _page_uris(files: Files) -> list[str]:
    return [f.src_uri for f in files if f.src_uri.endswith(".md") and not f.generated_by]


def on_files(files: Files, config: Any) -> Files:
    """Add the README, the CHANGELOG, the citation file and every repository file a page
    links to."""
    for source, page in PAGES.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        files.append(File.generated(config, page, content=_top_level(text)))
    for name in STATIC:
        files.append(File.generated(config, name, abs_src_path=str(ROOT / name)))
    published: set[str] = set()
    for uri in _page_uris(files):
        text = (DOCS / uri).read_text(encoding="utf-8")
        for match in _LINK.finditer(text):
            target = _repository_target(uri, match.group(2))
            if target is None or target in published or target in PAGES or target in STATIC:
                continue
            published.add(target)
            files.append(
                File.generated(config, f"{REPO_DIR}/{target}", abs_src_path=str(ROOT / target))
            )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """A page's links to the top-level files and to repository files, to their place on
    the site."""
    uri = page.file.src_uri
    if page.file.generated_by:
        return markdown
    up = "../" * uri.count("/")

    def target(match: re.Match[str]) -> str:
        link = match.group(2)
        anchor = _split(link)[1]
        repository = _repository_target(uri, link)
        if repository is None:
            return match.group(0)
        site_path = PAGES.get(repository) or (
            repository if repository in STATIC else f"{REPO_DIR}/{repository}"
        )
        return match.group(1) + up + site_path + anchor + match.group(3)

    return _LINK.sub(target, markdown)
