"""The command lines: each module parses its options and calls the library below it.

The top layer (docs/design/layout.md): nothing under ``gpushare_env``, ``baselines``,
``agents`` or the rest of ``gpushare_eval`` imports it. The installed console commands:

* ``gpushare-evaluate``: :mod:`gpushare_eval.cli.evaluate`, every policy on identical
  seeded workloads, with statistics and plots;
* ``gpushare-train``: :mod:`gpushare_eval.cli.train`, training an agent;
* ``gpushare-collect``: :mod:`gpushare_eval.cli.collect`, episodes as Minari datasets;
* ``gpushare-bench``: :mod:`gpushare_eval.cli.benchmark` (with
  :mod:`gpushare_eval.cli.bench_distributed`), the simulator's, env's, training's and
  harness's speed;
* ``gpushare-reproduce-fgd``: :mod:`gpushare_eval.cli.reproduce_fgd`, FGD's experiment on
  the Alibaba traces beside the published figures (:mod:`gpushare_eval.cli.fgd_published`).

:mod:`gpushare_eval.cli.plain_rl` (``python -m gpushare_eval.cli.plain_rl``) trains standard
RL libraries with their defaults on the env. Each module also runs with ``python -m``, and
from a source checkout as ``python -m scripts.<name>``.
"""
