"""``python -m scripts.train``, from a source checkout: the same as ``gpushare-train``
(:mod:`gpushare_eval.cli.train`, where the code lives)."""

from gpushare_eval.cli.train import main

if __name__ == "__main__":
    raise SystemExit(main())
