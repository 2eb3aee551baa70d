"""The repository's command lines, run from a source checkout (not installed with the wheel).

``python -m scripts.evaluate``, ``scripts.train``, ``scripts.collect``, ``scripts.benchmark``,
``scripts.reproduce_fgd`` and ``scripts.plain_rl`` forward to the package's command lines
(:mod:`gpushare_eval.cli`, installed as ``gpushare-evaluate``, ``gpushare-train``, ...).
``scripts.env_doc`` and ``scripts.ship`` write files of the repository (the generated
sections of docs/env.md, the model zoo's cards) and live here only.
"""
