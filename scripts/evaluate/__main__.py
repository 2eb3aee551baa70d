"""``python -m scripts.evaluate``: the same as ``gpushare-evaluate``."""

from scripts.evaluate import main

raise SystemExit(main())
