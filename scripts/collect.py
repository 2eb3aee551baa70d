"""``python -m scripts.collect``, from a source checkout: the same as ``gpushare-collect``
(:mod:`gpushare_eval.cli.collect`, where the code lives)."""

from gpushare_eval.cli.collect import main

if __name__ == "__main__":
    raise SystemExit(main())
