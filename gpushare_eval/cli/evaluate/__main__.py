"""``python -m gpushare_eval.cli.evaluate``: the same as ``gpushare-evaluate``."""

from gpushare_eval.cli.evaluate import main

raise SystemExit(main())
