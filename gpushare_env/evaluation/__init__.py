"""Evaluation support: statistics, summaries, plots and presets (no policy code here).

The command-line harness is ``scripts/evaluate`` (``gpushare-evaluate``); it runs the
policies and hands the per-run rows to these pure functions:

* :mod:`~gpushare_env.evaluation.stats`: Student-t confidence intervals, paired
  differences, ratios (no scipy needed);
* :mod:`~gpushare_env.evaluation.report`: rows -> ``summary.json`` dict -> ``summary.md``;
* :mod:`~gpushare_env.evaluation.gantt`: per-job GPU holds recorded during a run;
* :mod:`~gpushare_env.evaluation.plots`: PNG plots (matplotlib, imported lazily);
* :mod:`~gpushare_env.evaluation.presets`: the ``thesis`` and ``philly`` set-ups and the
  train / test seed split.
"""

from gpushare_env.evaluation.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEED_POOL,
    PHILLY_TRAIN_SEEDS,
    EvaluationPreset,
)
from gpushare_env.evaluation.report import (
    HEADLINE_METRICS,
    HIGHER_IS_BETTER,
    RUN_COLUMNS,
    render_markdown,
    summarize_runs,
)
from gpushare_env.evaluation.stats import (
    MeanCI,
    PairedDiff,
    mean_ci,
    paired_difference,
    ratio_of_means,
    t_cdf,
    t_quantile,
)

__all__ = [
    "EVALUATION_PRESETS",
    "HEADLINE_METRICS",
    "HIGHER_IS_BETTER",
    "PHILLY_TEST_SEEDS",
    "PHILLY_TRAIN_SEEDS",
    "PHILLY_TRAIN_SEED_POOL",
    "RUN_COLUMNS",
    "EvaluationPreset",
    "MeanCI",
    "PairedDiff",
    "mean_ci",
    "paired_difference",
    "ratio_of_means",
    "render_markdown",
    "summarize_runs",
    "t_cdf",
    "t_quantile",
]
