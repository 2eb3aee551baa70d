"""The evaluation harness's library: plan, runs, outputs, statistics, plots, presets.

The layer above the policies (``baselines``, ``agents``), which it plays, and below the
command lines (:mod:`gpushare_eval.cli`): ``gpushare-evaluate``
(:mod:`gpushare_eval.cli.evaluate`) parses its options and calls these:

* :mod:`~gpushare_eval.plan`: a request resolved to policies, workloads, seeds
  and runs (:func:`~gpushare_eval.plan.make_plan`);
* :mod:`~gpushare_eval.runs`: carrying out runs, in the env (through
  :func:`gpushare_env.rollout.rollout`) or headless, over processes;
* :mod:`~gpushare_eval.store`: the output folder as a durable record of
  finished runs (``runs.csv``, ``jobs.csv``, ``plot_data/``, appended run by run; the
  run keys a resume compares; the folder's checks, ``--resume`` and ``--force``);
* :mod:`~gpushare_eval.outputs`: ``config.json``, ``summary.md`` /
  ``summary.json`` and the plots, drawn from every recorded run;
* :mod:`~gpushare_eval.specs`: the run specifications and results they share;
* :mod:`~gpushare_eval.stats`: Student-t confidence intervals, paired
  differences, ratios (no scipy needed), for ``summary.md`` and the zoo cards alike;
* :mod:`~gpushare_eval.report`: rows -> ``summary.json`` dict -> ``summary.md``,
  over complete runs only (:class:`~gpushare_eval.report.RunStatus`);
* :mod:`~gpushare_eval.gantt`: per-job GPU holds recorded during a run;
* :mod:`~gpushare_eval.plots`: PNG plots (matplotlib, imported lazily);
* :mod:`~gpushare_eval.cards`: the zoo cards of shipped agents, their numbers measured by
  these runs and statistics;
* the named set-ups (``thesis``, ``thesis_headless``, ``philly``, ...) and the train /
  test seed split live in the env layer, :mod:`gpushare_env.presets`, because training
  reads them too (``gpushare-train --preset``, the check that no test seed is trained
  on); they are re-exported here.

Only the pure modules (presets, report, stats) are imported here; the others load the
env and the policies, so they are imported by name. Importing the package checks that
``baselines`` is this project's (:func:`gpushare_env.distribution.check_baselines`: OpenAI
Baselines installs the same import name) and raises an ``ImportError`` naming the other
distribution if not.
"""

from gpushare_env.distribution import check_baselines
from gpushare_env.presets import (
    EVALUATION_PRESETS,
    PHILLY_TEST_SEEDS,
    PHILLY_TRAIN_SEED_POOL,
    PHILLY_TRAIN_SEEDS,
    EvaluationPreset,
)
from gpushare_eval.report import (
    HEADLINE_METRICS,
    HIGHER_IS_BETTER,
    RUN_COLUMNS,
    RunStatus,
    render_markdown,
    run_status,
    summarize_runs,
)
from gpushare_eval.stats import (
    MeanCI,
    PairedDiff,
    mean_ci,
    paired_difference,
    ratio_of_means,
    t_cdf,
    t_quantile,
)

check_baselines()

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
    "RunStatus",
    "mean_ci",
    "paired_difference",
    "ratio_of_means",
    "render_markdown",
    "run_status",
    "summarize_runs",
    "t_cdf",
    "t_quantile",
]
