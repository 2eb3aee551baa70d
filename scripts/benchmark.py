"""``python -m scripts.benchmark``, from a source checkout: the same as ``gpushare-bench``
(:mod:`gpushare_eval.cli.benchmark`, where the code lives)."""

from gpushare_eval.cli.benchmark import main

if __name__ == "__main__":
    raise SystemExit(main())
