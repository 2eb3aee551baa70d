"""``python -m scripts.plain_rl``, from a source checkout: the same as
``python -m gpushare_eval.cli.plain_rl`` (:mod:`gpushare_eval.cli.plain_rl`, where the code
lives)."""

from gpushare_eval.cli.plain_rl import main

if __name__ == "__main__":
    raise SystemExit(main())
