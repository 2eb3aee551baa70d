"""One spelling of a seed list for every command (``gpushare_env.seeding.parse_seeds``)."""

from __future__ import annotations

import argparse

import pytest

from gpushare_env.seeding import MAX_SEEDS, parse_seeds
from gpushare_eval.cli import plain_rl, train


def test_ranges_and_lists_in_the_order_given():
    assert parse_seeds("0-3") == (0, 1, 2, 3)
    assert parse_seeds("9,1-2, 5") == (9, 1, 2, 5)
    assert parse_seeds(["7", "3-4"]) == (7, 3, 4)
    assert parse_seeds("", allow_empty=True) == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5-2", "empty range '5-2'"),
        ("-1", "seeds must be >= 0, got -1"),
        ("a", "'a' is not a seed or a range such as 0-99"),
        ("1-b", "'1-b' is not a seed or a range"),
        ("0-3,3", "seed 3 is given twice"),
        (",", "no seed given"),
        (f"0-{MAX_SEEDS}", f"more than {MAX_SEEDS:,} seeds"),
    ],
)
def test_bad_lists_are_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        parse_seeds(text)


def test_every_command_uses_it():
    # gpushare-train keeps the order (its episode shuffles start from it)
    assert train._seeds("3,0-1") == (3, 0, 1)
    with pytest.raises(argparse.ArgumentTypeError, match="given twice"):
        train._seeds("0-2,1")
    with pytest.raises(SystemExit):
        plain_rl.main(["--out", "unused.json", "--test-seeds", "4-1"])
