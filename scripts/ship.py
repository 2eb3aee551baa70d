"""Ship a trained agent into ``agents/zoo/``: the model, its record and its card.

    python -m scripts.ship RUN_DIR/best_model.zip --name mppo_philly_medium
    python -m scripts.ship RUN_DIR/model.zip --name NAME --compare --baselines thesis gandiva

copies the model (without its optimizer state) to ``agents/zoo/<name>.zip`` and writes
``<name>.json`` and the card ``<name>.md`` (:func:`gpushare_eval.cards.ship`): the env
config, the training commands and time, one test episode per env config (replayed by
``tests/agents/test_zoo.py``), and with ``--compare`` the mean and 95% CI over the test
seeds beside every baseline, each run and interval the evaluation harness's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m scripts.ship MODEL --name NAME [--compare]``; the exit status."""
    from gpushare_env.presets import PHILLY_TEST_SEEDS
    from gpushare_eval.cards import DEFAULT_BASELINES, ship

    parser = argparse.ArgumentParser(prog="python -m scripts.ship", description=__doc__)
    parser.add_argument("model", help="a trained model.zip (its run's config.json beside it)")
    parser.add_argument("--name", required=True, help="the shipped name (agents/zoo/NAME.*)")
    parser.add_argument(
        "--test-seed",
        type=int,
        default=PHILLY_TEST_SEEDS[0],
        help=f"seed of the recorded evaluation (default {PHILLY_TEST_SEEDS[0]})",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help=f"compare with the baselines on every test seed "
        f"({PHILLY_TEST_SEEDS[0]}-{PHILLY_TEST_SEEDS[-1]})",
    )
    parser.add_argument(
        "--baselines",
        nargs="*",
        default=list(DEFAULT_BASELINES),
        metavar="POLICY",
        help="heuristics of the comparison, as gpushare-evaluate names them",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes for the comparison's runs (default: every core)",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers: expected an integer >= 1, got {args.workers}")
    path = ship(
        args.model,
        args.name,
        args.test_seed,
        PHILLY_TEST_SEEDS if args.compare else (),
        args.baselines,
        workers=args.workers,
    )
    print(f"shipped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
