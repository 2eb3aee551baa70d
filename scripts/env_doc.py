"""Rewrite docs/env.md's generated tables (actions, observation, rewards, settings) from
the code: ``python -m scripts.env_doc``; ``--check`` only says whether they are stale
(exit 1), as ``tests/envs/test_env_doc.py`` does.

The settings tables come from the settings' declarations
(``gpushare_env.sim.setting_table``); see ``gpushare_env.envs.spec.update_generated``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpushare_env.envs.spec import update_generated

#: The page whose tables are generated.
ENV_DOC = Path(__file__).resolve().parents[1] / "docs" / "env.md"


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with ``--check``, check) the generated tables of docs/env.md."""
    parser = argparse.ArgumentParser(prog="python -m scripts.env_doc", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--path", type=Path, default=ENV_DOC, help="the page (docs/env.md)")
    args = parser.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    try:
        updated = update_generated(text)
    except ValueError as error:
        parser.error(f"{args.path}: {error}")
    if updated == text:
        print(f"{args.path}: up to date")
        return 0
    if args.check:
        print(f"{args.path}: stale; run python -m scripts.env_doc", file=sys.stderr)
        return 1
    args.path.write_text(updated, encoding="utf-8")
    print(f"{args.path}: tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
