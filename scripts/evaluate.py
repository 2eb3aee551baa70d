"""``python -m scripts.evaluate``, from a source checkout: the same as ``gpushare-evaluate``
(:mod:`gpushare_eval.cli.evaluate`, where the code lives)."""

from gpushare_eval.cli.evaluate import main

if __name__ == "__main__":
    raise SystemExit(main())
