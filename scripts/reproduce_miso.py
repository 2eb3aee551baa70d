"""``python -m scripts.reproduce_miso``, from a source checkout: the same as
``gpushare-reproduce-miso`` (:mod:`gpushare_eval.cli.reproduce_miso`, where the code lives)."""

from gpushare_eval.cli.reproduce_miso import main

if __name__ == "__main__":
    raise SystemExit(main())
