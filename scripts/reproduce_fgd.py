"""``python -m scripts.reproduce_fgd``, from a source checkout: the same as
``gpushare-reproduce-fgd`` (:mod:`gpushare_eval.cli.reproduce_fgd`, where the code lives)."""

from gpushare_eval.cli.reproduce_fgd import main

if __name__ == "__main__":
    raise SystemExit(main())
