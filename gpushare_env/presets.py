"""Named evaluation set-ups, and the seeds reserved for training and for testing.

``thesis`` is the thesis experiment (100 jobs x seeds 0-2 x {one job a second, Poisson
arrivals} on the 16-GPU ``thesis`` cluster) through the env, with its 16-job windows and
the shipped agents that fit; ``thesis_headless`` is the same experiment as the thesis ran
it: headless, every waiting job in view, every baseline and ``fifo`` one job at a time,
reported as the thesis's table of means and ratios to ``fifo``. ``philly`` is the learned
agents' benchmark: Philly-style workloads on the 64-GPU ``medium`` cluster, evaluated on
the **test seeds** :data:`PHILLY_TEST_SEEDS`, which training must never use; training
draws its episodes from :data:`PHILLY_TRAIN_SEEDS`. The two ranges are disjoint, so an
agent is always scored on workloads it has not seen. ``philly_vc`` replays real Philly
arrivals: the six shipped virtual-cluster traces, each on a cluster sized to its load
(:data:`PHILLY_VC_LOAD`); ``philly_vc_medium`` runs them on ``medium``, where the
learned agents' observation fits.

They live in the env layer because both sides of the split use them: training
(``agents.train_config``: ``gpushare-train --preset``, and the check that no test seed is
trained on) and the evaluation harness (``gpushare_eval``, which re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpushare_env.workloads.real_traces import PHILLY_VC_TRACES, philly_vc_path

__all__ = [
    "EVALUATION_PRESETS",
    "MISO_SIMULATOR",
    "PHILLY_TEST_SEEDS",
    "PHILLY_TRAIN_SEEDS",
    "PHILLY_TRAIN_SEED_POOL",
    "PHILLY_VC_LOAD",
    "PHILLY_VC_SEEDS",
    "EvaluationPreset",
]

#: Seeds of Philly-style training episodes (``reset(seed=...)``): the default pool.
PHILLY_TRAIN_SEEDS: tuple[int, ...] = tuple(range(0, 100))

#: Every seed training may use (``--train-seeds``; DAgger needs more fresh episodes than
#: the default pool): 0-499. Seeds 500-999 are for validation (model selection), so they
#: are never trained on either.
PHILLY_TRAIN_SEED_POOL: tuple[int, ...] = tuple(range(0, 500))

#: Seeds of Philly-style test episodes: never used for training or model selection.
PHILLY_TEST_SEEDS: tuple[int, ...] = tuple(range(1000, 1010))


#: The load the ``philly_vc`` preset sizes each trace's cluster for: a busy cluster that
#: keeps up on average, so that queues come from the trace's bursts, not from a backlog
#: that only ever grows.
PHILLY_VC_LOAD = 0.9

#: Seeds of the real-trace presets: a trace is the same on every seed; the seed draws
#: the simulator's noise (sampling and speed).
PHILLY_VC_SEEDS: tuple[int, ...] = (0, 1, 2)

_PHILLY_VC: tuple[str, ...] = tuple(str(philly_vc_path(name)) for name in PHILLY_VC_TRACES)


@dataclass(frozen=True, slots=True)
class EvaluationPreset:
    """One named experiment of ``gpushare-evaluate --preset NAME``.

    Attributes:
        name: The preset's name (also the default output folder ``results/<name>``).
        workloads: Workload presets (``gpushare_env.workloads.WORKLOAD_PRESETS``), each
            run on every seed.
        cluster: Cluster preset name.
        seeds: Seeds of the evaluated episodes.
        num_jobs: Jobs per episode of the generated workloads (traces play whole unless
            ``--num-jobs`` cuts them).
        include_zoo: Also evaluate the shipped agents of ``agents/zoo/`` whose
            observation space fits this set-up.
        description: One line for reports.
        traces: Trace files, each run whole on every seed (after ``workloads``).
        window: Pending and running windows of the baselines' runs (``None``: the rule
            of ``make_plan``: 1024 on traces, the env's 16 on generated workloads).
        policies: The policies run when ``--policies`` is not given, as ``--policies``
            names them (``None``: every baseline and the shipped agents that fit).
        headless: Run on the simulator without the env unless ``--env`` is given (the
            same numbers, faster; heuristics only).
        ratio_table: Print, and put first in ``summary.md``, the thesis's table: per
            workload the means over seeds of makespan, mean JCT, GPU utilisation and
            suspensions, with the ratios to the baseline (``fifo``).
        simulator: Env config (flat keys) every run of the preset takes.
    """

    name: str
    workloads: tuple[str, ...]
    cluster: str
    seeds: tuple[int, ...]
    num_jobs: int | None
    include_zoo: bool = True
    description: str = ""
    traces: tuple[str, ...] = ()
    window: int | None = None
    policies: tuple[str, ...] | None = None
    headless: bool = False
    ratio_table: bool = False
    simulator: tuple[tuple[str, Any], ...] = ()


#: The simulator of MISO's scenario (``miso`` preset; ``gpushare-reproduce-miso``): the
#: mig model; MISO's overhead is paid restarting (``JobSpec.restart_s``), none to
#: checkpoint; no cap on checkpoints; MISO's profiling ends on the profiled job's sampling
#: event (10 iterations of one second, at a third of its speed under MPS: 30 s); no time
#: for instance operations (the artifact charges none).
MISO_SIMULATOR: tuple[tuple[str, Any], ...] = (
    ("sharing", "mig"),
    ("suspend_overhead_s", 0.0),
    ("max_suspends_per_job", None),
    ("sample_iterations", 10),
    ("mig_operation_s", 0.0),  # the artifact charges no instance time
)

EVALUATION_PRESETS: dict[str, EvaluationPreset] = {
    "thesis": EvaluationPreset(
        name="thesis",
        workloads=("thesis", "thesis_poisson"),
        cluster="thesis",
        seeds=(0, 1, 2),
        num_jobs=100,
        description="the thesis experiment: 100 jobs, seeds 0-2, arrivals 1 s apart and "
        "Poisson, 16-GPU thesis cluster",
    ),
    "thesis_headless": EvaluationPreset(
        name="thesis_headless",
        workloads=("thesis", "thesis_poisson"),
        cluster="thesis",
        seeds=(0, 1, 2),
        num_jobs=100,
        include_zoo=False,
        description="the thesis experiment as the thesis ran it: headless, every waiting "
        "job in view (windows of 1,024), every baseline and fifo one job at a time "
        "(fifo:max_jobs=1); prints the thesis's table of means and ratios to fifo",
        window=1024,
        policies=("all", "fifo:max_jobs=1"),
        headless=True,
        ratio_table=True,
    ),
    "philly": EvaluationPreset(
        name="philly",
        workloads=("philly", "philly_bursty"),
        cluster="medium",
        seeds=PHILLY_TEST_SEEDS,
        num_jobs=300,
        description="Philly-style workloads (Poisson and bursty arrivals, load 0.8) of 300 "
        f"jobs on the 64-GPU medium cluster, test seeds {PHILLY_TEST_SEEDS[0]}-"
        f"{PHILLY_TEST_SEEDS[-1]} (training uses {PHILLY_TRAIN_SEEDS[0]}-"
        f"{PHILLY_TRAIN_SEEDS[-1]})",
    ),
    "philly_heavy": EvaluationPreset(
        name="philly_heavy",
        workloads=("philly_heavy",),
        cluster="medium",
        seeds=PHILLY_TEST_SEEDS,
        num_jobs=300,
        include_zoo=True,
        description="Philly-style workload at load 2.0 (Poisson arrivals) of 300 jobs on "
        f"the 64-GPU medium cluster, test seeds {PHILLY_TEST_SEEDS[0]}-"
        f"{PHILLY_TEST_SEEDS[-1]} (training uses {PHILLY_TRAIN_SEEDS[0]}-"
        f"{PHILLY_TRAIN_SEEDS[-1]})",
    ),
    "philly_vc": EvaluationPreset(
        name="philly_vc",
        workloads=(),
        traces=_PHILLY_VC,
        cluster=f"load={PHILLY_VC_LOAD}",
        seeds=PHILLY_VC_SEEDS,
        num_jobs=None,
        include_zoo=False,
        description="real Philly arrivals: the six shipped virtual-cluster traces, each "
        f"whole, on a cluster of 8-GPU V100 nodes sized to its load (at most "
        f"{PHILLY_VC_LOAD}, never narrower than its widest job), seeds "
        f"{PHILLY_VC_SEEDS[0]}-{PHILLY_VC_SEEDS[-1]} (the simulator's noise)",
    ),
    "philly_vc_medium": EvaluationPreset(
        name="philly_vc_medium",
        workloads=(),
        traces=_PHILLY_VC,
        cluster="medium",
        seeds=PHILLY_VC_SEEDS,
        num_jobs=None,
        include_zoo=True,
        description="the six Philly virtual-cluster traces, each whole, on the 64-GPU "
        "medium cluster (loads 0.38-3.28), seeds "
        f"{PHILLY_VC_SEEDS[0]}-{PHILLY_VC_SEEDS[-1]}",
    ),
    "miso": EvaluationPreset(
        name="miso",
        workloads=("miso", "miso_steps"),
        cluster="miso",
        seeds=(9,),
        num_jobs=100,
        include_zoo=False,
        description="MISO's simulated evaluation (SoCC'22): its 100 jobs, arrivals and "
        "overheads as its artifact draws them (seed 9) on 8 A100-40GB GPUs under the mig "
        "sharing model, restarts as drawn (miso) and as the artifact's 1 s step charges "
        "them (miso_steps); MISO's four policies, headless (docs/mig.md)",
        policies=("mig_full", "mig_static", "miso", "mig_oracle"),
        headless=True,
        simulator=MISO_SIMULATOR,
    ),
}
"""The named presets (names are part of the CLI)."""
